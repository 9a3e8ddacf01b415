package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/hostcond"
)

// DefaultScrapeTimeout bounds how long one scrape waits for a Snapshot.
const DefaultScrapeTimeout = 5 * time.Second

// maxLabelLen caps label values that come from outside (project names from
// servers, GPU model strings) so a hostile server cannot bloat every scrape.
const maxLabelLen = 256

// Collector takes a Snapshot from its Source at each scrape and turns it
// into the boincd_* metric families. It keeps no state between scrapes.
type Collector struct {
	src     Source
	timeout time.Duration
	log     *slog.Logger
	d       descs
}

// NewCollector returns a Collector reading src. timeout bounds each call to
// src.Snapshot; 0 or less means DefaultScrapeTimeout. A nil logger discards.
func NewCollector(src Source, timeout time.Duration, logger *slog.Logger) *Collector {
	if timeout <= 0 {
		timeout = DefaultScrapeTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Collector{src: src, timeout: timeout, log: logger, d: newDescs()}
}

// WriteText takes a Snapshot and writes the boincd_* metrics to w in the
// Prometheus text format 0.0.4 (ContentType). When the Source fails or
// times out, only boincd_scrape_error 1 is written. The error is w's.
func (c *Collector) WriteText(ctx context.Context, w io.Writer) error {
	var b batch
	c.collect(ctx, &b)
	var buf bytes.Buffer
	for _, err := range b.write(&buf) {
		c.log.Warn("metrics scrape: series left out", slog.Any("err", err))
	}
	_, err := w.Write(buf.Bytes())
	return err
}

type descs struct {
	scrapeError *desc

	buildInfo  *desc
	startTime  *desc
	runMode    *desc
	suspended  *desc
	health     *desc
	tasks      *desc
	hostInfo   *desc
	cpus       *desc
	usableCPUs *desc
	memory     *desc
	swap       *desc
	diskTotal  *desc
	diskFree   *desc
	fpops      *desc
	iops       *desc
	benchTime  *desc
	gpus       *desc
	share      *desc
	projSusp   *desc
	noNewTasks *desc
	inProgress *desc
	dcf        *desc
	rpcBackoff *desc
	userTotal  *desc
	userExpavg *desc
	hostTotal  *desc
	hostExpavg *desc
	processing *desc
	debt       *desc
	fetchBO    *desc
	rpcs       *desc
	xferBytes  *desc
	xferActive *desc
	xferFailed *desc
}

func newDescs() descs {
	p := []string{"project", "project_name"}
	pr := []string{"project", "project_name", "resource"}
	pd := []string{"project", "project_name", "direction"}
	g := func(name, help string, labels ...string) *desc { return newDesc(name, help, gauge, labels...) }
	c := func(name, help string, labels ...string) *desc { return newDesc(name, help, counter, labels...) }
	return descs{
		scrapeError: g("boincd_scrape_error", "1 if the last scrape could not get the daemon's state (nothing else from boincd is exported then), 0 otherwise."),
		buildInfo:   g("boincd_build_info", "Always 1; labels identify the boincd build.", "version", "client_version", "platform"),
		startTime:   g("boincd_start_time_seconds", "Unix time the daemon started."),
		runMode:     g("boincd_run_mode", "1 for the run mode in force for each activity, 0 for the others.", "activity", "mode"),
		suspended:   g("boincd_suspended", "1 while the activity is suspended, with the reason; 0 with reason \"none\" otherwise.", "activity", "reason"),
		health:      g("boincd_health_warning", "1 while the named health warning is in force, 0 otherwise.", "name"),
		tasks:       g("boincd_tasks", "Tasks on this host by state and resource.", "state", "resource"),
		hostInfo:    g("boincd_host_info", "Always 1; labels describe the host as probed.", "os", "os_version", "cpu_vendor", "cpu_model"),
		cpus:        g("boincd_host_cpus", "Logical CPUs found on the host."),
		usableCPUs:  g("boincd_host_usable_cpus", "CPUs the preferences let boincd use."),
		memory:      g("boincd_host_memory_bytes", "Host RAM in bytes."),
		swap:        g("boincd_host_swap_bytes", "Host swap space in bytes."),
		diskTotal:   g("boincd_host_disk_total_bytes", "Size of the file system holding the data directory."),
		diskFree:    g("boincd_host_disk_free_bytes", "Free space on the file system holding the data directory."),
		fpops:       g("boincd_host_benchmark_fpops", "Whetstone benchmark result per CPU, floating-point operations per second."),
		iops:        g("boincd_host_benchmark_iops", "Dhrystone benchmark result per CPU, integer operations per second."),
		benchTime:   g("boincd_host_benchmark_timestamp_seconds", "Unix time the CPU benchmarks last ran."),
		gpus:        g("boincd_gpus", "GPUs found on the host by type and model.", "type", "model"),
		share:       g("boincd_project_resource_share", "The project's resource share.", p...),
		projSusp:    g("boincd_project_suspended", "1 if the user suspended the project.", p...),
		noNewTasks:  g("boincd_project_no_new_tasks", "1 if the project is set to get no new tasks.", p...),
		inProgress:  g("boincd_project_tasks_in_progress", "The project's tasks not yet reported.", p...),
		dcf:         g("boincd_project_dcf", "The project's duration correction factor.", p...),
		rpcBackoff:  g("boincd_project_rpc_backoff_seconds", "Seconds until the next scheduler RPC to the project is allowed.", p...),
		userTotal:   g("boincd_project_user_total_credit", "The user's total credit at the project.", p...),
		userExpavg:  g("boincd_project_user_expavg_credit", "The user's recent average credit at the project.", p...),
		hostTotal:   g("boincd_project_host_total_credit", "This host's total credit at the project.", p...),
		hostExpavg:  g("boincd_project_host_expavg_credit", "This host's recent average credit at the project.", p...),
		processing:  c("boincd_project_processing_seconds_total", "Instance-seconds of the resource used by the project's tasks.", pr...),
		debt:        g("boincd_project_debt_seconds", "The project's scheduling debt for the resource in instance-seconds (positive: owed processing).", pr...),
		fetchBO:     g("boincd_project_fetch_backoff_seconds", "Seconds until work fetch may ask the project for the resource again.", pr...),
		rpcs:        c("boincd_scheduler_rpcs_total", "Scheduler RPCs to the project by outcome.", "project", "project_name", "outcome"),
		xferBytes:   c("boincd_transfer_bytes_total", "Bytes transferred for the project's files by direction.", pd...),
		xferActive:  g("boincd_transfers_active", "File transfers in progress for the project by direction.", pd...),
		xferFailed:  c("boincd_transfer_failures_total", "Failed file transfer attempts for the project by direction.", pd...),
	}
}

// collect takes a Snapshot from the Source and adds it to b. When the
// Source fails or times out, only boincd_scrape_error 1 is added.
func (c *Collector) collect(ctx context.Context, b *batch) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	snap, err := c.snapshot(ctx)
	if err != nil {
		c.log.Warn("metrics scrape: no snapshot from the daemon", slog.Any("err", err))
		b.add(c.d.scrapeError, 1)
		return
	}
	b.add(c.d.scrapeError, 0)
	e := emitter{b}
	c.collectDaemon(&e, snap)
	c.collectHost(&e, &snap.Host)
	c.collectTasks(&e, snap.Tasks)
	c.collectProjects(&e, snap.Projects)
}

// snapshot calls the Source. The Source must honour ctx (its contract), so
// the deadline bounds the scrape without a goroutine of our own.
func (c *Collector) snapshot(ctx context.Context) (*Snapshot, error) {
	s, err := c.src.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("metrics: snapshot (timeout %v): %w", c.timeout, err)
	}
	if s == nil {
		return nil, errors.New("metrics: snapshot: source returned neither a snapshot nor an error")
	}
	return s, nil
}

// emitter adds samples to a batch; the family's type is its desc's.
type emitter struct {
	b *batch
}

func (e *emitter) gauge(d *desc, v float64, labels ...string) { e.b.add(d, v, labels...) }

func (e *emitter) counter(d *desc, v float64, labels ...string) { e.b.add(d, v, labels...) }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// runModeName is a mode's label value (shorter than boinccmd's words,
// which boinc.RunMode.String gives).
func runModeName(m boinc.RunMode) string {
	switch m {
	case boinc.RunModeAlways:
		return "always"
	case boinc.RunModeAuto:
		return "auto"
	case boinc.RunModeNever:
		return "never"
	}
	return fmt.Sprintf("mode_%d", m)
}

func (c *Collector) collectDaemon(e *emitter, s *Snapshot) {
	e.gauge(c.d.buildInfo, 1, label(s.Build.Version), label(s.Build.ClientVersion), label(s.Build.Platform))
	if !s.Daemon.StartTime.IsZero() {
		e.gauge(c.d.startTime, unixSeconds(s.Daemon.StartTime))
	}
	for _, a := range []struct {
		name   string
		mode   int
		reason uint32
	}{
		{"computing", s.Daemon.RunMode, s.Daemon.TaskSuspendReason},
		{"gpu", s.Daemon.GPUMode, s.Daemon.GPUSuspendReason},
		{"network", s.Daemon.NetworkMode, s.Daemon.NetworkSuspendReason},
	} {
		if mode := boinc.RunMode(a.mode); mode >= boinc.RunModeAlways && mode <= boinc.RunModeNever {
			for m := boinc.RunModeAlways; m <= boinc.RunModeNever; m++ {
				e.gauge(c.d.runMode, boolValue(m == mode), a.name, runModeName(m))
			}
		}
		if a.reason == 0 {
			e.gauge(c.d.suspended, 0, a.name, "none")
		} else {
			e.gauge(c.d.suspended, 1, a.name, SuspendReasonLabel(a.reason))
		}
	}

	active := make(map[string]bool, len(s.HealthWarnings))
	for _, w := range s.HealthWarnings {
		active[label(w)] = true
	}
	for _, name := range knownHealthWarnings {
		e.gauge(c.d.health, boolValue(active[name]), name)
		delete(active, name)
	}
	for _, name := range sortedKeys(active) {
		if name != "" {
			e.gauge(c.d.health, 1, name)
		}
	}
}

// SuspendReasonLabel is the boincd_suspended reason label for a cc_status
// suspend reason: a snake_case name for each SUSPEND_REASON_* value,
// "reason_<n>" for a value BOINC does not define. A mask with several bits
// is named by its primary reason, as cc_status would report it.
func SuspendReasonLabel(reason uint32) string {
	switch r := hostcond.Primary(reason); r {
	case 0:
		return "none"
	case hostcond.ReasonBatteries:
		return "batteries"
	case hostcond.ReasonUserActive:
		return "user_active"
	case hostcond.ReasonUserReq:
		return "user_request"
	case hostcond.ReasonTimeOfDay:
		return "time_of_day"
	case hostcond.ReasonBenchmarks:
		return "benchmarks"
	case hostcond.ReasonDiskSize:
		return "disk_size"
	case hostcond.ReasonCPUThrottle:
		return "cpu_throttle"
	case hostcond.ReasonNoRecentInput:
		return "no_recent_input"
	case hostcond.ReasonInitialDelay:
		return "initial_delay"
	case hostcond.ReasonExclusiveApp:
		return "exclusive_app"
	case hostcond.ReasonCPUUsage:
		return "cpu_usage"
	case hostcond.ReasonNetworkQuota:
		return "network_quota"
	default:
		return fmt.Sprintf("reason_%d", r)
	}
}

func (c *Collector) collectHost(e *emitter, h *HostFacts) {
	e.gauge(c.d.hostInfo, 1, label(h.OSName), label(h.OSVersion), label(h.CPUVendor), label(h.CPUModel))
	if h.LogicalCPUs > 0 {
		e.gauge(c.d.cpus, float64(h.LogicalCPUs))
	}
	if h.UsableCPUs > 0 {
		e.gauge(c.d.usableCPUs, h.UsableCPUs)
	}
	positive := []struct {
		d *desc
		v float64
	}{
		{c.d.memory, h.MemoryBytes}, {c.d.swap, h.SwapBytes},
		{c.d.diskTotal, h.DiskTotalBytes}, {c.d.fpops, h.FPOPS}, {c.d.iops, h.IOPS},
	}
	for _, m := range positive {
		if m.v > 0 {
			e.gauge(m.d, m.v)
		}
	}
	if h.DiskTotalBytes > 0 {
		// Free space is legitimately 0 on a full disk; it is only unknown
		// when the total is.
		e.gauge(c.d.diskFree, h.DiskFreeBytes)
	}
	if !h.BenchmarkTime.IsZero() {
		e.gauge(c.d.benchTime, unixSeconds(h.BenchmarkTime))
	}

	type gpuKey struct{ typ, model string }
	counts := map[gpuKey]int{}
	var order []gpuKey
	for _, g := range h.GPUs {
		k := gpuKey{label(g.Type), label(g.Model)}
		if _, seen := counts[k]; !seen {
			order = append(order, k)
		}
		counts[k] += g.Count
	}
	for _, k := range order {
		e.gauge(c.d.gpus, float64(counts[k]), k.typ, k.model)
	}
}

func (c *Collector) collectTasks(e *emitter, tasks []TaskCount) {
	type key struct{ state, resource string }
	counts := map[key]int{}
	resources := map[string]bool{ResourceCPU: true}
	states := map[string]bool{}
	for _, s := range knownTaskStates {
		states[s] = true
	}
	for _, t := range tasks {
		k := key{label(t.State), label(t.Resource)}
		if k.state == "" || k.resource == "" {
			continue
		}
		counts[k] += t.Count
		resources[k.resource] = true
		states[k.state] = true
	}
	for _, r := range sortedKeys(resources) {
		for _, s := range sortedKeys(states) {
			e.gauge(c.d.tasks, float64(counts[key{s, r}]), s, r)
		}
	}
}

func (c *Collector) collectProjects(e *emitter, projects []ProjectStats) {
	seen := map[string]bool{}
	for i := range projects {
		p := &projects[i]
		proj := ProjectLabel(p.URL)
		if proj == "" || seen[proj] {
			continue
		}
		seen[proj] = true
		name := label(p.Name)

		e.gauge(c.d.share, p.ResourceShare, proj, name)
		e.gauge(c.d.projSusp, boolValue(p.Suspended), proj, name)
		e.gauge(c.d.noNewTasks, boolValue(p.NoNewTasks), proj, name)
		e.gauge(c.d.inProgress, float64(p.TasksInProgress), proj, name)
		if p.DCF > 0 {
			e.gauge(c.d.dcf, p.DCF, proj, name)
		}
		e.gauge(c.d.rpcBackoff, nonNegSeconds(p.RPCBackoff), proj, name)
		e.gauge(c.d.userTotal, p.UserTotalCredit, proj, name)
		e.gauge(c.d.userExpavg, p.UserExpavgCredit, proj, name)
		e.gauge(c.d.hostTotal, p.HostTotalCredit, proj, name)
		e.gauge(c.d.hostExpavg, p.HostExpavgCredit, proj, name)

		rscSeen := map[string]bool{}
		for _, r := range p.Resources {
			rsc := label(r.Resource)
			if rsc == "" || rscSeen[rsc] {
				continue
			}
			rscSeen[rsc] = true
			e.counter(c.d.processing, r.ProcessingSecondsTotal, proj, name, rsc)
			e.gauge(c.d.debt, r.Debt, proj, name, rsc)
			e.gauge(c.d.fetchBO, nonNegSeconds(r.FetchBackoff), proj, name, rsc)
		}

		outcomes := map[string]uint64{}
		for _, o := range knownRPCOutcomes {
			outcomes[o] = 0
		}
		for _, r := range p.SchedulerRPCsTotal {
			if o := label(r.Outcome); o != "" {
				outcomes[o] += r.Count
			}
		}
		for _, o := range sortedKeys(outcomes) {
			e.counter(c.d.rpcs, float64(outcomes[o]), proj, name, o)
		}

		t := &p.Transfers
		e.counter(c.d.xferBytes, t.UploadedBytesTotal, proj, name, "up")
		e.counter(c.d.xferBytes, t.DownloadedBytesTotal, proj, name, "down")
		e.gauge(c.d.xferActive, float64(t.ActiveUploads), proj, name, "up")
		e.gauge(c.d.xferActive, float64(t.ActiveDownloads), proj, name, "down")
		e.counter(c.d.xferFailed, float64(t.FailedUploadsTotal), proj, name, "up")
		e.counter(c.d.xferFailed, float64(t.FailedDownloadsTotal), proj, name, "down")
	}
}

// ProjectLabel is the "project" label value for a master URL: the URL
// without user info, query or fragment, so that credentials someone put
// in a URL never reach a metric.
func ProjectLabel(master string) string {
	s := strings.TrimSpace(master)
	if u, err := url.Parse(s); err == nil && u.Scheme != "" && u.Opaque == "" {
		u.User = nil
		u.RawQuery, u.ForceQuery = "", false
		u.Fragment, u.RawFragment = "", ""
		return label(u.String())
	}
	// Not a URL net/url accepts: cut by hand.
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	if i := strings.Index(s, "://"); i >= 0 {
		rest := s[i+3:]
		hostEnd := strings.IndexByte(rest, '/')
		if hostEnd < 0 {
			hostEnd = len(rest)
		}
		if at := strings.LastIndexByte(rest[:hostEnd], '@'); at >= 0 {
			s = s[:i+3] + rest[at+1:]
		}
	} else if at := strings.IndexByte(s, '@'); at >= 0 {
		s = s[at+1:]
	}
	return label(s)
}

// label makes s a safe label value: valid UTF-8 and at most maxLabelLen
// bytes (cut at a rune boundary).
func label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxLabelLen {
		return s
	}
	cut := maxLabelLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

func nonNegSeconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return d.Seconds()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
