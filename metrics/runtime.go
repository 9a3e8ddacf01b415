package metrics

import (
	"runtime"
	rtmetrics "runtime/metrics"
)

// The Go runtime series: the most used ones of client_golang's Go
// collector, under the same names and types, read from runtime/metrics
// (cheap, no stop-the-world; runtime.ReadMemStats is neither).
var (
	goGoroutines = newDesc("go_goroutines", "Number of goroutines that currently exist.", gauge)
	goThreads    = newDesc("go_threads", "Number of OS threads owned by the Go runtime.", gauge)
	goInfo       = newDesc("go_info", "Information about the Go environment.", gauge, "version")
	goAlloc      = newDesc("go_memstats_alloc_bytes", "Number of bytes allocated in heap and currently in use. Equals to /memory/classes/heap/objects:bytes.", gauge)
	goHeapInuse  = newDesc("go_memstats_heap_inuse_bytes", "Number of heap bytes that are in use. Equals to /memory/classes/heap/objects:bytes + /memory/classes/heap/unused:bytes", gauge)
	goSys        = newDesc("go_memstats_sys_bytes", "Number of bytes obtained from system. Equals to /memory/classes/total:bytes.", gauge)
)

// runtime/metrics names read at each scrape, in this order.
const (
	rmGoroutines = iota
	rmThreads
	rmHeapObjects
	rmHeapUnused
	rmTotal
	rmCount
)

var rmNames = [rmCount]string{
	rmGoroutines:  "/sched/goroutines:goroutines",
	rmThreads:     "/sched/threads/total:threads",
	rmHeapObjects: "/memory/classes/heap/objects:bytes",
	rmHeapUnused:  "/memory/classes/heap/unused:bytes",
	rmTotal:       "/memory/classes/total:bytes",
}

// collectGo adds the Go runtime series to b. A runtime/metrics name the
// running Go does not know leaves its series out.
func collectGo(b *batch) {
	var s [rmCount]rtmetrics.Sample
	for i := range s {
		s[i].Name = rmNames[i]
	}
	rtmetrics.Read(s[:])
	val := func(i int) (float64, bool) {
		if s[i].Value.Kind() != rtmetrics.KindUint64 {
			return 0, false
		}
		return float64(s[i].Value.Uint64()), true
	}
	if v, ok := val(rmGoroutines); ok {
		b.add(goGoroutines, v)
	} else {
		b.add(goGoroutines, float64(runtime.NumGoroutine()))
	}
	if v, ok := val(rmThreads); ok {
		b.add(goThreads, v)
	}
	b.add(goInfo, 1, runtime.Version())
	objects, ok1 := val(rmHeapObjects)
	unused, ok2 := val(rmHeapUnused)
	if ok1 {
		b.add(goAlloc, objects)
	}
	if ok1 && ok2 {
		b.add(goHeapInuse, objects+unused)
	}
	if v, ok := val(rmTotal); ok {
		b.add(goSys, v)
	}
}
