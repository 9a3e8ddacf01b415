package guirpc

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/workfetch"
)

const fixtureDir = "../testdata/boinc-7.20/guirpc"

// fixturePassword is the password of the captured client.
const fixturePassword = "refguipass"

func fixturePath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(fixtureDir); err != nil {
		t.Fatalf("BOINC 7.20 GUI RPC captures: %v", err)
	}
	return fixtureDir
}

// splitMessages splits a capture on \003.
func splitMessages(b []byte) [][]byte {
	var out [][]byte
	for _, m := range bytes.Split(b, []byte{3}) {
		if len(bytes.TrimSpace(m)) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// xnode is a tiny XML tree for reading fixture replies.
type xnode struct {
	name string
	text string
	kids []*xnode
}

func parseTree(t *testing.T, b []byte) *xnode {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = false
	root := &xnode{name: "#root"}
	stack := []*xnode{root}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("parse fixture XML: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			n := &xnode{name: tk.Name.Local}
			top := stack[len(stack)-1]
			top.kids = append(top.kids, n)
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			stack[len(stack)-1].text += string(tk)
		}
	}
	return root
}

func (n *xnode) child(name string) *xnode {
	if n == nil {
		return nil
	}
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

func (n *xnode) all(name string) []*xnode {
	var out []*xnode
	for _, k := range n.kids {
		if k.name == name {
			out = append(out, k)
		}
	}
	return out
}

func (n *xnode) s(name string) string {
	if c := n.child(name); c != nil {
		return strings.TrimSpace(c.text)
	}
	return ""
}

func (n *xnode) f(name string) float64 {
	v, _ := strconv.ParseFloat(n.s(name), 64)
	return v
}

func (n *xnode) i(name string) int {
	v, _ := strconv.Atoi(n.s(name))
	return v
}

func (n *xnode) has(name string) bool { return n.child(name) != nil }

func (n *xnode) t(name string) time.Time { return fromUnix(n.f(name)) }

func fromUnix(f float64) time.Time {
	if f == 0 {
		return time.Time{}
	}
	sec := math.Floor(f)
	return time.Unix(int64(sec), int64(math.Round((f-sec)*1e6))*1000)
}

// fixtureState builds the fake backend's state from a capture's replies,
// so a correct server reproduces them byte for byte.
type fixtureState struct {
	st    State
	msgs  []*xnode
	seqno int
}

func (fs *fixtureState) absorb(t *testing.T, reply []byte) {
	root := parseTree(t, reply).child("boinc_gui_rpc_reply")
	if root == nil {
		return
	}
	for _, n := range root.kids {
		switch n.name {
		case "client_state":
			fs.clientState(n)
		case "results":
			fs.st.Results = nil
			for _, r := range n.all("result") {
				fs.st.Results = append(fs.st.Results, result(r))
			}
		case "projects":
			fs.st.Projects = nil
			for _, p := range n.all("project") {
				fs.st.Projects = append(fs.st.Projects, project(p))
			}
		case "simple_gui_info":
			fs.st.Projects, fs.st.Results = nil, nil
			for _, p := range n.all("project") {
				fs.st.Projects = append(fs.st.Projects, project(p))
			}
			for _, r := range n.all("result") {
				fs.st.Results = append(fs.st.Results, result(r))
			}
		case "host_info":
			fs.st.Host = host(n)
		case "cc_status":
			fs.st.CCStatus = CCStatus{
				NetworkStatus: n.i("network_status"), AMSPasswordError: n.i("ams_password_error") != 0,
				TaskSuspendReason: n.i("task_suspend_reason"), TaskMode: n.i("task_mode"), TaskModePerm: n.i("task_mode_perm"), TaskModeDelay: n.f("task_mode_delay"),
				GPUSuspendReason: n.i("gpu_suspend_reason"), GPUMode: n.i("gpu_mode"), GPUModePerm: n.i("gpu_mode_perm"), GPUModeDelay: n.f("gpu_mode_delay"),
				NetworkSuspendReason: n.i("network_suspend_reason"), NetworkMode: n.i("network_mode"), NetworkModePerm: n.i("network_mode_perm"), NetworkModeDelay: n.f("network_mode_delay"),
				DisallowAttach: n.i("disallow_attach") != 0, SimpleGUIOnly: n.i("simple_gui_only") != 0, MaxEventLogLines: n.i("max_event_log_lines"),
			}
		case "disk_usage_summary":
			d := DiskUsage{Total: n.f("d_total"), Free: n.f("d_free"), Boinc: n.f("d_boinc"), Allowed: n.f("d_allowed")}
			for _, p := range n.all("project") {
				d.Projects = append(d.Projects, ProjectDisk{URL: p.s("master_url"), Bytes: p.f("disk_usage")})
			}
			fs.st.DiskUsage = d
		case "old_results":
			fs.st.OldResults = nil
			for _, r := range n.all("old_result") {
				fs.st.OldResults = append(fs.st.OldResults, OldResult{
					ProjectURL: r.s("project_url"), ResultName: r.s("result_name"), AppName: r.s("app_name"),
					ExitStatus: r.i("exit_status"), ElapsedTime: r.f("elapsed_time"), CPUTime: r.f("cpu_time"),
					CompletedTime: r.t("completed_time"), CreateTime: r.t("create_time"),
				})
			}
		case "seqno":
			fs.seqno, _ = strconv.Atoi(strings.TrimSpace(n.text))
		case "msgs":
			if ms := n.all("msg"); len(ms) > len(fs.msgs) {
				fs.msgs = ms
			}
		}
	}
}

func (fs *fixtureState) clientState(n *xnode) {
	st := &fs.st
	st.Host = host(n.child("host_info"))
	ns := n.child("net_stats")
	st.NetStats = NetStats{BWUp: ns.f("bwup"), AvgUp: ns.f("avg_up"), AvgTimeUp: ns.t("avg_time_up"), BWDown: ns.f("bwdown"), AvgDown: ns.f("avg_down"), AvgTimeDown: ns.t("avg_time_down")}
	ts := n.child("time_stats")
	st.TimeStats = TimeStats{
		OnFrac: ts.f("on_frac"), ConnectedFrac: ts.f("connected_frac"), CPUAndNetworkAvailableFrac: ts.f("cpu_and_network_available_frac"),
		ActiveFrac: ts.f("active_frac"), GPUActiveFrac: ts.f("gpu_active_frac"), ClientStartTime: ts.t("client_start_time"),
		TotalStartTime: ts.t("total_start_time"), TotalDuration: ts.f("total_duration"), TotalActiveDuration: ts.f("total_active_duration"),
		TotalGPUActiveDuration: ts.f("total_gpu_active_duration"), PreviousUptime: ts.f("previous_uptime"),
		SessionActiveDuration: ts.f("session_active_duration"), SessionGPUActiveDuration: ts.f("session_gpu_active_duration"),
	}
	st.Now = ts.t("now")
	st.Projects, st.Apps, st.AppVersions, st.Workunits, st.Results = nil, nil, nil, nil, nil
	url := ""
	for _, k := range n.kids {
		switch k.name {
		case "project":
			p := project(k)
			url = p.MasterURL
			st.Projects = append(st.Projects, p)
		case "app":
			st.Apps = append(st.Apps, boinc.App{ProjectURL: url, Name: k.s("name"), UserFriendlyName: k.s("user_friendly_name"), NonCPUIntensive: k.i("non_cpu_intensive") != 0})
		case "app_version":
			v := boinc.AppVersion{ProjectURL: url, AppName: k.s("app_name"), VersionNum: k.i("version_num"), Platform: k.s("platform"),
				PlanClass: k.s("plan_class"), AvgNCPUs: k.f("avg_ncpus"), Flops: k.f("flops")}
			for _, f := range k.all("file_ref") {
				v.FileRefs = append(v.FileRefs, fileRef(f))
			}
			st.AppVersions = append(st.AppVersions, v)
		case "workunit":
			u := boinc.Workunit{ProjectURL: url, Name: k.s("name"), AppName: k.s("app_name"), VersionNum: k.i("version_num"),
				CommandLine: k.s("command_line"), RscFpopsEst: k.f("rsc_fpops_est"), RscFpopsBound: k.f("rsc_fpops_bound"),
				RscMemoryBound: k.f("rsc_memory_bound"), RscDiskBound: k.f("rsc_disk_bound")}
			for _, f := range k.all("file_ref") {
				u.InputFiles = append(u.InputFiles, fileRef(f))
			}
			st.Workunits = append(st.Workunits, u)
		case "result":
			st.Results = append(st.Results, result(k))
		case "platform_name":
			st.PlatformName = strings.TrimSpace(k.text)
		case "platform":
			st.Platforms = append(st.Platforms, strings.TrimSpace(k.text))
		case "executing_as_daemon":
			st.ExecutingAsDaemon = strings.TrimSpace(k.text) == "1"
		case "global_preferences":
			st.Prefs = boinc.Prefs{
				WorkBufMinDays: k.f("work_buf_min_days"), WorkBufAdditionalDays: k.f("work_buf_additional_days"),
				MaxNCPUsPct: k.f("max_ncpus_pct"), CPUUsageLimit: k.f("cpu_usage_limit"),
				CPUSchedulingPeriodMinutes: k.f("cpu_scheduling_period_minutes"), DiskInterval: k.f("disk_interval"),
				DiskMaxUsedGB: k.f("disk_max_used_gb"), DiskMaxUsedPct: k.f("disk_max_used_pct"), DiskMinFreeGB: k.f("disk_min_free_gb"),
				RAMMaxUsedBusyPct: k.f("ram_max_used_busy_pct"), RAMMaxUsedIdlePct: k.f("ram_max_used_idle_pct"),
				LeaveAppsInMemory: k.i("leave_apps_in_memory") != 0, RunIfUserActive: k.i("run_if_user_active") != 0,
				SuspendCPUUsage: k.f("suspend_cpu_usage"), MaxBytesSecUp: k.f("max_bytes_sec_up"), MaxBytesSecDown: k.f("max_bytes_sec_down"),
				RunOnBatteries: k.i("run_on_batteries") != 0, RunGPUIfUserActive: k.i("run_gpu_if_user_active") != 0,
				SuspendIfNoRecentInput: k.f("suspend_if_no_recent_input"), IdleTimeToRun: k.f("idle_time_to_run"),
				StartHour: k.f("start_hour"), EndHour: k.f("end_hour"), NetStartHour: k.f("net_start_hour"), NetEndHour: k.f("net_end_hour"),
				DailyXferLimitMB: k.f("daily_xfer_limit_mb"), DailyXferPeriodDays: k.i("daily_xfer_period_days"),
			}
		}
	}
}

func fileRef(f *xnode) boinc.FileRef {
	return boinc.FileRef{FileName: f.s("file_name"), OpenName: f.s("open_name"), MainProgram: f.has("main_program"), CopyFile: f.has("copy_file"), Optional: f.has("optional")}
}

func host(n *xnode) HostInfo {
	return HostInfo{Host: boinc.Host{
		Timezone: n.i("timezone"), DomainName: n.s("domain_name"), IPAddr: n.s("ip_addr"), HostCPID: n.s("host_cpid"),
		PNCPUs: n.i("p_ncpus"), PVendor: n.s("p_vendor"), PModel: n.s("p_model"), PFeatures: n.s("p_features"),
		PFpops: n.f("p_fpops"), PIops: n.f("p_iops"), PMembw: n.f("p_membw"), PCalculated: n.f("p_calculated"),
		MNBytes: n.f("m_nbytes"), MCache: n.f("m_cache"), MSwap: n.f("m_swap"), DTotal: n.f("d_total"), DFree: n.f("d_free"),
		OSName: n.s("os_name"), OSVersion: n.s("os_version"), NUsableCoprocs: n.i("n_usable_coprocs"),
	}, VMExtensionsDisabled: n.i("p_vm_extensions_disabled") != 0}
}

func project(n *xnode) ProjectInfo {
	p := ProjectInfo{Project: boinc.Project{
		MasterURL: n.s("master_url"), ProjectName: n.s("project_name"), UserName: n.s("user_name"), TeamName: n.s("team_name"),
		CrossProjectID: n.s("cross_project_id"), UserTotalCredit: n.f("user_total_credit"), UserExpavgCredit: n.f("user_expavg_credit"),
		RPCSeqno: int64(n.i("rpc_seqno")), UserID: int64(n.i("userid")), TeamID: int64(n.i("teamid")), HostID: int64(n.i("hostid")),
		HostTotalCredit: n.f("host_total_credit"), HostExpavgCredit: n.f("host_expavg_credit"),
		RPCFailures: n.i("nrpc_failures"), MasterFailures: n.i("master_fetch_failures"), MinRPCTime: n.t("min_rpc_time"),
		NextRPCTime: n.t("next_rpc_time"), ResourceShare: n.f("resource_share"), DCF: n.f("duration_correction_factor"),
		SchedRPCPending: boinc.RPCReason(n.i("sched_rpc_pending")), LastRPCTime: n.t("last_rpc_time"),
		MasterFetchPending: n.has("master_url_fetch_pending"), DontUseDCF: n.has("dont_use_dcf"), Suspended: n.has("suspended_via_gui"),
		NoNewTasks: n.has("dont_request_more_work"), Ended: n.has("ended"),
	},
		HostVenue: n.s("host_venue"), EmailHash: n.s("email_hash"), ExternalCPID: n.s("external_cpid"), CPIDTime: n.t("cpid_time"),
		UserCreateTime: n.t("user_create_time"), HostCreateTime: n.t("host_create_time"), REC: n.f("rec"), RECTime: n.t("rec_time"),
		DiskUsage: n.f("disk_usage"), DiskShare: n.f("disk_share"), DesiredDiskUsage: n.f("desired_disk_usage"),
		NJobsSuccess: n.i("njobs_success"), NJobsError: n.i("njobs_error"), ElapsedTime: n.f("elapsed_time"),
		SchedulerRPCInProgress: n.has("scheduler_rpc_in_progress"), DetachWhenDone: n.has("detach_when_done"),
		SchedPriority: n.f("sched_priority"), ProjectDir: n.s("project_dir"),
	}
	for _, b := range n.all("rsc_backoff_time") {
		if r, ok := workfetch.RscByName(b.s("name")); ok {
			p.Work.Backoff[r].Until = b.t("value")
		}
	}
	for _, b := range n.all("rsc_backoff_interval") {
		if r, ok := workfetch.RscByName(b.s("name")); ok {
			p.Work.Backoff[r].Interval = b.f("value")
		}
	}
	return p
}

var phaseOfState = map[int]boinc.Phase{
	0: boinc.PhaseNew, 1: boinc.PhaseDownloading, 2: boinc.PhaseDownloaded, 3: boinc.PhaseComputeError,
	4: boinc.PhaseUploading, 5: boinc.PhaseUploaded, 6: boinc.PhaseAborted, 7: boinc.PhaseUploadFailed,
}

func result(n *xnode) ResultInfo {
	r := ResultInfo{Result: boinc.Result{
		Name: n.s("name"), WUName: n.s("wu_name"), Platform: n.s("platform"), VersionNum: n.i("version_num"),
		PlanClass: n.s("plan_class"), ProjectURL: n.s("project_url"), FinalCPUTime: n.f("final_cpu_time"),
		FinalElapsedTime: n.f("final_elapsed_time"), ExitStatus: n.i("exit_status"), Phase: phaseOfState[n.i("state")],
		ReportDeadline: n.t("report_deadline"), ReceivedTime: n.t("received_time"), CompletedTime: n.t("completed_time"),
		SuspendedViaGUI: n.has("suspended_via_gui"), ReportImmediately: n.has("report_immediately"),
	}, EstimatedRemaining: n.f("estimated_cpu_time_remaining"), EDFScheduled: n.has("edf_scheduled"), Resources: n.s("resources")}
	if a := n.child("active_task"); a != nil {
		if r.Phase == boinc.PhaseDownloaded {
			r.Phase = boinc.PhaseComputing
		}
		r.Active = &ActiveTask{
			ActiveState: a.i("active_task_state"), SchedulerState: a.i("scheduler_state"), PID: a.i("pid"), Slot: a.i("slot"),
			CheckpointCPUTime: a.f("checkpoint_cpu_time"), FractionDone: a.f("fraction_done"), CPUTime: a.f("current_cpu_time"),
			ElapsedTime: a.f("elapsed_time"), SwapSize: a.f("swap_size"), WorkingSet: a.f("working_set_size"),
			WorkingSetSmooth: a.f("working_set_size_smoothed"), PageFaultRate: a.f("page_fault_rate"),
			BytesSent: a.f("bytes_sent"), BytesReceived: a.f("bytes_received"), ProgressRate: a.f("progress_rate"),
		}
	}
	return r
}

// fakeBackend serves a fixed State and records the actions it is asked
// to do.
type fakeBackend struct {
	mu      sync.Mutex
	st      *State
	actions []Action
	err     error
}

func (b *fakeBackend) Snapshot(ctx context.Context, need Parts) (*State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	cp := *b.st
	// As the daemon: the override is read only for the replies that ask
	// for it, so an op that shows it without asking shows nothing.
	if need&PartPrefsOverride == 0 {
		cp.PrefsOverride = ""
	}
	return &cp, nil
}

func (b *fakeBackend) Do(ctx context.Context, a Action) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.actions = append(b.actions, a)
	return b.err
}

func (b *fakeBackend) done() []Action {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Action(nil), b.actions...)
}

// startServer runs a server on 127.0.0.1:0 until the test ends.
func startServer(t *testing.T, cfg Config) *Server {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv
}

// client is a raw GUI RPC connection.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, srv *Server) *client {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// roundTrip sends one message (adding \003) and returns the reply
// without its \003, or an error when the server closed the connection.
func (cl *client) roundTrip(msg []byte) ([]byte, error) {
	cl.t.Helper()
	_ = cl.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := cl.c.Write(append(append([]byte(nil), msg...), 3)); err != nil {
		return nil, err
	}
	reply, err := cl.r.ReadBytes(3)
	if err != nil {
		return nil, err
	}
	return reply[:len(reply)-1], nil
}

func (cl *client) call(op string) string {
	cl.t.Helper()
	reply, err := cl.roundTrip([]byte("<boinc_gui_rpc_request>\n" + op + "\n</boinc_gui_rpc_request>\n"))
	if err != nil {
		cl.t.Fatalf("%s: %v", op, err)
	}
	return string(reply)
}

func (cl *client) auth(password string) string {
	cl.t.Helper()
	r := cl.call("<auth1/>")
	m := regexp.MustCompile(`<nonce>([^<]*)</nonce>`).FindStringSubmatch(r)
	if m == nil {
		cl.t.Fatalf("auth1 reply has no nonce: %q", r)
	}
	sum := md5.Sum([]byte(m[1] + password))
	return cl.call("<auth2>\n<nonce_hash>" + hex.EncodeToString(sum[:]) + "</nonce_hash>\n</auth2>")
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

var valueRE = regexp.MustCompile(`>[^<]*<`)

// skeleton keeps a reply's layout (indentation, element names, line
// breaks) and drops the values.
func skeleton(b []byte) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "<") {
			l = valueRE.ReplaceAllString(l, "><")
		} else if strings.TrimSpace(l) != "" {
			l = "#text"
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// normaliseBodies undoes the event log's capitalisation of the first
// letter of each message, which the fixture's C++ messages do not all
// have.
func normaliseBodies(b []byte) string {
	s := string(b)
	lines := strings.Split(s, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasSuffix(lines[i-1], "<body><![CDATA[") && lines[i] != "" {
			lines[i] = strings.ToLower(lines[i][:1]) + lines[i][1:]
		}
	}
	return strings.Join(lines, "\n")
}

func TestFixtureReplay(t *testing.T) {
	dir := fixturePath(t)
	names, err := filepath.Glob(filepath.Join(dir, "*.c2s.bin"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no fixtures in %s: %v", dir, err)
	}
	for _, path := range names {
		name := strings.TrimSuffix(filepath.Base(path), ".c2s.bin")
		t.Run(name, func(t *testing.T) {
			c2s, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s2c, err := os.ReadFile(filepath.Join(dir, name+".s2c.bin"))
			if err != nil {
				t.Fatal(err)
			}
			reqs, want := splitMessages(c2s), splitMessages(s2c)

			fs := &fixtureState{}
			for _, r := range want {
				fs.absorb(t, r)
			}
			backend := &fakeBackend{st: &fs.st}
			log := eventlog.New(nil, 2000)
			for _, m := range fs.msgs {
				lvl := slog.LevelInfo
				switch m.i("pri") {
				case 2:
					lvl = slog.LevelWarn
				case 3:
					lvl = eventlog.LevelInternal
				}
				body := strings.TrimSuffix(strings.TrimPrefix(m.child("body").text, "\n"), "\n")
				rec := slog.NewRecord(time.Unix(int64(m.i("time")), 0), lvl, body, 0)
				if p := m.s("project"); p != "" {
					rec.AddAttrs(slog.String("project", p))
				}
				if err := log.Handle(context.Background(), rec); err != nil {
					t.Fatal(err)
				}
			}
			for log.LastSeqno() < int64(fs.seqno) {
				slog.New(log).Info("filler")
			}
			srv := startServer(t, Config{Backend: backend, Password: fixturePassword, Log: log})
			cl := dial(t, srv)

			var nonce string
			for i, req := range reqs {
				if bytes.Contains(req, []byte("<auth2>")) && name != "auth_wrong_password" {
					sum := md5.Sum([]byte(nonce + fixturePassword))
					req = regexp.MustCompile(`<nonce_hash>[^<]*</nonce_hash>`).ReplaceAll(req, []byte("<nonce_hash>"+hex.EncodeToString(sum[:])+"</nonce_hash>"))
				}
				got, err := cl.roundTrip(req)
				if err != nil {
					t.Fatalf("request %d (%q): %v", i, firstLines(req), err)
				}
				if i >= len(want) {
					t.Fatalf("request %d: got a reply the fixture does not have: %q", i, got)
				}
				if m := regexp.MustCompile(`<nonce>([^<]*)</nonce>`).FindSubmatch(got); m != nil {
					nonce = string(m[1])
					if skeleton(got) != skeleton(want[i]) {
						t.Errorf("auth1 reply layout:\n got %q\nwant %q", got, want[i])
					}
					if !regexp.MustCompile(`^\d+\.\d{6}$`).Match(m[1]) {
						t.Errorf("nonce %q is not %%f of a time", m[1])
					}
					continue
				}
				g, w := string(got), string(want[i])
				if bytes.Contains(want[i], []byte("<msgs>")) {
					g, w = normaliseBodies(got), normaliseBodies(want[i])
				}
				if g != w {
					t.Errorf("request %d (%q): reply differs from the C++ client's\n%s", i, firstLines(req), diffLines(w, g))
				}
			}
			if name == "auth_wrong_password" {
				if _, err := cl.roundTrip([]byte("<boinc_gui_rpc_request>\n<get_state/>\n</boinc_gui_rpc_request>\n")); err == nil {
					t.Error("connection still open after a failed auth2")
				}
			}
			if name == "quit" {
				// Quit is carried out after the reply has gone out.
				deadline := time.Now().Add(5 * time.Second)
				for len(backend.done()) == 0 && time.Now().Before(deadline) {
					time.Sleep(5 * time.Millisecond)
				}
			}
			checkActions(t, name, backend.done())
		})
	}
}

// checkActions checks what the fixture's ops asked the backend to do.
func checkActions(t *testing.T, name string, got []Action) {
	const url = "http://127.0.0.1:18080/"
	want := map[string][]Action{
		"project_attach":           {Attach{URL: url, Authenticator: "0123456789abcdef0123456789abcdef"}},
		"project_detach":           {ProjectOp{URL: url, Op: ProjectDetach}},
		"project_update":           {ProjectOp{URL: url, Op: ProjectUpdate}},
		"quit":                     {Quit{}},
		"set_run_mode_always_3600": {SetMode{Which: "run", Mode: ModeAlways, Duration: 3600}},
		"set_run_mode_auto":        {SetMode{Which: "run", Mode: ModeAuto}},
		"set_run_mode_never":       {SetMode{Which: "run", Mode: ModeNever}},
		"task_abort":               {ResultOp{URL: url, Name: "refwu_1795268042_3_0", Op: ResultAbort}},
		"task_resume":              {ResultOp{URL: url, Name: "refwu_1795267900_2_0", Op: ResultResume}},
		"task_suspend":             {ResultOp{URL: url, Name: "refwu_1795267900_2_0", Op: ResultSuspend}},
	}[name]
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("backend actions = %+v, want %+v", got, want)
	}
}

func firstLines(b []byte) string {
	s := string(b)
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

// diffLines shows the first differing lines of two replies.
func diffLines(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	n := 0
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			fmt.Fprintf(&b, "line %d:\n  want %q\n   got %q\n", i+1, w, g)
			if n++; n >= 8 {
				break
			}
		}
	}
	return b.String()
}
