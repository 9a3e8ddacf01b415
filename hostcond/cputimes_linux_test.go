package hostcond

import (
	"math"
	"testing"
)

func TestParseCPULine(t *testing.T) {
	for _, tc := range []struct {
		line        string
		busy, total float64
		bad         bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{line: "cpu  100 20 30 400 50 6 7 8 9 10", busy: 1.63, total: 6.21},
		{line: "cpu  100 20 30 400", busy: 1.5, total: 5.5}, // old kernels: 4 fields
		{line: "cpu0 1 2 3 4", bad: true},
		{line: "cpu  1 2 x 4", bad: true},
		{line: "cpu  1 2", bad: true},
		{line: "", bad: true},
	} {
		busy, total, err := parseCPULine([]byte(tc.line))
		if (err != nil) != tc.bad {
			t.Errorf("%q: err %v, want error %v", tc.line, err, tc.bad)
			continue
		}
		if !tc.bad && (math.Abs(busy-tc.busy) > 1e-9 || math.Abs(total-tc.total) > 1e-9) {
			t.Errorf("%q: busy %v total %v, want %v %v", tc.line, busy, total, tc.busy, tc.total)
		}
	}
}

// The reader of the real /proc/stat agrees with itself over time and
// allocates nothing per sample.
func TestHostCPUTimesNoAllocs(t *testing.T) {
	if _, _, err := hostCPUTimes(); err != nil {
		t.Skipf("no /proc/stat: %v", err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, _, err := hostCPUTimes(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%v allocations per sample", allocs)
	}
}
