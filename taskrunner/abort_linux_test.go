//go:build linux

package taskrunner

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// An app that talks and goes over its elapsed-time limit is sent <abort/>
// and killed only QuitGrace (ABORT_TIMEOUT) later by the Poll clock, as
// ACTIVE_TASK::abort_task/request_abort and the ABORT_PENDING check of
// ACTIVE_TASK_SET::poll do; an app that exits on the request is not
// killed. Either way the result is EXIT_TIME_LIMIT_EXCEEDED.
func TestElapsedLimitAsksAPIAppToAbort(t *testing.T) {
	// The "API app" leaves when the test, playing the app's API library,
	// has read <abort/> and creates the file "leave" in the slot.
	const app = "#!/bin/sh\nwhile [ ! -f leave ]; do sleep 0.05; done\nexit 194\n"
	tests := []struct {
		name    string
		honours bool // the app exits on <abort/>
	}{
		{"app exits on the request", true},
		{"app ignores it and is killed after the timeout", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, app)
			spec := e.spec("")
			spec.Version.APIVersion = "7.20.0"
			spec.WU.RscFpopsBound = 3e11
			spec.Flops = 1e9
			spec.MaxElapsed = 300 * time.Second
			slot, pid, err := e.runner.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			shm, err := boincapi.OpenShmem(e.slotPath(slot, boincapi.MmapFileName))
			if err != nil {
				t.Fatal(err)
			}
			defer shm.Close()
			t0 := time.Now()
			poll := func(d time.Duration) Status {
				t.Helper()
				st := e.runner.Poll(t0.Add(d))
				if len(st) != 1 {
					t.Fatalf("Poll at +%v: %d statuses", d, len(st))
				}
				return st[0]
			}
			if st := poll(299 * time.Second); st.LimitExceeded != "" {
				t.Fatalf("under the limit: LimitExceeded %q", st.LimitExceeded)
			}
			st := poll(301 * time.Second)
			const want = "exceeded elapsed time limit 300.00 (300.00G/1.00G)"
			if st.LimitExceeded != want {
				t.Fatalf("LimitExceeded %q, want %q", st.LimitExceeded, want)
			}
			if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgAbort {
				t.Fatalf("control channel %q %v, want %s", msg, ok, boincapi.MsgAbort)
			}
			// Reported once; the app runs on through the timeout.
			if st := poll(330 * time.Second); st.LimitExceeded != "" {
				t.Errorf("LimitExceeded reported again: %q", st.LimitExceeded)
			}
			if st := poll(360 * time.Second); st.PID != pid {
				t.Fatalf("status %+v", st)
			}
			select {
			case ev := <-e.events:
				t.Fatalf("task ended within the abort timeout: %+v", ev.Exit)
			default:
			}
			if gone(pid) {
				t.Fatal("app killed within the abort timeout")
			}
			var x ExitInfo
			if tc.honours {
				if err := os.WriteFile(e.slotPath(slot, "leave"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
				x = waitEvent(t, e.events, 10*time.Second).Exit
				if x.Signal != 0 || x.ExitStatus != boinc.ExitTimeLimitExceeded {
					t.Errorf("exit signal %d status %d, want the app's own exit reported as %d", x.Signal, x.ExitStatus, boinc.ExitTimeLimitExceeded)
				}
			} else {
				poll(362 * time.Second) // 61 s after the request
				x = waitEvent(t, e.events, 10*time.Second).Exit
				if x.Signal != int(syscall.SIGKILL) {
					t.Errorf("exit signal %d, want SIGKILL after the abort timeout", x.Signal)
				}
			}
			if x.Outcome != Error || x.ExitStatus != boinc.ExitTimeLimitExceeded || x.Message != want {
				t.Fatalf("exit %v status %d %q", x.Outcome, x.ExitStatus, x.Message)
			}
		})
	}
}

// The memory and disk limits abort an API app the same way
// (check_rsc_limits_exceeded and check_max_disk_exceeded both call
// abort_task).
func TestDiskLimitAsksAPIAppToAbort(t *testing.T) {
	e := newTestEnv(t, Config{DiskCheckInterval: time.Millisecond, QuitGrace: time.Minute})
	e.writeApp(t, appFile, "#!/bin/sh\nhead -c 3000000 /dev/zero > big\nwhile [ ! -f leave ]; do sleep 0.05; done\n")
	spec := e.spec("")
	spec.Version.APIVersion = "7.20.0"
	spec.MaxDisk = 1 << 20
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	shm, err := boincapi.OpenShmem(e.slotPath(slot, boincapi.MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	var limit string
	waitFor(t, "the disk limit", 10*time.Second, func() bool {
		for _, s := range e.runner.Poll(time.Now()) {
			limit = s.LimitExceeded
		}
		return limit != ""
	})
	if !strings.HasPrefix(limit, "exceeded disk limit: ") || !strings.HasSuffix(limit, "MB > 1.00MB") {
		t.Errorf("LimitExceeded %q", limit)
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgAbort {
		t.Fatalf("control channel %q %v, want %s", msg, ok, boincapi.MsgAbort)
	}
	if err := os.WriteFile(e.slotPath(slot, "leave"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Error || x.ExitStatus != boinc.ExitDiskLimitExceeded || x.Message != "Disk usage limit exceeded" || x.Signal != 0 {
		t.Fatalf("exit %+v", x)
	}
}
