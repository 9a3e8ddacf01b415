package sim

import (
	"fmt"
	"time"

	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

// The emulator's decision points. Each defaults to the core boincd runs;
// variants (the C++ client's REC priority, the 2007 paper's CS/WF
// policies, ...) plug in here so that comparing them never needs a fork
// of the loop.

// Scheduler decides which tasks run (the CPU/GPU schedule).
//
// The emulator keeps in.Tasks between passes and rewrites only the fields
// that change from step to step: Schedule must not change a task's
// Project, Rsc, NCPUs, NGPUs, Deadline, App, AppMax or Order.
type Scheduler interface {
	Name() string
	Schedule(in *schedule.Input, out *schedule.Decision)
}

// Fetcher decides which project to ask for how much work.
type Fetcher interface {
	Name() string
	Choose(now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64) workfetch.Decision
}

// Accounter books the processing each project received in a step (the
// long-term debts by default). It must not change jobs: the emulator
// keeps them between steps (see Scheduler).
type Accounter interface {
	Name() string
	Update(now time.Time, h workfetch.Host, projects []workfetch.Project, jobs []workfetch.Job, used [][workfetch.NumRsc]float64, dt float64)
}

// Observer may be implemented by a Policy, Scheduler or Fetcher that
// keeps its own accounting (the C++ client's REC, say): after each step
// the loop tells it the instance-seconds each project used, right after
// the Accounter.
type Observer interface {
	Observe(now time.Time, h workfetch.Host, projects []workfetch.Project, used [][workfetch.NumRsc]float64, dt float64)
}

// Charger may be implemented by a Policy whose priorities are not in
// instance-seconds: Charge is schedule.Input.Charge, how much one
// CPU-equivalent of use lowers a project's priority within a scheduling
// pass (0: the schedule's default, right for debts).
type Charger interface {
	Charge(h workfetch.Host) float64
}

// PairedFetcher may be implemented by a Policy that comes with its own
// client's work fetch (the C++ client's REC: RECFetcher): a scenario that
// leaves work_fetch empty, and Options that leave Fetcher nil, get it.
type PairedFetcher interface {
	Fetcher() Fetcher
}

// CoreScheduler is taskrunner/schedule: EDF for tasks the simulation
// says will miss their deadline, then round-robin by priority. It keeps
// scratch space between calls, so one value serves one run at a time.
type CoreScheduler struct{ s schedule.Scheduler }

// Name implements Scheduler.
func (*CoreScheduler) Name() string { return "core" }

// Schedule implements Scheduler.
func (c *CoreScheduler) Schedule(in *schedule.Input, out *schedule.Decision) { c.s.Schedule(in, out) }

// CoreFetcher is workfetch.Choose. NoGuard turns boincd's deadline guard
// off (workfetch.Prefs.DeadlineGuard), leaving the C++ client's rules:
// the variant "wf2-noguard", boincd's default before the policy study.
type CoreFetcher struct{ NoGuard bool }

// Name implements Fetcher.
func (c CoreFetcher) Name() string {
	if c.NoGuard {
		return "wf2-noguard"
	}
	return "core"
}

// Choose implements Fetcher.
func (c CoreFetcher) Choose(now time.Time, h workfetch.Host, p workfetch.Prefs, projects []workfetch.Project, sim *workfetch.SimResult, prio []float64) workfetch.Decision {
	if c.NoGuard {
		p.DeadlineGuard = workfetch.DeadlineGuardOff
	}
	return workfetch.Choose(now, h, p, projects, sim, prio)
}

// DebtAccounter is workfetch.UpdateDebts.
type DebtAccounter struct{}

// Name implements Accounter.
func (DebtAccounter) Name() string { return "debt" }

// Update implements Accounter.
func (DebtAccounter) Update(now time.Time, h workfetch.Host, projects []workfetch.Project, jobs []workfetch.Job, used [][workfetch.NumRsc]float64, dt float64) {
	workfetch.UpdateDebts(now, h, projects, jobs, used, dt)
}

// Variant names accepted by PolicyByName, SchedulerByName and
// FetcherByName (and the CLI's --policy, --sched and --fetch).
const (
	VariantDefault = "default"
)

// PolicyByName returns a project-priority policy by name.
func PolicyByName(name string) (workfetch.Policy, error) {
	switch name {
	case "", VariantDefault, "debt":
		return workfetch.DebtPolicy{}, nil
	case "rec":
		return NewRECPolicy(), nil
	}
	return nil, fmt.Errorf("unknown policy %q: want debt or rec", name)
}

// SchedulerByName returns a CPU/GPU scheduler by name.
func SchedulerByName(name string) (Scheduler, error) {
	switch name {
	case "", VariantDefault, "core", "cs2":
		return &CoreScheduler{}, nil
	case "cs1":
		return &CS1Scheduler{}, nil
	}
	return nil, fmt.Errorf("unknown scheduler %q: want cs2 (core) or cs1", name)
}

// FetcherByName returns a work-fetch policy by name.
func FetcherByName(name string) (Fetcher, error) {
	switch name {
	case "", VariantDefault, "core", "wf2":
		return CoreFetcher{}, nil
	case "wf2-noguard":
		return CoreFetcher{NoGuard: true}, nil
	case "wf1":
		return WF1Fetcher{}, nil
	case "rec":
		return &RECFetcher{}, nil
	}
	return nil, fmt.Errorf("unknown work fetch %q: want wf2 (core), wf2-noguard, wf1 or rec", name)
}
