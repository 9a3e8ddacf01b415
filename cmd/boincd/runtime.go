package main

import (
	"runtime"
	"runtime/debug"
	rtmetrics "runtime/metrics"
	"sync/atomic"
	"time"
)

// The daemon's GC target follows its live heap. An idle client's live
// heap is under 1 MB, but at Go's default (GOGC=100) the heap is never
// collected below 4 MB, so a client polled by BOINC Manager or boinctui
// settled at 20.7–20.9 MB RSS (7.1 MB anonymous) where the C++ client
// holds 16.2 MB. At 25 the floor is 1 MB: 17.7 MB (4.3 MB anonymous)
// under the same polling, for a collection every few seconds of polling
// at well under a millisecond each (16.9–17.1 MB once the freed pages
// are returned after each collection, below, and GUI RPC connections
// reuse their buffers; 16.6–16.7 on one P with the first collection
// earlier, below). A big queue keeps 100: at
// 10,000 tasks 25 cut RSS 117 → 103 MB but cost get_results 70 % more CPU
// per call, as each reply's garbage brought several collections of the
// whole queue.
const (
	smallHeapGCPercent = 25
	bigHeapGCPercent   = 100
	// bigHeap is where the target changes: the heap goal is 5 MB just
	// below it (at 25) and 8 MB just above (at 100).
	bigHeap = 4 << 20
	// firstGCPercent is the target until the first collection.
	firstGCPercent = 50
)

// gcPercentFor is the GC target for a live heap of that many bytes.
func gcPercentFor(live uint64) int {
	if live >= bigHeap {
		return bigHeapGCPercent
	}
	return smallHeapGCPercent
}

// daemonProcs is the daemon's GOMAXPROCS. Its work is waiting: on
// sockets, timers and its children, with one goroutine owning the state;
// the science apps are other processes. Go's default (a P per CPU) buys
// nothing here, and each P costs: on a 2-CPU host, polled every second
// by a Manager, one P used 6–7 CPU ticks a minute against 8 (fewer idle
// Ps spinning for work at each wake-up) and 0.3 MB less RSS (fewer
// per-P span caches); with 10,000 tasks get_results cost 3.4 ticks a call
// against 4.4 and the RSS was 113.5 MB against 116.1. A host with more
// CPUs would pay more for the default. The CPU benchmarks, which need a
// thread per CPU, raise it while they run (coproc.Benchmark).
const daemonProcs = 1

// tuneRuntime sets the Go runtime for a long-lived, mostly idle daemon.
// GOGC and GOMAXPROCS in the environment win, as for any Go program. It
// returns a func that restores GOMAXPROCS and stops following the heap.
func tuneRuntime(getenv func(string) string) (stop func()) {
	// The daemon never writes heap profiles; sampling allocations for
	// them keeps a 1.4 MB hash table of call stacks.
	runtime.MemProfileRate = 0
	restore := func() {}
	if getenv("GOMAXPROCS") == "" {
		prev := runtime.GOMAXPROCS(daemonProcs)
		restore = func() { runtime.GOMAXPROCS(prev) }
	}
	if getenv("GOGC") != "" {
		return restore
	}
	// Until the first collection, firstGCPercent: it puts the first
	// collection at a 2 MB heap (Go's floor is 4 MB × percent / 100).
	// Go's own 100 left it to chance: on one P a Manager's polling often
	// had not grown the heap to 4 MB after 2 minutes, and the daemon then
	// held 4.7–4.8 MB anonymous (18.0 MB RSS) against 3.0–3.2 once it had
	// collected; with the first collection at 2 MB, 3.3–3.4 MB (16.6–16.7)
	// in every run, and idle 2.8 MB (16.0–16.1, the C++ client 16.1–16.2).
	// From the first collection on, the tuner's target holds, and the
	// runtime returns the pages above it.
	debug.SetGCPercent(firstGCPercent)
	t := &gcTuner{percent: firstGCPercent}
	t.arm()
	return func() { t.stopped.Store(true); restore() }
}

// gcTuner sets the GC target after each collection from the live heap it
// left. It needs no goroutine or timer of its own: a sentinel object,
// unreachable from the start, is collected by every GC cycle, and its
// cleanup (run by the runtime) looks at the heap and arms the next one.
type gcTuner struct {
	// Touched only by the runtime's cleanup goroutine, one at a time.
	percent  int
	released time.Time // when freed pages were last returned
	sample   [2]rtmetrics.Sample

	stopped atomic.Bool
}

// A small heap's freed pages go back to the OS at once after a
// collection. Go's background scavenger returns them slowly and only
// above a margin: a Manager's polling left 1.3 MB of free heap resident
// after two minutes (4.2 MB anonymous in all) which the daemon would
// never use again unless the work changed. Returning them costs a forced
// collection of the small heap, at most once a minute.
const (
	releaseFree  = 512 << 10 // free heap worth returning
	releaseEvery = time.Minute
)

// shouldRelease says whether, after a collection that left live bytes
// of heap and free bytes of free heap, sinceLast after the last return,
// the free pages go back now. A big heap keeps them: its next reply
// needs them again.
func shouldRelease(live, free uint64, sinceLast time.Duration) bool {
	return live < bigHeap && free >= releaseFree && sinceLast >= releaseEvery
}

func (t *gcTuner) arm() {
	// With a pointer in it, not a tiny-allocator block that another,
	// live object could keep from being collected.
	sentinel := &struct{ _ *byte }{}
	runtime.AddCleanup(sentinel, func(t *gcTuner) { t.collected() }, t)
}

func (t *gcTuner) collected() {
	if t.stopped.Load() {
		return
	}
	t.sample[0].Name = "/gc/heap/live:bytes"
	t.sample[1].Name = "/memory/classes/heap/free:bytes"
	rtmetrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() != rtmetrics.KindUint64 || t.sample[1].Value.Kind() != rtmetrics.KindUint64 {
		t.arm()
		return
	}
	live, free := t.sample[0].Value.Uint64(), t.sample[1].Value.Uint64()
	if p := gcPercentFor(live); p != t.percent {
		t.percent = p
		debug.SetGCPercent(p)
	}
	// Before arming: the forced collection finds no sentinel, so it
	// does not bring the tuner back.
	if now := time.Now(); shouldRelease(live, free, now.Sub(t.released)) {
		t.released = now
		debug.FreeOSMemory()
	}
	t.arm()
}
