package boinc

import "strconv"

// The GUI RPC wire's enumerations, declared once here for both ends: the
// GUI RPC server (package guirpc, through the daemon) writes them and
// the GUI RPC client (package guirpc/client) reads them.

// RunMode is a task, GPU or network mode (lib/common_defs.h RUN_MODE_*).
type RunMode int

const (
	RunModeAlways  RunMode = 1
	RunModeAuto    RunMode = 2
	RunModeNever   RunMode = 3
	RunModeRestore RunMode = 4
)

// String uses boinccmd's words.
func (m RunMode) String() string {
	switch m {
	case RunModeAlways:
		return "always"
	case RunModeAuto:
		return "according to prefs"
	case RunModeNever:
		return "never"
	case RunModeRestore:
		return "restore"
	}
	return "mode " + strconv.Itoa(int(m))
}

// ResultState is a result's wire state (RESULT_* in lib/common_defs.h).
type ResultState int

const (
	ResultNew              ResultState = 0
	ResultFilesDownloading ResultState = 1
	ResultFilesDownloaded  ResultState = 2
	ResultComputeError     ResultState = 3
	ResultFilesUploading   ResultState = 4
	ResultFilesUploaded    ResultState = 5
	ResultAborted          ResultState = 6
	ResultUploadFailed     ResultState = 7
)

var resultStateWords = [...]string{"new", "downloading", "downloaded", "compute error", "uploading", "uploaded", "aborted", "upload failed"}

// String uses boinccmd's words.
func (s ResultState) String() string {
	if s >= 0 && int(s) < len(resultStateWords) {
		return resultStateWords[s]
	}
	return "state " + strconv.Itoa(int(s))
}

// WireState is the RESULT_* state a GUI is shown for a result in phase p
// (the C++ client's RESULT::state for the same point of its life). A
// reported or acknowledged result has no state of its own here: ok is
// false, and the caller gives the state it was reported with.
func (p Phase) WireState() (s ResultState, ok bool) {
	switch p {
	case PhaseNew:
		return ResultNew, true
	case PhaseDownloading, PhaseDownloadFailed:
		return ResultFilesDownloading, true
	case PhaseDownloaded, PhaseComputing:
		return ResultFilesDownloaded, true
	case PhaseComputeError:
		return ResultComputeError, true
	case PhaseUploading:
		return ResultFilesUploading, true
	case PhaseUploaded:
		return ResultFilesUploaded, true
	case PhaseAborted:
		return ResultAborted, true
	case PhaseUploadFailed:
		return ResultUploadFailed, true
	}
	return 0, false
}

// PhaseOf is WireState's inverse, for a result another client reports
// over GUI RPC: its state, whether it has an active task, and whether the
// server acknowledged it.
func PhaseOf(s ResultState, active, acked bool) Phase {
	switch s {
	case ResultFilesDownloading:
		return PhaseDownloading
	case ResultFilesDownloaded:
		if active {
			return PhaseComputing
		}
		return PhaseDownloaded
	case ResultComputeError:
		return PhaseComputeError
	case ResultFilesUploading:
		return PhaseUploading
	case ResultFilesUploaded:
		if acked {
			return PhaseAcked
		}
		return PhaseUploaded
	case ResultAborted:
		return PhaseAborted
	case ResultUploadFailed:
		return PhaseUploadFailed
	}
	return PhaseNew
}

// ActiveTaskState is PROCESS_* of lib/common_defs.h.
type ActiveTaskState int

const (
	TaskUninitialized ActiveTaskState = 0
	TaskExecuting     ActiveTaskState = 1
	TaskExited        ActiveTaskState = 2
	TaskWasSignaled   ActiveTaskState = 3
	TaskExitUnknown   ActiveTaskState = 4
	TaskAbortPending  ActiveTaskState = 5
	TaskAborted       ActiveTaskState = 6
	TaskCouldntStart  ActiveTaskState = 7
	TaskQuitPending   ActiveTaskState = 8
	TaskSuspended     ActiveTaskState = 9
	TaskCopyPending   ActiveTaskState = 10
)

var taskStateWords = [...]string{"UNINITIALIZED", "EXECUTING", "EXITED", "WAS_SIGNALED", "EXIT_UNKNOWN", "ABORT_PENDING", "ABORTED", "COULDNT_START", "QUIT_PENDING", "SUSPENDED", "COPY_PENDING"}

// String uses boinccmd's words.
func (s ActiveTaskState) String() string {
	if s >= 0 && int(s) < len(taskStateWords) {
		return taskStateWords[s]
	}
	return "STATE_" + strconv.Itoa(int(s))
}

// SchedulerState is CPU_SCHED_* : whether the scheduler wants the task to run.
type SchedulerState int

const (
	SchedUninitialized SchedulerState = 0
	SchedPreempted     SchedulerState = 1
	SchedScheduled     SchedulerState = 2
)

func (s SchedulerState) String() string {
	switch s {
	case SchedUninitialized:
		return "uninitialized"
	case SchedPreempted:
		return "preempted"
	case SchedScheduled:
		return "scheduled"
	}
	return "state " + strconv.Itoa(int(s))
}
