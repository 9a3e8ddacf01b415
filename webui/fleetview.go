package webui

import (
	"fmt"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/guirpc/client"
)

// localHostID names this host in the fleet's forms.
const localHostID = "local"

// fleetTasksShown bounds the tasks shown per host: the fleet view shows
// what runs, not a queue.
const fleetTasksShown = 50

// fleetView is the Fleet tab: this host and every added one.
type fleetView struct {
	Enabled bool   // the dashboard has a data directory to keep a fleet in
	Problem string // the fleet file was unreadable and set aside
	Hosts   []fleetHostView
}

// fleetHostView is one host's card.
type fleetHostView struct {
	ID, Name, Addr string
	Local          bool
	Status         string // connected, unreachable, ...
	OK             bool
	Version        string
	Seen           string // when a remote host was last read
	Modes          []modeView
	Tasks          []taskView
	Active, Total  int // tasks with a process or slot, and all tasks
	Problems       []string
}

// fleetTask is one task button's form on the Fleet tab.
type fleetTask struct {
	CSRF, Host, HostName string
	T                    taskView
	Op, Label            string
}

func fleetTaskOp(csrf string, h fleetHostView, t taskView, op, label string) fleetTask {
	return fleetTask{CSRF: csrf, Host: h.ID, HostName: h.Name, T: t, Op: op, Label: label}
}

// hostFacts is what a host's problems are judged from, whichever side
// (the daemon's Snapshot or another host's GUI RPC replies) it came from.
type hostFacts struct {
	health                     []string
	taskSusp, gpuSusp, netSusp client.SuspendReason
	tasks, errored             int
	backoffs                   []string
}

// problemsOf lists a host's problems, worst first.
func problemsOf(f hostFacts) []string {
	out := append([]string(nil), f.health...)
	// SUSPEND_REASON_CPU_THROTTLE is the CPU-time limit at work, not a
	// suspension anyone needs to hear about.
	const cpuThrottle = boinc.SuspendCPUThrottle
	if f.taskSusp != 0 && f.taskSusp != cpuThrottle {
		out = append(out, "Computing suspended: "+f.taskSusp.String())
	}
	if f.gpuSusp != 0 && f.gpuSusp != f.taskSusp && f.gpuSusp != cpuThrottle {
		out = append(out, "GPU suspended: "+f.gpuSusp.String())
	}
	if f.netSusp != 0 {
		out = append(out, "Network suspended: "+f.netSusp.String())
	}
	if f.errored > 0 {
		out = append(out, fmt.Sprintf("%d task%s ended in error", f.errored, plural(f.errored)))
	}
	if f.tasks == 0 {
		out = append(out, "No tasks")
	}
	return append(out, f.backoffs...)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// backoffText is a project's scheduler backoff after failed requests,
// as the Manager's project status shows it ("Communication deferred").
func backoffText(name string, failures int, until time.Time, now time.Time) (string, bool) {
	if failures == 0 || !until.After(now) {
		return "", false
	}
	return fmt.Sprintf("%s: %d failed scheduler request%s, next in %s", name, failures, plural(failures), duration(until.Sub(now).Seconds())), true
}

// erroredPhase: a task that failed here (not one the user aborted).
func erroredPhase(p boinc.Phase) bool {
	return p == boinc.PhaseComputeError || p == boinc.PhaseDownloadFailed || p == boinc.PhaseUploadFailed
}

// fleetOf builds the Fleet tab, and marks the fleet as watched so that
// the pollers run while a dashboard is open.
func (s *Server) fleetOf(st *guirpc.State, base *view) fleetView {
	if s.fleet == nil {
		return fleetView{}
	}
	s.fleetp.watch()
	fv := fleetView{Enabled: true, Problem: s.fleetProblem}
	fv.Hosts = append(fv.Hosts, localHostOf(st, base))
	for _, h := range s.fleet.Hosts() {
		fv.Hosts = append(fv.Hosts, remoteHostOf(h, s.fleetp.snap(h.ID)))
	}
	return fv
}

func localHostOf(st *guirpc.State, base *view) fleetHostView {
	hv := fleetHostView{ID: localHostID, Name: st.Host.DomainName, Addr: "this computer", Local: true, Status: "connected", OK: true,
		Version: fmt.Sprintf("boincd (BOINC %d.%d.%d)", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease), Modes: base.Modes}
	if hv.Name == "" {
		hv.Name = "This computer"
	}
	names := map[string]string{}
	suspended := map[string]bool{}
	f := hostFacts{tasks: len(st.Results)}
	now := time.Now()
	for i := range st.Projects {
		p := &st.Projects[i]
		names[p.MasterURL] = p.DisplayName()
		suspended[p.MasterURL] = p.Suspended
		if t, ok := backoffText(p.DisplayName(), p.RPCFailures, p.MinRPCTime, now); ok {
			f.backoffs = append(f.backoffs, t)
		}
	}
	for _, w := range st.CCStatus.Health {
		f.health = append(f.health, w.Message)
	}
	cc := st.CCStatus
	f.taskSusp, f.gpuSusp, f.netSusp = client.SuspendReason(cc.TaskSuspendReason), client.SuspendReason(cc.GPUSuspendReason), client.SuspendReason(cc.NetworkSuspendReason)
	hv.Total = len(st.Results)
	for i := range st.Results {
		r := &st.Results[i]
		if erroredPhase(r.Phase) {
			f.errored++
		}
		if r.Active == nil {
			continue
		}
		hv.Active++
		if len(hv.Tasks) < fleetTasksShown {
			hv.Tasks = append(hv.Tasks, taskOf(r, names, suspended, &cc))
		}
	}
	hv.Problems = problemsOf(f)
	return hv
}

func remoteHostOf(h FleetHost, snap remoteSnap) fleetHostView {
	hv := fleetHostView{ID: h.ID, Name: h.Name, Addr: h.Addr, Status: snap.Status.String(), OK: snap.Status == hostOK, Version: snap.Version}
	if !snap.At.IsZero() {
		hv.Seen = snap.At.Local().Format("15:04:05")
	}
	switch snap.Status {
	case hostUnreachable:
		hv.Problems = append(hv.Problems, "Unreachable: "+snap.Err)
	case hostAuthFailed:
		hv.Problems = append(hv.Problems, "The GUI RPC password was refused: remove the host and add it again with the password of its gui_rpc_auth.cfg")
	}
	if snap.CC == nil { // never read
		return hv
	}
	cc := ccOf(snap.CC)
	hv.Modes = []modeView{
		modeOf("run", "Computing", cc.TaskMode, cc.TaskModePerm, cc.TaskModeDelay, cc.TaskSuspendReason),
		modeOf("gpu", "GPU", cc.GPUMode, cc.GPUModePerm, cc.GPUModeDelay, cc.GPUSuspendReason),
		modeOf("network", "Network", cc.NetworkMode, cc.NetworkModePerm, cc.NetworkModeDelay, cc.NetworkSuspendReason),
	}
	names := map[string]string{}
	suspended := map[string]bool{}
	f := hostFacts{tasks: len(snap.Results), taskSusp: snap.CC.TaskSuspendReason, gpuSusp: snap.CC.GPUSuspendReason, netSusp: snap.CC.NetworkSuspendReason}
	now := time.Now()
	for i := range snap.Proj {
		p := &snap.Proj[i]
		names[p.MasterURL] = p.DisplayName()
		suspended[p.MasterURL] = p.SuspendedViaGUI
		if t, ok := backoffText(p.DisplayName(), p.NRPCFailures, p.MinRPCTime, now); ok {
			f.backoffs = append(f.backoffs, t)
		}
	}
	for _, w := range snap.CC.Health {
		f.health = append(f.health, w.Message)
	}
	hv.Total = len(snap.Results)
	for i := range snap.Results {
		r := resultInfoOf(&snap.Results[i])
		if erroredPhase(r.Phase) {
			f.errored++
		}
		if r.Active == nil {
			continue
		}
		hv.Active++
		if len(hv.Tasks) < fleetTasksShown {
			hv.Tasks = append(hv.Tasks, taskOf(&r, names, suspended, &cc))
		}
	}
	hv.Problems = append(hv.Problems, problemsOf(f)...)
	return hv
}

// ccOf is a GUI RPC reply's cc_status in the daemon's form, so that one
// taskState and modeOf describe every host.
func ccOf(c *client.CCStatus) guirpc.CCStatus {
	return guirpc.CCStatus{
		NetworkStatus:     int(c.NetworkStatus),
		TaskSuspendReason: int(c.TaskSuspendReason), TaskMode: int(c.TaskMode), TaskModePerm: int(c.TaskModePerm), TaskModeDelay: c.TaskModeDelay.Seconds(),
		GPUSuspendReason: int(c.GPUSuspendReason), GPUMode: int(c.GPUMode), GPUModePerm: int(c.GPUModePerm), GPUModeDelay: c.GPUModeDelay.Seconds(),
		NetworkSuspendReason: int(c.NetworkSuspendReason), NetworkMode: int(c.NetworkMode), NetworkModePerm: int(c.NetworkModePerm), NetworkModeDelay: c.NetworkModeDelay.Seconds(),
	}
}

// resultInfoOf is a GUI RPC result in the daemon's form: the wire state
// (RESULT_*) back to a phase, the active task's fields into Active.
func resultInfoOf(r *client.Result) guirpc.ResultInfo {
	ri := guirpc.ResultInfo{
		Result: boinc.Result{
			ProjectURL: r.ProjectURL, Name: r.Name, WUName: r.WUName, ReportDeadline: r.ReportDeadline,
			ExitStatus: r.ExitStatus, FinalElapsedTime: r.FinalElapsedTime.Seconds(), SuspendedViaGUI: r.SuspendedViaGUI,
		},
		EstimatedRemaining: r.EstimatedCPUTimeRemaining.Seconds(),
		EDFScheduled:       r.EDFScheduled, CoprocMissing: r.CoprocMissing,
		SchedulerWait: r.SchedulerWait, SchedulerWaitWhy: r.SchedulerWaitReason, NetworkWait: r.NetworkWait,
		Resources: r.Resources,
	}
	ri.Phase = boinc.PhaseOf(r.State, r.HasActiveTask, r.GotServerAck)
	if r.HasActiveTask {
		ri.Active = &guirpc.ActiveTask{
			ActiveState: int(r.ActiveTaskState), SchedulerState: int(r.SchedulerState), PID: r.PID, Slot: r.Slot,
			FractionDone: r.FractionDone, ElapsedTime: r.ElapsedTime.Seconds(), CPUTime: r.CurrentCPUTime.Seconds(),
			TooLarge: r.TooLarge, NeedsShmem: r.NeedsShmem,
		}
	}
	return ri
}

// fleetActionOK: the actions the Fleet tab offers, for any host.
func fleetActionOK(kind string) bool {
	switch kind {
	case "task", "project", "mode", "snooze":
		return true
	}
	return false
}
