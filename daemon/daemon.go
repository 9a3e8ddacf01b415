// Package daemon is the BOINC client itself: it owns the client state in a
// single goroutine, reconciles it with the config file, and drives the
// decision code (what to run, what to fetch, what to report) with real
// processes, real HTTP and a real bbolt store.
//
// Everything that blocks (scheduler RPCs, file transfers, child processes)
// runs in goroutines owned by the daemon and reports back as events on one
// channel. Each event handler mutates the state, the changed entities are
// committed to bbolt in one transaction, and only then are new actions
// (transfers, RPCs, process starts) begun. A crash at any point therefore
// leaves a state from which a restart simply carries on.
package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/logflags"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/statefile"
	"github.com/boincd/boincd/taskrunner"
	"github.com/boincd/boincd/workfetch"
)

// StateFileName is the bbolt file inside the data directory.
const StateFileName = "boincd.db"

// Options configure a daemon. Zero values mean the production defaults;
// the short intervals exist for tests and the demo.
type Options struct {
	DataDir string
	// ConfigPath defaults to DataDir/boincd.toml; a missing default file
	// means "no projects".
	ConfigPath string
	// Config, when set, is used instead of reading ConfigPath (demo).
	Config *config.Config
	Logger *slog.Logger
	Getenv func(string) string

	ExitWhenIdle bool
	NoGPUs       bool
	// NVML, when set, is probed for NVIDIA GPUs instead of the system's
	// libnvidia-ml (coproc.DefaultNVML): tests and tools hand a running
	// daemon a mock GPU (go-nvml's pkg/nvml/mock) this way. In builds
	// without NVML (no cgo, not Linux) coproc.NVML only explains why there
	// is none, so a mock cannot be given there.
	NVML coproc.NVML
	// Containers runs the container engine's programs (podman, docker;
	// docker.go); nil runs the real ones as app_user. Tests hand a
	// scripted engine here.
	Containers container.Runner

	PollInterval      time.Duration // task/transfer poll, default 1 s
	WorkFetchInterval time.Duration // periodic work-fetch check, default 60 s
	RPCBackoffMin     time.Duration // default 60 s
	XferBackoffMin    time.Duration // default 120 s
	FetchBackoffMin   time.Duration // default 600 s
	// MaxReportDelay: finished results are reported at the latest this
	// long after completion (SCHEDULING.md §4.4: 1 h).
	MaxReportDelay time.Duration
	QuitGrace      time.Duration // default 60 s
	// ProjectListURL, when set, replaces the configuration's
	// project_list_url: tests point it at a local server or a closed
	// port, so that no test reaches BOINC's web site.
	ProjectListURL string
	// IgnoreHostConditions: never suspend for user activity, CPU load,
	// battery or time of day (tests, which load the machine themselves).
	IgnoreHostConditions bool
	// GUIRPCAddr overrides the config's GUI RPC address ("127.0.0.1:0"
	// in tests; "off" disables GUI RPC).
	GUIRPCAddr string
	// WebAddr overrides the web dashboard's listen address ("off"
	// disables it); "" takes it from the config.
	WebAddr string
	// HTTPStallTimeout aborts a transfer or RPC that receives nothing for
	// this long (default 5 min, the C++ client's low-speed limit).
	HTTPStallTimeout time.Duration
	// BenchmarkDuration per kernel; 0 = 1 s. Negative skips benchmarks
	// (tests), using a nominal 1 GFLOPS.
	BenchmarkDuration time.Duration
	Seed              uint64

	// Notifier hears the service-manager states (systemd's sd_notify:
	// "READY=1", "STOPPING=1", "WATCHDOG=1", "STATUS=..."); nil: none.
	Notifier Notifier
	// WatchdogInterval > 0 makes the owner loop send "WATCHDOG=1" at half
	// that interval, so a wedged loop gets the service restarted.
	WatchdogInterval time.Duration
	// StopTimeout bounds how long a graceful stop waits for tasks to
	// quit at their next checkpoint before killing them (default 60 s;
	// the systemd unit's TimeoutStopSec leaves room above it).
	StopTimeout time.Duration
	// StateCommitHook is handed to the state file as its InCommit hook:
	// called inside every commit right before bbolt writes it. Crash tests
	// kill the process there; production leaves it nil.
	StateCommitHook func()
	// Platforms, when set, are the platforms asked for (primary first)
	// instead of detecting them (platform.go); tests pin them this way.
	Platforms []string
	// StateReserve is the disk space (bytes) kept in ReserveFileName so
	// that a scheduler reply can be saved on a full disk (persist.go);
	// 0 means DefaultStateReserve, negative none.
	StateReserve int64
	// RemoveAll removes a slot directory and everything in it; nil means
	// os.RemoveAll. Tests make a slot impossible to clear this way, as a
	// file held open by a virus scanner does on Windows (slots.go).
	RemoveAll func(path string) error
}

func (o *Options) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.PollInterval, time.Second)
	def(&o.WorkFetchInterval, 60*time.Second)
	def(&o.RPCBackoffMin, boinc.RPCBackoffMin)
	def(&o.XferBackoffMin, boinc.XferBackoffMin)
	def(&o.FetchBackoffMin, 600*time.Second)
	def(&o.MaxReportDelay, time.Hour)
	def(&o.QuitGrace, 60*time.Second)
	def(&o.StopTimeout, 60*time.Second)
	def(&o.BenchmarkDuration, time.Second)
	if o.ConfigPath == "" {
		o.ConfigPath = filepath.Join(o.DataDir, config.FileName)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
}

// Daemon is a running client. Create with New, run with Run.
type Daemon struct {
	opt Options
	// hard is cancelled by StopNow; the graceful stop waits under it.
	hard    context.Context
	stopNow context.CancelFunc
	// lastWatchdog is when the owner loop last told the watchdog it lives.
	lastWatchdog time.Time

	log  *slog.Logger
	cfg  *config.Config
	rand *rand.Rand

	store  *statefile.Store
	batch  statefile.Batch
	http   *rpcclient.Client
	runner *taskrunner.Runner
	// proxy is read by the HTTP transport's goroutines at each request
	// and replaced only by the owner (settings.go).
	proxy    atomic.Pointer[boinc.ProxyInfo]
	language string      // set_language
	local    localConfig // cc_config.xml and app_config.xml (localconfig.go)
	cc       ccState     // the effective cc_config.xml options (ccopts.go)
	// ccProxy is cc_config.xml's proxy, which overrides the GUI's;
	// read by the HTTP transport's goroutines like proxy.
	ccProxy     atomic.Pointer[boinc.ProxyInfo]
	logFlags    *logflags.Handler // cc_config.xml's <log_flags>
	hostProbing bool              // reset_host_info in progress

	// anon holds, per anonymous platform project, what its app_info.xml
	// gave (appinfo.go).
	anon map[string]*anonProject

	// platforms are the BOINC platforms this host runs, primary first,
	// detected once at start (platform.go).
	platforms []string

	am    acctMgrState // account manager membership (acctmgr.go)
	st    *clientState
	host  boinc.Host
	prefs boinc.Prefs

	events     chan any
	taskEvents chan taskrunner.Event
	queries    chan ownerCall
	reloadCh   chan struct{}

	ctx context.Context // run context: cancels transfers and RPCs
	wg  sync.WaitGroup  // goroutines started by the loop
	// trickleURLs are each project's trickle handlers, from its last
	// reply (setTrickleUpURLs).
	trickleURLs map[string][]string
	rpc         *rpcInFlight
	xfers       map[string]*xferInFlight // file key
	active      map[string]*activeTask   // result key
	acct        accountState             // the Add Project wizard's web RPCs and attach status

	nextFetchCheck time.Time
	// lastFetchCheck is when work fetch was last considered: a backoff
	// that ends after it brings the next check forward.
	lastFetchCheck time.Time
	// startsHeldUntil: a task start met a full disk; none starts before.
	startsHeldUntil time.Time
	core            *core
	hostc           *hostState
	benchRunning    bool
	gpu             gpuState
	ctr             containerState // the container engine (docker.go)
	health          healthState
	nt              noticeState // the Notices tab (notices.go)
	plist           projectListState
	movedURLs       map[string]string // master URL → the other URL its replies name (checkReplyMasterURL)
	elog            *eventlog.Log
	names           projectNames
	guiAddr         string
	webURL          string // the web dashboard's (web.go)
	oldResults      []guirpc.OldResult
	stop            context.CancelFunc
	modes           modes
	rpcDetached     map[string]string                  // config projects detached over GUI RPC → their entry digest
	sched           map[string]*workfetch.ProjectState // per project: debts, backoffs, DCF
	lastPoll        time.Time
	flushFailing    bool // the last commit failed: start nothing new
	persist         persistState
	startTime       time.Time
	guiDisk         guiDiskUsage // projects' disk usage as last measured (guidisk.go)
	stats           Stats
	pcount          map[string]*projectCounters   // master URL → totals for metrics
	netStats        boinc.NetStats                // measured transfer rates, persisted
	dailyStats      map[string][]boinc.DailyStats // master URL → credit history, persisted (stats.go)
	dailyXfers      []boinc.DailyXfer             // bytes moved per day, persisted (stats.go)

	// dirtySlots are the slot numbers whose directory could not be
	// cleared: no task is given them until it can (slots.go).
	dirtySlots    map[int]bool
	nextSlotRetry time.Time
	// noSlotWarned: a start found no usable slot, and said so once.
	noSlotWarned bool

	// suspendLog: the suspensions last told to the event log (evlog.go).
	suspendLog suspendLog
}

// Stats are counters for the summary the demo prints.
type Stats struct {
	RPCs, RPCFailures      int
	Downloaded, Uploaded   int
	TasksStarted           int
	TasksSucceeded         int
	TasksFailed            int
	ResultsReported, Acked int
	BytesDown, BytesUp     int64
}

// Notifier receives service-manager notifications; declared here, where
// it is used, and implemented with go-systemd in cmd/boincd.
type Notifier interface {
	Notify(state string)
}

func (d *Daemon) notify(state string) {
	if d.opt.Notifier != nil {
		d.opt.Notifier.Notify(state)
	}
}

// New prepares a daemon; nothing is opened until Run.
func New(opt Options) (*Daemon, error) {
	if opt.DataDir == "" {
		return nil, errors.New("daemon: no data directory")
	}
	abs, err := filepath.Abs(opt.DataDir)
	if err != nil {
		return nil, fmt.Errorf("daemon: data directory %s: %w", opt.DataDir, err)
	}
	opt.DataDir = abs
	opt.setDefaults()
	// Every record goes to the journal and into the event log that
	// boinccmd --get_messages and BOINC Manager show: one source of truth.
	elog := eventlog.New(opt.Logger.Handler(), eventlog.DefaultCapacity)
	flags := logflags.New(elog)
	opt.Logger = slog.New(flags)
	d := &Daemon{
		elog:        elog,
		logFlags:    flags,
		opt:         opt,
		log:         opt.Logger.With(slog.String("component", "client")),
		rand:        rand.New(rand.NewPCG(opt.Seed, opt.Seed^0x9e3779b97f4a7c15)),
		events:      make(chan any, 64),
		taskEvents:  make(chan taskrunner.Event, 16),
		queries:     make(chan ownerCall),
		reloadCh:    make(chan struct{}, 1),
		xfers:       map[string]*xferInFlight{},
		active:      map[string]*activeTask{},
		core:        newCore(),
		hostc:       newHostState(),
		sched:       map[string]*workfetch.ProjectState{},
		rpcDetached: map[string]string{},
		local:       newLocalConfig(),
		anon:        map[string]*anonProject{},
		dailyStats:  map[string][]boinc.DailyStats{},
	}
	elog.SetProjectNamer(d.names.get)
	d.hard, d.stopNow = context.WithCancel(context.Background())
	return d, nil
}

// StopNow cuts a graceful stop short (a second SIGTERM): tasks still
// running are killed at once instead of waiting for their checkpoints;
// the state is persisted all the same. Safe from any goroutine.
func (d *Daemon) StopNow() { d.stopNow() }

// Reload asks the daemon to re-read its config (SIGHUP).
func (d *Daemon) Reload() {
	select {
	case d.reloadCh <- struct{}{}:
	default:
	}
}

// ErrIdle is returned by Run when ExitWhenIdle stopped the daemon.
var ErrIdle = errors.New("no work left: exiting as asked (exit_when_idle)")

// Run opens the state, starts the loop and blocks until ctx is cancelled
// (graceful shutdown: tasks are asked to quit and will resume from their
// checkpoints next time) or, with ExitWhenIdle, until nothing is left to do.
func (d *Daemon) Run(ctx context.Context) (err error) {
	d.startTime = time.Now()
	d.logStarting()
	if err := os.MkdirAll(d.opt.DataDir, 0o755); err != nil {
		return fmt.Errorf("data directory %s: %w", d.opt.DataDir, err)
	}
	for _, sub := range []string{"projects", "slots"} {
		if err := os.MkdirAll(filepath.Join(d.opt.DataDir, sub), 0o755); err != nil {
			return fmt.Errorf("data directory %s: %w", d.opt.DataDir, err)
		}
	}
	d.store, err = statefile.Open(filepath.Join(d.opt.DataDir, StateFileName), statefile.Options{Logger: d.opt.Logger, InCommit: d.opt.StateCommitHook})
	if err != nil {
		return err
	}
	defer d.store.Close()
	snap, err := d.store.Load()
	if err != nil {
		return err
	}
	d.st = stateFromSnapshot(snap)
	d.finishRemovals(snap.Meta)
	d.loadSchedStates(snap.Meta)
	d.loadNotices(snap.Meta)
	decodeMeta(snap.Meta, modesMetaKey, &d.modes)
	decodeMeta(snap.Meta, NetStatsMetaKey, &d.netStats)
	d.loadProjectList(snap.Meta)
	d.loadStats(snap.Meta)
	d.loadAcctMgr(snap.Meta)
	for k, v := range snap.Meta {
		if url, ok := strings.CutPrefix(k, "rpc_detached:"); ok {
			var digest string
			if json.Unmarshal(v, &digest) == nil {
				d.rpcDetached[url] = digest
			}
		}
	}

	cfg := d.opt.Config
	if cfg == nil {
		cfg, err = config.Load(d.opt.ConfigPath, true, d.opt.Getenv)
		if err != nil {
			return err
		}
	}
	d.cfg = cfg
	// Before the host probe: cc_config.xml may skip the benchmarks.
	d.readCCConfig()
	// After cc_config.xml, which may add or remove alternates.
	d.detectPlatforms(ctx)

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	d.ctx = runCtx
	d.stop = cancel
	for _, p := range d.st.projects {
		d.names.set(p.MasterURL, p.ProjectName)
	}

	benchNow := d.initHost(runCtx, snap.Meta)
	d.logHost()
	d.loadProxy(snap.Meta)
	roots, err := rpcclient.LoadCABundle(cfg.CABundle, d.dataDirCABundle())
	if err != nil {
		return fmt.Errorf("ca_bundle: %w", err)
	}
	d.http = rpcclient.New(rpcclient.Options{
		Logger:         d.opt.Logger.With(slog.String("component", "http")),
		StallTimeout:   d.stallTimeout(),
		MinBytesPerSec: int64(d.cc.eff.HTTPTransferTimeoutBPS),
		RootCAs:        roots,
		Proxy:          rpcclient.ProxyFunc(d.currentProxy),
		Platform:       d.primaryPlatform(),
	})
	d.runner, err = taskrunner.NewRunner(taskrunner.Config{
		DataDir:   d.opt.DataDir,
		Logger:    d.opt.Logger.With(slog.String("component", "runner")),
		Events:    d.taskEvents,
		QuitGrace: d.opt.QuitGrace,
		RemoveAll: d.opt.RemoveAll,
	})
	if err != nil {
		return fmt.Errorf("task runner: %w", err)
	}
	d.recoverTasks()
	// After the start-up file check: app_info.xml files are the
	// volunteer's and never checked or fetched again.
	d.loadAppInfos()
	d.reconcile(cfg, time.Now())
	d.readAppConfigs()
	d.startGUIRPC(runCtx)
	d.startWeb(runCtx)
	d.startMetrics(runCtx)
	if d.gpusDisabled() {
		d.log.Info("GPUs are not used (no_gpus)")
	}
	d.log.Info("boincd started",
		slog.String("data_dir", d.opt.DataDir),
		slog.Int("projects", len(d.st.projects)),
		slog.Int("tasks", len(d.st.results)),
		slog.Int("usable_cpus", d.usableCPUs()))
	d.notify(fmt.Sprintf("READY=1\nSTATUS=%d projects, %d tasks", len(d.st.projects), len(d.st.results)))
	if benchNow {
		// Only now, as the C++ client: GUI RPC answers and the service
		// manager hears READY at once; the benchmarks (seconds of every
		// CPU) run beside the loop, which holds computing and scheduler
		// RPCs until they end.
		d.startBenchmarks("missing, older than 5 days, or the CPUs changed")
	}

	err = d.loop(runCtx)
	d.notify("STOPPING=1\nSTATUS=asking tasks to quit at their next checkpoint")
	d.shutdown()
	d.abortJobsOnExit(time.Now())
	cancel()
	d.wg.Wait()
	// The last chance to save: try now whatever the retry backoff says.
	d.persist.nextTry = time.Time{}
	if !d.flush() {
		d.log.Error("client state not saved at shutdown; the next start carries on from the last saved state",
			slog.String("file", d.store.Path()), slog.Int("unsaved_changes", d.batch.Len()))
	}
	return err
}

func (d *Daemon) loop(ctx context.Context) error {
	tick := time.NewTicker(d.opt.PollInterval)
	defer tick.Stop()
	d.step(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-d.events:
			d.handleEvent(ev, time.Now())
		case ev := <-d.taskEvents:
			d.handleTaskExit(ev, time.Now())
		case q := <-d.queries:
			q.f()
			if q.readOnly {
				// Nothing changed: no step (see peek).
				continue
			}
		case <-d.reloadCh:
			d.reloadConfig(time.Now())
		case now := <-tick.C:
			d.pollTasks(now)
		}
		d.step(time.Now())
		if d.cc.eff.ExitWhenIdle && d.idle() {
			d.log.Info("nothing left to do; exiting (exit_when_idle)")
			return ErrIdle
		}
	}
}

// step is run after every event: persist, then act.
func (d *Daemon) step(now time.Time) {
	if w := d.opt.WatchdogInterval; w > 0 && now.Sub(d.lastWatchdog) >= w/2 {
		// From the owner loop itself: a loop stuck anywhere stops the
		// pings, and systemd restarts the service.
		d.notify("WATCHDOG=1")
		d.lastWatchdog = now
	}
	if !d.flush() {
		// Warnings still update (state_write_failed among them); nothing
		// else acts on a state that is not on disk.
		d.checkHealth(now)
		return
	}
	d.maybeProbeGPUs(now)
	d.maybeContainers(now)
	d.checkHealth(now)
	d.logSuspendChanges(now)
	if d.benchmarksDue(now) {
		d.startBenchmarks("older than 5 days")
	}
	d.maybeScanExclusive(now)
	d.trimTaskOutputs(now)
	d.retryDirtySlots(now)
	d.finishDetaches(now)
	d.advanceResults(now)
	d.startTransfers(now)
	d.schedule(now)
	d.maybeRPC(now)
	d.maybeAcctMgrRPC(now)
	d.pollFeeds(now)
	d.maybeFetchProjectList(now)
	d.flush()
}

func (d *Daemon) send(ev any) {
	select {
	case d.events <- ev:
	case <-d.ctx.Done():
	}
}

// ownerCall is a function the owner loop runs for another goroutine.
// readOnly ones change nothing, so the loop does not step after them.
type ownerCall struct {
	f        func()
	readOnly bool
}

// query runs f on the owner goroutine and waits for it; the owner then
// steps, acting on whatever f changed.
func (d *Daemon) query(ctx context.Context, f func()) error {
	return d.call(ctx, f, false)
}

// peek runs f, which only reads the state, on the owner goroutine and
// waits for it. No step follows: a Manager polling every second would
// otherwise run a whole owner step (a decision pass among it: 3.7 ms at
// 10,000 tasks) for each request it makes.
func (d *Daemon) peek(ctx context.Context, f func()) error {
	return d.call(ctx, f, true)
}

func (d *Daemon) call(ctx context.Context, f func(), readOnly bool) error {
	done := make(chan struct{})
	select {
	case d.queries <- ownerCall{f: func() { f(); close(done) }, readOnly: readOnly}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (d *Daemon) projectLog(p *boinc.Project) *slog.Logger {
	return d.log.With(slog.String("project", p.MasterURL))
}

func (d *Daemon) taskLog(r *boinc.Result) *slog.Logger {
	return d.log.With(slog.String("project", r.ProjectURL), slog.String("task", r.Name))
}

func (d *Daemon) projectDir(p string) string {
	return filepath.Join(d.opt.DataDir, "projects", boinc.EscapeProjectURL(p))
}

func (d *Daemon) filePath(f *boinc.FileInfo) string {
	return filepath.Join(d.projectDir(f.ProjectURL), f.Name)
}

func (d *Daemon) uniform() float64 { return d.rand.Float64() }

// initHost probes the machine and reports whether the CPU benchmarks are
// due: missing, older than 5 days (the C++ client's period), or taken on
// other CPUs. It does not run them: Run starts them once GUI RPC answers.
func (d *Daemon) initHost(ctx context.Context, meta map[string][]byte) (benchmark bool) {
	h, warns := coproc.ProbeHost(ctx, d.opt.DataDir)
	for _, w := range warns {
		d.log.Warn("host probe", slog.Any("err", w))
	}
	var saved boinc.Host
	decodeMeta(meta, "host", &saved)
	h.HostCPID = saved.HostCPID
	if h.HostCPID == "" {
		h.HostCPID = randomHex(d.rand, 16)
	}
	h.PFpops, h.PIops, h.PMembw, h.PCalculated = saved.PFpops, saved.PIops, saved.PMembw, saved.PCalculated
	if saved.ProductName != "" { // set by a GUI, or probed before
		h.ProductName = saved.ProductName
	}
	skip := d.opt.BenchmarkDuration < 0 || d.cc.eff.SkipCPUBenchmarks
	stale := h.PCalculated == 0 || time.Since(time.Unix(int64(h.PCalculated), 0)) > benchmarkPeriod || saved.PNCPUs != h.PNCPUs || saved.PModel != h.PModel
	if stale {
		// Until benchmarks end: the stored values, else the C++
		// client's defaults.
		if h.PFpops <= 0 {
			h.PFpops, h.PIops = 1e9, 1e9
		}
		h.PMembw = 1e9
		if skip {
			h.PCalculated = float64(time.Now().Unix())
		}
		// Otherwise p_calculated keeps its stored value, 0 on a first
		// start: no scheduler RPC asks for work on estimates from the
		// placeholder figures (maybeRPC), as the C++ client.
	}
	d.host = h
	d.batch.PutMeta("host", &d.host)
	return stale && !skip
}

// usableCPUs is how many CPUs tasks may use under the prefs.
func (d *Daemon) usableCPUs() int { return d.prefs.UsableCPUs(d.hostNCPUs()) }

// idle: nothing to run, transfer or report, and no project will give us
// more work right now.
func (d *Daemon) idle() bool {
	if len(d.st.results) > 0 || len(d.xfers) > 0 || d.rpc != nil {
		return false
	}
	for _, p := range d.st.projects {
		if p.MasterFetchPending || p.SchedRPCPending != boinc.RPCNone {
			return false
		}
		if !p.NoNewTasks && !p.Suspended && !p.DetachPending && !p.Ended && !d.fetchBackedOff(p, time.Now()) {
			return false
		}
	}
	return true
}

func (d *Daemon) shutdown() {
	ctx, cancel := context.WithTimeout(d.hard, d.opt.StopTimeout)
	defer cancel()
	if d.runner != nil {
		d.runner.StopAll(ctx)
	}
	now := time.Now()
	for key, at := range d.active {
		if r := d.st.results[key]; r != nil {
			r.ElapsedTime = at.elapsed(now)
			r.PID = 0
			d.batch.PutResult(r)
		}
	}
	d.log.Info("boincd stopped; running tasks will resume from their checkpoints")
}
