package hostcond

import (
	"errors"
	"math"
	"testing"
	"time"
)

func TestCPUSampler(t *testing.T) {
	// Counters of a 4-CPU host: each second adds 4 CPU-seconds of total.
	type tick struct {
		at        float64 // seconds
		busyDelta float64 // busy CPU-seconds since the previous tick
		own       float64
		fail      bool
		want      float64
	}
	tests := []struct {
		name  string
		ticks []tick
	}{
		{"first sample unknown, then the interval's usage", []tick{
			{0, 0, 0, false, -1}, {1, 2, 0, false, 50}, {2, 4, 0, false, 75},
		}},
		{"own tasks are taken out", []tick{
			{0, 0, 0, false, -1}, {1, 4, 3, false, 25}, {2, 4, 4, false, 12.5},
		}},
		{"10-second average", []tick{
			{0, 0, 0, false, -1},
			{5, 20, 0, false, 100}, // all 4 CPUs busy for 5 s
			{10, 0, 0, false, 50},  // then idle for 5 s: average 50 %
			{15, 0, 0, false, 0},   // the busy span has left the window
		}},
		{"calls far apart use the last interval", []tick{
			{0, 0, 0, false, -1}, {60, 24, 0, false, 10},
		}},
		{"own more than busy clamps to 0", []tick{
			{0, 0, 0, false, -1}, {1, 1, 3, false, 0},
		}},
		{"negative own ignored", []tick{
			{0, 0, 0, false, -1}, {1, 1, -5, false, 25},
		}},
		{"read error is unknown and restarts", []tick{
			{0, 0, 0, false, -1}, {1, 4, 0, false, 100}, {2, 4, 0, true, -1}, {3, 4, 0, false, -1}, {4, 2, 0, false, 50},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var busy, total float64
			var next tick
			s := &CPUSampler{read: func() (float64, float64, error) {
				if next.fail {
					return 0, 0, errors.New("counters gone")
				}
				return busy, total, nil
			}}
			start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
			last := 0.0
			for i, tk := range tc.ticks {
				next = tk
				busy += tk.busyDelta
				total += 4 * (tk.at - last)
				last = tk.at
				got := s.Sample(start.Add(time.Duration(tk.at*float64(time.Second))), tk.own)
				if math.Abs(got-tk.want) > 1e-9 {
					t.Fatalf("tick %d (t=%gs): %g%%, want %g%%", i, tk.at, got, tk.want)
				}
			}
		})
	}
}

func TestCPUSamplerCounterReset(t *testing.T) {
	vals := [][2]float64{{100, 400}, {102, 404}, {1, 4}, {3, 8}}
	i := 0
	s := &CPUSampler{read: func() (float64, float64, error) {
		v := vals[i]
		i++
		return v[0], v[1], nil
	}}
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	want := []float64{-1, 50, 50, 50}
	for k, w := range want {
		if got := s.Sample(now.Add(time.Duration(k)*time.Second), 0); got != w {
			t.Fatalf("sample %d = %g, want %g", k, got, w)
		}
	}
}
