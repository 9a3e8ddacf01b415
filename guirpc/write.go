package guirpc

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/eventlog"
	platformpkg "github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/workfetch"
)

// The writers below print XML the way the C++ client's printf calls do:
// one element per line, the same indentation, doubles as %f. Line-oriented
// GUI clients depend on that layout (PROTOCOLS.md §5.6).

type xw struct {
	// A bytes.Buffer rather than a strings.Builder: the reply goes out
	// as its bytes, not a copy (11 MB for a 10,000-task get_state).
	bytes.Buffer
	num []byte // scratch for numbers, so that writing one allocates nothing
}

func (w *xw) line(s string) { w.WriteString(s); w.WriteByte('\n') }

// open and end write "<tag>" and "</tag>\n" piecewise: concatenating them
// cost a quarter of a 10,000-task get_state.
func (w *xw) open(indent, tag string) {
	w.WriteString(indent)
	w.WriteByte('<')
	w.WriteString(tag)
	w.WriteByte('>')
}

func (w *xw) end(tag string) {
	w.WriteString("</")
	w.WriteString(tag)
	w.WriteString(">\n")
}

func (w *xw) str(indent, tag, v string) {
	w.open(indent, tag)
	w.WriteString(escape(v))
	w.end(tag)
}

func (w *xw) int(indent, tag string, v int64) {
	w.open(indent, tag)
	w.num = strconv.AppendInt(w.num[:0], v, 10)
	w.Write(w.num)
	w.end(tag)
}

func (w *xw) f(indent, tag string, v float64) {
	w.open(indent, tag)
	w.num = appendFF(w.num[:0], v)
	w.Write(w.num)
	w.end(tag)
}

func (w *xw) bool01(indent, tag string, v bool) {
	if v {
		w.int(indent, tag, 1)
	} else {
		w.int(indent, tag, 0)
	}
}

func (w *xw) flag(indent, tag string, v bool) {
	if v {
		w.WriteString(indent)
		w.WriteByte('<')
		w.WriteString(tag)
		w.WriteString("/>\n")
	}
}

// appendFF is C's %f. Non-finite values, which C would print as "nan" or
// "inf" and BOINC's parsers would read as 0, are written as 0.
//
// A 10,000-task get_state writes about 90,000 doubles, and formatting
// them was 40 % of writing it; most are whole numbers (FLOP counts and
// bounds, sizes, zeros) or times to the microsecond, which fmtFFast
// writes from integers with the same digits strconv would give.
func appendFF(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	if out, ok := fmtFFast(b, v); ok {
		return out
	}
	return strconv.AppendFloat(b, v, 'f', 6, 64)
}

// fmtFFast is %f of v from v × 10⁶ rounded to an integer, when that
// rounding is certain: v a whole number below 2⁵³ (exact), or |v| < 2³²,
// where the product is within 0.25 of the exact v × 10⁶, and its
// fraction is below 0.25 or above 0.75, so the exact value cannot round
// the other way (nor be a tie). Otherwise ok is false.
func fmtFFast(b []byte, v float64) (out []byte, ok bool) {
	a := math.Abs(v)
	var whole, frac uint64 // |v| rounded to 6 decimals: whole.frac
	switch {
	case a < 1<<53 && a == math.Trunc(a):
		whole = uint64(a)
	case a < 1<<32:
		q := a * 1e6
		r := math.Floor(q)
		n := uint64(r)
		switch f := q - r; {
		case f < 0.25:
		case f > 0.75:
			n++
		default:
			return b, false
		}
		whole, frac = n/1e6, n%1e6
	default:
		return b, false
	}
	if math.Signbit(v) {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, whole, 10)
	b = append(b, '.')
	for d := uint64(100000); d > 0; d /= 10 {
		b = append(b, byte('0'+frac/d%10))
	}
	return b, true
}

// unix is a time as BOINC's double "seconds since the epoch"; the zero
// time is 0.
func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixMicro()) / 1e6
}

// escape is lib/str_util.cpp xml_escape: the five XML specials as entities
// and control characters as decimal character references (BOINC's
// xml_unescape only understands decimal ones), so every value stays on one
// line. Bytes that are not UTF-8 (a name or message from a project or an
// app) become U+FFFD, so that the reply stays XML any parser accepts.
func escape(s string) string {
	// One pass finds whether anything needs work, as almost nothing
	// does: names, URLs and plan classes are plain ASCII.
	var seen byte
	for i := 0; i < len(s); i++ {
		seen |= escClass[s[i]]
	}
	if seen == 0 {
		return s
	}
	if seen&escNonASCII != 0 {
		s = strings.ToValidUTF8(s, "\uFFFD")
		if seen&escSpecial == 0 {
			return s
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '&':
			b.WriteString("&amp;")
		case c == '<':
			b.WriteString("&lt;")
		case c == '>':
			b.WriteString("&gt;")
		case c == '"':
			b.WriteString("&quot;")
		case c == '\'':
			b.WriteString("&apos;")
		case c < 0x20 || c == 0x7f:
			fmt.Fprintf(&b, "&#%d;", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// escClass classifies a byte for escape: an XML special or control
// character, or a byte of a multi-byte (or invalid) UTF-8 sequence.
var escClass = func() (t [256]byte) {
	for c := range 256 {
		switch {
		case c == '&' || c == '<' || c == '>' || c == '"' || c == '\'' || c < 0x20 || c == 0x7f:
			t[c] = escSpecial
		case c >= 0x80:
			t[c] = escNonASCII
		}
	}
	return t
}()

const (
	escSpecial  = 1
	escNonASCII = 2
)

// cdata writes <tag>, then pad, s and pad in CDATA sections, then
// </tag>: any "]]>" inside s splits the section rather than ending it,
// and bytes that are not UTF-8 become U+FFFD as in escape. It writes the
// pieces rather than building the string, as get_messages writes one per
// message.
func (w *xw) cdata(indent, tag, pad, s string) {
	w.open(indent, tag)
	w.WriteString("<![CDATA[")
	w.WriteString(pad)
	s = strings.ToValidUTF8(s, "\uFFFD")
	for {
		i := strings.Index(s, "]]>")
		if i < 0 {
			break
		}
		w.WriteString(s[:i])
		w.WriteString("]]]]><![CDATA[>")
		s = s[i+len("]]>"):]
	}
	w.WriteString(s)
	w.WriteString(pad)
	w.WriteString("]]>")
	w.end(tag)
}

func writeVersion(w *xw) {
	w.line("<server_version>")
	w.int("   ", "major", boinc.ClientMajor)
	w.int("   ", "minor", boinc.ClientMinor)
	w.int("   ", "release", boinc.ClientRelease)
	w.line("</server_version>")
}

// hostRscs are the resource types the host has: CPU, then each GPU type
// present. Projects report one backoff per type.
func hostRscs(h *HostInfo) []workfetch.Rsc {
	rs := []workfetch.Rsc{workfetch.CPU}
	for _, r := range []workfetch.Rsc{workfetch.NVIDIA, workfetch.AMD, workfetch.Intel} {
		for _, c := range h.Coprocs {
			if c.Type == r && c.Count > 0 {
				rs = append(rs, r)
				break
			}
		}
	}
	return rs
}

func hasCoproc(h *HostInfo, r workfetch.Rsc) bool {
	for _, c := range h.Coprocs {
		if c.Type == r && c.Count > 0 {
			return true
		}
	}
	return false
}

// writeHostInfo is HOST_INFO::write for GUI RPC.
func writeHostInfo(w *xw, h *HostInfo) {
	const in = "    "
	w.line("<host_info>")
	w.int(in, "timezone", int64(h.Timezone))
	w.str(in, "domain_name", h.DomainName)
	w.str(in, "ip_addr", h.IPAddr)
	w.str(in, "host_cpid", h.HostCPID)
	w.int(in, "p_ncpus", int64(h.PNCPUs))
	w.str(in, "p_vendor", h.PVendor)
	w.str(in, "p_model", h.PModel)
	w.str(in, "p_features", h.PFeatures)
	w.f(in, "p_fpops", h.PFpops)
	w.f(in, "p_iops", h.PIops)
	w.f(in, "p_membw", h.PMembw)
	w.f(in, "p_calculated", h.PCalculated)
	w.bool01(in, "p_vm_extensions_disabled", h.VMExtensionsDisabled)
	w.f(in, "m_nbytes", h.MNBytes)
	w.f(in, "m_cache", h.MCache)
	w.f(in, "m_swap", h.MSwap)
	w.f(in, "d_total", h.DTotal)
	w.f(in, "d_free", h.DFree)
	w.str(in, "os_name", h.OSName)
	w.str(in, "os_version", h.OSVersion)
	w.int(in, "n_usable_coprocs", int64(h.NUsableCoprocs))
	w.int(in, "wsl_available", 0)
	if h.DockerVersion != "" {
		w.str(in, "docker_version", h.DockerVersion)
		w.int(in, "docker_type", int64(h.DockerType))
	}
	if h.ProductName != "" {
		w.str(in, "product_name", h.ProductName)
	}
	w.line(in + "<coprocs>")
	if h.CoprocsXML != "" {
		w.line(strings.TrimRight(h.CoprocsXML, "\n"))
	} else {
		for _, c := range h.Coprocs {
			writeCoproc(w, c)
		}
	}
	w.line(in + "</coprocs>")
	w.line("</host_info>")
}

// writeCoproc writes the summary of one GPU type in the element the GUI
// client's COPROCS parser reads.
func writeCoproc(w *xw, c CoprocInfo) {
	if c.Count <= 0 {
		return
	}
	var tag string
	switch c.Type {
	case workfetch.NVIDIA:
		tag = "coproc_cuda"
	case workfetch.AMD:
		tag = "coproc_ati"
	case workfetch.Intel:
		tag = "coproc_intel_gpu"
	default:
		return
	}
	const in = "   "
	w.line("<" + tag + ">")
	w.int(in, "count", int64(c.Count))
	w.str(in, "name", c.Name)
	w.f(in, "available_ram", c.AvailableRAM)
	switch c.Type {
	case workfetch.NVIDIA:
		w.int(in, "have_cuda", 1)
	case workfetch.AMD:
		w.int(in, "have_cal", 0)
	}
	w.int(in, "have_opencl", 0)
	w.f(in, "peak_flops", c.PeakFlops)
	if c.Type == workfetch.NVIDIA {
		w.int(in, "cudaVersion", int64(c.CUDAVersion))
		w.int(in, "drvVersion", int64(c.DriverVersion))
	}
	w.line("</" + tag + ">")
}

// writeProject is PROJECT::write_state(gui_rpc=true).
func writeProject(w *xw, s *State, p *ProjectInfo) {
	const in = "    "
	w.line("<project>")
	w.str(in, "master_url", p.MasterURL)
	w.str(in, "project_name", p.ProjectName)
	w.str(in, "symstore", "")
	w.str(in, "user_name", p.UserName)
	w.str(in, "team_name", p.TeamName)
	w.str(in, "host_venue", p.HostVenue)
	w.str(in, "email_hash", p.EmailHash)
	w.str(in, "cross_project_id", p.CrossProjectID)
	w.str(in, "external_cpid", p.ExternalCPID)
	w.f(in, "cpid_time", unix(p.CPIDTime))
	w.f(in, "user_total_credit", p.UserTotalCredit)
	w.f(in, "user_expavg_credit", p.UserExpavgCredit)
	w.f(in, "user_create_time", unix(p.UserCreateTime))
	w.int(in, "rpc_seqno", p.RPCSeqno)
	w.int(in, "userid", p.UserID)
	w.int(in, "teamid", p.TeamID)
	w.int(in, "hostid", p.HostID)
	w.f(in, "host_total_credit", p.HostTotalCredit)
	w.f(in, "host_expavg_credit", p.HostExpavgCredit)
	w.f(in, "host_create_time", unix(p.HostCreateTime))
	w.int(in, "nrpc_failures", int64(p.RPCFailures))
	w.int(in, "master_fetch_failures", int64(p.MasterFailures))
	w.f(in, "min_rpc_time", unix(p.MinRPCTime))
	w.f(in, "next_rpc_time", unix(p.NextRPCTime))
	w.f(in, "rec", p.REC)
	w.f(in, "rec_time", unix(p.RECTime))
	w.f(in, "resource_share", p.ResourceShare)
	w.f(in, "disk_usage", p.DiskUsage)
	w.f(in, "disk_share", p.DiskShare)
	w.f(in, "desired_disk_usage", p.DesiredDiskUsage)
	dcf := p.DCF
	if dcf == 0 {
		dcf = p.Work.DCF
	}
	if dcf == 0 {
		dcf = 1
	}
	w.f(in, "duration_correction_factor", dcf)
	w.int(in, "sched_rpc_pending", int64(p.SchedRPCPending))
	w.int(in, "send_time_stats_log", 0)
	w.int(in, "send_job_log", 0)
	w.int(in, "njobs_success", int64(p.NJobsSuccess))
	w.int(in, "njobs_error", int64(p.NJobsError))
	w.f(in, "elapsed_time", p.ElapsedTime)
	w.f(in, "last_rpc_time", unix(p.LastRPCTime))
	w.flag(in, "anonymous_platform", p.AnonymousPlatform)
	w.flag(in, "master_url_fetch_pending", p.MasterFetchPending)
	w.flag(in, "trickle_up_pending", p.TricklePending)
	w.flag(in, "dont_use_dcf", p.DontUseDCF)
	w.flag(in, "suspended_via_gui", p.Suspended)
	w.flag(in, "dont_request_more_work", p.NoNewTasks)
	w.flag(in, "detach_when_done", p.DetachWhenDone || p.DetachPending)
	w.flag(in, "ended", p.Ended)
	w.flag(in, "attached_via_acct_mgr", p.AttachedViaAcctMgr)
	// Three spaces: the C++ client's own spelling of this one line.
	w.flag("   ", "scheduler_rpc_in_progress", p.SchedulerRPCInProgress)
	for _, r := range hostRscs(&s.Host) {
		b := p.Work.Backoff[r]
		w.line(in + "<rsc_backoff_time>")
		w.str(in+in, "name", r.String())
		w.f(in+in, "value", unix(b.Until))
		w.line(in + "</rsc_backoff_time>")
		w.line(in + "<rsc_backoff_interval>")
		w.str(in+in, "name", r.String())
		w.f(in+in, "value", b.Interval)
		w.line(in + "</rsc_backoff_interval>")
		for _, n := range p.NoRscApps {
			if rr, ok := workfetch.RscByName(n); ok && rr == r {
				w.str(in, "no_rsc_apps", r.String())
				break
			}
		}
	}
	if len(p.GUIURLs) > 0 {
		// The C++ client passes the server's text through; boincd writes
		// the links it parsed, escaped, so a project cannot put markup into
		// the Manager's view of the client.
		w.line("<gui_urls>")
		for _, u := range p.GUIURLs {
			w.line("    <gui_url>")
			w.str("        ", "name", u.Name)
			w.str("        ", "description", u.Description)
			w.str("        ", "url", u.URL)
			w.line("    </gui_url>")
		}
		w.line("</gui_urls>")
	}
	w.f(in, "sched_priority", p.SchedPriority)
	w.f(in, "project_files_downloaded_time", 0)
	if d := p.DownloadBackoffUntil.Sub(s.Now).Seconds(); d > 0 {
		w.f(in, "download_backoff", d)
	}
	if d := p.UploadBackoffUntil.Sub(s.Now).Seconds(); d > 0 {
		w.f(in, "upload_backoff", d)
	}
	w.str(in, "project_dir", p.ProjectDir)
	w.line("</project>")
}

func writeApp(w *xw, a *boinc.App) {
	const in = "    "
	w.line("<app>")
	w.str(in, "name", a.Name)
	w.str(in, "user_friendly_name", a.UserFriendlyName)
	w.bool01(in, "non_cpu_intensive", a.NonCPUIntensive)
	w.line("</app>")
}

func writeFileRef(w *xw, f *boinc.FileRef) {
	const in = "    "
	w.line(in + "<file_ref>")
	w.str(in+in, "file_name", f.FileName)
	if f.OpenName != "" {
		w.str(in+in, "open_name", f.OpenName)
	}
	w.flag(in+in, "main_program", f.MainProgram)
	w.flag(in+in, "copy_file", f.CopyFile)
	w.flag(in+in, "optional", f.Optional)
	w.line(in + "</file_ref>")
}

// writeAppVersion is APP_VERSION::write.
func writeAppVersion(w *xw, v *boinc.AppVersion) {
	const in = "    "
	w.line("<app_version>")
	w.str(in, "app_name", v.AppName)
	w.int(in, "version_num", int64(v.VersionNum))
	w.str(in, "platform", v.Platform)
	w.f(in, "avg_ncpus", v.AvgNCPUs)
	if v.PlanClass != "" {
		w.str(in, "plan_class", v.PlanClass)
	}
	if v.APIVersion != "" {
		w.str(in, "api_version", v.APIVersion)
	}
	w.f(in, "flops", v.Flops)
	if v.Cmdline != "" {
		w.str(in, "cmdline", v.Cmdline)
	}
	if v.FilePrefix != "" {
		w.str(in, "file_prefix", v.FilePrefix)
	}
	for i := range v.FileRefs {
		writeFileRef(w, &v.FileRefs[i])
	}
	if v.Coproc != nil && v.Coproc.Count > 0 {
		name := v.Coproc.Type
		if r, ok := workfetch.RscByName(name); ok {
			name = r.String()
		}
		w.line(in + "<coproc>")
		w.str(in+in, "type", name)
		w.f(in+in, "count", v.Coproc.Count)
		w.line(in + "</coproc>")
	}
	w.line("</app_version>")
}

// writeWorkunit is WORKUNIT::write.
func writeWorkunit(w *xw, u *boinc.Workunit) {
	const in = "    "
	w.line("<workunit>")
	w.str(in, "name", u.Name)
	w.str(in, "app_name", u.AppName)
	w.int(in, "version_num", int64(u.VersionNum))
	w.f(in, "rsc_fpops_est", u.RscFpopsEst)
	w.f(in, "rsc_fpops_bound", u.RscFpopsBound)
	w.f(in, "rsc_memory_bound", u.RscMemoryBound)
	w.f(in, "rsc_disk_bound", u.RscDiskBound)
	if u.CommandLine != "" {
		w.line(in + "<command_line>")
		w.line(escape(u.CommandLine))
		w.line(in + "</command_line>")
	}
	for i := range u.InputFiles {
		writeFileRef(w, &u.InputFiles[i])
	}
	w.line("</workunit>")
}

// wireState is the RESULT state number the GUI shows for r.
func wireState(r *boinc.Result) int {
	if st, ok := r.Phase.WireState(); ok {
		return int(st)
	}
	// Reported or acked: the state it was reported with.
	if r.WireState != 0 {
		return r.WireState
	}
	return int(boinc.ResultFilesUploaded)
}

func findAppVersion(s *State, r *boinc.Result) *boinc.AppVersion {
	for i := range s.AppVersions {
		v := &s.AppVersions[i]
		if v.ProjectURL == r.ProjectURL && v.Platform == r.Platform && v.VersionNum == r.VersionNum && v.PlanClass == r.PlanClass {
			return v
		}
	}
	return nil
}

func findProject(s *State, url string) *ProjectInfo {
	for i := range s.Projects {
		if s.Projects[i].MasterURL == url {
			return &s.Projects[i]
		}
	}
	return nil
}

// resources is RESULT::write_gui's <resources> text: nothing for a task
// using exactly one CPU.
func resources(s *State, r *ResultInfo) string {
	if r.Resources != "" {
		return r.Resources
	}
	v := findAppVersion(s, &r.Result)
	if v == nil {
		return ""
	}
	cpus := func(n float64) string {
		if n == 1 {
			return "CPU"
		}
		return "CPUs"
	}
	g := strconv.FormatFloat(v.AvgNCPUs, 'g', 3, 64)
	if v.Coproc != nil && v.Coproc.Count > 0 {
		name := v.Coproc.Type
		if rr, ok := workfetch.RscByName(name); ok {
			name = rr.String()
		}
		if v.Coproc.Count == 1 {
			return fmt.Sprintf("%s %s + 1 %s GPU", g, cpus(v.AvgNCPUs), name)
		}
		return fmt.Sprintf("%s %s + %s %s GPUs", g, cpus(v.AvgNCPUs), strconv.FormatFloat(v.Coproc.Count, 'g', 3, 64), name)
	}
	if v.AvgNCPUs != 1 {
		return g + " " + cpus(v.AvgNCPUs)
	}
	return ""
}

// writeResult is RESULT::write_gui with ACTIVE_TASK::write_gui.
func writeResult(w *xw, s *State, r *ResultInfo) {
	const in = "    "
	w.line("<result>")
	w.str(in, "name", r.Name)
	w.str(in, "wu_name", r.WUName)
	w.str(in, "platform", r.Platform)
	w.int(in, "version_num", int64(r.VersionNum))
	w.str(in, "plan_class", r.PlanClass)
	w.str(in, "project_url", r.ProjectURL)
	w.f(in, "final_cpu_time", r.FinalCPUTime)
	w.f(in, "final_elapsed_time", r.FinalElapsedTime)
	w.int(in, "exit_status", int64(r.ExitStatus))
	w.int(in, "state", int64(wireState(&r.Result)))
	w.f(in, "report_deadline", unix(r.ReportDeadline))
	w.f(in, "received_time", unix(r.ReceivedTime))
	w.f(in, "estimated_cpu_time_remaining", r.EstimatedRemaining)
	w.flag(in, "got_server_ack", r.Phase == boinc.PhaseAcked)
	w.flag(in, "ready_to_report", r.Phase.ReadyToReport())
	if !r.CompletedTime.IsZero() {
		w.f(in, "completed_time", unix(r.CompletedTime))
	}
	w.flag(in, "suspended_via_gui", r.SuspendedViaGUI)
	if p := findProject(s, r.ProjectURL); p != nil {
		w.flag(in, "project_suspended_via_gui", p.Suspended)
	}
	w.flag(in, "report_immediately", r.ReportImmediately)
	w.flag(in, "edf_scheduled", r.EDFScheduled)
	w.flag(in, "coproc_missing", r.CoprocMissing)
	if r.SchedulerWait {
		w.line(in + "<scheduler_wait/>")
		if r.SchedulerWaitWhy != "" {
			w.str(in, "scheduler_wait_reason", r.SchedulerWaitWhy)
		}
	}
	w.flag(in, "network_wait", r.NetworkWait)
	if a := r.Active; a != nil {
		w.line("<active_task>")
		w.int(in, "active_task_state", int64(a.ActiveState))
		w.int(in, "app_version_num", int64(r.VersionNum))
		w.int(in, "slot", int64(a.Slot))
		w.int(in, "pid", int64(a.PID))
		w.int(in, "scheduler_state", int64(a.SchedulerState))
		w.f(in, "checkpoint_cpu_time", a.CheckpointCPUTime)
		w.f(in, "fraction_done", a.FractionDone)
		w.f(in, "current_cpu_time", a.CPUTime)
		w.f(in, "elapsed_time", a.ElapsedTime)
		w.f(in, "swap_size", a.SwapSize)
		w.f(in, "working_set_size", a.WorkingSet)
		w.f(in, "working_set_size_smoothed", a.WorkingSetSmooth)
		w.f(in, "page_fault_rate", a.PageFaultRate)
		w.f(in, "bytes_sent", a.BytesSent)
		w.f(in, "bytes_received", a.BytesReceived)
		w.flag("   ", "too_large", a.TooLarge)
		w.flag("   ", "needs_shmem", a.NeedsShmem)
		w.flag("   ", "want_network", a.WantNetwork)
		w.f("   ", "progress_rate", a.ProgressRate)
		w.line("</active_task>")
	}
	if res := resources(s, r); res != "" {
		w.str("   ", "resources", res)
	}
	w.line("</result>")
}

func writeNetStats(w *xw, n *NetStats) {
	const in = "    "
	w.line("<net_stats>")
	w.f(in, "bwup", n.BWUp)
	w.f(in, "avg_up", n.AvgUp)
	w.f(in, "avg_time_up", unix(n.AvgTimeUp))
	w.f(in, "bwdown", n.BWDown)
	w.f(in, "avg_down", n.AvgDown)
	w.f(in, "avg_time_down", unix(n.AvgTimeDown))
	w.line("</net_stats>")
}

func writeTimeStats(w *xw, t *TimeStats, now time.Time) {
	const in = "    "
	w.line("<time_stats>")
	w.f(in, "on_frac", t.OnFrac)
	w.f(in, "connected_frac", t.ConnectedFrac)
	w.f(in, "cpu_and_network_available_frac", t.CPUAndNetworkAvailableFrac)
	w.f(in, "active_frac", t.ActiveFrac)
	w.f(in, "gpu_active_frac", t.GPUActiveFrac)
	w.f(in, "client_start_time", unix(t.ClientStartTime))
	w.f(in, "total_start_time", unix(t.TotalStartTime))
	w.f(in, "total_duration", t.TotalDuration)
	w.f(in, "total_active_duration", t.TotalActiveDuration)
	w.f(in, "total_gpu_active_duration", t.TotalGPUActiveDuration)
	w.f(in, "now", unix(now))
	w.f(in, "previous_uptime", t.PreviousUptime)
	w.f(in, "session_active_duration", t.SessionActiveDuration)
	w.f(in, "session_gpu_active_duration", t.SessionGPUActiveDuration)
	w.line("</time_stats>")
}

// writePrefs is GLOBAL_PREFS::write. Prefs boincd does not implement
// (batteries' charge and temperature, dial-up, VM limit, wifi) are written
// with the C++ defaults, which is how they behave here.
func writePrefs(w *xw, p *boinc.Prefs, overridePresent bool) {
	const in = "   "
	w.line("<global_preferences>")
	w.str(in, "source_project", "")
	w.f(in, "mod_time", 0)
	w.f(in, "battery_charge_min_pct", 90)
	w.f(in, "battery_max_temperature", 40)
	w.bool01(in, "run_on_batteries", p.RunOnBatteries)
	w.bool01(in, "run_if_user_active", p.RunIfUserActive)
	w.bool01(in, "run_gpu_if_user_active", p.RunGPUIfUserActive)
	w.f(in, "suspend_if_no_recent_input", p.SuspendIfNoRecentInput)
	w.f(in, "suspend_cpu_usage", p.SuspendCPUUsage)
	w.f(in, "start_hour", p.StartHour)
	w.f(in, "end_hour", p.EndHour)
	w.f(in, "net_start_hour", p.NetStartHour)
	w.f(in, "net_end_hour", p.NetEndHour)
	w.bool01(in, "leave_apps_in_memory", p.LeaveAppsInMemory)
	w.bool01(in, "confirm_before_connecting", true)
	w.bool01(in, "hangup_if_dialed", false)
	w.bool01(in, "dont_verify_images", false)
	w.f(in, "work_buf_min_days", p.WorkBufMinDays)
	w.f(in, "work_buf_additional_days", p.WorkBufAdditionalDays)
	w.f(in, "max_ncpus_pct", p.MaxNCPUsPct)
	w.f(in, "cpu_scheduling_period_minutes", p.CPUSchedulingPeriodMinutes)
	w.f(in, "disk_interval", p.DiskInterval)
	w.f(in, "disk_max_used_gb", p.DiskMaxUsedGB)
	w.f(in, "disk_max_used_pct", p.DiskMaxUsedPct)
	w.f(in, "disk_min_free_gb", p.DiskMinFreeGB)
	w.f(in, "vm_max_used_pct", 75)
	w.f(in, "ram_max_used_busy_pct", p.RAMMaxUsedBusyPct)
	w.f(in, "ram_max_used_idle_pct", p.RAMMaxUsedIdlePct)
	w.f(in, "idle_time_to_run", p.IdleTimeToRun)
	w.f(in, "max_bytes_sec_up", p.MaxBytesSecUp)
	w.f(in, "max_bytes_sec_down", p.MaxBytesSecDown)
	w.f(in, "cpu_usage_limit", p.CPUUsageLimit)
	w.f(in, "daily_xfer_limit_mb", p.DailyXferLimitMB)
	w.int(in, "daily_xfer_period_days", int64(p.DailyXferPeriodDays))
	w.bool01(in, "override_file_present", overridePresent)
	w.bool01(in, "network_wifi_only", false)
	for i, d := range p.Days {
		if !d.HasCPU && !d.HasNet {
			continue
		}
		// %.02f, as the C++ client prints day windows.
		hour := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
		w.line(in + "<day_prefs>")
		w.int(in+in, "day_of_week", int64(i))
		if d.HasCPU {
			w.line(in + in + "<start_hour>" + hour(d.StartHour) + "</start_hour>")
			w.line(in + in + "<end_hour>" + hour(d.EndHour) + "</end_hour>")
		}
		if d.HasNet {
			w.line(in + in + "<net_start_hour>" + hour(d.NetStartHour) + "</net_start_hour>")
			w.line(in + in + "<net_end_hour>" + hour(d.NetEndHour) + "</net_end_hour>")
		}
		w.line(in + "</day_prefs>")
	}
	w.line("</global_preferences>")
}

// writeState is CLIENT_STATE::write_state_gui.
func writeState(w *xw, s *State) {
	w.line("<client_state>")
	writeHostInfo(w, &s.Host)
	w.flag("", "have_cuda", hasCoproc(&s.Host, workfetch.NVIDIA))
	w.flag("", "have_ati", hasCoproc(&s.Host, workfetch.AMD))
	writeNetStats(w, &s.NetStats)
	writeTimeStats(w, &s.TimeStats, s.Now)
	// The GUI client attaches apps, versions, workunits and results to
	// the project parsed last, so each project is followed by its own.
	w.Grow(len(s.Results)*resultBytes + len(s.Workunits)*workunitBytes)
	wus := groupByProject(len(s.Workunits), func(i int) string { return s.Workunits[i].ProjectURL })
	results := groupByProject(len(s.Results), func(i int) string { return s.Results[i].ProjectURL })
	for i := range s.Projects {
		p := &s.Projects[i]
		writeProject(w, s, p)
		for j := range s.Apps {
			if s.Apps[j].ProjectURL == p.MasterURL {
				writeApp(w, &s.Apps[j])
			}
		}
		for j := range s.AppVersions {
			if s.AppVersions[j].ProjectURL == p.MasterURL {
				writeAppVersion(w, &s.AppVersions[j])
			}
		}
		for _, j := range wus[p.MasterURL] {
			writeWorkunit(w, &s.Workunits[j])
		}
		for _, j := range results[p.MasterURL] {
			writeResult(w, s, &s.Results[j])
		}
	}
	platform := s.PlatformName
	if platform == "" {
		platform = platformpkg.This()
	}
	w.str("", "platform_name", platform)
	w.int("", "core_client_major_version", boinc.ClientMajor)
	w.int("", "core_client_minor_version", boinc.ClientMinor)
	w.int("", "core_client_release", boinc.ClientRelease)
	w.bool01("", "executing_as_daemon", s.ExecutingAsDaemon)
	platforms := s.Platforms
	if len(platforms) == 0 {
		platforms = []string{platform}
	}
	for _, p := range platforms {
		w.str("", "platform", p)
	}
	writePrefs(w, &s.Prefs, s.PrefsOverride != "")
	if s.HostVenue != "" {
		w.str("", "host_venue", s.HostVenue)
	}
	w.line("</client_state>")
}

// Typical sizes of a written result and workunit, to size the reply
// once instead of growing it a dozen times.
const (
	resultBytes   = 700
	workunitBytes = 450
)

// groupByProject lists the indexes of n items per project URL, in order:
// one pass instead of one per project.
func groupByProject(n int, url func(int) string) map[string][]int {
	out := map[string][]int{}
	for i := range n {
		u := url(i)
		out[u] = append(out[u], i)
	}
	return out
}

func writeResults(w *xw, s *State, activeOnly bool) {
	if !activeOnly {
		w.Grow(len(s.Results) * resultBytes)
	}
	for i := range s.Results {
		if activeOnly && s.Results[i].Active == nil {
			continue
		}
		writeResult(w, s, &s.Results[i])
	}
}

func writeCCStatus(w *xw, c *CCStatus, logLines int) {
	const in = "   "
	w.line("<cc_status>")
	w.int(in, "network_status", int64(c.NetworkStatus))
	w.bool01(in, "ams_password_error", c.AMSPasswordError)
	w.int(in, "task_suspend_reason", int64(c.TaskSuspendReason))
	w.int(in, "task_mode", int64(mode(c.TaskMode)))
	w.int(in, "task_mode_perm", int64(mode(c.TaskModePerm)))
	w.f(in, "task_mode_delay", c.TaskModeDelay)
	w.int(in, "gpu_suspend_reason", int64(c.GPUSuspendReason))
	w.int(in, "gpu_mode", int64(mode(c.GPUMode)))
	w.int(in, "gpu_mode_perm", int64(mode(c.GPUModePerm)))
	w.f(in, "gpu_mode_delay", c.GPUModeDelay)
	w.int(in, "network_suspend_reason", int64(c.NetworkSuspendReason))
	w.int(in, "network_mode", int64(mode(c.NetworkMode)))
	w.int(in, "network_mode_perm", int64(mode(c.NetworkModePerm)))
	w.f(in, "network_mode_delay", c.NetworkModeDelay)
	w.bool01(in, "disallow_attach", c.DisallowAttach)
	w.bool01(in, "simple_gui_only", c.SimpleGUIOnly)
	n := c.MaxEventLogLines
	if n == 0 {
		n = logLines
	}
	w.int(in, "max_event_log_lines", int64(n))
	w.flag(in, "manager_must_quit", c.ManagerMustQuit)
	for _, h := range c.Health {
		w.line(in + "<boincd_health_warning>")
		w.str(in+"   ", "name", h.Name)
		w.str(in+"   ", "message", h.Message)
		w.f(in+"   ", "since", unix(h.Since))
		w.line(in + "</boincd_health_warning>")
	}
	w.line("</cc_status>")
}

// mode maps an unset run mode to AUTO, the C++ default.
func mode(m int) int {
	if m == 0 {
		return ModeAuto
	}
	return m
}

func writeMessages(w *xw, msgs []eventlog.Message) {
	w.line("<msgs>")
	for _, m := range msgs {
		w.line("<msg>")
		w.str(" ", "project", m.Project)
		w.int(" ", "pri", int64(m.Priority))
		w.int(" ", "seqno", m.Seqno)
		w.cdata(" ", "body", "\n", m.Body)
		w.int(" ", "time", m.Time.Unix())
		w.line("</msg>")
	}
	w.line("</msgs>")
}

func writeTransfer(w *xw, t *TransferInfo) {
	const in = "    "
	w.line("<file_transfer>")
	w.str(in, "project_url", t.ProjectURL)
	w.str(in, "project_name", t.ProjectName)
	w.str(in, "name", t.Name)
	w.f(in, "nbytes", t.NBytes)
	w.f(in, "max_nbytes", t.MaxNBytes)
	w.int(in, "status", int64(t.Status))
	w.line(in + "<persistent_file_xfer>")
	w.int(in+in, "num_retries", int64(t.NumRetries))
	w.f(in+in, "first_request_time", unix(t.FirstRequestTime))
	w.f(in+in, "next_request_time", unix(t.NextRequestTime))
	w.f(in+in, "time_so_far", t.TimeSoFar)
	w.f(in+in, "last_bytes_xferred", t.BytesXferred)
	w.bool01(in+in, "is_upload", t.Upload)
	w.line(in + "</persistent_file_xfer>")
	if t.Active {
		w.line(in + "<file_xfer>")
		w.f(in+in, "bytes_xferred", t.BytesXferred)
		w.f(in+in, "file_offset", t.FileOffset)
		w.f(in+in, "xfer_speed", t.XferSpeed)
		w.str(in+in, "url", t.URL)
		w.line(in + "</file_xfer>")
	}
	if t.ProjectBackoff > 0 {
		w.f(in, "project_backoff", t.ProjectBackoff)
	}
	w.line("</file_transfer>")
}

func writeDiskUsage(w *xw, d *DiskUsage) {
	w.line("<disk_usage_summary>")
	for _, p := range d.Projects {
		w.line("<project>")
		w.str("  ", "master_url", p.URL)
		w.f("  ", "disk_usage", p.Bytes)
		w.line("</project>")
	}
	w.f("", "d_total", d.Total)
	w.f("", "d_free", d.Free)
	w.f("", "d_boinc", d.Boinc)
	w.f("", "d_allowed", d.Allowed)
	w.line("</disk_usage_summary>")
}

func writeOldResults(w *xw, rs []OldResult) {
	const in, in2 = "    ", "         "
	w.line("<old_results>")
	for _, r := range rs {
		w.line(in + "<old_result>")
		w.str(in2, "project_url", r.ProjectURL)
		w.str(in2, "result_name", r.ResultName)
		w.str(in2, "app_name", r.AppName)
		w.int(in2, "exit_status", int64(r.ExitStatus))
		w.f(in2, "elapsed_time", r.ElapsedTime)
		w.f(in2, "cpu_time", r.CPUTime)
		w.f(in2, "completed_time", unix(r.CompletedTime))
		w.f(in2, "create_time", unix(r.CreateTime))
		w.line(in + "</old_result>")
	}
	w.line("</old_results>")
}

func writeStatistics(w *xw, s *State) {
	const in = "    "
	w.line("<statistics>")
	for i := range s.Projects {
		p := &s.Projects[i]
		w.line("<project_statistics>")
		w.str(in, "master_url", p.MasterURL)
		for _, d := range p.Statistics {
			w.line(in + "<daily_statistics>")
			w.f(in+in, "day", unix(d.Day))
			w.f(in+in, "user_total_credit", d.UserTotalCredit)
			w.f(in+in, "user_expavg_credit", d.UserExpavgCredit)
			w.f(in+in, "host_total_credit", d.HostTotalCredit)
			w.f(in+in, "host_expavg_credit", d.HostExpavgCredit)
			w.line(in + "</daily_statistics>")
		}
		w.line("</project_statistics>")
	}
	w.line("</statistics>")
}

func writeDailyXfers(w *xw, xs []DailyXfer) {
	w.line("<daily_xfers>")
	for _, x := range xs {
		w.line("<dx>")
		w.int("   ", "when", int64(x.When))
		w.f("   ", "up", x.Up)
		w.f("   ", "down", x.Down)
		w.line("</dx>")
	}
	w.line("</daily_xfers>")
}

func writeProxyInfo(w *xw, p *boinc.ProxyInfo) {
	const in = "    "
	port := func(n int) int64 { return int64(n) }
	w.line("<proxy_info>")
	w.flag(in, "use_http_proxy", p.UseHTTPProxy)
	w.flag(in, "use_socks_proxy", p.UseSOCKSProxy)
	w.flag(in, "use_http_auth", p.UseHTTPAuth)
	w.str(in, "socks_server_name", p.SOCKSServerName)
	w.int(in, "socks_server_port", port(p.SOCKSServerPort))
	w.str(in, "http_server_name", p.HTTPServerName)
	w.int(in, "http_server_port", port(p.HTTPServerPort))
	w.str(in, "socks5_user_name", p.SOCKS5UserName)
	w.str(in, "socks5_user_passwd", p.SOCKS5UserPasswd)
	w.bool01(in, "socks5_remote_dns", p.SOCKS5RemoteDNS)
	w.str(in, "http_user_name", p.HTTPUserName)
	w.str(in, "http_user_passwd", p.HTTPUserPasswd)
	w.str(in, "no_proxy", p.NoProxy)
	w.bool01(in, "no_autodetect", p.NoAutodetect)
	w.line("</proxy_info>")
}
