package apptest

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
)

// TestPlainAppSignals: a program that does not use the BOINC API (a shell
// script, no api_version) cannot read control messages, so boincd drives
// it with signals: suspend_result stops its whole process group
// (SIGSTOP: state T), resume_result continues it, abort_result kills the
// group and the server is told exit_status 203.
func TestPlainAppSignals(t *testing.T) {
	t.Parallel()
	srv := startProject(t, testproject.DefaultApp(), "--seconds 120")
	h := startDaemon(t, filepath.Join(t.TempDir(), "data"), daemonConfig(srv, 0))
	gui := h.gui()

	tv := h.waitRunning(30 * time.Second)
	var pid int
	waitFor(t, 10*time.Second, "the script's process id", func() bool {
		ar, ok := activeResult(t, gui, tv.Name)
		pid = ar.PID
		return ok && pid != 0
	})
	// It reports no progress: as the C++ client (ACTIVE_TASK::write_gui),
	// the daemon shows 0 for its first minute and estimates only then.
	if v, ok := h.task(); !ok || v.FractionDone != 0 {
		t.Fatalf("fraction done %v (task known %v) in the script's first minute, want 0", v.FractionDone, ok)
	}
	// The script runs sleep(1) children: wait until the group has one,
	// so the test also covers processes the app started itself.
	waitFor(t, 5*time.Second, "the script to start a child", func() bool {
		return len(processGroup(t, pid)) >= 2
	})

	allInState := func(want bool) func() bool {
		return func() bool {
			g := processGroup(t, pid)
			if len(g) == 0 {
				return false
			}
			for _, s := range g {
				if (s.State == 'T') != want {
					return false
				}
			}
			return true
		}
	}
	resultOp(t, gui, "suspend_result", tv.Project, tv.Name)
	waitFor(t, 2*time.Second, "every process of the group to be stopped (state T)", allInState(true))
	if s := mustProcStat(t, pid); s.State != 'T' {
		t.Fatalf("script state %c after suspend, want T", s.State)
	}

	resultOp(t, gui, "resume_result", tv.Project, tv.Name)
	waitFor(t, 2*time.Second, "every process of the group to run again", allInState(false))

	resultOp(t, gui, "abort_result", tv.Project, tv.Name)
	waitFor(t, 5*time.Second, "the whole process group to be gone", func() bool {
		return len(processGroup(t, pid)) == 0
	})
	_, rr, _ := waitReported(t, srv, 20*time.Second)
	if rr.ExitStatus != boinc.ExitAbortedViaGUI || rr.State != resultAborted {
		t.Fatalf("reported exit_status %d state %d, want %d and %d", rr.ExitStatus, rr.State, boinc.ExitAbortedViaGUI, resultAborted)
	}
}
