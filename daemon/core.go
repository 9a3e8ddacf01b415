package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

// debtAdjustPeriod is how often long-term debts are brought up to date
// (the C++ client's DEBT_ADJUST_PERIOD); longer gaps (a suspended laptop)
// are not counted.
const debtAdjustPeriod = 60 * time.Second

// core holds the inputs and outputs of the pure scheduling core
// (workfetch + schedule), rebuilt from the client state on every pass.
// Its slices are reused, so a steady daemon allocates little per second.
type core struct {
	policy workfetch.Policy

	urls     []string       // project index → master URL
	index    map[string]int // master URL → project index
	projects []workfetch.Project
	jobs     []workfetch.Job
	jobKeys  []string // job index → result key
	sim      workfetch.SimResult
	prio     []float64
	shares   []float64
	in       schedule.Input
	dec      schedule.Decision
	sched    schedule.Scheduler
	taskJob  []int // schedule task index → job index

	// app_config.xml's limits: appIDs numbers the apps that have a
	// max_concurrent (Job.App), projMax is each project's
	// project_max_concurrent.
	appIDs  map[appKey]int
	projMax []int

	// used accumulates instance-seconds per project since the last debt
	// update, keyed by URL so detaches in between do no harm.
	used     map[string]*[workfetch.NumRsc]float64
	lastDebt time.Time
	// notFetching remembers the last logged reason per project/resource.
	notFetching map[string]string
}

func newCore() *core {
	return &core{
		policy:      workfetch.DebtPolicy{},
		index:       map[string]int{},
		appIDs:      map[appKey]int{},
		used:        map[string]*[workfetch.NumRsc]float64{},
		notFetching: map[string]string{},
	}
}

// schedState returns a project's persisted core state, creating it.
func (d *Daemon) schedState(url string) *workfetch.ProjectState {
	st := d.sched[url]
	if st == nil {
		st = &workfetch.ProjectState{DCF: 1}
		d.sched[url] = st
	}
	return st
}

func schedMetaKey(url string) string { return "sched:" + url }

func (d *Daemon) saveSchedState(url string) {
	if st := d.sched[url]; st != nil {
		d.batch.PutMeta(schedMetaKey(url), st)
	}
}

func (d *Daemon) loadSchedStates(meta map[string][]byte) {
	for url := range d.st.projects {
		if b, ok := meta[schedMetaKey(url)]; ok {
			st := &workfetch.ProjectState{}
			if err := json.Unmarshal(b, st); err == nil {
				if st.DCF <= 0 {
					st.DCF = 1
				}
				d.sched[url] = st
			}
		}
	}
}

func (d *Daemon) coreHost() workfetch.Host {
	var h workfetch.Host
	h.Instances[workfetch.CPU] = float64(d.usableCPUs())
	h.RelSpeed[workfetch.CPU] = 1
	h.CPUAvail, h.GPUAvail = 1, 1
	d.addGPUs(&h)
	return h
}

func (d *Daemon) corePrefs() workfetch.Prefs {
	return workfetch.Prefs{
		BufMin:        d.prefs.WorkBufMinDays * 86400,
		BufAdditional: d.prefs.WorkBufAdditionalDays * 86400,
	}
}

// resultRsc is the resource a task uses and how much of it, after
// app_config.xml (gpu_versions, app_version avg_ncpus and ngpus).
func (d *Daemon) resultRsc(r *boinc.Result) (rsc workfetch.Rsc, ncpus, ngpus float64) {
	ncpus = 1
	v := d.st.versionOf(r)
	if v == nil {
		return workfetch.CPU, ncpus, 0
	}
	nc, ng := d.versionUsage(v)
	if nc > 0 {
		ncpus = nc
	}
	if ng > 0 {
		if g, ok := workfetch.RscByName(v.Coproc.Type); ok && g.IsGPU() {
			return g, ncpus, ng
		}
	}
	return workfetch.CPU, ncpus, 0
}

// appKey names one app of one project.
type appKey struct{ url, app string }

// limitGroup is the max_concurrent group of r's app for the core
// (workfetch.Job.App, schedule.Task.App: numbered from 1 per pass) and
// its limit; 0, 0 when its app has none.
func (d *Daemon) limitGroup(r *boinc.Result) (app, limit int) {
	if d.appConfig(r.ProjectURL) == nil {
		return 0, 0
	}
	name := d.resultApp(r)
	limit = d.appLimit(r.ProjectURL, name)
	if limit <= 0 {
		return 0, 0
	}
	k := appKey{r.ProjectURL, name}
	app, ok := d.core.appIDs[k]
	if !ok {
		app = len(d.core.appIDs) + 1
		d.core.appIDs[k] = app
	}
	return app, limit
}

// estimateDuration is the static estimate of a task's run time, corrected
// by the project's duration correction factor.
func (d *Daemon) estimateDuration(r *boinc.Result) float64 {
	est := d.estimateUncorrected(r)
	if p := d.st.projects[r.ProjectURL]; p != nil && !p.DontUseDCF {
		if st := d.sched[r.ProjectURL]; st != nil && st.DCF > 0 {
			est *= st.DCF
		}
	}
	return est
}

func (d *Daemon) estimateUncorrected(r *boinc.Result) float64 {
	wu, v := d.st.wuOf(r), d.st.versionOf(r)
	if wu == nil {
		return 3600
	}
	flops := 0.0
	if v != nil {
		flops = v.Flops
		if flops <= 0 {
			flops = d.host.PFpops * math.Max(v.AvgNCPUs, 1)
		}
	}
	if flops <= 0 {
		flops = 1e9
	}
	return wu.RscFpopsEst / flops
}

// estimateRemaining blends the static estimate with the one implied by
// the task's progress (SCHEDULING.md §5).
// With app_config.xml's fraction_done_exact for its app, the fraction
// done alone gives it, as in the C++ client.
func (d *Daemon) estimateRemaining(r *boinc.Result) float64 {
	return workfetch.Remaining(d.estimateDuration(r), r.ElapsedTime, r.FractionDone, r.ElapsedTime, d.fractionDoneExact(r))
}

// noFetchReason says why p may not be asked for work at all, or "".
func (d *Daemon) noFetchReason(p *boinc.Project, now time.Time) string {
	switch {
	case p.Suspended:
		return "project is suspended"
	case p.DetachPending:
		return "project is being detached"
	case p.NoNewTasks:
		return "no new tasks (set by the volunteer)"
	case p.Ended:
		return "project has ended"
	case len(p.SchedulerURLs) == 0:
		return "scheduler URL not known yet"
	case now.Before(p.MinRPCTime):
		return backoffReason + p.MinRPCTime.Format(time.RFC3339)
	case now.Before(p.TaskBackoffUntil):
		return taskBackoffReason + p.TaskBackoffUntil.Format(time.RFC3339)
	case d.health.diskFull:
		return "disk limit reached (disk_max_used_gb / disk_max_used_pct / disk_min_free_gb)"
	}
	return ""
}

// buildCore fills the core's inputs from the client state.
func (d *Daemon) buildCore(now time.Time) {
	c := d.core
	c.urls = c.urls[:0]
	clear(c.index)
	c.projects = c.projects[:0]
	c.shares = c.shares[:0]
	c.projMax = c.projMax[:0]
	clear(c.appIDs)
	estimated := d.st.projectsWithVersions()
	for _, p := range d.st.sortedProjects() {
		c.index[p.MasterURL] = len(c.urls)
		c.urls = append(c.urls, p.MasterURL)
		wp := workfetch.Project{
			Name:         p.DisplayName(),
			Share:        p.ResourceShare,
			State:        *d.schedState(p.MasterURL),
			NoFetch:      d.noFetchReason(p, now),
			Suspended:    p.Suspended || p.DetachPending,
			NoNewTasks:   p.NoNewTasks,
			InRPCBackoff: now.Before(p.MinRPCTime),
			Unestimated:  !estimated[p.MasterURL],
			// app_config.xml's limits, so the simulation runs only what
			// may run and work fetch does not ask for work that would
			// wait on them.
			MaxConcurrent: d.projectLimit(p.MasterURL),
		}
		noRsc := p.NoRscApps
		if ap := d.anon[p.MasterURL]; ap != nil {
			// PROJECT::check_no_apps: an anonymous platform project is
			// asked only for the processor types app_info.xml's
			// versions use, whatever its no_rsc_apps says.
			noRsc = nil
			for r := range workfetch.NumRsc {
				wp.NoRsc[r] = !ap.rsc[r]
			}
		}
		for _, name := range slices.Concat(noRsc, p.AMNoRsc) {
			if r, ok := workfetch.RscByName(name); ok {
				wp.NoRsc[r] = true
			}
		}
		if d.gpuExcludedFor(p.MasterURL) {
			wp.NoRsc[workfetch.NVIDIA] = true
		}
		c.projects = append(c.projects, wp)
		c.shares = append(c.shares, p.ResourceShare)
		c.projMax = append(c.projMax, wp.MaxConcurrent)
	}
	c.jobs = c.jobs[:0]
	c.jobKeys = c.jobKeys[:0]
	for _, r := range d.st.sortedResults() {
		if !r.Phase.Unfinished() {
			continue
		}
		pi, ok := c.index[r.ProjectURL]
		if !ok {
			continue
		}
		rsc, ncpus, ngpus := d.resultRsc(r)
		runnable, _ := d.runnable(r, now)
		app, appMax := d.limitGroup(r)
		c.jobs = append(c.jobs, workfetch.Job{
			App: app, AppMax: appMax,
			Project: pi, Rsc: rsc, NCPUs: ncpus, NGPUs: ngpus,
			Remaining: d.estimateRemaining(r),
			Deadline:  r.ReportDeadline,
			Runnable:  runnable || r.Phase == boinc.PhaseNew || r.Phase == boinc.PhaseDownloading,
			Received:  r.ReceivedTime,
			Estimate:  d.estimateDuration(r),
		})
		c.jobKeys = append(c.jobKeys, r.Key())
	}
	h, prefs := d.coreHost(), d.corePrefs()
	if len(c.prio) != len(c.projects) {
		c.prio = c.policy.Priorities(c.projects, h, nil, c.prio[:0])
	}
	workfetch.Simulate(now, h, prefs, c.projects, c.jobs, c.prio, &c.sim)
	c.prio = c.policy.Priorities(c.projects, h, &c.sim, c.prio[:0])
}

// schedule runs the CPU/GPU schedule on the core's simulation and makes
// the processes match it: start, resume, suspend or quit.
func (d *Daemon) schedule(now time.Time) {
	d.buildCore(now)
	c := d.core
	in := &c.in
	in.Now = now
	in.Host = d.coreHost()
	in.Slice = time.Duration(d.prefs.CPUSchedulingPeriodMinutes * float64(time.Minute))
	in.Priority = c.prio
	in.Shares = c.shares
	in.ProjectMax = c.projMax
	in.Tasks = in.Tasks[:0]
	c.taskJob = c.taskJob[:0]
	for i, key := range c.jobKeys {
		r := d.st.results[key]
		if ok, _ := d.runnable(r, now); !ok || d.st.versionOf(r) == nil {
			continue
		}
		j := c.jobs[i]
		t := schedule.Task{
			Project: j.Project, Rsc: j.Rsc, NCPUs: j.NCPUs, NGPUs: j.NGPUs,
			Deadline: r.ReportDeadline, MissesDeadline: c.sim.MissesDeadline[i],
			Remaining: j.Remaining, Order: i,
			App: j.App, AppMax: j.AppMax,
		}
		if at := d.active[key]; at != nil && !at.suspended {
			t.Running = true
			t.RunStart = at.runStart
			t.LastCheckpoint = at.lastCheckpoint
			t.OnceRanEDF = at.ranEDF
		} else if r.Phase == boinc.PhaseComputing {
			t.Started = true
		}
		in.Tasks = append(in.Tasks, t)
		c.taskJob = append(c.taskJob, i)
	}
	c.sched.Schedule(in, &c.dec)

	want := make(map[string]bool, len(c.dec.Run))
	edf := make(map[string]bool, len(c.dec.Run))
	for _, a := range c.dec.Run {
		key := c.jobKeys[c.taskJob[a.Task]]
		want[key] = true
		edf[key] = a.EDF
	}
	keys := make([]string, 0, len(d.active))
	for k := range d.active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		at := d.active[key]
		if at.aborting || at.quitting || at.overLimit {
			continue
		}
		r := d.st.results[key]
		switch {
		case !want[key] && !at.suspended:
			d.preempt(r, at, now)
		case want[key] && at.suspended:
			if err := d.runner.Resume(key); err == nil {
				at.pausedSecs += now.Sub(at.suspendedAt).Seconds()
				at.suspended = false
				at.runStart = now
				d.taskLog(r).Info("task resumed")
			}
		}
	}
	for _, a := range c.dec.Run {
		key := c.jobKeys[c.taskJob[a.Task]]
		if _, ok := d.active[key]; ok {
			continue
		}
		d.startTask(d.st.results[key], d.gpuDevices(a.GPUs), now)
		if at := d.active[key]; at != nil {
			at.ranEDF = edf[key]
		}
	}
}

// preempt takes a task off its CPU. It is asked to quit (and will restart
// from its checkpoint) when it holds a GPU or has checkpointed and apps
// should not be left in memory; otherwise it is suspended in memory, so a
// task that never checkpointed loses nothing (SCHEDULING.md §1.6).
func (d *Daemon) preempt(r *boinc.Result, at *activeTask, now time.Time) {
	key := r.Key()
	rsc, _, _ := d.resultRsc(r)
	checkpointed := r.CheckpointCPUTime > 0 || !at.lastCheckpoint.IsZero()
	if rsc.IsGPU() || (checkpointed && !d.prefs.LeaveAppsInMemory) {
		if err := d.runner.Quit(key); err == nil {
			at.quitting = true
			d.taskLog(r).Info("task preempted: asked to quit; it resumes from its checkpoint")
		}
		return
	}
	if err := d.runner.Suspend(key); err == nil {
		at.suspended, at.suspendedAt = true, now
		d.taskLog(r).Info("task preempted: suspended in memory")
	}
}

// accountUsage adds the instance-seconds running tasks used over dt, and
// brings the debts up to date every debtAdjustPeriod.
func (d *Daemon) accountUsage(now time.Time, dt float64) {
	c := d.core
	for key, at := range d.active {
		if at.suspended || dt <= 0 {
			continue
		}
		r := d.st.results[key]
		if r == nil {
			continue
		}
		u := c.used[r.ProjectURL]
		if u == nil {
			u = new([workfetch.NumRsc]float64)
			c.used[r.ProjectURL] = u
		}
		rsc, ncpus, ngpus := d.resultRsc(r)
		if rsc.IsGPU() {
			u[rsc] += dt * ngpus
		} else {
			u[workfetch.CPU] += dt * ncpus
		}
	}
	if c.lastDebt.IsZero() {
		c.lastDebt = now
		return
	}
	period := now.Sub(c.lastDebt)
	if period < debtAdjustPeriod {
		return
	}
	c.lastDebt = now
	if period > 2*debtAdjustPeriod {
		clear(c.used)
		return // asleep or stopped: not time anyone was owed
	}
	d.buildCore(now)
	used := make([][workfetch.NumRsc]float64, len(c.projects))
	for i, url := range c.urls {
		if u := c.used[url]; u != nil {
			used[i] = *u
		}
	}
	workfetch.UpdateDebts(now, d.coreHost(), c.projects, c.jobs, used, period.Seconds())
	end := float64(now.UnixNano()) / 1e9
	for i, url := range c.urls {
		pc := d.counters(url)
		for r := range workfetch.NumRsc {
			pc.processing[r] += used[i][r]
		}
		st := d.schedState(url)
		st.Debt = c.projects[i].State.Debt
		workfetch.UpdateRECHalfLife(st, d.coreHost(), d.host.PFpops, used[i], end-period.Seconds(), end, d.recHalfLife())
		d.saveSchedState(url)
	}
	clear(c.used)
}

const (
	backoffReason     = "scheduler backoff until "
	taskBackoffReason = "recent tasks failed; backoff until "
)

// routineNoFetch: the reason is a backoff that passes by itself.
func routineNoFetch(why string) bool {
	return strings.HasPrefix(why, backoffReason) || strings.HasPrefix(why, taskBackoffReason) ||
		why == workfetch.WhyBackedOff
}

// chooseWork runs the work-fetch decision; it logs, once per change, why
// each project and resource is not asked for work.
func (d *Daemon) chooseWork(now time.Time) (*boinc.Project, workfetch.Request) {
	d.buildCore(now)
	c := d.core
	dec := workfetch.Choose(now, d.coreHost(), d.corePrefs(), c.projects, &c.sim, c.prio)
	seen := map[string]bool{}
	for _, nf := range dec.NotFetching {
		if nf.Project < 0 || nf.Project >= len(c.urls) {
			continue
		}
		url := c.urls[nf.Project]
		k := url + "\x00" + nf.Rsc.String()
		seen[k] = true
		if c.notFetching[k] != nf.Why {
			c.notFetching[k] = nf.Why
			// A backoff follows nearly every scheduler request (the
			// project's request delay): routine, so debug only, as the
			// C++ client shows it only under work_fetch_debug. Reasons
			// the volunteer can act on stay in the event log.
			level := slog.LevelInfo
			if routineNoFetch(nf.Why) {
				level = slog.LevelDebug
			}
			d.log.Log(context.Background(), level, "not requesting work", slog.String("project", url), slog.String("resource", nf.Rsc.String()), slog.String("reason", nf.Why))
		}
	}
	for k := range c.notFetching {
		if !seen[k] {
			delete(c.notFetching, k)
		}
	}
	if dec.Request.Project < 0 || dec.Request.Project >= len(c.urls) {
		return nil, dec.Request
	}
	return d.st.projects[c.urls[dec.Request.Project]], dec.Request
}

// piggybackRequest is the work to ask for on an RPC made for another
// reason.
func (d *Daemon) piggybackRequest(p *boinc.Project, now time.Time) workfetch.Request {
	d.buildCore(now)
	c := d.core
	i, ok := c.index[p.MasterURL]
	if !ok {
		return workfetch.Request{Project: -1}
	}
	return workfetch.RequestFor(i, now, d.coreHost(), d.corePrefs(), c.projects, &c.sim, c.prio)
}

// handleWorkReply updates per-resource backoffs after a successful reply.
func (d *Daemon) handleWorkReply(p *boinc.Project, req workfetch.Request, got [workfetch.NumRsc]int, reason boinc.RPCReason, now time.Time) {
	st := d.schedState(p.MasterURL)
	var jitter [workfetch.NumRsc]float64
	for i := range jitter {
		jitter[i] = d.uniform()
	}
	before := st.Backoff
	workfetch.HandleReply(st, req, got, reason, now, jitter)
	for r := range st.Backoff {
		b := &st.Backoff[r]
		if b.Until.After(now) && b.Until != before[r].Until {
			// Tests and the demo shorten the 600 s base; scale the delay.
			if d.opt.FetchBackoffMin != 600*time.Second {
				b.Until = now.Add(time.Duration(float64(b.Until.Sub(now)) * d.opt.FetchBackoffMin.Seconds() / 600))
			}
			// Debug: the C++ client says this only under work_fetch_debug.
			d.projectLog(p).Debug("no work of this type at the last request; backing off",
				slog.String("resource", workfetch.Rsc(r).String()), slog.Duration("for", b.Until.Sub(now).Round(time.Second)))
		}
	}
	d.saveSchedState(p.MasterURL)
}

// fetchBackedOff: every resource the host has is backed off for p.
func (d *Daemon) fetchBackedOff(p *boinc.Project, now time.Time) bool {
	st := d.sched[p.MasterURL]
	if st == nil {
		return false
	}
	h := d.coreHost()
	for r := range workfetch.NumRsc {
		if h.Instances[r] > 0 && !st.Backoff[r].Active(now) {
			return false
		}
	}
	return true
}
