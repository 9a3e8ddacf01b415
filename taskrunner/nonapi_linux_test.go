//go:build linux

package taskrunner

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boincapi"
)

// An app whose version has no api_version still gets its shared memory
// and heartbeats, and once it writes app_status (as BOINC's wrapper does)
// its progress is its own and it is controlled by message, as the C++
// client controls every app. Until then it is paused by signal.
func TestNonAPIAppThatWritesStatus(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do sleep 0.05; done\n")
	spec := e.spec("")
	if spec.Version.APIVersion != "" {
		t.Fatal("the fixture's version has an api_version")
	}
	slot, pid, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	key := spec.Result.Key()
	// The test plays the app's API library on the slot's segment.
	shm, err := boincapi.OpenShmem(e.slotPath(slot, boincapi.MmapFileName))
	if err != nil {
		t.Fatalf("no shared memory for the app without api_version: %v", err)
	}
	defer shm.Close()
	t0 := time.Now()
	step := 0
	poll := func() Status {
		t.Helper()
		step++
		st := e.runner.Poll(t0.Add(time.Duration(step) * time.Second))
		if len(st) != 1 {
			t.Fatalf("%d statuses", len(st))
		}
		return st[0]
	}
	if st := poll(); st.ReportsStatus || st.FractionDone != 0 {
		t.Fatalf("silent app: ReportsStatus %v FractionDone %v", st.ReportsStatus, st.FractionDone)
	}
	if msg, ok, _ := shm.Receive(boincapi.Heartbeat); !ok || !boincapi.HasTag(msg, "<heartbeat/>") {
		t.Errorf("no heartbeat for the app without api_version: %q %v", msg, ok)
	}
	// A stop or continue takes effect when the app next runs: at nice 19
	// beside a loaded CI machine's other tests that may take seconds, so
	// the waits below are bounds of 30 s, not measurements.
	// Stopped: in state T, or with the SIGSTOP still pending (a nice-19
	// process on a loaded machine may wait seconds to be scheduled and
	// act on it: what is tested is that the runner sent it).
	stopped := func(want bool) func() bool {
		return func() bool { return (procState(pid) == "T" || sigstopPending(pid)) == want }
	}
	// On timeout, say what /proc showed.
	defer func() {
		if t.Failed() {
			st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
			t.Logf("/proc/%d/status at the end:\n%s", pid, st)
		}
	}()

	// Silent so far: suspended by SIGSTOP.
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "SIGSTOP of the silent app", 30*time.Second, stopped(true))
	// A status it wrote just before the stop is read while it is stopped:
	// it talks from now on, but its group is continued by signal.
	if _, err := shm.Send(boincapi.AppStatus, boincapi.FormatAppStatus(boincapi.Status{CurrentCPUTime: 3, FractionDone: 0.25})); err != nil {
		t.Fatal(err)
	}
	if st := poll(); !st.ReportsStatus || st.FractionDone != 0.25 || st.CPUTime < 3 {
		t.Fatalf("after app_status: %+v", st)
	}
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "SIGCONT of the app stopped by signal", 30*time.Second, stopped(false))
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); ok {
		t.Errorf("resume of a group stopped by signal sent %q", msg)
	}

	// Now it talks: suspend and resume are messages, never signals.
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgSuspend {
		t.Fatalf("control channel %q %v, want %s", msg, ok, boincapi.MsgSuspend)
	}
	e.runner.mu.Lock()
	sig := e.runner.tasks[key].sigStopped
	e.runner.mu.Unlock()
	if sig || procState(pid) == "T" {
		t.Fatal("app that talks was stopped by signal")
	}
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgResume {
		t.Fatalf("control channel %q %v, want %s", msg, ok, boincapi.MsgResume)
	}
	if err := shm.Overwrite(boincapi.AppStatus, boincapi.FormatAppStatus(boincapi.Status{CurrentCPUTime: 4, FractionDone: 0.5})); err != nil {
		t.Fatal(err)
	}
	if st := poll(); !st.ReportsStatus || st.FractionDone != 0.5 {
		t.Fatalf("second app_status: %+v", st)
	}
	// Quit is a message too (the process is killed after QuitGrace).
	if err := e.runner.Quit(key); err != nil {
		t.Fatal(err)
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgQuit {
		t.Fatalf("control channel %q %v, want %s", msg, ok, boincapi.MsgQuit)
	}
	if err := e.runner.Kill(key); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.events, 10*time.Second)
}

// sigstopPending: SIGSTOP is pending for pid, sent to it or its group,
// not yet acted on (/proc/PID/status SigPnd, ShdPnd: bit 19-1).
func sigstopPending(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok || (k != "SigPnd" && k != "ShdPnd") {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err == nil && mask&(1<<(19-1)) != 0 {
			return true
		}
	}
	return false
}
