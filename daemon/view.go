package daemon

import (
	"context"
	"sort"
	"time"

	"github.com/boincd/boincd/boinc"
)

// View is a read-only copy of what the daemon is doing, for the demo's
// progress display and status tools.
type View struct {
	Now       time.Time
	Projects  []ProjectView
	Tasks     []TaskView
	Transfers []TransferView
	Stats     Stats
	CPUs      int
}

type ProjectView struct {
	URL, Name   string
	Status      string
	Tasks       int
	HostID      int64
	MinRPCTime  time.Time
	RPCFailures int
}

type TaskView struct {
	Project, Name string
	Phase         boinc.Phase
	Running       bool
	Suspended     bool
	FractionDone  float64
	ElapsedSecs   float64
	CPUSecs       float64
	RemainingSecs float64
	Deadline      time.Time
	ExitStatus    int
	Slot          int
}

type TransferView struct {
	Project, File string
	Upload        bool
}

// Snapshot returns the current view, computed on the owner goroutine.
func (d *Daemon) Snapshot(ctx context.Context) (View, error) {
	var v View
	err := d.peek(ctx, func() { v = d.view(time.Now()) })
	return v, err
}

func (d *Daemon) view(now time.Time) View {
	v := View{Now: now, Stats: d.stats, CPUs: d.usableCPUs()}
	for _, p := range d.st.sortedProjects() {
		pv := ProjectView{URL: p.MasterURL, Name: p.DisplayName(), HostID: p.HostID, MinRPCTime: p.MinRPCTime, RPCFailures: p.RPCFailures}
		switch {
		case p.DetachPending:
			pv.Status = "detaching"
		case p.Suspended:
			pv.Status = "suspended"
		default:
			pv.Status = d.noFetchReason(p, now)
		}
		pv.Tasks = len(d.st.projectResults(p.MasterURL))
		v.Projects = append(v.Projects, pv)
	}
	for _, r := range d.st.sortedResults() {
		at := d.active[r.Key()]
		tv := TaskView{
			Project: r.ProjectURL, Name: r.Name, Phase: r.Phase, FractionDone: r.FractionDone,
			ElapsedSecs: r.ElapsedTime, CPUSecs: r.CurrentCPUTime, Deadline: r.ReportDeadline,
			ExitStatus: r.ExitStatus, Slot: r.Slot,
		}
		if r.Phase.Unfinished() {
			tv.RemainingSecs = d.estimateRemaining(r)
		}
		if at != nil {
			tv.Running = !at.suspended
			tv.Suspended = at.suspended
			tv.ElapsedSecs = at.elapsed(now)
		}
		v.Tasks = append(v.Tasks, tv)
	}
	for k, x := range d.xfers {
		f := d.st.files[k]
		if f == nil {
			continue
		}
		v.Transfers = append(v.Transfers, TransferView{Project: x.project, File: f.Name, Upload: x.upload})
	}
	sort.Slice(v.Transfers, func(i, j int) bool { return v.Transfers[i].File < v.Transfers[j].File })
	return v
}

// FinalView is the view after Run has returned (the loop no longer owns
// the state then, so it is read directly). Calling it while Run is still
// running is a data race.
func (d *Daemon) FinalView() View {
	if d.st == nil {
		return View{Now: time.Now()}
	}
	return d.view(time.Now())
}
