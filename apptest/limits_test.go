package apptest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/statefile"
)

// resultComputeError is RESULT state COMPUTE_ERROR (3), what a task
// aborted for a resource limit ends as (CLIENT_STATE::app_finished).
const resultComputeError = 3

// TestElapsedLimitAbortsAPIApp: a real BOINC-API app past its elapsed-time
// limit is asked to abort, exits on its own before the abort timeout, the
// event log says why in the C++ client's words, and the result is
// reported with EXIT_TIME_LIMIT_EXCEEDED (197), as the C++ client does
// it (check_rsc_limits_exceeded, abort_task, request_abort).
//
// The shortest limit the client accepts is 120 s (MIN_TIME_BOUND); so
// that the test need not run that long, the task runs for a moment under
// one daemon, which is stopped, and its recorded elapsed time is moved
// to 117 s: the second daemon resumes it 3 s before the limit.
func TestElapsedLimitAbortsAPIApp(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := testsupport.StartProject(t, testproject.Config{
		Apps: []testproject.App{{
			Name: "apiapp", APIVersion: "7.20.5", Flops: 1e9,
			Files: []testproject.AppFile{{Name: apiAppName, Path: app, Executable: true, MainProgram: true}},
		}},
		// rsc_fpops_bound / flops = 120 s.
		Job:       testproject.JobTemplate{CommandLine: "--seconds 300 --idle", InputSize: 4096, FpopsEst: 1e10, FpopsBound: 1.2e11},
		TotalJobs: 1, MaxJobsPerRPC: 1, RequestDelay: -1,
	})
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := daemonConfig(srv, 0)
	h1 := startDaemon(t, dataDir, cfg)
	tv := h1.waitRunning(30 * time.Second)
	if err := h1.stop(20 * time.Second); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	setElapsed(t, dataDir, tv.Name, 117)

	h2 := startDaemon(t, dataDir, cfg)
	gui := h2.gui()
	h2.waitRunning(30 * time.Second)
	_, rr, _ := waitReported(t, srv, 60*time.Second)
	if rr.ExitStatus != boinc.ExitTimeLimitExceeded || rr.State != resultComputeError {
		t.Fatalf("reported exit_status %d state %d, want %d and %d; stderr:\n%s",
			rr.ExitStatus, rr.State, boinc.ExitTimeLimitExceeded, resultComputeError, rr.StderrOut)
	}
	// The library got <abort/> and exited by itself, unkilled, with
	// EXIT_ABORTED_BY_CLIENT (boinc_api.cpp handle_process_control_msg).
	exits := h2.logs.Find("task process exited")
	if len(exits) != 1 || exits[0]["signal"] != float64(0) || exits[0]["process_exit_code"] != float64(boinc.ExitAbortedByClient) {
		t.Errorf("process exits %v, want one: exit code %d, no signal", exits, boinc.ExitAbortedByClient)
	}
	if k := h2.logs.Find("abort request timed out, killing task"); len(k) > 0 {
		t.Errorf("the app had to be killed: %v", k)
	}

	// The event log (boinccmd --get_messages) in the C++ client's words.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs, err := gui.GetMessages(ctx, 0)
	if err != nil {
		t.Fatalf("get_messages: %v", err)
	}
	want := []string{
		fmt.Sprintf("Aborting task %s: exceeded elapsed time limit 120.00 (120.00G/1.00G)", tv.Name),
		fmt.Sprintf("Computation for task %s finished", tv.Name),
	}
	next := 0
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, m.Body)
		if next < len(want) && m.Body == want[next] {
			next++
		}
	}
	if next < len(want) {
		t.Errorf("event log lacks %q (in this order after %q); it has:\n%s", want[next], want[:next], strings.Join(bodies, "\n"))
	}
}

// setElapsed sets the recorded elapsed time (and that of its checkpoint,
// from which a restart resumes) of the task named name in the stopped
// daemon's state file.
func setElapsed(t *testing.T, dataDir, name string, secs float64) {
	t.Helper()
	s, err := statefile.Open(filepath.Join(dataDir, daemon.StateFileName), statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	var b statefile.Batch
	found := false
	for _, r := range snap.Results {
		if r.Name == name {
			r.ElapsedTime, r.CheckpointElapsedTime = secs, secs
			b.PutResult(r)
			found = true
		}
	}
	if !found {
		t.Fatalf("no result %s in the state file", name)
	}
	if err := s.Commit(&b); err != nil {
		t.Fatal(err)
	}
}

// TestAPIAppWithoutAPIVersion: a real BOINC-API app in an app version
// without <api_version> (as BOINC's wrapper often ships) gets its shared
// memory and heartbeats like any app, the daemon's progress is exactly
// the fraction done the app reports (not the estimate from elapsed time
// it gives programs that report nothing), and it is suspended by
// message, not SIGSTOP, as the C++ client controls every app.
func TestAPIAppWithoutAPIVersion(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	const logName = "fraction_log.txt"
	srv := startProject(t, testproject.App{
		Name:  "apiapp",
		Files: []testproject.AppFile{{Name: apiAppName, Path: app, Executable: true, MainProgram: true}},
	}, "--seconds 120 --fraction-log "+logName)
	dataDir := filepath.Join(t.TempDir(), "data")
	// leave_apps_in_memory: the suspended task stays in memory rather
	// than being asked to quit once it has checkpointed.
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	override := "<global_preferences>\n<leave_apps_in_memory>1</leave_apps_in_memory>\n</global_preferences>\n"
	if err := os.WriteFile(filepath.Join(dataDir, "global_prefs_override.xml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startDaemon(t, dataDir, daemonConfig(srv, 0))
	gui := h.gui()

	tv := h.waitRunning(30 * time.Second)
	logPath := filepath.Join(dataDir, "slots", strconv.Itoa(tv.Slot), logName)
	// reported reads the values the app has reported so far.
	reported := func() map[float64]bool {
		b, err := os.ReadFile(logPath)
		if err != nil && !os.IsNotExist(err) {
			t.Fatalf("the app's fraction log: %v", err)
		}
		out := map[float64]bool{}
		for _, l := range strings.Fields(string(b)) {
			f, err := strconv.ParseFloat(l, 64)
			if err != nil {
				t.Fatalf("fraction log line %q: %v", l, err)
			}
			out[f] = true
		}
		return out
	}
	// Until the app's first app_status the daemon can only estimate; from
	// the first value of the app's own on, every value is the app's.
	var seen []float64
	waitFor(t, 30*time.Second, "three rising fraction done values reported by the app", func() bool {
		v, ok := h.task()
		if !ok || !v.Running || v.FractionDone <= 0 {
			return false
		}
		app := reported()[v.FractionDone]
		switch n := len(seen); {
		case n == 0 && !app:
			return false // still the estimate
		case !app:
			t.Fatalf("after the app's values %v the daemon shows %v, which the app did not report", seen, v.FractionDone)
		case n == 0 || v.FractionDone > seen[n-1]:
			seen = append(seen, v.FractionDone)
		}
		return len(seen) >= 3
	})
	t.Logf("fraction done seen: %v, all reported by the app", seen)

	ar, ok := activeResult(t, gui, tv.Name)
	if !ok || ar.PID == 0 {
		t.Fatalf("get_results has no process id for %s", tv.Name)
	}
	pid := ar.PID
	// As in TestSuspendResume: a loaded machine must tell running from
	// suspended.
	normalPriority(t, pid)
	waitFor(t, 15*time.Second, "a second in which the running app uses 0.1 s of CPU", func() bool {
		return cpuOver(t, pid, time.Second) >= 0.1
	})
	resultOp(t, gui, "suspend_result", tv.Project, tv.Name)
	waitFor(t, 2*time.Second, "the app to stop using CPU after suspend_result", func() bool {
		return cpuOver(t, pid, 500*time.Millisecond) <= 0.02
	})
	if st := mustProcStat(t, pid); st.State == 'T' {
		t.Errorf("the app that reports status was SIGSTOPped (state T); it is suspended by message")
	}
	if v, _ := h.task(); !v.Suspended || v.Running {
		t.Errorf("daemon view after suspend: Suspended=%v Running=%v, want true, false", v.Suspended, v.Running)
	}
	resultOp(t, gui, "resume_result", tv.Project, tv.Name)
	waitFor(t, 10*time.Second, "the app to use CPU again after resume_result", func() bool {
		return cpuOver(t, pid, 500*time.Millisecond) >= 0.1
	})
}
