package taskrunner

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/boincd/boincd/boinc"
)

func TestElapsedLimit(t *testing.T) {
	tests := []struct {
		bound, flops float64
		want         time.Duration
	}{
		{1e13, 1e9, 10000 * time.Second},
		{8.1e12, 8.1e9, 1000 * time.Second},
		{1.5e11, 1e9, 150 * time.Second},
		{1.2e11, 1e9, 120 * time.Second}, // exactly the minimum: kept
		{1.19e11, 1e9, 12 * time.Hour},   // under 120 s: 12 h
		{0, 1e9, 12 * time.Hour},
		{-5, 1e9, 12 * time.Hour},
		{1e13, 0, 12 * time.Hour},
		{1e13, -1, 12 * time.Hour},
		{math.NaN(), 1e9, 12 * time.Hour},
		{1e300, 1e-300, time.Duration(math.MaxInt64)},
	}
	for _, tc := range tests {
		if got := ElapsedLimit(tc.bound, tc.flops); got != tc.want {
			t.Errorf("ElapsedLimit(%g, %g) = %v, want %v", tc.bound, tc.flops, got, tc.want)
		}
	}
}

func TestLimitMessages(t *testing.T) {
	tests := []struct{ got, want string }{
		// client/app_control.cpp check_rsc_limits_exceeded and
		// check_max_disk_exceeded, 7.20.5.
		{elapsedLimitMessage(time.Duration(1234.56*float64(time.Second)), 1e13, 8.1e9),
			"exceeded elapsed time limit 1234.56 (10000.00G/8.10G)"},
		{memoryLimitMessage(300<<20, 100<<20, false), "working set size > client RAM limit: 300.00MB > 100.00MB"},
		{memoryLimitMessage(300<<20, 100<<20, true), "working set size > workunit.rsc_memory_bound: 300.00MB > 100.00MB"},
		{diskLimit(5<<20, 1<<20).logMsg, "exceeded disk limit: 5.00MB > 1.00MB"},
		{diskLimit(5<<20, 1<<20).msg, "Disk usage limit exceeded"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSmoothWSS(t *testing.T) {
	tests := []struct {
		name         string
		prev, sample float64
		dt           time.Duration
		want         float64
	}{
		{"one half-life halves the gap", 0, 100, WSSHalfLife, 50},
		{"two half-lives", 0, 100, 2 * WSSHalfLife, 75},
		{"C++ 10-s sample", 40, 60, 10 * time.Second, 50},
		{"no time passed", 7, 100, 0, 7},
		{"clock went back", 7, 100, -time.Second, 7},
		{"falls too", 100, 0, WSSHalfLife, 50},
	}
	for _, tc := range tests {
		if got := smoothWSS(tc.prev, tc.sample, tc.dt); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	// Ten 1-s samples decay like one 10-s sample.
	x := 0.0
	for range 10 {
		x = smoothWSS(x, 100, time.Second)
	}
	if math.Abs(x-50) > 1e-9 {
		t.Errorf("ten 1-s samples: %v, want 50", x)
	}
}

func TestAPIVersionAtLeast(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"", false},
		{"7", false},
		{"7.5", true},
		{"7.5.0", true},
		{"7.20.0", true},
		{"7.4.9", false},
		{"6.99", false},
		{"8.0", true},
		{"x.y", false},
		{"7.5beta", true},
	}
	for _, tc := range tests {
		if got := apiVersionAtLeast(tc.v, 7, 5); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestDeviceArgs(t *testing.T) {
	tests := []struct {
		name    string
		gpuType string
		api     string
		devices []int
		want    []string
	}{
		{"CPU task", "", "", nil, nil},
		{"plain GPU app", "NVIDIA", "", []int{1}, []string{"--device", "1"}},
		{"old API, two GPUs", "ATI", "7.4.0", []int{0, 2}, []string{"--device", "0", "--device", "2"}},
		{"API 7.5 reads init_data", "NVIDIA", "7.5.0", []int{1}, nil},
		{"API 7.20", "intel_gpu", "7.20.0", []int{0}, nil},
	}
	for _, tc := range tests {
		spec := TaskSpec{GPUType: tc.gpuType, GPUDevices: tc.devices, Version: &boinc.AppVersion{APIVersion: tc.api}}
		if got := deviceArgs(spec); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// runThrottle drives a throttle with Polls every step for total and
// returns the fraction of polls it ran, and its shortest and longest
// phases.
func runThrottle(pct float64, step, total time.Duration) (frac float64, shortest, longest time.Duration) {
	var th throttle
	th.set(pct)
	now := time.Unix(1_700_000_000, 0)
	on, n := 0, 0
	shortest = time.Duration(math.MaxInt64)
	phaseStart, last := now, th.advance(now)
	for elapsed := step; elapsed <= total; elapsed += step {
		now = now.Add(step)
		// The state between two polls is the one set at the earlier one.
		if last {
			on++
		}
		n++
		cur := th.advance(now)
		if cur != last {
			d := now.Sub(phaseStart)
			shortest, longest = min(shortest, d), max(longest, d)
			phaseStart, last = now, cur
		}
	}
	return float64(on) / float64(n), shortest, longest
}

func TestThrottleDutyCycle(t *testing.T) {
	tests := []struct {
		pct               float64
		shortest, longest time.Duration
	}{
		{50, 5 * time.Second, 5 * time.Second},
		{90, 1 * time.Second, 9 * time.Second},
		{5, 1 * time.Second, 19 * time.Second}, // cycle stretched to 20 s
		{99, 1 * time.Second, 99 * time.Second},
		// Phases that do not end on a poll overrun, and the next phase
		// makes up for it: 2.5 s on becomes 3 s on, 9 s off.
		{25, 3 * time.Second, 9 * time.Second},
		{33.3, 3 * time.Second, 10 * time.Second},
	}
	for _, tc := range tests {
		frac, shortest, longest := runThrottle(tc.pct, time.Second, 2*time.Hour)
		if math.Abs(frac-tc.pct/100) > 0.002 {
			t.Errorf("%v%%: ran %.4f of the time", tc.pct, frac)
		}
		if shortest < tc.shortest || longest > tc.longest {
			t.Errorf("%v%%: phases %v..%v, want within %v..%v", tc.pct, shortest, longest, tc.shortest, tc.longest)
		}
	}
	// Irregular polls keep the average too.
	if frac, _, _ := runThrottle(40, 700*time.Millisecond, time.Hour); math.Abs(frac-0.4) > 0.005 {
		t.Errorf("40%% polled every 0.7 s: ran %.4f", frac)
	}
}

func TestThrottleSetAndGaps(t *testing.T) {
	var th throttle
	now := time.Unix(1_700_000_000, 0)
	for _, pct := range []float64{0, 100, -3, 150, math.NaN()} {
		th.set(pct)
		if th.active() || !th.advance(now) {
			t.Errorf("SetThrottle(%v) throttles", pct)
		}
	}
	th.set(50)
	if !th.advance(now) {
		t.Fatal("a new throttle starts paused")
	}
	// A long gap between polls (host asleep) is not counted.
	if !th.advance(now.Add(time.Hour)) {
		t.Error("a gap of an hour ended the on phase")
	}
	// So is a clock going back.
	if !th.advance(now) {
		t.Error("a clock jump back ended the on phase")
	}
	for i := 1; i <= 5; i++ {
		now = now.Add(time.Second)
		th.advance(now)
	}
	if th.on {
		t.Error("still on after 5 s at 50%")
	}
	// Changing the limit keeps the phase.
	th.set(20)
	if th.on || !th.active() {
		t.Error("set(20) reset the phase")
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(p string, n int) {
		if err := os.WriteFile(p, []byte(strings.Repeat("x", n)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "a"), 1000)
	write(filepath.Join(dir, "sub", "b"), 234)
	big := filepath.Join(t.TempDir(), "big")
	write(big, 1<<16)
	// A real symlink to a big file counts as nothing: it is not followed.
	if err := os.Symlink(big, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	write(out, 66)
	got, err := diskUsage(dir, []string{out, filepath.Join(dir, "missing")})
	if err != nil || got != 1300 {
		t.Fatalf("diskUsage = %v, %v; want 1300", got, err)
	}
	if _, err := diskUsage(filepath.Join(dir, "nope"), nil); err == nil {
		t.Fatal("no error for a missing slot")
	}
}

func TestWindowsStructLayouts(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("layouts checked for 64-bit Windows")
	}
	var l jobPIDList
	tests := []struct {
		name      string
		got, want uintptr
	}{
		{"JOBOBJECT_BASIC_ACCOUNTING_INFORMATION", unsafe.Sizeof(jobAccounting{}), 48},
		{"PROCESS_MEMORY_COUNTERS", unsafe.Sizeof(processMemoryCounters{}), 72},
		{"JOBOBJECT_BASIC_PROCESS_ID_LIST.ProcessIdList offset", unsafe.Offsetof(l.ProcessIDList), 8},
		{"PROCESS_MEMORY_COUNTERS.WorkingSetSize offset", unsafe.Offsetof(processMemoryCounters{}.WorkingSetSize), 16},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestJobDecoding(t *testing.T) {
	a := jobAccounting{TotalUserTime: 15_000_000, TotalKernelTime: 5_000_000}
	if got := a.cpuSeconds(); got != 2 {
		t.Errorf("cpuSeconds = %v, want 2", got)
	}
	var l jobPIDList
	l.NumberOfAssignedProcesses = 3
	l.NumberOfProcessIdsInList = 3
	l.ProcessIDList[0], l.ProcessIDList[1], l.ProcessIDList[2] = 100, 0, 300
	if got := l.pids(); !slices.Equal(got, []uint32{100, 300}) {
		t.Errorf("pids = %v", got)
	}
	l.NumberOfProcessIdsInList = maxJobPIDs + 10 // a lying count
	if got := l.pids(); len(got) != 2 {
		t.Errorf("pids with an oversized count = %v", got)
	}
}
