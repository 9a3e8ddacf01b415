package daemon

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// releaseAfterStart is when, after start, the daemon gives the memory its
// start-up used back to the kernel: reading the state, the host probe, the
// first scheduler RPC and TLS handshakes leave a few MB of garbage that
// the Go runtime would otherwise keep until the heap reaches its 4 MB
// minimum goal, which an idle daemon may take hours to allocate.
const releaseAfterStart = 20 * time.Second

// maybeReleaseMemory runs from step; once, when start-up is over and no
// scheduler RPC or transfer is in flight (those allocate as they go).
func (d *Daemon) maybeReleaseMemory(now time.Time) {
	if d.memReleased || now.Sub(d.startTime) < releaseAfterStart || d.rpc != nil || len(d.xfers) > 0 {
		return
	}
	d.memReleased = true
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		// Full collections and a scavenge: a few milliseconds with an
		// idle daemon's heap, off the owner loop. Each collection also
		// halves goroutine stacks that start-up grew and no longer uses.
		for range 3 {
			runtime.GC()
		}
		debug.FreeOSMemory()
		s := []metrics.Sample{
			{Name: "/memory/classes/heap/objects:bytes"},
			{Name: "/memory/classes/heap/unused:bytes"},
			{Name: "/memory/classes/heap/free:bytes"},
			{Name: "/memory/classes/heap/stacks:bytes"},
			{Name: "/memory/classes/os-stacks:bytes"},
			{Name: "/memory/classes/metadata/other:bytes"},
			{Name: "/memory/classes/metadata/mspan/inuse:bytes"},
			{Name: "/memory/classes/metadata/mcache/inuse:bytes"},
			{Name: "/memory/classes/other:bytes"},
			{Name: "/memory/classes/profiling/buckets:bytes"},
			{Name: "/sched/gomaxprocs:threads"},
		}
		metrics.Read(s)
		attrs := make([]any, 0, len(s))
		for _, x := range s {
			if x.Value.Kind() == metrics.KindUint64 {
				attrs = append(attrs, slog.Uint64(x.Name, x.Value.Uint64()))
			}
		}
		d.log.Debug("start-up memory released", attrs...)
	}()
}
