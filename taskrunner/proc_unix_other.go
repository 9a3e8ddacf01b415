//go:build unix && !linux

package taskrunner

import (
	"syscall"
	"time"
)

func setPdeathsig(*syscall.SysProcAttr) {}

// waitExitNoReap is not available here: the caller reaps first.
func waitExitNoReap(int) bool { return false }

type usage struct {
	cpu float64
	rss float64
	vm  float64 // not measured here: swap_size reads 0
	ok  bool
}

// procScan has no portable source outside Linux; CPU time then comes
// from app_status (API apps) and the final rusage.
type procScan struct{}

func (*procScan) usages([]procRef, time.Time) map[int]usage { return nil }

// KillOrphan needs the process's working directory to tell an orphaned
// task from a reused pid; without /proc it cannot, so it does nothing.
func KillOrphan(dataDir string, slot int, pid int) {}
