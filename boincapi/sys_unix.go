//go:build unix

package boincapi

import (
	"errors"

	"golang.org/x/sys/unix"
)

// processCPUTime is this process's user+system CPU seconds (getrusage).
func processCPUTime() float64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// pidAlive is kill(pid, 0): EPERM still means the process exists.
func pidAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}
