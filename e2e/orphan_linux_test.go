package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// sleeperScript is a wrapper-style plain app: its work runs in a
// background child (`sleep 240 &`) that the script waits for.
const sleeperScript = "#!/bin/sh\nsleep 240 &\necho $! > child.pid\nwait\n"

// alive: the process exists and is not a zombie.
func alive(pid int) bool { return testsupport.Proc(pid).Alive() }

// reaperOf finds the task reaper a daemon process started (its child
// running with the reaper argument); 0 if none.
func reaperOf(daemonPID int) int {
	for p := range testsupport.Processes() {
		if !strings.Contains(strings.Join(p.Cmdline(), " "), "boincd-task-reaper") {
			continue
		}
		if st, ok, err := p.Stat(); err == nil && ok && st.PPID == daemonPID {
			return int(p)
		}
	}
	return 0
}

// waitChildPID waits for the app in slot to write its child's pid, other
// than not.
func waitChildPID(t *testing.T, slotDir string, not int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile(filepath.Join(slotDir, "child.pid"))
		if pid, err2 := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && err2 == nil && pid > 0 && pid != not && alive(pid) {
			return pid
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no live child.pid in %s", slotDir)
	return 0
}

// TestTaskTreeDiesWithDaemon (issue 14): kill -9 of boincd takes a
// wrapper-style app's whole process tree with it, the background child
// included (the task reaper); and when the reaper died too, the next start
// kills the leftover and logs it, naming the process.
func TestTaskTreeDiesWithDaemon(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{TotalJobs: 1,
		Job:  testproject.JobTemplate{CommandLine: "--seconds 240"},
		Apps: []testproject.App{testproject.ShellApp("sleeperapp", sleeperScript)}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})

	// 1. kill -9 of the daemon: the tree dies within seconds.
	first := startDaemon(t, "first daemon", childOptions{DataDir: dir})
	started := first.waitLog("task started", 60*time.Second, "component", "client")
	slotDir := filepath.Join(dir, "slots", strconv.Itoa(int(started.num("slot"))))
	child := waitChildPID(t, slotDir, 0)
	if reaperOf(first.cmd.Process.Pid) == 0 {
		t.Errorf("the daemon started no task reaper")
	}
	killed := time.Now()
	first.kill9()
	deadline := killed.Add(5 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if alive(child) {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("the app's background child %d still runs 5 s after kill -9 of the daemon", child)
	}
	t.Logf("figures: background child gone %s after kill -9 of the daemon", time.Since(killed).Round(time.Millisecond))
	if _, ok := first.find(msgIs("boincd task reaper: boincd (pid " + strconv.Itoa(first.cmd.Process.Pid) + ") is gone; killed process group")); !ok {
		t.Errorf("the reaper did not say what it killed:\n%s", first.tail(10))
	}

	// 2. The daemon and its reaper both killed: the child survives them,
	// and the next start kills it and says so.
	second := startDaemon(t, "second daemon", childOptions{DataDir: dir})
	second.waitLog("task restarted", 60*time.Second, "component", "client")
	child = waitChildPID(t, slotDir, child)
	reaper := reaperOf(second.cmd.Process.Pid)
	if reaper == 0 {
		t.Fatal("the second daemon started no task reaper")
	}
	if err := syscall.Kill(reaper, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	second.waitLog("the task reaper exited", 10*time.Second)
	second.kill9()
	time.Sleep(500 * time.Millisecond)
	if !alive(child) {
		t.Fatalf("precondition: the child %d died with the daemon although its reaper was killed first", child)
	}
	third := startDaemon(t, "third daemon", childOptions{DataDir: dir})
	l := third.waitLog("killed a process left running by a previous boincd", 30*time.Second, "component", "runner")
	if int(l.num("pid")) != child || l.str("command") != "sleep 240" || l.num("slot") != started.num("slot") {
		t.Errorf("leftover logged as %s, want pid %d, command \"sleep 240\", slot %v", l.Raw, child, started.num("slot"))
	}
	if alive(child) {
		t.Errorf("the leftover %d still runs after the log said it was killed", child)
	}
	third.waitLog("task restarted", 60*time.Second, "component", "client")
	third.stop()
}
