package sim

import "testing"

func TestEDFAdmit(t *testing.T) {
	type job struct{ dur, deadline float64 }
	tests := []struct {
		name      string
		queue     []job
		instances float64
		cand      job
		want      bool
	}{
		{"empty host, fits", nil, 1, job{100, 200}, true},
		{"empty host, too long", nil, 1, job{300, 200}, false},
		{"behind the queue, fits", []job{{100, 150}}, 1, job{100, 250}, true},
		{"behind the queue, misses", []job{{100, 150}}, 1, job{100, 150}, false},
		{"pushes an on-time job late", []job{{100, 150}}, 1, job{80, 100}, false},
		{"earlier deadline, both fit", []job{{100, 300}}, 1, job{80, 100}, true},
		{"two instances absorb it", []job{{100, 150}}, 2, job{80, 100}, true},
		{"late job gets later", []job{{300, 200}}, 1, job{50, 100}, false},
		{"late job unchanged", []job{{300, 200}}, 1, job{50, 400}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s edfScratch
			s.reset()
			for _, j := range tt.queue {
				s.add(j.dur, j.deadline)
			}
			n := len(s.jobs)
			if got := s.admit(tt.cand.dur, tt.cand.deadline, tt.instances); got != tt.want {
				t.Fatalf("admit(%v) = %v, want %v", tt.cand, got, tt.want)
			}
			wantLen := n
			if tt.want {
				wantLen++
			}
			if len(s.jobs) != wantLen {
				t.Fatalf("queue has %d jobs after admit, want %d", len(s.jobs), wantLen)
			}
		})
	}
}

// TestEDFAdmitFillsUp checks that admitted candidates count against the
// next ones of the same reply: on one instance with a 1000 s deadline,
// exactly ten 100 s jobs fit.
func TestEDFAdmitFillsUp(t *testing.T) {
	var s edfScratch
	s.reset()
	n := 0
	for range 20 {
		if s.admit(100, 1000, 1) {
			n++
		}
	}
	if n != 10 {
		t.Fatalf("admitted %d jobs, want 10", n)
	}
}
