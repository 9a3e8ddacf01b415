//go:build linux

package taskrunner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// setPdeathsig kills the app if the daemon dies without stopping it: a
// second line of defence after StopAll. Linux delivers it when the thread
// that forked exits; Go only retires threads locked with LockOSThread, so
// Start must not be called from such a goroutine.
func setPdeathsig(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// waitExitNoReap blocks until pid has exited without reaping it
// (waitid WNOWAIT). It reports false if that is not possible.
func waitExitNoReap(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			return true
		}
		if !errors.Is(err, unix.EINTR) {
			return false
		}
	}
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100

type usage struct {
	cpu float64 // seconds, live members plus their reaped children
	rss float64 // bytes
	ok  bool
}

// groupUsages sums CPU time and resident memory over the members of each
// process group, in one pass over /proc.
func groupUsages(pgids []int) map[int]usage {
	out := make(map[int]usage, len(pgids))
	if len(pgids) == 0 {
		return out
	}
	want := make(map[int]bool, len(pgids))
	for _, g := range pgids {
		want[g] = true
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	page := float64(os.Getpagesize())
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		pgrp, cpu, rss, ok := parseStat(b)
		if !ok || !want[pgrp] {
			continue
		}
		u := out[pgrp]
		u.cpu += cpu
		u.rss += rss * page
		u.ok = true
		out[pgrp] = u
	}
	return out
}

// parseStat reads pgrp, utime+stime+cutime+cstime (seconds) and rss
// (pages) from /proc/PID/stat. The command name may contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (pgrp int, cpu, rss float64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return 0, 0, 0, false
	}
	num := func(n int) float64 {
		v, _ := strconv.ParseFloat(f[n-3], 64)
		return v
	}
	pg, err := strconv.Atoi(f[5-3])
	if err != nil {
		return 0, 0, 0, false
	}
	cpu = (num(14) + num(15) + num(16) + num(17)) / clockTicks
	return pg, cpu, num(24), true
}

// KillOrphan kills the process group of a task left running by a daemon
// that died (kill -9). It acts only if pid is alive and its working
// directory is dataDir/slots/slot, so a reused pid is never touched.
func KillOrphan(dataDir string, slot int, pid int) {
	if pid <= 1 || slot < 0 || dataDir == "" {
		return
	}
	want, err := filepath.EvalSymlinks(slotDir(filepath.Clean(dataDir), slot))
	if err != nil {
		return
	}
	// A pidfd pins the process: the checks and the final kill apply to
	// the same process even if it exits meanwhile and its pid is reused.
	if pidfd, err := unix.PidfdOpen(pid, 0); err == nil {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err == nil && filepath.Clean(cwd) == want {
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pidfd)
	}
	// The leader may be gone already (Pdeathsig killed it with the daemon,
	// or it is a zombie whose cwd can't be read) while workers it started
	// still run in the slot. The group keeps the leader's pid as its id,
	// and Linux does not reuse a pid while its group has members, so any
	// process of that group working inside the slot is ours: kill them all.
	if groupWorksIn(pid, want) {
		_ = unix.Kill(-pid, unix.SIGKILL)
	}
}

// groupWorksIn reports whether a process of group pgid has its cwd at or
// under dir.
func groupWorksIn(pgid int, dir string) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := unix.Getpgid(pid); err != nil || g != pgid {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		cwd = filepath.Clean(cwd)
		if cwd == dir || strings.HasPrefix(cwd, dir+string(filepath.Separator)) {
			return true
		}
	}
	return false
}
