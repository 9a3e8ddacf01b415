package taskrunner

import (
	"fmt"
	"io"
	"strings"

	"github.com/boincd/boincd/boinc"
)

type initParams struct {
	spec            TaskSpec
	slot            int
	clientPID       int
	projectDir      string
	boincDir        string
	wuCPUTime       float64
	startingElapsed float64
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeInitData writes init_data.xml in the element order of
// lib/app_ipc.cpp write_init_data_file, as the captured fixture shows.
// shm_key is -1 so apps map boinc_mmap_file.
func writeInitData(w io.Writer, p initParams) {
	s := p.spec
	pr, v, wu, res, h := s.Project, s.Version, *s.WU, s.Result, s.Host
	wu.ApplyDefaults()
	appName := v.AppName
	if s.App != nil && s.App.Name != "" {
		appName = s.App.Name
	}
	ncpus := v.AvgNCPUs
	if ncpus <= 0 {
		ncpus = 1
	}
	share := s.ResourceShareFraction
	if share <= 0 || share > 1 {
		share = 1
	}
	ckpt := s.Prefs.DiskInterval
	if ckpt <= 0 {
		ckpt = 60
	}
	// A GPU task is told its device: gpu_device_num, and the same number
	// as gpu_opencl_dev_index (init_app_init_data).
	gpuType, gpuDev, gpuUsage := "", -1, 0.0
	if s.GPUType != "" {
		gpuType = s.GPUType
		if len(s.GPUDevices) > 0 {
			gpuDev = s.GPUDevices[0]
		}
		gpuUsage = s.GPUUsage
		if gpuUsage <= 0 && v.Coproc != nil {
			gpuUsage = v.Coproc.Count
		}
	}
	deadline := 0.0
	if !res.ReportDeadline.IsZero() {
		deadline = float64(res.ReportDeadline.UnixNano()) / 1e9
	}

	f := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	f("<app_init_data>\n")
	f("<major_version>%d</major_version>\n", boinc.ClientMajor)
	f("<minor_version>%d</minor_version>\n", boinc.ClientMinor)
	f("<release>%d</release>\n", boinc.ClientRelease)
	f("<app_version>%d</app_version>\n", v.VersionNum)
	f("<userid>%d</userid>\n", pr.UserID)
	f("<teamid>%d</teamid>\n", pr.TeamID)
	f("<hostid>%d</hostid>\n", pr.HostID)
	f("<app_name>%s</app_name>\n", xmlEscape(appName))
	if v.PlanClass != "" {
		f("<plan_class>%s</plan_class>\n", xmlEscape(v.PlanClass))
	}
	if ps := projectSpecific(pr.ProjectPrefs); ps != "" {
		f("<project_preferences>\n%s</project_preferences>\n", ps)
	}
	if pr.TeamName != "" {
		f("<team_name>%s</team_name>\n", xmlEscape(pr.TeamName))
	}
	if pr.UserName != "" {
		f("<user_name>%s</user_name>\n", xmlEscape(pr.UserName))
	}
	f("<project_dir>%s</project_dir>\n", xmlEscape(p.projectDir))
	f("<boinc_dir>%s</boinc_dir>\n", xmlEscape(p.boincDir))
	f("<authenticator>%s</authenticator>\n", xmlEscape(pr.Authenticator))
	f("<wu_name>%s</wu_name>\n", xmlEscape(wu.Name))
	f("<result_name>%s</result_name>\n", xmlEscape(res.Name))
	f("<shm_key>%d</shm_key>\n", -1)
	f("<slot>%d</slot>\n", p.slot)
	f("<client_pid>%d</client_pid>\n", p.clientPID)
	f("<wu_cpu_time>%f</wu_cpu_time>\n", p.wuCPUTime)
	f("<starting_elapsed_time>%f</starting_elapsed_time>\n", p.startingElapsed)
	f("<using_sandbox>0</using_sandbox>\n")
	f("<vm_extensions_disabled>0</vm_extensions_disabled>\n")
	f("<user_total_credit>%f</user_total_credit>\n", pr.UserTotalCredit)
	f("<user_expavg_credit>%f</user_expavg_credit>\n", pr.UserExpavgCredit)
	f("<host_total_credit>%f</host_total_credit>\n", pr.HostTotalCredit)
	f("<host_expavg_credit>%f</host_expavg_credit>\n", pr.HostExpavgCredit)
	f("<resource_share_fraction>%f</resource_share_fraction>\n", share)
	f("<checkpoint_period>%f</checkpoint_period>\n", ckpt)
	f("<fraction_done_start>%f</fraction_done_start>\n", 0.0)
	f("<fraction_done_end>%f</fraction_done_end>\n", 1.0)
	f("<gpu_type>%s</gpu_type>\n", xmlEscape(gpuType))
	f("<gpu_device_num>%d</gpu_device_num>\n", gpuDev)
	f("<gpu_opencl_dev_index>%d</gpu_opencl_dev_index>\n", gpuDev)
	f("<gpu_usage>%f</gpu_usage>\n", gpuUsage)
	f("<ncpus>%f</ncpus>\n", ncpus)
	f("<rsc_fpops_est>%f</rsc_fpops_est>\n", wu.RscFpopsEst)
	f("<rsc_fpops_bound>%f</rsc_fpops_bound>\n", wu.RscFpopsBound)
	f("<rsc_memory_bound>%f</rsc_memory_bound>\n", wu.RscMemoryBound)
	f("<rsc_disk_bound>%f</rsc_disk_bound>\n", wu.RscDiskBound)
	f("<computation_deadline>%f</computation_deadline>\n", deadline)
	f("<vbox_window>0</vbox_window>\n")
	f("<no_priority_change>0</no_priority_change>\n")
	f("<process_priority>-1</process_priority>\n")
	f("<process_priority_special>-1</process_priority_special>\n")

	f("<host_info>\n")
	f("    <timezone>%d</timezone>\n", h.Timezone)
	f("    <domain_name>%s</domain_name>\n", xmlEscape(h.DomainName))
	f("    <ip_addr>%s</ip_addr>\n", xmlEscape(h.IPAddr))
	f("    <host_cpid>%s</host_cpid>\n", xmlEscape(h.HostCPID))
	f("    <p_ncpus>%d</p_ncpus>\n", h.PNCPUs)
	f("    <p_vendor>%s</p_vendor>\n", xmlEscape(h.PVendor))
	f("    <p_model>%s</p_model>\n", xmlEscape(h.PModel))
	f("    <p_features>%s</p_features>\n", xmlEscape(h.PFeatures))
	f("    <p_fpops>%f</p_fpops>\n", h.PFpops)
	f("    <p_iops>%f</p_iops>\n", h.PIops)
	f("    <p_membw>%f</p_membw>\n", h.PMembw)
	f("    <p_calculated>%f</p_calculated>\n", h.PCalculated)
	f("    <p_vm_extensions_disabled>0</p_vm_extensions_disabled>\n")
	f("    <m_nbytes>%f</m_nbytes>\n", h.MNBytes)
	f("    <m_cache>%f</m_cache>\n", h.MCache)
	f("    <m_swap>%f</m_swap>\n", h.MSwap)
	f("    <d_total>%f</d_total>\n", h.DTotal)
	f("    <d_free>%f</d_free>\n", h.DFree)
	f("    <os_name>%s</os_name>\n", xmlEscape(h.OSName))
	f("    <os_version>%s</os_version>\n", xmlEscape(h.OSVersion))
	f("    <n_usable_coprocs>%d</n_usable_coprocs>\n", h.NUsableCoprocs)
	f("    <wsl_available>0</wsl_available>\n")
	f("    <coprocs>\n    </coprocs>\n")
	f("</host_info>\n")

	f("<proxy_info>\n")
	f("    <socks_server_name></socks_server_name>\n")
	f("    <socks_server_port>80</socks_server_port>\n")
	f("    <http_server_name></http_server_name>\n")
	f("    <http_server_port>80</http_server_port>\n")
	f("    <socks5_user_name></socks5_user_name>\n")
	f("    <socks5_user_passwd></socks5_user_passwd>\n")
	f("    <socks5_remote_dns>0</socks5_remote_dns>\n")
	f("    <http_user_name></http_user_name>\n")
	f("    <http_user_passwd></http_user_passwd>\n")
	f("    <no_proxy></no_proxy>\n")
	f("    <no_autodetect>0</no_autodetect>\n")
	f("</proxy_info>\n")

	writeGlobalPrefs(w, s.Prefs)
	for _, ref := range v.FileRefs {
		f("<app_file>%s</app_file>\n", xmlEscape(ref.FileName))
	}
	f("</app_init_data>\n")
}

// writeGlobalPrefs writes the working prefs (lib/prefs.cpp
// GLOBAL_PREFS::write); preferences boinc.Prefs does not carry get the C++
// client's defaults, as in the fixture.
func writeGlobalPrefs(w io.Writer, p boinc.Prefs) {
	f := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	f("<global_preferences>\n")
	f("   <source_project></source_project>\n")
	f("   <mod_time>%f</mod_time>\n", 0.0)
	f("   <battery_charge_min_pct>%f</battery_charge_min_pct>\n", 90.0)
	f("   <battery_max_temperature>%f</battery_max_temperature>\n", 40.0)
	f("   <run_on_batteries>0</run_on_batteries>\n")
	f("   <run_if_user_active>%d</run_if_user_active>\n", b2i(p.RunIfUserActive))
	f("   <run_gpu_if_user_active>0</run_gpu_if_user_active>\n")
	f("   <suspend_if_no_recent_input>%f</suspend_if_no_recent_input>\n", 0.0)
	f("   <suspend_cpu_usage>%f</suspend_cpu_usage>\n", p.SuspendCPUUsage)
	f("   <start_hour>%f</start_hour>\n", 0.0)
	f("   <end_hour>%f</end_hour>\n", 0.0)
	f("   <net_start_hour>%f</net_start_hour>\n", 0.0)
	f("   <net_end_hour>%f</net_end_hour>\n", 0.0)
	f("   <leave_apps_in_memory>%d</leave_apps_in_memory>\n", b2i(p.LeaveAppsInMemory))
	f("   <confirm_before_connecting>1</confirm_before_connecting>\n")
	f("   <hangup_if_dialed>0</hangup_if_dialed>\n")
	f("   <dont_verify_images>0</dont_verify_images>\n")
	f("   <work_buf_min_days>%f</work_buf_min_days>\n", p.WorkBufMinDays)
	f("   <work_buf_additional_days>%f</work_buf_additional_days>\n", p.WorkBufAdditionalDays)
	f("   <max_ncpus_pct>%f</max_ncpus_pct>\n", p.MaxNCPUsPct)
	f("   <cpu_scheduling_period_minutes>%f</cpu_scheduling_period_minutes>\n", p.CPUSchedulingPeriodMinutes)
	f("   <disk_interval>%f</disk_interval>\n", p.DiskInterval)
	f("   <disk_max_used_gb>%f</disk_max_used_gb>\n", p.DiskMaxUsedGB)
	f("   <disk_max_used_pct>%f</disk_max_used_pct>\n", p.DiskMaxUsedPct)
	f("   <disk_min_free_gb>%f</disk_min_free_gb>\n", p.DiskMinFreeGB)
	f("   <vm_max_used_pct>%f</vm_max_used_pct>\n", 75.0)
	f("   <ram_max_used_busy_pct>%f</ram_max_used_busy_pct>\n", p.RAMMaxUsedBusyPct)
	f("   <ram_max_used_idle_pct>%f</ram_max_used_idle_pct>\n", p.RAMMaxUsedIdlePct)
	f("   <idle_time_to_run>%f</idle_time_to_run>\n", 3.0)
	f("   <max_bytes_sec_up>%f</max_bytes_sec_up>\n", p.MaxBytesSecUp)
	f("   <max_bytes_sec_down>%f</max_bytes_sec_down>\n", p.MaxBytesSecDown)
	f("   <cpu_usage_limit>%f</cpu_usage_limit>\n", p.CPUUsageLimit)
	f("   <daily_xfer_limit_mb>%f</daily_xfer_limit_mb>\n", 0.0)
	f("   <daily_xfer_period_days>0</daily_xfer_period_days>\n")
	f("   <override_file_present>0</override_file_present>\n")
	f("   <network_wifi_only>0</network_wifi_only>\n")
	f("</global_preferences>\n")
}

// projectSpecific extracts the content of the <project_specific> element
// of the project preferences: what the C++ client hands apps as
// <project_preferences> (PROJECT::project_specific_prefs). The content is
// the server's XML, passed as is.
func projectSpecific(prefs string) string {
	const open, end = "<project_specific>", "</project_specific>"
	i := strings.Index(prefs, open)
	if i < 0 {
		return ""
	}
	j := strings.Index(prefs[i:], end)
	if j < 0 {
		return ""
	}
	block := strings.TrimLeft(prefs[i+len(open):i+j], "\n")
	if block != "" && !strings.HasSuffix(block, "\n") {
		block += "\n"
	}
	return block
}

// xmlEscape escapes the characters BOINC's xml_escape does.
func xmlEscape(s string) string {
	if !strings.ContainsAny(s, "<>&\"'") {
		return s
	}
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&apos;")
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}
