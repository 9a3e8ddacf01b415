package boincapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/boincd/boincd/internal/atomicfile"
)

// Files the app writes into its slot for the client (PROTOCOLS §6.5).
const (
	FinishFileName        = "boinc_finish_called"
	TemporaryExitFileName = "boinc_temporary_exit"
)

// Timing of the API's timer goroutine (api/boinc_api.cpp).
const (
	tickInterval       = 100 * time.Millisecond
	statusEveryTicks   = 10  // app_status once per second
	clientCheckTicks   = 100 // client_pid liveness every 10 s
	heartbeatTimeout   = 30 * time.Second
	defaultCheckpoint  = 60 * time.Second
	exitAbortedByClint = 194 // EXIT_ABORTED_BY_CLIENT
)

// ErrExited is returned by Wait once the app has been told to exit (only
// observable when Options.Exit returns, as in tests).
var ErrExited = errors.New("boincapi: app is exiting")

// Options tune Init; the zero value is what a real app wants.
type Options struct {
	// Dir is the slot directory; "" means the working directory.
	Dir string
	// Exit ends the process; default os.Exit. Tests inject a recorder.
	Exit func(code int)
	// Stderr receives the API's own diagnostics; default os.Stderr.
	Stderr io.Writer
	// MinCheckpointPeriod raises the checkpoint period from init_data.xml
	// to at least this (the demo app checkpoints at most once a second).
	MinCheckpointPeriod time.Duration
}

// App is the running app's connection to the client. Its methods are safe
// for concurrent use.
type App struct {
	dir       string
	startCPU  float64 // wu_cpu_time: CPU time of earlier runs
	fracStart float64
	fracEnd   float64
	shm       *Shmem // nil in standalone mode
	exit      func(int)
	stderr    io.Writer
	period    time.Duration

	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}

	mu             sync.Mutex
	data           *InitData // nil in standalone mode; replaced on <reread_app_info/>
	suspended      bool
	resumed        chan struct{} // closed on resume; replaced on suspend
	fraction       float64
	checkpointCPU  float64
	lastCheckpoint time.Time
	critical       int
	pendingExit    int // exit code deferred by a critical section; -1 none
	exiting        bool
	// Trickle state (trickle.go): a trickle-up not yet announced, a
	// trickle-down the client announced (true at start, so the first
	// ReceiveTrickleDown scans the slot), and whether the app listens.
	newTrickleUp       bool
	newUploadFile      bool
	haveTrickleDown    bool
	handleTrickleDowns bool
}

// Init connects to the client from the working directory: it parses
// init_data.xml and maps boinc_mmap_file. Without init_data.xml (or when it
// cannot be parsed) the app runs standalone: no shared memory, no
// heartbeat, and Finish writes no finish file.
func Init() (*App, error) { return InitWith(Options{}) }

// InitWith is Init with options.
func InitWith(opts Options) (*App, error) {
	a := &App{
		dir:         opts.Dir,
		exit:        opts.Exit,
		stderr:      opts.Stderr,
		period:      defaultCheckpoint,
		stop:        make(chan struct{}),
		done:        make(chan struct{}),
		resumed:     make(chan struct{}),
		pendingExit: -1,
		fracEnd:     1,

		haveTrickleDown: true,
	}
	if a.exit == nil {
		a.exit = os.Exit
	}
	if a.stderr == nil {
		a.stderr = os.Stderr
	}
	close(a.resumed)
	a.lastCheckpoint = time.Now()

	d, err := ReadInitData(a.path(InitDataFileName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		close(a.done)
		a.applyPeriod(opts.MinCheckpointPeriod)
		return a, nil
	case err != nil:
		// As boinc_init: an unreadable init_data.xml means standalone.
		fmt.Fprintf(a.stderr, "boincapi: %v; running standalone\n", err)
		close(a.done)
		a.applyPeriod(opts.MinCheckpointPeriod)
		return a, nil
	}
	a.data = d
	a.startCPU = d.WUCPUTime
	a.fracStart, a.fracEnd = d.FractionDoneStart, d.FractionDoneEnd
	a.checkpointCPU = d.WUCPUTime
	if d.CheckpointPeriod > 0 {
		a.period = time.Duration(d.CheckpointPeriod * float64(time.Second))
	}
	a.applyPeriod(opts.MinCheckpointPeriod)
	if d.ShmKey != -1 && d.ShmKey != 0 {
		// A SysV segment (API < 6 clients): not supported; run without the
		// control channel rather than refuse to compute.
		fmt.Fprintf(a.stderr, "boincapi: init_data.xml asks for SysV shared memory key %d, which is not supported; running without client control\n", d.ShmKey)
		close(a.done)
		return a, nil
	}
	shm, err := OpenShmem(a.path(MmapFileName))
	if err != nil {
		return nil, fmt.Errorf("boincapi init in %q: %w", a.dirName(), err)
	}
	a.shm = shm
	go a.timer(d.ClientPID)
	return a, nil
}

func (a *App) applyPeriod(min time.Duration) {
	if a.period < min {
		a.period = min
	}
}

func (a *App) path(name string) string {
	if a.dir == "" {
		return name
	}
	return filepath.Join(a.dir, name)
}

func (a *App) dirName() string {
	if a.dir == "" {
		return "."
	}
	return a.dir
}

// InitData is the parsed init_data.xml, or nil in standalone mode. The
// caller must not modify it.
func (a *App) InitData() *InitData {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.data
}

// Standalone reports whether the app runs without a client.
func (a *App) Standalone() bool { return a.shm == nil }

// Resolve is ResolveFilename relative to the app's slot directory.
func (a *App) Resolve(logical string) (string, error) {
	p, err := ResolveFilenameIn(a.dir, logical)
	if err != nil || a.dir == "" || filepath.IsAbs(p) {
		return p, err
	}
	return filepath.Join(a.dir, p), nil
}

// CheckpointPeriod is how often the app should checkpoint.
func (a *App) CheckpointPeriod() time.Duration { return a.period }

// CPUTime is the task's CPU time so far: the CPU time of earlier runs
// (wu_cpu_time) plus this process's.
func (a *App) CPUTime() float64 { return a.startCPU + processCPUTime() }

// FractionDone records progress in [0, 1]; it is reported once a second,
// scaled into [fraction_done_start, fraction_done_end].
func (a *App) FractionDone(f float64) {
	if f != f || f < 0 {
		f = 0
	}
	if f > 1 {
		f = 1
	}
	a.mu.Lock()
	a.fraction = f
	a.mu.Unlock()
}

// Checkpoint tells the client a checkpoint was written
// (boinc_checkpoint_completed). cpuTime is the task's CPU time at the
// checkpoint; pass 0 to use CPUTime().
func (a *App) Checkpoint(cpuTime float64) {
	if cpuTime <= 0 {
		cpuTime = a.CPUTime()
	}
	a.mu.Lock()
	a.checkpointCPU = cpuTime
	a.lastCheckpoint = time.Now()
	a.mu.Unlock()
}

// Wait blocks while the client has the app suspended. Workers call it
// often: it is where a <suspend/> takes effect.
func (a *App) Wait(ctx context.Context) error {
	for {
		a.mu.Lock()
		exiting, ch := a.exiting, a.resumed
		a.mu.Unlock()
		if exiting {
			return ErrExited
		}
		select {
		case <-ch:
			return ctx.Err()
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("boincapi: wait while suspended: %w", ctx.Err())
		}
	}
}

// TimeToCheckpoint waits while suspended, then reports whether the
// checkpoint period has passed since the last checkpoint.
func (a *App) TimeToCheckpoint(ctx context.Context) bool {
	if a.Wait(ctx) != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return time.Since(a.lastCheckpoint) >= a.period
}

// BeginCriticalSection defers <quit/> and <abort/> until the matching
// EndCriticalSection (boinc_begin_critical_section), e.g. around writing
// a checkpoint that must not be torn.
func (a *App) BeginCriticalSection() {
	a.mu.Lock()
	a.critical++
	a.mu.Unlock()
}

// EndCriticalSection ends a critical section and performs an exit the
// client asked for meanwhile.
func (a *App) EndCriticalSection() {
	a.mu.Lock()
	if a.critical > 0 {
		a.critical--
	}
	code := -1
	if a.critical == 0 && a.pendingExit >= 0 && !a.exiting {
		code = a.pendingExit
		a.exiting = true
	}
	a.mu.Unlock()
	if code >= 0 {
		a.doExit(code)
	}
}

// Suspended reports whether the client has suspended the app.
func (a *App) Suspended() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.suspended
}

// Finish ends the task (boinc_finish_message): it reports the final
// progress, writes boinc_finish_called (`status\nmsg\n`) and exits with
// status. It only returns when Options.Exit returns.
func (a *App) Finish(status int, msg string) {
	a.stopTimer()
	if a.shm != nil {
		a.mu.Lock()
		a.fraction = 1
		a.mu.Unlock()
		// Overwrite: the last word must reach the client even if it has
		// not read the previous status yet.
		if err := a.shm.Overwrite(AppStatus, FormatAppStatus(a.status())); err != nil {
			fmt.Fprintf(a.stderr, "boincapi: final status: %v\n", err)
		}
		content := fmt.Sprintf("%d\n%s\n", status, msg)
		if err := writeFileAtomic(a.path(FinishFileName), content); err != nil {
			fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
		}
	}
	a.mu.Lock()
	a.exiting = true
	a.mu.Unlock()
	a.doExit(status)
}

// TemporaryExit asks the client to restart the task after delay
// (boinc_temporary_exit): it writes boinc_temporary_exit
// (`delay\nreason\n`) and exits with 0. It only returns when Options.Exit
// returns.
func (a *App) TemporaryExit(delay time.Duration, reason string) {
	a.stopTimer()
	content := fmt.Sprintf("%d\n%s\n", int(delay/time.Second), reason)
	if err := writeFileAtomic(a.path(TemporaryExitFileName), content); err != nil {
		fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
	}
	a.mu.Lock()
	a.exiting = true
	a.mu.Unlock()
	a.doExit(0)
}

// Close stops the timer goroutine and unmaps the shared memory without
// exiting; for apps (and tests) that end by other means.
func (a *App) Close() error {
	a.stopTimer()
	return a.shm.Close()
}

func (a *App) stopTimer() {
	a.stopOnce.Do(func() { close(a.stop) })
	<-a.done
}

func (a *App) doExit(code int) {
	a.mu.Lock()
	a.exiting = true
	if a.suspended {
		// Release a worker blocked in Wait so it sees ErrExited.
		a.suspended = false
		close(a.resumed)
	}
	a.mu.Unlock()
	a.exit(code)
}

// requestExit exits now or, inside a critical section, when it ends.
// It reports whether the exit happened.
func (a *App) requestExit(code int) bool {
	a.mu.Lock()
	if a.exiting {
		a.mu.Unlock()
		return true
	}
	if a.critical > 0 {
		a.pendingExit = code
		a.mu.Unlock()
		return false
	}
	a.exiting = true
	a.mu.Unlock()
	a.doExit(code)
	return true
}

func (a *App) status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Status{
		CurrentCPUTime:    a.CPUTime(),
		CheckpointCPUTime: a.checkpointCPU,
		FractionDone:      a.fracStart + a.fraction*(a.fracEnd-a.fracStart),
	}
}

// timer is the API's timer thread: control messages every tick, status
// every second, client liveness every 10 s (or heartbeat timeout when the
// client did not give its pid).
func (a *App) timer(clientPID int) {
	defer close(a.done)
	t := time.NewTicker(tickInterval)
	defer t.Stop()
	lastHeartbeat := time.Now()
	for tick := 1; ; tick++ {
		select {
		case <-a.stop:
			return
		case <-t.C:
		}
		if code, ok := a.handleControl(); ok {
			if a.requestExit(code) {
				return
			}
		}
		if _, ok, err := a.shm.Receive(Heartbeat); err != nil {
			fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
		} else if ok {
			lastHeartbeat = time.Now()
		}
		if clientPID == 0 && time.Since(lastHeartbeat) > heartbeatTimeout {
			fmt.Fprintf(a.stderr, "boincapi: no heartbeat from client for %v; exiting\n", heartbeatTimeout)
			if a.requestExit(0) {
				return
			}
		}
		if clientPID != 0 && tick%clientCheckTicks == 0 && !pidAlive(clientPID) {
			fmt.Fprintf(a.stderr, "boincapi: client (pid %d) is gone; exiting\n", clientPID)
			if a.requestExit(0) {
				return
			}
		}
		if tick%statusEveryTicks == 0 && !a.Suspended() {
			if _, err := a.shm.Send(AppStatus, FormatAppStatus(a.status())); err != nil {
				fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
			}
		}
		a.trickleTick(tick%statusEveryTicks == 0)
	}
}

// handleControl applies one process-control request; it returns the exit
// code when the client asked the app to end.
func (a *App) handleControl() (int, bool) {
	msg, ok, err := a.shm.Receive(ProcessControlRequest)
	if err != nil {
		fmt.Fprintf(a.stderr, "boincapi: %v\n", err)
		return 0, false
	}
	if !ok {
		return 0, false
	}
	switch {
	case HasTag(msg, MsgQuit):
		return 0, true
	case HasTag(msg, MsgAbort):
		return exitAbortedByClint, true
	case HasTag(msg, MsgSuspend):
		a.mu.Lock()
		if !a.suspended && !a.exiting {
			a.suspended = true
			a.resumed = make(chan struct{})
		}
		a.mu.Unlock()
	case HasTag(msg, MsgResume):
		a.mu.Lock()
		if a.suspended {
			a.suspended = false
			close(a.resumed)
		}
		a.mu.Unlock()
	case HasTag(msg, MsgRereadAppInfo):
		if d, err := ReadInitData(a.path(InitDataFileName)); err == nil {
			a.mu.Lock()
			a.data = d
			a.mu.Unlock()
		} else {
			fmt.Fprintf(a.stderr, "boincapi: reread init data: %v\n", err)
		}
	}
	return 0, false
}

// writeFileAtomic writes via a temporary file and a rename so the client
// never reads a half-written file.
func writeFileAtomic(path, content string) error {
	return atomicfile.WriteFile(path, []byte(content), 0o644)
}
