package rpcclient

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

// SchedulerRequest is everything one <scheduler_request> carries. The caller
// fills it from client state; WriteTo renders it exactly as the C++ client
// 7.20 does, so servers treat boincd like the reference client.
type SchedulerRequest struct {
	Authenticator string
	HostID        int64
	RPCSeqno      int64

	ResourceShareFraction float64
	RRSFraction           float64
	PRRSFraction          float64
	DCF                   float64

	AllowMultipleClients bool
	Sandbox              bool
	DontSendWork         bool
	// DontUseDocker is <dont_use_docker/>: the volunteer keeps container
	// apps off this host, so the server sends none (PROTOCOLS.md §1.3 #8).
	DontUseDocker bool

	WorkReqSeconds  float64
	CPUReqSecs      float64
	CPUReqInstances float64
	EstimatedDelay  float64

	// Platform is <platform_name>: the primary platform, or "anonymous"
	// (default: this build's, platform.This). AltPlatforms follow it as
	// <alt_platform> elements, in the host's order of preference
	// (CLIENT_STATE::write_platforms).
	Platform     string
	AltPlatforms []string
	// CodeSignKey is the project's key text ("1024\n…\n."), echoed once the
	// project has sent one.
	CodeSignKey    string
	Prefs          boinc.Prefs
	CrossProjectID string
	TimeStats      TimeStats
	NetStats       NetStats
	Host           boinc.Host
	DiskUsage      DiskUsage
	// CoprocsXML is the body of the top-level <coprocs> element (one
	// <coproc_cuda>… per GPU type, with req_secs/req_instances), written
	// only when the host has a GPU (PROTOCOLS.md §1.3 #20).
	CoprocsXML string
	Results    []ReportedResult
	// MsgsFromHost are the trickle-up messages waiting in the project
	// directory (PROTOCOLS.md §1.3 #22).
	MsgsFromHost []MsgFromHost
	// AppVersions are all of the project's versions; OtherResult.AppVersion
	// indexes this slice.
	AppVersions  []*boinc.AppVersion
	OtherResults []OtherResult
}

// TimeStats is <time_stats>: fractions in [0,1] (connected_frac may be -1
// for "unknown"), durations in seconds, times in Unix seconds.
type TimeStats struct {
	OnFrac                     float64
	ConnectedFrac              float64
	CPUAndNetworkAvailableFrac float64
	ActiveFrac                 float64
	GPUActiveFrac              float64
	ClientStartTime            float64
	TotalStartTime             float64
	TotalDuration              float64
	TotalActiveDuration        float64
	TotalGPUActiveDuration     float64
	Now                        float64
	PreviousUptime             float64
	SessionActiveDuration      float64
	SessionGPUActiveDuration   float64
}

// NetStats is <net_stats>: average bandwidths (bytes/s), their exponential
// averages and the times those were last updated.
type NetStats struct {
	BWUp, AvgUp, AvgTimeUp       float64
	BWDown, AvgDown, AvgTimeDown float64
}

// DiskUsage is <disk_usage> in bytes: all of BOINC, this project, and this
// project's share of the allowed disk.
type DiskUsage struct {
	Total, Project, Share float64
}

// ReportedResult is one finished result in the report, with the output
// files that were uploaded.
type ReportedResult struct {
	Result      *boinc.Result
	OutputFiles []*boinc.FileInfo
	// AppVersionNum is the workunit's version_num (app_version_num).
	AppVersionNum int
	// PeakSwapSize is final_peak_swap_size in bytes: boinc.Result has no
	// field for it and the C++ client reports it.
	PeakSwapSize float64
}

// OtherResult is a result of this project that is not being reported; the
// server uses the list to resend lost jobs.
type OtherResult struct {
	Name       string
	AppVersion int // index into SchedulerRequest.AppVersions
	PlanClass  string
}

// maxStderrBytes is how much of a task's stderr goes into a report: the C++
// client keeps the last 63 KB (client/app_control.cpp read_stderr_file).
const maxStderrBytes = 63 * 1024

// writePlatforms is CLIENT_STATE::write_platforms, shared by the
// scheduler and account manager requests: the primary platform (this
// build's when empty) and each alternate.
func writePlatforms(x *xw, primary string, alts []string) {
	if primary == "" {
		primary = platform.This()
	}
	x.elemS("    <platform_name>", primary, "</platform_name>\n")
	for _, p := range alts {
		x.elemS("    <alt_platform>\n        <name>", p, "</name>\n    </alt_platform>\n")
	}
}

// WriteTo writes the request XML to w.
func (r *SchedulerRequest) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	x := &xw{w: bufio.NewWriterSize(cw, 32*1024)}
	r.write(x)
	if x.err == nil {
		x.err = x.w.Flush()
	}
	if x.err != nil {
		return cw.n, fmt.Errorf("write scheduler request: %w", x.err)
	}
	return cw.n, nil
}

func (r *SchedulerRequest) write(x *xw) {
	writeRequestHead(x, r.Authenticator, r.HostID, r.RPCSeqno, boinc.ClientRelease)
	x.elemF("    <resource_share_fraction>", r.ResourceShareFraction, "</resource_share_fraction>\n")
	x.elemF("    <rrs_fraction>", r.RRSFraction, "</rrs_fraction>\n")
	x.elemF("    <prrs_fraction>", r.PRRSFraction, "</prrs_fraction>\n")
	x.elemF("    <duration_correction_factor>", r.DCF, "</duration_correction_factor>\n")
	x.elemB("    <allow_multiple_clients>", r.AllowMultipleClients, "</allow_multiple_clients>\n")
	x.elemB("    <sandbox>", r.Sandbox, "</sandbox>\n")
	x.elemB("    <dont_send_work>", r.DontSendWork, "</dont_send_work>\n")
	if r.DontUseDocker {
		x.raw("    <dont_use_docker/>\n")
	}
	x.elemF("    <work_req_seconds>", r.WorkReqSeconds, "</work_req_seconds>\n")
	x.elemF("    <cpu_req_secs>", r.CPUReqSecs, "</cpu_req_secs>\n")
	x.elemF("    <cpu_req_instances>", r.CPUReqInstances, "</cpu_req_instances>\n")
	x.elemF("    <estimated_delay>", r.EstimatedDelay, "</estimated_delay>\n")
	x.raw("    <client_cap_plan_class>1</client_cap_plan_class>\n")
	writePlatforms(x, r.Platform, r.AltPlatforms)
	if key := strings.TrimSpace(r.CodeSignKey); key != "" {
		x.elemS("    <code_sign_key>\n", key, "\n</code_sign_key>\n")
	}
	writePrefs(x, &r.Prefs)
	x.elemS("<cross_project_id>", r.CrossProjectID, "</cross_project_id>\n")
	r.writeTimeStats(x)
	r.writeNetStats(x)
	writeHost(x, &r.Host)
	x.raw("    <disk_usage>\n")
	x.elemF("        <d_boinc_used_total>", r.DiskUsage.Total, "</d_boinc_used_total>\n")
	x.elemF("        <d_boinc_used_project>", r.DiskUsage.Project, "</d_boinc_used_project>\n")
	x.elemF("        <d_project_share>", r.DiskUsage.Share, "</d_project_share>\n")
	x.raw("    </disk_usage>\n")
	if r.CoprocsXML != "" {
		x.raw("    <coprocs>\n")
		x.raw(r.CoprocsXML)
		if !strings.HasSuffix(r.CoprocsXML, "\n") {
			x.raw("\n")
		}
		x.raw("    </coprocs>\n")
	}
	for i := range r.Results {
		writeReportedResult(x, &r.Results[i])
	}
	for i := range r.MsgsFromHost {
		writeMsgFromHost(x, &r.MsgsFromHost[i])
	}
	x.raw("<app_versions>\n")
	for _, av := range r.AppVersions {
		if av != nil {
			writeAppVersion(x, av)
		}
	}
	x.raw("</app_versions>\n")
	x.raw("<other_results>\n")
	for _, o := range r.OtherResults {
		x.elemS("    <other_result>\n        <name>", o.Name, "</name>\n")
		x.elemI("        <app_version>", int64(o.AppVersion), "</app_version>\n")
		if o.PlanClass != "" {
			x.elemS("        <plan_class>", o.PlanClass, "</plan_class>\n")
		}
		x.raw("    </other_result>\n")
	}
	x.raw("</other_results>\n")
	x.raw("</scheduler_request>\n")
}

// MsgFromHost is one trickle-up message: the task that sent it, when,
// and the app's text (which starts with <variety>…</variety>).
type MsgFromHost struct {
	ResultName string
	Time       int64
	Body       string
}

// writeMsgFromHost writes a trickle-up as cs_trickle.cpp
// read_trickle_files does: the file's contents inlined as they are, one
// line of their own, so the server's line parser (MSG_FROM_HOST_DESC::
// parse) finds <variety> and keeps the rest as the message.
func writeMsgFromHost(x *xw, m *MsgFromHost) {
	x.raw("  <msg_from_host>\n")
	x.elemS("      <result_name>", m.ResultName, "</result_name>\n")
	x.elemI("      <time>", m.Time, "</time>\n")
	x.raw(m.Body)
	x.raw("\n  </msg_from_host>\n")
}

// writeRequestHead opens a scheduler request: the account, the host and
// the client version, as both the full request and a replicated trickle
// begin.
func writeRequestHead(x *xw, authenticator string, hostID, rpcSeqno, release int64) {
	x.raw("<scheduler_request>\n")
	x.elemS("    <authenticator>", authenticator, "</authenticator>\n")
	x.elemI("    <hostid>", hostID, "</hostid>\n")
	x.elemI("    <rpc_seqno>", rpcSeqno, "</rpc_seqno>\n")
	x.elemI("    <core_client_major_version>", boinc.ClientMajor, "</core_client_major_version>\n")
	x.elemI("    <core_client_minor_version>", boinc.ClientMinor, "</core_client_minor_version>\n")
	x.elemI("    <core_client_release>", release, "</core_client_release>\n")
}

// TrickleUpRequest is the message a replicated trickle-up posts to each
// of the project's <trickle_up_urls> (cs_trickle.cpp
// trickle_up_request_message): a scheduler request holding only the
// account, the host and the one message. As there, the release is 99.
func TrickleUpRequest(authenticator string, hostID, rpcSeqno int64, platform string, m MsgFromHost) []byte {
	var b bytes.Buffer
	x := &xw{w: bufio.NewWriter(&b)}
	writeRequestHead(x, authenticator, hostID, rpcSeqno, 99)
	x.elemS("    <platform_name>", platform, "</platform_name>\n")
	x.raw("    <msg_from_host>\n")
	x.elemS("        <result_name>", m.ResultName, "</result_name>\n")
	x.elemI("        <time>", m.Time, "</time>\n")
	x.raw(m.Body)
	x.raw("\n    </msg_from_host>\n")
	x.raw("</scheduler_request>\n")
	_ = x.w.Flush()
	return b.Bytes()
}

// writePrefs writes the prefs in force as lib/prefs.cpp GLOBAL_PREFS::write
// does. Fields boincd does not model carry the C++ defaults, which is what
// the reference client sends when no preferences file exists.
func writePrefs(x *xw, p *boinc.Prefs) {
	x.raw("<working_global_preferences>\n<global_preferences>\n")
	x.raw("   <source_project></source_project>\n")
	x.raw("   <mod_time>0.000000</mod_time>\n")
	x.raw("   <battery_charge_min_pct>90.000000</battery_charge_min_pct>\n")
	x.raw("   <battery_max_temperature>40.000000</battery_max_temperature>\n")
	x.raw("   <run_on_batteries>0</run_on_batteries>\n")
	x.elemB("   <run_if_user_active>", p.RunIfUserActive, "</run_if_user_active>\n")
	x.raw("   <run_gpu_if_user_active>0</run_gpu_if_user_active>\n")
	x.raw("   <suspend_if_no_recent_input>0.000000</suspend_if_no_recent_input>\n")
	x.elemF("   <suspend_cpu_usage>", p.SuspendCPUUsage, "</suspend_cpu_usage>\n")
	x.raw("   <start_hour>0.000000</start_hour>\n")
	x.raw("   <end_hour>0.000000</end_hour>\n")
	x.raw("   <net_start_hour>0.000000</net_start_hour>\n")
	x.raw("   <net_end_hour>0.000000</net_end_hour>\n")
	x.elemB("   <leave_apps_in_memory>", p.LeaveAppsInMemory, "</leave_apps_in_memory>\n")
	x.raw("   <confirm_before_connecting>1</confirm_before_connecting>\n")
	x.raw("   <hangup_if_dialed>0</hangup_if_dialed>\n")
	x.raw("   <dont_verify_images>0</dont_verify_images>\n")
	x.elemF("   <work_buf_min_days>", p.WorkBufMinDays, "</work_buf_min_days>\n")
	x.elemF("   <work_buf_additional_days>", p.WorkBufAdditionalDays, "</work_buf_additional_days>\n")
	x.elemF("   <max_ncpus_pct>", p.MaxNCPUsPct, "</max_ncpus_pct>\n")
	x.elemF("   <cpu_scheduling_period_minutes>", p.CPUSchedulingPeriodMinutes, "</cpu_scheduling_period_minutes>\n")
	x.elemF("   <disk_interval>", p.DiskInterval, "</disk_interval>\n")
	x.elemF("   <disk_max_used_gb>", p.DiskMaxUsedGB, "</disk_max_used_gb>\n")
	x.elemF("   <disk_max_used_pct>", p.DiskMaxUsedPct, "</disk_max_used_pct>\n")
	x.elemF("   <disk_min_free_gb>", p.DiskMinFreeGB, "</disk_min_free_gb>\n")
	x.raw("   <vm_max_used_pct>75.000000</vm_max_used_pct>\n")
	x.elemF("   <ram_max_used_busy_pct>", p.RAMMaxUsedBusyPct, "</ram_max_used_busy_pct>\n")
	x.elemF("   <ram_max_used_idle_pct>", p.RAMMaxUsedIdlePct, "</ram_max_used_idle_pct>\n")
	x.raw("   <idle_time_to_run>3.000000</idle_time_to_run>\n")
	x.elemF("   <max_bytes_sec_up>", p.MaxBytesSecUp, "</max_bytes_sec_up>\n")
	x.elemF("   <max_bytes_sec_down>", p.MaxBytesSecDown, "</max_bytes_sec_down>\n")
	x.elemF("   <cpu_usage_limit>", p.CPUUsageLimit, "</cpu_usage_limit>\n")
	x.raw("   <daily_xfer_limit_mb>0.000000</daily_xfer_limit_mb>\n")
	x.raw("   <daily_xfer_period_days>0</daily_xfer_period_days>\n")
	x.raw("   <override_file_present>0</override_file_present>\n")
	x.raw("   <network_wifi_only>0</network_wifi_only>\n")
	x.raw("</global_preferences>\n</working_global_preferences>\n")
}

func (r *SchedulerRequest) writeTimeStats(x *xw) {
	t := &r.TimeStats
	x.raw("<time_stats>\n")
	x.elemF("    <on_frac>", t.OnFrac, "</on_frac>\n")
	x.elemF("    <connected_frac>", t.ConnectedFrac, "</connected_frac>\n")
	x.elemF("    <cpu_and_network_available_frac>", t.CPUAndNetworkAvailableFrac, "</cpu_and_network_available_frac>\n")
	x.elemF("    <active_frac>", t.ActiveFrac, "</active_frac>\n")
	x.elemF("    <gpu_active_frac>", t.GPUActiveFrac, "</gpu_active_frac>\n")
	x.elemF("    <client_start_time>", t.ClientStartTime, "</client_start_time>\n")
	x.elemF("    <total_start_time>", t.TotalStartTime, "</total_start_time>\n")
	x.elemF("    <total_duration>", t.TotalDuration, "</total_duration>\n")
	x.elemF("    <total_active_duration>", t.TotalActiveDuration, "</total_active_duration>\n")
	x.elemF("    <total_gpu_active_duration>", t.TotalGPUActiveDuration, "</total_gpu_active_duration>\n")
	x.elemF("    <now>", t.Now, "</now>\n")
	x.elemF("    <previous_uptime>", t.PreviousUptime, "</previous_uptime>\n")
	x.elemF("    <session_active_duration>", t.SessionActiveDuration, "</session_active_duration>\n")
	x.elemF("    <session_gpu_active_duration>", t.SessionGPUActiveDuration, "</session_gpu_active_duration>\n")
	x.raw("</time_stats>\n")
}

func (r *SchedulerRequest) writeNetStats(x *xw) {
	n := &r.NetStats
	x.raw("<net_stats>\n")
	x.elemF("    <bwup>", n.BWUp, "</bwup>\n")
	x.elemF("    <avg_up>", n.AvgUp, "</avg_up>\n")
	x.elemF("    <avg_time_up>", n.AvgTimeUp, "</avg_time_up>\n")
	x.elemF("    <bwdown>", n.BWDown, "</bwdown>\n")
	x.elemF("    <avg_down>", n.AvgDown, "</avg_down>\n")
	x.elemF("    <avg_time_down>", n.AvgTimeDown, "</avg_time_down>\n")
	x.raw("</net_stats>\n")
}

// writeHost writes <host_info> as HOST_INFO::write does for scheduler
// requests: no coprocessors inside (they would go top level), and WSL
// reported as unavailable since boincd runs natively on Linux.
func writeHost(x *xw, h *boinc.Host) { writeHostCoprocs(x, h, false, "") }

// writeHostCoprocs is writeHost with, when withCoprocs, a <coprocs>
// element inside <host_info> (empty without GPUs), as the account manager
// request has it.
func writeHostCoprocs(x *xw, h *boinc.Host, withCoprocs bool, coprocs string) {
	x.raw("<host_info>\n")
	x.elemI("    <timezone>", int64(h.Timezone), "</timezone>\n")
	x.elemS("    <domain_name>", h.DomainName, "</domain_name>\n")
	x.elemS("    <ip_addr>", h.IPAddr, "</ip_addr>\n")
	x.elemS("    <host_cpid>", h.HostCPID, "</host_cpid>\n")
	x.elemI("    <p_ncpus>", int64(h.PNCPUs), "</p_ncpus>\n")
	x.elemS("    <p_vendor>", h.PVendor, "</p_vendor>\n")
	x.elemS("    <p_model>", h.PModel, "</p_model>\n")
	x.elemS("    <p_features>", h.PFeatures, "</p_features>\n")
	x.elemF("    <p_fpops>", h.PFpops, "</p_fpops>\n")
	x.elemF("    <p_iops>", h.PIops, "</p_iops>\n")
	x.elemF("    <p_membw>", h.PMembw, "</p_membw>\n")
	x.elemF("    <p_calculated>", h.PCalculated, "</p_calculated>\n")
	x.raw("    <p_vm_extensions_disabled>0</p_vm_extensions_disabled>\n")
	x.elemF("    <m_nbytes>", h.MNBytes, "</m_nbytes>\n")
	x.elemF("    <m_cache>", h.MCache, "</m_cache>\n")
	x.elemF("    <m_swap>", h.MSwap, "</m_swap>\n")
	x.elemF("    <d_total>", h.DTotal, "</d_total>\n")
	x.elemF("    <d_free>", h.DFree, "</d_free>\n")
	x.elemS("    <os_name>", h.OSName, "</os_name>\n")
	x.elemS("    <os_version>", h.OSVersion, "</os_version>\n")
	x.elemI("    <n_usable_coprocs>", int64(h.NUsableCoprocs), "</n_usable_coprocs>\n")
	x.raw("    <wsl_available>0</wsl_available>\n")
	if h.DockerVersion != "" {
		x.elemS("    <docker_version>", h.DockerVersion, "</docker_version>\n")
		x.elemI("    <docker_type>", int64(h.DockerType), "</docker_type>\n")
	}
	if h.ProductName != "" {
		x.elemS("    <product_name>", h.ProductName, "</product_name>\n")
	}
	if withCoprocs {
		x.raw("    <coprocs>\n")
		x.raw(coprocs)
		if coprocs != "" && !strings.HasSuffix(coprocs, "\n") {
			x.raw("\n")
		}
		x.raw("    </coprocs>\n")
	}
	x.raw("</host_info>\n")
}

// writeReportedResult follows client/result.cpp RESULT::write(to_server).
func writeReportedResult(x *xw, rr *ReportedResult) {
	r := rr.Result
	if r == nil {
		return
	}
	x.elemS("<result>\n    <name>", r.Name, "</name>\n")
	x.elemF("    <final_cpu_time>", r.FinalCPUTime, "</final_cpu_time>\n")
	x.elemF("    <final_elapsed_time>", r.FinalElapsedTime, "</final_elapsed_time>\n")
	x.elemI("    <exit_status>", int64(r.ExitStatus), "</exit_status>\n")
	x.elemI("    <state>", int64(r.WireState), "</state>\n")
	x.elemS("    <platform>", r.Platform, "</platform>\n")
	x.elemI("    <version_num>", int64(r.VersionNum), "</version_num>\n")
	if r.PlanClass != "" {
		x.elemS("    <plan_class>", r.PlanClass, "</plan_class>\n")
	}
	if r.PeakWorkingSet != 0 {
		x.elemF0("    <final_peak_working_set_size>", r.PeakWorkingSet, "</final_peak_working_set_size>\n")
	}
	if rr.PeakSwapSize != 0 {
		x.elemF0("    <final_peak_swap_size>", rr.PeakSwapSize, "</final_peak_swap_size>\n")
	}
	if r.PeakDiskUsage != 0 {
		x.elemF0("    <final_peak_disk_usage>", r.PeakDiskUsage, "</final_peak_disk_usage>\n")
	}
	x.elemI("    <app_version_num>", int64(rr.AppVersionNum), "</app_version_num>\n")
	x.raw("<stderr_out>\n<core_client_version>")
	x.i(boinc.ClientMajor)
	x.raw(".")
	x.i(boinc.ClientMinor)
	x.raw(".")
	x.i(boinc.ClientRelease)
	x.raw("</core_client_version>\n")
	if r.StderrOut != "" || r.ErrorMessage != "" {
		// The CDATA body is what the C++ client keeps in RESULT::stderr_out:
		// the wrapped stderr.txt tail, then any error message.
		x.raw("<![CDATA[\n")
		if r.StderrOut != "" {
			s := r.StderrOut
			if len(s) > maxStderrBytes {
				s = s[len(s)-maxStderrBytes:]
			}
			x.raw("<stderr_txt>\n")
			writeCDATAText(x, escapeNonASCII(s))
			x.raw("\n</stderr_txt>\n")
		}
		if r.ErrorMessage != "" {
			x.raw("<message>\n")
			writeCDATAText(x, r.ErrorMessage)
			x.raw("</message>\n")
		}
		x.raw("]]>\n")
	}
	x.raw("</stderr_out>\n")
	for _, f := range rr.OutputFiles {
		if f != nil {
			writeOutputFileInfo(x, f)
		}
	}
	x.raw("</result>\n")
}

// escapeNonASCII writes bytes ≥ 0x80 as &#N;, as the C++ client does when
// it reads stderr.txt into the report (ACTIVE_TASK::read_stderr_file), so
// the scheduler's XML parser never sees invalid UTF-8 from an app.
func escapeNonASCII(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			n++
		}
	}
	if n == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 5*n)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 {
			b.WriteString("&#")
			b.WriteString(strconv.Itoa(int(c)))
			b.WriteByte(';')
		} else {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// writeCDATAText writes s inside a CDATA section; a "]]>" in s would end the
// section early, so it is split across two sections.
func writeCDATAText(x *xw, s string) {
	for {
		i := strings.Index(s, "]]>")
		if i < 0 {
			x.raw(s)
			return
		}
		x.raw(s[:i+2])
		x.raw("]]><![CDATA[")
		s = s[i+2:]
	}
}

// writeOutputFileInfo is FILE_INFO::write(to_server=true).
func writeOutputFileInfo(x *xw, f *boinc.FileInfo) {
	x.elemS("<file_info>\n    <name>", f.Name, "</name>\n")
	x.elemF("    <nbytes>", f.NBytes, "</nbytes>\n")
	x.elemF("    <max_nbytes>", f.MaxNBytes, "</max_nbytes>\n")
	if f.MD5 != "" {
		x.elemS("    <md5_cksum>", f.MD5, "</md5_cksum>\n")
	}
	for _, u := range f.DownloadURLs {
		x.elemS("    <download_url>", u, "</download_url>\n")
	}
	for _, u := range f.UploadURLs {
		x.elemS("    <upload_url>", u, "</upload_url>\n")
	}
	if msg := strings.TrimSpace(f.ErrorMsg); msg != "" {
		x.elemS("    <error_msg>\n", msg, "\n</error_msg>\n")
	}
	x.raw("</file_info>\n")
}

// writeAppVersion is APP_VERSION::write(write_file_info=false).
func writeAppVersion(x *xw, av *boinc.AppVersion) {
	x.elemS("<app_version>\n    <app_name>", av.AppName, "</app_name>\n")
	x.elemI("    <version_num>", int64(av.VersionNum), "</version_num>\n")
	x.elemS("    <platform>", av.Platform, "</platform>\n")
	x.elemF("    <avg_ncpus>", av.AvgNCPUs, "</avg_ncpus>\n")
	x.elemF("    <flops>", av.Flops, "</flops>\n")
	if av.PlanClass != "" {
		x.elemS("    <plan_class>", av.PlanClass, "</plan_class>\n")
	}
	if av.APIVersion != "" {
		x.elemS("    <api_version>", av.APIVersion, "</api_version>\n")
	}
	if av.Cmdline != "" {
		x.elemS("    <cmdline>", av.Cmdline, "</cmdline>\n")
	}
	if av.FilePrefix != "" {
		x.elemS("    <file_prefix>", av.FilePrefix, "</file_prefix>\n")
	}
	if av.Coproc != nil && av.Coproc.Type != "" {
		x.elemS("    <coproc>\n        <type>", av.Coproc.Type, "</type>\n")
		x.elemF("        <count>", av.Coproc.Count, "</count>\n    </coproc>\n")
	}
	x.raw("</app_version>\n")
}

// clientVersionString is "7.20.5".
func clientVersionString() string {
	return strconv.Itoa(boinc.ClientMajor) + "." + strconv.Itoa(boinc.ClientMinor) + "." + strconv.Itoa(boinc.ClientRelease)
}
