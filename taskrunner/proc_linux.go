//go:build linux

package taskrunner

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

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
	vm  float64 // bytes of virtual memory (what BOINC calls swap_size)
	ok  bool
}

// fullScanEvery is how often every process on the host is looked at to
// find the members of the tasks' groups: the C++ client's
// MEMORY_USAGE_PERIOD, at which it reads all of /proc (procinfo_setup).
// In between, only the members found then are read, so a poll costs a
// few file reads per task instead of one per process on the host (a
// desktop with a browser has hundreds; reading them all each second was
// most of an idle daemon's CPU).
const fullScanEvery = 10 * time.Second

// procScan remembers, between full scans, which processes make up each
// task's process group. Poll is its only user.
type procScan struct {
	mu      sync.Mutex
	members map[int][]int // process group → member pids at the last look
	full    time.Time     // of the last full scan
}

// usages sums CPU time and resident memory over the members of each
// process group, keyed by group id. It reads all of /proc when the last
// full scan is fullScanEvery old, or a group is new to it; otherwise only
// the known members (dropping those that ended or left the group). A
// process forked since the last full scan is counted from the next one,
// its whole CPU time at once: the sums only ever lag, as the C++
// client's 10-second memory figures do, and CPU time is kept monotonic
// by the caller.
func (ps *procScan) usages(procs []procRef, now time.Time) map[int]usage {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	out := make(map[int]usage, len(procs))
	if len(procs) == 0 {
		ps.members = nil
		return out
	}
	full := ps.members == nil || now.Sub(ps.full) >= fullScanEvery || now.Before(ps.full)
	for _, p := range procs {
		if _, ok := ps.members[p.pid]; !ok {
			full = true
		}
	}
	if full {
		ps.scanAll(procs, now, out)
		return out
	}
	page := float64(os.Getpagesize())
	for _, p := range procs {
		pids := ps.members[p.pid]
		kept := pids[:0]
		for _, pid := range pids {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
			if err != nil {
				continue
			}
			pgrp, cpu, rss, vm, ok := parseStat(b)
			if !ok || pgrp != p.pid {
				continue // ended, or its pid is now another's
			}
			kept = append(kept, pid)
			u := out[pgrp]
			u.cpu += cpu
			u.rss += rss * page
			u.vm += vm
			u.ok = true
			out[pgrp] = u
		}
		ps.members[p.pid] = kept
	}
	return out
}

// scanAll is the full scan: one pass over /proc.
func (ps *procScan) scanAll(procs []procRef, now time.Time, out map[int]usage) {
	members := make(map[int][]int, len(procs))
	for _, p := range procs {
		members[p.pid] = nil
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	ps.members, ps.full = members, now
	page := float64(os.Getpagesize())
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		pgrp, cpu, rss, vm, ok := parseStat(b)
		if !ok {
			continue
		}
		if _, want := members[pgrp]; !want {
			continue
		}
		members[pgrp] = append(members[pgrp], pid)
		u := out[pgrp]
		u.cpu += cpu
		u.rss += rss * page
		u.vm += vm
		u.ok = true
		out[pgrp] = u
	}
}

// parseStat reads pgrp, utime+stime+cutime+cstime (seconds), rss
// (pages) and vsize (bytes; the C++ client's swap_size, procinfo_unix)
// from /proc/PID/stat. The command name may contain spaces and
// parentheses, so fields are counted from the last ')'.
func parseStat(b []byte) (pgrp int, cpu, rss, vm float64, ok bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): field n is f[n-3].
	if len(f) < 22 {
		return 0, 0, 0, 0, false
	}
	num := func(n int) float64 {
		v, _ := strconv.ParseFloat(f[n-3], 64)
		return v
	}
	pg, err := strconv.Atoi(f[5-3])
	if err != nil {
		return 0, 0, 0, 0, false
	}
	cpu = (num(14) + num(15) + num(16) + num(17)) / clockTicks
	return pg, cpu, num(24), num(23), true
}

// KillOrphan kills the process group of a task left running by a daemon
// that died (kill -9). It acts only if pid is alive and its working
// directory is dataDir/slots/slot, so a reused pid is never touched.
func KillOrphan(dataDir string, slot int, pid int) {
	if slot < 0 || dataDir == "" {
		return
	}
	want, err := filepath.EvalSymlinks(slotDir(filepath.Clean(dataDir), slot))
	if err != nil {
		return
	}
	// A pidfd pins the process: the checks and the final kill apply to
	// the same process even if it exits meanwhile and its pid is reused.
	if pid <= 1 {
		pid = 0
	} else if pidfd, err := unix.PidfdOpen(pid, 0); err == nil {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
		if err == nil && filepath.Clean(cwd) == want {
			_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		}
		unix.Close(pidfd)
	}
	// The leader may be gone already (Pdeathsig killed it with the daemon,
	// or it is a zombie whose cwd can't be read) while workers it started
	// still run in the slot; or the daemon died before it could record the
	// pid at all. Every process working inside the slot directory belongs
	// to the task, so its whole process group is killed. A process in a
	// session of its own (a volunteer's shell that cd'ed into the slot)
	// is left alone: apps share the daemon's session, only their group is
	// their own.
	groups := slotGroups(want, pid)
	for _, pgid := range groups {
		_ = unix.Kill(-pgid, unix.SIGKILL)
	}
	// SIGKILL is delivered at once but dying takes a moment; the task is
	// restarted in this very slot next, so wait (briefly) until the old
	// processes are really gone.
	for deadline := time.Now().Add(2 * time.Second); len(groups) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		groups = slotGroups(want, pid)
	}
}

// zombie reports whether the process has exited and waits to be reaped:
// it runs no code and holds nothing but its pid.
func zombie(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// procUnder is a live process working at or under a directory.
type procUnder struct {
	pid, pgid int
	name      string // its /proc entry
	rel       string // its working directory relative to the directory
}

// procsUnder lists the live processes, other than this one and zombies,
// whose working directory is dir or below it. Both the kill of a task's
// leftovers and the sweep of every slot at start-up find processes so.
func procsUnder(dir string) []procUnder {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var out []procUnder
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(dir, filepath.Clean(cwd))
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || zombie(e.Name()) {
			continue
		}
		pgid, err := unix.Getpgid(pid)
		if err != nil {
			continue
		}
		out = append(out, procUnder{pid: pid, pgid: pgid, name: e.Name(), rel: rel})
	}
	return out
}

// slotGroups lists the process groups with a member whose cwd is at or
// under dir and that is either the recorded task group (leaderPID) or not
// a session of its own.
func slotGroups(dir string, leaderPID int) []int {
	seen := map[int]bool{}
	var out []int
	for _, p := range procsUnder(dir) {
		if p.pgid <= 1 || seen[p.pgid] {
			continue
		}
		sid, err := unix.Getsid(p.pid)
		if err != nil {
			continue
		}
		if p.pgid == leaderPID || p.pgid != sid {
			seen[p.pgid] = true
			out = append(out, p.pgid)
		}
	}
	return out
}
