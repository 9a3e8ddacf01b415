package importer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// BOINC's RESULT states (lib/common_defs.h).
const (
	stateNew              = 0
	stateFilesDownloading = 1
	stateFilesDownloaded  = 2
	stateComputeError     = 3
	stateFilesUploading   = 4
	stateFilesUploaded    = 5
	stateAborted          = 6
	stateUploadFailed     = 7
)

// csProject is one <project> of client_state.xml with the entities that
// follow it (the C++ client attaches apps, files, versions, workunits and
// results to the most recently parsed project).
type csProject struct {
	line       int
	rawURL     string // as written, for the BOINC project directory name
	p          boinc.Project
	dcf        float64
	rec        float64 // REC, credit per day
	recTime    float64 // Unix seconds
	rscBackoff map[string]time.Time
	rscIntvl   map[string]float64
	viaAM      bool // attached_via_acct_mgr

	apps     []*boinc.App
	files    []*csFile
	versions []*boinc.AppVersion
	wus      []*boinc.Workunit
	results  []*csResult
}

// csFile is a <file> with what the FileInfo type does not carry.
type csFile struct {
	line   int
	f      boinc.FileInfo
	status int
}

// csResult is a <result> with BOINC's own bookkeeping.
type csResult struct {
	line          int
	r             boinc.Result
	state         int
	readyToReport bool
	gotServerAck  bool
}

// csActiveTask is an <active_task>: a task that was started, with its slot
// and checkpoint.
type csActiveTask struct {
	line             int
	projectURL       string
	resultName       string
	slot             int
	ckptCPU          float64
	ckptElapsed      float64
	ckptFractionDone float64
}

// clientState is what the importer uses of client_state.xml.
type clientState struct {
	path     string
	host     *boinc.Host
	net      *boinc.NetStats
	projects []*csProject
	active   []*csActiveTask
}

// parseClientState reads client_state.xml. Every file name in it must
// pass boinc.ValidateFileName: a name that could leave the project
// directory is an error naming the file, line and element.
func parseClientState(path string) (*clientState, error) {
	root, err := readXMLFile(path, maxStateFileBytes)
	if err != nil {
		return nil, err
	}
	return interpretClientState(path, root)
}

func interpretClientState(path string, root *node) (*clientState, error) {
	if root.name != "client_state" {
		return nil, &ParseError{File: path, Line: root.line, Element: "<" + root.name + ">", Err: errors.New("not a client_state.xml: document element must be <client_state>")}
	}
	cs := &clientState{path: path}
	var cur *csProject
	orphan := func(n *node) error {
		return &ParseError{File: path, Line: n.line, Element: "<" + n.name + ">", Err: errors.New("appears before any <project>")}
	}
	for _, n := range root.kids {
		var err error
		switch n.name {
		case "host_info":
			cs.host, err = parseHostInfo(path, n)
		case "net_stats":
			cs.net, err = parseNetStats(path, n)
		case "project":
			cur, err = parseProject(path, n)
			if err == nil {
				cs.projects = append(cs.projects, cur)
			}
		case "app":
			if cur == nil {
				return nil, orphan(n)
			}
			var a *boinc.App
			if a, err = parseApp(path, n); err == nil {
				cur.apps = append(cur.apps, a)
			}
		case "file", "file_info":
			if cur == nil {
				return nil, orphan(n)
			}
			var f *csFile
			if f, err = parseFile(path, n); err == nil {
				cur.files = append(cur.files, f)
			}
		case "app_version":
			if cur == nil {
				return nil, orphan(n)
			}
			var v *boinc.AppVersion
			if v, err = parseAppVersion(path, n); err == nil {
				cur.versions = append(cur.versions, v)
			}
		case "workunit":
			if cur == nil {
				return nil, orphan(n)
			}
			var w *boinc.Workunit
			if w, err = parseWorkunit(path, n); err == nil {
				cur.wus = append(cur.wus, w)
			}
		case "result":
			if cur == nil {
				return nil, orphan(n)
			}
			var r *csResult
			if r, err = parseResult(path, n); err == nil {
				cur.results = append(cur.results, r)
			}
		case "active_task_set":
			for _, c := range n.kids {
				if c.name != "active_task" {
					continue
				}
				var at *csActiveTask
				if at, err = parseActiveTask(path, c); err != nil {
					break
				}
				cs.active = append(cs.active, at)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return cs, nil
}

func parseHostInfo(path string, n *node) (*boinc.Host, error) {
	n.path = "<host_info>"
	f := &fields{file: path, n: n}
	h := &boinc.Host{
		Timezone:       f.int("timezone"),
		DomainName:     f.str("domain_name"),
		IPAddr:         f.str("ip_addr"),
		HostCPID:       f.str("host_cpid"),
		PNCPUs:         f.int("p_ncpus"),
		PVendor:        f.str("p_vendor"),
		PModel:         f.str("p_model"),
		PFeatures:      f.str("p_features"),
		PFpops:         f.float("p_fpops"),
		PIops:          f.float("p_iops"),
		PMembw:         f.float("p_membw"),
		PCalculated:    f.float("p_calculated"),
		MNBytes:        f.float("m_nbytes"),
		MCache:         f.float("m_cache"),
		MSwap:          f.float("m_swap"),
		DTotal:         f.float("d_total"),
		DFree:          f.float("d_free"),
		OSName:         f.str("os_name"),
		OSVersion:      f.str("os_version"),
		NUsableCoprocs: f.int("n_usable_coprocs"),
	}
	return h, f.err
}

// parseNetStats reads <net_stats> (NET_STATS::parse): the measured rates
// the C++ client sends to schedulers, so they carry over to boincd.
func parseNetStats(path string, n *node) (*boinc.NetStats, error) {
	n.path = "<net_stats>"
	f := &fields{file: path, n: n}
	ns := &boinc.NetStats{
		Up:   boinc.NetInfo{MaxRate: f.float("bwup"), AvgRate: f.float("avg_up"), AvgTime: f.float("avg_time_up")},
		Down: boinc.NetInfo{MaxRate: f.float("bwdown"), AvgRate: f.float("avg_down"), AvgTime: f.float("avg_time_down")},
	}
	return ns, f.err
}

func parseProject(path string, n *node) (*csProject, error) {
	n.path = "<project>"
	f := &fields{file: path, n: n}
	raw := f.str("master_url")
	if raw == "" {
		f.fail(nil, "no <master_url>")
		return nil, f.err
	}
	n.path = "<project> " + raw
	canon, err := boinc.CanonicalMasterURL(raw)
	if err != nil {
		f.fail(f.child("master_url"), "%v", err)
		return nil, f.err
	}
	cp := &csProject{line: n.line, rawURL: raw, rscBackoff: map[string]time.Time{}, rscIntvl: map[string]float64{}}
	p := &cp.p
	p.MasterURL = canon
	p.ProjectName = f.str("project_name")
	p.UserName = f.str("user_name")
	p.TeamName = f.str("team_name")
	p.CrossProjectID = f.str("cross_project_id")
	p.UserTotalCredit = f.float("user_total_credit")
	p.UserExpavgCredit = f.float("user_expavg_credit")
	p.RPCSeqno = f.int64("rpc_seqno")
	p.UserID = f.int64("userid")
	p.TeamID = f.int64("teamid")
	p.HostID = f.int64("hostid")
	p.HostTotalCredit = f.float("host_total_credit")
	p.HostExpavgCredit = f.float("host_expavg_credit")
	p.RPCFailures = f.int("nrpc_failures")
	p.MasterFailures = f.int("master_fetch_failures")
	p.MinRPCTime = f.time("min_rpc_time")
	p.NextRPCTime = f.time("next_rpc_time")
	p.LastRPCTime = f.time("last_rpc_time")
	p.ResourceShare = f.float("resource_share")
	cp.dcf = f.float("duration_correction_factor")
	p.SchedRPCPending = boinc.RPCReason(f.int("sched_rpc_pending"))
	p.SchedulerURLs = f.strs("scheduler_url")
	p.CodeSignKey = f.str("code_sign_key")
	p.MasterFetchPending = f.bool("master_url_fetch_pending")
	p.DontUseDCF = f.bool("dont_use_dcf")
	p.Suspended = f.bool("suspended_via_gui")
	p.NoNewTasks = f.bool("dont_request_more_work")
	p.DetachWhenDone = f.bool("detach_when_done")
	cp.viaAM = f.bool("attached_via_acct_mgr")
	p.Ended = f.bool("ended")
	p.NoRscApps = f.strs("no_rsc_apps")
	p.EmailHash = f.str("email_hash")
	p.ExternalCPID = f.str("external_cpid")
	p.CPIDTime = f.time("cpid_time")
	p.UserCreateTime = f.time("user_create_time")
	p.HostCreateTime = f.time("host_create_time")
	p.NJobsSuccess = max(f.int("njobs_success"), 0)
	p.NJobsError = max(f.int("njobs_error"), 0)
	p.ElapsedTime = max(f.float("elapsed_time"), 0)
	cp.rec = max(f.float("rec"), 0)
	cp.recTime = max(f.float("rec_time"), 0)
	for _, c := range f.all("rsc_backoff_time") {
		cf := &fields{file: path, n: c}
		c.path = n.path + " <rsc_backoff_time>"
		if name := cf.str("name"); name != "" {
			cp.rscBackoff[name] = cf.time("value")
		}
		if cf.err != nil {
			return nil, cf.err
		}
	}
	for _, c := range f.all("rsc_backoff_interval") {
		cf := &fields{file: path, n: c}
		c.path = n.path + " <rsc_backoff_interval>"
		if name := cf.str("name"); name != "" {
			cp.rscIntvl[name] = cf.float("value")
		}
		if cf.err != nil {
			return nil, cf.err
		}
	}
	if p.ResourceShare < 0 {
		f.fail(f.child("resource_share"), "negative resource share %g", p.ResourceShare)
	}
	if p.SchedRPCPending < 0 || p.SchedRPCPending > boinc.RPCProjectReq {
		p.SchedRPCPending = boinc.RPCNone
	}
	return cp, f.err
}

func parseApp(path string, n *node) (*boinc.App, error) {
	n.path = "<app>"
	f := &fields{file: path, n: n}
	a := &boinc.App{Name: f.str("name"), UserFriendlyName: f.str("user_friendly_name"), NonCPUIntensive: f.bool("non_cpu_intensive")}
	if a.Name == "" {
		f.fail(nil, "no <name>")
	}
	return a, f.err
}

// checkName validates a file or entity name from the state file.
func (f *fields) checkName(elem, name string, allowSubdir bool) {
	if err := boinc.ValidateFileName(name, allowSubdir); err != nil {
		f.fail(f.child(elem), "%v", err)
	}
}

func parseFile(path string, n *node) (*csFile, error) {
	n.path = "<" + n.name + ">"
	f := &fields{file: path, n: n}
	name := f.str("name")
	if name == "" {
		f.fail(nil, "no <name>")
		return nil, f.err
	}
	n.path += " " + name
	f.checkName("name", name, false)
	cf := &csFile{line: n.line, status: f.int("status")}
	fi := &cf.f
	fi.Name = name
	fi.NBytes = f.float("nbytes")
	fi.MaxNBytes = f.float("max_nbytes")
	fi.MD5 = strings.ToLower(f.str("md5_cksum"))
	fi.Executable = f.bool("executable")
	fi.Sticky = f.bool("sticky")
	fi.Uploaded = f.bool("uploaded")
	fi.SignatureRequired = f.bool("signature_required")
	fi.FileSignature = f.str("file_signature")
	fi.XMLSignature = f.str("xml_signature")
	fi.ErrorMsg = f.str("error_msg")
	fi.DownloadURLs = f.strs("download_url")
	fi.UploadURLs = f.strs("upload_url")
	// Old state files have plain <url>; the C++ client tells upload URLs
	// by this substring, as the daemon's reply parser does.
	for _, u := range f.strs("url") {
		if strings.Contains(u, "file_upload_handler") {
			fi.UploadURLs = append(fi.UploadURLs, u)
		} else {
			fi.DownloadURLs = append(fi.DownloadURLs, u)
		}
	}
	// A C++ state file's <download_gzipped/> file lists the .gz URLs as
	// its download URLs (FILE_INFO::parse replaced them; FILE_INFO::write
	// writes them back), and <gzipped_url> is the reply's element, which
	// FILE_INFO::parse also takes here.
	fi.GzippedURLs = f.strs("gzipped_url")
	if f.bool("download_gzipped") {
		fi.GzippedURLs = append(fi.GzippedURLs, fi.DownloadURLs...)
		fi.DownloadURLs = nil
	}
	if len(fi.GzippedURLs) > 0 {
		fi.GzippedNBytes = f.float("gzipped_nbytes")
	}
	if fi.NBytes < 0 || fi.MaxNBytes < 0 || fi.GzippedNBytes < 0 {
		f.fail(nil, "negative size")
	}
	return cf, f.err
}

func parseFileRef(path string, parent *node, c *node) (boinc.FileRef, error) {
	c.path = parent.path + " <file_ref>"
	f := &fields{file: path, n: c}
	r := boinc.FileRef{
		FileName:    f.str("file_name"),
		OpenName:    f.str("open_name"),
		MainProgram: f.bool("main_program"),
		CopyFile:    f.bool("copy_file"),
		Optional:    f.bool("optional"),
	}
	if r.FileName == "" {
		f.fail(nil, "no <file_name>")
		return r, f.err
	}
	f.checkName("file_name", r.FileName, false)
	if r.OpenName != "" {
		f.checkName("open_name", r.OpenName, true)
	}
	return r, f.err
}

func parseFileRefs(path string, n *node) ([]boinc.FileRef, error) {
	var out []boinc.FileRef
	for _, c := range n.kids {
		if c.name != "file_ref" {
			continue
		}
		r, err := parseFileRef(path, n, c)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func parseAppVersion(path string, n *node) (*boinc.AppVersion, error) {
	n.path = "<app_version>"
	f := &fields{file: path, n: n}
	v := &boinc.AppVersion{
		AppName:    f.str("app_name"),
		VersionNum: f.int("version_num"),
		Platform:   f.str("platform"),
		PlanClass:  f.str("plan_class"),
		APIVersion: f.str("api_version"),
		AvgNCPUs:   f.float("avg_ncpus"),
		Flops:      f.float("flops"),
		Cmdline:    f.str("cmdline"),
		FilePrefix: f.str("file_prefix"),
	}
	if v.AppName == "" {
		f.fail(nil, "no <app_name>")
		return nil, f.err
	}
	n.path = fmt.Sprintf("<app_version> %s %d", v.AppName, v.VersionNum)
	if v.FilePrefix != "" {
		f.checkName("file_prefix", v.FilePrefix, true)
	}
	if c := f.child("coproc"); c != nil {
		c.path = n.path + " <coproc>"
		cf := &fields{file: path, n: c}
		cu := boinc.CoprocUsage{Type: cf.str("type"), Count: cf.float("count")}
		if cf.err != nil {
			return nil, cf.err
		}
		// Clients older than 7.0 knew NVIDIA GPUs as CUDA.
		if cu.Type == "CUDA" {
			cu.Type = "NVIDIA"
		}
		if cu.Type != "" {
			v.Coproc = &cu
		}
	}
	if v.AvgNCPUs < 0 {
		f.fail(f.child("avg_ncpus"), "negative avg_ncpus")
	}
	if f.err != nil {
		return nil, f.err
	}
	refs, err := parseFileRefs(path, n)
	if err != nil {
		return nil, err
	}
	v.FileRefs = refs
	if v.AvgNCPUs == 0 {
		v.AvgNCPUs = 1
	}
	// An empty <platform> means the primary platform, which the import
	// knows (importer.platforms).
	return v, nil
}

func parseWorkunit(path string, n *node) (*boinc.Workunit, error) {
	n.path = "<workunit>"
	f := &fields{file: path, n: n}
	w := &boinc.Workunit{Name: f.str("name")}
	if w.Name == "" {
		f.fail(nil, "no <name>")
		return nil, f.err
	}
	n.path += " " + w.Name
	f.checkName("name", w.Name, false)
	w.AppName = f.str("app_name")
	w.VersionNum = f.int("version_num")
	w.CommandLine = f.str("command_line")
	w.RscFpopsEst = f.float("rsc_fpops_est")
	w.RscFpopsBound = f.float("rsc_fpops_bound")
	w.RscMemoryBound = f.float("rsc_memory_bound")
	w.RscDiskBound = f.float("rsc_disk_bound")
	if w.AppName == "" {
		f.fail(nil, "no <app_name>")
	}
	if f.err != nil {
		return nil, f.err
	}
	refs, err := parseFileRefs(path, n)
	if err != nil {
		return nil, err
	}
	w.InputFiles = refs
	w.ApplyDefaults()
	return w, nil
}

func parseResult(path string, n *node) (*csResult, error) {
	n.path = "<result>"
	f := &fields{file: path, n: n}
	name := f.str("name")
	if name == "" {
		f.fail(nil, "no <name>")
		return nil, f.err
	}
	n.path += " " + name
	f.checkName("name", name, false)
	cr := &csResult{line: n.line}
	r := &cr.r
	r.Name = name
	r.WUName = f.str("wu_name")
	if r.WUName == "" {
		f.fail(nil, "no <wu_name>")
		return nil, f.err
	}
	f.checkName("wu_name", r.WUName, false)
	r.FinalCPUTime = f.float("final_cpu_time")
	r.FinalElapsedTime = f.float("final_elapsed_time")
	r.ExitStatus = f.int("exit_status")
	cr.state = f.int("state")
	r.Platform = f.str("platform")
	r.VersionNum = f.int("version_num")
	r.PlanClass = f.str("plan_class")
	r.PeakWorkingSet = f.float("peak_working_set_size")
	r.PeakDiskUsage = f.float("peak_disk_usage")
	if c := f.child("stderr_out"); c != nil {
		r.StderrOut = c.text
	}
	cr.gotServerAck = f.bool("got_server_ack")
	cr.readyToReport = f.bool("ready_to_report")
	r.CompletedTime = f.time("completed_time")
	r.SuspendedViaGUI = f.bool("suspended_via_gui")
	r.ReportImmediately = f.bool("report_immediately")
	r.ReportDeadline = f.time("report_deadline")
	r.ReceivedTime = f.time("received_time")
	if cr.state < stateNew || cr.state > stateUploadFailed {
		f.fail(f.child("state"), "unknown result state %d", cr.state)
	}
	if f.err != nil {
		return nil, f.err
	}
	refs, err := parseFileRefs(path, n)
	if err != nil {
		return nil, err
	}
	r.OutputFiles = refs
	return cr, nil
}

func parseActiveTask(path string, n *node) (*csActiveTask, error) {
	n.path = "<active_task>"
	f := &fields{file: path, n: n}
	at := &csActiveTask{
		line:             n.line,
		projectURL:       f.str("project_master_url"),
		resultName:       f.str("result_name"),
		slot:             f.int("slot"),
		ckptCPU:          f.float("checkpoint_cpu_time"),
		ckptElapsed:      f.float("checkpoint_elapsed_time"),
		ckptFractionDone: f.float("checkpoint_fraction_done"),
	}
	if at.resultName != "" {
		n.path += " " + at.resultName
	}
	// The slot number names a directory under slots/: it must be a small
	// non-negative integer, nothing else.
	if at.slot < 0 || at.slot > 100000 {
		f.fail(f.child("slot"), "slot number %d out of range", at.slot)
	}
	if f.err != nil {
		return nil, f.err
	}
	if at.projectURL != "" {
		canon, err := boinc.CanonicalMasterURL(at.projectURL)
		if err != nil {
			f.fail(f.child("project_master_url"), "%v", err)
			return nil, f.err
		}
		at.projectURL = canon
	}
	return at, nil
}

// account is an account_<esc>.xml file: it makes a project attached (the
// C++ client ignores a state project without one) and holds the key.
type account struct {
	path          string
	masterURL     string
	authenticator string
	projectName   string
	prefs         string
	resourceShare float64
}

func parseAccountFile(path string) (*account, error) {
	root, err := readXMLFile(path, maxAccountFileBytes)
	if err != nil {
		return nil, err
	}
	if root.name != "account" {
		return nil, &ParseError{File: path, Line: root.line, Element: "<" + root.name + ">", Err: errors.New("not an account file: document element must be <account>")}
	}
	root.path = "<account>"
	f := &fields{file: path, n: root}
	a := &account{path: path, authenticator: f.str("authenticator"), projectName: f.str("project_name")}
	raw := f.str("master_url")
	if raw == "" {
		f.fail(nil, "no <master_url>")
		return nil, f.err
	}
	canon, err := boinc.CanonicalMasterURL(raw)
	if err != nil {
		f.fail(f.child("master_url"), "%v", err)
		return nil, f.err
	}
	a.masterURL = canon
	if a.authenticator == "" {
		f.fail(nil, "no <authenticator> (account key)")
		return nil, f.err
	}
	// The key goes into boincd.toml and every scheduler request: refuse
	// characters that have no business in a key rather than carry them.
	if strings.ContainsAny(a.authenticator, " \t\r\n<>&\"\\") {
		f.fail(f.child("authenticator"), "account key contains whitespace or markup characters")
		return nil, f.err
	}
	if c := f.child("project_preferences"); c != nil {
		a.prefs = c.raw
		pf := &fields{file: path, n: c}
		c.path = "<account> <project_preferences>"
		a.resourceShare = pf.float("resource_share")
		if pf.err != nil {
			return nil, pf.err
		}
	}
	return a, f.err
}
