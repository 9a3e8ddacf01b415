package sim

import (
	"math"
	"sort"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// RECHalfLife is the C++ client's default rec_half_life (10 days).
const RECHalfLife = 10 * 86400.0

// RECPolicy is the C++ client's project priority (SCHEDULING §1.2): each
// project's REC (recent estimated credit) is an exponentially decayed
// average (half-life HalfLife, update_average) of the processing it
// received on all resources, weighted by each resource's peak speed
// (RelSpeed: CPU-equivalent seconds per day instead of cobblestones; the
// priority depends only on ratios, so the p_fpops × COBBLESTONE_SCALE
// factor cancels). Priority is −rec_frac/rs_frac, and −1000 − rec_frac
// for zero-share projects, so a project with no recent use comes first
// and backup projects come last.
//
// It keeps state between steps, so one value serves one run: it gets its
// use through Observer and lowers priorities within a scheduling pass
// through Charger (adjust_rec_sched, workfetch.RECSchedBump).
//
// The C++ client asks for work by the same REC, its own way (RECFetcher:
// the queued-work penalty and the whole shortfall from one project), and
// that, more than the priority, sets how projects mix on the host: a
// scenario that names priority "rec" and no work_fetch gets RECFetcher
// (Fetcher), so "rec" is the C++ client's rules. REC priority under
// boincd's own fetch is work_fetch = "wf2" (the study's "REC priority"
// before issue 19).
type RECPolicy struct {
	// HalfLife in seconds; not positive means RECHalfLife.
	HalfLife float64

	rec     []float64 // per project, CPU-equivalent seconds per day
	recTime time.Time // when rec was last brought up to date; zero: never
	credit  []float64 // scratch: this interval's CPU-equivalent seconds
}

// NewRECPolicy returns a REC policy with the default half-life.
func NewRECPolicy() *RECPolicy { return &RECPolicy{HalfLife: RECHalfLife} }

// Name implements workfetch.Policy.
func (*RECPolicy) Name() string { return "rec" }

// REC returns project i's current REC (0 for an unknown project).
func (r *RECPolicy) REC(i int) float64 {
	if i < 0 || i >= len(r.rec) {
		return 0
	}
	return r.rec[i]
}

func (r *RECPolicy) halfLife() float64 {
	if r.HalfLife > 0 && !math.IsInf(r.HalfLife, 0) {
		return r.HalfLife
	}
	return RECHalfLife
}

// recEligible: the projects whose shares and RECs form the sums. The C++
// client uses the projects with a runnable job for the schedule and those
// that can request work for fetch (RECFetcher recomputes the fetch's
// sums); Priorities serves both, so a project counts if either holds and
// it is not suspended.
func recEligible(p *workfetch.Project, i int, sim *workfetch.SimResult) bool {
	if p.Suspended {
		return false
	}
	if p.NoFetch == "" {
		return true
	}
	if sim != nil && i < len(sim.Projects) {
		for _, n := range sim.Projects[i].NRunnable {
			if n > 0 {
				return true
			}
		}
	}
	return false
}

// Priorities implements workfetch.Policy (project_priority_init and
// compute_sched_priority).
func (r *RECPolicy) Priorities(projects []workfetch.Project, h workfetch.Host, sim *workfetch.SimResult, out []float64) []float64 {
	if cap(out) < len(projects) {
		out = make([]float64, len(projects))
	}
	out = out[:len(projects)]
	rsSum, recSum := 0.0, 0.0
	for i := range projects {
		if !recEligible(&projects[i], i, sim) {
			continue
		}
		rsSum += shareOf(&projects[i])
		recSum += r.REC(i)
	}
	if recSum == 0 {
		recSum = 1
	}
	for i := range projects {
		recFrac := r.REC(i) / recSum
		rs := shareOf(&projects[i])
		if rs == 0 || rsSum == 0 {
			out[i] = -1000 - recFrac
			continue
		}
		out[i] = -recFrac / (rs / rsSum)
	}
	return out
}

// shareOf treats negative or NaN shares as zero, as the schedule does.
func shareOf(p *workfetch.Project) float64 {
	if !(p.Share > 0) || math.IsInf(p.Share, 0) {
		return 0
	}
	return p.Share
}

// Observe implements Observer (update_rec): the step's use, weighted by
// each resource's speed, enters the decayed average.
func (r *RECPolicy) Observe(now time.Time, h workfetch.Host, projects []workfetch.Project, used [][workfetch.NumRsc]float64, dt float64) {
	for len(r.rec) < len(projects) {
		r.rec = append(r.rec, 0)
	}
	if r.recTime.IsZero() {
		// The first interval starts dt before the first report.
		r.recTime = now.Add(-time.Duration(dt * 1e9))
	}
	d := now.Sub(r.recTime).Seconds()
	if d <= 0 {
		// Nothing elapsed: book the use at once rather than lose it.
		d = 0
	}
	r.credit = r.credit[:0]
	for i := range projects {
		x := 0.0
		if i < len(used) {
			for k := range workfetch.NumRsc {
				if h.Instances[k] <= 0 {
					continue
				}
				x += used[i][k] * relSpeedOf(h, workfetch.Rsc(k))
			}
		}
		r.credit = append(r.credit, x)
	}
	hl := r.halfLife()
	w := math.Exp(-d * math.Ln2 / hl)
	for i, x := range r.credit {
		if 1-w < 1e-6 || d == 0 {
			// update_average's short-interval branch.
			r.rec[i] += math.Ln2 * x * 86400 / hl
			continue
		}
		r.rec[i] = r.rec[i]*w + (1-w)*x/(d/86400)
	}
	if d > 0 {
		r.recTime = now
	}
}

// Charge implements Charger: adjust_rec_sched raises rec_frac by
// 1/24 of the job's share of the host's peak speed, so one
// CPU-equivalent lowers −rec_frac by 1/(24 × Σ Instances·RelSpeed)
// before the schedule divides by the share fraction.
func (r *RECPolicy) Charge(h workfetch.Host) float64 { return workfetch.RECSchedBump(h) }

// Fetcher implements PairedFetcher: the C++ client's REC-era work fetch,
// using this policy's RECs.
func (r *RECPolicy) Fetcher() Fetcher { return &RECFetcher{rec: r} }

// fetchPriorities is project_priority_init(true): the priorities over
// the projects that can request work (not suspended, no NoFetch reason),
// whose shares and RECs form the sums; the others get −1000 − rec_frac,
// they are not asked anyway.
func (r *RECPolicy) fetchPriorities(projects []workfetch.Project, out []float64) []float64 {
	out = append(out[:0], make([]float64, len(projects))...)
	rsSum, recSum := 0.0, 0.0
	for i := range projects {
		if canRequestWork(&projects[i]) {
			rsSum += shareOf(&projects[i])
			recSum += r.REC(i)
		}
	}
	if recSum == 0 {
		recSum = 1
	}
	for i := range projects {
		recFrac := r.REC(i) / recSum
		rs := shareOf(&projects[i])
		if rs == 0 || rsSum == 0 || !canRequestWork(&projects[i]) {
			out[i] = -1000 - recFrac
			continue
		}
		out[i] = -recFrac / (rs / rsSum)
	}
	return out
}

// canRequestWork is the C++ client's PROJECT::can_request_work as far as
// the emulator models it.
func canRequestWork(p *workfetch.Project) bool {
	return p.NoFetch == "" && !p.Suspended && !p.NoNewTasks
}

// relSpeedOf is RelSpeed with the schedule's convention that 0 counts as
// 1 (and the CPU is always 1).
func relSpeedOf(h workfetch.Host, r workfetch.Rsc) float64 {
	if r == workfetch.CPU {
		return 1
	}
	s := h.RelSpeed[r]
	if !(s > 0) || math.IsInf(s, 0) {
		return 1
	}
	return s
}

// RECFetcher is the C++ client's work fetch of the REC era
// (work_fetch.cpp WORK_FETCH::setup, choose_project and set_request;
// SCHEDULING §3.3), without boincd's deadline guard:
//
//  1. Fetch priority: the REC priority over the projects that can request
//     work (the policy's priorities when not paired with a RECPolicy),
//     less each project's queued work over the buffer
//     (workfetch.RECFetchPenalty).
//  2. Projects in decreasing fetch priority; the first one that may fetch
//     some resource (no project or resource reason: NoFetch, suspended,
//     no new tasks, too many jobs, no apps for it, a job deferred by a
//     max_concurrent limit, backed off, a zero share while the resource is
//     saturated beyond min(BufMin, 180 s)) saturated for less than
//     Prefs.Min() is asked for it.
//  3. The request: that resource's whole shortfall (not the project's
//     share of it; 1 s with a wacky DCF), and instances
//     max(idle now, instances × fetchable share − its queued usage); also
//     every other resource saturated for less than Prefs.Total() for which
//     no higher-priority project could fetch (backed off is no bar
//     there). A zero-share project asks only for an idle instance (1 s,
//     one instance).
//
// It keeps scratch space, so one value serves one run at a time.
type RECFetcher struct {
	rec   *RECPolicy
	fp    []float64
	order []int
}

// Name implements Fetcher.
func (*RECFetcher) Name() string { return "rec" }

// Choose implements Fetcher.
func (f *RECFetcher) Choose(now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64) workfetch.Decision {
	d := workfetch.Decision{Request: workfetch.Request{Project: -1}}
	if sim == nil {
		return d
	}
	wbmin, wbtot := p.Min(), p.Total()
	projOK := func(i int) bool {
		if !canRequestWork(&projects[i]) {
			return false
		}
		if i < len(sim.Projects) {
			t := 0
			for _, x := range sim.Projects[i].NRunnable {
				t += x
			}
			if t > workfetch.MaxRunnableJobs {
				return false
			}
		}
		return true
	}
	rscOK := func(i int, r workfetch.Rsc, backedOffOK bool) bool {
		pr := &projects[i]
		switch {
		case pr.NoRsc[r]:
			return false
		case i < len(sim.Projects) && sim.Projects[i].Deferred[r]:
			return false
		case shareOf(pr) == 0 && sim.Rsc[r].SaturatedTime > min(wbmin, 180):
			return false
		}
		return backedOffOK || !pr.State.Backoff[r].Active(now)
	}
	// 1. Fetch priorities, sorted (ties: the projects' order).
	if f.rec != nil {
		f.fp = f.rec.fetchPriorities(projects, f.fp)
	} else {
		f.fp = f.fp[:0]
		for i := range projects {
			v := 0.0
			if i < len(prio) && !math.IsNaN(prio[i]) {
				v = prio[i]
			}
			f.fp = append(f.fp, v)
		}
	}
	f.order = f.order[:0]
	for i := range projects {
		if i < len(sim.Projects) {
			f.fp[i] -= workfetch.RECFetchPenalty(sim.Projects[i].Queue, h, wbtot)
		}
		f.order = append(f.order, i)
	}
	sort.SliceStable(f.order, func(a, b int) bool { return f.fp[f.order[a]] > f.fp[f.order[b]] })
	// compute_shares: the shares of the projects that may fetch each
	// resource.
	var shareSum [workfetch.NumRsc]float64
	for i := range projects {
		if !projOK(i) {
			continue
		}
		for r := range workfetch.NumRsc {
			if rscOK(i, workfetch.Rsc(r), false) {
				shareSum[r] += shareOf(&projects[i])
			}
		}
	}
	var found [workfetch.NumRsc]int
	for r := range found {
		found[r] = -1
	}
	has := func(r workfetch.Rsc) bool { return h.Instances[r] > 0 }
	// 2. The first project that may fetch a resource below the low mark.
	for _, i := range f.order {
		if !projOK(i) {
			continue
		}
		target := workfetch.Rsc(-1)
		for r := range workfetch.NumRsc {
			r := workfetch.Rsc(r)
			if !has(r) || !rscOK(i, r, false) {
				continue
			}
			if found[r] < 0 {
				found[r] = i
			}
			if sim.Rsc[r].SaturatedTime < wbmin {
				target = r
				break
			}
		}
		if target < 0 {
			continue
		}
		// 3. The request.
		req := &d.Request
		pr := &projects[i]
		for r := range workfetch.NumRsc {
			r := workfetch.Rsc(r)
			if !has(r) {
				continue
			}
			rs := &sim.Rsc[r]
			if r != target {
				if found[r] >= 0 && found[r] != i {
					continue
				}
				if !(rs.SaturatedTime < wbtot) || !rscOK(i, r, true) {
					continue
				}
			}
			if shareOf(pr) == 0 {
				if rs.NIdleNow > 0 {
					req.Secs[r], req.Instances[r] = 1, 1
				}
				continue
			}
			secs := rs.Shortfall
			if wackyDCF(pr.State.DCF) {
				secs = 1
			}
			fs := 1.0
			if shareSum[r] > 0 {
				fs = shareOf(pr) / shareSum[r]
			}
			used := 0.0
			if i < len(sim.Projects) {
				used = sim.Projects[i].NUsed[r]
			}
			inst := max(rs.NIdleNow, h.Instances[r]*fs-used, 0)
			if inst > 0 && !(secs > 0) {
				secs = 1
			}
			if secs > 0 {
				req.Secs[r], req.Instances[r] = secs, inst
			}
		}
		for r := range workfetch.NumRsc {
			if req.Secs[r] > 0 {
				req.Project = i
				req.Reason = target.String() + " saturated for less than the low-water mark"
				return d
			}
		}
		*req = workfetch.Request{Project: -1}
	}
	return d
}

// wackyDCF is the C++ client's test for a DCF too far off to trust.
func wackyDCF(dcf float64) bool {
	return dcf != 0 && (dcf < workfetch.DCFWackyLow || dcf > workfetch.DCFWackyHigh)
}

var (
	_ PairedFetcher = (*RECPolicy)(nil)
	_ Fetcher       = (*RECFetcher)(nil)
)
