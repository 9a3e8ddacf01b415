package workfetch

import (
	"math"
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
	for i := range projects {
		d := 0.0
		for r := range NumRsc {
			n := instances(h.Instances[r])
			if n == 0 {
				continue
			}
			q := 0.0
			if sim != nil && i < len(sim.Projects) {
				q = sim.Projects[i].Queue[r]
			}
			d += relSpeed(&h, Rsc(r)) * (projects[i].State.Debt[r] - q/n)
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
	var small [64]uint8
	var runnable []uint8
	if len(projects) > len(small) {
		runnable = make([]uint8, len(projects))
	} else {
		runnable = small[:len(projects)]
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Runnable && j.Project >= 0 && j.Project < len(projects) && j.Rsc >= 0 && int(j.Rsc) < NumRsc {
			runnable[j.Project] |= 1 << uint(j.Rsc)
		}
	}
	var smallElig [64]bool
	var elig []bool
	if len(projects) > len(smallElig) {
		elig = make([]bool, len(projects))
	} else {
		elig = smallElig[:len(projects)]
	}

	for r := range NumRsc {
		n := instances(h.Instances[r])
		if n == 0 {
			continue
		}
		ders, T, nElig := 0.0, 0.0, 0
		for i := range projects {
			p := &projects[i]
			elig[i] = debtEligible(p, Rsc(r), runnable[i]&(1<<uint(r)) != 0, now)
			if !elig[i] {
				continue
			}
			nElig++
			if sh := p.Share; sh > 0 && !math.IsInf(sh, 0) {
				ders += sh
			}
			T += usedOf(used, i, r)
		}
		if nElig > 0 {
			sum := 0.0
			for i := range projects {
				if !elig[i] {
					continue
				}
				sf := 1 / float64(nElig)
				if ders > 0 {
					sf = 0
					if sh := projects[i].Share; sh > 0 && !math.IsInf(sh, 0) {
						sf = sh / ders
					}
				}
				delta := (sf*T - usedOf(used, i, r)) / n
				projects[i].State.Debt[r] += delta
				sum += delta
			}
			corr := -sum / float64(nElig)
			for i := range projects {
				if elig[i] {
					projects[i].State.Debt[r] += corr
				}
			}
		}

		top := math.Inf(-1)
		for i := range projects {
			d := &projects[i].State.Debt[r]
			if math.IsNaN(*d) || math.IsInf(*d, 0) {
				*d = 0
			}
			top = max(top, *d)
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
