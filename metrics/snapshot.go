package metrics

import (
	"context"
	"time"
)

// Source hands out the daemon's state for one scrape. Snapshot is called
// from the HTTP server's goroutines, possibly by several scrapes at once,
// so an implementation must be safe for concurrent use: the daemon asks
// its owner loop for a copy and waits for the answer or for ctx.
//
// The Snapshot returned belongs to the caller; the Source must not modify
// it afterwards.
type Source interface {
	Snapshot(ctx context.Context) (*Snapshot, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context) (*Snapshot, error)

// Snapshot calls f.
func (f SourceFunc) Snapshot(ctx context.Context) (*Snapshot, error) { return f(ctx) }

// Snapshot is everything the daemon exports, copied out of its state at one
// instant. Fields ending in Total are cumulative counts kept in the daemon's
// state (persisted across restarts where the daemon persists them) and are
// exported as Prometheus counters; they must never decrease except when the
// daemon's state is reset.
//
// Zero values mean "unknown / not measured" where a real value cannot be
// zero (benchmarks, memory); such metrics are then left out rather than
// exported as 0.
type Snapshot struct {
	Build  BuildInfo
	Daemon DaemonState
	Host   HostFacts

	// Tasks counts the tasks on this host by state and resource. Each task
	// is counted once, in one state. Entries with the same State and
	// Resource are added up, so the daemon may emit one entry per task.
	Tasks []TaskCount

	// Projects has one entry per attached project. A second entry for the
	// same master URL is ignored.
	Projects []ProjectStats

	// HealthWarnings names the warnings in force now, preferably one of the
	// Health* constants. Every known name (KnownHealthWarnings()) is exported
	// at every scrape, 1 if listed here and 0 otherwise, so alert rules can
	// rely on the series existing; a name not in that list is exported
	// with 1 while it is listed.
	HealthWarnings []string
}

// BuildInfo identifies the running binary.
type BuildInfo struct {
	// Version is boincd's release version, e.g. "0.3.1".
	Version string
	// ClientVersion is the BOINC client version boincd reports on the
	// wire, e.g. "7.20.5".
	ClientVersion string
	// Platform is the primary BOINC platform, e.g. "x86_64-pc-linux-gnu".
	Platform string
}

// DaemonState is the daemon's own condition.
type DaemonState struct {
	// StartTime is when this daemon process started.
	StartTime time.Time

	// RunMode, GPUMode and NetworkMode are the modes in force now
	// (temporary mode included), as boinc.RunMode values. 0 means unknown and
	// exports nothing.
	RunMode     int
	GPUMode     int
	NetworkMode int

	// TaskSuspendReason, GPUSuspendReason and NetworkSuspendReason are the
	// cc_status suspend reasons (SUSPEND_REASON_* bits as in package
	// hostcond; 0 = not suspended). A mask with several bits is reported
	// by its primary reason (hostcond.Primary).
	TaskSuspendReason    uint32
	GPUSuspendReason     uint32
	NetworkSuspendReason uint32
}

// HostFacts are what the probes and benchmarks found out about this host.
type HostFacts struct {
	// OSName and OSVersion as sent in <host_info> (os_name, os_version).
	OSName    string
	OSVersion string
	// CPUVendor and CPUModel as sent in <host_info> (p_vendor, p_model).
	CPUVendor string
	CPUModel  string

	// LogicalCPUs is the number of logical CPUs found (p_ncpus).
	LogicalCPUs int
	// UsableCPUs is how many of them the preferences let boincd use
	// (max_ncpus_pct applied).
	UsableCPUs float64

	// MemoryBytes and SwapBytes are the host's RAM and swap (m_nbytes,
	// m_swap).
	MemoryBytes float64
	SwapBytes   float64
	// DiskTotalBytes and DiskFreeBytes describe the file system holding the
	// data directory (d_total, d_free).
	DiskTotalBytes float64
	DiskFreeBytes  float64

	// FPOPS and IOPS are the per-CPU benchmark results (p_fpops, p_iops),
	// and BenchmarkTime is when the benchmarks ran; zero if never.
	FPOPS         float64
	IOPS          float64
	BenchmarkTime time.Time

	// GPUs lists the GPUs found, counted by type and model. Entries with
	// the same Type and Model are added up.
	GPUs []GPUCount
}

// GPUCount is how many GPUs of one model the probes found.
type GPUCount struct {
	// Type is the BOINC resource name: "NVIDIA", "ATI", "intel_gpu".
	Type string
	// Model is the device name the vendor's library reports.
	Model string
	Count int
}

// Task states for TaskCount.State. Each task is in exactly one. Every
// known state is exported for every resource seen (and for "CPU") at each
// scrape, 0 when no task is in it.
const (
	// TaskDownloading: some input file is still being downloaded.
	TaskDownloading = "downloading"
	// TaskReady: inputs present, not yet started.
	TaskReady = "ready"
	// TaskRunning: executing now.
	TaskRunning = "running"
	// TaskSuspended: started and then preempted, or suspended by the user
	// or by host conditions.
	TaskSuspended = "suspended"
	// TaskUploading: finished computing, output files being uploaded.
	TaskUploading = "uploading"
	// TaskReadyToReport: done and uploaded, waiting for a scheduler RPC to
	// report it (or for the server's acknowledgement).
	TaskReadyToReport = "ready_to_report"
	// TaskFailed: computation, download or upload error, waiting to be
	// reported.
	TaskFailed = "failed"
	// TaskAborted: aborted by the user, the project or the client, waiting
	// to be reported.
	TaskAborted = "aborted"
)

var knownTaskStates = [...]string{
	TaskDownloading, TaskReady, TaskRunning, TaskSuspended,
	TaskUploading, TaskReadyToReport, TaskFailed, TaskAborted,
}

// KnownTaskStates returns the Task* states in a stable order.
func KnownTaskStates() []string { return append([]string(nil), knownTaskStates[:]...) }

// ResourceCPU is the resource name of CPU work. GPU resources use BOINC's
// names: "NVIDIA", "ATI", "intel_gpu".
const ResourceCPU = "CPU"

// TaskCount is how many tasks are in one state on one resource. A task
// that uses a GPU counts under the GPU's resource only.
type TaskCount struct {
	State    string
	Resource string
	Count    int
}

// ProjectStats is one attached project.
type ProjectStats struct {
	// URL is the project's master URL; it becomes the "project" label
	// after user info, query and fragment are removed.
	URL string
	// Name is the project's name as its server gives it; empty before the
	// first scheduler reply. It becomes the "project_name" label.
	Name string

	ResourceShare float64
	// Suspended is the user's per-project suspension; NoNewTasks is "no
	// more work" (dont_request_more_work).
	Suspended  bool
	NoNewTasks bool

	// TasksInProgress counts the project's tasks not yet reported.
	TasksInProgress int
	// DCF is the duration correction factor.
	DCF float64
	// RPCBackoff is how long until the next scheduler RPC is allowed
	// (min_rpc_time - now); 0 if one is allowed now.
	RPCBackoff time.Duration

	// Credit as the project's server last reported it.
	UserTotalCredit  float64
	UserExpavgCredit float64
	HostTotalCredit  float64
	HostExpavgCredit float64

	// Resources has the per-resource scheduling state, one entry per
	// resource the project has or may get work for. A second entry for the
	// same resource is ignored.
	Resources []ProjectResource

	// SchedulerRPCsTotal counts the scheduler RPCs made, by outcome
	// (RPC* constants), since the daemon's state was created.
	SchedulerRPCsTotal []RPCCount

	// Transfers are the project's file transfers.
	Transfers TransferStats
}

// ProjectResource is a project's scheduling state for one resource.
type ProjectResource struct {
	// Resource is "CPU" or a GPU resource name.
	Resource string
	// ProcessingSecondsTotal is the instance-seconds of this resource the
	// project's tasks have used (CPU count × wall seconds for CPU, GPU
	// instances × seconds for GPUs), cumulative.
	ProcessingSecondsTotal float64
	// Debt is the project's scheduling debt for this resource in
	// instance-seconds: positive when it is owed processing under its
	// resource share, negative when it has had more than its share.
	Debt float64
	// FetchBackoff is how long until work fetch may ask the project for
	// this resource again; 0 if it may now.
	FetchBackoff time.Duration
}

// Scheduler RPC outcomes for RPCCount.Outcome. Every known outcome is
// exported for every project at each scrape, 0 if it never happened.
const (
	// RPCOK: a valid scheduler reply was received and applied.
	RPCOK = "ok"
	// RPCHTTPError: the server answered with an HTTP error status.
	RPCHTTPError = "http_error"
	// RPCNetworkError: no answer (DNS, connect, TLS, timeout, reset).
	RPCNetworkError = "network_error"
	// RPCParseError: the reply could not be parsed.
	RPCParseError = "parse_error"
	// RPCRefused: a valid reply that refused the request (error message,
	// project down, account or host unknown).
	RPCRefused = "refused"
)

var knownRPCOutcomes = [...]string{RPCOK, RPCHTTPError, RPCNetworkError, RPCParseError, RPCRefused}

// KnownRPCOutcomes returns the RPC* outcomes in a stable order.
func KnownRPCOutcomes() []string { return append([]string(nil), knownRPCOutcomes[:]...) }

// RPCCount is a cumulative count of scheduler RPCs with one outcome.
// Entries with the same Outcome are added up.
type RPCCount struct {
	Outcome string
	Count   uint64
}

// TransferStats are a project's file transfers.
type TransferStats struct {
	// UploadedBytesTotal and DownloadedBytesTotal are the bytes moved,
	// cumulative, counting partial transfers.
	UploadedBytesTotal   float64
	DownloadedBytesTotal float64
	// ActiveUploads and ActiveDownloads are the transfers in progress now.
	ActiveUploads   int
	ActiveDownloads int
	// FailedUploadsTotal and FailedDownloadsTotal count transfer attempts
	// that failed (transient or permanent), cumulative.
	FailedUploadsTotal   uint64
	FailedDownloadsTotal uint64
}

// Health warning names for Snapshot.HealthWarnings.
const (
	// HealthNoProjects: no project is attached, so nothing will be done.
	HealthNoProjects = "no_projects"
	// HealthNoGPUFound: GPU use is configured or expected but the probes
	// found no usable GPU.
	HealthNoGPUFound = "no_gpu_found"
	// HealthProjectBackedOff: at least one project's scheduler RPCs are
	// backed off after failures.
	HealthProjectBackedOff = "project_backed_off"
	// HealthTransferBackedOff: at least one file transfer is backed off
	// after failures.
	HealthTransferBackedOff = "transfer_backed_off"
	// HealthDiskLimitReached: the disk space the preferences allow is
	// used up, so no new work is fetched.
	HealthDiskLimitReached = "disk_limit_reached"
	// HealthClockJump: the wall clock jumped (forwards or backwards) more
	// than the daemon tolerates.
	HealthClockJump = "clock_jump"
	// HealthStateWriteFailed: the last attempt to persist the client
	// state failed.
	HealthStateWriteFailed = "state_write_failed"
	// HealthAppsRefusedRoot: boincd runs as root without app_user or
	// allow_root_apps, so it starts no science app.
	HealthAppsRefusedRoot = "apps_refused_root"
	// HealthAppUserUnusable: app_user is set but cannot be switched to.
	HealthAppUserUnusable = "app_user_unusable"
)

var knownHealthWarnings = [...]string{
	HealthNoProjects, HealthNoGPUFound, HealthProjectBackedOff,
	HealthTransferBackedOff, HealthDiskLimitReached, HealthClockJump,
	HealthStateWriteFailed, HealthAppsRefusedRoot, HealthAppUserUnusable,
}

// KnownHealthWarnings returns the Health* names in a stable order.
func KnownHealthWarnings() []string { return append([]string(nil), knownHealthWarnings[:]...) }
