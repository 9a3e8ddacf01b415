package ccconfig

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// CC is cc_config.xml as read. Set names the <options> that appeared (a
// value equal to the default still counts: the volunteer wrote it).
type CC struct {
	Options  Options
	Set      map[string]bool
	LogFlags map[string]bool // every flag written, on or off
	// Unsupported lists options the C++ client knows and boincd does not
	// act on, in file order; Unknown, names neither knows.
	Unsupported []string
	Unknown     []string
}

// Options are the cc_config.xml <options> boincd acts on, with the C++
// client's defaults (CC_CONFIG::defaults).
type Options struct {
	NCPUs                    int // -1: all
	UseAllGPUs               bool
	NoGPUs                   bool
	ExcludeGPUs              []ExcludeGPU
	IgnoreGPU                map[string][]int // "NVIDIA", "ATI", "intel_gpu" → device numbers
	MaxFileXfers             int
	MaxFileXfersPerProject   int
	ReportResultsImmediately bool
	FetchMinimalWork         bool
	FetchOnUpdate            bool
	ExclusiveApps            []string
	ExclusiveGPUApps         []string
	StartDelay               float64 // seconds
	SaveStatsDays            int
	MaxTasksReported         int // 0: no limit
	HTTPTransferTimeout      float64
	HTTPTransferTimeoutBPS   float64
	RECHalfLifeDays          float64
	SkipCPUBenchmarks        bool
	UnsignedAppsOK           bool
	AllowRemoteGUIRPC        bool
	Proxy                    *boinc.ProxyInfo
	MaxStderrFileSize        float64 // bytes, 0: default
	MaxStdoutFileSize        float64
	NoInfoFetch              bool
	// DontContactRefSite: no fetch of BOINC's project list (the C++
	// client's all_projects_list_check).
	DontContactRefSite bool
	DontCheckFileSizes bool
	AbortJobsOnExit    bool
	ExitWhenIdle       bool
	SuppressNetInfo    bool
	// DontUseDocker keeps container apps off this host: no engine is
	// looked for, and scheduler requests say <dont_use_docker/>.
	DontUseDocker bool
	// NoAltPlatform sends only the primary platform; AltPlatforms are
	// added after the detected ones (CLIENT_STATE::detect_platforms).
	// Both are read at start only, as the C++ client detects platforms
	// once.
	NoAltPlatform bool
	AltPlatforms  []string
}

// ExcludeGPU is one <exclude_gpu>: a project (and optionally one device,
// GPU type or app) that must not use GPUs.
type ExcludeGPU struct {
	URL       string
	DeviceNum int // -1: all devices
	Type      string
	App       string
	Line      int
}

// DefaultOptions are CC_CONFIG::defaults() for the options above.
func DefaultOptions() Options {
	return Options{
		NCPUs: -1, MaxFileXfers: 8, MaxFileXfersPerProject: 2, SaveStatsDays: 30,
		HTTPTransferTimeout: 300, HTTPTransferTimeoutBPS: 10, RECHalfLifeDays: 10,
	}
}

// LogFlagNames are the C++ client's <log_flags> (LOG_FLAGS).
var LogFlagNames = []string{
	"task", "file_xfer", "sched_ops",
	"android_debug", "app_msg_receive", "app_msg_send", "async_file_debug", "benchmark_debug",
	"checkpoint_debug", "coproc_debug", "cpu_sched", "cpu_sched_debug", "cpu_sched_status",
	"dcf_debug", "disk_usage_debug", "file_xfer_debug", "gui_rpc_debug", "heartbeat_debug",
	"http_debug", "http_xfer_debug", "idle_detection_debug", "mem_usage_debug",
	"network_status_debug", "notice_debug", "poll_debug", "priority_debug", "proxy_debug",
	"rr_simulation", "rrsim_detail", "sched_op_debug", "scrsave_debug", "slot_debug",
	"state_debug", "statefile_debug", "suspend_debug", "task_debug", "time_debug",
	"trickle_debug", "unparsed_xml", "work_fetch_debug",
}

type optKind int

const (
	kFlag optKind = iota
	kInt
	kFloat
	kString
)

// option declares one <options> element boincd acts on.
type option struct {
	kind optKind
	set  func(o *Options, flag bool, i int, f float64, s string)
}

func flagOpt(set func(*Options, bool)) option {
	return option{kFlag, func(o *Options, b bool, _ int, _ float64, _ string) { set(o, b) }}
}
func intOpt(set func(*Options, int)) option {
	return option{kInt, func(o *Options, _ bool, i int, _ float64, _ string) { set(o, i) }}
}
func floatOpt(set func(*Options, float64)) option {
	return option{kFloat, func(o *Options, _ bool, _ int, f float64, _ string) { set(o, f) }}
}
func strOpt(set func(*Options, string)) option {
	return option{kString, func(o *Options, _ bool, _ int, _ float64, s string) { set(o, s) }}
}

var options = map[string]option{
	"ncpus":                      intOpt(func(o *Options, v int) { o.NCPUs = v }),
	"use_all_gpus":               flagOpt(func(o *Options, v bool) { o.UseAllGPUs = v }),
	"no_gpus":                    flagOpt(func(o *Options, v bool) { o.NoGPUs = v }),
	"max_file_xfers":             intOpt(func(o *Options, v int) { o.MaxFileXfers = v }),
	"max_file_xfers_per_project": intOpt(func(o *Options, v int) { o.MaxFileXfersPerProject = v }),
	"report_results_immediately": flagOpt(func(o *Options, v bool) { o.ReportResultsImmediately = v }),
	"fetch_minimal_work":         flagOpt(func(o *Options, v bool) { o.FetchMinimalWork = v }),
	"fetch_on_update":            flagOpt(func(o *Options, v bool) { o.FetchOnUpdate = v }),
	"exclusive_app":              strOpt(func(o *Options, v string) { o.ExclusiveApps = append(o.ExclusiveApps, v) }),
	"exclusive_gpu_app":          strOpt(func(o *Options, v string) { o.ExclusiveGPUApps = append(o.ExclusiveGPUApps, v) }),
	"start_delay":                floatOpt(func(o *Options, v float64) { o.StartDelay = v }),
	"save_stats_days":            intOpt(func(o *Options, v int) { o.SaveStatsDays = v }),
	"max_tasks_reported":         intOpt(func(o *Options, v int) { o.MaxTasksReported = v }),
	"http_transfer_timeout":      floatOpt(func(o *Options, v float64) { o.HTTPTransferTimeout = v }),
	"http_transfer_timeout_bps":  floatOpt(func(o *Options, v float64) { o.HTTPTransferTimeoutBPS = v }),
	"rec_half_life_days":         floatOpt(func(o *Options, v float64) { o.RECHalfLifeDays = v }),
	"skip_cpu_benchmarks":        flagOpt(func(o *Options, v bool) { o.SkipCPUBenchmarks = v }),
	"unsigned_apps_ok":           flagOpt(func(o *Options, v bool) { o.UnsignedAppsOK = v }),
	"allow_remote_gui_rpc":       flagOpt(func(o *Options, v bool) { o.AllowRemoteGUIRPC = v }),
	"max_stderr_file_size":       floatOpt(func(o *Options, v float64) { o.MaxStderrFileSize = v }),
	"max_stdout_file_size":       floatOpt(func(o *Options, v float64) { o.MaxStdoutFileSize = v }),
	"no_info_fetch":              flagOpt(func(o *Options, v bool) { o.NoInfoFetch = v }),
	"dont_contact_ref_site":      flagOpt(func(o *Options, v bool) { o.DontContactRefSite = v }),
	"dont_check_file_sizes":      flagOpt(func(o *Options, v bool) { o.DontCheckFileSizes = v }),
	"abort_jobs_on_exit":         flagOpt(func(o *Options, v bool) { o.AbortJobsOnExit = v }),
	"exit_when_idle":             flagOpt(func(o *Options, v bool) { o.ExitWhenIdle = v }),
	"suppress_net_info":          flagOpt(func(o *Options, v bool) { o.SuppressNetInfo = v }),
	"dont_use_docker":            flagOpt(func(o *Options, v bool) { o.DontUseDocker = v }),
	"no_alt_platform":            flagOpt(func(o *Options, v bool) { o.NoAltPlatform = v }),
}

// unsupported are CC_CONFIG options boincd reads past without acting on
// them, with the value that means "off" (CC_CONFIG::defaults): the
// Manager writes every option it knows at its default, so only one set
// to something else is worth naming.
var unsupported = map[string]string{
	"allow_gui_rpc_get": "0", "allow_multiple_clients": "0", "client_download_url": "",
	"client_new_version_text": "", "client_version_check_url": "", "disallow_attach": "0",
	"dont_suspend_nci": "0", "dont_use_vbox": "0", "dont_use_wsl": "0",
	"exclude_gpu_app": "", "exit_after_finish": "0", "exit_before_start": "0",
	"force_auth": "default", "http_1_0": "0", "lower_client_priority": "0", "max_event_log_lines": "2000",
	"no_opencl": "0", "no_priority_change": "0", "no_rdp_check": "0",
	"os_random_only": "0", "process_priority": "-1", "process_priority_special": "-1",
	"run_apps_manually": "0", "simple_gui_only": "0", "stderr_head": "0", "use_certs": "0",
	"use_certs_only": "0", "vbox_window": "0", "allowed_wsls": "", "ignore_tty": "", "device_name": "",
	"max_overdue_days": "",
}

// isDefault: the value text means the same as def (numbers compared as
// numbers; an empty element is a set flag where the default is 0, else
// the default).
func isDefault(v, def string) bool {
	v = strings.TrimSpace(v)
	if v == "" && def == "0" {
		v = "1" // <flag/> sets a flag
	}
	if v == "" || v == def {
		return true
	}
	a, err1 := strconv.ParseFloat(v, 64)
	b, err2 := strconv.ParseFloat(def, 64)
	return err1 == nil && err2 == nil && a == b
}

// ParseCC reads cc_config.xml. It never fails: what it cannot use is a
// problem, and everything else applies.
func ParseCC(file string, data []byte) (CC, []Problem) {
	cc := CC{Options: DefaultOptions(), Set: map[string]bool{}, LogFlags: map[string]bool{}}
	root, probs := parseTree(file, data)
	if root == nil {
		return cc, probs
	}
	var top *node
	for _, c := range root.children {
		if c.name == "cc_config" {
			top = c
			break
		}
	}
	if top == nil {
		if len(probs) == 0 {
			probs = append(probs, Problem{File: file, Msg: "no <cc_config> element"})
		}
		return cc, probs
	}
	for _, sec := range top.children {
		switch sec.name {
		case "options":
			cc.parseOptions(file, sec, &probs)
		case "log_flags":
			for _, f := range sec.children {
				if !slices.Contains(LogFlagNames, f.name) {
					probs = append(probs, Problem{File: file, Line: f.line, Msg: fmt.Sprintf("unknown log flag <%s>", f.name)})
					continue
				}
				cc.LogFlags[f.name] = f.flag(file, &probs)
			}
		default:
			probs = append(probs, Problem{File: file, Line: sec.line, Msg: fmt.Sprintf("unknown element <%s> in <cc_config>", sec.name)})
		}
	}
	return cc, probs
}

func (cc *CC) parseOptions(file string, sec *node, probs *[]Problem) {
	o := &cc.Options
	for _, n := range sec.children {
		if opt, ok := options[n.name]; ok {
			var (
				b  bool
				i  int
				f  float64
				ok = true
			)
			switch opt.kind {
			case kFlag:
				b = n.flag(file, probs)
			case kInt:
				i, ok = n.int(file, probs)
			case kFloat:
				f, ok = n.float(file, probs)
			case kString:
				ok = n.str() != ""
				if !ok {
					*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<%s> is empty", n.name)})
				}
			}
			if ok {
				opt.set(o, b, i, f, n.str())
				cc.Set[n.name] = true
			}
			continue
		}
		switch n.name {
		case "exclude_gpu":
			if x, ok := parseExcludeGPU(file, n, probs); ok {
				o.ExcludeGPUs = append(o.ExcludeGPUs, x)
				cc.Set[n.name] = true
			}
		case "ignore_nvidia_dev", "ignore_ati_dev", "ignore_intel_dev":
			if v, ok := n.int(file, probs); ok {
				typ := map[string]string{"ignore_nvidia_dev": "NVIDIA", "ignore_ati_dev": "ATI", "ignore_intel_dev": "intel_gpu"}[n.name]
				if o.IgnoreGPU == nil {
					o.IgnoreGPU = map[string][]int{}
				}
				o.IgnoreGPU[typ] = append(o.IgnoreGPU[typ], v)
				cc.Set[n.name] = true
			}
		case "alt_platform":
			// Repeatable; an empty one (what a tool writing every
			// option at its default may leave) adds nothing.
			if v := n.str(); v != "" {
				if strings.ContainsAny(v, "\x00\n\r\t<>&") || len(v) > 256 {
					*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<alt_platform> %q: not a usable platform name", v)})
					continue
				}
				o.AltPlatforms = append(o.AltPlatforms, v)
				cc.Set[n.name] = true
			}
		case "proxy_info":
			p, err := boinc.ParseProxyInfo([]byte(n.raw()))
			if err != nil {
				*probs = append(*probs, Problem{File: file, Line: n.line, Msg: err.Error()})
				continue
			}
			// The Manager writes an empty <proxy_info> into every
			// cc_config.xml it saves: only one that names a proxy is a
			// setting (and then overrides the GUI's).
			if p.Active() {
				o.Proxy = &p
				cc.Set[n.name] = true
			}
		default:
			if def, ok := unsupported[n.name]; ok {
				if len(n.children) > 0 || !isDefault(n.str(), def) {
					cc.Unsupported = append(cc.Unsupported, n.name)
				}
			} else {
				cc.Unknown = append(cc.Unknown, n.name)
				*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("unknown option <%s>", n.name)})
			}
		}
	}
	if o.NCPUs < -1 {
		*probs = append(*probs, Problem{File: file, Msg: fmt.Sprintf("<ncpus>%d</ncpus>: below -1, taken as -1 (all CPUs)", o.NCPUs)})
		o.NCPUs = -1
	}
	if o.MaxFileXfers < 1 {
		o.MaxFileXfers = 1
	}
	if o.MaxFileXfersPerProject < 1 {
		o.MaxFileXfersPerProject = 1
	}
}

func parseExcludeGPU(file string, n *node, probs *[]Problem) (ExcludeGPU, bool) {
	x := ExcludeGPU{DeviceNum: -1, Line: n.line}
	for _, c := range n.children {
		switch c.name {
		case "url":
			x.URL = c.str()
		case "device_num":
			v, ok := c.int(file, probs)
			if !ok {
				return x, false
			}
			x.DeviceNum = v
		case "type":
			x.Type = c.str()
		case "app":
			x.App = c.str()
		default:
			*probs = append(*probs, Problem{File: file, Line: c.line, Msg: fmt.Sprintf("unknown element <%s> in <exclude_gpu>", c.name)})
		}
	}
	if x.URL == "" {
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: "<exclude_gpu> without <url>; ignored"})
		return x, false
	}
	if c, err := boinc.CanonicalMasterURL(x.URL); err == nil {
		x.URL = c
	}
	switch strings.ToLower(x.Type) {
	case "", "nvidia", "ati", "amd", "intel_gpu", "intel":
	default:
		*probs = append(*probs, Problem{File: file, Line: n.line, Msg: fmt.Sprintf("<exclude_gpu> type %q is not NVIDIA, ATI or intel_gpu; ignored", x.Type)})
		return x, false
	}
	return x, true
}
