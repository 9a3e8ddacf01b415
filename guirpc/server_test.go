package guirpc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/workfetch"
)

const (
	testURL  = "http://127.0.0.1:18080/"
	testURL2 = "https://gpu.example.org/gpu/"
)

// richState is a client with two projects, a CPU and a GPU app, tasks in
// several phases, transfers and statistics.
func richState() *State {
	now := time.Unix(1795268562, 925166000)
	st := &State{
		Now:   now,
		Proxy: boinc.DefaultProxyInfo(),
		Host: HostInfo{Host: boinc.Host{
			DomainName: "vm", IPAddr: "127.0.0.1", HostCPID: "dfd539091bf33cecbe163d62f5a1f9e1", PNCPUs: 4,
			PVendor: "GenuineIntel", PModel: "Xeon <fast> & \"cool\"", PFeatures: "fpu sse2", PFpops: 1e9, PIops: 2e9,
			MNBytes: 8e9, DTotal: 1e11, DFree: 5e10, OSName: "Linux", OSVersion: "6.1", NUsableCoprocs: 1,
		}, Coprocs: []CoprocInfo{{Type: workfetch.NVIDIA, Count: 1, Name: "NVIDIA H200", AvailableRAM: 1.4e11, PeakFlops: 6e13, CUDAVersion: 12040, DriverVersion: 53599}}},
		Projects: []ProjectInfo{
			{Project: boinc.Project{MasterURL: testURL, ProjectName: "Fake Project", UserName: "refuser", ResourceShare: 100,
				HostID: 1, LastRPCTime: now.Add(-time.Minute), SchedRPCPending: boinc.RPCNeedWork},
				ProjectDir: "/var/lib/boincd/projects/127.0.0.1_18080", SchedulerRPCInProgress: true,
				Statistics: []DailyStats{{Day: time.Unix(1795219200, 0), UserTotalCredit: 10, HostTotalCredit: 5}}},
			{Project: boinc.Project{MasterURL: testURL2, ProjectName: "GPU Project", ResourceShare: 50, Suspended: true, NoNewTasks: true,
				NoRscApps: []string{"CPU"}},
				Work:                 workfetch.ProjectState{Backoff: [workfetch.NumRsc]workfetch.Backoff{workfetch.NVIDIA: {Interval: 600, Until: now.Add(10 * time.Minute)}}},
				DownloadBackoffUntil: now.Add(time.Minute), ProjectDir: "/var/lib/boincd/projects/gpu.example.org_gpu"},
		},
		Apps: []boinc.App{
			{ProjectURL: testURL, Name: "refapp", UserFriendlyName: "Reference app"},
			{ProjectURL: testURL2, Name: "gpuapp", UserFriendlyName: "GPU app"},
		},
		AppVersions: []boinc.AppVersion{
			{ProjectURL: testURL, AppName: "refapp", VersionNum: 100, Platform: platform.LinuxX86_64, AvgNCPUs: 1, Flops: 1e9,
				FileRefs: []boinc.FileRef{{FileName: "refapp_1.00.sh", MainProgram: true}}},
			{ProjectURL: testURL2, AppName: "gpuapp", VersionNum: 200, Platform: platform.LinuxX86_64, PlanClass: "cuda", AvgNCPUs: 0.5, Flops: 5e12,
				Coproc: &boinc.CoprocUsage{Type: "NVIDIA", Count: 1}, FileRefs: []boinc.FileRef{{FileName: "gpuapp_2.00", MainProgram: true}}},
		},
		Workunits: []boinc.Workunit{
			{ProjectURL: testURL, Name: "wu_cpu_1", AppName: "refapp", VersionNum: 100, CommandLine: "--seconds 30", RscFpopsEst: 3e10, RscFpopsBound: 1e13, RscMemoryBound: 1e8, RscDiskBound: 1e8,
				InputFiles: []boinc.FileRef{{FileName: "wu_cpu_1_in", OpenName: "in"}}},
			{ProjectURL: testURL, Name: "wu_cpu_2", AppName: "refapp", VersionNum: 100, RscFpopsEst: 3e10, RscFpopsBound: 1e13, RscMemoryBound: 1e8, RscDiskBound: 1e8},
			{ProjectURL: testURL2, Name: "wu_gpu_1", AppName: "gpuapp", VersionNum: 200, RscFpopsEst: 3e13, RscFpopsBound: 1e15, RscMemoryBound: 1e9, RscDiskBound: 1e9},
		},
		Results: []ResultInfo{
			{Result: boinc.Result{ProjectURL: testURL, Name: "task_cpu_running", WUName: "wu_cpu_1", Platform: platform.LinuxX86_64, VersionNum: 100,
				Phase: boinc.PhaseComputing, ReportDeadline: now.Add(7 * 24 * time.Hour), ReceivedTime: now.Add(-time.Hour)},
				EstimatedRemaining: 20, EDFScheduled: true,
				Active: &ActiveTask{ActiveState: 1, SchedulerState: 2, PID: 4242, Slot: 0, FractionDone: 0.25, CPUTime: 9, ElapsedTime: 10, WorkingSet: 1 << 20}},
			{Result: boinc.Result{ProjectURL: testURL, Name: "task_cpu_done", WUName: "wu_cpu_2", Platform: platform.LinuxX86_64, VersionNum: 100,
				Phase: boinc.PhaseUploaded, WireState: 5, FinalCPUTime: 29, FinalElapsedTime: 30, CompletedTime: now.Add(-time.Minute),
				ReportDeadline: now.Add(7 * 24 * time.Hour), ReceivedTime: now.Add(-2 * time.Hour)}},
			{Result: boinc.Result{ProjectURL: testURL2, Name: "task_gpu_queued", WUName: "wu_gpu_1", Platform: platform.LinuxX86_64, VersionNum: 200, PlanClass: "cuda",
				Phase: boinc.PhaseDownloading, SuspendedViaGUI: true, ReportDeadline: now.Add(48 * time.Hour), ReceivedTime: now.Add(-time.Minute)},
				EstimatedRemaining: 600},
		},
		Transfers: []TransferInfo{
			{ProjectURL: testURL2, ProjectName: "GPU Project", Name: "wu_gpu_1_in", NBytes: 1e6, MaxNBytes: 0, NumRetries: 2,
				FirstRequestTime: now.Add(-time.Hour), NextRequestTime: now.Add(time.Minute), Active: true, BytesXferred: 5e5, XferSpeed: 1e5,
				URL: "https://gpu.example.org/download/wu_gpu_1_in", ProjectBackoff: 30},
			{ProjectURL: testURL, ProjectName: "Fake Project", Name: "task_cpu_done_out", NBytes: 100, Upload: true},
		},
		OldResults:    []OldResult{{ProjectURL: testURL, ResultName: "old_task", AppName: "refapp", ElapsedTime: 30, CompletedTime: now.Add(-time.Hour), CreateTime: now.Add(-50 * time.Minute)}},
		DailyXfers:    []DailyXfer{{When: 20778, Up: 1000, Down: 2000}},
		CCStatus:      CCStatus{TaskMode: ModeAlways, TaskModePerm: ModeAuto, TaskModeDelay: 3599.5},
		DiskUsage:     DiskUsage{Projects: []ProjectDisk{{URL: testURL, Bytes: 4096}, {URL: testURL2, Bytes: 8192}}, Total: 1e11, Free: 5e10, Boinc: 65536, Allowed: 4e10},
		Prefs:         boinc.DefaultPrefs(),
		PrefsOverride: "<global_preferences>\n   <max_ncpus_pct>50</max_ncpus_pct>\n</global_preferences>\n",
	}
	return st
}

func TestLineLayoutForLineParsers(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}})
	cl := dial(t, srv)
	// PROTOCOLS.md §5.6: these open tags must be alone on their line.
	tests := []struct {
		op    string
		alone []string
	}{
		{"<get_results>\n<active_only>0</active_only>\n</get_results>", []string{"<result>"}},
		{"<get_simple_gui_info/>", []string{"<result>", "<project>"}},
		{"<get_project_status/>", []string{"<project>"}},
		{"<get_disk_usage/>", []string{"<project>"}},
		{"<get_file_transfers/>", []string{"<file_transfer>"}},
		{"<get_statistics/>", []string{"<project_statistics>", "<daily_statistics>"}},
		{"<get_cc_status/>", []string{"<cc_status>"}},
		{"<get_host_info/>", []string{"<host_info>"}},
		{"<get_old_results/>", []string{"<old_result>"}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			reply := cl.call(tc.op)
			checkWellFormed(t, reply)
			for _, tag := range tc.alone {
				found := false
				for _, l := range strings.Split(reply, "\n") {
					if strings.Contains(l, tag) {
						found = true
						if strings.TrimSpace(l) != tag {
							t.Errorf("%s not alone on its line: %q", tag, l)
						}
					}
				}
				if !found {
					t.Errorf("reply has no %s:\n%s", tag, reply)
				}
			}
			for _, l := range strings.Split(reply, "\n") {
				if len(l) > 255 && !strings.Contains(l, "p_features") {
					t.Errorf("line longer than fgets' 256 bytes: %q", l)
				}
			}
		})
	}
}

func checkWellFormed(t *testing.T, reply string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(reply))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("reply is not well-formed XML: %v\n%s", err, reply)
		}
	}
}

func TestReadOps(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}})
	cl := dial(t, srv)
	tests := []struct {
		op   string
		want []string
		not  []string
	}{
		{"<get_state/>", []string{
			"<have_cuda/>", "<coproc_cuda>", "<name>NVIDIA H200</name>", "<p_model>Xeon &lt;fast&gt; &amp; &quot;cool&quot;</p_model>",
			"   <scheduler_rpc_in_progress/>\n", "    <suspended_via_gui/>\n", "    <dont_request_more_work/>\n",
			"        <name>NVIDIA</name>\n        <value>1795269162.925166</value>",
			"    <no_rsc_apps>CPU</no_rsc_apps>", "<download_backoff>60.000000</download_backoff>",
			"    <plan_class>cuda</plan_class>", "    <coproc>\n        <type>NVIDIA</type>\n        <count>1.000000</count>\n    </coproc>",
			"<command_line>\n--seconds 30\n    </command_line>", "<ready_to_report/>", "<edf_scheduled/>",
			"   <resources>0.5 CPUs + 1 NVIDIA GPU</resources>", "<project_suspended_via_gui/>",
			"<override_file_present>1</override_file_present>", "<now>1795268562.925166</now>",
		}, nil},
		{"<get_results>\n<active_only>1</active_only>\n</get_results>", []string{"task_cpu_running"}, []string{"task_cpu_done", "task_gpu_queued"}},
		{"<get_results/>", []string{"task_cpu_running", "task_cpu_done", "task_gpu_queued"}, nil},
		{"<get_simple_gui_info/>", []string{"<project>", "task_cpu_running"}, []string{"task_cpu_done", "task_gpu_queued"}},
		{"<get_file_transfers/>", []string{"<is_upload>1</is_upload>", "<xfer_speed>100000.000000</xfer_speed>", "<project_backoff>30.000000</project_backoff>"}, nil},
		{"<get_statistics/>", []string{"<master_url>" + testURL + "</master_url>", "<user_total_credit>10.000000</user_total_credit>"}, nil},
		{"<get_daily_xfer_history/>", []string{"<dx>\n   <when>20778</when>\n   <up>1000.000000</up>\n   <down>2000.000000</down>\n</dx>"}, nil},
		{"<get_cc_status/>", []string{"<task_mode>1</task_mode>", "<task_mode_delay>3599.500000</task_mode_delay>", "<gpu_mode>2</gpu_mode>"}, nil},
		{"<get_global_prefs_working/>", []string{"<global_preferences>", "<work_buf_min_days>0.100000</work_buf_min_days>"}, nil},
		{"<get_global_prefs_override/>", []string{"<max_ncpus_pct>50</max_ncpus_pct>"}, nil},
		{"<get_global_prefs_file/>", []string{"<error>-108</error>"}, nil},
		{"<get_all_projects_list/>", []string{"<projects>\n</projects>"}, nil},
		{"<acct_mgr_info/>", []string{"<acct_mgr_url></acct_mgr_url>"}, nil},
		{"<get_project_init_status/>", []string{"<get_project_init_status>"}, nil},
		{"<get_newer_version/>", []string{"<newer_version></newer_version>"}, nil},
		{"<get_proxy_settings/>", []string{"<proxy_info>", "<http_server_port>80</http_server_port>"}, nil},
		{"<project_attach_poll/>", []string{"<project_attach_reply>\n    <error_num>0</error_num>\n</project_attach_reply>"}, nil},
		{"<get_notices_public/>", []string{"<notices>\n</notices>"}, nil},
		{"<get_message_count/>", []string{"<seqno>0</seqno>"}, nil},
		{"<get_messages><seqno>0</seqno></get_messages>", []string{"<msgs>\n</msgs>"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			reply := cl.call(tc.op)
			checkWellFormed(t, reply)
			for _, w := range tc.want {
				if !strings.Contains(reply, w) {
					t.Errorf("reply lacks %q:\n%s", w, reply)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(reply, n) {
					t.Errorf("reply has %q:\n%s", n, reply)
				}
			}
		})
	}
}

func TestActionOps(t *testing.T) {
	tests := []struct {
		op     string
		err    error
		reply  string
		action Action
	}{
		{"<project_suspend>\n<project_url>HTTP://127.0.0.1:18080</project_url>\n</project_suspend>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectSuspend}},
		{"<project_resume><project_url>" + testURL + "</project_url></project_resume>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectResume}},
		{"<project_nomorework><project_url>" + testURL + "</project_url></project_nomorework>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectNoMoreWork}},
		{"<project_allowmorework><project_url>" + testURL + "</project_url></project_allowmorework>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectAllowMoreWork}},
		{"<project_reset><project_url>" + testURL + "</project_url></project_reset>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectReset}},
		{"<project_detach_when_done><project_url>" + testURL + "</project_url></project_detach_when_done>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectDetachWhenDone}},
		{"<project_dont_detach_when_done><project_url>" + testURL + "</project_url></project_dont_detach_when_done>", nil, "<success/>", ProjectOp{URL: testURL, Op: ProjectDontDetachWhenDone}},
		{"<project_update><project_url>http://nowhere/</project_url></project_update>", fmt.Errorf("lookup: %w", ErrNoSuchProject), "<error>No such project</error>", ProjectOp{URL: "http://nowhere/", Op: ProjectUpdate}},
		{"<project_update></project_update>", nil, "<error>Missing project URL</error>", nil},
		{"<abort_result><project_url>" + testURL + "</project_url><name>nope</name></abort_result>", ErrNoSuchResult, "<error>no such result</error>", ResultOp{URL: testURL, Name: "nope", Op: ResultAbort}},
		{"<suspend_result><project_url>" + testURL + "</project_url></suspend_result>", nil, "<error>Missing result name</error>", nil},
		{"<retry_file_transfer><project_url>" + testURL + "</project_url><filename>f_in</filename></retry_file_transfer>", nil, "<success/>", TransferOp{URL: testURL, File: "f_in", Op: TransferRetry}},
		{"<abort_file_transfer><project_url>" + testURL + "</project_url><filename>f_in</filename></abort_file_transfer>", ErrNoSuchTransfer, "<error>No such transfer waiting</error>", TransferOp{URL: testURL, File: "f_in", Op: TransferAbort}},
		{"<abort_file_transfer><project_url>" + testURL + "</project_url></abort_file_transfer>", nil, "<error>Missing filename</error>", nil},
		{"<set_gpu_mode>\n<never/>\n<duration>60</duration>\n</set_gpu_mode>", nil, "<success/>", SetMode{Which: "gpu", Mode: ModeNever, Duration: 60}},
		{"<set_network_mode>\n<restore/>\n</set_network_mode>", nil, "<success/>", SetMode{Which: "network", Mode: ModeRestore}},
		{"<set_run_mode>\n<duration>60</duration>\n</set_run_mode>", nil, "<error>Missing mode</error>", nil},
		{"<set_run_mode>\n<auto/><duration>soon</duration>\n</set_run_mode>", nil, "<error>bad duration: soon</error>", nil},
		{"<project_attach>\n<project_url>" + testURL + "</project_url>\n<authenticator>k&amp;y</authenticator>\n<project_name>X</project_name>\n</project_attach>", ErrAlreadyAttached, "<error>Already attached to project</error>", Attach{URL: testURL, Authenticator: "k&y", Name: "X"}},
		{"<project_attach><use_config_file/></project_attach>", nil, "<error>Missing URL</error>", nil},
		{"<project_attach><project_url>" + testURL + "</project_url></project_attach>", nil, "<error>Missing authenticator</error>", nil},
		{"<set_global_prefs_override>\n<global_preferences>\n<max_ncpus_pct>50</max_ncpus_pct>\n</global_preferences>\n</set_global_prefs_override>", nil, "<success/>",
			SetPrefsOverride{XML: "<global_preferences>\n<max_ncpus_pct>50</max_ncpus_pct>\n</global_preferences>"}},
		{"<set_global_prefs_override>\n</set_global_prefs_override>", nil, "<success/>", SetPrefsOverride{}},
		{"<set_global_prefs_override/>", nil, "<error>Missing override prefs</error>", nil},
		{"<read_global_prefs_override/>", nil, "<success/>", ReadPrefsOverride{}},
		{"<read_cc_config/>", errors.New("cc_config.xml line 3: bad <x>"), "<error>cc_config.xml line 3: bad &lt;x&gt;</error>", ReadCCConfig{}},
		{"<run_benchmarks/>", nil, "<success/>", RunBenchmarks{}},
		{"<network_available/>", nil, "<success/>", NetworkAvailable{}},
	}
	for _, tc := range tests {
		t.Run(tc.op, func(t *testing.T) {
			b := &fakeBackend{st: richState(), err: tc.err}
			srv := startServer(t, Config{Backend: b, Password: "pw"})
			cl := dial(t, srv)
			if r := cl.auth("pw"); !strings.Contains(r, "<authorized/>") {
				t.Fatalf("auth: %q", r)
			}
			reply := cl.call(tc.op)
			want := "<boinc_gui_rpc_reply>\n" + tc.reply + "\n</boinc_gui_rpc_reply>\n"
			if reply != want {
				t.Errorf("reply %q, want %q", reply, want)
			}
			got := b.done()
			if tc.action == nil {
				if len(got) != 0 {
					t.Errorf("backend asked to do %+v", got)
				}
				return
			}
			if len(got) != 1 || got[0] != tc.action {
				t.Errorf("actions %+v, want %+v", got, tc.action)
			}
		})
	}
}

func TestAccessRules(t *testing.T) {
	tests := []struct {
		name     string
		password string
		local    bool
		auth     bool
		op       string
		want     string
	}{
		{"local read without auth", "pw", true, false, "<get_state/>", "<client_state>"},
		{"local read-only list without auth", "pw", true, false, "<get_message_count/>", "<seqno>"},
		{"local write without auth", "pw", true, false, "<run_benchmarks/>", "<unauthorized/>"},
		{"local private read without auth", "pw", true, false, "<get_notices/>", "<unauthorized/>"},
		{"local write with auth", "pw", true, true, "<run_benchmarks/>", "<success/>"},
		{"local write, no password", "", true, false, "<run_benchmarks/>", "<success/>"},
		{"remote read without auth", "pw", false, false, "<get_state/>", "<unauthorized/>"},
		{"remote unknown op without auth", "pw", false, false, "<bogus/>", "<unauthorized/>"},
		{"remote read with auth", "pw", false, true, "<get_cc_status/>", "<cc_status>"},
		{"remote write, no password", "", false, false, "<quit/>", "<success/>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Listen(Config{Addr: "127.0.0.1:0", Backend: &fakeBackend{st: richState()}, Password: tc.password})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			cc := &conn{s: srv, local: tc.local, authOK: tc.password == ""}
			call := func(op string) (string, error) {
				reply, after, err := cc.handle(context.Background(), []byte("<boinc_gui_rpc_request>\n"+op+"\n</boinc_gui_rpc_request>\n"))
				if after != nil {
					after(context.Background())
				}
				return string(reply), err
			}
			if tc.auth {
				r, _ := call("<auth1/>")
				nonce := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(r), "<nonce>"), "</nonce>")
				if r, err := call("<auth2>\n<nonce_hash>" + md5hex(nonce+tc.password) + "</nonce_hash>\n</auth2>"); err != nil || !strings.Contains(r, "<authorized/>") {
					t.Fatalf("auth2: %q %v", r, err)
				}
			}
			r, err := call(tc.op)
			if err != nil || !strings.Contains(r, tc.want) {
				t.Fatalf("%s → %q (%v), want %s", tc.op, r, err, tc.want)
			}
			if !tc.local && !tc.auth && tc.password != "" {
				// The second refusal closes the connection.
				r, err := call(tc.op)
				if !errors.Is(err, errClose) || !strings.Contains(r, "<unauthorized/>") {
					t.Errorf("second remote unauthorized op: %q, %v; want <unauthorized/> and close", r, err)
				}
			}
		})
	}
}

func TestAuthSequences(t *testing.T) {
	tests := []struct {
		name   string
		pw     string
		steps  func(t *testing.T, cl *client) []byte // returns the last request to check the close on
		closed bool
	}{
		{"repeated auth1 closes", "pw", func(t *testing.T, cl *client) []byte {
			cl.call("<auth1/>")
			return []byte("<boinc_gui_rpc_request>\n<auth1/>\n</boinc_gui_rpc_request>\n")
		}, true},
		{"auth2 without auth1 closes", "pw", func(t *testing.T, cl *client) []byte {
			return []byte("<boinc_gui_rpc_request>\n<auth2>\n<nonce_hash>00</nonce_hash>\n</auth2>\n</boinc_gui_rpc_request>\n")
		}, true},
		{"correct password, then writes allowed", "pw", func(t *testing.T, cl *client) []byte {
			if r := cl.auth("pw"); !strings.Contains(r, "<authorized/>") {
				t.Fatalf("auth: %q", r)
			}
			if r := cl.call("<auth1/>"); !strings.Contains(r, "<nonce>") {
				t.Fatalf("auth1 after auth: %q", r)
			}
			return []byte("<boinc_gui_rpc_request>\n<run_benchmarks/>\n</boinc_gui_rpc_request>\n")
		}, false},
		{"empty password handshake (boinctui)", "", func(t *testing.T, cl *client) []byte {
			if r := cl.auth(""); !strings.Contains(r, "<authorized/>") {
				t.Fatalf("auth: %q", r)
			}
			return []byte("<boinc_gui_rpc_request>\n<run_benchmarks/>\n</boinc_gui_rpc_request>\n")
		}, false},
		{"wrong password answers unauthorized and closes", "pw", func(t *testing.T, cl *client) []byte {
			if r := cl.auth("nope"); !strings.Contains(r, "<unauthorized/>") {
				t.Fatalf("auth: %q", r)
			}
			return []byte("<boinc_gui_rpc_request>\n<get_state/>\n</boinc_gui_rpc_request>\n")
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}, Password: tc.pw})
			cl := dial(t, srv)
			last := tc.steps(t, cl)
			reply, err := cl.roundTrip(last)
			if tc.closed && err == nil {
				t.Fatalf("connection not closed; got %q", reply)
			}
			if !tc.closed && (err != nil || !bytes.Contains(reply, []byte("<success/>"))) {
				t.Fatalf("reply %q, err %v", reply, err)
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}})
	cl := dial(t, srv)
	tests := []struct {
		name, msg, want string
	}{
		{"unknown op", "<boinc_gui_rpc_request>\n<frobnicate/>\n</boinc_gui_rpc_request>\n", "<error>unrecognized op: frobnicate</error>"},
		{"empty", "", "<error>missing request</error>"},
		{"only wrapper", "<boinc_gui_rpc_request>\n</boinc_gui_rpc_request>\n", "<error>missing request</error>"},
		{"plain text", "hello", "<error>missing request</error>"},
		{"unclosed op", "<boinc_gui_rpc_request>\n<get_state", "<error>malformed request"},
		{"bare op without wrapper", "<get_message_count/>", "<seqno>0</seqno>"},
		{"binary junk", "<\x00\xff<<>>&&", "<error>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reply, err := cl.roundTrip([]byte(tc.msg))
			if err != nil {
				t.Fatalf("no reply: %v", err)
			}
			if !strings.HasPrefix(string(reply), "<boinc_gui_rpc_reply>\n"+tc.want) {
				t.Errorf("reply %q, want %q", reply, tc.want)
			}
			checkWellFormed(t, string(reply))
		})
	}
	// The connection survived all of that.
	if r := cl.call("<exchange_versions/>"); !strings.Contains(r, "<major>7</major>") {
		t.Errorf("exchange_versions after bad requests: %q", r)
	}
}

func TestOversizedRequestClosesConnection(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}})
	cl := dial(t, srv)
	big := bytes.Repeat([]byte("x"), MaxRequest+10)
	_ = cl.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := cl.c.Write(big); err != nil {
		t.Fatal(err)
	}
	n, err := cl.r.Read(make([]byte, 10))
	if err == nil || n != 0 {
		t.Fatalf("read after oversized request: %d bytes, err %v; want close", n, err)
	}

	// Exactly MaxRequest bytes is still fine.
	cl2 := dial(t, srv)
	msg := append([]byte("<boinc_gui_rpc_request>\n<get_message_count/>\n</boinc_gui_rpc_request>\n"), bytes.Repeat([]byte(" "), MaxRequest)...)
	msg = msg[:MaxRequest]
	if reply, err := cl2.roundTrip(msg); err != nil || !bytes.Contains(reply, []byte("<seqno>")) {
		t.Fatalf("request of MaxRequest bytes: %q, %v", reply, err)
	}
}

func TestAllowedHosts(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		peer  string
		allow bool
	}{
		{"loopback v4", Config{}, "127.0.0.1", true},
		{"loopback other", Config{}, "127.3.4.5", true},
		{"loopback v6", Config{}, "::1", true},
		{"remote refused", Config{}, "192.0.2.7", false},
		{"allow remote", Config{AllowRemote: true}, "192.0.2.7", true},
		{"listed IP", Config{AllowHosts: []string{"198.51.100.1", "192.0.2.7"}}, "192.0.2.7", true},
		{"listed IPv6", Config{AllowHosts: []string{"2001:db8::1"}}, "2001:db8::1", true},
		{"not listed", Config{AllowHosts: []string{"198.51.100.1"}}, "192.0.2.7", false},
		{"listed name", Config{AllowHosts: []string{"localhost"}}, "127.0.0.1", true},
		{"unresolvable name", Config{AllowHosts: []string{"no-such-host.invalid"}}, "192.0.2.7", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.Resolver = &net.Resolver{PreferGo: true}
			if got := allowed(context.Background(), &cfg, net.ParseIP(tc.peer)); got != tc.allow {
				t.Errorf("allowed(%s) = %v, want %v", tc.peer, got, tc.allow)
			}
		})
	}
}

func TestListenAddr(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{}, "127.0.0.1:31416"},
		{Config{Addr: "127.0.0.1:4000"}, "127.0.0.1:4000"},
		{Config{AllowRemote: true}, ":31416"},
		{Config{AllowHosts: []string{"h"}, Addr: "localhost:5000"}, ":5000"},
		{Config{AllowRemote: true, Addr: "192.0.2.1:31416"}, "192.0.2.1:31416"},
	}
	for _, tc := range tests {
		got, err := listenAddr(tc.cfg)
		if err != nil || got != tc.want {
			t.Errorf("listenAddr(%+v) = %q, %v; want %q", tc.cfg, got, err, tc.want)
		}
	}
	if _, err := listenAddr(Config{Addr: "nonsense"}); err == nil || !strings.Contains(err.Error(), "nonsense") {
		t.Errorf("bad address accepted: %v", err)
	}
	if _, err := Listen(Config{}); err == nil {
		t.Error("Listen without a backend succeeded")
	}
}

// TestConnectionLimit: past MaxConns the connection idle longest is
// closed, never the newcomer (issue 14: whoever knows the password always
// gets in).
func TestConnectionLimit(t *testing.T) {
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}, MaxConns: 1})
	cl := dial(t, srv)
	cl.call("<get_message_count/>") // the first connection is being served
	cl2 := dial(t, srv)
	if r, err := cl2.roundTrip([]byte("<get_message_count/>")); err != nil || !bytes.Contains(r, []byte("<seqno>")) {
		t.Fatalf("newcomer past MaxConns: %q, %v; want served", r, err)
	}
	if _, err := cl.roundTrip([]byte("<get_message_count/>")); err == nil {
		t.Fatal("the connection idle longest was not closed to make room")
	}
}

func TestIdleTimeoutAndClose(t *testing.T) {
	srv, err := Listen(Config{Addr: "127.0.0.1:0", Backend: &fakeBackend{st: richState()}, IdleTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(context.Background()) }()
	cl := dial(t, srv)
	_ = cl.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := cl.r.ReadByte(); err == nil {
		t.Fatal("idle connection not closed")
	}
	open := dial(t, srv) // left open: Close must still return
	_ = open
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("Serve after Close: %v", err)
	}
}

func TestQuitRepliesBeforeActing(t *testing.T) {
	b := &fakeBackend{st: richState()}
	srv := startServer(t, Config{Backend: b})
	cl := dial(t, srv)
	if r := cl.call("<quit/>"); !strings.Contains(r, "<success/>") {
		t.Fatalf("quit: %q", r)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(b.done()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := b.done(); len(got) != 1 || got[0] != (Quit{}) {
		t.Fatalf("actions %+v", got)
	}
}

func TestMessagesFromEventLog(t *testing.T) {
	log := eventlog.New(nil, 3)
	log.SetProjectNamer(func(u string) string {
		if u == testURL {
			return "Fake Project"
		}
		return ""
	})
	l := slog.New(log)
	l.Info("starting boincd")
	l.With("project", testURL).Warn("scheduler request failed", "err", "body has ]]> inside")
	l.With("project", testURL2).Info("fetching master page")
	l.Info("fourth")
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}, Log: log})
	cl := dial(t, srv)
	if r := cl.call("<get_message_count/>"); !strings.Contains(r, "<seqno>4</seqno>") {
		t.Errorf("message count: %q", r)
	}
	r := cl.call("<get_messages>\n<seqno>1</seqno>\n</get_messages>")
	checkWellFormed(t, r)
	var got struct {
		Msgs []struct {
			Project string `xml:"project"`
			Pri     int    `xml:"pri"`
			Seqno   int    `xml:"seqno"`
			Body    string `xml:"body"`
			Time    int64  `xml:"time"`
		} `xml:"msgs>msg"`
	}
	if err := xml.Unmarshal([]byte(r), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{
		// The C++ client's wording and priority (eventlog/formats.go).
		"Fake Project|1|2|\nScheduler request failed: body has ]]> inside\n",
		testURL2 + "|1|3|\nFetching master page\n",
		"|1|4|\nFourth\n",
	}
	if len(got.Msgs) != len(want) {
		t.Fatalf("got %d messages: %s", len(got.Msgs), r)
	}
	for i, m := range got.Msgs {
		if s := fmt.Sprintf("%s|%d|%d|%s", m.Project, m.Pri, m.Seqno, m.Body); s != want[i] {
			t.Errorf("message %d = %q, want %q", i, s, want[i])
		}
		if m.Time < time.Now().Add(-time.Hour).Unix() {
			t.Errorf("message %d time %d", i, m.Time)
		}
	}
	if r := cl.call("<get_cc_status/>"); !strings.Contains(r, "<max_event_log_lines>3</max_event_log_lines>") {
		t.Errorf("max_event_log_lines not the log capacity: %s", r)
	}
}

func TestLoadOrCreatePassword(t *testing.T) {
	dir := t.TempDir()
	pw, err := LoadOrCreatePassword(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(pw) != 32 || strings.Trim(pw, "0123456789abcdef") != "" {
		t.Errorf("generated password %q is not 32 hex digits", pw)
	}
	fi, err := os.Stat(filepath.Join(dir, PasswordFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	again, err := LoadOrCreatePassword(dir)
	if err != nil || again != pw {
		t.Errorf("second load %q, %v; want %q", again, err, pw)
	}

	tests := []struct{ content, want string }{
		{"  secret \nsecond line\n", "secret"},
		{"pass word\r\n", "pass word"},
	}
	for _, tc := range tests {
		d := t.TempDir()
		if err := os.WriteFile(filepath.Join(d, PasswordFile), []byte(tc.content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadOrCreatePassword(d)
		if err != nil || got != tc.want {
			t.Errorf("content %q: got %q, %v; want %q", tc.content, got, err, tc.want)
		}
	}
	if _, err := LoadOrCreatePassword(filepath.Join(dir, "missing", "dir")); err == nil || !strings.Contains(err.Error(), PasswordFile) {
		t.Errorf("unwritable dir: %v", err)
	}
}

func TestBoinccmd(t *testing.T) {
	bin, err := exec.LookPath("boinccmd")
	if err != nil {
		t.Skip("boinccmd not installed")
	}
	const pw = "cmdpass"
	b := &fakeBackend{st: richState()}
	log := eventlog.New(nil, 100)
	log.SetProjectNamer(func(u string) string { return map[string]string{testURL: "Fake Project"}[u] })
	slog.New(log).With("project", testURL).Info("sending scheduler request", "reason", "To fetch work")
	srv := startServer(t, Config{Backend: b, Password: pw, Log: log})
	port := strconv.Itoa(srv.Addr().(*net.TCPAddr).Port)
	run := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--host", "127.0.0.1:" + port, "--passwd", pw}, args...)...)
		cmd.Dir = t.TempDir() // no stray gui_rpc_auth.cfg
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("boinccmd %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--client_version"}, []string{"Client version: 7.20.5"}},
		{[]string{"--get_state"}, []string{
			"name: Fake Project", "master URL: " + testURL, "scheduler RPC pending: yes", "suspended via GUI: yes", "don't request more work: yes",
			"name: refapp", "name: gpuapp", "plan class: cuda", "name: wu_cpu_1",
			"name: task_cpu_running", "name: task_cpu_done", "name: task_gpu_queued",
			"active_task_state: EXECUTING", "fraction done: 0.250000", "resources: 0.5 CPUs + 1 NVIDIA GPU", "ready to report: yes",
			"on_frac:",
		}},
		{[]string{"--get_tasks"}, []string{"name: task_cpu_running", "scheduler state: scheduled", "PID: 4242", "state: downloading", "suspended via GUI: yes"}},
		{[]string{"--get_project_status"}, []string{"name: GPU Project", "name: Fake Project"}},
		{[]string{"--get_cc_status"}, []string{"CPU status", "current mode: always", "perm mode: according to prefs", "perm becomes current in 3600 sec"}},
		{[]string{"--get_host_info"}, []string{"domain name: vm", "#CPUS: 4", "NVIDIA H200"}},
		{[]string{"--get_file_transfers"}, []string{"name: wu_gpu_1_in", "direction: download", "direction: upload", "bytes_xferred: 500000.000000", "xfer active: yes"}},
		{[]string{"--get_disk_usage"}, []string{"master URL: " + testURL2, "disk usage: 0.01MB"}},
		{[]string{"--get_messages", "0"}, []string{"[Fake Project] Sending scheduler request: To fetch work."}},
		{[]string{"--get_message_count"}, []string{"Greatest message sequence number: 1"}},
		{[]string{"--get_notices", "0"}, nil},
		{[]string{"--get_old_tasks"}, []string{"task old_task:", "app name: refapp"}},
		{[]string{"--get_simple_gui_info"}, []string{"name: Fake Project", "name: task_cpu_running"}},
		{[]string{"--set_run_mode", "never", "3600"}, nil},
		{[]string{"--task", testURL, "task_cpu_running", "suspend"}, nil},
		{[]string{"--project", testURL, "update"}, nil},
		{[]string{"--project_attach", "http://NEW.example.org", "key123"}, nil},
		{[]string{"--set_gpu_mode", "auto", "0"}, nil},
		{[]string{"--file_transfer", testURL2, "wu_gpu_1_in", "retry"}, nil},
		{[]string{"--read_global_prefs_override"}, nil},
		{[]string{"--read_cc_config"}, nil},
		{[]string{"--run_benchmarks"}, nil},
		{[]string{"--network_available"}, nil},
		{[]string{"--quit"}, nil},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out := run(tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	wantActions := []Action{
		SetMode{Which: "run", Mode: ModeNever, Duration: 3600},
		ResultOp{URL: testURL, Name: "task_cpu_running", Op: ResultSuspend},
		ProjectOp{URL: testURL, Op: ProjectUpdate},
		Attach{URL: "http://new.example.org/", Authenticator: "key123"},
		SetMode{Which: "gpu", Mode: ModeAuto},
		TransferOp{URL: testURL2, File: "wu_gpu_1_in", Op: TransferRetry},
		ReadPrefsOverride{}, ReadCCConfig{}, RunBenchmarks{}, NetworkAvailable{}, Quit{},
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(b.done()) < len(wantActions) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond) // quit acts after its reply
	}
	if got := b.done(); fmt.Sprint(got) != fmt.Sprint(wantActions) {
		t.Errorf("actions %+v, want %+v", got, wantActions)
	}

	// A wrong password: boinccmd reports the authorization failure.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--host", "127.0.0.1:"+port, "--passwd", "wrong", "--get_state")
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Authorization failure: -155") {
		t.Errorf("wrong password: err %v, output %s", err, out)
	}
}

func TestLoadRemoteHosts(t *testing.T) {
	dir := t.TempDir()
	if hosts, err := LoadRemoteHosts(dir); err != nil || hosts != nil {
		t.Fatalf("missing file: %v, %v", hosts, err)
	}
	content := "# comment\n; other comment\n\n 192.0.2.7 \nmanager.example.org\r\n"
	if err := os.WriteFile(filepath.Join(dir, RemoteHostsFile), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts, err := LoadRemoteHosts(dir)
	if err != nil || fmt.Sprint(hosts) != "[192.0.2.7 manager.example.org]" {
		t.Fatalf("hosts %q, %v", hosts, err)
	}
}
