package boinc

import (
	"fmt"
	"time"
)

// Phase is where a result is in its life on this host. It is finer than
// BOINC's wire state (WireState maps it back) because the daemon must know,
// after a crash, whether a task was computing, whether its outputs were
// uploaded and whether the server has acknowledged the report.
//
//	New ──▶ Downloading ──▶ Downloaded ──▶ Computing ──▶ Uploading ──▶ Uploaded ─┐
//	  │          │               │             │             │                   │
//	  │          └▶ DownloadFailed            └▶ ComputeError └▶ UploadFailed    │
//	  └──────────┴───────────────┴─────────────┴─────────────┴─▶ Aborted         │
//	                                                                             ▼
//	      (any of Uploaded, ComputeError, DownloadFailed, UploadFailed, Aborted) ──▶ Reported ──▶ Acked
//
// A result in a "ready" phase is reported in the next suitable scheduler
// RPC. Reported means a request carrying it got a valid reply without an
// ack (it is sent again); Acked is final and the result is then forgotten.
type Phase int

const (
	PhaseNew Phase = iota
	PhaseDownloading
	PhaseDownloaded
	PhaseComputing
	PhaseUploading
	PhaseUploaded
	PhaseComputeError
	PhaseDownloadFailed
	PhaseUploadFailed
	PhaseAborted
	PhaseReported
	PhaseAcked
)

var phaseNames = [...]string{
	PhaseNew:            "new",
	PhaseDownloading:    "downloading",
	PhaseDownloaded:     "downloaded",
	PhaseComputing:      "computing",
	PhaseUploading:      "uploading",
	PhaseUploaded:       "uploaded",
	PhaseComputeError:   "compute error",
	PhaseDownloadFailed: "download failed",
	PhaseUploadFailed:   "upload failed",
	PhaseAborted:        "aborted",
	PhaseReported:       "reported",
	PhaseAcked:          "acked",
}

func (p Phase) String() string {
	if p >= 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", int(p))
}

// transitions lists every legal move. Anything else is a bug in the caller
// and is refused, so a corrupt or replayed event cannot, say, resurrect an
// acknowledged result or report one twice.
var transitions = map[Phase][]Phase{
	PhaseNew:            {PhaseDownloading, PhaseDownloaded, PhaseAborted, PhaseDownloadFailed},
	PhaseDownloading:    {PhaseDownloaded, PhaseDownloadFailed, PhaseAborted},
	PhaseDownloaded:     {PhaseComputing, PhaseAborted, PhaseDownloading},
	PhaseComputing:      {PhaseUploading, PhaseComputeError, PhaseAborted},
	PhaseUploading:      {PhaseUploaded, PhaseUploadFailed, PhaseAborted},
	PhaseUploaded:       {PhaseReported, PhaseAcked},
	PhaseComputeError:   {PhaseReported, PhaseAcked},
	PhaseDownloadFailed: {PhaseReported, PhaseAcked},
	PhaseUploadFailed:   {PhaseReported, PhaseAcked},
	PhaseAborted:        {PhaseReported, PhaseAcked},
	PhaseReported:       {PhaseAcked},
}

// CanTransition reports whether from → to is a legal move.
func CanTransition(from, to Phase) bool {
	for _, p := range transitions[from] {
		if p == to {
			return true
		}
	}
	return false
}

// ReadyToReport is true for phases whose result must go to the server.
func (p Phase) ReadyToReport() bool {
	switch p {
	case PhaseUploaded, PhaseComputeError, PhaseDownloadFailed, PhaseUploadFailed, PhaseAborted, PhaseReported:
		return true
	}
	return false
}

// Runnable is true when the task may be given a CPU.
func (p Phase) Runnable() bool { return p == PhaseDownloaded || p == PhaseComputing }

// Unfinished is true while the task still needs computing.
func (p Phase) Unfinished() bool { return p <= PhaseComputing }

// Result is one task: a result instance of a workunit, as the server sent it
// plus what happened to it here.
type Result struct {
	ProjectURL        string    `json:"project_url"`
	Name              string    `json:"name"`
	WUName            string    `json:"wu_name"`
	ReportDeadline    time.Time `json:"report_deadline"`
	Platform          string    `json:"platform"`
	VersionNum        int       `json:"version_num"`
	PlanClass         string    `json:"plan_class,omitempty"`
	OutputFiles       []FileRef `json:"output_files,omitempty"`
	ReportImmediately bool      `json:"report_immediately,omitempty"`
	ReceivedTime      time.Time `json:"received_time"`

	Phase Phase `json:"phase"`
	// WireState is BOINC's RESULT state number sent in the report; fixed
	// when the result leaves the compute pipeline.
	WireState        int       `json:"wire_state,omitempty"`
	ExitStatus       int       `json:"exit_status"`
	FinalCPUTime     float64   `json:"final_cpu_time"`
	FinalElapsedTime float64   `json:"final_elapsed_time"`
	PeakWorkingSet   float64   `json:"peak_working_set,omitempty"`
	PeakDiskUsage    float64   `json:"peak_disk_usage,omitempty"`
	StderrOut        string    `json:"stderr_out,omitempty"`
	ErrorMessage     string    `json:"error_message,omitempty"`
	CompletedTime    time.Time `json:"completed_time,omitempty"`
	SuspendedViaGUI  bool      `json:"suspended_via_gui,omitempty"`

	// Execution bookkeeping, kept across daemon restarts so a task resumes
	// in the same slot with its accounting intact.
	Slot                  int       `json:"slot"`
	PID                   int       `json:"pid,omitempty"`
	CheckpointCPUTime     float64   `json:"checkpoint_cpu_time,omitempty"`
	CheckpointElapsedTime float64   `json:"checkpoint_elapsed_time,omitempty"`
	CurrentCPUTime        float64   `json:"current_cpu_time,omitempty"`
	ElapsedTime           float64   `json:"elapsed_time,omitempty"`
	FractionDone          float64   `json:"fraction_done,omitempty"`
	Restarts              int       `json:"restarts,omitempty"`
	RetryAfter            time.Time `json:"retry_after,omitempty"`
}

// Key identifies the result within the whole client.
func (r *Result) Key() string { return r.ProjectURL + "\x00" + r.Name }

// SetPhase moves the result to p, refusing illegal moves. Finishing phases
// also fix the wire state the report will carry.
func (r *Result) SetPhase(p Phase) error {
	if r.Phase == p {
		return nil
	}
	if !CanTransition(r.Phase, p) {
		return fmt.Errorf("result %s: illegal transition %s → %s", r.Name, r.Phase, p)
	}
	switch p {
	case PhaseUploaded:
		r.WireState = 5
	case PhaseComputeError:
		r.WireState = 3
	case PhaseDownloadFailed:
		r.WireState = 1
	case PhaseUploadFailed:
		r.WireState = 7
	case PhaseAborted:
		r.WireState = 6
	}
	r.Phase = p
	return nil
}

// Fail moves the result into an error phase with an exit status and a
// message that goes into the report's stderr_out.
func (r *Result) Fail(p Phase, exitStatus int, msg string, now time.Time) error {
	if err := r.SetPhase(p); err != nil {
		return err
	}
	r.ExitStatus = exitStatus
	r.ErrorMessage = msg
	if r.CompletedTime.IsZero() {
		r.CompletedTime = now
	}
	return nil
}
