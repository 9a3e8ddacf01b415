package daemon

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/hostcond"
)

// Run modes (lib/common_defs.h), as GUI RPC carries them.
const (
	ModeAlways  = guirpc.ModeAlways
	ModeAuto    = guirpc.ModeAuto
	ModeNever   = guirpc.ModeNever
	ModeRestore = guirpc.ModeRestore
)

// Suspend reasons reported in cc_status (a bitmask, lib/common_defs.h).
const (
	SuspendUserReq = 4
)

// runMode is one of the three user switches (computing, GPU, network):
// a permanent mode and, for a while, a temporary one (set_run_mode
// always 3600 = "always for an hour, then back").
type runMode struct {
	Perm      int       `json:"perm"`
	Temp      int       `json:"temp,omitempty"`
	TempUntil time.Time `json:"temp_until,omitempty"`
}

// Current is the mode in force at now.
func (m runMode) Current(now time.Time) int {
	if m.Temp != 0 && now.Before(m.TempUntil) {
		return m.Temp
	}
	if m.Perm == 0 {
		return ModeAuto
	}
	return m.Perm
}

// Delay is how many seconds the temporary mode still lasts.
func (m runMode) Delay(now time.Time) float64 {
	if m.Temp != 0 && now.Before(m.TempUntil) {
		return m.TempUntil.Sub(now).Seconds()
	}
	return 0
}

func (m *runMode) set(mode int, dur time.Duration, now time.Time) error {
	switch mode {
	case ModeAlways, ModeAuto, ModeNever:
	case ModeRestore:
		m.Temp, m.TempUntil = 0, time.Time{}
		return nil
	default:
		return fmt.Errorf("unknown run mode %d", mode)
	}
	if dur > 0 {
		m.Temp, m.TempUntil = mode, now.Add(dur)
		return nil
	}
	m.Perm, m.Temp, m.TempUntil = mode, 0, time.Time{}
	return nil
}

// modes is the persisted set of user switches.
type modes struct {
	Run     runMode `json:"run"`
	GPU     runMode `json:"gpu"`
	Network runMode `json:"network"`
}

const modesMetaKey = "modes"

// computingSuspended: the volunteer switched computing off, or (in
// "auto" mode) a host condition suspends it.
func (d *Daemon) computingSuspended(now time.Time) bool {
	cpu, _, _ := d.suspendReasons(now)
	return cpu != 0
}

// networkSuspended: the volunteer switched the network off, or it is
// outside the network time window.
func (d *Daemon) networkSuspended(now time.Time) bool {
	_, _, n := d.suspendReasons(now)
	// The transfer quota, the last reason in precedence, holds back file
	// transfers only (startTransfers): scheduler requests still go out.
	return n != 0 && n != hostcond.ReasonNetworkQuota
}

// SetMode changes one of the run, gpu or network modes.
func (d *Daemon) setMode(which string, mode int, dur time.Duration, now time.Time) error {
	var m *runMode
	switch which {
	case "run":
		m = &d.modes.Run
	case "gpu":
		m = &d.modes.GPU
	case "network":
		m = &d.modes.Network
	default:
		return fmt.Errorf("unknown mode switch %q", which)
	}
	if err := m.set(mode, dur, now); err != nil {
		return err
	}
	d.batch.PutMeta(modesMetaKey, &d.modes)
	d.log.Info("mode changed", slog.String("switch", which), slog.Int("mode", m.Current(now)), slog.Duration("for", dur))
	d.fetchSoon(now)
	return nil
}

// Errors the control operations return; their text is what GUI RPC
// clients show (the C++ client's wording).
var (
	ErrNoSuchProject   = guirpc.ErrNoSuchProject
	ErrNoSuchResult    = guirpc.ErrNoSuchResult
	ErrNoSuchFile      = guirpc.ErrNoSuchFile
	ErrAlreadyAttached = guirpc.ErrAlreadyAttached
)

// projectOp carries out a volunteer's action on a project.
func (d *Daemon) projectOp(url, op string, now time.Time) error {
	canon, err := boinc.CanonicalMasterURL(url)
	if err != nil {
		return ErrNoSuchProject
	}
	p := d.st.projects[canon]
	if p == nil {
		return ErrNoSuchProject
	}
	log := d.projectLog(p)
	switch op {
	case "suspend":
		p.Suspended = true
		log.Info("project suspended by user")
	case "resume":
		p.Suspended = false
		log.Info("project resumed by user")
	case "nomorework":
		p.NoNewTasks = true
		log.Info("project won't get new tasks (set by user)")
	case "allowmorework":
		p.NoNewTasks = false
		log.Info("project may get new tasks again (set by user)")
	case "update":
		p.SchedRPCPending = boinc.RPCUserReq
		p.MinRPCTime = time.Time{}
		p.RPCFailures = 0
		p.TaskBackoffUntil = time.Time{}
		st := d.schedState(canon)
		for r := range st.Backoff {
			st.Backoff[r].Clear()
		}
		d.saveSchedState(canon)
		log.Info("update requested by user")
	case "reset":
		d.resetProject(p, now)
	case "detach":
		if p.Origin == originAcctMgr {
			log.Info("This project must be detached using the account manager web site.")
			return guirpc.ErrMustDetachViaAM
		}
		d.noteRPCDetach(p)
		d.removeProject(p)
		return nil
	case "detach_when_done":
		p.NoNewTasks = true
		p.DetachWhenDone = true
		log.Info("project will be detached when its tasks are done")
	case "dont_detach_when_done":
		// As the C++ client: "detach when done" set "no new tasks", and
		// taking it back clears both.
		p.DetachWhenDone = false
		p.NoNewTasks = false
		log.Info("project won't be detached when done (set by user)")
	default:
		return fmt.Errorf("unknown project operation %q", op)
	}
	d.batch.PutProject(p)
	d.fetchSoon(now)
	return nil
}

// resetProject drops a project's tasks and files but keeps it attached;
// it then asks the project for work afresh.
//
// An anonymous platform project keeps app_info.xml's apps, versions and
// files, and its directory is not cleared: only the files the project
// sent go (CLIENT_STATE::reset_project).
func (d *Daemon) resetProject(p *boinc.Project, now time.Time) {
	url := p.MasterURL
	var sent []string // files the project sent, for an anonymous platform project
	if d.anonymous(url) {
		for _, f := range d.st.files {
			if f.ProjectURL == url && !f.AnonymousPlatform {
				sent = append(sent, d.filePath(f))
			}
		}
	}
	d.dropProjectWork(url)
	d.batch.DeleteProjectAll(url)
	d.installAppInfo(url)
	p.SchedRPCPending = boinc.RPCUserReq
	p.MinRPCTime = time.Time{}
	// A reset is the volunteer's way to trust the project afresh: the
	// next reply's code-signing key is learned as at attach.
	p.CodeSignKey = ""
	d.batch.PutProject(p)
	if d.flush() {
		if d.anonymous(url) {
			for _, path := range sent {
				removeQuiet(path)
			}
			d.projectLog(p).Info("project reset by user: tasks and the project's files removed; app_info.xml's apps kept")
			return
		}
		_ = os.RemoveAll(d.projectDir(url))
		_ = os.MkdirAll(d.projectDir(url), 0o755)
	}
	d.projectLog(p).Info("project reset by user: tasks and files removed")
}

// resultOp carries out a volunteer's action on a task.
func (d *Daemon) resultOp(url, name, op string, now time.Time) error {
	canon, err := boinc.CanonicalMasterURL(url)
	if err != nil {
		return ErrNoSuchResult
	}
	r := d.st.results[entityKey(canon, name)]
	if r == nil {
		return ErrNoSuchResult
	}
	log := d.taskLog(r)
	switch op {
	case "suspend":
		r.SuspendedViaGUI = true
		log.Info("task suspended by user")
	case "resume":
		r.SuspendedViaGUI = false
		log.Info("task resumed by user")
	case "abort":
		if r.Phase.ReadyToReport() {
			return errors.New("task is already finished")
		}
		if r.Phase == boinc.PhaseUploading {
			d.abortUploads(r)
		}
		d.abortTask(r, boinc.ExitAbortedViaGUI, eventlog.AbortedByUser, now)
		return nil
	default:
		return fmt.Errorf("unknown task operation %q", op)
	}
	d.batch.PutResult(r)
	return nil
}

func (d *Daemon) abortUploads(r *boinc.Result) {
	for _, f := range d.st.outputFiles(r) {
		if x, ok := d.xfers[f.Key()]; ok {
			x.cancel()
			delete(d.xfers, f.Key())
		}
	}
}

// transferOp retries or aborts a file transfer.
func (d *Daemon) transferOp(url, file, op string, now time.Time) error {
	canon, err := boinc.CanonicalMasterURL(url)
	if err != nil {
		return ErrNoSuchFile
	}
	f := d.st.files[entityKey(canon, file)]
	if f == nil {
		return ErrNoSuchFile
	}
	switch op {
	case "retry":
		f.Xfer.NextRequestTime = time.Time{}
	case "abort":
		if x, ok := d.xfers[f.Key()]; ok {
			x.cancel()
			delete(d.xfers, f.Key())
		}
		f.Status = boinc.ErrAbortedViaGUI
		f.ErrorMsg = "transfer aborted by user"
	default:
		return fmt.Errorf("unknown transfer operation %q", op)
	}
	d.log.Info("file transfer "+op+" by user", slog.String("project", canon), slog.String("file", file))
	d.batch.PutFile(f)
	return nil
}
