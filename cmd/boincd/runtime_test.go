package main

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, smallHeapGCPercent},
		{900 << 10, smallHeapGCPercent},
		{bigHeap - 1, smallHeapGCPercent},
		{bigHeap, bigHeapGCPercent},
		{100 << 20, bigHeapGCPercent},
	} {
		if got := gcPercentFor(tc.live); got != tc.want {
			t.Errorf("gcPercentFor(%d) = %d, want %d", tc.live, got, tc.want)
		}
	}
}

func TestShouldRelease(t *testing.T) {
	for _, tc := range []struct {
		name       string
		live, free uint64
		since      time.Duration
		want       bool
	}{
		{"idle daemon after polling", 500 << 10, 1300 << 10, time.Hour, true},
		{"little free", 500 << 10, releaseFree - 1, time.Hour, false},
		{"just returned", 500 << 10, 4 << 20, releaseEvery - time.Second, false},
		{"a minute on", 500 << 10, 4 << 20, releaseEvery, true},
		{"big queue", bigHeap, 40 << 20, time.Hour, false},
	} {
		if got := shouldRelease(tc.live, tc.free, tc.since); got != tc.want {
			t.Errorf("%s: shouldRelease(%d, %d, %s) = %v, want %v", tc.name, tc.live, tc.free, tc.since, got, tc.want)
		}
	}
}

// The tuner follows the live heap across collections, and GOGC in the
// environment leaves the runtime's target alone.
func TestTuneRuntimeFollowsHeap(t *testing.T) {
	orig := debug.SetGCPercent(100)
	rate := runtime.MemProfileRate
	t.Cleanup(func() { debug.SetGCPercent(orig); runtime.MemProfileRate = rate })

	stop := tuneRuntime(func(string) string { return "" })
	defer stop()
	if runtime.MemProfileRate != 0 {
		t.Errorf("MemProfileRate = %d, want 0", runtime.MemProfileRate)
	}
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	waitFor := func(want int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			runtime.GC()
			if current() == want {
				return
			}
		}
		t.Fatalf("GC percent %d, want %d", current(), want)
	}
	big := make([]byte, 3*bigHeap)
	for i := range big {
		big[i] = byte(i)
	}
	waitFor(bigHeapGCPercent)
	runtime.KeepAlive(big)
	waitFor(smallHeapGCPercent)
	stop()

	debug.SetGCPercent(70)
	defer tuneRuntime(func(k string) string {
		if k == "GOGC" {
			return "70"
		}
		return ""
	})()
	runtime.GC()
	if p := current(); p != 70 {
		t.Errorf("with GOGC set, GC percent %d, want 70", p)
	}
}

// The daemon runs on daemonProcs Ps unless GOMAXPROCS is in the
// environment, and stop gives back what it found.
func TestTuneRuntimeProcs(t *testing.T) {
	orig := debug.SetGCPercent(100)
	rate := runtime.MemProfileRate
	prev := runtime.GOMAXPROCS(3)
	t.Cleanup(func() { debug.SetGCPercent(orig); runtime.MemProfileRate = rate; runtime.GOMAXPROCS(prev) })
	for _, tc := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"default", nil, daemonProcs},
		{"GOGC set", map[string]string{"GOGC": "50"}, daemonProcs},
		{"GOMAXPROCS set", map[string]string{"GOMAXPROCS": "3"}, 3},
	} {
		stop := tuneRuntime(func(k string) string { return tc.env[k] })
		if p := runtime.GOMAXPROCS(0); p != tc.want {
			t.Errorf("%s: GOMAXPROCS %d, want %d", tc.name, p, tc.want)
		}
		stop()
		if p := runtime.GOMAXPROCS(0); p != 3 {
			t.Errorf("%s: GOMAXPROCS %d after stop, want 3", tc.name, p)
		}
	}
}
