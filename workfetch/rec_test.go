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
