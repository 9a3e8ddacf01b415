package apptest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boincapi"
)

// How the real 7.20 library decides that its client is gone
// (api/boinc_api.cpp client_dead, called from the timer thread once a
// second while not in a critical section):
//
//   - client_pid > 0: every 10 s of timer ticks it runs kill(client_pid, 0)
//     and gives up when that fails. Heartbeats are then read but never
//     timed out.
//   - client_pid 0: it gives up when no <heartbeat/> arrived for 30 s
//     (HEARTBEAT_GIVEUP_SECS), counting from boinc_init.
//
// Giving up means writing one of the messages below to stderr.txt and
// exiting from the timer thread with status 0 and without
// boinc_finish_called, which the client treats as a premature exit and
// restarts the task from its checkpoint.
const (
	clientGoneMsg  = "BOINC client no longer exists - exiting"
	noHeartbeatMsg = "No heartbeat from client for 30 sec - exiting"
	clientDeadMsg  = "timer handler: client dead, exiting"
	// clientDeadExitCode is the exit status the library gives itself when
	// the client is dead (exit_from_timer_thread(0)), observed with the
	// Debian 7.20.5 library for both causes.
	clientDeadExitCode = 0
)

// TestClientPIDIsDaemon: the init_data.xml boincd writes for a running
// task names boincd itself (the test process, since the daemon runs
// in-process) as client_pid, with shm_key -1 (the mmap file). The app
// runs long enough to pass the library's first 10-s kill(client_pid, 0)
// check, so finishing normally shows the real library accepted boincd's
// pid as a live client.
func TestClientPIDIsDaemon(t *testing.T) {
	t.Parallel()
	app := needAPIApp(t)
	srv := apiProject(t, app, "--seconds 12")
	dataDir := filepath.Join(t.TempDir(), "data")
	h := startDaemon(t, dataDir, daemonConfig(srv, 0))

	tv := h.waitRunning(30 * time.Second)
	initData := filepath.Join(dataDir, "slots", strconv.Itoa(tv.Slot), boincapi.InitDataFileName)
	d, err := boincapi.ReadInitData(initData)
	if err != nil {
		t.Fatalf("init_data.xml of the running task: %v", err)
	}
	if d.ClientPID != os.Getpid() {
		t.Errorf("%s: client_pid %d, want the daemon's pid %d", initData, d.ClientPID, os.Getpid())
	}
	if d.ShmKey != -1 {
		t.Errorf("%s: shm_key %d, want -1 (boinc_mmap_file)", initData, d.ShmKey)
	}
	if tv, ok := h.task(); !ok || !tv.Running {
		t.Errorf("task no longer running after init_data.xml was read (ok %v, running %v)", ok, tv.Running)
	}

	_, rr, _ := waitReported(t, srv, 90*time.Second)
	if rr.State != resultSuccess || rr.ExitStatus != 0 {
		t.Fatalf("reported state %d exit_status %d, want %d and 0; stderr:\n%s", rr.State, rr.ExitStatus, resultSuccess, rr.StderrOut)
	}
	if strings.Contains(rr.StderrOut, clientGoneMsg) || strings.Contains(rr.StderrOut, clientDeadMsg) {
		t.Errorf("the app thought boincd was gone:\n%s", rr.StderrOut)
	}
	if !strings.Contains(rr.StderrOut, "called boinc_finish(0)") {
		t.Errorf("stderr does not show a finished BOINC-API run:\n%s", rr.StderrOut)
	}
}

// TestAppExitsWhenClientGone: an app whose client_pid names a process
// that dies exits by itself at the library's next 10-s liveness check,
// without finishing, even though heartbeats keep arriving (with a pid
// the library does not time heartbeats out, so they cannot keep it
// alive either).
func TestAppExitsWhenClientGone(t *testing.T) {
	t.Parallel()
	appPath := needAPIApp(t)

	// The stand-in client. It must be reaped after the kill: a zombie
	// still answers kill(pid, 0).
	client := exec.Command("sleep", "600")
	if err := client.Start(); err != nil {
		t.Fatalf("start stand-in client: %v", err)
	}
	clientDone := make(chan struct{})
	go func() {
		_ = client.Wait()
		close(clientDone)
	}()
	t.Cleanup(func() {
		_ = client.Process.Kill()
		<-clientDone
	})

	app := startDirectApp(t, appPath, client.Process.Pid)
	stopBeats := app.heartbeats(t)
	defer stopBeats()
	app.waitStarted(t, 20*time.Second)

	if err := client.Process.Kill(); err != nil {
		t.Fatalf("kill stand-in client: %v", err)
	}
	<-clientDone
	killed := time.Now()

	st := app.waitExit(t, 20*time.Second)
	t.Logf("app exited %.1f s after its client died (%.1f s after start): %v",
		time.Since(killed).Seconds(), time.Since(app.start).Seconds(), st)
	app.checkGaveUp(t, st, clientGoneMsg)
	if beats := stopBeats(); beats == 0 {
		t.Errorf("the app read no heartbeat")
	}
}

// TestAppExitsWithoutHeartbeat: with client_pid 0 the library's only
// sign of a client is the heartbeat. Without any, the app exits by itself
// 30 s after it started, without finishing; with one a second, as the
// client sends them, it is still running after 35 s.
//
// Both apps start together and the cases are then checked in turn, so
// the test takes 35 s and one parallel slot rather than two.
func TestAppExitsWithoutHeartbeat(t *testing.T) {
	t.Parallel()
	appPath := needAPIApp(t)
	tests := []struct {
		name       string
		heartbeats bool
		app        *directApp
		stopBeats  func() int
	}{
		{name: "no heartbeats", heartbeats: false},
		{name: "heartbeat every second", heartbeats: true},
	}
	for i := range tests {
		tc := &tests[i]
		tc.app = startDirectApp(t, appPath, 0)
		tc.stopBeats = func() int { return 0 }
		if tc.heartbeats {
			tc.stopBeats = tc.app.heartbeats(t)
			t.Cleanup(func() { tc.stopBeats() })
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			app := tc.app
			app.waitStarted(t, 20*time.Second)

			if !tc.heartbeats {
				st := app.waitExit(t, 40*time.Second-time.Since(app.start))
				ran := st.exitedAt.Sub(app.start)
				t.Logf("app without heartbeats exited %.1f s after start: %v", ran.Seconds(), st)
				// The library counts 30 s from boinc_init; an exit well
				// before that would be some other failure.
				if ran < 25*time.Second {
					t.Errorf("app exited after %.1f s, before the 30-s heartbeat timeout", ran.Seconds())
				}
				app.checkGaveUp(t, st, noHeartbeatMsg)
				return
			}

			select {
			case <-app.exited:
				t.Fatalf("app with heartbeats exited after %.1f s: %v; stderr:\n%s",
					app.state.exitedAt.Sub(app.start).Seconds(), app.state, app.stderr())
			case <-time.After(35*time.Second - time.Since(app.start)):
			}
			beats := tc.stopBeats()
			t.Logf("app with heartbeats still running after %.1f s; it took %d heartbeats",
				time.Since(app.start).Seconds(), beats)
			// The client sends a heartbeat only once the app has taken the
			// previous one, so the count shows the app kept reading them.
			if beats < 20 {
				t.Errorf("the app took %d heartbeats in 35 s, want about one a second", beats)
			}
			if s := app.stderr(); strings.Contains(s, clientDeadMsg) {
				t.Errorf("the app thought its client dead:\n%s", s)
			}
			// End it as the client does: <quit/>.
			if _, err := app.shm.Send(boincapi.ProcessControlRequest, "<quit/>"); err != nil {
				t.Fatalf("send <quit/>: %v", err)
			}
			st := app.waitExit(t, 10*time.Second)
			t.Logf("app quit on <quit/>: %v", st)
		})
	}
}

// directApp is the compiled app running in a hand-made slot outside the
// daemon, with the test as its client through the slot's boinc_mmap_file.
type directApp struct {
	slot  string
	shm   *boincapi.Shmem
	start time.Time
	// exited is closed once the process has been waited for; state is
	// set before.
	exited chan struct{}
	state  exitState
}

// exitState is how the process ended and when the test saw it.
type exitState struct {
	*os.ProcessState
	exitedAt time.Time
}

// startDirectApp starts the app for 120 s (far longer than any test here
// lets it run) in a fresh slot whose init_data.xml has shm_key -1 and the
// given client_pid. It runs --idle: these tests exercise only the
// library's timer thread, and busy apps would slow the parallel tests and
// that timer. The app is killed when the test ends if it is still
// running.
func startDirectApp(t *testing.T, appPath string, clientPID int) *directApp {
	t.Helper()
	slot := t.TempDir()
	shm, err := boincapi.CreateShmem(filepath.Join(slot, boincapi.MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = shm.Close() })
	writeInitDataFor(t, slot, -1, clientPID)
	if err := os.WriteFile(filepath.Join(slot, "in"), []byte("probe input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(appPath, "--seconds", "120", "--idle")
	cmd.Dir = slot
	a := &directApp{slot: slot, shm: shm, exited: make(chan struct{})}
	a.start = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start app: %v", err)
	}
	go func() {
		_ = cmd.Wait() // the outcome is in cmd.ProcessState
		a.state = exitState{ProcessState: cmd.ProcessState, exitedAt: time.Now()}
		close(a.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			_ = cmd.Process.Kill()
			<-a.exited
		}
	})
	return a
}

// waitStarted waits for the app's first app_status message: the library
// has read init_data.xml, mapped the file and started its timer.
func (a *directApp) waitStarted(t *testing.T, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		msg, ok, err := a.shm.Receive(boincapi.AppStatus)
		if err != nil {
			t.Fatalf("read app_status: %v", err)
		}
		if ok && boincapi.HasTag(msg, "<current_cpu_time>") {
			return
		}
		select {
		case <-a.exited:
			t.Fatalf("app exited before its first app_status: %v; stderr:\n%s", a.state, a.stderr())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no app_status from the app within %s; stderr:\n%s", limit, a.stderr())
		}
	}
}

// waitExit waits up to limit for the app to exit by itself.
func (a *directApp) waitExit(t *testing.T, limit time.Duration) exitState {
	t.Helper()
	select {
	case <-a.exited:
		return a.state
	case <-time.After(limit):
		t.Fatalf("app still running %.1f s after start; stderr:\n%s", time.Since(a.start).Seconds(), a.stderr())
		return exitState{}
	}
}

// heartbeats sends the client's heartbeat every second, as boincd and
// the C++ client do: only when the app has read the previous one. The
// returned function stops the sender (it may be called again) and
// returns how many heartbeats the app took; it must be called before t
// ends.
func (a *directApp) heartbeats(t *testing.T) func() int {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		sent := 0
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			ok, err := a.shm.Send(boincapi.Heartbeat, boincapi.FormatHeartbeat(0, 1<<30))
			if err != nil {
				t.Errorf("send heartbeat: %v", err)
			}
			if ok {
				sent++
			}
			select {
			case <-ctx.Done():
				// The one still in the channel was not taken.
				if full, err := a.shm.HasMsg(boincapi.Heartbeat); err == nil && full && sent > 0 {
					sent--
				}
				done <- sent
				return
			case <-tick.C:
			}
		}
	}()
	taken, stopped := 0, false
	return func() int {
		if !stopped {
			cancel()
			taken, stopped = <-done, true
		}
		return taken
	}
}

// checkGaveUp checks that the app ended as the library ends when it
// decides its client is dead: msg and clientDeadMsg in stderr.txt, exit
// status clientDeadExitCode, not killed by a signal, and no
// boinc_finish_called (which would make the client count it as done).
func (a *directApp) checkGaveUp(t *testing.T, st exitState, msg string) {
	t.Helper()
	stderr := a.stderr()
	if !st.Exited() {
		t.Errorf("app did not exit by itself: %v; stderr:\n%s", st, stderr)
	} else if st.ExitCode() != clientDeadExitCode {
		t.Errorf("app exit code %d, want %d; stderr:\n%s", st.ExitCode(), clientDeadExitCode, stderr)
	}
	if !strings.Contains(stderr, msg) || !strings.Contains(stderr, clientDeadMsg) {
		t.Errorf("stderr.txt lacks %q and %q:\n%s", msg, clientDeadMsg, stderr)
	}
	if strings.Contains(stderr, "called boinc_finish") {
		t.Errorf("app called boinc_finish:\n%s", stderr)
	}
	_, err := os.Stat(filepath.Join(a.slot, "boinc_finish_called"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("boinc_finish_called in the slot (stat: %v): the app finished instead of giving up", err)
	}
}

// stderr returns the app's stderr.txt, where the library redirects
// stderr.
func (a *directApp) stderr() string {
	b, err := os.ReadFile(filepath.Join(a.slot, "stderr.txt"))
	if err != nil {
		return "(no stderr.txt: " + err.Error() + ")"
	}
	return string(b)
}
