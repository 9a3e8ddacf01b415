package taskrunner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// wrapperApp is a wrapper-style plain app: its work runs in a background
// child, which Pdeathsig (on the direct child only) would leave running.
const wrapperApp = "#!/bin/sh\nsleep 240 &\necho $! > child.pid\nwait\n"

// startGroup starts sh running script in dir in a process group of its
// own and returns it; it is killed at cleanup.
func startGroup(t *testing.T, dir, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return cmd
}

// TestReaperKillsRegisteredGroups: when its input ends (the daemon died),
// the reaper kills every group still registered, grandchildren included,
// and says so; a group that was unregistered is left alone.
func TestReaperKillsRegisteredGroups(t *testing.T) {
	t.Parallel()
	dirA, dirB := t.TempDir(), t.TempDir()
	a := startGroup(t, dirA, "sleep 240 & echo $! > child.pid; wait")
	b := startGroup(t, dirB, "sleep 240 & echo $! > child.pid; wait")
	childA := readPID(t, filepath.Join(dirA, "child.pid"))
	childB := readPID(t, filepath.Join(dirB, "child.pid"))
	in := fmt.Sprintf("+%d slot 3, task a\n+%d slot 4, task b\n-%d\ngarbage\n+1 init\n+x\n", a.Process.Pid, b.Process.Pid, b.Process.Pid)
	var out bytes.Buffer
	start := time.Now()
	if code := runReaper(strings.NewReader(in), &out, 4242); code != 0 {
		t.Fatalf("runReaper exit code %d", code)
	}
	waitFor(t, "the registered group's grandchild to die", 5*time.Second, func() bool { return gone(childA) && gone(a.Process.Pid) })
	t.Logf("figures: registered group killed %s after the reaper's input ended", time.Since(start).Round(time.Millisecond))
	if gone(childB) || gone(b.Process.Pid) {
		t.Error("the unregistered group was killed")
	}
	want := fmt.Sprintf("boincd (pid 4242) is gone; killed process group %d (slot 3, task a)", a.Process.Pid)
	if !strings.Contains(out.String(), want) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("reaper said %q, want one line with %q", out.String(), want)
	}
}

// syncBuffer is a log sink safe for the runner's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunnerReaperKillsTree: a task the runner starts is registered with a
// reaper process (this test binary run again); when the reaper's pipe
// closes, as it does when the daemon dies, the task's whole tree dies:
// the app and the child it started in the background.
func TestRunnerReaperKillsTree(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	e := newTestEnv(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e.writeApp(t, appFile, wrapperApp)
	slot, pid, err := e.runner.Start(context.Background(), e.spec(""))
	if err != nil {
		t.Fatal(err)
	}
	child := readPID(t, e.slotPath(slot, "child.pid"))
	e.runner.reap.mu.Lock()
	rp := e.runner.reap.cmd
	registered := e.runner.reap.groups[pid]
	e.runner.reap.mu.Unlock()
	if rp == nil || !strings.Contains(registered, "slot ") {
		t.Fatalf("task group %d not registered with a running reaper (%q)", pid, registered)
	}
	if got, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", rp.Process.Pid)); !bytes.Contains(got, []byte(reaperArg)) {
		t.Fatalf("reaper process runs %q", got)
	}
	// The daemon's death, as the reaper sees it: its pipe ends.
	e.runner.reap.mu.Lock()
	w := e.runner.reap.w
	e.runner.reap.mu.Unlock()
	start := time.Now()
	w.Close()
	ev := waitEvent(t, e.events, 10*time.Second)
	waitFor(t, "the app's background child to die", 5*time.Second, func() bool { return gone(child) })
	t.Logf("figures: app and its child killed %s after the reaper's pipe closed", time.Since(start).Round(time.Millisecond))
	if ev.Exit.Signal != int(syscall.SIGKILL) {
		t.Errorf("task exit %+v, want killed by SIGKILL", ev.Exit)
	}
}

// TestLeftoversKilledAndLogged: a process left working in a slot (its
// daemon and reaper died) is killed when the next runner starts, and the
// log names it; a process elsewhere is untouched.
func TestLeftoversKilledAndLogged(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	slot := filepath.Join(dataDir, "slots", "2")
	if err := os.MkdirAll(slot, 0o755); err != nil {
		t.Fatal(err)
	}
	left := startGroup(t, slot, "sleep 240 & echo $! > child.pid; wait")
	child := readPID(t, filepath.Join(slot, "child.pid"))
	elsewhere := t.TempDir()
	other := startGroup(t, elsewhere, "sleep 240 & echo $! > child.pid; wait")
	otherChild := readPID(t, filepath.Join(elsewhere, "child.pid"))
	// The shell dies first, as Pdeathsig makes it: the sleep is orphaned.
	_ = syscall.Kill(left.Process.Pid, syscall.SIGKILL)
	waitFor(t, "the shell to die", 5*time.Second, func() bool { return gone(left.Process.Pid) })

	var logs syncBuffer
	start := time.Now()
	if _, err := NewRunner(Config{DataDir: dataDir, Events: make(chan Event, 1), Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
		t.Fatal(err)
	}
	// NewRunner waits (up to 2 s) for the kill to take; a loaded machine
	// may need a moment more.
	waitFor(t, "the leftover to die", 5*time.Second, func() bool { return gone(child) })
	t.Logf("figures: leftover killed in %s", time.Since(start).Round(time.Millisecond))
	want := fmt.Sprintf("killed a process left running by a previous boincd\" slot=2 pid=%d pgid=%d command=\"sleep 240\"", child, left.Process.Pid)
	if !strings.Contains(logs.String(), want) {
		t.Errorf("log %q does not contain %q", logs.String(), want)
	}
	if gone(otherChild) || gone(other.Process.Pid) {
		t.Error("a process outside the slots was killed")
	}
}
