package guirpc

import (
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/workfetch"
)

// State is a consistent, read-only copy of what the client is doing, as the
// read ops report it. The backend builds a fresh one per request; the
// server never modifies it.
type State struct {
	Now  time.Time
	Host HostInfo
	// Projects, and per project (matched by URL) the apps, app versions,
	// workunits and results, each in the order the GUI should list them.
	Projects    []ProjectInfo
	Apps        []boinc.App
	AppVersions []boinc.AppVersion
	Workunits   []boinc.Workunit
	Results     []ResultInfo
	Transfers   []TransferInfo
	OldResults  []OldResult
	DailyXfers  []DailyXfer
	CCStatus    CCStatus
	NetStats    NetStats
	TimeStats   TimeStats
	DiskUsage   DiskUsage

	// Prefs are the global preferences in force (get_global_prefs_working
	// and get_state). PrefsOverride is the raw global_prefs_override.xml,
	// "" when there is none; PrefsFile is the raw project-supplied
	// global_prefs.xml, "" when there is none.
	Prefs         boinc.Prefs
	PrefsOverride string
	PrefsFile     string
	// Proxy is the proxy set over GUI RPC (get_proxy_settings).
	Proxy boinc.ProxyInfo

	// PlatformName is the primary platform (this build's, platform.This,
	// when empty); Platforms lists all supported ones, primary first
	// (just the primary one when empty).
	PlatformName      string
	Platforms         []string
	ExecutingAsDaemon bool
	HostVenue         string
}

// HostInfo is <host_info>: the host description plus its GPUs.
type HostInfo struct {
	boinc.Host
	VMExtensionsDisabled bool
	// Coprocs summarises the usable GPUs, one entry per type.
	Coprocs []CoprocInfo
	// CoprocsXML, when set, is written verbatim inside <coprocs> instead of
	// the summary (the detector's own <coproc_cuda>… elements).
	CoprocsXML string
}

// CoprocInfo is one GPU type of the host, as the GUI shows it.
type CoprocInfo struct {
	Type         workfetch.Rsc // NVIDIA, AMD or Intel
	Count        int
	Name         string
	AvailableRAM float64 // bytes
	PeakFlops    float64
	// NVIDIA only: CUDA driver API version (e.g. 12040) and driver
	// version (e.g. 53599).
	CUDAVersion   int
	DriverVersion int
}

// ProjectInfo is a project with the scheduling fields the GUI shows.
type ProjectInfo struct {
	boinc.Project
	// Work is the work-fetch state: per-resource backoffs (and debts).
	Work workfetch.ProjectState

	EmailHash      string
	ExternalCPID   string
	CPIDTime       time.Time
	UserCreateTime time.Time
	HostCreateTime time.Time
	HostVenue      string

	REC              float64
	RECTime          time.Time
	DiskUsage        float64 // bytes under projects/<dir>
	DiskShare        float64
	DesiredDiskUsage float64
	NJobsSuccess     int
	NJobsError       int
	ElapsedTime      float64
	SchedPriority    float64

	SchedulerRPCInProgress bool
	TricklePending         bool
	AttachedViaAcctMgr     bool
	// AnonymousPlatform: the project runs the apps of its app_info.xml.
	AnonymousPlatform bool
	// DetachWhenDone is the user's "detach when done" (a config removal
	// pending in Project.DetachPending shows the same way).
	DetachWhenDone bool

	DownloadBackoffUntil time.Time
	UploadBackoffUntil   time.Time
	// ProjectDir is the absolute path of the project directory.
	ProjectDir string
	Statistics []DailyStats
}

// DailyStats is one day of a project's credit history (get_statistics).
type DailyStats struct {
	Day              time.Time
	UserTotalCredit  float64
	UserExpavgCredit float64
	HostTotalCredit  float64
	HostExpavgCredit float64
}

// ResultInfo is a task with what the GUI shows about it.
type ResultInfo struct {
	boinc.Result
	// EstimatedRemaining is the estimated computing time left (seconds).
	EstimatedRemaining float64
	EDFScheduled       bool
	CoprocMissing      bool
	SchedulerWait      bool
	SchedulerWaitWhy   string
	NetworkWait        bool
	// Resources is what the task uses, e.g. "1 CPU + 1 NVIDIA GPU (device
	// 0)"; empty means "derive it from the app version as the C++ client
	// does" (nothing for a plain 1-CPU task).
	Resources string
	// Active is set while the task has an active task (a slot and, when
	// running or suspended in memory, a process).
	Active *ActiveTask
}

// ActiveTask is the running (or preempted) instance of a task.
type ActiveTask struct {
	// ActiveState is the process state (EXECUTING=1, SUSPENDED=9, ...).
	ActiveState int
	// SchedulerState is UNINITIALIZED=0, PREEMPTED=1 or SCHEDULED=2.
	SchedulerState    int
	PID               int
	Slot              int
	CheckpointCPUTime float64
	FractionDone      float64
	CPUTime           float64
	ElapsedTime       float64
	SwapSize          float64
	WorkingSet        float64
	WorkingSetSmooth  float64
	PageFaultRate     float64
	BytesSent         float64
	BytesReceived     float64
	ProgressRate      float64
	TooLarge          bool
	NeedsShmem        bool
	WantNetwork       bool
}

// TransferInfo is a file waiting for or in transfer.
type TransferInfo struct {
	ProjectURL  string
	ProjectName string
	Name        string
	NBytes      float64
	MaxNBytes   float64
	Status      int
	Upload      bool

	NumRetries       int
	FirstRequestTime time.Time
	NextRequestTime  time.Time
	TimeSoFar        float64
	// BytesXferred is how much of the file has been transferred so far
	// (GUIs show it whether or not a transfer is under way).
	BytesXferred float64

	// Active is true while an HTTP transfer is under way; the fields
	// below describe it.
	Active     bool
	FileOffset float64
	XferSpeed  float64
	URL        string

	// ProjectBackoff is the seconds left in the project's transfer backoff.
	ProjectBackoff float64
}

// OldResult is a recently reported task (get_old_results).
type OldResult struct {
	ProjectURL    string
	ResultName    string
	AppName       string
	ExitStatus    int
	ElapsedTime   float64
	CPUTime       float64
	CompletedTime time.Time
	CreateTime    time.Time // when it was reported
}

// DailyXfer is one day of network traffic; When is days since the epoch.
type DailyXfer struct {
	When     int
	Up, Down float64
}

// Run modes (lib/common_defs.h).
const (
	ModeAlways  = int(boinc.RunModeAlways)
	ModeAuto    = int(boinc.RunModeAuto)
	ModeNever   = int(boinc.RunModeNever)
	ModeRestore = int(boinc.RunModeRestore)
)

// CCStatus is <cc_status>: run modes and why things are suspended.
type CCStatus struct {
	NetworkStatus    int
	AMSPasswordError bool

	TaskSuspendReason int
	TaskMode          int
	TaskModePerm      int
	TaskModeDelay     float64

	GPUSuspendReason int
	GPUMode          int
	GPUModePerm      int
	GPUModeDelay     float64

	NetworkSuspendReason int
	NetworkMode          int
	NetworkModePerm      int
	NetworkModeDelay     float64

	DisallowAttach  bool
	SimpleGUIOnly   bool
	ManagerMustQuit bool
	// MaxEventLogLines defaults to the event log's capacity.
	MaxEventLogLines int
	// Health is boincd's named warnings (no GPU found, a project backed
	// off for over a day, disk limit, clock jump), sent as
	// <boincd_health_warning> elements, which BOINC's own tools ignore.
	Health []HealthWarning
}

// HealthWarning is one active health warning.
type HealthWarning struct {
	Name    string // stable identifier, e.g. "disk_limit_reached"
	Message string // for people
	Since   time.Time
}

// NetStats is <net_stats>: average transfer rates.
type NetStats struct {
	BWUp, AvgUp     float64
	AvgTimeUp       time.Time
	BWDown, AvgDown float64
	AvgTimeDown     time.Time
}

// TimeStats is <time_stats>: how much of the time the host is available.
type TimeStats struct {
	OnFrac                     float64
	ConnectedFrac              float64
	CPUAndNetworkAvailableFrac float64
	ActiveFrac                 float64
	GPUActiveFrac              float64
	ClientStartTime            time.Time
	TotalStartTime             time.Time
	TotalDuration              float64
	TotalActiveDuration        float64
	TotalGPUActiveDuration     float64
	PreviousUptime             float64
	SessionActiveDuration      float64
	SessionGPUActiveDuration   float64
}

// DiskUsage is <disk_usage_summary>.
type DiskUsage struct {
	Projects []ProjectDisk
	Total    float64 // bytes on the data directory's filesystem
	Free     float64
	Boinc    float64 // used by the client outside project directories
	Allowed  float64 // what the prefs allow the client to use
}

// ProjectDisk is one project's disk usage in bytes.
type ProjectDisk struct {
	URL   string
	Bytes float64
}
