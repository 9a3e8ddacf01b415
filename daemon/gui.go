package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

// oldResultsKept bounds the list get_old_results shows (acknowledged
// results since the daemon started).
const oldResultsKept = 100

// projectNames maps URLs to names for the event log, which reads it from
// GUI RPC goroutines; the one lock in the daemon, guarding a value that
// only the owner goroutine writes.
type projectNames struct {
	mu sync.RWMutex
	m  map[string]string
}

func (n *projectNames) set(url, name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.m == nil {
		n.m = map[string]string{}
	}
	n.m[url] = name
}

func (n *projectNames) get(url string) string {
	n.mu.RLock()
	defer n.mu.RUnlock()
	return n.m[url]
}

// startGUIRPC opens the GUI RPC listener that boinccmd, BOINC Manager and
// boinctui use. A failure (port taken) is logged and the daemon runs on
// without it: computing matters more than the remote control.
func (d *Daemon) startGUIRPC(ctx context.Context) {
	addr := d.cfg.GUIRPC.Address
	if d.opt.GUIRPCAddr != "" {
		addr = d.opt.GUIRPCAddr
	}
	if addr == "" || addr == "off" {
		return
	}
	pass, err := guirpc.OpenPassword(d.opt.DataDir, d.log)
	if err != nil {
		d.log.Error("GUI RPC disabled: cannot read or create the password file", slog.Any("err", err))
		return
	}
	hosts, err := guirpc.LoadRemoteHosts(d.opt.DataDir)
	if err != nil {
		d.log.Warn("remote_hosts.cfg ignored", slog.Any("err", err))
	}
	hosts = append(hosts, d.cfg.GUIRPC.AllowHosts...)
	srv, err := guirpc.Listen(guirpc.Config{
		Addr:        addr,
		AllowRemote: d.cc.eff.AllowRemoteGUIRPC, // boincd.toml, else cc_config.xml; at start only, as the C++ client
		AllowHosts:  hosts,
		Password:    pass,
		Backend:     rpcBackend{d},
		Log:         d.elog,
		Logger:      d.opt.Logger.With(slog.String("component", "guirpc")),
	})
	if err != nil {
		d.log.Error("GUI RPC disabled: cannot listen", slog.String("address", addr), slog.Any("err", err))
		return
	}
	d.guiAddr = srv.Addr().String()
	d.log.Info("GUI RPC listening", slog.String("address", d.guiAddr))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
			d.log.Warn("GUI RPC server stopped", slog.Any("err", err))
		}
	}()
}

// GUIRPCAddr is the address GUI RPC listens on ("" before Run or when
// disabled); tests use it with port 0.
func (d *Daemon) GUIRPCAddr(ctx context.Context) (string, error) {
	var a string
	err := d.peek(ctx, func() { a = d.guiAddr })
	return a, err
}

// rpcBackend serves GUI RPC: every call runs on the owner goroutine.
type rpcBackend struct{ d *Daemon }

func (b rpcBackend) Snapshot(ctx context.Context, need guirpc.Parts) (*guirpc.State, error) {
	d := b.d
	var st *guirpc.State
	var walk diskWalk
	err := d.peek(ctx, func() {
		now := time.Now()
		st = d.guiState(now, need)
		if need&guirpc.PartDiskUsage != 0 || now.Sub(d.guiDisk.at) > diskUsageMaxAge {
			walk = d.newDiskWalk()
		}
	})
	if err != nil {
		return st, err
	}
	// File reads happen here, on the connection's goroutine, so the owner
	// loop goes on meanwhile: the override file (its path never changes)
	// and the disk walk.
	if need&guirpc.PartPrefsOverride != 0 {
		st.PrefsOverride = d.prefsOverride()
	}
	if walk.dataDir == "" {
		return st, nil
	}
	m := walk.measure()
	fillDiskUsage(st, &walk, &m)
	d.send(m)
	return st, nil
}

func (b rpcBackend) Do(ctx context.Context, a guirpc.Action) error {
	var res error
	if err := b.d.query(ctx, func() { res = b.d.doAction(a, time.Now()) }); err != nil {
		return err
	}
	return res
}

func (d *Daemon) doAction(a guirpc.Action, now time.Time) error {
	switch a := a.(type) {
	case guirpc.ProjectOp:
		if a.URL == "" {
			return guirpc.ErrMissingURL
		}
		return d.projectOp(a.URL, a.Op, now)
	case guirpc.ResultOp:
		return d.resultOp(a.URL, a.Name, a.Op, now)
	case guirpc.SetMode:
		return d.setMode(a.Which, a.Mode, time.Duration(a.Duration*float64(time.Second)), now)
	case guirpc.Attach:
		return d.attachFromGUI(a.URL, a.Authenticator, now)
	case guirpc.AttachPoll:
		if a.Out != nil {
			*a.Out = d.attachPollStatus(now)
		}
		return nil
	case guirpc.WebRPC:
		return d.startWebRPC(a)
	case guirpc.WebRPCPoll:
		if a.Out != nil {
			*a.Out = d.webRPCStatus(a.Kind)
		}
		return nil
	case guirpc.AcctMgrRPC, guirpc.AcctMgrPoll, guirpc.AcctMgrInfo:
		return d.acctMgrAction(a, now)
	case guirpc.TransferOp:
		return d.transferOp(a.URL, a.File, a.Op, now)
	case guirpc.SetPrefsOverride:
		return d.setPrefsOverride(a.XML)
	case guirpc.ReadPrefsOverride:
		d.rereadPrefs()
		d.fetchSoon(now)
		return nil
	case guirpc.ReadCCConfig:
		d.reloadConfig(now)
		return nil
	case guirpc.RunBenchmarks:
		d.startBenchmarks("requested by user")
		return nil
	case guirpc.NetworkAvailable:
		d.retryNetworkNow(now)
		return nil
	case guirpc.SetProxy, guirpc.SetHostInfo, guirpc.ResetHostInfo, guirpc.ReadConfigFile,
		guirpc.WriteConfigFile, guirpc.SetLanguage, guirpc.ReportDeviceStatus:
		return d.settingsAction(a, now)
	case guirpc.Quit:
		d.log.Info("quit requested over GUI RPC")
		d.stop()
		return nil
	}
	return fmt.Errorf("unsupported operation %T", a)
}

type benchDone struct{ fpops, iops float64 }

// startBenchmarks runs the CPU benchmarks off the owner goroutine; why
// goes to the log. Computing is suspended until benchDone
// (suspendReasons).
func (d *Daemon) startBenchmarks(why string) {
	if d.benchRunning {
		return
	}
	d.benchRunning = true
	n, dur := d.host.PNCPUs, d.opt.BenchmarkDuration
	if dur <= 0 {
		dur = time.Second
	}
	d.log.Info("running CPU benchmarks", slog.String("why", why), slog.Int("cpus", n))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		f, i := coproc.Benchmark(d.ctx, n, dur)
		d.send(benchDone{f, i})
	}()
}

func (d *Daemon) handleBenchDone(ev benchDone, now time.Time) {
	d.benchRunning = false
	old := d.host.PFpops
	if d.host.PCalculated == 0 {
		// The placeholder of a first start was never measured: the
		// DCFs were not learnt against it.
		old = 0
	}
	d.rescaleDCFs(old, ev.fpops)
	d.host.PFpops, d.host.PIops = ev.fpops, ev.iops
	d.host.PCalculated = float64(now.Unix())
	d.batch.PutMeta("host", &d.host)
	d.log.Info("CPU benchmarks done", slog.Int("cpus", d.host.PNCPUs), slog.Float64("fpops_per_cpu", ev.fpops), slog.Float64("iops_per_cpu", ev.iops))
	// The first benchmarks were what held the scheduler RPCs back.
	d.fetchSoon(now)
}

// rescaleDCFs keeps run-time estimates steady across a change of
// benchmark: estimates divide by p_fpops, so every project's duration
// correction factor moves with it (scale_duration_correction_factors).
func (d *Daemon) rescaleDCFs(oldFpops, newFpops float64) {
	f := coproc.ScaleDCF(oldFpops, newFpops)
	if f == 1 {
		return
	}
	for url, p := range d.st.projects {
		if p.DontUseDCF {
			continue
		}
		st := d.schedState(url)
		st.DCF *= f
		d.saveSchedState(url)
	}
}

// benchmarksDue: the C++ client reruns its benchmarks every 5 days.
func (d *Daemon) benchmarksDue(now time.Time) bool {
	return d.opt.BenchmarkDuration >= 0 && !d.cc.eff.SkipCPUBenchmarks && d.host.PCalculated > 0 &&
		now.Sub(time.Unix(int64(d.host.PCalculated), 0)) > benchmarkPeriod
}

const benchmarkPeriod = 5 * 24 * time.Hour

// retryNetworkNow is "network available": deferred transfers and failed
// scheduler requests are tried at once.
func (d *Daemon) retryNetworkNow(now time.Time) {
	for _, f := range d.st.files {
		if f.Xfer.NextRequestTime.After(now) {
			f.Xfer.NextRequestTime = time.Time{}
			d.batch.PutFile(f)
		}
	}
	for _, p := range d.st.projects {
		if p.RPCFailures > 0 && p.MinRPCTime.After(now) {
			p.MinRPCTime = time.Time{}
			d.batch.PutProject(p)
		}
	}
	d.log.Info("network available: retrying transfers and scheduler requests now")
}

// guiState is the snapshot GUI RPC read ops serve.
// guiState is the GUI's view of the client, with the costly parts (see
// guirpc.Parts) only when need names them.
func (d *Daemon) guiState(now time.Time, need guirpc.Parts) *guirpc.State {
	st := &guirpc.State{
		Now:               now,
		Host:              guirpc.HostInfo{Host: d.reportedHost(), Coprocs: d.guiCoprocs()},
		Prefs:             guiPrefs(d.prefs, d.hostc.prefs),
		DailyXfers:        d.guiDailyXfers(),
		Proxy:             *d.proxy.Load(),
		PlatformName:      d.primaryPlatform(),
		Platforms:         append([]string{d.primaryPlatform()}, d.altPlatforms()...),
		ExecutingAsDaemon: true,
		OldResults:        append([]guirpc.OldResult(nil), d.oldResults...),
	}
	st.CCStatus = guirpc.CCStatus{
		NetworkStatus:    2,
		TaskMode:         d.modes.Run.Current(now),
		TaskModePerm:     permOrAuto(d.modes.Run.Perm),
		TaskModeDelay:    d.modes.Run.Delay(now),
		GPUMode:          d.modes.GPU.Current(now),
		GPUModePerm:      permOrAuto(d.modes.GPU.Perm),
		GPUModeDelay:     d.modes.GPU.Delay(now),
		NetworkMode:      d.modes.Network.Current(now),
		NetworkModePerm:  permOrAuto(d.modes.Network.Perm),
		NetworkModeDelay: d.modes.Network.Delay(now),
	}
	cpu, gpu, network := d.suspendReasons(now)
	st.CCStatus.TaskSuspendReason = int(cpu)
	st.CCStatus.GPUSuspendReason = int(gpu)
	st.CCStatus.NetworkSuspendReason = int(network)
	st.CCStatus.Health = d.healthWarnings()
	up := now.Sub(d.startTime).Seconds()
	st.TimeStats = guirpc.TimeStats{
		OnFrac: 1, ConnectedFrac: -1, CPUAndNetworkAvailableFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1,
		ClientStartTime: d.startTime, TotalStartTime: d.startTime, TotalDuration: up,
		TotalActiveDuration: up, TotalGPUActiveDuration: up, SessionActiveDuration: up, SessionGPUActiveDuration: up,
	}
	st.NetStats = guiNetStats(d.netStats)
	projects := d.st.sortedProjects()
	prio := d.guiPriorities(projects)
	for i, p := range projects {
		work := *d.schedState(p.MasterURL)
		pi := guirpc.ProjectInfo{
			Project:                *p,
			Work:                   work,
			EmailHash:              p.EmailHash,
			ExternalCPID:           p.ExternalCPID,
			CPIDTime:               p.CPIDTime,
			UserCreateTime:         p.UserCreateTime,
			HostCreateTime:         p.HostCreateTime,
			REC:                    work.REC,
			RECTime:                secsTime(work.RECTime),
			NJobsSuccess:           p.NJobsSuccess,
			NJobsError:             p.NJobsError,
			ElapsedTime:            p.ElapsedTime,
			DiskUsage:              d.guiDisk.projects[p.MasterURL],
			SchedulerRPCInProgress: d.rpc != nil && d.rpc.project == p.MasterURL,
			TricklePending:         p.TrickleUpPending,
			DetachWhenDone:         p.DetachWhenDone,
			AttachedViaAcctMgr:     p.Origin == originAcctMgr,
			AnonymousPlatform:      d.anonymous(p.MasterURL),
			ProjectDir:             d.projectDir(p.MasterURL),
			SchedPriority:          prio[i],
			Statistics:             d.guiStatistics(p.MasterURL),
		}
		st.Projects = append(st.Projects, pi)
	}
	st.DiskUsage.Total, st.DiskUsage.Free = d.host.DTotal, d.host.DFree

	for _, a := range sortedValues(d.st.apps) {
		st.Apps = append(st.Apps, *a)
	}
	for _, v := range sortedValues(d.st.versions) {
		st.AppVersions = append(st.AppVersions, *d.effectiveVersion(v))
	}
	if need&guirpc.PartWorkunits != 0 {
		st.Workunits = make([]boinc.Workunit, 0, len(d.st.wus))
		for _, w := range sortedValues(d.st.wus) {
			st.Workunits = append(st.Workunits, *w)
		}
	}
	if need&guirpc.PartResults != 0 {
		d.guiResults(st, now)
	}
	if need&guirpc.PartTransfers != 0 {
		st.Transfers = d.guiTransfers(now)
	}
	return st
}

// guiResults adds every task to st.
func (d *Daemon) guiResults(st *guirpc.State, now time.Time) {
	edf := map[string]bool{}
	for _, a := range d.core.dec.Run {
		if a.EDF && a.Task < len(d.core.taskJob) {
			if j := d.core.taskJob[a.Task]; j < len(d.core.jobKeys) {
				edf[d.core.jobKeys[j]] = true
			}
		}
	}
	sorted := d.st.sortedResults()
	st.Results = make([]guirpc.ResultInfo, 0, len(sorted))
	for _, r := range sorted {
		ri := guirpc.ResultInfo{Result: *r, EDFScheduled: len(edf) > 0 && edf[r.Key()]}
		if r.Phase.Unfinished() {
			ri.EstimatedRemaining = d.estimateRemaining(r)
		}
		if r.Phase == boinc.PhaseComputing {
			at := &guirpc.ActiveTask{
				Slot: r.Slot, PID: r.PID, CheckpointCPUTime: r.CheckpointCPUTime,
				FractionDone: r.FractionDone, CPUTime: r.CurrentCPUTime, ElapsedTime: r.ElapsedTime,
				WorkingSet: r.PeakWorkingSet, WorkingSetSmooth: r.PeakWorkingSet,
				SchedulerState: int(boinc.SchedPreempted),
			}
			if a := d.active[r.Key()]; a != nil {
				at.ElapsedTime = a.elapsed(now)
				at.SwapSize = a.swapSize
				switch {
				case a.overLimit:
					at.ActiveState, at.SchedulerState = int(boinc.TaskAbortPending), int(boinc.SchedScheduled)
				case a.suspended:
					at.ActiveState = int(boinc.TaskSuspended)
				default:
					at.ActiveState, at.SchedulerState = int(boinc.TaskExecuting), int(boinc.SchedScheduled)
				}
			}
			if at.ElapsedTime > 0 {
				at.ProgressRate = at.FractionDone / at.ElapsedTime
			}
			ri.Active = at
		}
		st.Results = append(st.Results, ri)
	}
}

func (d *Daemon) guiTransfers(now time.Time) []guirpc.TransferInfo {
	var out []guirpc.TransferInfo
	add := func(f *boinc.FileInfo, upload bool) {
		p := d.st.projects[f.ProjectURL]
		name := f.ProjectURL
		if p != nil {
			name = p.DisplayName()
		}
		ti := guirpc.TransferInfo{
			ProjectURL: f.ProjectURL, ProjectName: name, Name: f.Name, NBytes: f.NBytes, MaxNBytes: f.MaxNBytes,
			Status: f.Status, Upload: upload, NumRetries: f.Xfer.NumRetries,
			FirstRequestTime: f.Xfer.FirstRequestTime, NextRequestTime: f.Xfer.NextRequestTime,
		}
		// A compressed download shows the .gz's size and progress, as
		// FILE_INFO::write_gui writes gzipped_nbytes for nbytes. Which
		// URL is being tried is the one the last attempt ended on
		// (f.Xfer.URLIndex): the gzipped ones come first.
		gz := !upload && f.Xfer.URLIndex < len(f.GzippedURLs)
		if gz && f.GzippedNBytes > 0 {
			ti.NBytes = f.GzippedNBytes
		}
		if _, busy := d.xfers[f.Key()]; busy {
			ti.Active = true
			if !upload {
				path := d.filePath(f)
				if gz {
					path = rpcclient.GzipPartPath(path)
				}
				if fi, err := os.Stat(path); err == nil {
					ti.BytesXferred = float64(fi.Size())
				}
			}
		}
		out = append(out, ti)
	}
	seen := map[string]bool{}
	for _, r := range d.st.sortedResults() {
		switch r.Phase {
		case boinc.PhaseNew, boinc.PhaseDownloading:
			for _, f := range d.st.inputFiles(r) {
				if f.Status == boinc.FileNotPresent && !seen[f.Key()] {
					seen[f.Key()] = true
					add(f, false)
				}
			}
		case boinc.PhaseUploading:
			for _, f := range d.st.outputFiles(r) {
				if f.IsUpload() && !f.Uploaded && !seen[f.Key()] {
					seen[f.Key()] = true
					add(f, true)
				}
			}
		}
	}
	return out
}

// guiPriorities is each project's sched_priority on the C++ client's
// scale (workfetch.RECPriority): boincd ranks projects by debt, in
// seconds, which the GUIs would show as a meaningless -9527; they expect
// REC's -1 for "got its share", 0 for "owed everything".
func (d *Daemon) guiPriorities(projects []*boinc.Project) []float64 {
	rec := make([]float64, len(projects))
	share := make([]float64, len(projects))
	eligible := make([]bool, len(projects))
	for i, p := range projects {
		rec[i] = d.schedState(p.MasterURL).REC
		share[i] = p.ResourceShare
		eligible[i] = !p.Suspended
	}
	return workfetch.RECPriority(rec, share, eligible, nil)
}

// secsTime is a Unix-seconds value as a time, 0 as the zero time.
func secsTime(s float64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(s*1e9))
}

// rememberOldResult records an acknowledged result for get_old_results.
func (d *Daemon) rememberOldResult(r *boinc.Result, now time.Time) {
	app := ""
	if wu := d.st.wuOf(r); wu != nil {
		app = wu.AppName
	}
	d.oldResults = append(d.oldResults, guirpc.OldResult{
		ProjectURL: r.ProjectURL, ResultName: r.Name, AppName: app, ExitStatus: r.ExitStatus,
		ElapsedTime: r.FinalElapsedTime, CPUTime: r.FinalCPUTime, CompletedTime: r.CompletedTime, CreateTime: now,
	})
	if n := len(d.oldResults); n > oldResultsKept {
		d.oldResults = append(d.oldResults[:0], d.oldResults[n-oldResultsKept:]...)
	}
}

func permOrAuto(m int) int {
	if m == 0 {
		return ModeAuto
	}
	return m
}

// sortedValues lists m's values in the order of their keys (each map of
// the client state is keyed by its values' Key()).
func sortedValues[T any](m map[string]*T) []*T {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]*T, len(keys))
	for i, k := range keys {
		out[i] = m[k]
	}
	return out
}
