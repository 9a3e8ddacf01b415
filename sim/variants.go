package sim

import (
	"time"

	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

// CS1Scheduler is the 2007 client run with --cpu_sched_rr_only
// (SCHEDULING §1.9): weighted round robin by the policy's priorities and
// the resource shares only. Deadline misses are ignored, so no task is
// ever run EDF.
type CS1Scheduler struct{ s schedule.Scheduler }

// Name implements Scheduler.
func (*CS1Scheduler) Name() string { return "cs1" }

// Schedule implements Scheduler. It clears the EDF marks of in.Tasks in
// place; the emulator rebuilds them for every pass.
func (c *CS1Scheduler) Schedule(in *schedule.Input, out *schedule.Decision) {
	for i := range in.Tasks {
		in.Tasks[i].MissesDeadline = false
		in.Tasks[i].OnceRanEDF = false
	}
	c.s.Schedule(in, out)
}

// WF1Fetcher is the 2007 simulator's --work_fetch_old (SCHEDULING §3.6):
// keep BufMin+BufAdditional of work per CPU queued, split by resource
// share so every project always has work: each project keeps its share
// of the buffer queued. It asks the fetchable project furthest below its
// part (the largest missing fraction; on a tie the larger deficit) for
// the missing CPU seconds. Debts and backoffs are not consulted, only
// NoFetch.
type WF1Fetcher struct{}

// Name implements Fetcher.
func (WF1Fetcher) Name() string { return "wf1" }

// Choose implements Fetcher.
func (WF1Fetcher) Choose(now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64) workfetch.Decision {
	d := workfetch.Decision{Request: workfetch.Request{Project: -1}}
	buffer := (max(p.BufMin, 0) + max(p.BufAdditional, 0)) * max(h.Instances[workfetch.CPU], 0)
	queue := func(i int) float64 {
		q := 0.0
		if sim != nil && i < len(sim.Projects) {
			for _, x := range sim.Projects[i].Queue {
				q += x
			}
		}
		return q
	}
	shareSum := 0.0
	for i := range projects {
		shareSum += shareOf(&projects[i])
	}
	best, bestFrac, bestNeed := -1, 0.0, 0.0
	why := make([]string, len(projects))
	for i := range projects {
		pr := &projects[i]
		switch {
		case pr.NoFetch != "":
			why[i] = pr.NoFetch
		case shareOf(pr) == 0:
			why[i] = "zero resource share"
		default:
			part := buffer * shareOf(pr) / shareSum
			need := part - queue(i)
			if need <= 0 || part <= 0 {
				why[i] = "queue at its share of the buffer"
				continue
			}
			frac := need / part
			if best < 0 || frac > bestFrac+1e-12 || (frac > bestFrac-1e-12 && need > bestNeed) {
				best, bestFrac, bestNeed = i, frac, need
			}
			why[i] = "another project is further below its share of the buffer"
		}
	}
	if best >= 0 {
		d.Request.Project = best
		d.Request.Secs[workfetch.CPU] = bestNeed
		d.Request.Reason = "CPU queue below its share of the buffer"
	}
	for i := range projects {
		for r := range workfetch.NumRsc {
			if h.Instances[r] <= 0 || (i == d.Request.Project && r == int(workfetch.CPU)) {
				continue
			}
			w := why[i]
			if r != int(workfetch.CPU) {
				w = "wf1 fetches CPU work only"
			}
			d.NotFetching = append(d.NotFetching, workfetch.NotFetching{Project: i, Rsc: workfetch.Rsc(r), Why: w})
		}
	}
	return d
}

// chooseInto implements chooserFetcher: Choose's decision, made with the
// engine's kept workfetch.Chooser into its kept Decision.
func (c CoreFetcher) chooseInto(ch *workfetch.Chooser, d *workfetch.Decision, now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64) {
	if c.NoGuard {
		p.DeadlineGuard = workfetch.DeadlineGuardOff
	}
	ch.Choose(d, now, h, p, projects, sim, prio)
}

// Compile-time checks that the variants plug into the emulator's points.
var (
	_ workfetch.Policy = (*RECPolicy)(nil)
	_ Observer         = (*RECPolicy)(nil)
	_ Charger          = (*RECPolicy)(nil)
	_ Scheduler        = (*CS1Scheduler)(nil)
	_ Fetcher          = WF1Fetcher{}
	_ chooserFetcher   = CoreFetcher{}
)
