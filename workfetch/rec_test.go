package workfetch

import (
	"math"
	"testing"
)

func TestRECPriority(t *testing.T) {
	tests := []struct {
		name     string
		rec      []float64
		share    []float64
		eligible []bool
		want     []float64
	}{
		{"no credit yet", []float64{0}, []float64{100}, []bool{true}, []float64{0}},
		{"one project got its share", []float64{5}, []float64{100}, []bool{true}, []float64{-1}},
		{"two equal shares, one ahead", []float64{3, 1}, []float64{100, 100}, []bool{true, true}, []float64{-1.5, -0.5}},
		{"backup project last", []float64{1, 1}, []float64{100, 0}, []bool{true, true}, []float64{-0.5, -1000.5}},
		{"ineligible left out", []float64{1, 9}, []float64{100, 100}, []bool{true, false}, []float64{-1, 0}},
	}
	for _, tc := range tests {
		got := RECPriority(tc.rec, tc.share, tc.eligible, nil)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-12 {
				t.Errorf("%s: priority[%d] = %g, want %g", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

// TestUpdateREC: a minute of one CPU at 1 GFLOPS after attach is credited
// as the C++ client credits it: averaged over the 10-day half-life, not
// taken as a whole day's rate.
func TestUpdateREC(t *testing.T) {
	h := Host{Instances: [NumRsc]float64{CPU: 1}, RelSpeed: [NumRsc]float64{CPU: 1}}
	var st ProjectState
	const t0 = 1795634000.0
	UpdateREC(&st, h, 1e9, [NumRsc]float64{CPU: 60}, t0, t0+60)
	credit := 60 * 1e9 * CobblestoneScale // credit earned in the minute
	w := math.Exp(-60 * math.Ln2 / RECHalfLife)
	want := (1 - w) * credit / (60.0 / 86400)
	if math.Abs(st.REC-want) > 1e-12 || st.RECTime != t0+60 {
		t.Errorf("REC %g at %g, want %g at %g", st.REC, st.RECTime, want, t0+60)
	}
	// Idle time decays it.
	before := st.REC
	UpdateREC(&st, h, 1e9, [NumRsc]float64{}, t0+60, t0+60+RECHalfLife)
	if math.Abs(st.REC-before/2) > 1e-12 {
		t.Errorf("after a half-life REC %g, want %g", st.REC, before/2)
	}
}

// TestUpdateRECTable drives update_rec with a fake clock (Unix seconds
// passed in, no wall clock) through credit, idle decay, a GPU weighted by
// its speed, a short interval and a custom half-life.
func TestUpdateRECTable(t *testing.T) {
	const t0 = 1795634000.0
	day := 86400.0
	cpu1 := Host{Instances: [NumRsc]float64{CPU: 1}}
	gpu := Host{Instances: [NumRsc]float64{CPU: 1, NVIDIA: 1}, RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 4}}
	credit := func(secs float64) float64 { return secs * 1e9 * CobblestoneScale }
	type step struct {
		used       [NumRsc]float64
		start, end float64 // seconds after t0
	}
	tests := []struct {
		name     string
		h        Host
		halfLife float64
		steps    []step
		want     float64 // REC after the steps
	}{
		{"no use, no credit", cpu1, RECHalfLife, []step{{[NumRsc]float64{}, 0, 60}}, 0},
		{
			"a minute after attach", cpu1, RECHalfLife,
			[]step{{[NumRsc]float64{CPU: 60}, 0, 60}},
			(1 - math.Exp(-60*math.Ln2/RECHalfLife)) * credit(60) / (60 / day),
		},
		{
			"steady use for ten half-lives approaches the daily rate", cpu1, day,
			func() []step {
				var s []step
				for i := range 10 * 24 {
					s = append(s, step{[NumRsc]float64{CPU: 3600}, float64(i) * 3600, float64(i+1) * 3600})
				}
				return s
			}(),
			credit(day) * (1 - math.Pow(2, -10)),
		},
		{
			"one half-life idle halves it", cpu1, RECHalfLife,
			[]step{
				{[NumRsc]float64{CPU: 60}, 0, 60},
				{[NumRsc]float64{}, 60, 60 + RECHalfLife},
			},
			(1 - math.Exp(-60*math.Ln2/RECHalfLife)) * credit(60) / (60 / day) / 2,
		},
		{
			"a GPU minute counts its relative speed", gpu, RECHalfLife,
			[]step{{[NumRsc]float64{NVIDIA: 60}, 0, 60}},
			(1 - math.Exp(-60*math.Ln2/RECHalfLife)) * credit(4*60) / (60 / day),
		},
		{
			// 1−w below 1e-6: update_average's first-order branch.
			"a tenth of a second", cpu1, RECHalfLife,
			[]step{{[NumRsc]float64{CPU: 0.1}, 0, 0.1}},
			math.Ln2 * credit(0.1) * day / RECHalfLife,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st ProjectState
			for _, s := range tc.steps {
				UpdateRECHalfLife(&st, tc.h, 1e9, s.used, t0+s.start, t0+s.end, tc.halfLife)
			}
			if math.Abs(st.REC-tc.want) > 1e-9*math.Max(1, tc.want) {
				t.Errorf("REC %.12g, want %.12g", st.REC, tc.want)
			}
			if last := tc.steps[len(tc.steps)-1]; st.RECTime != t0+last.end {
				t.Errorf("RECTime %g, want %g", st.RECTime, t0+last.end)
			}
		})
	}
}

func TestRECSchedBumpAndFetchPenalty(t *testing.T) {
	tests := []struct {
		name    string
		h       Host
		queue   [NumRsc]float64
		wbtot   float64
		bump    float64
		penalty float64
	}{
		{"2 CPUs, an 8.4 h buffer, one 3.6 h job", Host{Instances: [NumRsc]float64{CPU: 2}}, [NumRsc]float64{CPU: 13000}, 30240, 1.0 / 48, 13000.0 / (30240 * 2)},
		{"CPU speed is 1 whatever RelSpeed says", Host{Instances: [NumRsc]float64{CPU: 2}, RelSpeed: [NumRsc]float64{CPU: 3}}, [NumRsc]float64{CPU: 100}, 100, 1.0 / 48, 0.5},
		{
			"a GPU 4× a CPU", Host{Instances: [NumRsc]float64{CPU: 2, NVIDIA: 1}, RelSpeed: [NumRsc]float64{NVIDIA: 4}},
			[NumRsc]float64{CPU: 600, NVIDIA: 600}, 1000, 1.0 / (24 * 6), (600 + 4*600) / (1000 * 6.0),
		},
		{"no instances", Host{}, [NumRsc]float64{CPU: 1}, 100, 0, 0},
		{"no buffer", Host{Instances: [NumRsc]float64{CPU: 1}}, [NumRsc]float64{CPU: 1}, 0, 1.0 / 24, 0},
		{"empty queue", Host{Instances: [NumRsc]float64{CPU: 4}}, [NumRsc]float64{}, 100, 1.0 / 96, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RECSchedBump(tc.h); math.Abs(got-tc.bump) > 1e-15 {
				t.Errorf("RECSchedBump %g, want %g", got, tc.bump)
			}
			if got := RECFetchPenalty(tc.queue, tc.h, tc.wbtot); math.Abs(got-tc.penalty) > 1e-12 {
				t.Errorf("RECFetchPenalty %g, want %g", got, tc.penalty)
			}
		})
	}
}
