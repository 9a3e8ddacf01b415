package taskrunner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// Defaults of the C++ client (client/app_control.cpp, app.h).
const (
	DefaultQuitGrace      = 60 * time.Second  // QUIT_TIMEOUT, ABORT_TIMEOUT
	DefaultFinishTimeout  = 300 * time.Second // FINISH_FILE_TIMEOUT
	DefaultControlTimeout = 180 * time.Second // unread control message
)

// Errors callers can test with errors.Is.
var (
	ErrNotRunning = errors.New("task is not running")
	ErrClosed     = errors.New("runner is stopped")
	// ErrSlotNotCleared: a start found its slot holding another task's
	// files and could not remove them (a file held open by a virus
	// scanner or an indexer on Windows). The slot, not the task, is at
	// fault: the caller gives the task another slot.
	ErrSlotNotCleared = errors.New("slot directory cannot be cleared")
)

// Config configures a Runner.
type Config struct {
	// DataDir is the absolute BOINC data directory (projects/, slots/).
	DataDir string
	Logger  *slog.Logger
	// Events receives one Event per process exit. The daemon owns and
	// drains it; the runner never blocks on it after StopAll.
	Events chan<- Event
	// ClientPID goes into init_data.xml; API apps exit when it is gone.
	// Default os.Getpid().
	ClientPID int
	// QuitGrace is how long a task may take to honour quit or abort
	// before its process group is killed. Default 60 s.
	QuitGrace time.Duration
	// FinishTimeout: a process still alive this long after writing
	// boinc_finish_called is killed and treated as finished. Default 300 s.
	FinishTimeout time.Duration
	// ControlTimeout: an API app that leaves a control message unread
	// this long is killed and restarted later. Default 180 s.
	ControlTimeout time.Duration
	// DiskCheckInterval is how often Poll measures each slot directory
	// for the disk limit and peak disk usage. Default 10 s.
	DiskCheckInterval time.Duration
	// RemoveAll removes a slot directory and everything in it; nil means
	// os.RemoveAll. Tests make a slot impossible to clear this way, as a
	// file held open on Windows does.
	RemoveAll func(path string) error
}

// TaskSpec is everything needed to start (or restart) one task. The
// runner copies what it needs and never modifies the pointed-to values.
type TaskSpec struct {
	Project *boinc.Project
	App     *boinc.App
	Version *boinc.AppVersion
	WU      *boinc.Workunit
	Result  *boinc.Result
	// Files maps physical name to file info for every file the version,
	// the workunit and the result reference.
	Files map[string]*boinc.FileInfo
	Host  boinc.Host
	Prefs boinc.Prefs
	// Slot is -1 to allocate the lowest free slots/N, or the slot to
	// reuse (a restart keeps its checkpoint files there).
	Slot int
	// ResourceShareFraction is the project's share of the resource share
	// total for init_data.xml; 0 means 1.
	ResourceShareFraction float64

	// Resource limits checked at every Poll while the task is not
	// suspended; zero means none. A task over a limit is aborted as the
	// C++ client aborts it (ACTIVE_TASK::abort_task, request_abort): an
	// app that reads its control channel is sent <abort/> and its process
	// group is killed if it has not exited QuitGrace (ABORT_TIMEOUT)
	// later by the Poll clock; a plain program, which could not hear the
	// message, is killed at once. The Poll that sees the limit reports it
	// in Status.LimitExceeded, and the exit is Error with ExitStatus 197,
	// 198 or 196 (check_rsc_limits_exceeded, check_max_disk_exceeded).
	//
	// MaxElapsed is the elapsed-time limit, normally
	// ElapsedLimit(WU.RscFpopsBound, flops). Elapsed time counts from
	// Result.ElapsedTime and includes CPU-throttle pauses but not
	// suspensions.
	MaxElapsed time.Duration
	// Flops is the speed MaxElapsed was computed from, for the message
	// that names it; 0 means Version.Flops.
	Flops float64
	// MaxMemory (bytes) bounds the smoothed working set of the process
	// group (see WSSHalfLife).
	MaxMemory float64
	// MemoryBoundFromWU says MaxMemory is the workunit's
	// rsc_memory_bound rather than the client's RAM limit; it only
	// changes the words of the abort message.
	MemoryBoundFromWU bool
	// MaxDisk (bytes) bounds the slot directory plus the outputs already
	// in the project directory, measured every DiskCheckInterval.
	MaxDisk float64

	// GPUType is the GPU vendor the task runs on ("NVIDIA", "ATI",
	// "intel_gpu"), "" for a CPU task. GPUDevices are the device numbers
	// the schedule assigned (at least one for a GPU task) and GPUUsage
	// the instances the version uses (0 means Version.Coproc.Count).
	// They go into init_data.xml; apps older than API 7.5 also get
	// `--device N` arguments. GPU tasks are never CPU-throttled.
	GPUType    string
	GPUDevices []int
	GPUUsage   float64
	// DontThrottle exempts the task from the CPU throttle (app version
	// dont_throttle, non-CPU-intensive apps).
	DontThrottle bool
	// Container marks a container app (a plan class naming docker): its
	// work runs in processes the engine starts, which are not the app's
	// children, so its CPU time is what the app reports (the wrapper
	// reads the container's), never the process tree's; and it is not
	// throttled, since pausing the wrapper would not pause the container
	// (the C++ client never throttles GPU, vbox or docker versions).
	Container bool
}

// Status is one running task as seen at a Poll.
type Status struct {
	ResultKey             string
	Slot                  int
	PID                   int
	CPUTime               float64 // total, earlier runs included
	CheckpointCPUTime     float64
	CheckpointElapsedTime float64
	FractionDone          float64
	ElapsedTime           float64
	// Checkpointed: the app checkpointed since the previous Poll.
	Checkpointed bool
	// WorkingSet is the smoothed working set of the whole process group
	// in bytes (Linux and Windows; see WSSHalfLife).
	WorkingSet float64
	// SwapSize is the process group's virtual memory size in bytes, as
	// the C++ client reports swap_size (Linux only; 0 elsewhere).
	SwapSize float64
	// DiskUsage is the last measured disk usage in bytes.
	DiskUsage float64
	// Suspended is the daemon's Suspend; Throttled says the CPU throttle
	// holds the task paused right now.
	Suspended   bool
	Throttled   bool
	WantNetwork bool
	// ReportsStatus: the app writes app_status to the shared memory (its
	// version has an api_version, or it has written status), so
	// FractionDone is the app's own; for an app that never did, progress
	// can only be estimated.
	ReportsStatus bool
	// LimitExceeded is set on the one Poll at which the task was found
	// over a resource limit and its abort began: the C++ client's event
	// log reason after "Aborting task NAME: " (check_rsc_limits_exceeded).
	// The exit follows as an Error event.
	LimitExceeded string
	// TrickleUps counts the trickle-up messages the app sent since the
	// previous Poll; they wait in the project directory
	// (trickle_up_<result>_<time>.xml) for the next scheduler request.
	TrickleUps int
	// UploadRequests are the logical names of output files the app asked
	// to upload while it runs (boinc_upload_file) since the previous Poll.
	UploadRequests []string
	// HostCPUTime is the CPU time the task has cost this host: CPUTime,
	// plus for a container task the CPU of its own processes (wrapper,
	// engine CLI) in this run, which CPUTime leaves out. It is what
	// counts as BOINC's when the load of other programs is measured.
	HostCPUTime float64
}

// Outcome classifies a process exit (client/app_control.cpp
// handle_exited_app).
type Outcome int

const (
	// Success: exit 0 with boinc_finish_called and every output present.
	Success Outcome = iota
	// Error: non-zero exit, a fatal signal or a bad output; the result
	// is a compute error.
	Error
	// TemporaryExit: boinc_temporary_exit; restart after ExitInfo.Delay.
	TemporaryExit
	// Restart: quit requested, killed by HUP/INT/QUIT/KILL/TERM/STOP, or
	// exit 0 without finish file; start again later in the same slot.
	Restart
	// Aborted: abort or kill requested.
	Aborted
)

func (o Outcome) String() string {
	switch o {
	case Success:
		return "success"
	case Error:
		return "error"
	case TemporaryExit:
		return "temporary exit"
	case Restart:
		return "restart"
	case Aborted:
		return "aborted"
	}
	return fmt.Sprintf("outcome(%d)", int(o))
}

// OutputFile is an output of a successful task, now in the project
// directory.
type OutputFile struct {
	Name   string // physical name
	Path   string // absolute path in projects/<esc>/
	NBytes int64
	MD5    string
}

// ExitInfo describes how a process ended.
type ExitInfo struct {
	Outcome Outcome
	// ExitStatus is the process exit code, or a BOINC error number when an
	// output check failed (boinc.ErrFileMissing, boinc.ErrFileTooBig).
	// For Aborted it is the process's own code; the daemon sets the
	// reported status (e.g. EXIT_ABORTED_VIA_GUI).
	ExitStatus int
	// Signal is the signal that killed the process, 0 if none.
	Signal int
	// CPUTime is the task's total CPU time: the larger of the last
	// app-reported value and the start value plus the process rusage.
	CPUTime     float64
	ElapsedTime float64
	// CheckpointCPUTime and CheckpointElapsedTime are the last checkpoint
	// seen: a restarted task resumes from there.
	CheckpointCPUTime     float64
	CheckpointElapsedTime float64
	FractionDone          float64
	// PeakWorkingSet is the largest working-set sample (not smoothed),
	// PeakDiskUsage the largest disk usage measured, both in bytes.
	PeakWorkingSet float64
	PeakDiskUsage  float64
	// Delay is when to restart after a TemporaryExit.
	Delay time.Duration
	// Stderr is the raw tail (63 KB) of the slot's stderr.txt; see
	// StderrOut for the report form.
	Stderr  string
	Message string
	Outputs []OutputFile
}

// Event reports a process exit.
type Event struct {
	ResultKey string
	Slot      int
	Exit      ExitInfo
	// SlotErr is why the slot directory could not be removed after a
	// final exit (success, error, abort). The exit counts all the same:
	// the outputs were collected first; the caller skips the slot until
	// it can be cleared.
	SlotErr error
}

// Runner starts and controls task processes. All methods are safe for
// concurrent use; the daemon normally calls them from its one goroutine.
type Runner struct {
	cfg     Config
	log     *slog.Logger
	dataDir string
	done    chan struct{} // closed by StopAll: event sends stop blocking
	wg      sync.WaitGroup
	// reap kills the tasks' process groups if the daemon dies (Unix).
	reap *reaper
	// procs measures the tasks' process trees for Poll.
	procs procScan

	mu       sync.Mutex
	tasks    map[string]*task
	busy     map[int]string // slot → result key, including slots being set up
	closed   bool
	throttle throttle
	// The app policy (SetAppPolicy): the account new tasks run as (nil:
	// the runner's own) or why none may start.
	policy    AppPolicy
	policySet bool
	account   *AppAccount
	blocked   error
}

// NewRunner checks cfg and returns an idle runner.
func NewRunner(cfg Config) (*Runner, error) {
	if cfg.DataDir == "" || !filepath.IsAbs(cfg.DataDir) {
		return nil, fmt.Errorf("taskrunner: data directory %q must be an absolute path", cfg.DataDir)
	}
	if cfg.Events == nil {
		return nil, errors.New("taskrunner: no Events channel")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ClientPID == 0 {
		cfg.ClientPID = os.Getpid()
	}
	if cfg.QuitGrace <= 0 {
		cfg.QuitGrace = DefaultQuitGrace
	}
	if cfg.FinishTimeout <= 0 {
		cfg.FinishTimeout = DefaultFinishTimeout
	}
	if cfg.ControlTimeout <= 0 {
		cfg.ControlTimeout = DefaultControlTimeout
	}
	if cfg.DiskCheckInterval <= 0 {
		cfg.DiskCheckInterval = DefaultDiskCheckInterval
	}
	if cfg.RemoveAll == nil {
		cfg.RemoveAll = os.RemoveAll
	}
	cfg.DataDir = filepath.Clean(cfg.DataDir)
	// Nothing of this runner runs yet: whatever works in a slot was left
	// by a daemon that died (and its reaper with it).
	killLeftovers(cfg.DataDir, cfg.Logger)
	return &Runner{
		cfg:     cfg,
		log:     cfg.Logger,
		dataDir: cfg.DataDir,
		reap:    newReaper(cfg.Logger),
		done:    make(chan struct{}),
		tasks:   make(map[string]*task),
		busy:    make(map[int]string),
	}, nil
}

// ctlMsg is a queued process-control message (MSG_QUEUE).
type ctlMsg struct {
	msg string
}

// task is one running process. Fields below mu in the comment are guarded
// by Runner.mu.
type task struct {
	key     string
	name    string // result name, for logs
	slot    int
	dir     string // slot directory
	projDir string
	// api: the app version has an api_version, so the app links the
	// BOINC API and reads its control channel.
	api bool
	// shmFault: reading the app's status failed (the segment was
	// truncated), and the log said so.
	shmFault bool
	cmd      *exec.Cmd
	pid      int
	outputs  []outputSpec
	// links maps slot entry names to the soft-link text written there, to
	// recognise an output a plain program overwrote in place.
	links    map[string]string
	startCPU float64
	maxWSS   float64
	exitCh   chan struct{} // closed once the process has exited
	job      *jobObject    // Windows Job Object holding the process tree
	// acct is the account the process runs as; nil: the runner's own.
	acct *AppAccount
	// Limits and throttling, fixed at start.
	maxElapsed   time.Duration
	maxMemory    float64
	maxDisk      float64
	fpopsBound   float64 // for the elapsed-limit message
	flops        float64
	memWUBound   bool // TaskSpec.MemoryBoundFromWU
	throttleable bool
	container    bool // TaskSpec.Container
	// diskPaths are the project-directory outputs counted as disk usage.
	diskPaths []string

	// Guarded by Runner.mu.
	shm         *boincapi.Shmem
	elapsed     float64
	lastTick    time.Time
	cpu         float64
	treeCPU     float64 // container task: its process tree's, this run
	ckptCPU     float64
	ckptElapsed float64
	fraction    float64
	wss         float64 // last sample
	wssSmoothed float64
	vm          float64   // bytes, last sample (Status.SwapSize)
	wssTime     time.Time // when wssSmoothed was last updated
	peakWSS     float64
	disk        float64
	peakDisk    float64
	diskChecked time.Time
	throttled   bool // paused by the throttle (not by Suspend)
	limit       *limitExceeded
	limitAt     time.Time // Poll clock when the limit abort began
	limitShown  bool      // Status.LimitExceeded was reported
	limitKilled bool      // killed after the abort timeout
	// spoke: an app whose version has no api_version has written
	// app_status (BOINC's wrapper, say): it links the API and is
	// controlled by message from then on (see talks).
	spoke bool
	// sigStopped: the process group is stopped by signal (stopTree), so
	// resuming it needs contTree whatever talks says by then.
	sigStopped   bool
	wantNetwork  bool
	checkpointed bool
	suspended    bool
	quitReq      bool
	abortReq     bool
	killReq      bool
	finishKill   bool
	finishSeen   time.Time
	queue        []ctlMsg
	ctlSentAt    time.Time // when the unread control message was sent
	hung         bool
	grace        *time.Timer
	exited       bool
	// Trickles (trickle.go): trickle-ups moved to the project directory
	// and upload requests since the last Poll, and notices owed to the
	// app on the trickle_down channel.
	trickleUps   int
	uploadReqs   []string
	trickleDown  bool
	uploadStatus bool
}

// Start sets up the slot and starts the task's process.
func (r *Runner) Start(ctx context.Context, spec TaskSpec) (slot int, pid int, err error) {
	if err := checkSpec(spec); err != nil {
		return -1, 0, err
	}
	r.mu.Lock()
	blocked, acct := r.blocked, r.account
	r.mu.Unlock()
	if blocked != nil {
		return -1, 0, fmt.Errorf("start %s: %w", spec.Result.Name, blocked)
	}
	key := spec.Result.Key()
	n, err := r.reserveSlot(key, spec.Slot)
	if err != nil {
		return -1, 0, err
	}
	started := false
	defer func() {
		if started {
			return
		}
		// A slot allocated for this start holds nothing worth keeping;
		// a reused one keeps its checkpoint files.
		if spec.Slot < 0 {
			if err := r.cfg.RemoveAll(slotDir(r.dataDir, n)); err != nil {
				r.log.Warn("clean slot after failed start", "slot", n, "err", err)
			}
		}
		r.mu.Lock()
		delete(r.busy, n)
		r.mu.Unlock()
	}()

	t, err := r.prepare(ctx, spec, n, acct)
	if err != nil {
		return -1, 0, fmt.Errorf("start %s in slot %d: %w", spec.Result.Name, n, err)
	}
	if err := r.launch(t, spec); err != nil {
		if t.shm != nil {
			t.shm.Close()
		}
		return -1, 0, fmt.Errorf("start %s in slot %d: %w", spec.Result.Name, n, err)
	}

	r.mu.Lock()
	r.tasks[key] = t
	started = true // the task holds the slot now
	r.wg.Add(1)
	r.mu.Unlock()
	go r.wait(t)
	// The caller, which knows the task's project, logs the start; the
	// process details are for debugging.
	if acct != nil {
		r.log.Debug("task process started", "result", t.name, "slot", n, "pid", t.pid, "api", t.api, "user", acct.Name, "uid", acct.UID)
	} else {
		r.log.Debug("task process started", "result", t.name, "slot", n, "pid", t.pid, "api", t.api)
	}
	return n, t.pid, nil
}

func checkSpec(spec TaskSpec) error {
	switch {
	case spec.Project == nil:
		return errors.New("start task: no project")
	case spec.Version == nil:
		return errors.New("start task: no app version")
	case spec.WU == nil:
		return errors.New("start task: no workunit")
	case spec.Result == nil:
		return errors.New("start task: no result")
	case spec.Project.MasterURL == "":
		return errors.New("start task: project has no master URL")
	case spec.GPUType != "" && len(spec.GPUDevices) == 0:
		return fmt.Errorf("start task: %s GPU task has no assigned device", spec.GPUType)
	case spec.MaxElapsed < 0 || spec.MaxMemory < 0 || spec.MaxDisk < 0:
		return errors.New("start task: negative resource limit")
	}
	for _, d := range spec.GPUDevices {
		if d < 0 {
			return fmt.Errorf("start task: invalid GPU device number %d", d)
		}
	}
	return nil
}

// reserveSlot picks the slot under the lock so two starts cannot take the
// same one. A free slot is one no task uses whose directory is missing or
// empty: a preempted task's slot keeps its files and so stays taken until
// the daemon calls CleanSlot.
func (r *Runner) reserveSlot(key string, want int) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return -1, ErrClosed
	}
	if _, ok := r.tasks[key]; ok {
		return -1, fmt.Errorf("start task: %q is already running", displayKey(key))
	}
	for s, k := range r.busy {
		if k == key {
			return -1, fmt.Errorf("start task: %q is already starting in slot %d", displayKey(key), s)
		}
	}
	if want >= 0 {
		if k, ok := r.busy[want]; ok {
			return -1, fmt.Errorf("start task: slot %d is in use by %q", want, displayKey(k))
		}
		r.busy[want] = key
		return want, nil
	}
	for n := 0; ; n++ {
		if _, ok := r.busy[n]; ok {
			continue
		}
		empty, err := dirMissingOrEmpty(slotDir(r.dataDir, n))
		if err != nil {
			return -1, fmt.Errorf("start task: %w", err)
		}
		if empty {
			r.busy[n] = key
			return n, nil
		}
	}
}

// Running lists the result keys of the tasks whose process is running or
// whose exit has not been reported yet.
func (r *Runner) Running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.tasks))
	for k := range r.tasks {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// live returns the task for key if its process has not exited.
func (r *Runner) live(key string) (*task, error) {
	t, ok := r.tasks[key]
	if !ok || t.exited {
		return nil, fmt.Errorf("%q: %w", displayKey(key), ErrNotRunning)
	}
	return t, nil
}

// Poll does the once-a-second work for every running task: elapsed time,
// control-message queue, heartbeat, app_status, finish-file watchdog,
// resource usage and limits, and the CPU throttle's duty cycle. now is
// the daemon's clock; elapsed time, smoothing and throttling follow it.
// It returns the tasks' status ordered by slot.
func (r *Runner) Poll(now time.Time) []Status {
	// Sampling /proc and walking slot directories may take a while; it is
	// done without the lock, on a snapshot of the tasks.
	type diskJob struct {
		t     *task
		dir   string
		paths []string
		size  float64
		err   error
	}
	r.mu.Lock()
	var procs []procRef
	var disks []diskJob
	for _, t := range r.tasks {
		if t.exited {
			continue
		}
		procs = append(procs, procRef{pid: t.pid, job: t.job})
		if t.diskChecked.IsZero() || now.Sub(t.diskChecked) >= r.cfg.DiskCheckInterval || now.Before(t.diskChecked) {
			t.diskChecked = now
			disks = append(disks, diskJob{t: t, dir: t.dir, paths: t.diskPaths})
		}
	}
	r.mu.Unlock()

	usage := r.procs.usages(procs, now)
	for i := range disks {
		disks[i].size, disks[i].err = diskUsage(disks[i].dir, disks[i].paths)
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range disks {
		if d.t.exited {
			continue
		}
		if d.err != nil {
			r.log.Debug("measure slot", "result", d.t.name, "err", d.err)
			continue
		}
		d.t.disk = d.size
		d.t.peakDisk = max(d.t.peakDisk, d.size)
	}
	run := r.throttle.advance(now)
	out := make([]Status, 0, len(r.tasks))
	for _, t := range r.tasks {
		if t.exited {
			continue
		}
		r.pollTask(t, now, usage[t.pid])
		r.checkLimits(t, now)
		r.applyThrottle(t, run)
		var limitMsg string
		if t.limit != nil && !t.limitShown {
			limitMsg, t.limitShown = t.limit.logMsg, true
		}
		out = append(out, Status{
			ResultKey:             t.key,
			Slot:                  t.slot,
			PID:                   t.pid,
			CPUTime:               t.cpu,
			HostCPUTime:           t.cpu + t.treeCPU,
			CheckpointCPUTime:     t.ckptCPU,
			CheckpointElapsedTime: t.ckptElapsed,
			FractionDone:          t.fraction,
			ElapsedTime:           t.elapsed,
			Checkpointed:          t.checkpointed,
			WorkingSet:            t.wssSmoothed,
			SwapSize:              t.vm,
			DiskUsage:             t.disk,
			Suspended:             t.suspended,
			Throttled:             t.throttled,
			WantNetwork:           t.wantNetwork,
			ReportsStatus:         t.talks(),
			LimitExceeded:         limitMsg,
			TrickleUps:            t.trickleUps,
			UploadRequests:        t.uploadReqs,
		})
		t.checkpointed = false
		t.trickleUps, t.uploadReqs = 0, nil
	}
	slices.SortFunc(out, func(a, b Status) int { return a.Slot - b.Slot })
	return out
}

// checkLimits aborts a task over its elapsed-time, memory or disk limit
// (ACTIVE_TASK_SET::check_rsc_limits_exceeded), and kills one whose
// abort request has gone unanswered for QuitGrace (ABORT_TIMEOUT in
// ACTIVE_TASK_SET::poll). Only running tasks are checked, as the C++
// client checks only executing ones; a task already asked to exit, or
// that has written its finish file, is left to end on its own.
func (r *Runner) checkLimits(t *task, now time.Time) {
	if t.limit != nil {
		if now.Before(t.limitAt) {
			t.limitAt = now // the clock went back: wait from here
		}
		if now.Sub(t.limitAt) > r.cfg.QuitGrace && !t.limitKilled {
			r.log.Info("abort request timed out, killing task", "result", t.name, "timeout", r.cfg.QuitGrace)
			t.limitKilled = true
			r.killTree(t)
		}
		return
	}
	if t.suspended || t.quitReq || t.abortReq || t.killReq || t.finishKill || t.hung || !t.finishSeen.IsZero() {
		return
	}
	var l *limitExceeded
	switch {
	case t.maxElapsed > 0 && t.elapsed > t.maxElapsed.Seconds():
		msg := elapsedLimitMessage(t.maxElapsed, t.fpopsBound, t.flops)
		l = &limitExceeded{boinc.ExitTimeLimitExceeded, msg, msg}
	case t.maxMemory > 0 && t.wssSmoothed > t.maxMemory:
		msg := memoryLimitMessage(t.wssSmoothed, t.maxMemory, t.memWUBound)
		l = &limitExceeded{boinc.ExitMemLimitExceeded, msg, msg}
	case t.maxDisk > 0 && t.disk > t.maxDisk:
		l = diskLimit(t.disk, t.maxDisk)
	default:
		return
	}
	// The daemon logs the abort from Status.LimitExceeded.
	r.log.Debug("task exceeded a resource limit; aborting it", "result", t.name, "reason", l.logMsg)
	t.limit, t.limitAt = l, now
	// ACTIVE_TASK::request_abort sends <abort/> on the control channel
	// and kills the app only ABORT_TIMEOUT later, so an API app can end
	// cleanly. The C++ client sends it to every app, plain programs
	// included (they all have shared memory), and so leaves a program
	// that cannot read it computing for the whole timeout; boincd kills
	// such a program at once, as it does for a user's abort.
	if !t.talks() {
		r.killTree(t)
		return
	}
	r.prepareExitMsg(t)
	r.queueMsg(t, boincapi.MsgAbort)
}

// talks says whether the app reads its control channel: its version has
// an api_version, or it has written app_status, which only an app linked
// with the BOINC API does (BOINC's wrapper often ships in versions
// without api_version).
func (t *task) talks() bool { return t.api || t.spoke }

func (r *Runner) pollTask(t *task, now time.Time, u usage) {
	if !t.suspended && now.After(t.lastTick) {
		t.elapsed += now.Sub(t.lastTick).Seconds()
	}
	t.lastTick = now
	if u.ok {
		t.vm = u.vm
		t.wss = u.rss
		t.wssSmoothed = smoothWSS(t.wssSmoothed, u.rss, now.Sub(t.wssTime))
		t.wssTime = now
		t.peakWSS = max(t.peakWSS, u.rss)
		if t.container {
			t.treeCPU = max(t.treeCPU, u.cpu)
		} else {
			t.cpu = max(t.cpu, t.startCPU+u.cpu)
		}
	}
	// Every app has shared memory and gets heartbeats, and any app's
	// app_status is read, as the C++ client does (send_heartbeats,
	// ACTIVE_TASK::get_app_status_msg): an app linked with the API whose
	// version has no api_version (BOINC's wrapper, typically) exits
	// without heartbeats and reports its progress like any other. Only
	// apps that talk are sent control messages.
	if t.shm != nil {
		r.flushQueue(t)
		// A control message left unread this long means the app is hung
		// (process_control_poll): kill it; it restarts later.
		if full, err := t.shm.HasMsg(boincapi.ProcessControlRequest); err == nil && !full {
			t.ctlSentAt = time.Time{}
		} else if !t.ctlSentAt.IsZero() && time.Since(t.ctlSentAt) > r.cfg.ControlTimeout && !t.hung {
			r.log.Warn("task left a control message unread; killing it for a restart",
				"result", t.name, "timeout", r.cfg.ControlTimeout)
			t.hung = true
			if !t.abortReq && !t.killReq {
				t.quitReq = true
			}
			r.killTree(t)
		}
		if full, err := t.shm.HasMsg(boincapi.Heartbeat); err == nil && !full {
			if _, err := t.shm.Send(boincapi.Heartbeat, boincapi.FormatHeartbeat(t.wss, t.maxWSS)); err != nil {
				r.log.Warn("heartbeat", "result", t.name, "err", err)
			}
		}
		msg, ok, err := t.shm.Receive(boincapi.AppStatus)
		if err != nil && !t.shmFault {
			// Said once: an app that truncated its segment would
			// otherwise fill the log a line a poll.
			r.log.Warn("app status", "result", t.name, "err", err)
			t.shmFault = true
		}
		if ok {
			if !t.talks() {
				r.log.Info("app without api_version writes its status to shared memory; controlling it by message from now on", "result", t.name)
				t.spoke = true
			}
			s := boincapi.ParseAppStatus(msg)
			t.cpu = max(t.cpu, s.CurrentCPUTime)
			if s.CheckpointCPUTime != t.ckptCPU {
				t.ckptCPU = s.CheckpointCPUTime
				t.ckptElapsed = t.elapsed
				t.checkpointed = true
				r.writeTaskState(t)
			}
			if s.FractionDone > 0 {
				t.fraction = min(s.FractionDone, 1)
			}
			t.wantNetwork = s.WantNetwork
		}
		r.pollTrickle(t, now)
	}
	if _, err := os.Stat(filepath.Join(t.dir, boincapi.FinishFileName)); err == nil {
		if t.finishSeen.IsZero() {
			t.finishSeen = now
		} else if now.Sub(t.finishSeen) > r.cfg.FinishTimeout && !t.finishKill {
			r.log.Warn("task wrote its finish file but did not exit; killing it", "result", t.name)
			t.finishKill = true
			r.killTree(t)
		}
	}
}

// writeTaskState records the checkpoint in the slot, as the C++ client
// does, so the slot alone tells what a restart resumes from.
func (r *Runner) writeTaskState(t *task) {
	body := fmt.Sprintf("<active_task>\n"+
		"    <project_master_url>%s</project_master_url>\n"+
		"    <result_name>%s</result_name>\n"+
		"    <checkpoint_cpu_time>%f</checkpoint_cpu_time>\n"+
		"    <checkpoint_elapsed_time>%f</checkpoint_elapsed_time>\n"+
		"    <fraction_done>%f</fraction_done>\n"+
		"    <peak_working_set_size>%f</peak_working_set_size>\n"+
		"    <peak_swap_size>%f</peak_swap_size>\n"+
		"    <peak_disk_usage>%f</peak_disk_usage>\n"+
		"</active_task>\n",
		xmlEscape(projectURLOf(t.key)), xmlEscape(t.name), t.ckptCPU, t.ckptElapsed, t.fraction, t.peakWSS, 0.0, t.peakDisk)
	if err := os.WriteFile(filepath.Join(t.dir, "boinc_task_state.xml"), []byte(body), 0o644); err != nil {
		r.log.Warn("write task state", "result", t.name, "err", err)
	}
}

func projectURLOf(key string) string {
	if i := strings.IndexByte(key, 0); i >= 0 {
		return key[:i]
	}
	return key
}

// queueMsg queues a control message and tries to deliver it at once.
// A <resume/> cancels a still-queued <suspend/> and vice versa
// (msg_queue_purge).
func (r *Runner) queueMsg(t *task, msg string) {
	opposite := ""
	switch msg {
	case boincapi.MsgResume:
		opposite = boincapi.MsgSuspend
	case boincapi.MsgSuspend:
		opposite = boincapi.MsgResume
	}
	if opposite != "" {
		for i, m := range t.queue {
			if m.msg == opposite {
				t.queue = slices.Delete(t.queue, i, i+1)
				return
			}
		}
	}
	t.queue = append(t.queue, ctlMsg{msg: msg})
	r.flushQueue(t)
}

func (r *Runner) flushQueue(t *task) {
	for len(t.queue) > 0 && t.shm != nil {
		sent, err := t.shm.Send(boincapi.ProcessControlRequest, t.queue[0].msg)
		if err != nil {
			r.log.Warn("send control message", "result", t.name, "err", err)
			return
		}
		if !sent {
			return
		}
		t.ctlSentAt = time.Now()
		t.queue = t.queue[1:]
	}
}

// pauseProcess stops or continues the task's process: <suspend/> and
// <resume/> for apps that talk, SIGSTOP and SIGCONT of the process group
// (NtSuspendProcess on Windows) for plain programs.
//
// The C++ client (ACTIVE_TASK::suspend, unsuspend, preempt) only ever
// sends the messages, to every app: a plain program without the BOINC
// API, a shell script say, never reads them and goes on computing while
// "suspended". boincd stops such a program by signal instead, which
// really pauses it, for as long as it has not written app_status; an app
// that has is known to read its messages and gets them from then on. A
// group stopped by signal is always continued by signal, even if the app
// turned out to talk in between (a status it wrote just before the stop).
func (r *Runner) pauseProcess(t *task, pause bool) error {
	switch {
	case !pause && t.sigStopped:
		if err := contTree(t.cmd.Process, t.job); err != nil {
			return err
		}
		t.sigStopped = false
	case t.talks() && pause:
		r.queueMsg(t, boincapi.MsgSuspend)
	case t.talks():
		r.queueMsg(t, boincapi.MsgResume)
	case pause:
		if err := stopTree(t.cmd.Process, t.job); err != nil {
			return err
		}
		t.sigStopped = true
	default:
		return contTree(t.cmd.Process, t.job)
	}
	return nil
}

// Suspend pauses a task: <suspend/> for apps that talk, SIGSTOP of the
// process group for plain programs (pauseProcess). A task the CPU throttle has paused stays
// paused, now on the daemon's account.
func (r *Runner) Suspend(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return fmt.Errorf("suspend: %w", err)
	}
	if t.suspended {
		return nil
	}
	if t.throttled {
		t.throttled = false
	} else if err := r.pauseProcess(t, true); err != nil {
		return fmt.Errorf("suspend %s: %w", t.name, err)
	}
	t.suspended = true
	return nil
}

// Resume continues a suspended task. During an off phase of the CPU
// throttle the task stays paused until the next on phase.
func (r *Runner) Resume(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if !t.suspended {
		return nil
	}
	if r.throttle.active() && !r.throttle.on && r.canThrottle(t) {
		t.throttled = true
	} else if err := r.pauseProcess(t, false); err != nil {
		return fmt.Errorf("resume %s: %w", t.name, err)
	}
	t.suspended = false
	return nil
}

// SetThrottle sets the CPU usage limit (cpu_usage_limit, percent). For
// 0 < pct < 100 Poll duty-cycles every running task that is neither
// suspended, nor a GPU task, nor marked DontThrottle: it runs for pct% of
// each cycle (10 s, longer when pct is so near 0 or 100 that a phase
// would be under 1 s) and is paused through the normal suspend path for
// the rest. Throttle pauses are separate from Suspend and Resume and do
// not show in Status.Suspended; elapsed time keeps counting through them,
// so a throttled task's elapsed time is wall time while its CPU time is
// about pct% of it. Any other pct stops throttling and continues the
// paused tasks at once.
func (r *Runner) SetThrottle(pct float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.throttle.set(pct)
	if r.throttle.active() {
		return // Poll applies the phase
	}
	for _, t := range r.tasks {
		if !t.exited {
			r.applyThrottle(t, true)
		}
	}
}

// canThrottle says whether the throttle may pause t now.
func (r *Runner) canThrottle(t *task) bool {
	return t.throttleable && t.limit == nil && !t.quitReq && !t.abortReq && !t.killReq && !t.hung && !t.finishKill
}

// applyThrottle brings t in line with the throttle phase.
func (r *Runner) applyThrottle(t *task, run bool) {
	switch {
	case run && t.throttled:
		t.throttled = false
		if !t.suspended {
			if err := r.pauseProcess(t, false); err != nil {
				r.log.Warn("throttle: continue task", "result", t.name, "err", err)
			}
		}
	case !run && !t.throttled && !t.suspended && r.canThrottle(t):
		if err := r.pauseProcess(t, true); err != nil {
			r.log.Warn("throttle: pause task", "result", t.name, "err", err)
			return
		}
		t.throttled = true
	}
}

// Quit asks a task to exit so it can be restarted later (<quit/>, or
// SIGTERM for plain programs); the process group is killed after
// QuitGrace. The exit is reported as Restart whatever the process does.
func (r *Runner) Quit(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return fmt.Errorf("quit: %w", err)
	}
	t.quitReq = true
	if err := r.askToExit(t, boincapi.MsgQuit); err != nil {
		return fmt.Errorf("quit %s: %w", t.name, err)
	}
	return nil
}

// Abort asks a task to exit for good (<abort/>; plain programs are killed
// at once); the process group is killed after QuitGrace. The exit is
// reported as Aborted and the slot is cleaned.
func (r *Runner) Abort(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return fmt.Errorf("abort: %w", err)
	}
	t.abortReq = true
	if !t.talks() {
		r.killTree(t)
		return nil
	}
	if err := r.askToExit(t, boincapi.MsgAbort); err != nil {
		return fmt.Errorf("abort %s: %w", t.name, err)
	}
	return nil
}

// Kill kills the task's whole process group now. The exit is reported as
// Aborted and the slot is cleaned.
func (r *Runner) Kill(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	t.killReq = true
	r.killTree(t)
	return nil
}

// askToExit sends msg (API apps) or SIGTERM (plain programs) and arms the
// grace timer.
func (r *Runner) askToExit(t *task, msg string) error {
	if t.talks() {
		r.prepareExitMsg(t)
		r.queueMsg(t, msg)
	} else if err := terminateTree(t.cmd.Process, t.job); err != nil {
		return err
	}
	if t.grace == nil {
		t.grace = time.AfterFunc(r.cfg.QuitGrace, func() {
			r.mu.Lock()
			defer r.mu.Unlock()
			if !t.exited {
				r.log.Warn("task did not exit in time; killing it", "result", t.name, "grace", r.cfg.QuitGrace)
				r.killTree(t)
			}
		})
	}
	return nil
}

// prepareExitMsg readies an app that talks for a <quit/> or <abort/>:
// queued suspend and resume messages no longer matter (the API handles
// quit and abort even while suspended), and a group stopped by signal
// before the app first spoke is continued, as it must run to exit.
func (r *Runner) prepareExitMsg(t *task) {
	t.queue = slices.DeleteFunc(t.queue, func(m ctlMsg) bool {
		return m.msg == boincapi.MsgSuspend || m.msg == boincapi.MsgResume
	})
	if t.sigStopped {
		if err := contTree(t.cmd.Process, t.job); err != nil {
			r.log.Warn("continue task so it can exit", "result", t.name, "err", err)
		}
		t.sigStopped = false
	}
}

// killTree kills the process group; r.mu must be held and t not exited,
// which guarantees the group leader is not reaped yet, so its pid (the
// group id) cannot have been reused.
func (r *Runner) killTree(t *task) {
	if t.exited {
		return
	}
	if err := killTree(t.cmd.Process, t.job); err != nil {
		r.log.Warn("kill process group", "result", t.name, "pid", t.pid, "err", err)
	}
}

// StopAll is the daemon shutdown: every task is asked to quit, the runner
// waits until they have exited or ctx is done, then kills what is left.
// Tasks are reported as Restart and keep their slots. Exit events are
// delivered only if Events has room or is being read; the rest are
// dropped. The runner accepts no new tasks afterwards.
func (r *Runner) StopAll(ctx context.Context) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		r.wg.Wait()
		return
	}
	r.closed = true
	var waiting []*task
	for _, t := range r.tasks {
		if t.exited {
			continue
		}
		waiting = append(waiting, t)
		if !t.abortReq && !t.killReq {
			t.quitReq = true
		}
		if t.talks() {
			r.prepareExitMsg(t)
			r.queueMsg(t, boincapi.MsgQuit)
		} else if err := terminateTree(t.cmd.Process, t.job); err != nil {
			r.log.Warn("terminate task", "result", t.name, "err", err)
		}
	}
	r.mu.Unlock()

wait:
	for _, t := range waiting {
		select {
		case <-t.exitCh:
		case <-ctx.Done():
			break wait
		}
	}

	r.mu.Lock()
	for _, t := range r.tasks {
		if !t.exited {
			r.log.Warn("task did not quit before shutdown; killing it", "result", t.name)
			r.killTree(t)
		}
	}
	r.mu.Unlock()
	close(r.done)
	r.wg.Wait()
	r.reap.stop()
}

// send delivers an event: at once if the channel has room, else until the
// daemon reads it or the runner is stopped.
func (r *Runner) send(ev Event) {
	select {
	case r.cfg.Events <- ev:
		return
	default:
	}
	select {
	case r.cfg.Events <- ev:
	case <-r.done:
		r.log.Warn("runner stopped; exit event dropped", "result", displayKey(ev.ResultKey), "outcome", ev.Exit.Outcome.String())
	}
}

// displayKey shows a result key (URL NUL name) in messages.
func displayKey(key string) string { return strings.ReplaceAll(key, "\x00", " ") }
