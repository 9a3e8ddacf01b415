package workfetch

import (
	"math"
	"testing"
)

func TestUpdateDCF(t *testing.T) {
	tests := []struct {
		name              string
		dcf, elapsed, est float64
		want              float64
	}{
		{"underestimate jumps at once", 1, 300, 100, 3},
		{"slightly slower: 10% average", 1, 105, 100, 0.9 + 0.1*1.05},
		{"faster: 10% down", 2, 100, 100, 0.9*2 + 0.1*1},
		{"much faster: 1%", 1, 5, 100, 0.99 + 0.01*0.05},
		{"clamped high", 1, 1e6, 1, 100},
		{"clamped low", 0.01, 0.0001, 1, 0.01},
		{"unset dcf counts as 1", 0, 100, 100, 1},
		{"bad elapsed: unchanged", 2, -1, 100, 2},
		{"bad estimate: unchanged", 2, 100, 0, 2},
	}
	for _, tc := range tests {
		if got := UpdateDCF(tc.dcf, tc.elapsed, tc.est); !near(got, tc.want) {
			t.Errorf("%s: UpdateDCF(%v, %v, %v) = %v, want %v", tc.name, tc.dcf, tc.elapsed, tc.est, got, tc.want)
		}
	}
}

func TestRemaining(t *testing.T) {
	tests := []struct {
		name                        string
		est, elapsed, fd, fdElapsed float64
		exact                       bool
		want                        float64
	}{
		{"not started", 1000, 0, 0, 0, false, 1000},
		{"done", 1000, 500, 1, 500, false, 0},
		{"no progress reported", 1000, 500, 0, 0, false, 500/(1-math.Exp(-0.5)) - 500},
		{"blend", 1000, 200, 0.25, 200, false, 0.25*800 + 0.75*1000 - 200},
		{"exact fraction done", 1000, 200, 0.25, 200, true, 600},
		{"progress reported earlier", 1000, 300, 0.25, 200, false, 0.25*800 + 0.75*1000 - 300},
		{"exceeded estimate: progress only", 1000, 1500, 0.5, 1500, false, 1500},
		{"unknown fd time uses elapsed", 1000, 200, 0.25, 0, true, 600},
		{"never negative", 1000, 900, 0.9, 100, true, 0},
		{"unknown estimate: progress only", math.NaN(), 100, 0.5, 100, false, 100},
		{"NaN fraction: as unreported", 0, 100, math.NaN(), 100, false, 0},
	}
	for _, tc := range tests {
		if got := Remaining(tc.est, tc.elapsed, tc.fd, tc.fdElapsed, tc.exact); !near(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
