package daemon

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/ccconfig"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/hostcond"
	"github.com/boincd/boincd/workfetch"
)

// The settings cc_config.xml and boincd.toml (or the command line) both
// may give, and the one rule that combines them: a key set in boincd.toml
// or on the command line wins; cc_config.xml decides the rest; what
// neither sets takes the C++ client's default. When both set a key to
// different values the conflict is logged once with both values.

// Where an effective value came from.
const (
	fromTOML    = "boincd.toml"
	fromFlag    = "command line"
	fromCC      = CCConfigFile
	fromDefault = "default"
)

// settings are the effective <options> of cc_config.xml after the
// precedence rule, with where each came from.
type settings struct {
	ccconfig.Options
	// GPUExclude is boincd.toml's gpu_exclude when that wins over
	// cc_config.xml's exclude_gpu (which Options.ExcludeGPUs then lacks).
	GPUExclude []config.GPUExclude
	// source: option name (cc_config.xml's) → fromTOML, fromFlag, fromCC
	// or fromDefault.
	source map[string]string
}

// conflict is a key boincd.toml and cc_config.xml set differently.
type conflict struct {
	option, tomlKey, tomlValue, ccValue string
}

// flagSettings are the daemon's command-line settings that overlap
// cc_config.xml's options (Options.NoGPUs, ExitWhenIdle, a negative
// BenchmarkDuration).
type flagSettings struct {
	noGPUs, exitWhenIdle, skipBenchmarks bool
}

// overlap is one cc_config.xml option that boincd.toml also has.
type overlap struct {
	option, tomlKey string
	toml            func(c *config.Config) (value string, nonDefault bool)
	flag            func(f flagSettings) bool // nil: no command-line flag
	apply           func(s *settings, c *config.Config, f flagSettings)
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

var overlaps = []overlap{
	{option: "no_gpus", tomlKey: "no_gpus",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.NoGPUs), c.NoGPUs },
		flag:  func(f flagSettings) bool { return f.noGPUs },
		apply: func(s *settings, c *config.Config, f flagSettings) { s.NoGPUs = c.NoGPUs || f.noGPUs }},
	{option: "use_all_gpus", tomlKey: "use_all_gpus",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.UseAllGPUs), c.UseAllGPUs },
		apply: func(s *settings, c *config.Config, _ flagSettings) { s.UseAllGPUs = c.UseAllGPUs }},
	{option: "exit_when_idle", tomlKey: "exit_when_idle",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.ExitWhenIdle), c.ExitWhenIdle },
		flag:  func(f flagSettings) bool { return f.exitWhenIdle },
		apply: func(s *settings, c *config.Config, f flagSettings) { s.ExitWhenIdle = c.ExitWhenIdle || f.exitWhenIdle }},
	{option: "unsigned_apps_ok", tomlKey: "unsigned_apps_ok",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.UnsignedAppsOK), c.UnsignedAppsOK },
		apply: func(s *settings, c *config.Config, _ flagSettings) { s.UnsignedAppsOK = c.UnsignedAppsOK }},
	{option: "allow_remote_gui_rpc", tomlKey: "gui_rpc.allow_remote",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.GUIRPC.AllowRemote), c.GUIRPC.AllowRemote },
		apply: func(s *settings, c *config.Config, _ flagSettings) { s.AllowRemoteGUIRPC = c.GUIRPC.AllowRemote }},
	{option: "exclude_gpu", tomlKey: "gpu_exclude",
		toml: func(c *config.Config) (string, bool) { return gpuExcludeText(c.GPUExclude), len(c.GPUExclude) > 0 },
		apply: func(s *settings, c *config.Config, _ flagSettings) {
			s.ExcludeGPUs, s.GPUExclude = nil, c.GPUExclude
		}},
	{option: "dont_use_docker", tomlKey: "dont_use_docker",
		toml:  func(c *config.Config) (string, bool) { return boolText(c.DontUseDocker), c.DontUseDocker },
		apply: func(s *settings, c *config.Config, _ flagSettings) { s.DontUseDocker = c.DontUseDocker }},
	{option: "skip_cpu_benchmarks",
		flag:  func(f flagSettings) bool { return f.skipBenchmarks },
		apply: func(s *settings, _ *config.Config, f flagSettings) { s.SkipCPUBenchmarks = f.skipBenchmarks }},
}

// effectiveSettings applies the precedence rule. It is pure: the caller
// logs the conflicts and acts on the result.
func effectiveSettings(cfg *config.Config, flags flagSettings, cc ccconfig.CC) (settings, []conflict) {
	s := settings{Options: cc.Options, source: map[string]string{}}
	for _, name := range optionNames {
		s.source[name] = fromDefault
		if cc.Set[name] {
			s.source[name] = fromCC
		}
	}
	var conflicts []conflict
	for _, o := range overlaps {
		tomlSet, tomlVal := false, ""
		if o.toml != nil {
			v, nonDefault := o.toml(cfg)
			tomlSet, tomlVal = nonDefault || cfg.IsSet(o.tomlKey), v
		}
		flagSet := o.flag != nil && o.flag(flags)
		if !tomlSet && !flagSet {
			continue
		}
		ccVal := optionText(&cc.Options, o.option)
		if cc.Set[o.option] {
			mine := tomlVal
			if flagSet && !tomlSet {
				mine = "true"
			}
			if mine != ccVal {
				conflicts = append(conflicts, conflict{option: o.option, tomlKey: o.tomlKey, tomlValue: mine, ccValue: ccVal})
			}
		}
		o.apply(&s, cfg, flags)
		if tomlSet {
			s.source[o.option] = fromTOML
		} else {
			s.source[o.option] = fromFlag
		}
	}
	return s, conflicts
}

// optionNames are the <options> boincd acts on, in the order the
// effective table is shown.
var optionNames = []string{
	"ncpus", "no_gpus", "use_all_gpus", "exclude_gpu", "ignore_nvidia_dev", "ignore_ati_dev", "ignore_intel_dev",
	"max_file_xfers", "max_file_xfers_per_project", "http_transfer_timeout", "http_transfer_timeout_bps", "proxy_info",
	"report_results_immediately", "max_tasks_reported", "fetch_minimal_work", "fetch_on_update",
	"save_stats_days", "rec_half_life_days", "start_delay", "skip_cpu_benchmarks",
	"exclusive_app", "exclusive_gpu_app", "unsigned_apps_ok", "allow_remote_gui_rpc",
	"max_stderr_file_size", "max_stdout_file_size", "no_info_fetch", "dont_contact_ref_site", "dont_check_file_sizes",
	"abort_jobs_on_exit", "exit_when_idle", "suppress_net_info", "dont_use_docker",
	"no_alt_platform", "alt_platform",
}

// optionText is an option's value as the effective table shows it.
func optionText(o *ccconfig.Options, name string) string {
	num := func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, n := range v {
			s[i] = strconv.Itoa(n)
		}
		return strings.Join(s, ",")
	}
	switch name {
	case "ncpus":
		return strconv.Itoa(o.NCPUs)
	case "no_gpus":
		return boolText(o.NoGPUs)
	case "use_all_gpus":
		return boolText(o.UseAllGPUs)
	case "exclude_gpu":
		var parts []string
		for _, x := range o.ExcludeGPUs {
			p := x.URL
			if x.DeviceNum >= 0 {
				p += " device " + strconv.Itoa(x.DeviceNum)
			}
			if x.Type != "" {
				p += " type " + x.Type
			}
			if x.App != "" {
				p += " app " + x.App
			}
			parts = append(parts, p)
		}
		return strings.Join(parts, "; ")
	case "ignore_nvidia_dev":
		return ints(o.IgnoreGPU["NVIDIA"])
	case "ignore_ati_dev":
		return ints(o.IgnoreGPU["ATI"])
	case "ignore_intel_dev":
		return ints(o.IgnoreGPU["intel_gpu"])
	case "max_file_xfers":
		return strconv.Itoa(o.MaxFileXfers)
	case "max_file_xfers_per_project":
		return strconv.Itoa(o.MaxFileXfersPerProject)
	case "http_transfer_timeout":
		return num(o.HTTPTransferTimeout)
	case "http_transfer_timeout_bps":
		return num(o.HTTPTransferTimeoutBPS)
	case "proxy_info":
		switch p := o.Proxy; {
		case p == nil:
			return ""
		case p.UseHTTPProxy:
			return "http " + p.HTTPServerName + ":" + strconv.Itoa(p.HTTPServerPort)
		case p.UseSOCKSProxy:
			return "socks " + p.SOCKSServerName + ":" + strconv.Itoa(p.SOCKSServerPort)
		}
		return "none"
	case "report_results_immediately":
		return boolText(o.ReportResultsImmediately)
	case "max_tasks_reported":
		return strconv.Itoa(o.MaxTasksReported)
	case "fetch_minimal_work":
		return boolText(o.FetchMinimalWork)
	case "fetch_on_update":
		return boolText(o.FetchOnUpdate)
	case "save_stats_days":
		return strconv.Itoa(o.SaveStatsDays)
	case "rec_half_life_days":
		return num(o.RECHalfLifeDays)
	case "start_delay":
		return num(o.StartDelay)
	case "skip_cpu_benchmarks":
		return boolText(o.SkipCPUBenchmarks)
	case "exclusive_app":
		return strings.Join(o.ExclusiveApps, ",")
	case "exclusive_gpu_app":
		return strings.Join(o.ExclusiveGPUApps, ",")
	case "unsigned_apps_ok":
		return boolText(o.UnsignedAppsOK)
	case "allow_remote_gui_rpc":
		return boolText(o.AllowRemoteGUIRPC)
	case "max_stderr_file_size":
		return num(o.MaxStderrFileSize)
	case "max_stdout_file_size":
		return num(o.MaxStdoutFileSize)
	case "no_info_fetch":
		return boolText(o.NoInfoFetch)
	case "dont_contact_ref_site":
		return boolText(o.DontContactRefSite)
	case "dont_check_file_sizes":
		return boolText(o.DontCheckFileSizes)
	case "abort_jobs_on_exit":
		return boolText(o.AbortJobsOnExit)
	case "exit_when_idle":
		return boolText(o.ExitWhenIdle)
	case "suppress_net_info":
		return boolText(o.SuppressNetInfo)
	case "dont_use_docker":
		return boolText(o.DontUseDocker)
	case "no_alt_platform":
		return boolText(o.NoAltPlatform)
	case "alt_platform":
		return strings.Join(o.AltPlatforms, ",")
	}
	return ""
}

func gpuExcludeText(list []config.GPUExclude) string {
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = e.Device
		if e.Project != "" {
			parts[i] += " for " + e.Project
		}
	}
	return strings.Join(parts, "; ")
}

// settingText is one effective value and its source, as the event log
// shows it and `boincd status` reads it back.
func (s *settings) settingText(name string) (value, source string) {
	if name == "exclude_gpu" && s.source[name] == fromTOML {
		return gpuExcludeText(s.GPUExclude), fromTOML
	}
	return optionText(&s.Options, name), s.source[name]
}

// ccState is the daemon's side of the effective settings.
type ccState struct {
	eff   settings
	shown string // the effective table last logged
	// hadWork is the C++ client's had_or_requested_work: with
	// fetch_minimal_work only the first request of a run asks for work.
	hadWork bool
	// exclusive apps (hostcond.Exclusive), fed by process scans off the
	// owner goroutine.
	excl, exclGPU hostcond.Exclusive
	exclBusy      bool
	exclNext      time.Time
	exclWarned    bool
	trimNext      time.Time
}

// flagSettings are the command-line settings this daemon was started with.
func (d *Daemon) flagSettings() flagSettings {
	return flagSettings{noGPUs: d.opt.NoGPUs, exitWhenIdle: d.opt.ExitWhenIdle, skipBenchmarks: d.opt.BenchmarkDuration < 0}
}

// applySettings recomputes the effective settings from boincd.toml and
// cc_config.xml (at start and on every reload) and puts into force those
// that act through something already running.
func (d *Daemon) applySettings(now time.Time) {
	if d.cfg == nil {
		return
	}
	old := d.cc.eff
	eff, conflicts := effectiveSettings(d.cfg, d.flagSettings(), d.local.cc)
	d.cc.eff = eff
	for _, c := range conflicts {
		d.tellConfig(fmt.Sprintf("boincd.toml and cc_config.xml disagree on %s: boincd.toml's %s = %s wins over cc_config.xml's <%s> %s",
			c.option, c.tomlKey, quoteEmpty(c.tomlValue), c.option, quoteEmpty(c.ccValue)),
			slog.String("option", c.option), slog.String("toml_value", c.tomlValue), slog.String("cc_config_value", c.ccValue),
			slog.String("toml_file", d.opt.ConfigPath), slog.String("cc_config_file", filepath.Join(d.opt.DataDir, CCConfigFile)))
	}
	d.logSettings()
	if d.logFlags != nil {
		d.logFlags.Set(d.local.cc.LogFlags)
	}
	if d.http != nil {
		d.http.SetTransferLimits(d.stallTimeout(), int64(eff.HTTPTransferTimeoutBPS))
	}
	// cc_config.xml's proxy overrides the GUI's; say which is in use
	// when that changes, as the C++ client does.
	if (old.Proxy == nil) != (eff.Proxy == nil) || (eff.Proxy != nil && *old.Proxy != *eff.Proxy) {
		if eff.Proxy != nil {
			d.log.Info("Using proxy info from cc_config.xml")
			d.logProxy(eff.Proxy)
		} else if old.source != nil {
			d.log.Info("Using proxy info from GUI")
			d.logProxy(d.proxy.Load())
		}
	}
	d.ccProxy.Store(eff.Proxy)
	if len(eff.ExclusiveApps) == 0 {
		d.cc.excl.Reset()
	}
	if len(eff.ExclusiveGPUApps) == 0 {
		d.cc.exclGPU.Reset()
	}
	if old.source != nil && old.AllowRemoteGUIRPC != eff.AllowRemoteGUIRPC {
		// The C++ client binds its GUI RPC socket once, at start.
		d.log.Warn("allow_remote_gui_rpc changed; it takes effect when boincd restarts",
			slog.Bool("now", old.AllowRemoteGUIRPC), slog.Bool("after_restart", eff.AllowRemoteGUIRPC))
	}
	if d.gpu.probed && gpuSettingsChanged(&old, &eff) {
		d.applyGPUInfo(d.gpu.raw)
	}
	if old.source != nil && (old.NCPUs != eff.NCPUs || old.FetchMinimalWork != eff.FetchMinimalWork) {
		d.fetchSoon(now)
	}
}

func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

func gpuSettingsChanged(a, b *settings) bool {
	return a.NoGPUs != b.NoGPUs || a.UseAllGPUs != b.UseAllGPUs ||
		optionText(&a.Options, "exclude_gpu") != optionText(&b.Options, "exclude_gpu") ||
		gpuExcludeText(a.GPUExclude) != gpuExcludeText(b.GPUExclude) ||
		fmt.Sprint(a.IgnoreGPU) != fmt.Sprint(b.IgnoreGPU)
}

// logSettings logs the effective values that are not defaults, each with
// its source, whenever they change: the event log then says where each
// came from, and `boincd status` shows it from there.
func (d *Daemon) logSettings() {
	var b strings.Builder
	type row struct{ name, value, source string }
	var rows []row
	defaults := ccconfig.DefaultOptions()
	for _, name := range optionNames {
		v, src := d.cc.eff.settingText(name)
		// The Manager writes every option into the cc_config.xml it
		// saves, at its default: only a value that changes something
		// is worth a line.
		if src == fromDefault || (src == fromCC && v == optionText(&defaults, name)) {
			continue
		}
		rows = append(rows, row{name, v, src})
		fmt.Fprintf(&b, "%s=%s(%s);", name, v, src)
	}
	if b.String() == d.cc.shown {
		return
	}
	d.cc.shown = b.String()
	d.log.Info("config sources", slog.Int("set", len(rows)),
		slog.String("files", d.opt.ConfigPath+", "+filepath.Join(d.opt.DataDir, CCConfigFile)))
	for _, r := range rows {
		d.log.Info("config setting", slog.String("name", r.name), slog.String("value", r.value), slog.String("source", r.source))
	}
}

// stallTimeout is http_transfer_timeout, unless the daemon's options
// (tests) shorten it and cc_config.xml leaves it alone.
func (d *Daemon) stallTimeout() time.Duration {
	if d.opt.HTTPStallTimeout > 0 && d.cc.eff.source["http_transfer_timeout"] == fromDefault {
		return d.opt.HTTPStallTimeout
	}
	return time.Duration(d.cc.eff.HTTPTransferTimeout * float64(time.Second))
}

// hostNCPUs is the number of CPUs the client acts as if it had: ncpus,
// else the probed count (CLIENT_STATE::set_ncpus).
func (d *Daemon) hostNCPUs() int {
	if n := d.cc.eff.NCPUs; n > 0 {
		return n
	}
	return d.host.PNCPUs
}

// reportedHost is the host as projects and GUIs see it: ncpus replaces
// the CPU count, suppress_net_info leaves out the domain name and IP
// address (HOST_INFO::write with suppress_net_info), and the container
// engine found is named unless dont_use_docker (docker.go).
func (d *Daemon) reportedHost() boinc.Host {
	h := d.host
	h.PNCPUs = d.hostNCPUs()
	if d.cc.eff.SuppressNetInfo {
		h.DomainName, h.IPAddr = "", ""
	}
	if e, ok := d.containerEngine(); ok {
		h.DockerVersion, h.DockerType = e.Version, int(e.Type)
	}
	return h
}

// xferLimits are max_file_xfers and max_file_xfers_per_project.
func (d *Daemon) xferLimits() (total, perProject int) {
	return max(d.cc.eff.MaxFileXfers, 1), max(d.cc.eff.MaxFileXfersPerProject, 1)
}

// statsDays is how many days of statistics are kept (save_stats_days).
func (d *Daemon) statsDays() int {
	if n := d.cc.eff.SaveStatsDays; n > 0 {
		return n
	}
	return saveStatsDays
}

// recHalfLife is rec_half_life_days in seconds.
func (d *Daemon) recHalfLife() float64 {
	if h := d.cc.eff.RECHalfLifeDays; h > 0 {
		return h * 86400
	}
	return workfetch.RECHalfLife
}

// initialDelay reports whether start_delay still holds tasks back.
func (d *Daemon) initialDelay(now time.Time) bool {
	return d.cc.eff.StartDelay > 0 && now.Sub(d.startTime).Seconds() < d.cc.eff.StartDelay
}

// minimalWork applies fetch_minimal_work to a work request: one job per
// instance of each resource asked for, and only while the client has
// neither had nor asked for work this run (WORK_FETCH::choose_project and
// RSC_WORK_FETCH::set_request).
func (d *Daemon) minimalWork(req workfetch.Request) workfetch.Request {
	if !d.cc.eff.FetchMinimalWork || req.Project < 0 {
		return req
	}
	if d.cc.hadWork {
		return workfetch.Request{Project: -1, Reason: "fetch_minimal_work: work was already requested"}
	}
	h := d.coreHost()
	for r := range workfetch.NumRsc {
		if req.Secs[r] > 0 || req.Instances[r] > 0 {
			req.Secs[r], req.Instances[r] = 1, h.Instances[r]
		}
	}
	return req
}

// notedWork records that work was asked for or is at hand.
func (d *Daemon) notedWork(req workfetch.Request) {
	if req.Project >= 0 && req.WorkReqSeconds() > 0 {
		d.cc.hadWork = true
	}
}

// updateRequest is the work asked for on a scheduler request made for
// another reason. With fetch_on_update a user's update asks the project
// for work whenever it has a shortfall, without regard to projects of
// higher priority (WORK_FETCH::piggyback_work_request).
func (d *Daemon) updateRequest(p *boinc.Project, reason boinc.RPCReason, now time.Time) workfetch.Request {
	if reason != boinc.RPCUserReq || !d.cc.eff.FetchOnUpdate {
		return d.minimalWork(d.piggybackRequest(p, now))
	}
	d.buildCore(now)
	c := d.core
	i, ok := c.index[p.MasterURL]
	if !ok {
		return workfetch.Request{Project: -1}
	}
	sim := workfetch.SimResult{Rsc: c.sim.Rsc}
	if i < len(c.sim.Projects) {
		sim.Projects = c.sim.Projects[i : i+1]
	}
	prio := []float64{0}
	if i < len(c.prio) {
		prio[0] = c.prio[i]
	}
	req := workfetch.RequestFor(0, now, d.coreHost(), d.corePrefs(), c.projects[i:i+1], &sim, prio)
	if req.Project == 0 {
		req.Project = i
	}
	return d.minimalWork(req)
}

// exclusiveScanned is a process scan's result.
type exclusiveScanned struct {
	at       time.Time
	cpu, gpu string // the exclusive app (GPU app) found, "" none
	err      error
}

// maybeScanExclusive starts a process scan for exclusive apps when one is
// due, off the owner goroutine (the process list of a busy host takes a
// while to read).
func (d *Daemon) maybeScanExclusive(now time.Time) {
	cpu, gpu := d.cc.eff.ExclusiveApps, d.cc.eff.ExclusiveGPUApps
	if (len(cpu) == 0 && len(gpu) == 0) || d.cc.exclBusy || now.Before(d.cc.exclNext) {
		return
	}
	d.cc.exclBusy, d.cc.exclNext = true, now.Add(d.exclusiveScanPeriod())
	cpu, gpu = slices.Clone(cpu), slices.Clone(gpu)
	ctx := d.ctx
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		procs, err := hostcond.Processes(ctx)
		ev := exclusiveScanned{at: time.Now(), err: err}
		if err == nil {
			ev.cpu = hostcond.ExclusiveRunning(procs, cpu)
			ev.gpu = hostcond.ExclusiveRunning(procs, gpu)
		}
		d.send(ev)
	}()
}

func (d *Daemon) exclusiveScanPeriod() time.Duration {
	if d.opt.PollInterval < time.Second {
		return 5 * d.opt.PollInterval // tests
	}
	return hostcond.ExclusiveScanPeriod
}

func (d *Daemon) handleExclusiveScanned(ev exclusiveScanned) {
	d.cc.exclBusy = false
	if ev.err != nil {
		if !d.cc.exclWarned {
			d.cc.exclWarned = true
			d.log.Warn("cannot read the process list; exclusive_app and exclusive_gpu_app are not checked", slog.Any("err", ev.err))
		}
		return
	}
	for _, x := range []struct {
		e    *hostcond.Exclusive
		name string
		kind string
	}{{&d.cc.excl, ev.cpu, "exclusive app"}, {&d.cc.exclGPU, ev.gpu, "exclusive GPU app"}} {
		if x.name != x.e.Running {
			if x.name != "" {
				d.log.Info(x.kind+" is running", slog.String("app", x.name))
			} else {
				d.log.Info(x.kind+" has ended", slog.String("app", x.e.Running))
			}
		}
		x.e.Observe(ev.at, x.name)
	}
}

// trimTaskOutputs keeps running tasks' stderr.txt and stdout.txt within
// max_stderr_file_size and max_stdout_file_size: a file over its limit
// keeps its last half limit of bytes, where an app's latest errors are.
func (d *Daemon) trimTaskOutputs(now time.Time) {
	errMax, outMax := int64(d.cc.eff.MaxStderrFileSize), int64(d.cc.eff.MaxStdoutFileSize)
	if (errMax <= 0 && outMax <= 0) || now.Before(d.cc.trimNext) {
		return
	}
	d.cc.trimNext = now.Add(10 * d.opt.PollInterval)
	for key := range d.active {
		r := d.st.results[key]
		if r == nil || r.Slot < 0 {
			continue
		}
		dir := filepath.Join(d.opt.DataDir, "slots", strconv.Itoa(r.Slot))
		for _, f := range []struct {
			name string
			max  int64
		}{{"stderr.txt", errMax}, {"stdout.txt", outMax}} {
			if f.max <= 0 {
				continue
			}
			n, err := trimToTail(filepath.Join(dir, f.name), f.max)
			if err != nil {
				d.taskLog(r).Warn("cannot trim "+f.name, slog.Any("err", err))
			} else if n > 0 {
				d.taskLog(r).Info(f.name+" over its size limit; kept its end", slog.Int64("limit_bytes", f.max), slog.Int64("dropped_bytes", n))
			}
		}
	}
}

// trimToTail cuts path to its last limit/2 bytes when it is longer than
// limit, in place (the app keeps appending to the same file); it returns
// how many bytes it dropped.
func trimToTail(path string, limit int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() <= limit {
		return 0, err
	}
	keep := limit / 2
	buf := make([]byte, keep)
	if _, err := f.ReadAt(buf, st.Size()-keep); err != nil && err != io.EOF {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Truncate(keep); err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return st.Size() - keep, nil
}

// abortJobsOnExit is abort_jobs_on_exit: at exit every task not yet
// finished is aborted, so the next run reports it to its project at once
// instead of leaving it to the deadline.
func (d *Daemon) abortJobsOnExit(now time.Time) {
	if !d.cc.eff.AbortJobsOnExit {
		return
	}
	n := 0
	for _, r := range d.st.sortedResults() {
		if !r.Phase.Unfinished() {
			continue
		}
		delete(d.active, r.Key()) // already stopped by shutdown
		r.PID = 0
		d.cleanTaskSlot(r)
		if err := r.Fail(boinc.PhaseAborted, boinc.ExitAbortedByClient, "aborted on exit (abort_jobs_on_exit)", now); err != nil {
			d.taskLog(r).Warn("cannot abort task", slog.Any("err", err))
			continue
		}
		r.ReportImmediately = true
		d.batch.PutResult(r)
		n++
	}
	if n > 0 {
		d.log.Info("tasks aborted on exit (abort_jobs_on_exit); they are reported at the next start", slog.Int("tasks", n))
	}
}
