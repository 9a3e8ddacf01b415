package workfetch

import (
	"math"
	"time"
)

// MaxRunnableJobs stops fetching from a project that already has this many
// jobs queued (WF_MAX_RUNNABLE_JOBS).
const MaxRunnableJobs = 1000

// Reasons in NotFetching besides a project's own NoFetch text.
const (
	WhyTooManyJobs   = "project has more than 1000 queued jobs"
	WhyNoApps        = "project has no apps for this resource"
	WhyBackedOff     = "resource backed off: the last request for it got no work"
	WhyBufferFull    = "buffer full: saturated beyond the high-water mark"
	WhyHysteresis    = "every resource is saturated beyond the low-water mark (hysteresis)"
	WhyOtherChosen   = "another project was chosen"
	WhyOnlyTarget    = "only the resource with the shortage is requested"
	WhyNoShortfall   = "no shortfall for this resource"
	WhyWackyDCF      = "duration correction factor out of range: estimates not trusted"
	WhyZeroShare     = "zero resource share: asked only for an idle instance"
	WhyOverworked    = "overworked: debt for this resource below −max(1 day, buffer)"
	WhyNotChosen     = "no work-fetch rule selects this project"
	WhyDeadlineTight = "another job would finish too close to its deadline (deadline guard)"
	WhyCannotFinish  = "a job of the project cannot finish by its deadline even started now (deadline guard)"
	// WhyMaxConcurrent is the C++ client's wording: a job of the project
	// on this resource cannot run for app_config.xml's max_concurrent or
	// project_max_concurrent, so more work would only wait.
	WhyMaxConcurrent = "max concurrent job limit"
)

// The work-fetch criteria, in the order they are tried.
type criterion int

const (
	critNone criterion = iota
	critIdle
	critMajor
	critMinor
	critStarved
)

// rscOrder is the order resources are tried in within a criterion: GPU
// types before the CPU (coprocessors are faster, so more important).
var rscOrder = [NumRsc]Rsc{NVIDIA, AMD, Intel, CPU}

// reasonText names each (criterion, resource) choice without allocating.
var reasonText = func() (t [critStarved + 1][NumRsc]string) {
	for r := range NumRsc {
		n := Rsc(r).String()
		t[critIdle][r] = n + " has an idle instance"
		t[critMajor][r] = n + " major shortfall"
		t[critMinor][r] = n + " minor shortfall"
		t[critStarved][r] = n + " starved project"
	}
	return t
}()

// chooser is one work-fetch decision's context.
type chooser struct {
	now      time.Time
	projects []Project
	sim      *SimResult
	prio     []float64
	wbmin    float64
	wbtot    float64
	n        [NumRsc]float64
	override int  // project whose NoFetch-by-RPC-backoff and resource backoffs are ignored (RequestFor); -1
	allZero  bool // no project has a share: all count as equal
	open     bool // hysteresis gate: some resource is below the low-water mark
	sumShare [NumRsc]float64
	guard    float64         // Prefs.DeadlineGuard in effect; 0 = off
	avail    [NumRsc]float64 // Host.CPUAvail or GPUAvail
	queued   [NumRsc]float64 // every project's ProjSim.Queue
	// memo holds rscWhy and room per (project, resource), index
	// i*NumRsc+r, once computed in this pass (a Chooser's scratch); nil:
	// nothing is memoised. Both are pure functions of the pass's inputs.
	// Entries of another generation than gen are stale.
	memo []chooseMemo
	gen  uint32
}

// chooseMemo is one (project, resource)'s memoised rscWhy and room, with
// the generation (pass) each was computed in.
type chooseMemo struct {
	why             string
	room            float64
	whyGen, roomGen uint32
}

func newChooser(c *chooser, now time.Time, h *Host, p Prefs, projects []Project, sim *SimResult, prio []float64, override int, memo []chooseMemo, gen uint32) {
	*c = chooser{now: now, projects: projects, sim: sim, prio: prio, wbmin: p.Min(), wbtot: p.Total(), override: override, guard: p.guard(), memo: memo, gen: gen}
	c.allZero = true
	for r := range NumRsc {
		c.avail[r] = h.CPUAvail
		if Rsc(r).IsGPU() {
			c.avail[r] = h.GPUAvail
		}
		// queued is read (by room) only for the resources the host has.
		if instances(h.Instances[r]) == 0 {
			continue
		}
		for p := range sim.Projects {
			c.queued[r] += sim.Projects[p].Queue[r]
		}
	}
	for i := range projects {
		if positive(projects[i].Share) {
			c.allZero = false
			break
		}
	}
	for r := range NumRsc {
		c.n[r] = instances(h.Instances[r])
		if c.n[r] == 0 {
			continue
		}
		rs := &sim.Rsc[r]
		if rs.NIdleNow > idleEps || rs.SaturatedTime < c.wbmin {
			c.open = true
		}
		for i := range projects {
			if c.rscWhy(i, Rsc(r)) == "" {
				c.sumShare[r] += c.share(i)
			}
		}
	}
}

func positive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

func (c *chooser) share(i int) float64 {
	if c.allZero {
		return 1
	}
	if sh := c.projects[i].Share; positive(sh) {
		return sh
	}
	return 0
}

var zeroProjSim ProjSim

func (c *chooser) ps(i int) *ProjSim {
	if i < len(c.sim.Projects) {
		return &c.sim.Projects[i]
	}
	return &zeroProjSim
}

func (c *chooser) prioOf(i int) float64 {
	if i < len(c.prio) && !math.IsNaN(c.prio[i]) {
		return c.prio[i]
	}
	return 0
}

// projectWhy is why project i may not be asked for work at all ("" if it may).
func (c *chooser) projectWhy(i int) string {
	p := &c.projects[i]
	if p.NoFetch != "" {
		// A piggybacked request rides on an RPC made anyway, so the RPC
		// backoff does not stop it (SCHEDULING §3.3); suspension and "no
		// new tasks" still do.
		if !(i == c.override && p.InRPCBackoff && !p.Suspended && !p.NoNewTasks) {
			return p.NoFetch
		}
	}
	q := c.ps(i)
	total := 0
	for _, n := range q.NRunnable {
		total += n
	}
	if total > MaxRunnableJobs {
		return WhyTooManyJobs
	}
	return ""
}

// room is the request-size rule, the deadline guard's half that a
// server cannot undo: how many more of project i's typical jobs for r
// (its longest job's wall time w, its shortest latency bound L) the
// host can take so that each is expected to end in time; noCap when the
// guard is off, unknownRoom when nothing of the project is queued for r.
//
// Why a cap on the request and not only a veto on asking: a stock BOINC
// server (the "plain check": estimated delay + run time ≤ L) sends
// whatever was asked as long as each job on its own could start and
// finish in time, and it takes the request's delay as the *least* busy
// instance's. A request sized by the buffer shortfall, or one made for
// an idle instance, is then filled with jobs that queue behind each
// other and end after their deadline. A server that screens with EDF
// (WS2) refuses those itself; one that checks nothing (WS1) is worse.
// Asking only for what fits makes the host safe whatever the server.
//
// What fits: a job that starts at once on an idle instance needs only
// to end by L, since nothing the client does can make it end sooner (so
// an idle CPU stays fed whenever a job can make it at all). Jobs queued
// behind must end a margin before L (margin), the on-time an
// availability dip may take. They fit while the instance-seconds up to
// then, less the simulation's queue (every project's: they share the
// instances) and the jobs started now, hold them; a new job has the
// latest deadline, so under EDF the queue goes first and only its total
// matters, as long as the first new job can start in time (at
// SaturatedTime, or at its share of the instances when the queue is
// other projects'). If even an idle instance cannot finish one job by
// L, nothing is asked: the job would only be wasted.
func (c *chooser) room(i int, r Rsc) float64 {
	if c.memo == nil {
		return c.roomNow(i, r)
	}
	m := &c.memo[i*NumRsc+int(r)]
	if m.roomGen != c.gen {
		m.room, m.roomGen = c.roomNow(i, r), c.gen
	}
	return m.room
}

// roomNow computes room.
func (c *chooser) roomNow(i int, r Rsc) float64 {
	g := c.guard
	q := c.ps(i)
	L, w := q.Latency[r], q.JobWall[r]
	if g <= 0 {
		return noCap
	}
	if !(L > 0) || !(w > 0) {
		return unknownRoom
	}
	if w > L {
		return 0
	}
	// Jobs using u instances each see n/u slots.
	u := c.usage(i, r)
	rs := &c.sim.Rsc[r]
	avail := availability(c.avail[r])
	queued := c.queued[r] / (avail * u)
	slots, idle := c.n[r]/u, min(rs.NIdleNow, c.n[r])/u
	d := L - margin(g, L)
	now := 0.0 // jobs that start at once on the idle slots
	if idle > idleEps {
		now = math.Ceil(idle - 1e-6)
	}
	if w > d {
		return now
	}
	if now == 0 {
		start := rs.SaturatedTime
		if sh := c.fshare(i, r) * slots; sh > idleEps {
			start = min(start, q.Queue[r]/(avail*u)/sh)
		}
		if start+w > d {
			return 0
		}
	}
	return now + max(0, math.Floor((slots*d-queued-now*w)/w+1e-9))
}

// usage is the instances one of project i's jobs for r uses: their
// mean over its queued jobs, 1 when none is queued.
func (c *chooser) usage(i int, r Rsc) float64 {
	q := c.ps(i)
	if q.NRunnable[r] > 0 {
		return min(max(q.NUsed[r]/float64(q.NRunnable[r]), 0.01), c.n[r])
	}
	return 1
}

// room's answers besides a number of jobs.
const (
	noCap       = -1 // the guard is off: the C++ client's request
	unknownRoom = -2 // no job of the project queued for the resource
)

// tight reports that the request-size rule leaves no room for project
// i on r.
func (c *chooser) tight(i int, r Rsc) bool { return c.room(i, r) == 0 }

// capSize applies the request-size rule to a request of secs and inst
// for project i on r: at most room(i, r) jobs. Servers count a job
// against the request by its estimated wall time × usage, so the
// seconds stop half a job short of one more.
func (c *chooser) capSize(i int, r Rsc, secs, inst float64) (float64, float64) {
	k := c.room(i, r)
	switch k {
	case noCap:
		return secs, inst
	case unknownRoom:
		// Nothing of the project is queued for r, so neither its
		// bound nor its job length is known here: one job (1 s, and
		// the instances asked for), as from a newly attached
		// project; its reply tells the next request how much fits.
		return min(secs, 1), inst
	}
	if k == 0 {
		return 0, 0
	}
	u := c.usage(i, r)
	return min(secs, (k-0.5)*c.ps(i).JobWall[r]*u), min(inst, k*u)
}

// marginRef is where the deadline guard's margin stops growing in
// proportion to the latency bound: half a day, above the bounds where
// the policy study calibrated it (slack 1.5–3 on 3.6-hour jobs: 5.4–11
// hours).
const marginRef = 43200.0

// margin is how long before its deadline a queued job is expected to
// end at the latest: (1 − guard) × the bound up to marginRef, then
// growing as its square root. The margin covers the availability the
// host may lack before the job ends; over a longer span the on and off
// periods average out (the deviation of the on time grows as the square
// root of the span), so a proportional margin would idle a host that
// must carry days of work between connections (2-day connection
// interval, 2.5-day bound: docs/policy-study.md).
func margin(g, L float64) float64 {
	return (1 - g) * math.Sqrt(L*min(L, marginRef))
}

// rscWhy is why project i may not be asked for resource r ("" if it may).
func (c *chooser) rscWhy(i int, r Rsc) string {
	if c.memo == nil {
		return c.rscWhyNow(i, r)
	}
	m := &c.memo[i*NumRsc+int(r)]
	if m.whyGen != c.gen {
		m.why, m.whyGen = c.rscWhyNow(i, r), c.gen
	}
	return m.why
}

// rscWhyNow computes rscWhy.
func (c *chooser) rscWhyNow(i int, r Rsc) string {
	if w := c.projectWhy(i); w != "" {
		return w
	}
	p := &c.projects[i]
	if p.NoRsc[r] {
		return WhyNoApps
	}
	if c.ps(i).Deferred[r] {
		return WhyMaxConcurrent
	}
	if i != c.override && p.State.Backoff[r].Active(c.now) {
		return WhyBackedOff
	}
	return ""
}

func (c *chooser) overworked(i int, r Rsc) bool {
	return c.projects[i].State.Debt[r] < -max(86400, c.wbtot)
}

// fshare is project i's fetchable share of r: its share over the shares of
// the projects that may fetch r (counting i itself even if backed off).
func (c *chooser) fshare(i int, r Rsc) float64 {
	sh := c.share(i)
	d := c.sumShare[r]
	if c.rscWhy(i, r) != "" {
		d += sh
	}
	if d <= 0 {
		return 1
	}
	return sh / d
}

// applies reports whether criterion k asks for resource r.
func (c *chooser) applies(k criterion, r Rsc) bool {
	rs := &c.sim.Rsc[r]
	switch k {
	case critIdle:
		return rs.NIdleNow > idleEps
	case critMajor:
		return rs.SaturatedTime < c.wbmin
	case critMinor:
		return rs.SaturatedTime < c.wbtot
	case critStarved:
		return rs.DeadlineMissedInstances < c.n[r]
	}
	return false
}

// candidate reports whether project i qualifies for r under criterion k.
func (c *chooser) candidate(i int, r Rsc, k criterion) bool {
	if c.rscWhy(i, r) != "" {
		return false
	}
	if k != critIdle && wackyDCF(c.projects[i].State.DCF) {
		return false
	}
	if (k == critMinor || k == critStarved) && c.overworked(i, r) {
		return false
	}
	if k == critStarved {
		if c.share(i) == 0 {
			return false
		}
		q := c.ps(i)
		if q.NUsed[r] >= c.n[r]*c.fshare(i, r) {
			return false
		}
		if !c.open {
			// Past the hysteresis gate only a project with no work at all
			// is starved: it gets work at once (design, example 2) without
			// a trickle of small requests from the others.
			for _, n := range q.NRunnable {
				if n > 0 {
					return false
				}
			}
		}
	}
	// The request-size rule last: the costliest test (the tests are pure,
	// so their order does not change the answer).
	return !c.tight(i, r)
}

// pick is the highest-priority candidate for r under k; zero-share
// projects only for an idle instance, and only if no other qualifies.
func (c *chooser) pick(r Rsc, k criterion) int {
	best, backup := -1, -1
	for i := range c.projects {
		if !c.candidate(i, r, k) {
			continue
		}
		if c.share(i) == 0 {
			if k == critIdle && (backup < 0 || c.prioOf(i) > c.prioOf(backup)) {
				backup = i
			}
			continue
		}
		if best < 0 || c.prioOf(i) > c.prioOf(best) {
			best = i
		}
	}
	if best < 0 {
		return backup
	}
	return best
}

// decide runs the criteria in order; it returns the chosen project, the
// criterion and the resource that chose it.
func (c *chooser) decide() (int, criterion, Rsc) {
	for k := critIdle; k <= critStarved; k++ {
		if !c.open && k != critStarved {
			continue
		}
		for _, r := range rscOrder {
			if c.n[r] == 0 || !c.applies(k, r) {
				continue
			}
			if i := c.pick(r, k); i >= 0 {
				return i, k, r
			}
		}
	}
	return -1, critNone, CPU
}

// size is the request to project i for r (6.10 set_request): its
// fetchable share of the shortfall, and enough instances to reach its
// share of the resource or its share of the idle ones; at least 1 s when
// anything is asked. A zero-share project asks for the idle instances
// only; a project with an untrusted DCF for 1 s.
func (c *chooser) size(i int, r Rsc) (secs, inst float64) {
	rs := &c.sim.Rsc[r]
	if c.share(i) == 0 {
		if rs.NIdleNow > idleEps {
			return c.capSize(i, r, 1, rs.NIdleNow)
		}
		return 0, 0
	}
	sh := c.fshare(i, r)
	if c.projects[i].Unestimated {
		if rs.Shortfall > 0 || rs.NIdleNow > idleEps {
			return 1, rs.NIdleNow * sh
		}
		return 0, 0
	}
	secs = max(0, rs.Shortfall*sh)
	inst = max(0, c.n[r]*sh-c.ps(i).NUsed[r], rs.NIdleNow*sh)
	if secs > 0 && wackyDCF(c.projects[i].State.DCF) {
		secs = 1
	}
	secs, inst = c.capSize(i, r, secs, inst)
	if secs > 0 || inst > 0 {
		secs = max(secs, 1)
	}
	return secs, inst
}

// requestAll asks project i for every resource with a shortfall (and
// target), whether backed off for it or not (design: "if we ask a project
// for work for resource A, we may ask it for B as well").
func (c *chooser) requestAll(i int, target Rsc, req *Request) {
	for r := range NumRsc {
		if c.n[r] == 0 || c.projects[i].NoRsc[r] || c.ps(i).Deferred[r] {
			continue
		}
		if Rsc(r) != target && (!(c.sim.Rsc[r].Shortfall > 0) || c.tight(i, Rsc(r))) {
			continue
		}
		req.Secs[r], req.Instances[r] = c.size(i, Rsc(r))
	}
}

func anySecs(req *Request) bool {
	for _, s := range req.Secs {
		if s > 0 {
			return true
		}
	}
	return false
}

// Choose makes the work-fetch decision (the design's main logic, in the
// per-resource debt form of the 6.10 client, SCHEDULING §3.5), from a
// simulation of the current queue and the policy's priorities:
//
//  1. Hysteresis: unless some resource has an idle instance or is
//     saturated for less than the low-water mark Min(), nothing is
//     fetched (except for a starved project, below), so the buffer is
//     filled from the low to the high mark in one request rather than
//     topped up by a trickle of tiny ones.
//  2. Criteria in order: an idle instance; a major shortfall (saturated <
//     Min()); a minor shortfall (saturated < Total()); a starved project
//     (fewer instances queued than its share, while the resource is not
//     all used by jobs missing deadlines; past a closed gate only a
//     project with no jobs at all). Within each, resources are tried GPU
//     types first, then the CPU; the first resource with a candidate wins.
//  3. The candidate is the highest-priority project that may fetch the
//     resource: NoFetch empty, at most MaxRunnableJobs queued, apps for
//     it, no job held back by a max_concurrent limit in the simulation
//     (ProjSim.Deferred), not backed off for it; not "overworked" (debt for it below
//     −max(86400, Total())) for the minor and starved criteria; not with a
//     wacky DCF except for an idle instance; zero-share projects only for
//     an idle instance when no other project can take it.
//  4. An idle instance or a major shortfall asks for that resource only;
//     the others ask for every resource with a shortfall, even ones the
//     project is backed off for (but not one it has no apps for or a job
//     deferred by a limit on). Sizing per resource: Secs = shortfall ×
//     the project's fetchable share of the resource (its share over the
//     shares of the projects that may fetch it), Instances =
//     max(instances × share − its queued usage, idle now × share), Secs at
//     least 1 when anything is asked.
//  5. The deadline guard (Prefs.DeadlineGuard, off under the C++
//     client's rules) caps each resource's request at the jobs that can
//     end in time (room), asks a project with nothing queued for the
//     resource for one job, and makes a project for which no job fits
//     no candidate, idle instance or not.
//
// NotFetching gives a reason for every (project, resource the host has)
// that is not in the request; the strings are constants (or the project's
// NoFetch), so the daemon can log them without formatting cost.
func Choose(now time.Time, h Host, p Prefs, projects []Project, sim *SimResult, prio []float64) Decision {
	var d Decision
	choose(&d, nil, 0, false, now, &h, p, projects, sim, prio)
	return d
}

// Chooser makes Choose's decision into a Decision the caller keeps,
// reusing its NotFetching array and the Chooser's own working memory, so
// a caller that decides every step (the emulator) allocates nothing per
// pass. The zero value is ready; it is not safe for concurrent use.
type Chooser struct {
	// RequestOnly leaves Decision.NotFetching empty (length 0), for a
	// caller that reads only the request: explaining every other
	// (project, resource) is most of a pass's work. The request is the
	// same either way.
	RequestOnly bool
	memo        []chooseMemo
	gen         uint32 // the last pass's generation of memo entries
}

// Choose is Choose's decision, written into d (which it overwrites
// whole; d.NotFetching's backing array is reused).
func (ch *Chooser) Choose(d *Decision, now time.Time, h Host, p Prefs, projects []Project, sim *SimResult, prio []float64) {
	n := len(projects) * NumRsc
	if cap(ch.memo) < n {
		ch.memo = make([]chooseMemo, n)
	}
	// A new generation makes every memo entry stale without clearing;
	// generation 0 is never used, so zeroed entries are stale too.
	if ch.gen++; ch.gen == 0 {
		clear(ch.memo[:cap(ch.memo)])
		ch.gen = 1
	}
	choose(d, ch.memo[:n], ch.gen, ch.RequestOnly, now, &h, p, projects, sim, prio)
}

// choose is Choose into d, with memo as the chooser's scratch (nil: none)
// and, if requestOnly, no NotFetching.
func choose(d *Decision, memo []chooseMemo, gen uint32, requestOnly bool, now time.Time, h *Host, p Prefs, projects []Project, sim *SimResult, prio []float64) {
	var c chooser
	newChooser(&c, now, h, p, projects, sim, prio, -1, memo, gen)
	i, k, target := c.decide()
	d.Request = Request{Project: -1}
	if i >= 0 {
		req := &d.Request
		req.Project = i
		req.Reason = reasonText[k][target]
		if k == critIdle || k == critMajor {
			req.Secs[target], req.Instances[target] = c.size(i, target)
			req.Secs[target] = max(req.Secs[target], 1)
		} else {
			c.requestAll(i, target, req)
		}
		if !anySecs(req) {
			d.Request = Request{Project: -1}
			i = -1
		}
	}

	if requestOnly {
		d.NotFetching = d.NotFetching[:0]
		return
	}
	nr := 0
	for r := range NumRsc {
		if c.n[r] > 0 {
			nr++
		}
	}
	if d.NotFetching == nil || cap(d.NotFetching) < nr*len(projects) {
		d.NotFetching = make([]NotFetching, 0, nr*len(projects))
	} else {
		d.NotFetching = d.NotFetching[:0]
	}
	for pi := range projects {
		for _, r := range rscOrder {
			if c.n[r] == 0 || (pi == i && d.Request.Secs[r] > 0) {
				continue
			}
			d.NotFetching = append(d.NotFetching, NotFetching{Project: pi, Rsc: r, Why: c.whyNot(pi, r, i, k)})
		}
	}
}

// whyNot explains why (pi, r) is not part of the request to chosen.
func (c *chooser) whyNot(pi int, r Rsc, chosen int, k criterion) string {
	if w := c.rscWhy(pi, r); w != "" {
		return w
	}
	if pi == chosen {
		if k == critIdle || k == critMajor {
			return WhyOnlyTarget
		}
		return WhyNoShortfall
	}
	rs := &c.sim.Rsc[r]
	if !(rs.NIdleNow > idleEps) && rs.SaturatedTime >= c.wbtot && !c.candidate(pi, r, critStarved) {
		return WhyBufferFull
	}
	if !c.open && !c.candidate(pi, r, critStarved) {
		return WhyHysteresis
	}
	if chosen >= 0 {
		return WhyOtherChosen
	}
	switch {
	case wackyDCF(c.projects[pi].State.DCF):
		return WhyWackyDCF
	case c.tight(pi, r):
		if q := c.ps(pi); q.JobWall[r] > q.Latency[r] {
			return WhyCannotFinish
		}
		return WhyDeadlineTight
	case c.share(pi) == 0:
		return WhyZeroShare
	case c.overworked(pi, r):
		return WhyOverworked
	}
	return WhyNotChosen
}

// RequestFor is the work to ask of project i on an RPC made to it for
// another reason (reporting results, a user's update, the project's own
// request): the 6.10 client's compute_work_request. If Choose would pick
// i when i's own resource backoffs (and an RPC backoff, since the RPC is
// made anyway) are ignored, i is asked for every resource with a
// shortfall, sized as in Choose; otherwise for nothing (Project −1, with
// the reason).
func RequestFor(i int, now time.Time, h Host, p Prefs, projects []Project, sim *SimResult, prio []float64) Request {
	if i < 0 || i >= len(projects) {
		return Request{Project: -1, Reason: "no such project"}
	}
	var c chooser
	newChooser(&c, now, &h, p, projects, sim, prio, i, nil, 0)
	chosen, k, target := c.decide()
	switch {
	case chosen < 0:
		if w := c.projectWhy(i); w != "" {
			return Request{Project: -1, Reason: w}
		}
		if !c.open {
			return Request{Project: -1, Reason: WhyHysteresis}
		}
		return Request{Project: -1, Reason: WhyNotChosen}
	case chosen != i:
		return Request{Project: -1, Reason: WhyOtherChosen}
	}
	req := Request{Project: i, Reason: reasonText[k][target]}
	c.requestAll(i, target, &req)
	if !anySecs(&req) {
		return Request{Project: -1, Reason: WhyNoShortfall}
	}
	return req
}
