//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// crashMarker is what the child prints right before it kills itself in a
// commit, so the parent can tell a hook kill from its own SIGKILL.
const crashMarker = "e2e crash hook: killing the daemon inside state commit"

// commitCrasher returns the daemon's StateCommitHook for a child that must
// die inside its nth state commit, after the commit's first write
// syscalls (1: after the first dirty-page write, before bbolt's fdatasync
// and meta page; 2: after the next write, a further page run or the meta
// page). It returns nil when n is 0.
//
// bbolt's Commit cannot be interrupted from outside, and its file writes
// go through an *os.File this package cannot wrap. The hook runs on the
// committing goroutine right before bbolt writes; it pins that goroutine
// to its thread and has a helper goroutine watch the thread's write
// syscall count (/proc/self/task/TID/io, syscw), killing the process the
// moment the count moves: the kill lands while the commit's bytes are
// going to disk. Without per-thread I/O accounting it kills at once,
// before the first write.
func commitCrasher(n, afterWrites int) func() {
	if n <= 0 {
		return nil
	}
	afterWrites = max(afterWrites, 1)
	commits := 0 // only touched inside commits, which the store serialises
	return func() {
		commits++
		if commits != n {
			return
		}
		// Never unlocked: the process dies before the commit returns.
		runtime.LockOSThread()
		// Printed before the baseline is read: it is a write syscall on
		// this thread too.
		fmt.Fprintf(os.Stderr, "%s %d after %d writes\n", crashMarker, n, afterWrites)
		io := filepath.Join("/proc/self/task", strconv.Itoa(syscall.Gettid()), "io")
		base, err := writeSyscalls(io)
		if err != nil {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
		go func() {
			for {
				if w, err := writeSyscalls(io); err != nil || w >= base+uint64(afterWrites) {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {}
				}
			}
		}()
	}
}

// writeSyscalls reads the syscw line of a /proc io file.
func writeSyscalls(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("syscw:")); ok {
			return strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	return 0, fmt.Errorf("%s: no syscw line", path)
}
