package workfetch

import "testing"

// The deadline guard: one CPU, a job received 10,000 s ago with a
// 20,000 s latency bound and a 12,000 s estimate, buffer 0.35 day. A
// second job of 12,000 s queued behind it ends at remaining + 12,000 s;
// the guard allows that only up to 0.8 × 20,000 = 16,000 s.
func TestDeadlineGuard(t *testing.T) {
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	tests := []struct {
		name      string
		remaining float64
		guard     float64
		received  bool
		wantAsk   bool
		why       string
	}{
		{"room for another job", 3000, 0, true, true, ""},
		{"another job would end too late", 5000, 0, true, false, WhyDeadlineTight},
		{"guard off: the C++ client's rule", 5000, DeadlineGuardOff, true, true, ""},
		{"looser guard", 5000, 0.95, true, true, ""},
		{"latency unknown (no received time)", 5000, 0, false, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := p
			p.DeadlineGuard = tc.guard
			h := cpuHost(1)
			projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
			j := Job{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: tc.remaining, Deadline: at(10000), Runnable: true, Estimate: 12000}
			if tc.received {
				j.Received = at(-10000)
			}
			var sim SimResult
			Simulate(t0, h, p, projects, []Job{j}, nil, &sim)
			if got := sim.Projects[0].Latency[CPU]; tc.received && got != 20000 {
				t.Fatalf("latency %v, want 20000", got)
			}
			if got := sim.Projects[0].JobWall[CPU]; got != 12000 {
				t.Fatalf("job wall %v, want 12000", got)
			}
			d := Choose(t0, h, p, projects, &sim, []float64{0})
			if asked := d.Request.Project == 0; asked != tc.wantAsk {
				t.Fatalf("asked = %v (%+v), want %v", asked, d.Request, tc.wantAsk)
			}
			if tc.why != "" {
				if got := whyOf(d, 0, CPU); got != tc.why {
					t.Fatalf("why = %q, want %q", got, tc.why)
				}
			}
		})
	}
}

// An idle instance is never held back: the guard only stops buffering.
func TestDeadlineGuardIdleInstance(t *testing.T) {
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	h := cpuHost(2)
	projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
	// One CPU busy far past the guard, the other idle.
	j := Job{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 19000, Deadline: at(10000), Received: at(-10000), Runnable: true, Estimate: 19000}
	var sim SimResult
	Simulate(t0, h, p, projects, []Job{j}, nil, &sim)
	d := Choose(t0, h, p, projects, &sim, []float64{0})
	if d.Request.Project != 0 || d.Request.Instances[CPU] <= 0 {
		t.Fatalf("request %+v, want project 0 asked for the idle CPU", d.Request)
	}
}
