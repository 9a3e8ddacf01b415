package client

import (
	"fmt"
	"strconv"
	"time"

	"github.com/boincd/boincd/boinc"
)

// Version is a BOINC version triple.
type Version struct {
	Major   int `json:"major"`
	Minor   int `json:"minor"`
	Release int `json:"release"`
}

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Release) }

// NetworkStatus is cc_status's network_status (NETWORK_STATUS_*).
type NetworkStatus int

const (
	NetworkOnline         NetworkStatus = 0
	NetworkWantConnection NetworkStatus = 1
	NetworkWantDisconnect NetworkStatus = 2
	NetworkLookupPending  NetworkStatus = 3
)

// String uses boinccmd's words.
func (s NetworkStatus) String() string {
	switch s {
	case NetworkOnline:
		return "online"
	case NetworkWantConnection:
		return "need connection"
	case NetworkWantDisconnect:
		return "don't need connection"
	case NetworkLookupPending:
		return "reconnecting"
	}
	return "status " + strconv.Itoa(int(s))
}

// SuspendReason is boinc.SuspendReason, SUSPEND_REASON_* as GUI RPC
// sends them.
type SuspendReason = boinc.SuspendReason

// RscBackoff is a project's work-fetch backoff for one processor type.
type RscBackoff struct {
	Resource string        `json:"resource"` // CPU, NVIDIA, ATI, intel_gpu, apple_gpu
	Until    time.Time     `json:"until"`    // no work requested for it before then
	Interval time.Duration `json:"interval"` // current backoff interval
}

// Project is the GUI form of a project (PROJECT::write_state, gui_rpc).
type Project struct {
	MasterURL      string `json:"master_url"`
	ProjectName    string `json:"project_name"`
	UserName       string `json:"user_name"`
	TeamName       string `json:"team_name"`
	HostVenue      string `json:"host_venue,omitempty"`
	CrossProjectID string `json:"cross_project_id,omitempty"`
	ExternalCPID   string `json:"external_cpid,omitempty"`

	UserID           int64     `json:"userid"`
	TeamID           int64     `json:"teamid"`
	HostID           int64     `json:"hostid"`
	RPCSeqno         int64     `json:"rpc_seqno"`
	UserTotalCredit  float64   `json:"user_total_credit"`
	UserExpavgCredit float64   `json:"user_expavg_credit"`
	UserCreateTime   time.Time `json:"user_create_time"`
	HostTotalCredit  float64   `json:"host_total_credit"`
	HostExpavgCredit float64   `json:"host_expavg_credit"`
	HostCreateTime   time.Time `json:"host_create_time"`

	NRPCFailures             int           `json:"nrpc_failures"`
	MasterFetchFailures      int           `json:"master_fetch_failures"`
	MinRPCTime               time.Time     `json:"min_rpc_time"`
	NextRPCTime              time.Time     `json:"next_rpc_time"`
	LastRPCTime              time.Time     `json:"last_rpc_time"`
	ResourceShare            float64       `json:"resource_share"`
	DiskUsage                float64       `json:"disk_usage"`
	DurationCorrectionFactor float64       `json:"duration_correction_factor"`
	SchedRPCPending          int           `json:"sched_rpc_pending"` // RPC reason, 0 = none
	NJobsSuccess             int           `json:"njobs_success"`
	NJobsError               int           `json:"njobs_error"`
	ElapsedTime              time.Duration `json:"elapsed_time"`
	SchedPriority            float64       `json:"sched_priority"`
	ProjectDir               string        `json:"project_dir,omitempty"`
	Venue                    string        `json:"venue,omitempty"`
	// DownloadBackoff and UploadBackoff are the seconds left before the
	// project's transfers are retried, when it is backed off.
	DownloadBackoff time.Duration `json:"download_backoff,omitempty"`
	UploadBackoff   time.Duration `json:"upload_backoff,omitempty"`

	AnonymousPlatform      bool `json:"anonymous_platform,omitempty"`
	MasterURLFetchPending  bool `json:"master_url_fetch_pending,omitempty"`
	TrickleUpPending       bool `json:"trickle_up_pending,omitempty"`
	NonCPUIntensive        bool `json:"non_cpu_intensive,omitempty"`
	SuspendedViaGUI        bool `json:"suspended_via_gui,omitempty"`
	DontRequestMoreWork    bool `json:"dont_request_more_work,omitempty"`
	DetachWhenDone         bool `json:"detach_when_done,omitempty"`
	Ended                  bool `json:"ended,omitempty"`
	AttachedViaAcctMgr     bool `json:"attached_via_acct_mgr,omitempty"`
	SchedulerRPCInProgress bool `json:"scheduler_rpc_in_progress,omitempty"`
	DontUseDCF             bool `json:"dont_use_dcf,omitempty"`

	RscBackoffs []RscBackoff `json:"rsc_backoffs,omitempty"`
	// NoRsc lists processor types the project has no work for, by cause:
	// "ams", "apps", "pref" or "config" → resource names.
	NoRsc map[string][]string `json:"no_rsc,omitempty"`
}

// DisplayName is the project's name, or its URL before it has one.
func (p *Project) DisplayName() string {
	if p.ProjectName != "" {
		return p.ProjectName
	}
	return p.MasterURL
}

// Result is the GUI form of a task (RESULT::write_gui) with the active
// task's fields flattened in, as the C++ client library does.
type Result struct {
	Name       string `json:"name"`
	WUName     string `json:"wu_name"`
	ProjectURL string `json:"project_url"`
	Platform   string `json:"platform,omitempty"`
	VersionNum int    `json:"version_num"`
	PlanClass  string `json:"plan_class,omitempty"`
	// AppName is filled by GetState from the workunit; empty otherwise.
	AppName string `json:"app_name,omitempty"`

	State                     boinc.ResultState `json:"state"`
	ExitStatus                int               `json:"exit_status"`
	ReportDeadline            time.Time         `json:"report_deadline"`
	ReceivedTime              time.Time         `json:"received_time"`
	CompletedTime             time.Time         `json:"completed_time"`
	EstimatedCPUTimeRemaining time.Duration     `json:"estimated_cpu_time_remaining"`
	FinalCPUTime              time.Duration     `json:"final_cpu_time"`
	FinalElapsedTime          time.Duration     `json:"final_elapsed_time"`
	Resources                 string            `json:"resources,omitempty"`
	SchedulerWaitReason       string            `json:"scheduler_wait_reason,omitempty"`

	GotServerAck           bool `json:"got_server_ack,omitempty"`
	ReadyToReport          bool `json:"ready_to_report,omitempty"`
	SuspendedViaGUI        bool `json:"suspended_via_gui,omitempty"`
	ProjectSuspendedViaGUI bool `json:"project_suspended_via_gui,omitempty"`
	ReportImmediately      bool `json:"report_immediately,omitempty"`
	EDFScheduled           bool `json:"edf_scheduled,omitempty"`
	CoprocMissing          bool `json:"coproc_missing,omitempty"`
	SchedulerWait          bool `json:"scheduler_wait,omitempty"`
	NetworkWait            bool `json:"network_wait,omitempty"`

	// Active task; HasActiveTask is false (and the rest zero, Slot -1)
	// when the task has never started.
	HasActiveTask     bool                  `json:"has_active_task"`
	ActiveTaskState   boinc.ActiveTaskState `json:"active_task_state"`
	SchedulerState    boinc.SchedulerState  `json:"scheduler_state"`
	AppVersionNum     int                   `json:"app_version_num,omitempty"`
	Slot              int                   `json:"slot"`
	PID               int                   `json:"pid,omitempty"`
	FractionDone      float64               `json:"fraction_done"`
	CheckpointCPUTime time.Duration         `json:"checkpoint_cpu_time"`
	CurrentCPUTime    time.Duration         `json:"current_cpu_time"`
	ElapsedTime       time.Duration         `json:"elapsed_time"`
	SwapSize          float64               `json:"swap_size,omitempty"`
	WorkingSetSize    float64               `json:"working_set_size,omitempty"`
	ProgressRate      float64               `json:"progress_rate,omitempty"`
	TooLarge          bool                  `json:"too_large,omitempty"`
	NeedsShmem        bool                  `json:"needs_shmem,omitempty"`
}

// CCStatus is the reply of get_cc_status.
type CCStatus struct {
	NetworkStatus        NetworkStatus `json:"network_status"`
	AMSPasswordError     bool          `json:"ams_password_error"`
	TaskSuspendReason    SuspendReason `json:"task_suspend_reason"`
	TaskMode             boinc.RunMode `json:"task_mode"`
	TaskModePerm         boinc.RunMode `json:"task_mode_perm"`
	TaskModeDelay        time.Duration `json:"task_mode_delay"`
	GPUSuspendReason     SuspendReason `json:"gpu_suspend_reason"`
	GPUMode              boinc.RunMode `json:"gpu_mode"`
	GPUModePerm          boinc.RunMode `json:"gpu_mode_perm"`
	GPUModeDelay         time.Duration `json:"gpu_mode_delay"`
	NetworkSuspendReason SuspendReason `json:"network_suspend_reason"`
	NetworkMode          boinc.RunMode `json:"network_mode"`
	NetworkModePerm      boinc.RunMode `json:"network_mode_perm"`
	NetworkModeDelay     time.Duration `json:"network_mode_delay"`
	DisallowAttach       bool          `json:"disallow_attach"`
	SimpleGUIOnly        bool          `json:"simple_gui_only"`
	MaxEventLogLines     int           `json:"max_event_log_lines"`
	ManagerMustQuit      bool          `json:"manager_must_quit,omitempty"`
	// Health is boincd's named warnings (absent from the C++ client).
	Health []HealthWarning `json:"health,omitempty"`
}

// HealthWarning is one of boincd's active health warnings.
type HealthWarning struct {
	Name    string    `json:"name"`
	Message string    `json:"message"`
	Since   time.Time `json:"since"`
}

// Message priorities (MSG_INFO etc.).
const (
	MsgInfo          = 1
	MsgUserAlert     = 2
	MsgInternalError = 3
)

// Message is one event-log line.
type Message struct {
	Project string    `json:"project"` // project name, or "" for client messages
	Pri     int       `json:"pri"`
	Seqno   int       `json:"seqno"`
	Body    string    `json:"body"`
	Time    time.Time `json:"time"`
}

// FileTransfer is one pending upload or download (FILE_INFO::write_gui).
type FileTransfer struct {
	ProjectURL      string        `json:"project_url"`
	ProjectName     string        `json:"project_name"`
	Name            string        `json:"name"`
	NBytes          float64       `json:"nbytes"`
	MaxNBytes       float64       `json:"max_nbytes,omitempty"`
	Status          int           `json:"status"`
	IsUpload        bool          `json:"is_upload"`
	NumRetries      int           `json:"num_retries"`
	FirstRequest    time.Time     `json:"first_request_time"`
	NextRequestTime time.Time     `json:"next_request_time"`
	TimeSoFar       time.Duration `json:"time_so_far"`
	// Active is true while a transfer is in flight (a <file_xfer> is present);
	// BytesXferred and XferSpeed then describe it, else the last attempt.
	Active         bool          `json:"active"`
	BytesXferred   float64       `json:"bytes_xferred"`
	XferSpeed      float64       `json:"xfer_speed"`
	URL            string        `json:"url,omitempty"`
	ProjectBackoff time.Duration `json:"project_backoff,omitempty"`
}

// Coproc is one GPU type of the host.
type Coproc struct {
	Type      string  `json:"type"` // NVIDIA, ATI, intel_gpu, apple_gpu, or the raw element suffix
	Count     int     `json:"count"`
	Name      string  `json:"name,omitempty"`
	PeakFlops float64 `json:"peak_flops,omitempty"`
}

// HostInfo describes the computer (HOST_INFO).
type HostInfo struct {
	Timezone       int       `json:"timezone"`
	DomainName     string    `json:"domain_name"`
	IPAddr         string    `json:"ip_addr"`
	HostCPID       string    `json:"host_cpid"`
	PNCPUs         int       `json:"p_ncpus"`
	PVendor        string    `json:"p_vendor"`
	PModel         string    `json:"p_model"`
	PFeatures      string    `json:"p_features,omitempty"`
	PFpops         float64   `json:"p_fpops"`
	PIops          float64   `json:"p_iops"`
	PMembw         float64   `json:"p_membw"`
	PCalculated    time.Time `json:"p_calculated"`
	MNBytes        float64   `json:"m_nbytes"`
	MCache         float64   `json:"m_cache"`
	MSwap          float64   `json:"m_swap"`
	DTotal         float64   `json:"d_total"`
	DFree          float64   `json:"d_free"`
	OSName         string    `json:"os_name"`
	OSVersion      string    `json:"os_version"`
	NUsableCoprocs int       `json:"n_usable_coprocs"`
	Coprocs        []Coproc  `json:"coprocs,omitempty"`
	// DockerVersion and DockerType are the container engine the client
	// found for container apps; empty and boinc.DockerNone: none.
	DockerVersion string           `json:"docker_version,omitempty"`
	DockerType    boinc.DockerType `json:"docker_type,omitempty"`
}

// App is a science application (attached to its project by GetState).
type App struct {
	ProjectURL       string `json:"project_url"`
	Name             string `json:"name"`
	UserFriendlyName string `json:"user_friendly_name"`
	NonCPUIntensive  bool   `json:"non_cpu_intensive,omitempty"`
}

// AppVersion is one build of an app.
type AppVersion struct {
	ProjectURL string  `json:"project_url"`
	AppName    string  `json:"app_name"`
	VersionNum int     `json:"version_num"`
	Platform   string  `json:"platform"`
	PlanClass  string  `json:"plan_class,omitempty"`
	AvgNCPUs   float64 `json:"avg_ncpus"`
	Flops      float64 `json:"flops"`
	// Files are the version's file names, main program first when flagged.
	Files []string `json:"files,omitempty"`
}

// Workunit is a job description.
type Workunit struct {
	ProjectURL     string  `json:"project_url"`
	Name           string  `json:"name"`
	AppName        string  `json:"app_name"`
	VersionNum     int     `json:"version_num"`
	RscFpopsEst    float64 `json:"rsc_fpops_est"`
	RscFpopsBound  float64 `json:"rsc_fpops_bound"`
	RscMemoryBound float64 `json:"rsc_memory_bound"`
	RscDiskBound   float64 `json:"rsc_disk_bound"`
	CommandLine    string  `json:"command_line,omitempty"`
}

// TimeStats is the host's availability record.
type TimeStats struct {
	OnFrac          float64   `json:"on_frac"`
	ConnectedFrac   float64   `json:"connected_frac"`
	ActiveFrac      float64   `json:"active_frac"`
	GPUActiveFrac   float64   `json:"gpu_active_frac"`
	ClientStartTime time.Time `json:"client_start_time"`
	Now             time.Time `json:"now"`
}

// GlobalPrefs is the part of the working preferences a status view needs.
type GlobalPrefs struct {
	WorkBufMinDays        float64 `json:"work_buf_min_days"`
	WorkBufAdditionalDays float64 `json:"work_buf_additional_days"`
	MaxNCPUsPct           float64 `json:"max_ncpus_pct"`
	CPUUsageLimit         float64 `json:"cpu_usage_limit"`
	SuspendCPUUsage       float64 `json:"suspend_cpu_usage"`
	RunIfUserActive       bool    `json:"run_if_user_active"`
	RunOnBatteries        bool    `json:"run_on_batteries"`
	DiskMaxUsedGB         float64 `json:"disk_max_used_gb"`
	DiskMaxUsedPct        float64 `json:"disk_max_used_pct"`
	DiskMinFreeGB         float64 `json:"disk_min_free_gb"`
}

// State is the reply of get_state: everything the client knows.
type State struct {
	HostInfo          HostInfo     `json:"host_info"`
	TimeStats         TimeStats    `json:"time_stats"`
	Projects          []Project    `json:"projects"`
	Apps              []App        `json:"apps"`
	AppVersions       []AppVersion `json:"app_versions"`
	Workunits         []Workunit   `json:"workunits"`
	Results           []Result     `json:"results"`
	PlatformName      string       `json:"platform_name"`
	Platforms         []string     `json:"platforms,omitempty"`
	CoreClientVersion Version      `json:"core_client_version"`
	ExecutingAsDaemon bool         `json:"executing_as_daemon"`
	HaveGlobalPrefs   bool         `json:"have_global_prefs"`
	GlobalPrefs       GlobalPrefs  `json:"global_prefs"`
}

// Project finds a project by master URL.
func (s *State) Project(url string) *Project {
	for i := range s.Projects {
		if s.Projects[i].MasterURL == url {
			return &s.Projects[i]
		}
	}
	return nil
}
