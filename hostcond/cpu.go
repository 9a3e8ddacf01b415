package hostcond

import (
	"sync"
	"time"
)

// CPUWindow is the span over which CPUSampler averages, as the C++
// client averages non-BOINC CPU usage over 10 seconds.
const CPUWindow = 10 * time.Second

// CPUSampler measures the CPU usage of everything but boincd's tasks.
// The zero value reads the host's CPU times (gopsutil: /proc/stat on
// Linux, GetSystemTimes on Windows; on macOS without cgo they are
// unavailable and every sample is unknown). It is safe for concurrent
// use.
type CPUSampler struct {
	mu sync.Mutex
	// read returns the host's cumulative busy and total CPU seconds
	// (summed over all CPUs); nil means the host's own counters.
	read    func() (busy, total float64, err error)
	prev    [2]float64
	hasPrev bool
	spans   []cpuSpan
}

// cpuSpan is what happened between two samples.
type cpuSpan struct {
	end              time.Time
	busy, own, total float64
}

// NewCPUSampler returns a sampler of this host.
func NewCPUSampler() *CPUSampler { return &CPUSampler{} }

// Sample returns the non-BOINC CPU usage in percent of all CPUs (0–100),
// averaged over the last CPUWindow, or -1 while unknown (the first call,
// or when the host's counters cannot be read).
//
// ownCPUSecs is the CPU time (user + system, summed over all of boincd's
// task processes) used since the previous call; it is taken out of the
// host's busy time. Call it every few seconds; calls further apart than
// CPUWindow average over just the last interval.
func (s *CPUSampler) Sample(now time.Time, ownCPUSecs float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	read := s.read
	if read == nil {
		read = hostCPUTimes
	}
	busy, total, err := read()
	if err != nil {
		s.hasPrev = false
		s.spans = s.spans[:0]
		return -1
	}
	prev, hadPrev := s.prev, s.hasPrev
	s.prev, s.hasPrev = [2]float64{busy, total}, true
	if hadPrev {
		db, dt := busy-prev[0], total-prev[1]
		if db >= 0 && dt > 0 && db <= dt {
			if ownCPUSecs < 0 {
				ownCPUSecs = 0
			}
			s.spans = append(s.spans, cpuSpan{end: now, busy: db, own: ownCPUSecs, total: dt})
		}
	}
	// Keep the spans that end inside the window, and always the newest.
	keep := 0
	for keep < len(s.spans)-1 && now.Sub(s.spans[keep].end) >= CPUWindow {
		keep++
	}
	s.spans = append(s.spans[:0], s.spans[keep:]...)
	if len(s.spans) == 0 {
		return -1
	}
	var b, o, t float64
	for _, sp := range s.spans {
		b, o, t = b+sp.busy, o+sp.own, t+sp.total
	}
	pct := (b - o) / t * 100
	switch {
	case pct < 0:
		return 0
	case pct > 100:
		return 100
	}
	return pct
}
