package metrics

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// The process series of client_golang's process collector that matter
// most, same names and types, read from /proc/self. Each is left out of a
// scrape where its source cannot be read.
var (
	procCPU       = newDesc("process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", counter)
	procOpenFDs   = newDesc("process_open_fds", "Number of open file descriptors.", gauge)
	procMaxFDs    = newDesc("process_max_fds", "Maximum number of open file descriptors.", gauge)
	procVSize     = newDesc("process_virtual_memory_bytes", "Virtual memory size in bytes.", gauge)
	procRSS       = newDesc("process_resident_memory_bytes", "Resident memory size in bytes.", gauge)
	procStartTime = newDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", gauge)
)

// userHZ is the unit of the clock-tick fields of /proc/PID/stat. It is 100
// on every Linux architecture (USER_HZ; procfs assumes the same).
const userHZ = 100

// procStat is what the scrape uses of /proc/self/stat.
type procStat struct {
	utime, stime uint64 // clock ticks
	starttime    uint64 // clock ticks after boot
	vsize        uint64 // bytes
	rss          int64  // pages
}

// parseProcStat parses /proc/PID/stat. The command name (field 2) is in
// parentheses and may hold spaces and parentheses itself, so the fields
// are counted from the last ')'.
func parseProcStat(data []byte) (procStat, error) {
	var st procStat
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return st, errors.New("metrics: /proc/self/stat: no command name")
	}
	// f[0] is field 3 (state).
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 22 {
		return st, errors.New("metrics: /proc/self/stat: too few fields")
	}
	var errs [5]error
	st.utime, errs[0] = strconv.ParseUint(f[14-3], 10, 64)
	st.stime, errs[1] = strconv.ParseUint(f[15-3], 10, 64)
	st.starttime, errs[2] = strconv.ParseUint(f[22-3], 10, 64)
	st.vsize, errs[3] = strconv.ParseUint(f[23-3], 10, 64)
	st.rss, errs[4] = strconv.ParseInt(f[24-3], 10, 64)
	return st, errors.Join(errs[:]...)
}

// bootTime is the btime line of /proc/stat, the Unix time the system
// booted; it does not change, so it is read once.
var bootTime = sync.OnceValues(func() (uint64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			return strconv.ParseUint(strings.TrimSpace(rest), 10, 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("metrics: /proc/stat: no btime")
})

// collectProcess adds the process series to b.
func collectProcess(b *batch) {
	if data, err := os.ReadFile("/proc/self/stat"); err == nil {
		if st, err := parseProcStat(data); err == nil {
			b.add(procCPU, float64(st.utime+st.stime)/userHZ)
			b.add(procVSize, float64(st.vsize))
			b.add(procRSS, float64(st.rss)*float64(os.Getpagesize()))
			if bt, err := bootTime(); err == nil {
				b.add(procStartTime, float64(bt)+float64(st.starttime)/userHZ)
			}
		}
	}
	if n, err := countOpenFDs(); err == nil {
		b.add(procOpenFDs, float64(n))
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err == nil {
		// RLIM_INFINITY is the largest uint64, as procfs reports
		// "unlimited".
		b.add(procMaxFDs, float64(lim.Cur))
	}
}

// countOpenFDs counts the entries of /proc/self/fd (the descriptor reading
// it included, as procfs counts).
func countOpenFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, err
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}
