// Package workfetch is the pure core of boincd's scheduling: the
// round-robin simulation of the queue, long-term debts and per-resource
// backoffs, duration estimates, and the choice of which project to ask for
// how much of which resource.
//
// Plain data in, decisions out: no I/O, no clock (time is passed in), no
// randomness except the jitter values the caller supplies. The daemon and
// the emulator (sim/) drive exactly this code.
package workfetch

import (
	"math"
	"strings"
	"time"
)

// Rsc is a processing resource type: the CPU, or one kind of GPU. A job
// uses a (possibly fractional) number of CPUs and instances of at most one
// GPU type.
type Rsc int

const (
	CPU    Rsc = 0
	NVIDIA Rsc = 1
	AMD    Rsc = 2
	Intel  Rsc = 3
	// NumRsc bounds the arrays indexed by Rsc.
	NumRsc = 4
)

// wireNames are the names the scheduler protocol uses (lib/coproc.cpp
// proc_type_name_xml).
var wireNames = [NumRsc]string{"CPU", "NVIDIA", "ATI", "intel_gpu"}

func (r Rsc) String() string {
	if r >= 0 && int(r) < NumRsc {
		return wireNames[r]
	}
	return "rsc?"
}

// IsGPU reports whether r is a coprocessor type.
func (r Rsc) IsGPU() bool { return r > CPU && r < NumRsc }

// RscByName maps a wire name to a resource; "CUDA" is the pre-7.0 name
// of NVIDIA and "AMD" an alias of "ATI".
func RscByName(name string) (Rsc, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "cpu":
		return CPU, true
	case "nvidia", "cuda":
		return NVIDIA, true
	case "ati", "amd":
		return AMD, true
	case "intel_gpu", "intel":
		return Intel, true
	}
	return 0, false
}

// Host is what the core needs to know about the computer.
type Host struct {
	// Instances usable per resource type: CPUs after max_ncpus_pct, GPUs
	// after exclusions. Zero means the host has none of that type.
	Instances [NumRsc]float64
	// RelSpeed is each instance's speed relative to one CPU (CPU = 1),
	// used to weigh debts across resources.
	RelSpeed [NumRsc]float64
	// CPUAvail and GPUAvail are the fractions of wall time jobs can run
	// (on_frac × active_frac, on_frac × gpu_active_frac), in [0.01, 1].
	CPUAvail, GPUAvail float64
}

// Prefs are the work-buffer preferences, in seconds.
type Prefs struct {
	BufMin        float64 // work_buf_min_days × 86400
	BufAdditional float64 // work_buf_additional_days × 86400
	// DeadlineGuard is boincd's guard against jobs that would finish
	// after, or too close to, their deadlines. A project is asked for
	// at most the jobs that the round-robin simulation's queue leaves
	// room for: one per idle instance if it can end within the latency
	// bound, and behind the queue as many as end a margin before it —
	// (1 − DeadlineGuard) × the bound, growing only as the bound's
	// square root beyond half a day — and for nothing while even that
	// is none (choose.go room). Since the request itself is capped, a
	// server that fills whatever is asked cannot overfill the host. 0
	// means DefaultDeadlineGuard; DeadlineGuardOff turns it off (the
	// C++ client's behaviour). See docs/policy-study.md for why.
	DeadlineGuard float64
}

// DeadlineGuard settings.
const (
	DefaultDeadlineGuard = 0.8
	DeadlineGuardOff     = -1
)

// guard is the effective DeadlineGuard fraction; 0 when off.
func (p Prefs) guard() float64 {
	switch {
	case p.DeadlineGuard == 0:
		return DefaultDeadlineGuard
	case p.DeadlineGuard < 0 || math.IsNaN(p.DeadlineGuard):
		return 0
	}
	return min(p.DeadlineGuard, 1)
}

// Backoff is a per-(project, resource) work-fetch backoff: when work of
// a type was requested and none came, the interval doubles from 600 s up
// to one day; it is cleared when a job of that type arrives or the user
// asks for an update. Persisted.
type Backoff struct {
	Interval float64   `json:"interval,omitempty"` // seconds; 0 = not backed off
	Until    time.Time `json:"until,omitempty"`
}

// ProjectState is what is persisted per project for the core.
type ProjectState struct {
	// Debt is the long-term debt per resource, in instance-seconds: how
	// much processing the project is owed. The maximum over projects is
	// kept at zero.
	Debt    [NumRsc]float64 `json:"debt"`
	Backoff [NumRsc]Backoff `json:"backoff"`
	// DCF is the duration correction factor (1 when the server says
	// dont_use_dcf).
	DCF float64 `json:"dcf,omitempty"`
	// REC is the recent estimated credit (credit per day) and RECTime
	// when it was last brought up to date (Unix seconds); see UpdateREC.
	REC     float64 `json:"rec,omitempty"`
	RECTime float64 `json:"rec_time,omitempty"`
}

// Project is one attached project as the core sees it.
type Project struct {
	Name  string // for reasons and logs
	Share float64
	State ProjectState

	// Why the project may not be asked for work at all right now; empty
	// when it may be (not suspended, not "no new tasks", not in RPC
	// backoff, scheduler known, not detaching...).
	NoFetch string
	// Suspended or NoNewTasks make a project debt-ineligible.
	Suspended, NoNewTasks bool
	// InRPCBackoff: min_rpc_time is in the future.
	InRPCBackoff bool
	// NoRsc: the project has told us it has no apps for that resource.
	NoRsc [NumRsc]bool
	// MaxConcurrent is app_config.xml's project_max_concurrent: at most
	// that many of its jobs run at once (0: no limit).
	MaxConcurrent int
	// Unestimated: the project has sent no work yet, so nobody knows how
	// long its jobs take here; the server's only guess comes from the
	// benchmark and its own fpops estimate, often off by several times.
	// It is asked for one job per idle instance (1 s and the idle count),
	// not for the whole buffer: a wrong guess then costs no missed
	// deadlines, and no instance waits a fetch round trip for work as
	// with the C++ client's 1 s first request. The next request, made
	// with the estimates the first jobs bring, fills the buffer.
	Unestimated bool
}

// Job is a queued or running task.
type Job struct {
	Project int // index into the projects slice
	Rsc     Rsc // CPU, or the GPU type it uses
	NCPUs   float64
	NGPUs   float64 // instances of Rsc when Rsc is a GPU type
	// Remaining is the estimated wall seconds of computing left when the
	// job runs (see Remaining()).
	Remaining float64
	Deadline  time.Time
	// Runnable: its files are present and it may run. Jobs still
	// downloading count as queued work but cannot run yet.
	Runnable bool
	// Received is when the job arrived (zero: unknown) and Estimate its
	// static estimate of the whole job's computing seconds (0: unknown);
	// with Deadline they give the project's latency bound and typical
	// job length for the deadline guard (Prefs.DeadlineGuard).
	Received time.Time
	Estimate float64
	// App and AppMax are app_config.xml's max_concurrent: the jobs that
	// share an App number (1..len(jobs); the caller numbers the limited
	// apps of all projects) run at most AppMax at once, whatever their
	// resource. App 0 or AppMax not above 0: no limit.
	App    int
	AppMax int
}

// Usage is how many instances of its resource the job occupies.
func (j *Job) Usage() float64 {
	if j.Rsc.IsGPU() {
		return j.NGPUs
	}
	return j.NCPUs
}
