package apptest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
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

	_, rr, _ := waitReported(t, srv, 40*time.Second)
	if rr.State != resultSuccess || rr.ExitStatus != 0 {
		t.Fatalf("reported state %d exit_status %d, want %d and 0; stderr:\n%s", rr.State, rr.ExitStatus, resultSuccess, rr.StderrOut)
	}
	if rr.FinalCPUTime <= 0 {
		t.Errorf("reported final CPU time %g, want > 0", rr.FinalCPUTime)
	}
	if !strings.Contains(rr.StderrOut, "apiapp: done") || !strings.Contains(rr.StderrOut, "called boinc_finish(0)") {
		t.Errorf("stderr does not show a finished BOINC-API run:\n%s", rr.StderrOut)
	}
}

