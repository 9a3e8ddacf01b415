package daemon

import (
	"errors"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/metrics"
	"github.com/boincd/boincd/taskrunner"
	"github.com/boincd/boincd/workfetch"
)

// activeTask is a task with a live process.
type activeTask struct {
	started     time.Time // wall time of this process's start
	baseElapsed float64   // elapsed seconds before this process
	// runStart is when the task last got its CPU (start or resume): the
	// time slice counts from here.
	runStart       time.Time
	lastCheckpoint time.Time
	ranEDF         bool // started as a deadline-miss (EDF) task
	quitting       bool // asked to quit for preemption; restarts later
	suspended      bool
	suspendedAt    time.Time
	pausedSecs     float64
	aborting       bool
	abortStatus    int
	abortMsg       string
	swapSize       float64 // bytes, last sample (GUI swap_size)
	// overLimit: the runner found the task over a resource limit and is
	// aborting it (ABORT_PENDING); the scheduler leaves it alone until
	// it exits.
	overLimit bool
}

func (a *activeTask) elapsed(now time.Time) float64 {
	run := now.Sub(a.started).Seconds() - a.pausedSecs
	if a.suspended {
		run -= now.Sub(a.suspendedAt).Seconds()
	}
	if run < 0 {
		run = 0
	}
	return a.baseElapsed + run
}

// plainProgressAfter is how many seconds a task runs before the daemon
// estimates the progress of an app that has reported none, as
// ACTIVE_TASK::write_gui does ("a minute has elapsed"): until then the
// fraction done is 0, what the app reported, because an app linked with
// the BOINC API in a version without api_version (BOINC's wrapper) is
// known to report only once it has written status, about a second after
// it starts, and an estimate shown before would go backwards.
const plainProgressAfter = 60

// maxRestartsWithoutCheckpoint mirrors the C++ client's limit on premature
// exits before a task is declared broken (ERR_TOO_MANY_EXITS).
const maxRestartsWithoutCheckpoint = 100

// recoverTasks runs once at start: processes left over from a daemon that
// was killed are stopped (they are restarted from their checkpoints under
// our control), slot directories that no task owns are removed, and every
// present file is checked (checkFilesAtStartup).
func (d *Daemon) recoverTasks() {
	d.applyAppPolicy()
	d.checkFilesAtStartup()
	owned := map[int]bool{}
	for _, r := range d.st.results {
		if r.Slot >= 0 && r.Phase == boinc.PhaseComputing {
			owned[r.Slot] = true
			// Also without a recorded pid: the daemon may have died between
			// starting the process and saving its pid.
			taskrunner.KillOrphan(d.opt.DataDir, r.Slot, r.PID)
			if r.PID != 0 {
				r.PID = 0
				d.batch.PutResult(r)
			}
		} else if r.Slot >= 0 {
			r.Slot = -1
			d.batch.PutResult(r)
		}
	}
	entries, err := os.ReadDir(filepath.Join(d.opt.DataDir, "slots"))
	if err != nil {
		return
	}
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil || owned[n] {
			continue
		}
		// One that cannot be removed is skipped by starts until it can
		// (slots.go), as delete_old_slot_dirs leaves it to get_free_slot.
		d.cleanSlot(n)
	}
}

// runnable reports whether the result may be given a CPU now, and if not,
// why (for the log and the status view).
func (d *Daemon) runnable(r *boinc.Result, now time.Time) (bool, string) {
	p := d.st.projects[r.ProjectURL]
	switch {
	case p == nil:
		return false, "project gone"
	case !r.Phase.Runnable():
		return false, r.Phase.String()
	case d.computingSuspended(now):
		return false, "computing suspended by user"
	case p.Suspended:
		return false, "project suspended"
	case p.DetachPending:
		return false, "project detaching"
	case r.SuspendedViaGUI:
		return false, "suspended by user"
	case now.Before(r.RetryAfter):
		return false, "waiting to retry after a temporary exit"
	}
	if _, running := d.active[r.Key()]; !running {
		if f := d.absentFile(r); f != nil {
			return false, "waiting for file " + f.Name
		}
	}
	return true, ""
}

func (d *Daemon) startTask(r *boinc.Result, gpus []int, now time.Time) {
	// A config reload may have changed the policy; while no app may start
	// the task stays queued as it is: nothing is failed or lost.
	d.applyAppPolicy()
	if d.runner.AppsBlocked() != nil || now.Before(d.startsHeldUntil) {
		return
	}
	log := d.taskLog(r)
	p := d.st.projects[r.ProjectURL]
	v := d.st.versionOf(r)
	wu := d.st.wuOf(r)
	if p == nil || v == nil || wu == nil {
		return
	}
	// What runs and what it reads must be what was verified: a file
	// changed, truncated or deleted since is not used but fetched again,
	// and the task starts once it is back.
	if !d.checkTaskFiles(r) {
		log.Warn("task not started: a file it needs is being fetched again")
		return
	}
	app := d.st.apps[entityKey(r.ProjectURL, wu.AppName)]
	if app == nil {
		app = &boinc.App{ProjectURL: r.ProjectURL, Name: wu.AppName}
	}
	files := map[string]*boinc.FileInfo{}
	for _, f := range d.st.inputFiles(r) {
		files[f.Name] = f
	}
	for _, f := range d.st.outputFiles(r) {
		files[f.Name] = f
	}
	resumed := r.Phase == boinc.PhaseComputing && r.Slot >= 0
	if resumed {
		// The app restarts from its last checkpoint: work after it is lost,
		// and so is the time spent on it (as the C++ client counts).
		r.ElapsedTime = r.CheckpointElapsedTime
		r.CurrentCPUTime = r.CheckpointCPUTime
		r.FractionDone = 0
	}
	if r.Slot < 0 {
		n, ok := d.freeSlot()
		if !ok {
			// Every slot number up to the limit is dirty: the task waits
			// in the queue, as get_free_slot's caller leaves it.
			if !d.noSlotWarned {
				d.noSlotWarned = true
				log.Error("task not started: no slot directory can be cleared", slog.Int("slots_tried", d.maxSlots()))
			}
			return
		}
		d.noSlotWarned = false
		r.Slot = n
	}
	if err := r.SetPhase(boinc.PhaseComputing); err != nil {
		log.Error("cannot start task", slog.Any("err", err))
		return
	}
	d.batch.PutResult(r)
	// The slot and phase are on disk before the process exists, so a crash
	// right after the start finds the slot owned and restarts the task.
	if !d.flush() {
		return
	}
	spec := taskrunner.TaskSpec{
		// The version as app_config.xml modifies it: its avg_ncpus and
		// GPU usage reach init_data.xml, its cmdline the command line.
		Project: p, App: app, Version: d.effectiveVersion(v), WU: wu, Result: r, Files: files,
		Host: d.host, Prefs: d.prefs, Slot: r.Slot,
		ResourceShareFraction: d.shareFraction(p),
		// Limits as the C++ client sets them (ACTIVE_TASK::init): the
		// elapsed time the FLOPs bound allows, the workunit's memory bound
		// capped by the RAM the prefs give BOINC, and its disk bound.
		MaxElapsed: taskrunner.ElapsedLimit(wu.RscFpopsBound, d.taskFlops(r)),
		Flops:      d.taskFlops(r),
		MaxMemory:  d.memoryLimit(wu),
		MaxDisk:    wu.RscDiskBound,
	}
	spec.MemoryBoundFromWU = wu.RscMemoryBound > 0 && spec.MaxMemory == wu.RscMemoryBound
	// A container app's work runs in the engine's processes: its CPU
	// time is what it reports, and it is not throttled (taskrunner).
	spec.Container = container.IsApp(v.PlanClass)
	if app.NonCPUIntensive {
		// Non-CPU-intensive apps (network monitors and the like) run as
		// long as they like and are never throttled.
		spec.MaxElapsed, spec.DontThrottle = 0, true
	}
	if rsc, _, ngpus := d.resultRsc(r); rsc.IsGPU() {
		spec.GPUType, spec.GPUDevices, spec.GPUUsage = rsc.String(), append([]int(nil), gpus...), ngpus
	}
	slot, pid, err := d.runner.Start(d.ctx, spec)
	if errors.Is(err, taskrunner.ErrSlotNotCleared) {
		// The task's own slot held another task's files that cannot be
		// removed: the slot, not the task, is at fault. The task leaves
		// it (its checkpoint was never there) and the next start gives
		// it a clean one.
		d.slotDirty(r.Slot, err)
		r.Slot = -1
		d.batch.PutResult(r)
		return
	}
	if errors.Is(err, taskrunner.ErrRootRefused) || errors.Is(err, taskrunner.ErrAppUser) {
		// The policy, not the task, is at fault: it keeps its slot and
		// starts once the policy allows.
		log.Error("cannot start task", slog.Any("err", err))
		return
	}
	if err != nil && diskFull(err) {
		// A full disk is the host's state, not the task's fault: the task
		// stays queued (its slot and checkpoint too), and no task starts
		// until the hold ends, rather than each failing for good.
		d.startsHeldUntil = now.Add(d.opt.RPCBackoffMin)
		log.Error("cannot start task: the disk is full; tasks stay queued and starts are retried",
			slog.Any("err", err), slog.Duration("retry_in", d.opt.RPCBackoffMin))
		return
	}
	if err != nil {
		log.Error("cannot start task", slog.Any("err", err))
		// The slot holds this task's files; the next task given the
		// number must not find them.
		d.cleanTaskSlot(r)
		d.taskFailed(r, boinc.PhaseComputeError, boinc.ErrResultStart, "couldn't start: "+err.Error(), now)
		return
	}
	r.Slot, r.PID = slot, pid
	d.batch.PutResult(r)
	d.active[r.Key()] = &activeTask{started: now, runStart: now, baseElapsed: r.ElapsedTime}
	d.movePendingTrickleDowns(r)
	d.stats.TasksStarted++
	if resumed {
		log.Info("task restarted", slog.Int("slot", slot), slog.Int("pid", pid), slog.Float64("from_checkpoint_cpu", r.CheckpointCPUTime))
	} else {
		log.Info("task started", slog.Int("slot", slot), slog.Int("pid", pid), slog.String("app", app.Name))
	}
}

// taskFlops is the speed the task's estimates assume (app version flops,
// or the benchmark times its CPUs).
func (d *Daemon) taskFlops(r *boinc.Result) float64 {
	if v := d.st.versionOf(r); v != nil {
		if v.Flops > 0 {
			return v.Flops
		}
		return d.host.PFpops * max(v.AvgNCPUs, 1)
	}
	return max(d.host.PFpops, 1e9)
}

// memoryLimit is the workunit's memory bound, or less when the RAM the
// preferences leave to BOINC is smaller.
func (d *Daemon) memoryLimit(wu *boinc.Workunit) float64 {
	lim := wu.RscMemoryBound
	if ram := d.host.MNBytes * d.prefs.RAMMaxUsedBusyPct / 100; ram > 0 && (lim <= 0 || ram < lim) {
		lim = ram
	}
	return lim
}

// pollTasks reads progress from the running tasks every second.
func (d *Daemon) pollTasks(now time.Time) {
	if !d.lastPoll.IsZero() {
		d.accountUsage(now, now.Sub(d.lastPoll).Seconds())
	}
	d.lastPoll = now
	statuses := d.runner.Poll(now)
	own := make(map[string]float64, len(statuses))
	for _, s := range statuses {
		// HostCPUTime: a container task's wrapper and engine CLI are
		// BOINC's load too, beside what the container used.
		own[s.ResultKey] = s.HostCPUTime
	}
	d.evaluateHost(now, own)
	for _, s := range statuses {
		r := d.st.results[s.ResultKey]
		at := d.active[s.ResultKey]
		if r == nil || at == nil {
			continue
		}
		r.CurrentCPUTime = s.CPUTime
		r.ElapsedTime = at.elapsed(now)
		if s.LimitExceeded != "" && !at.overLimit {
			// The C++ client's "Aborting task NAME: exceeded elapsed time
			// limit ..." (check_rsc_limits_exceeded); the exit follows as a
			// computation error with the limit's exit status.
			at.overLimit = true
			d.taskLog(r).Info("task aborted", slog.String("reason", s.LimitExceeded))
		}
		if s.ReportsStatus {
			// The app's own fraction done (ACTIVE_TASK::get_app_status_msg),
			// whatever its version says about the API: BOINC's wrapper
			// reports through shared memory without an api_version.
			r.FractionDone = s.FractionDone
		} else if est := d.estimateDuration(r); est > 0 && r.ElapsedTime > plainProgressAfter {
			// A plain program that never wrote status: progress can only be
			// guessed from elapsed time, as BOINC Manager does (app.cpp),
			// never reaching 100 % before the program ends.
			r.FractionDone = 1 - math.Exp(-r.ElapsedTime/est)
		}
		if s.WorkingSet > r.PeakWorkingSet {
			r.PeakWorkingSet = s.WorkingSet
		}
		at.swapSize = s.SwapSize
		if s.TrickleUps > 0 {
			d.trickleUpQueued(r, s.TrickleUps)
		}
		if len(s.UploadRequests) > 0 {
			d.uploadRequested(r, s.UploadRequests)
		}
		if s.Checkpointed {
			at.lastCheckpoint = now
			r.CheckpointCPUTime = s.CheckpointCPUTime
			r.CheckpointElapsedTime = r.ElapsedTime
			r.Restarts = 0
			// Only checkpoints are persisted: progress between them is lost
			// in a crash anyway, and writing every second would wear disks.
			d.batch.PutResult(r)
		}
	}
	d.checkDeadlinesOfDownloads(now)
}

func (d *Daemon) handleTaskExit(ev taskrunner.Event, now time.Time) {
	// A freed instance may need work (the C++ client's "application
	// exited" work-fetch request).
	d.fetchSoon(now)
	r := d.st.results[ev.ResultKey]
	at := d.active[ev.ResultKey]
	delete(d.active, ev.ResultKey)
	if ev.SlotErr != nil {
		// The task's exit counts as it is; only its slot is left
		// (ACTIVE_TASK::handle_exited_app ignores a failed clean-out).
		d.slotDirty(ev.Slot, ev.SlotErr)
	}
	if r == nil {
		// The task's project was detached while it ran: nothing to record,
		// but its slot must not outlive it.
		d.cleanSlot(ev.Slot)
		return
	}
	log := d.taskLog(r)
	if at != nil {
		r.ElapsedTime = at.elapsed(now)
	}
	r.PID = 0
	x := ev.Exit
	if x.CPUTime > r.CurrentCPUTime {
		r.CurrentCPUTime = x.CPUTime
	}
	if x.PeakWorkingSet > r.PeakWorkingSet {
		r.PeakWorkingSet = x.PeakWorkingSet
	}
	if at != nil && at.aborting {
		d.finishTask(r, x)
		r.Slot = -1
		_ = r.Fail(boinc.PhaseAborted, at.abortStatus, at.abortMsg, now)
		log.Info("task aborted", slog.String("reason", at.abortMsg))
		d.batch.PutResult(r)
		return
	}
	switch x.Outcome {
	case taskrunner.Success:
		d.finishTask(r, x)
		r.Slot = -1
		for _, o := range x.Outputs {
			if f := d.st.file(r.ProjectURL, o.Name); f != nil {
				f.NBytes = float64(o.NBytes)
				f.MD5 = o.MD5
				f.Status = boinc.FilePresent
				d.batch.PutFile(f)
			}
		}
		r.CompletedTime = now
		if p := d.st.projects[r.ProjectURL]; p != nil && !p.DontUseDCF {
			st := d.schedState(r.ProjectURL)
			st.DCF = workfetch.UpdateDCF(st.DCF, r.FinalElapsedTime, d.estimateUncorrected(r))
			d.saveSchedState(r.ProjectURL)
		}
		if err := r.SetPhase(boinc.PhaseUploading); err != nil {
			log.Error("task finished in an unexpected state", slog.Any("err", err))
		}
		if p := d.st.projects[r.ProjectURL]; p != nil && p.TaskFailures > 0 {
			p.TaskFailures, p.TaskBackoffUntil = 0, time.Time{}
			d.batch.PutProject(p)
		}
		d.stats.TasksSucceeded++
		log.Info("computation finished", slog.Float64("elapsed_s", r.FinalElapsedTime), slog.Float64("cpu_s", r.FinalCPUTime))
	case taskrunner.Error:
		d.finishTask(r, x)
		r.Slot = -1
		status := x.ExitStatus
		if status == 0 {
			status = boinc.ExitUnknown
		}
		msg := x.Message
		if msg == "" {
			msg = "process exited with code " + strconv.Itoa(x.ExitStatus)
		}
		log.Warn("computation error", slog.Int("exit_status", status), slog.String("reason", msg))
		d.taskFailed(r, boinc.PhaseComputeError, status, msg, now)
	case taskrunner.Aborted:
		d.finishTask(r, x)
		r.Slot = -1
		_ = r.Fail(boinc.PhaseAborted, boinc.ExitAbortedByClient, x.Message, now)
		log.Info("task aborted", slog.String("reason", x.Message))
	case taskrunner.TemporaryExit:
		r.RetryAfter = now.Add(x.Delay)
		log.Info("task asked to be restarted later", slog.Duration("delay", x.Delay), slog.String("reason", x.Message))
	default: // restart: quit for shutdown or preemption, or premature exit
		if at != nil && at.quitting {
			break // preempted on purpose: not a premature exit
		}
		r.Restarts++
		if r.Restarts > maxRestartsWithoutCheckpoint {
			d.finishTask(r, x)
			r.Slot = -1
			d.taskFailed(r, boinc.PhaseComputeError, boinc.ErrTooManyExits, "too many exits without a checkpoint", now)
		} else if x.Message != "" {
			log.Info("task will restart", slog.String("reason", x.Message))
		}
	}
	d.batch.PutResult(r)
}

func (d *Daemon) finishTask(r *boinc.Result, x taskrunner.ExitInfo) {
	r.FinalCPUTime = r.CurrentCPUTime
	r.FinalElapsedTime = r.ElapsedTime
	r.StderrOut = x.Stderr
	r.FractionDone = 1
}

// taskFailed records a failed task and counts it against its project: a
// project whose tasks keep failing gets its work fetch backed off like a
// failing scheduler, so a broken app cannot cause a download-crash storm.
func (d *Daemon) taskFailed(r *boinc.Result, phase boinc.Phase, status int, msg string, now time.Time) {
	if err := r.Fail(phase, status, msg, now); err != nil {
		d.taskLog(r).Error("cannot record task failure", slog.Any("err", err))
	}
	r.Slot = -1
	d.batch.PutResult(r)
	d.stats.TasksFailed++
	if r.Phase.ReadyToReport() {
		// An errored or aborted job frees its place on the server as a
		// finished one does: report it at once (clearJobBackoff). The C++
		// client clears only after uploads and holds such a result while
		// it is backed off (seen against the real server: time_limit and
		// cancel cases).
		d.clearJobBackoff(r)
	}
	p := d.st.projects[r.ProjectURL]
	if p == nil {
		return
	}
	p.TaskFailures++
	if p.TaskFailures >= 2 {
		delay := boinc.ExponentialBackoff(p.TaskFailures-2, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
		p.TaskBackoffUntil = now.Add(delay)
		d.projectLog(p).Warn("tasks keep failing; holding off work fetch from this project",
			slog.Int("consecutive_failures", p.TaskFailures), slog.Duration("backoff", delay.Round(time.Second)))
	}
	d.batch.PutProject(p)
}

// abortTask ends a task for good: its process (if any) is killed and the
// result is reported as aborted with status.
func (d *Daemon) abortTask(r *boinc.Result, status int, msg string, now time.Time) {
	if at, ok := d.active[r.Key()]; ok {
		at.aborting, at.abortStatus, at.abortMsg = true, status, msg
		if err := d.runner.Kill(r.Key()); err != nil {
			d.taskLog(r).Warn("cannot kill task", slog.Any("err", err))
		}
		return
	}
	d.cleanTaskSlot(r)
	if err := r.Fail(boinc.PhaseAborted, status, msg, now); err != nil {
		d.taskLog(r).Warn("cannot abort task", slog.Any("err", err))
		return
	}
	d.taskLog(r).Info("task aborted", slog.String("reason", msg))
	d.batch.PutResult(r)
}

// checkDeadlinesOfDownloads is a hook for the periodic checks that need a
// clock tick but no event: results whose deadline passed while their files
// were still downloading are not worth computing.
func (d *Daemon) checkDeadlinesOfDownloads(now time.Time) {
	for _, r := range d.st.results {
		if (r.Phase == boinc.PhaseNew || r.Phase == boinc.PhaseDownloading) && !r.ReportDeadline.IsZero() && now.After(r.ReportDeadline) {
			d.abortTask(r, boinc.ExitAbortedByClient, "deadline passed before the task's files were downloaded", now)
		}
	}
}

// Health warnings of the app policy (the names boincd status and the
// metrics show).
const (
	healthAppsRefusedRoot = metrics.HealthAppsRefusedRoot
	healthAppUserUnusable = metrics.HealthAppUserUnusable
)

// appPolicy is the account policy the config asks for.
func (d *Daemon) appPolicy() taskrunner.AppPolicy {
	if d.cfg == nil {
		return taskrunner.AppPolicy{}
	}
	return taskrunner.AppPolicy{AppUser: d.cfg.AppUser, AllowRoot: d.cfg.AllowRootApps}
}

// applyAppPolicy hands the config's app policy to the runner when it
// changed (at start and after a reload) and logs the outcome once.
func (d *Daemon) applyAppPolicy() {
	p := d.appPolicy()
	if cur, set := d.runner.AppPolicy(); set && cur == p {
		return
	}
	err := d.runner.SetAppPolicy(p)
	name, msg := d.appPolicyProblem()
	switch {
	case name != "":
		d.log.Error(msg, slog.String("warning", name))
	case err != nil:
		d.log.Error("science apps cannot be started", slog.Any("err", err))
	case p.AppUser != "":
		d.log.Info("science apps run as app_user", slog.String("user", p.AppUser))
	case p.AllowRoot && os.Geteuid() == 0:
		d.log.Warn("science apps run as root (allow_root_apps = true)")
	}
}

// appPolicyProblem is the health warning (name and message) that says
// why no science app is started, or "" when apps may start.
func (d *Daemon) appPolicyProblem() (name, msg string) {
	if d.runner == nil {
		return "", ""
	}
	err := d.runner.AppsBlocked()
	switch {
	case err == nil:
		return "", ""
	case errors.Is(err, taskrunner.ErrRootRefused):
		return healthAppsRefusedRoot, err.Error() + "; tasks stay queued until then"
	case errors.Is(err, taskrunner.ErrAppUser):
		return healthAppUserUnusable, err.Error() + "; tasks stay queued until it is fixed"
	}
	return "", ""
}
