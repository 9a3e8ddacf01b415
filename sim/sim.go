package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

// Options selects the decision-point variants and extra outputs.
type Options struct {
	Policy    workfetch.Policy // nil: workfetch.DebtPolicy
	Scheduler Scheduler        // nil: a new CoreScheduler
	Fetcher   Fetcher          // nil: CoreFetcher
	Accounter Accounter        // nil: DebtAccounter
	// BucketSeconds > 0 adds a timeline to the report: per-project
	// instance-seconds per resource in buckets of this length.
	BucketSeconds float64
}

// Epoch is the simulated clock's start; only differences matter.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	// maxJobsPerRPC bounds one reply so a request that can never be
	// covered (a tiny estimate) cannot loop for long.
	maxJobsPerRPC = 1000
	// ctxCheckSteps: how often the loop looks at ctx.
	ctxCheckSteps = 4096
)

// simJob is one job the client holds.
type simJob struct {
	core, proj int // index into e.core and e.projs
	app        int
	rsc        workfetch.Rsc
	ncpus      float64
	ngpus      float64
	rate       float64 // FLOPS while running
	total      float64 // true size, FLOPs
	left       float64
	estFlops   float64 // the server's estimate
	deadline   float64 // simulated seconds
	received   float64
	seq        int
	// deadlineT, receivedT and runStartT are deadline, received and
	// runStart on the core's clock, converted once rather than per step.
	deadlineT, receivedT, runStartT time.Time

	running    bool
	runStart   float64
	lastMiss   float64 // when the simulation last said it misses (-1: never)
	elapsed    float64 // seconds actually computed
	onceRanEDF bool
	gpus       []int
	peak       float64 // peak FLOPs spent on it
	// recW and recT: e.wjobs and e.tasks at the job's index hold its
	// fixed fields (project, resource, usage, deadline...), written when
	// it came to that index, so each step rewrites only what changes.
	// Moving the job (compute) clears them.
	recW, recT bool
}

func (j *simJob) usage() float64 {
	if j.rsc.IsGPU() {
		return j.ngpus
	}
	return j.ncpus
}

// simProject is a project's server and its statistics.
type simProject struct {
	spec  *ProjectSpec
	core  int // index into e.core; -1 until attached
	rng   *rand.Rand
	sent  []int // jobs sent per app
	fails int   // consecutive failed RPCs
	// minRPC is when the project-level RPC backoff ends (simulated s).
	minRPC float64

	inst, flops        [workfetch.NumRsc]float64
	wasted             float64
	met, missed        int
	jobs, rpcs, failed int
	requests, gotRsc   [workfetch.NumRsc]int
	maxBackoff         [workfetch.NumRsc]float64
	idleR, idleSS      float64
}

type pendingReply struct {
	proj   int // e.projs index
	req    workfetch.Request
	busy   [workfetch.NumRsc]float64 // the simulation's BusyTime at request time
	arrive float64
}

type engine struct {
	sc    *Scenario
	opt   Options
	step  float64
	end   float64
	t     float64
	host  workfetch.Host
	prefs workfetch.Prefs
	slice time.Duration
	flops float64 // one CPU's FLOPS
	avail *availability
	on    bool
	// nowT is t on the core's clock (now), converted once per t.
	nowT  time.Time
	nowAt float64

	projs     []simProject
	core      []workfetch.Project
	coreToSim []int
	jobs      []simJob
	seq       int
	pending   *pendingReply
	jitter    *rand.Rand
	// useDCF is false under JC1: no project's DCF is ever corrected.
	useDCF bool
	ws2    bool
	edf    edfScratch

	// plain: every server makes the stock BOINC server's plain check
	// (work_send = "plain"), as deadline_check does for one project.
	plain bool

	// scratch reused every step
	wjobs  []workfetch.Job
	tasks  []schedule.Task
	res    workfetch.SimResult
	prio   []float64
	shares []float64
	used   [][workfetch.NumRsc]float64
	in     schedule.Input
	dec    schedule.Decision
	runIdx []int
	ran    []bool // per project: ran during the step
	// chooser and fetchDec serve a Fetcher that decides into kept
	// scratch (chooserFetcher: the core's).
	chooser  workfetch.Chooser
	fetchDec workfetch.Decision

	observers []Observer
	charge    float64

	// metrics
	tTotal, tOn float64
	rpcs, njobs int
	failedRPCs  int
	timeline    [][][workfetch.NumRsc]float64 // [bucket][project]
}

// Run emulates the scenario and returns its report. It is deterministic:
// the same scenario (seed included) and options give the same report.
func Run(ctx context.Context, sc *Scenario, opt Options) (*Report, error) {
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	// The scenario's [policies] fill what Options leave unset; Validate
	// has checked the names.
	var err error
	if opt.Policy == nil {
		if opt.Policy, err = PolicyByName(sc.Policies.Priority); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.where(0), err)
		}
	}
	if opt.Scheduler == nil {
		if opt.Scheduler, err = SchedulerByName(sc.Policies.CPUSched); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.where(0), err)
		}
	}
	if pf, ok := opt.Policy.(PairedFetcher); ok && opt.Fetcher == nil && sc.Policies.WorkFetch == "" {
		opt.Fetcher = pf.Fetcher()
	}
	if opt.Fetcher == nil {
		if opt.Fetcher, err = FetcherByName(sc.Policies.WorkFetch); err != nil {
			return nil, fmt.Errorf("%s: %w", sc.where(0), err)
		}
	}
	if opt.Accounter == nil {
		opt.Accounter = DebtAccounter{}
	}
	e := newEngine(sc, opt)
	for n := 0; e.t < e.end-1e-9; n++ {
		if n%ctxCheckSteps == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("simulate %s: %w", sc.where(0), err)
			}
		}
		e.tick()
	}
	return e.report(), nil
}

// seedStream derives independent random streams from the seed, so a
// change in one (another project, say) leaves the others' draws alone.
func seedStream(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15*(stream+1)))
}

// chooserFetcher is a Fetcher that can decide into a Decision and a
// workfetch.Chooser the engine keeps (no allocation per step), reading
// only the request: CoreFetcher. Its decisions are the same as Choose's.
type chooserFetcher interface {
	chooseInto(ch *workfetch.Chooser, d *workfetch.Decision, now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64)
}

func newEngine(sc *Scenario, opt Options) *engine {
	e := &engine{
		sc:     sc,
		opt:    opt,
		step:   sc.StepSeconds,
		end:    sc.DurationDays * 86400,
		flops:  sc.Host.CPUFlops,
		slice:  time.Duration(sc.Prefs.CPUSchedulingPeriodMinutes * float64(time.Minute)),
		avail:  newAvailability(sc.Host.Availability, seedStream(sc.Seed, 0)),
		jitter: seedStream(sc.Seed, 1),
		useDCF: sc.Policies.Estimate != EstimateJC1,
		ws2:    sc.Policies.WorkSend == WorkSendWS2,
		plain:  sc.Policies.WorkSend == WorkSendPlain,
	}
	frac := sc.Host.Availability.OnFrac()
	e.host.CPUAvail = math.Max(0.01, frac)
	e.host.GPUAvail = e.host.CPUAvail
	for r := range workfetch.NumRsc {
		e.host.Instances[r] = sc.Host.instances(workfetch.Rsc(r))
		e.host.RelSpeed[r] = sc.Host.relSpeed(workfetch.Rsc(r))
	}
	e.prefs = workfetch.Prefs{
		BufMin:        sc.Prefs.WorkBufMinDays * 86400,
		BufAdditional: sc.Prefs.WorkBufAdditionalDays * 86400,
	}
	e.projs = make([]simProject, len(sc.Projects))
	e.ran = make([]bool, len(sc.Projects))
	for i := range sc.Projects {
		e.projs[i] = simProject{
			spec: &sc.Projects[i],
			core: -1,
			rng:  seedStream(sc.Seed, uint64(2+i)),
			sent: make([]int, len(sc.Projects[i].Apps)),
		}
	}
	if opt.BucketSeconds > 0 {
		n := int(math.Ceil(e.end / opt.BucketSeconds))
		e.timeline = make([][][workfetch.NumRsc]float64, n)
		for i := range e.timeline {
			e.timeline[i] = make([][workfetch.NumRsc]float64, len(e.projs))
		}
	}
	for _, x := range []any{opt.Policy, opt.Scheduler, opt.Fetcher} {
		if o, ok := x.(Observer); ok {
			e.observers = append(e.observers, o)
		}
	}
	if c, ok := opt.Policy.(Charger); ok {
		e.charge = c.Charge(e.host)
	}
	e.chooser.RequestOnly = true // the engine reads only the request
	e.attach()
	return e
}

func (e *engine) now() time.Time {
	if e.t != e.nowAt || e.nowT.IsZero() {
		e.nowT, e.nowAt = epoch.Add(time.Duration(math.Round(e.t*1e9))), e.t
	}
	return e.nowT
}

// attach adds the projects whose attach time has come. A new project
// enters the core's slice at the end, so existing indices stay valid.
func (e *engine) attach() {
	for i := range e.projs {
		p := &e.projs[i]
		if p.core >= 0 || p.spec.AttachAtDays*86400 > e.t+1e-9 {
			continue
		}
		p.core = len(e.core)
		e.core = append(e.core, workfetch.Project{
			Name:  p.spec.Name,
			Share: p.spec.Share,
			State: workfetch.ProjectState{DCF: 1},
		})
		e.coreToSim = append(e.coreToSim, i)
		e.used = append(e.used, [workfetch.NumRsc]float64{})
		e.prio = append(e.prio, 0)
		e.shares = append(e.shares, p.spec.Share)
	}
}

// tick advances the clock one step: computing, accounting, then the
// client's decisions at the step's end.
func (e *engine) tick() {
	dt := math.Min(e.step, e.end-e.t)
	if e.sc.EventDriven {
		dt = e.nextEvent(dt)
	}
	onSecs := e.avail.advance(e.t, dt)
	e.on = e.avail.on
	e.compute(dt, onSecs)
	e.t += dt
	e.attach()
	if e.pending != nil && e.t >= e.pending.arrive-1e-9 {
		e.deliver()
	}
	e.buildJobs()
	e.opt.Accounter.Update(e.now(), e.host, e.core, e.wjobs, e.used, dt)
	for _, o := range e.observers {
		o.Observe(e.now(), e.host, e.core, e.used, dt)
	}
	for i := range e.used {
		e.used[i] = [workfetch.NumRsc]float64{}
	}
	if !e.on {
		// An off host neither schedules nor talks to servers (BCE).
		return
	}
	e.decide()
	if e.pending == nil {
		if e.fetch() && e.pending != nil && e.pending.arrive <= e.t {
			// The reply came within the step: schedule its jobs now
			// rather than leaving the instances idle for a step.
			e.deliver()
			e.buildJobs()
			e.decide()
		}
	}
}

// minEventStep keeps event-driven steps from shrinking to nothing.
const minEventStep = 1e-3

// nextEvent shortens a step to end at the first event inside it: a
// running job completing, the host going on or off, a scheduler reply
// arriving, a project attaching. The client then decides at that very
// moment instead of at the next step boundary.
func (e *engine) nextEvent(dt float64) float64 {
	// Events at this very moment were handled by the previous tick.
	soon := func(at float64) {
		if x := at - e.t; x > minEventStep {
			dt = math.Min(dt, x)
		}
	}
	if !e.avail.always {
		soon(e.avail.until)
	}
	if e.avail.on {
		for i := range e.jobs {
			if j := &e.jobs[i]; j.running {
				dt = math.Min(dt, j.left/j.rate)
			}
		}
	}
	if e.pending != nil {
		soon(e.pending.arrive)
	}
	for i := range e.projs {
		if p := &e.projs[i]; p.core < 0 {
			soon(p.spec.AttachAtDays * 86400)
		}
	}
	return math.Max(dt, math.Min(minEventStep, e.end-e.t))
}

// compute runs the executing jobs for onSecs of the step, finishes those
// that are done and books processing.
func (e *engine) compute(dt, onSecs float64) {
	e.tTotal += dt
	e.tOn += onSecs
	ran := e.ran
	clear(ran)
	bucket := -1
	if e.timeline != nil {
		bucket = min(int(e.t/e.opt.BucketSeconds), len(e.timeline)-1)
	}
	k := 0
	for i := range e.jobs {
		j := &e.jobs[i]
		done := false
		if j.running && onSecs > 0 {
			secs := onSecs
			// The tolerance absorbs rounding when an event-driven step
			// ends exactly at the completion.
			if j.rate*secs >= j.left*(1-1e-12) {
				secs = j.left / j.rate
				done = true
			}
			j.left -= j.rate * secs
			j.elapsed += secs
			pf := j.rate * secs
			j.peak += pf
			p := &e.projs[j.proj]
			inst := j.usage() * secs
			p.inst[j.rsc] += inst
			p.flops[j.rsc] += pf
			e.used[j.core][j.rsc] += inst
			if bucket >= 0 {
				e.timeline[bucket][j.proj][j.rsc] += inst
			}
			ran[j.proj] = true
			if done {
				e.finish(j, e.t+secs)
			}
		}
		if !done {
			if k != i {
				e.jobs[k] = *j
				e.jobs[k].recW, e.jobs[k].recT = false, false
			}
			k++
		}
	}
	clear(e.jobs[k:])
	e.jobs = e.jobs[:k]
	if onSecs <= 0 {
		return
	}
	// Monotony: time since each attached project last ran, squared and
	// integrated over on time.
	for i := range e.projs {
		p := &e.projs[i]
		if p.core < 0 {
			continue
		}
		if ran[i] {
			p.idleR = 0
			continue
		}
		p.idleR += onSecs
		p.idleSS += onSecs * p.idleR * p.idleR
	}
}

// finish records a completed job: deadline met or missed, DCF update.
func (e *engine) finish(j *simJob, at float64) {
	p := &e.projs[j.proj]
	if at <= j.deadline+1e-9 {
		p.met++
	} else {
		p.missed++
		p.wasted += j.peak
	}
	if e.dcfOn(p) {
		st := &e.core[j.core].State
		st.DCF = workfetch.UpdateDCF(st.DCF, j.elapsed, j.estFlops/j.rate)
	}
}

// dcfOn tells whether the client corrects p's estimates by its DCF.
func (e *engine) dcfOn(p *simProject) bool { return e.useDCF && !p.spec.DontUseDCF }

// static is the client's estimate of the job's whole computing time:
// the server's size estimate over the speed, corrected by DCF.
func (e *engine) static(j *simJob) float64 {
	static := j.estFlops / j.rate
	if e.dcfOn(&e.projs[j.proj]) {
		static *= e.core[j.core].State.DCF
	}
	return static
}

// remaining is the client's estimate of the wall seconds of computing
// left: the static estimate (server's size estimate, corrected by DCF)
// until the job has run, then the core's blend with its progress; and
// that static estimate, which the core's job records carry too.
func (e *engine) remaining(j *simJob) (rem, static float64) {
	static = e.static(j)
	if j.elapsed <= 0 {
		return static, static
	}
	fd := 1 - j.left/j.total
	return workfetch.Remaining(static, j.elapsed, fd, j.elapsed, false), static
}

// buildJobs refreshes the core's view of the queue and project flags.
func (e *engine) buildJobs() {
	e.wjobs = sized(e.wjobs, len(e.jobs))
	for i := range e.jobs {
		j := &e.jobs[i]
		rem, static := e.remaining(j)
		w := &e.wjobs[i]
		if !j.recW {
			*w = workfetch.Job{
				Project:  j.core,
				Rsc:      j.rsc,
				NCPUs:    j.ncpus,
				NGPUs:    j.ngpus,
				Deadline: j.deadlineT,
				Runnable: true,
				Received: j.receivedT,
			}
			j.recW = true
		}
		w.Remaining, w.Estimate = rem, static
	}
	for c := range e.core {
		p := &e.projs[e.coreToSim[c]]
		cp := &e.core[c]
		cp.InRPCBackoff = p.minRPC > e.t
		cp.NoFetch = ""
		if cp.InRPCBackoff {
			cp.NoFetch = "project RPC backoff"
		}
	}
}

// sized is s with length n, keeping what its backing array holds (up to
// its capacity) at the same indexes.
func sized[T any](s []T, n int) []T {
	if n <= cap(s) {
		return s[:n]
	}
	s = s[:cap(s)]
	return append(s, make([]T, n-len(s))...)
}

// decide runs the round-robin simulation, the priority policy and the
// schedule, and applies the run set.
func (e *engine) decide() {
	now := e.now()
	workfetch.Simulate(now, e.host, e.prefs, e.core, e.wjobs, e.prio, &e.res)
	e.prio = e.opt.Policy.Priorities(e.core, e.host, &e.res, e.prio)
	e.tasks = sized(e.tasks, len(e.jobs))
	slice := e.slice.Seconds()
	for i := range e.jobs {
		j := &e.jobs[i]
		// The caller's part of the EDF rules (schedule's package doc):
		// a job marked a miss less than one period ago stays EDF
		// (anti-thrashing), and a DCF of 90 or more makes every job of
		// the project EDF.
		miss := i < len(e.res.MissesDeadline) && e.res.MissesDeadline[i]
		if miss {
			j.lastMiss = e.t
		} else if j.lastMiss >= 0 && e.t-j.lastMiss < slice {
			miss = true
		}
		if e.core[j.core].State.DCF >= 90 {
			miss = true
		}
		t := &e.tasks[i]
		if !j.recT {
			*t = schedule.Task{
				Project:  j.core,
				Rsc:      j.rsc,
				NCPUs:    j.ncpus,
				NGPUs:    j.ngpus,
				Deadline: e.wjobs[i].Deadline,
				Order:    j.seq,
			}
			j.recT = true
		}
		t.MissesDeadline = miss
		t.Running = j.running
		t.RunStart = j.runStartT
		// The emulated apps checkpoint continuously (as in BCE), so
		// preempting one loses nothing.
		t.LastCheckpoint = now
		t.GPUs = j.gpus
		t.OnceRanEDF = j.onceRanEDF
		t.Started = j.elapsed > 0 || j.running
		t.Remaining = e.wjobs[i].Remaining
	}
	e.in = schedule.Input{Now: now, Host: e.host, Slice: e.slice, Priority: e.prio, Shares: e.shares, Tasks: e.tasks, Charge: e.charge}
	e.dec.Run = e.dec.Run[:0]
	e.opt.Scheduler.Schedule(&e.in, &e.dec)
	// Apply: runIdx[i] = assignment index for job i, or -1.
	e.runIdx = e.runIdx[:0]
	for range e.jobs {
		e.runIdx = append(e.runIdx, -1)
	}
	for a, as := range e.dec.Run {
		if as.Task >= 0 && as.Task < len(e.jobs) {
			e.runIdx[as.Task] = a
		}
	}
	for i := range e.jobs {
		j := &e.jobs[i]
		a := e.runIdx[i]
		if a < 0 {
			j.running = false
			j.gpus = j.gpus[:0]
			continue
		}
		as := e.dec.Run[a]
		if !j.running {
			j.running = true
			j.runStart = e.t
			j.runStartT = epoch.Add(time.Duration(e.t * 1e9))
		}
		if as.EDF {
			j.onceRanEDF = true
		}
		j.gpus = append(j.gpus[:0], as.GPUs...)
	}
}

// fetch asks the work-fetch policy whom to ask, and makes the RPC. It
// reports whether an RPC was attempted.
func (e *engine) fetch() bool {
	var req workfetch.Request
	if cf, ok := e.opt.Fetcher.(chooserFetcher); ok {
		// A pure decision: when offline its answer is not used.
		if !e.connected() {
			return false
		}
		cf.chooseInto(&e.chooser, &e.fetchDec, e.now(), e.host, e.prefs, e.core, &e.res, e.prio)
		req = e.fetchDec.Request
	} else {
		req = e.opt.Fetcher.Choose(e.now(), e.host, e.prefs, e.core, &e.res, e.prio).Request
	}
	if req.Project < 0 || req.Project >= len(e.core) || !e.connected() {
		return false
	}
	si := e.coreToSim[req.Project]
	p := &e.projs[si]
	for r := range workfetch.NumRsc {
		if req.Secs[r] > 0 || req.Instances[r] > 0 {
			p.requests[r]++
		}
	}
	if e.serverDown(p) {
		// The server is down: no reply, the project backs off (§4.3).
		p.failed++
		e.failedRPCs++
		p.fails++
		n := min(p.fails, boinc.RPCRetryCap)
		d := boinc.ExponentialBackoff(n, boinc.RPCBackoffMin, boinc.RPCBackoffMax, e.jitter.Float64())
		p.minRPC = e.t + d.Seconds()
		return true
	}
	e.pending = &pendingReply{proj: si, req: req, arrive: e.t + e.sc.RPCDelaySeconds}
	for r := range workfetch.NumRsc {
		e.pending.busy[r] = e.res.Rsc[r].BusyTime
	}
	return true
}

// connectWindow is how long a host with a connection interval stays
// online each time: long enough for a few RPCs, short against the
// interval, as a dial-up or laptop user's session.
const connectWindow = 3600.0

// connected tells whether the host can reach servers now.
func (e *engine) connected() bool {
	ci := e.sc.Host.ConnectionIntervalDays * 86400
	return ci <= 0 || math.Mod(e.t, ci) < connectWindow
}

func (e *engine) serverDown(p *simProject) bool {
	day := e.t / 86400
	for _, o := range p.spec.Outages {
		if day >= o.FromDays && day < o.ToDays {
			return true
		}
	}
	return false
}

// deliver is the server's reply: jobs for each requested resource until
// the request's seconds and instances are covered, then the client's
// reply handling (per-resource backoffs).
func (e *engine) deliver() {
	pr := e.pending
	e.pending = nil
	p := &e.projs[pr.proj]
	st := &e.core[p.core].State
	var got [workfetch.NumRsc]int
	for r := range workfetch.NumRsc {
		secs, inst := pr.req.Secs[r], pr.req.Instances[r]
		if secs <= 0 && inst <= 0 {
			continue
		}
		// delay is the server's estimate of when a new job would start
		// (the request's <estimated_delay>), for the deadline check.
		delay, skip := pr.busy[r], uint64(0)
		if e.ws2 {
			e.edfQueue(workfetch.Rsc(r))
		}
		for (secs > 0 || inst > 0) && got[r] < maxJobsPerRPC {
			a := e.pickApp(p, workfetch.Rsc(r), skip)
			if a < 0 {
				break
			}
			app := &p.spec.Apps[a]
			rate := e.appRate(app)
			// The server's view of the job's duration (BCE
			// decrement_request): estimate over speed and availability.
			avail := e.host.CPUAvail
			if app.rsc.IsGPU() {
				avail = e.host.GPUAvail
			}
			estFlops := app.FlopsMean / app.EstimateFactor
			// The server scales its estimates by the host's DCF, which
			// the request reports (the 2007 simulator's
			// Σ DCF·fpops_est/p_fpops), so a corrected client is not
			// sent work for its uncorrected estimate.
			dcf := 1.0
			if e.dcfOn(p) {
				dcf = st.DCF
			}
			if (p.spec.DeadlineCheck || e.plain) && delay+dcf*estFlops/rate > app.LatencyBoundDays*86400 {
				// It would miss its deadline: no more of this app in
				// this reply (BCE marks the app version dont_use).
				skip |= 1 << uint(a)
				continue
			}
			est := dcf * estFlops / rate / avail
			if e.ws2 {
				if !e.edf.admit(est*usageOf(app), app.LatencyBoundDays*86400, e.host.Instances[r]) {
					skip |= 1 << uint(a)
					continue
				}
			}
			e.makeJob(pr.proj, a)
			got[r]++
			usage := usageOf(app)
			secs -= est * usage
			inst -= usage
			delay += est * usage / e.host.Instances[r]
		}
		p.gotRsc[r] += got[r]
	}
	jit := [workfetch.NumRsc]float64{}
	for r := range jit {
		jit[r] = e.jitter.Float64()
	}
	workfetch.HandleReply(st, pr.req, got, boinc.RPCNeedWork, e.now(), jit)
	for r := range workfetch.NumRsc {
		p.maxBackoff[r] = math.Max(p.maxBackoff[r], st.Backoff[r].Interval)
	}
	p.fails = 0
	p.minRPC = 0
	p.rpcs++
	e.rpcs++
}

func usageOf(a *AppSpec) float64 {
	if a.rsc.IsGPU() {
		return a.NGPUs
	}
	return a.NCPUs
}

// edfQueue loads the host's queue for r, as the request lists it (each
// job's estimated remaining wall time on the host and its deadline, both
// relative to now), into the WS2 screen. Every project's jobs count:
// they all share the host.
func (e *engine) edfQueue(r workfetch.Rsc) {
	avail := e.host.CPUAvail
	if r.IsGPU() {
		avail = e.host.GPUAvail
	}
	e.edf.reset()
	for i := range e.jobs {
		j := &e.jobs[i]
		if j.rsc != r {
			continue
		}
		rem, _ := e.remaining(j)
		e.edf.add(rem/avail*j.usage(), j.deadline-e.t)
	}
}

// pickApp chooses, uniformly at random, one of the project's apps for r
// that has jobs now and is not in skip (bit i: app i); -1 if none.
func (e *engine) pickApp(p *simProject, r workfetch.Rsc, skip uint64) int {
	day := e.t / 86400
	n, pick := 0, -1
	for i := range p.spec.Apps {
		a := &p.spec.Apps[i]
		if a.rsc != r || day < a.AvailableFromDays || (a.AvailableToDays > 0 && day >= a.AvailableToDays) {
			continue
		}
		if (a.MaxJobs > 0 && p.sent[i] >= a.MaxJobs) || skip&(1<<uint(i)) != 0 {
			continue
		}
		// Reservoir sampling: one pass, uniform choice.
		n++
		if p.rng.IntN(n) == 0 {
			pick = i
		}
	}
	return pick
}

// appRate is the FLOPS a job of the app computes at while running.
func (e *engine) appRate(a *AppSpec) float64 {
	if a.rsc.IsGPU() {
		return e.flops * a.NGPUs * e.host.RelSpeed[a.rsc]
	}
	return e.flops * a.NCPUs
}

func (e *engine) makeJob(pi, ai int) {
	p := &e.projs[pi]
	a := &p.spec.Apps[ai]
	p.sent[ai]++
	p.jobs++
	e.njobs++
	size := a.FlopsMean
	if a.FlopsStddev > 0 {
		size = math.Max(a.FlopsMean*0.01, a.FlopsMean+a.FlopsStddev*p.rng.NormFloat64())
	}
	rate := e.appRate(a)
	e.seq++
	e.jobs = append(e.jobs, simJob{
		core:     p.core,
		proj:     pi,
		app:      ai,
		rsc:      a.rsc,
		ncpus:    a.NCPUs,
		ngpus:    a.NGPUs,
		rate:     rate,
		total:    size,
		left:     size,
		estFlops: a.FlopsMean / a.EstimateFactor,
		deadline: e.t + a.LatencyBoundDays*86400,
		received: e.t,
		seq:      e.seq,
		lastMiss: -1,
	})
	j := &e.jobs[len(e.jobs)-1]
	j.deadlineT = epoch.Add(time.Duration(j.deadline * 1e9))
	j.receivedT = epoch.Add(time.Duration(j.received * 1e9))
	j.runStartT = epoch
}
