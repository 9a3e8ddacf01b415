package boinc

import "time"

// GUIURL is one <gui_url> of a project's gui_urls.xml: a web link.
type GUIURL struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	URL         string `json:"url"`
}

// Project is one attached project and everything the client remembers about
// talking to it. Backoffs and failure counters are persisted so a restart
// does not hammer a failing server (the C++ client forgets them).
type Project struct {
	MasterURL     string  `json:"master_url"`
	Authenticator string  `json:"authenticator"`
	ProjectName   string  `json:"project_name,omitempty"`
	ResourceShare float64 `json:"resource_share"`
	// NoNewTasks is "no more work" (dont_request_more_work).
	NoNewTasks bool `json:"no_new_tasks,omitempty"`
	Suspended  bool `json:"suspended,omitempty"`
	// DetachPending: the project was removed from config; it is detached
	// once its finished results are reported (unless dropped).
	DetachPending bool `json:"detach_pending,omitempty"`
	// DetachWhenDone: detach once no task is left (set over GUI RPC).
	DetachWhenDone bool `json:"detach_when_done,omitempty"`
	// Origin says who attached the project: "config" (the config file)
	// or "gui_rpc" (boinccmd, BOINC Manager). A config reload detaches
	// only projects that came from the config.
	Origin string `json:"origin,omitempty"`
	// ConfigDigest identifies the config entry last applied to the
	// project, so a reload re-applies settings only when the entry
	// changed and does not undo what the volunteer set over GUI RPC.
	ConfigDigest string `json:"config_digest,omitempty"`
	// AMShare: ResourceShare is the account manager's host-specific
	// share; when the AM stops sending one it goes back to the default.
	AMShare bool `json:"am_share,omitempty"`
	// AMNoRsc are the processor types the account manager said not to
	// ask this project for work for (no_rsc).
	AMNoRsc []string `json:"am_no_rsc,omitempty"`

	SchedulerURLs      []string `json:"scheduler_urls,omitempty"`
	MasterFetchPending bool     `json:"master_fetch_pending,omitempty"`
	MasterFailures     int      `json:"master_failures,omitempty"`
	HostID             int64    `json:"hostid,omitempty"`
	RPCSeqno           int64    `json:"rpc_seqno,omitempty"`
	CodeSignKey        string   `json:"code_sign_key,omitempty"`
	UserName           string   `json:"user_name,omitempty"`
	TeamName           string   `json:"team_name,omitempty"`
	UserID             int64    `json:"userid,omitempty"`
	TeamID             int64    `json:"teamid,omitempty"`
	UserTotalCredit    float64  `json:"user_total_credit,omitempty"`
	UserExpavgCredit   float64  `json:"user_expavg_credit,omitempty"`
	HostTotalCredit    float64  `json:"host_total_credit,omitempty"`
	HostExpavgCredit   float64  `json:"host_expavg_credit,omitempty"`
	CrossProjectID     string   `json:"cross_project_id,omitempty"`
	ProjectPrefs       string   `json:"project_prefs,omitempty"`
	// GUIURLs are the project's web links from its last reply that had
	// them, which BOINC Manager lists for the project.
	GUIURLs         []GUIURL  `json:"gui_urls,omitempty"`
	DCF             float64   `json:"dcf,omitempty"`
	DontUseDCF      bool      `json:"dont_use_dcf,omitempty"`
	NoRscApps       []string  `json:"no_rsc_apps,omitempty"`
	Ended           bool      `json:"ended,omitempty"`
	SchedRPCPending RPCReason `json:"sched_rpc_pending,omitempty"`
	// TrickleUpPending: a task sent a trickle-up message that no
	// scheduler request has carried yet (PROJECT::trickle_up_pending).
	TrickleUpPending bool      `json:"trickle_up_pending,omitempty"`
	LastRPCTime      time.Time `json:"last_rpc_time,omitempty"`

	// MinRPCTime = max(request_delay, failure backoff); no RPC before it
	// except on user request.
	MinRPCTime  time.Time `json:"min_rpc_time,omitempty"`
	NextRPCTime time.Time `json:"next_rpc_time,omitempty"`
	RPCFailures int       `json:"rpc_failures,omitempty"`
	// TaskFailures counts consecutive task failures (app crash, download or
	// upload failure); past a threshold the project's work fetch backs off
	// like an RPC failure so a broken app cannot cause a fetch-fail storm.
	TaskFailures     int       `json:"task_failures,omitempty"`
	TaskBackoffUntil time.Time `json:"task_backoff_until,omitempty"`

	// The account as the scheduler last described it (zero when it never
	// said): GUIs show them in the project's properties.
	EmailHash      string    `json:"email_hash,omitempty"`
	ExternalCPID   string    `json:"external_cpid,omitempty"`
	CPIDTime       time.Time `json:"cpid_time,omitempty"`
	UserCreateTime time.Time `json:"user_create_time,omitempty"`
	HostCreateTime time.Time `json:"host_create_time,omitempty"`

	// NJobsSuccess and NJobsError count the tasks reported since the
	// project was attached, by outcome; ElapsedTime sums their final
	// elapsed times (PROJECT::njobs_success, njobs_error, elapsed_time).
	NJobsSuccess int     `json:"njobs_success,omitempty"`
	NJobsError   int     `json:"njobs_error,omitempty"`
	ElapsedTime  float64 `json:"elapsed_time,omitempty"`
}

// Dir is the project's directory name under projects/.
func (p *Project) Dir() string { return EscapeProjectURL(p.MasterURL) }

// DisplayName is the server's name for the project, or its URL.
func (p *Project) DisplayName() string {
	if p.ProjectName != "" {
		return p.ProjectName
	}
	return p.MasterURL
}

// App is a science application of a project.
type App struct {
	ProjectURL       string `json:"project_url"`
	Name             string `json:"name"`
	UserFriendlyName string `json:"user_friendly_name,omitempty"`
	NonCPUIntensive  bool   `json:"non_cpu_intensive,omitempty"`
}

func (a *App) Key() string { return a.ProjectURL + "\x00" + a.Name }

// FileRef ties a physical file to a logical (open) name in a slot.
type FileRef struct {
	FileName    string `json:"file_name"`
	OpenName    string `json:"open_name,omitempty"`
	MainProgram bool   `json:"main_program,omitempty"`
	CopyFile    bool   `json:"copy_file,omitempty"`
	Optional    bool   `json:"optional,omitempty"`
}

// SlotName is the name the file has in the slot directory.
func (f FileRef) SlotName() string {
	if f.OpenName != "" {
		return f.OpenName
	}
	return f.FileName
}

// CoprocUsage is how many instances of which GPU type a version uses.
type CoprocUsage struct {
	Type  string  `json:"type"`
	Count float64 `json:"count"`
}

// AppVersion is one build of an app for a platform and plan class.
type AppVersion struct {
	ProjectURL string       `json:"project_url"`
	AppName    string       `json:"app_name"`
	VersionNum int          `json:"version_num"`
	Platform   string       `json:"platform"`
	PlanClass  string       `json:"plan_class,omitempty"`
	APIVersion string       `json:"api_version,omitempty"`
	AvgNCPUs   float64      `json:"avg_ncpus"`
	Flops      float64      `json:"flops"`
	Cmdline    string       `json:"cmdline,omitempty"`
	FilePrefix string       `json:"file_prefix,omitempty"`
	Coproc     *CoprocUsage `json:"coproc,omitempty"`
	FileRefs   []FileRef    `json:"file_refs"`
}

func (v *AppVersion) Key() string {
	return AppVersionKey(v.ProjectURL, v.AppName, v.Platform, v.PlanClass, v.VersionNum)
}

// AppVersionKey builds the key results use to find their version.
func AppVersionKey(projectURL, app, platform, planClass string, version int) string {
	return projectURL + "\x00" + app + "\x00" + platform + "\x00" + planClass + "\x00" + itoa(version)
}

// MainProgram is the file the task runner executes.
func (v *AppVersion) MainProgram() (FileRef, bool) {
	for _, f := range v.FileRefs {
		if f.MainProgram {
			return f, true
		}
	}
	return FileRef{}, false
}

// Workunit is the job description a result computes.
type Workunit struct {
	ProjectURL     string    `json:"project_url"`
	Name           string    `json:"name"`
	AppName        string    `json:"app_name"`
	VersionNum     int       `json:"version_num,omitempty"`
	CommandLine    string    `json:"command_line,omitempty"`
	RscFpopsEst    float64   `json:"rsc_fpops_est"`
	RscFpopsBound  float64   `json:"rsc_fpops_bound"`
	RscMemoryBound float64   `json:"rsc_memory_bound"`
	RscDiskBound   float64   `json:"rsc_disk_bound"`
	InputFiles     []FileRef `json:"input_files,omitempty"`
}

func (w *Workunit) Key() string { return w.ProjectURL + "\x00" + w.Name }

// Defaults the C++ client applies when a workunit omits its bounds.
const (
	DefaultRscFpopsEst    = 1e9 * 604800
	DefaultRscFpopsBound  = 4e9 * 604800
	DefaultRscMemoryBound = 1e8
	DefaultRscDiskBound   = 1e9
)

// ApplyDefaults fills bounds the server left out.
func (w *Workunit) ApplyDefaults() {
	if w.RscFpopsEst <= 0 {
		w.RscFpopsEst = DefaultRscFpopsEst
	}
	if w.RscFpopsBound <= 0 {
		w.RscFpopsBound = DefaultRscFpopsBound
	}
	if w.RscMemoryBound <= 0 {
		w.RscMemoryBound = DefaultRscMemoryBound
	}
	if w.RscDiskBound <= 0 {
		w.RscDiskBound = DefaultRscDiskBound
	}
}

// FileXfer is the persistent transfer state of a file (PERS_FILE_XFER).
type FileXfer struct {
	NumRetries       int       `json:"num_retries,omitempty"`
	FirstRequestTime time.Time `json:"first_request_time,omitempty"`
	NextRequestTime  time.Time `json:"next_request_time,omitempty"`
	URLIndex         int       `json:"url_index,omitempty"`
	BytesXferred     float64   `json:"bytes_xferred,omitempty"`
	LastError        string    `json:"last_error,omitempty"`
}

// FileInfo is a file the project told us about: an app file, an input or an
// output.
type FileInfo struct {
	ProjectURL   string   `json:"project_url"`
	Name         string   `json:"name"`
	DownloadURLs []string `json:"download_urls,omitempty"`
	UploadURLs   []string `json:"upload_urls,omitempty"`
	// GzippedURLs serve the file gzip-compressed (<gzipped_url>, from a
	// project's stage_file --gzip) and GzippedNBytes is that .gz's size
	// (<gzipped_nbytes>). The downloader tries them before DownloadURLs;
	// NBytes and MD5 are the uncompressed file's (FILE_INFO::parse).
	GzippedURLs       []string `json:"gzipped_urls,omitempty"`
	GzippedNBytes     float64  `json:"gzipped_nbytes,omitempty"`
	MD5               string   `json:"md5,omitempty"`
	NBytes            float64  `json:"nbytes"`
	MaxNBytes         float64  `json:"max_nbytes,omitempty"`
	Executable        bool     `json:"executable,omitempty"`
	Sticky            bool     `json:"sticky,omitempty"`
	FileSignature     string   `json:"file_signature,omitempty"`
	XMLSignature      string   `json:"xml_signature,omitempty"`
	SignatureRequired bool     `json:"signature_required,omitempty"`
	// Status is FileNotPresent, FilePresent, or a negative error number.
	Status   int      `json:"status"`
	Uploaded bool     `json:"uploaded,omitempty"`
	Xfer     FileXfer `json:"xfer"`
	ErrorMsg string   `json:"error_msg,omitempty"`

	// SHA256 (lower-case hex) and VerifiedBytes are what the file held
	// when it was verified: on arrival, after its size, MD5 and (for app
	// files) code signature checked out. Before every task start the file
	// must still have that size and hash, so bytes changed on disk since
	// are never run or computed on. "" for outputs and for files verified
	// by a boincd that did not record it: the next start-up hashes those
	// once, if their MD5 and signature still verify.
	SHA256        string `json:"sha256,omitempty"`
	VerifiedBytes int64  `json:"verified_bytes,omitempty"`
	// LocalError says why a file that was present is being fetched again
	// (missing, wrong size, content changed), so a task whose file cannot
	// be fetched again fails with a message that says what happened.
	LocalError string `json:"local_error,omitempty"`

	// AnonymousPlatform marks a file of the project's app_info.xml (the
	// C++ client's FILE_INFO::anonymous_platform_file): the volunteer's
	// own file, read from app_info.xml at every start, never downloaded,
	// verified, deleted or written to the state file.
	AnonymousPlatform bool `json:"anonymous_platform_file,omitempty"`
}

// Sealed reports whether the file's verified size and hash are recorded.
func (f *FileInfo) Sealed() bool { return f.SHA256 != "" }

func (f *FileInfo) Key() string { return f.ProjectURL + "\x00" + f.Name }

// IsUpload reports whether the file is an output to upload.
func (f *FileInfo) IsUpload() bool { return len(f.UploadURLs) > 0 }

// Host describes this computer as sent in <host_info>.
type Host struct {
	Timezone   int     `json:"timezone"`
	DomainName string  `json:"domain_name"`
	IPAddr     string  `json:"ip_addr"`
	HostCPID   string  `json:"host_cpid"`
	PNCPUs     int     `json:"p_ncpus"`
	PVendor    string  `json:"p_vendor"`
	PModel     string  `json:"p_model"`
	PFeatures  string  `json:"p_features"`
	PFpops     float64 `json:"p_fpops"`
	PIops      float64 `json:"p_iops"`
	PMembw     float64 `json:"p_membw"`
	// PCalculated is when the benchmarks ran (Unix seconds).
	PCalculated    float64 `json:"p_calculated"`
	MNBytes        float64 `json:"m_nbytes"`
	MCache         float64 `json:"m_cache"`
	MSwap          float64 `json:"m_swap"`
	DTotal         float64 `json:"d_total"`
	DFree          float64 `json:"d_free"`
	OSName         string  `json:"os_name"`
	OSVersion      string  `json:"os_version"`
	NUsableCoprocs int     `json:"n_usable_coprocs"`
	// ProductName is the device's product name as a GUI reported it
	// (set_host_info); projects show it on the host page.
	ProductName string `json:"product_name,omitempty"`
	// DockerVersion and DockerType are the container engine that can run
	// container apps ("4.9.3"; 1 Docker, 2 podman), written only when one
	// was found: projects send container jobs only to hosts reporting one.
	DockerVersion string `json:"docker_version,omitempty"`
	DockerType    int    `json:"docker_type,omitempty"`
}

// Prefs are the global computing preferences in force.
type Prefs struct {
	WorkBufMinDays             float64 `json:"work_buf_min_days"`
	WorkBufAdditionalDays      float64 `json:"work_buf_additional_days"`
	MaxNCPUsPct                float64 `json:"max_ncpus_pct"`
	CPUUsageLimit              float64 `json:"cpu_usage_limit"`
	CPUSchedulingPeriodMinutes float64 `json:"cpu_scheduling_period_minutes"`
	DiskInterval               float64 `json:"disk_interval"`
	DiskMaxUsedGB              float64 `json:"disk_max_used_gb"`
	DiskMaxUsedPct             float64 `json:"disk_max_used_pct"`
	DiskMinFreeGB              float64 `json:"disk_min_free_gb"`
	RAMMaxUsedBusyPct          float64 `json:"ram_max_used_busy_pct"`
	RAMMaxUsedIdlePct          float64 `json:"ram_max_used_idle_pct"`
	LeaveAppsInMemory          bool    `json:"leave_apps_in_memory"`
	RunIfUserActive            bool    `json:"run_if_user_active"`
	SuspendCPUUsage            float64 `json:"suspend_cpu_usage"`
	MaxBytesSecUp              float64 `json:"max_bytes_sec_up"`
	MaxBytesSecDown            float64 `json:"max_bytes_sec_down"`
	// DailyXferLimitMB over DailyXferPeriodDays is the network quota:
	// past it, file transfers wait (0 = none).
	DailyXferLimitMB    float64 `json:"daily_xfer_limit_mb,omitempty"`
	DailyXferPeriodDays int     `json:"daily_xfer_period_days,omitempty"`

	// When computing and network use are allowed (hostcond applies them;
	// they are here so that the prefs in force read back whole).
	RunOnBatteries         bool    `json:"run_on_batteries,omitempty"`
	RunGPUIfUserActive     bool    `json:"run_gpu_if_user_active,omitempty"`
	IdleTimeToRun          float64 `json:"idle_time_to_run,omitempty"`
	SuspendIfNoRecentInput float64 `json:"suspend_if_no_recent_input,omitempty"`
	StartHour              float64 `json:"start_hour,omitempty"`
	EndHour                float64 `json:"end_hour,omitempty"`
	NetStartHour           float64 `json:"net_start_hour,omitempty"`
	NetEndHour             float64 `json:"net_end_hour,omitempty"`
	// Days are the <day_prefs> windows, indexed by day of week (Sunday 0).
	Days [7]DayPrefs `json:"-"`
}

// DayPrefs is one weekday's <day_prefs>: the windows that replace the
// general ones on that day, when Has… is set.
type DayPrefs struct {
	HasCPU, HasNet           bool
	StartHour, EndHour       float64
	NetStartHour, NetEndHour float64
}

// DailyStats is one day of a project's credit history, as the scheduler
// last reported it that day (the C++ client's DAILY_STATS,
// statistics_<project>.xml). Day is a UTC midnight, as the C++ client
// rounds it (dday()).
type DailyStats struct {
	Day              time.Time `json:"day"`
	UserTotalCredit  float64   `json:"user_total_credit"`
	UserExpavgCredit float64   `json:"user_expavg_credit"`
	HostTotalCredit  float64   `json:"host_total_credit"`
	HostExpavgCredit float64   `json:"host_expavg_credit"`
}

// DailyXfer is one day of network traffic in bytes (DAILY_XFER); When
// is the day number: days since the Unix epoch (UTC).
type DailyXfer struct {
	When int     `json:"when"`
	Up   float64 `json:"up"`
	Down float64 `json:"down"`
}

// DefaultPrefs are the C++ client's defaults (lib/prefs.cpp), which the
// captured requests show.
func DefaultPrefs() Prefs {
	return Prefs{
		WorkBufMinDays:             0.1,
		WorkBufAdditionalDays:      0.5,
		MaxNCPUsPct:                0,
		CPUUsageLimit:              100,
		CPUSchedulingPeriodMinutes: 60,
		DiskInterval:               60,
		DiskMaxUsedPct:             90,
		DiskMinFreeGB:              0.1,
		RAMMaxUsedBusyPct:          50,
		RAMMaxUsedIdlePct:          90,
		RunIfUserActive:            true,
		SuspendCPUUsage:            25,
		IdleTimeToRun:              3,
	}
}

// UsableCPUs is floor(ncpus × pct/100), at least 1; 0 % means all
// (client/cpu_sched.cpp set_n_usable_cpus).
func (p Prefs) UsableCPUs(ncpus int) int {
	if ncpus < 1 {
		ncpus = 1
	}
	if p.MaxNCPUsPct <= 0 || p.MaxNCPUsPct >= 100 {
		return ncpus
	}
	n := int(float64(ncpus) * p.MaxNCPUsPct / 100)
	if n < 1 {
		n = 1
	}
	return n
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
