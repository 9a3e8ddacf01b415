package hostcond

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
)

// procStat reads the host's CPU times from the first line of /proc/stat
// into a buffer it keeps: the daemon samples every second, and
// gopsutil's reader allocated a few KB each time (every line of the
// file, split into fields), which made an idle daemon's heap creep up
// to the collector's goal between collections (issue 18).
type procStat struct {
	mu   sync.Mutex
	path string
	buf  []byte
	f    *os.File
}

var errProcStat = errors.New("/proc/stat: no aggregate cpu line")

// userHZ is USER_HZ, the unit of /proc/stat: 100 on every Linux ABI Go
// supports (the kernel exports it to user space as a constant).
const userHZ = 100

// read returns busy and total CPU seconds, summed over all CPUs, with
// the split of hostCPUTimes.
func (p *procStat) read() (busy, total float64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		if p.f, err = os.Open(p.path); err != nil {
			return 0, 0, fmt.Errorf("host CPU times: %w", err)
		}
		p.buf = make([]byte, 1024)
	}
	n, err := p.f.ReadAt(p.buf, 0)
	if n == 0 && err != nil {
		p.f.Close()
		p.f = nil
		return 0, 0, fmt.Errorf("host CPU times: %s: %w", p.path, err)
	}
	line := p.buf[:n]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	return parseCPULine(line)
}

// parseCPULine parses "cpu  user nice system idle iowait irq softirq
// steal guest guest_nice" (fields after steal are inside user and nice).
func parseCPULine(line []byte) (busy, total float64, err error) {
	rest, ok := bytes.CutPrefix(line, []byte("cpu "))
	if !ok {
		return 0, 0, errProcStat
	}
	var v [8]float64
	k := 0
	for k < len(v) {
		rest = bytes.TrimLeft(rest, " ")
		if len(rest) == 0 {
			break
		}
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		x, err := strconv.ParseUint(string(rest[:end]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("host CPU times: /proc/stat field %d %q: %w", k+1, rest[:end], err)
		}
		v[k] = float64(x) / userHZ
		rest = rest[end:]
		k++
	}
	if k < 4 {
		return 0, 0, fmt.Errorf("host CPU times: /proc/stat cpu line has %d fields", k)
	}
	user, nice, system, idle, iowait, irq, softirq, steal := v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]
	busy = user + nice + system + irq + softirq
	return busy, busy + idle + iowait + steal, nil
}

var hostProcStat = &procStat{path: "/proc/stat"}

func hostCPUTimes() (busy, total float64, err error) { return hostProcStat.read() }
