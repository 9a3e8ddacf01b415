package workfetch

import (
	"math"
	"slices"
	"time"
)

// DebtAdjustPeriod is the usual accounting interval of UpdateDebts
// (DEBT_ADJUST_PERIOD); it also bounds how close to zero the debt of a
// project that never has work may climb.
const DebtAdjustPeriod = 60.0

// DebtPolicy is the default Policy: a project's priority is its overall
// long-term debt, Σ_r RelSpeed[r] × (Debt[r] − Queue[r]/Instances[r])
// over the resources the host has (the 6.10 client's set_overall_debts,
// SCHEDULING §3.5): what it is owed, weighted by each resource's speed,
// minus the time its queued work will keep each resource busy. A nil sim
// counts as an empty queue.
type DebtPolicy struct{}

// Name implements Policy.
func (DebtPolicy) Name() string { return "debt" }

// Priorities implements Policy.
func (DebtPolicy) Priorities(projects []Project, h Host, sim *SimResult, out []float64) []float64 {
	out = grow(out, len(projects))
	// The host's resources, their instances and speeds, looked up once
	// rather than per project.
	var (
		rs     [NumRsc]Rsc
		ns, sp [NumRsc]float64
		nr     int
	)
	for r := range NumRsc {
		if n := instances(h.Instances[r]); n > 0 {
			rs[nr], ns[nr], sp[nr] = Rsc(r), n, relSpeed(&h, Rsc(r))
			nr++
		}
	}
	for i := range projects {
		d := 0.0
		for k := range nr {
			r := rs[k]
			q := 0.0
			if sim != nil && i < len(sim.Projects) {
				q = sim.Projects[i].Queue[r]
			}
			d += sp[k] * (projects[i].State.Debt[r] - q/ns[k])
		}
		out[i] = d
	}
	return out
}

// debtEligible is the 6.10 client's debt_eligible (SCHEDULING §3.5):
// whether project p accrues debt for r. A project that could use r now
// always does; one that could not ask for it does not, so that it does
// not pile up a claim it cannot redeem.
func debtEligible(p *Project, r Rsc, hasRunnable bool, now time.Time) bool {
	switch {
	case p.Suspended:
		return false
	case hasRunnable:
		return true
	case p.NoNewTasks, p.NoRsc[r], p.State.Backoff[r].Active(now):
		return false
	case p.State.Backoff[r].AtMax() && p.State.Debt[r] > -DebtAdjustPeriod:
		// It has had no work of this type for long: stop near zero.
		return false
	case p.InRPCBackoff:
		return false
	}
	return true
}

// UpdateDebts adjusts the long-term debts after dt seconds in which
// used[i][r] instance-seconds of r went to project i (the 6.10 client's
// update_long_term_debts, SCHEDULING §3.5). Debts are kept per instance:
// seconds of the whole resource, so resources of different sizes compare.
//
// For each resource the host has, with E the debt-eligible projects (see
// debtEligible: not suspended; and having a Runnable job of r in jobs, or
// else able to ask for r: not "no new tasks", has apps for r, not backed
// off for r nor at the maximum backoff near zero debt, not in RPC
// backoff) and T the instance-seconds they used:
//
//  1. each eligible project gains (share/Σshare_E × T − used)/Instances
//     (equal shares if all of E have zero share);
//  2. an offset makes the net change over E exactly zero, so eligible
//     projects do not drift away from the others;
//  3. an offset makes the largest debt of all projects zero (a project
//     attached later starts at parity): it applies to eligible projects,
//     and to the others only when it raises them; debts are then clamped
//     to ≤ 0.
//
// used may be shorter than projects (missing rows count as no use).
// Non-positive or non-finite dt does nothing; the caller should skip
// intervals much longer than DebtAdjustPeriod (the host was asleep).
func UpdateDebts(now time.Time, h Host, projects []Project, jobs []Job, used [][NumRsc]float64, dt float64) {
	if !(dt > 0) || math.IsInf(dt, 0) || len(projects) == 0 {
		return
	}
	// Working memory: on the stack for up to smallProjects projects (no
	// allocation per call), else on the heap.
	np := len(projects)
	var (
		sRunnable [smallProjects]uint8
		sElig     [NumRsc][smallProjects]bool
		sOwed     [smallProjects][NumRsc]float64
		sFloat    [3][smallProjects]float64
		sBool     [2][smallProjects]bool
	)
	var ds debtScratch
	if np <= smallProjects {
		ds = debtScratch{owed: sOwed[:np], capOf: sFloat[0][:np], ent: sFloat[1][:np], share: sFloat[2][:np], active: sBool[0][:np], fixed: sBool[1][:np]}
	} else {
		ds = debtScratch{owed: make([][NumRsc]float64, np), capOf: make([]float64, np), ent: make([]float64, np), share: make([]float64, np), active: make([]bool, np), fixed: make([]bool, np)}
	}
	var runnable []uint8
	if np > smallProjects {
		runnable = make([]uint8, np)
	} else {
		runnable = sRunnable[:np]
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Runnable && j.Project >= 0 && j.Project < len(projects) && j.Rsc >= 0 && int(j.Rsc) < NumRsc {
			runnable[j.Project] |= 1 << uint(j.Rsc)
		}
	}

	// Which projects accrue debt for which resource, and how much of each
	// resource the eligible ones used.
	var eligAll [NumRsc][]bool
	var T [NumRsc]float64
	for r := range NumRsc {
		if instances(h.Instances[r]) == 0 {
			continue
		}
		var e []bool
		if np > smallProjects {
			e = make([]bool, np)
		} else {
			e = sElig[r][:np]
		}
		e, runnable := e[:np], runnable[:np] // no bounds checks below
		for i := range np {
			e[i] = debtEligible(&projects[i], Rsc(r), runnable[i]&(1<<uint(r)) != 0, now)
			if e[i] {
				T[r] += usedOf(used, i, r)
			}
		}
		eligAll[r] = e
	}
	owedShares(projects, &h, &eligAll, &T, &ds)
	owed := ds.owed[:np]

	for r := range NumRsc {
		n := instances(h.Instances[r])
		if n == 0 {
			continue
		}
		elig := eligAll[r][:np] // resliced: no bounds checks below
		nElig := 0
		sum := 0.0
		for i := range projects {
			if !elig[i] {
				continue
			}
			nElig++
			delta := (owed[i][r] - usedOf(used, i, r)) / n
			projects[i].State.Debt[r] += delta
			sum += delta
		}
		// Owed amounts add up to T already; corr only absorbs rounding.
		// It is applied in the pass that finds the largest debt.
		corr := 0.0
		if nElig > 0 {
			corr = -sum / float64(nElig)
		}
		top := math.Inf(-1)
		for i := range projects {
			d := &projects[i].State.Debt[r]
			if elig[i] {
				*d += corr
			}
			if math.IsNaN(*d) || math.IsInf(*d, 0) {
				*d = 0
			}
			// Not max: *d is never NaN here, and max's NaN and
			// signed-zero care costs a tenth of this pass.
			if *d > top {
				top = *d
			}
		}
		offset := -top
		for i := range projects {
			d := &projects[i].State.Debt[r]
			if elig[i] || offset > 0 {
				*d += offset
			}
			*d = min(*d, 0)
		}
	}
}

// owedShares splits what the eligible projects used of every resource
// among them by resource share, across resources rather than per
// resource (boincd's departure from the 6.6 design, which splits each
// resource separately and so cannot meet the design's own Example 1).
//
// The pool is Σ_r RelSpeed[r]·T[r], in CPU-equivalent seconds. Each
// project is entitled to its share of the pool, but never to more than
// the resources it is eligible for hold (water-filling: a capped
// project's excess goes to the others by share). The entitlements are
// then laid onto resources, the ones fewest projects can use first, each
// resource divided in proportion to what its projects are still owed. So
// with A able to use only the GPU and B both CPU and a GPU twice as fast,
// B's CPU time counts against B's claim on the GPU: A is owed 75 % of the
// GPU and B 25 %, equal total processing. A project eligible for one
// resource only is owed exactly its per-resource share, as before.
//
// The result is in instance-seconds of each resource.
//
// It writes into ds, whose slices have len(projects) zeroed entries.
func owedShares(projects []Project, h *Host, elig *[NumRsc][]bool, T *[NumRsc]float64, ds *debtScratch) {
	sole, used := -1, 0
	for r := range NumRsc {
		if elig[r] != nil && T[r] > 0 {
			sole = r
			used++
		}
	}
	if used == 1 && owedSharesOne(projects, h, elig[sole], T[sole], sole, ds) {
		return
	}
	owedSharesAll(projects, h, elig, T, ds)
}

// owedSharesAll is owedShares for any number of resources.
func owedSharesAll(projects []Project, h *Host, elig *[NumRsc][]bool, T *[NumRsc]float64, ds *debtScratch) {
	// The per-project slices are resliced to np so that the loops over
	// the projects need no bounds checks.
	np := len(projects)
	owed := ds.owed[:np]
	shv := ds.share[:np] // each project's share, 0 if not positive and finite
	for i := range np {
		shv[i] = 0
		if sh := projects[i].Share; sh > 0 && !math.IsInf(sh, 0) {
			shv[i] = sh
		}
	}
	share := func(i int) float64 { return shv[i] }
	capOf, active := ds.capOf[:np], ds.active[:np]
	pool := 0.0
	for r := range NumRsc {
		if elig[r] == nil || !(T[r] > 0) {
			continue
		}
		x := relSpeed(h, Rsc(r)) * T[r]
		pool += x
		e := elig[r][:np]
		for i := range np {
			if e[i] {
				capOf[i] += x
				active[i] = true
			}
		}
	}
	if pool <= 0 {
		return
	}
	// Water-filling of the pool by share, each project capped.
	ent, fixed := ds.ent[:np], ds.fixed[:np]
	left := pool
	for {
		tot, n := 0.0, 0
		for i := range np {
			if active[i] && !fixed[i] {
				tot += share(i)
				n++
			}
		}
		if n == 0 || left <= 0 {
			break
		}
		capped := false
		for i := range np {
			if !active[i] || fixed[i] {
				continue
			}
			f := left / float64(n)
			if tot > 0 {
				f = left * share(i) / tot
			}
			if f >= capOf[i] {
				ent[i], fixed[i] = capOf[i], true
				left -= capOf[i]
				capped = true
			}
		}
		if capped {
			continue
		}
		for i := range np {
			if active[i] && !fixed[i] {
				ent[i] = left / float64(n)
				if tot > 0 {
					ent[i] = left * share(i) / tot
				}
			}
		}
		break
	}
	// Lay entitlements onto resources, most constrained resource first.
	var orderBuf [NumRsc]int
	order := orderBuf[:0]
	count := [NumRsc]int{}
	for r := range NumRsc {
		if elig[r] == nil || !(T[r] > 0) {
			continue
		}
		e := elig[r][:np]
		for i := range np {
			if e[i] {
				count[r]++
			}
		}
		if count[r] > 0 {
			order = append(order, r)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return count[a] - count[b] })
	for _, r := range order {
		speed := relSpeed(h, Rsc(r))
		x := speed * T[r]
		rem, shares := 0.0, 0.0
		e := elig[r][:np]
		for i := range np {
			if e[i] {
				rem += ent[i]
				shares += share(i)
			}
		}
		for i := range np {
			if !e[i] {
				continue
			}
			var a float64
			switch {
			case rem >= x && rem > 0:
				a = x * ent[i] / rem
			default:
				// Entitlements are exhausted (rounding): the rest of the
				// resource goes by share, or evenly.
				a = ent[i]
				if shares > 0 {
					a += (x - rem) * share(i) / shares
				} else {
					a += (x - rem) / float64(count[r])
				}
			}
			ent[i] -= min(a, ent[i])
			owed[i][r] = a / speed
		}
	}
}

// smallProjects is how many projects UpdateDebts keeps its working
// memory on the stack for.
const smallProjects = 64

// debtScratch is owedShares' working memory and output (owed), one entry
// per project, zeroed.
// owedSharesOne is owedShares when one resource alone was used (the usual
// step: a CPU-only host, or GPUs idle), with the same arithmetic in the same
// order, so the same results to the bit, in two passes over the projects
// instead of seven (debts were a fifth of a simulated step with 20
// projects). With one resource every eligible project's cap is the whole
// of it, so water-filling caps a project only when its share is all of the
// pool; then it reports false, with nothing written, and the general
// code runs.
func owedSharesOne(projects []Project, h *Host, elig []bool, t float64, r int, ds *debtScratch) bool {
	np := len(projects)
	e, ent, owed := elig[:np], ds.ent[:np], ds.owed[:np]
	speed := relSpeed(h, Rsc(r))
	x := speed * t
	tot, n := 0.0, 0
	for i := range np {
		if e[i] {
			tot += positiveShare(projects[i].Share)
			n++
		}
	}
	if n == 0 {
		return true
	}
	// The pool is x and so is each cap (owedShares: capOf).
	rem := 0.0
	for i := range np {
		if !e[i] {
			continue
		}
		f := x / float64(n)
		if tot > 0 {
			f = x * positiveShare(projects[i].Share) / tot
		}
		if f >= x {
			clear(ent)
			return false
		}
		ent[i] = f
		rem += f
	}
	// Laid onto the one resource; the eligible projects' shares add up to
	// tot (owedShares: shares).
	for i := range np {
		if !e[i] {
			continue
		}
		var a float64
		switch {
		case rem >= x && rem > 0:
			a = x * ent[i] / rem
		default:
			a = ent[i]
			if tot > 0 {
				a += (x - rem) * positiveShare(projects[i].Share) / tot
			} else {
				a += (x - rem) / float64(n)
			}
		}
		owed[i][r] = a / speed
	}
	return true
}

// positiveShare is a resource share as debts count it: 0 unless positive
// and finite.
func positiveShare(sh float64) float64 {
	if sh > 0 && !math.IsInf(sh, 0) {
		return sh
	}
	return 0
}

type debtScratch struct {
	owed              [][NumRsc]float64
	capOf, ent, share []float64
	active, fixed     []bool
}

func usedOf(used [][NumRsc]float64, i, r int) float64 {
	if i >= len(used) {
		return 0
	}
	u := used[i][r]
	if !(u > 0) || math.IsInf(u, 0) {
		return 0
	}
	return u
}
