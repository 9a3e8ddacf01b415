package sim

import (
	"math"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// RECHalfLife is the C++ client's default rec_half_life (10 days).
const RECHalfLife = 10 * 86400.0

// RECPolicy is the C++ client's project priority (SCHEDULING §1.2): each
// project's REC is an exponentially decayed average (half-life
// HalfLife) of the processing it received on all resources, weighted by
// RelSpeed (CPU-equivalent seconds per day instead of cobblestones: the
// priority depends only on ratios, so the p_fpops × COBBLESTONE_SCALE
// factor cancels). Priority is −rec_frac/rs_frac, and −1000 − rec_frac
// for zero-share projects, so a project with no recent use comes first
// and backup projects come last.
//
// It keeps state between steps, so one value serves one run: it gets its
// use through Observer and lowers priorities within a scheduling pass
// through Charger (adjust_rec_sched).
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
// that can request work for fetch; one priority serves both here, so a
// project counts if either holds and it is not suspended.
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
func (r *RECPolicy) Charge(h workfetch.Host) float64 {
	total := 0.0
	for k := range workfetch.NumRsc {
		if h.Instances[k] > 0 {
			total += h.Instances[k] * relSpeedOf(h, workfetch.Rsc(k))
		}
	}
	if total <= 0 {
		return 0
	}
	return 1 / (24 * total)
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
