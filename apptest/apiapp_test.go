package apptest

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
)

// resultSuccess is RESULT state FILES_UPLOADED (5), what a successful
// result is reported with.
const resultSuccess = 5

// TestProgressFromSharedMemory: progress, CPU time and checkpoints of a
// real BOINC-API app reach the daemon through the shared memory boincd
// sets up (boinc_mmap_file, shm_key -1): fraction done is only ever
// known from the app's app_status messages, so a rising FractionDone
// proves the real library attached to boincd's segment.
func TestProgressFromSharedMemory(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 6")
	dataDir := filepath.Join(t.TempDir(), "data")
	h := startDaemon(t, dataDir, daemonConfig(srv, 1))

	tv := h.waitRunning(30 * time.Second)
	var fractions []float64
	var cpu float64
	checkpointSeen := false
	taskState := filepath.Join(dataDir, "slots", strconv.Itoa(tv.Slot), "boinc_task_state.xml")
	waitFor(t, 30*time.Second, "the task to report progress, CPU time and a checkpoint", func() bool {
		tv, ok := h.task()
		if !ok || !tv.Running {
			return false
		}
		if n := len(fractions); tv.FractionDone > 0 && (n == 0 || tv.FractionDone > fractions[n-1]) {
			fractions = append(fractions, tv.FractionDone)
		}
		cpu = max(cpu, tv.CPUSecs)
		// The runner writes boinc_task_state.xml when the app's
		// checkpoint_cpu_time changes in app_status.
		if b, err := os.ReadFile(taskState); err == nil && !strings.Contains(string(b), "<checkpoint_cpu_time>0.000000<") {
			checkpointSeen = true
		}
		return len(fractions) >= 3 && cpu > 0 && checkpointSeen
	})
	t.Logf("fraction done seen rising: %v; CPU %.2f s", fractions, cpu)

	// 6 s of CPU: the bound leaves room for a machine whose CPUs the
	// tests beside this one share (issue 32), not for a slower app.
	name, rr, st := waitReported(t, srv, 120*time.Second)
	if rr.State != resultSuccess || rr.ExitStatus != 0 {
		t.Fatalf("reported state %d exit_status %d, want %d and 0; stderr:\n%s", rr.State, rr.ExitStatus, resultSuccess, rr.StderrOut)
	}
	// The app found its input and output through boinc_resolve_filename
	// and the soft-link files boincd wrote into the slot.
	job := st.Jobs[name]
	in := testproject.JobInput(job.N, job.InputSize)
	sum := fnv.New64a()
	sum.Write(in)
	want := fmt.Sprintf("apiapp output\ninput bytes: %d\ninput fnv: %016x\nseconds: 6\n", len(in), sum.Sum64())
	if len(job.OutputFiles) != 1 {
		t.Fatalf("job has output files %q, want one", job.OutputFiles)
	}
	if got := string(st.Uploaded[job.OutputFiles[0]]); got != want {
		t.Errorf("uploaded output %q, want %q", got, want)
	}
	if rr.FinalCPUTime <= 0 {
		t.Errorf("reported final CPU time %g, want > 0", rr.FinalCPUTime)
	}
	if !strings.Contains(rr.StderrOut, "apiapp: done") || !strings.Contains(rr.StderrOut, "called boinc_finish(0)") {
		t.Errorf("stderr does not show a finished BOINC-API run:\n%s", rr.StderrOut)
	}
}

// TestSuspendResume: suspending a task over GUI RPC (suspend_result, as
// boinccmd --task URL NAME suspend sends it) makes the real app stop
// using CPU within 2 s, without SIGSTOP (BOINC-API apps are suspended by
// the <suspend/> message: the library parks the worker thread), and
// resume_result makes it compute again.
func TestSuspendResume(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 120")
	dataDir := filepath.Join(t.TempDir(), "data")
	// Checkpoints every second, and leave_apps_in_memory so a suspended
	// task that has checkpointed stays in memory instead of being asked to
	// quit (the C++ client's preemption rule, which boincd follows).
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	override := "<global_preferences>\n<leave_apps_in_memory>1</leave_apps_in_memory>\n</global_preferences>\n"
	if err := os.WriteFile(filepath.Join(dataDir, "global_prefs_override.xml"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startDaemon(t, dataDir, daemonConfig(srv, 1))
	gui := h.gui()

	h.waitRunning(30 * time.Second)
	var tv daemon.TaskView
	waitFor(t, 20*time.Second, "progress from the app", func() bool {
		var ok bool
		tv, ok = h.task()
		return ok && tv.FractionDone > 0
	})
	ar, ok := activeResult(t, gui, tv.Name)
	if !ok || ar.PID == 0 {
		t.Fatalf("get_results has no process id for %s: %+v", tv.Name, ar)
	}
	pid := ar.PID
	// This test is about suspension: see normalPriority.
	normalPriority(t, pid)
	// Busy before the suspension: a second in which it used 0.1 s of CPU
	// or more, waited for, as a loaded machine may give it less for a while.
	waitFor(t, 15*time.Second, "a second in which the running app uses 0.1 s of CPU", func() bool {
		return cpuOver(t, pid, time.Second) >= 0.1
	})

	resultOp(t, gui, "suspend_result", tv.Project, tv.Name)
	sent := time.Now()
	// Within 2 s the app must be idle: find a quiet half second.
	waitFor(t, 2*time.Second, "the app to stop using CPU after suspend_result", func() bool {
		return cpuOver(t, pid, 500*time.Millisecond) <= 0.02
	})
	t.Logf("app idle %.2f s after suspend_result", time.Since(sent).Seconds())
	// And it stays idle: the API's timer thread wakes 10 times a second,
	// which costs well under the 0.05 s allowed over 2 s.
	if used := cpuOver(t, pid, 2*time.Second); used > 0.05 {
		t.Fatalf("suspended app used %.2f s CPU over 2 s", used)
	}
	st := mustProcStat(t, pid)
	if st.State == 'T' {
		t.Errorf("API app was SIGSTOPped (state T); BOINC-API apps are suspended by message")
	}
	if tv, _ := h.task(); !tv.Suspended || tv.Running {
		t.Errorf("daemon view after suspend: Suspended=%v Running=%v, want true, false", tv.Suspended, tv.Running)
	}
	fracSuspended := tv.FractionDone
	if tv, _ := h.task(); tv.FractionDone > fracSuspended {
		fracSuspended = tv.FractionDone
	}

	resultOp(t, gui, "resume_result", tv.Project, tv.Name)
	// Resuming is a message the app acts on at once, but on a loaded
	// 2-core machine it may wait for a CPU; 10 s only bounds the wait.
	waitFor(t, 10*time.Second, "the app to use CPU again after resume_result", func() bool {
		return cpuOver(t, pid, 500*time.Millisecond) >= 0.1
	})
	waitFor(t, 10*time.Second, "progress after resume", func() bool {
		tv, _ := h.task()
		return tv.Running && tv.FractionDone > fracSuspended
	})
}

// TestQuitAndResumeFromCheckpoint: a graceful daemon stop sends <quit/>;
// the app exits; a new daemon on the same data directory restarts the
// task in the same slot, where the app finds its checkpoint and resumes
// from it, and the result is reported once, successfully.
func TestQuitAndResumeFromCheckpoint(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 6")
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := daemonConfig(srv, 1)
	h1 := startDaemon(t, dataDir, cfg)
	gui := h1.gui()

	tv := h1.waitRunning(30 * time.Second)
	var ar client.Result
	waitFor(t, 20*time.Second, "a checkpoint", func() bool {
		var ok bool
		ar, ok = activeResult(t, gui, tv.Name)
		return ok && ar.CheckpointCPUTime > 0 && ar.PID != 0
	})
	pid, slot := ar.PID, ar.Slot
	ckpt := filepath.Join(dataDir, "slots", strconv.Itoa(slot), "apiapp_state.txt")
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("app checkpoint file: %v", err)
	}

	stopped := time.Now()
	if err := h1.stop(20 * time.Second); err != nil {
		t.Fatalf("graceful stop: %v", err)
	}
	// The app quit on its own: the daemon waited for it.
	if _, alive, err := readProcStat(pid); err != nil || alive {
		t.Fatalf("app process %d still alive after the daemon stopped (err %v)", pid, err)
	}
	if len(h1.logs.Find("task did not quit before shutdown; killing it")) > 0 {
		t.Errorf("the app had to be killed; it should have honoured <quit/>")
	}
	t.Logf("daemon with its app stopped in %.2f s", time.Since(stopped).Seconds())
	if _, err := os.Stat(ckpt); err != nil {
		t.Fatalf("checkpoint gone after quit: %v", err)
	}

	h2 := startDaemon(t, dataDir, cfg)
	tv2 := h2.waitRunning(30 * time.Second)
	// This test is about the checkpoint, not the app's share of a busy
	// machine (normalPriority).
	if ar2, ok := activeResult(t, h2.gui(), tv2.Name); ok && ar2.PID != 0 {
		normalPriority(t, ar2.PID)
	}
	if tv2.Slot != slot {
		t.Errorf("restarted in slot %d, want the original slot %d", tv2.Slot, slot)
	}
	name, rr, st := waitReported(t, srv, 60*time.Second)
	if rr.State != resultSuccess || rr.ExitStatus != 0 {
		t.Fatalf("reported state %d exit_status %d, want %d and 0; stderr:\n%s", rr.State, rr.ExitStatus, resultSuccess, rr.StderrOut)
	}
	if !strings.Contains(rr.StderrOut, "apiapp: resumed from checkpoint at") {
		t.Errorf("reported stderr does not show a resume from the checkpoint:\n%s", rr.StderrOut)
	}
	// The restart counts CPU time from the last checkpoint the daemon saw
	// (init_data.xml wu_cpu_time), and the app redoes the work after its
	// own checkpoint file, which can be a second ahead: the daemon learns
	// of a checkpoint only from the next app_status, which a quit can
	// pre-empt (as with the C++ client). So the total is at least the
	// daemon's checkpoint plus the second run's work.
	var base float64
	if rs := h2.logs.Find("task restarted"); len(rs) == 1 {
		base, _ = rs[0]["from_checkpoint_cpu"].(float64)
	} else {
		t.Fatalf("second daemon logged %d task restarts, want 1", len(rs))
	}
	var resumedAt float64
	if i := strings.Index(rr.StderrOut, "resumed from checkpoint at "); i >= 0 {
		fmt.Sscanf(rr.StderrOut[i+len("resumed from checkpoint at "):], "%g", &resumedAt)
	}
	if base <= 0 || resumedAt <= 0 {
		t.Fatalf("restart from checkpoint CPU %g, app resumed at %g: want both > 0", base, resumedAt)
	}
	if want := base + (6 - resumedAt) - 0.1; rr.FinalCPUTime < want {
		t.Errorf("reported final CPU time %.2f s, want at least %.2f s (checkpoint %.2f s + second run's %.2f s of work)",
			rr.FinalCPUTime, want, base, 6-resumedAt)
	}
	// Give a duplicate report a chance to show up before counting.
	time.Sleep(time.Second)
	if n := srv.Stats().Reported[name]; n != 1 {
		t.Errorf("result %s reported %d times, want once", name, n)
	}
	if len(st.Errors) > 0 {
		t.Errorf("server saw protocol errors: %q", st.Errors)
	}
}

// TestAbort: abort_result over GUI RPC ends the app's process within a
// few seconds and the server is told exit_status 203
// (EXIT_ABORTED_VIA_GUI).
func TestAbort(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 120")
	h := startDaemon(t, filepath.Join(t.TempDir(), "data"), daemonConfig(srv, 0))
	gui := h.gui()

	h.waitRunning(30 * time.Second)
	var tv daemon.TaskView
	waitFor(t, 20*time.Second, "progress from the app", func() bool {
		var ok bool
		tv, ok = h.task()
		return ok && tv.FractionDone > 0
	})
	ar, ok := activeResult(t, gui, tv.Name)
	if !ok || ar.PID == 0 {
		t.Fatalf("get_results has no process id for %s", tv.Name)
	}

	resultOp(t, gui, "abort_result", tv.Project, tv.Name)
	waitFor(t, 5*time.Second, "the aborted app's process to be gone", func() bool {
		_, alive, err := readProcStat(ar.PID)
		return err == nil && !alive
	})
	_, rr, _ := waitReported(t, srv, 20*time.Second)
	if rr.ExitStatus != boinc.ExitAbortedViaGUI || rr.State != resultAborted {
		t.Fatalf("reported exit_status %d state %d, want %d and %d", rr.ExitStatus, rr.State, boinc.ExitAbortedViaGUI, resultAborted)
	}
}

// resultAborted is RESULT state ABORTED (6).
const resultAborted = 6

// TestMemoryLimit: a task whose working set exceeds its workunit's
// rsc_memory_bound (the test project sends 1e8 bytes) is ended with
// EXIT_MEM_LIMIT_EXCEEDED (198), as the C++ client does.
func TestMemoryLimit(t *testing.T) {
	// taskrunner enforces TaskSpec.MaxMemory, but daemon.startTask does not
	// set it from the workunit's rsc_memory_bound yet: remove this skip
	// once it does.
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 120 --mem 300")
	h := startDaemon(t, filepath.Join(t.TempDir(), "data"), daemonConfig(srv, 0))
	gui := h.gui()

	tv := h.waitRunning(30 * time.Second)
	var pid int
	waitFor(t, 20*time.Second, "the app's process id", func() bool {
		ar, ok := activeResult(t, gui, tv.Name)
		pid = ar.PID
		return ok && pid != 0
	})
	_, rr, _ := waitReported(t, srv, 40*time.Second)
	if rr.ExitStatus != boinc.ExitMemLimitExceeded {
		t.Fatalf("reported exit_status %d state %d, want %d (memory limit); stderr:\n%s", rr.ExitStatus, rr.State, boinc.ExitMemLimitExceeded, rr.StderrOut)
	}
	if _, alive, err := readProcStat(pid); err != nil || alive {
		t.Errorf("app process %d still alive after the memory-limit abort (err %v)", pid, err)
	}
}
