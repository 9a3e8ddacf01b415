package client

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

const fixturePassword = "refguipass"

func dialReplay(t *testing.T, s *replayServer) *Client {
	t.Helper()
	c, err := Dial(context.Background(), s.addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestFixtures replays each captured boinccmd session: auth1/auth2 with the
// capture's nonce, then the op. The requests must match what boinccmd sent
// (byte for byte where boinccmd's framing is the standard one) and the
// parsed replies must carry the captured values.
func TestFixtures(t *testing.T) {
	utc := func(sec int64) time.Time { return time.Unix(sec, 0) }
	tests := []struct {
		name string
		// exact: our request bytes equal the capture's. boinccmd sends
		// get_host_info and get_message_count without the newline
		// before the closing envelope; those are compared by op only.
		exact bool
		check func(t *testing.T, ctx context.Context, c *Client)
	}{
		{"exchange_versions", false, func(t *testing.T, ctx context.Context, c *Client) {
			v, err := c.ExchangeVersions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v != (Version{7, 20, 5}) || v.String() != "7.20.5" {
				t.Errorf("version %v", v)
			}
		}},
		{"get_state", true, func(t *testing.T, ctx context.Context, c *Client) {
			st, err := c.GetState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if st.CoreClientVersion != (Version{7, 20, 5}) || st.PlatformName != "x86_64-pc-linux-gnu" {
				t.Errorf("version %v platform %q", st.CoreClientVersion, st.PlatformName)
			}
			if st.HostInfo.PNCPUs != 2 || st.HostInfo.DomainName != "vm" {
				t.Errorf("host %+v", st.HostInfo)
			}
			if len(st.Projects) != 1 {
				t.Fatalf("%d projects", len(st.Projects))
			}
			p := st.Projects[0]
			if p.ProjectName != "BOINC Reference Fake Project" || p.MasterURL != "http://127.0.0.1:18080/" || p.UserName != "refuser" || p.HostID != 1 {
				t.Errorf("project %+v", p)
			}
			if !p.SchedulerRPCInProgress || p.SuspendedViaGUI || p.DontRequestMoreWork {
				t.Errorf("flags in progress=%v suspended=%v nomore=%v", p.SchedulerRPCInProgress, p.SuspendedViaGUI, p.DontRequestMoreWork)
			}
			if len(p.RscBackoffs) != 1 || p.RscBackoffs[0].Resource != "CPU" || !p.RscBackoffs[0].Until.IsZero() {
				t.Errorf("backoffs %+v", p.RscBackoffs)
			}
			if len(st.Apps) != 1 || st.Apps[0].ProjectURL != p.MasterURL || st.Apps[0].UserFriendlyName != "Reference sleeper app" {
				t.Errorf("apps %+v", st.Apps)
			}
			if len(st.AppVersions) != 1 || st.AppVersions[0].VersionNum != 100 || st.AppVersions[0].Files[0] != "refapp_1.00_x86_64-pc-linux-gnu.sh" {
				t.Errorf("app versions %+v", st.AppVersions)
			}
			if len(st.Results) != 1 {
				t.Fatalf("%d results", len(st.Results))
			}
			r := st.Results[0]
			if r.Name != "refwu_1795268541_1_0" || r.AppName != "refapp" || r.State != boinc.ResultFilesDownloaded || !r.HasActiveTask || r.ActiveTaskState != boinc.TaskSuspended {
				t.Errorf("result %+v", r)
			}
			if !st.HaveGlobalPrefs || st.GlobalPrefs.WorkBufAdditionalDays != 0.5 {
				t.Errorf("prefs %+v", st.GlobalPrefs)
			}
		}},
		{"get_state_2executing_1downloading", true, func(t *testing.T, ctx context.Context, c *Client) {
			st, err := c.GetState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Workunits) != 3 || len(st.Results) != 3 {
				t.Fatalf("%d workunits, %d results", len(st.Workunits), len(st.Results))
			}
			if st.Workunits[0].CommandLine != "--seconds 90" || st.Workunits[0].RscFpopsEst != 9e10 {
				t.Errorf("wu %+v", st.Workunits[0])
			}
			want := []struct {
				state boinc.ResultState
				task  boinc.ActiveTaskState
				slot  int
				pid   int
			}{{boinc.ResultFilesDownloaded, boinc.TaskExecuting, 0, 15498}, {boinc.ResultFilesDownloaded, boinc.TaskExecuting, 1, 15543}, {boinc.ResultFilesDownloading, boinc.TaskUninitialized, -1, 0}}
			for i, w := range want {
				r := st.Results[i]
				if r.State != w.state || r.ActiveTaskState != w.task || r.Slot != w.slot || r.PID != w.pid {
					t.Errorf("result %d: state %v task %v slot %d pid %d, want %+v", i, r.State, r.ActiveTaskState, r.Slot, r.PID, w)
				}
			}
			if got := st.Results[0].ElapsedTime; got != 11028783*time.Microsecond {
				t.Errorf("elapsed %v", got)
			}
			if got := st.Results[2].EstimatedCPUTimeRemaining; got != 88904378*time.Microsecond {
				t.Errorf("remaining %v", got)
			}
			if got := st.Projects[0].MinRPCTime; got.Unix() != 1795268069 {
				t.Errorf("min_rpc_time %v", got)
			}
		}},
		{"get_results", true, func(t *testing.T, ctx context.Context, c *Client) {
			rs, err := c.GetResults(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 {
				t.Fatalf("%d results", len(rs))
			}
			a, b := rs[0], rs[1]
			if a.Name != "refwu_1795268541_1_0" || a.WUName != "refwu_1795268541_1" || a.ProjectURL != "http://127.0.0.1:18080/" {
				t.Errorf("first %+v", a)
			}
			if !a.HasActiveTask || a.ActiveTaskState != boinc.TaskSuspended || a.SchedulerState != boinc.SchedScheduled || a.Slot != 0 || a.PID != 6508 || a.FractionDone != 0 {
				t.Errorf("first active task %+v", a)
			}
			if !a.ReportDeadline.Equal(utc(1795873355)) {
				t.Errorf("deadline %v", a.ReportDeadline)
			}
			if b.HasActiveTask || b.State != boinc.ResultNew || b.Slot != -1 || b.EstimatedCPUTimeRemaining != 30*time.Second {
				t.Errorf("second %+v", b)
			}
		}},
		{"get_results_2executing", true, func(t *testing.T, ctx context.Context, c *Client) {
			rs, err := c.GetResults(ctx, false)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) != 2 || rs[0].ActiveTaskState != boinc.TaskExecuting || rs[1].ActiveTaskState != boinc.TaskExecuting || rs[1].Slot != 1 {
				t.Fatalf("results %+v", rs)
			}
		}},
		{"get_project_status", true, func(t *testing.T, ctx context.Context, c *Client) {
			ps, err := c.GetProjectStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 1 || ps[0].ProjectName != "BOINC Reference Fake Project" || ps[0].ResourceShare != 100 || ps[0].DiskUsage != 28672 {
				t.Fatalf("projects %+v", ps)
			}
			if ps[0].MinRPCTime.Unix() != 1795268568 || ps[0].NRPCFailures != 0 || ps[0].SchedulerRPCInProgress {
				t.Errorf("project %+v", ps[0])
			}
		}},
		{"get_project_status_after", true, func(t *testing.T, ctx context.Context, c *Client) {
			ps, err := c.GetProjectStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(ps) != 1 {
				t.Fatalf("projects %+v", ps)
			}
		}},
		{"get_cc_status", true, func(t *testing.T, ctx context.Context, c *Client) {
			cc, err := c.GetCCStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cc.NetworkStatus != NetworkWantDisconnect || cc.TaskSuspendReason != boinc.SuspendCPUUsage || cc.TaskMode != boinc.RunModeAuto || cc.MaxEventLogLines != 2000 {
				t.Errorf("cc %+v", cc)
			}
			if cc.TaskSuspendReason.String() != "CPU is busy" || cc.NetworkStatus.String() != "don't need connection" {
				t.Errorf("words %q %q", cc.TaskSuspendReason, cc.NetworkStatus)
			}
		}},
		{"get_cc_status_always", true, func(t *testing.T, ctx context.Context, c *Client) {
			cc, err := c.GetCCStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cc.TaskMode != boinc.RunModeAlways || cc.TaskModePerm != boinc.RunModeAuto || cc.TaskModeDelay < 3599*time.Second || cc.TaskSuspendReason != 0 {
				t.Errorf("cc %+v", cc)
			}
		}},
		{"get_cc_status_suspended", true, func(t *testing.T, ctx context.Context, c *Client) {
			cc, err := c.GetCCStatus(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if cc.TaskMode != boinc.RunModeNever || cc.TaskSuspendReason.String() != "user request" {
				t.Errorf("cc %+v", cc)
			}
		}},
		{"get_messages", true, func(t *testing.T, ctx context.Context, c *Client) {
			ms, err := c.GetMessages(ctx, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 194 || ms[0].Seqno != 1 || ms[193].Seqno != 194 {
				t.Fatalf("%d messages", len(ms))
			}
			if ms[0].Body != "Starting BOINC client version 7.20.5 for x86_64-pc-linux-gnu" || ms[0].Project != "" || ms[0].Pri != MsgInfo || ms[0].Time.Unix() != 1795268541 {
				t.Errorf("first %+v", ms[0])
			}
			var sched int
			for _, m := range ms {
				if m.Project == "BOINC Reference Fake Project" && strings.HasPrefix(m.Body, "Scheduler request completed") {
					sched++
				}
			}
			if sched != 4 {
				t.Errorf("%d scheduler-completed messages, want 4", sched)
			}
		}},
		{"get_message_count", false, func(t *testing.T, ctx context.Context, c *Client) {
			n, err := c.GetMessageCount(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n != 216 {
				t.Errorf("count %d", n)
			}
		}},
		{"get_file_transfers", true, func(t *testing.T, ctx context.Context, c *Client) {
			fs, err := c.GetFileTransfers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(fs) != 0 {
				t.Errorf("transfers %+v", fs)
			}
		}},
		{"get_host_info", false, func(t *testing.T, ctx context.Context, c *Client) {
			h, err := c.GetHostInfo(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if h.PNCPUs != 2 || h.OSName != "Linux Debian" || h.MNBytes != 25276502016 || h.HostCPID != "dfd539091bf33cecbe163d62f5a1f9e1" || len(h.Coprocs) != 0 {
				t.Errorf("host %+v", h)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReplay(t, fixtureFrames(t, tt.name+".s2c.bin"))
			c := dialReplay(t, s)
			ctx := context.Background()
			if err := c.Authorize(ctx, fixturePassword); err != nil {
				t.Fatal(err)
			}
			tt.check(t, ctx, c)
			want := fixtureFrames(t, tt.name+".c2s.bin")
			got := s.received()
			if len(got) != len(want) {
				t.Fatalf("sent %d requests, capture has %d", len(got), len(want))
			}
			// auth1 and auth2 (whose hash depends on the capture's
			// nonce and password) always match byte for byte.
			for i := range got {
				if (i < 2 || tt.exact) && got[i] != string(want[i]) {
					t.Errorf("request %d:\n got %q\nwant %q", i, got[i], want[i])
				}
				if opName(strings.TrimPrefix(got[i], "<boinc_gui_rpc_request>\n")) != opName(strings.TrimPrefix(string(want[i]), "<boinc_gui_rpc_request>\n")) {
					t.Errorf("request %d: op differs: %q vs %q", i, got[i], want[i])
				}
			}
		})
	}
}

func TestWrongPassword(t *testing.T) {
	s := startReplay(t, fixtureFrames(t, "auth_wrong_password.s2c.bin"))
	c := dialReplay(t, s)
	err := c.Authorize(context.Background(), "not-the-password")
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("err = %v, want ErrUnauthorized", err)
	}
	if !strings.Contains(err.Error(), "auth2") || !strings.Contains(err.Error(), s.addr()) {
		t.Errorf("error does not name op and address: %v", err)
	}
}

// TestUnauthorizedLocal replays probes made without auth: control ops are
// refused, read-only ones work.
func TestUnauthorizedLocal(t *testing.T) {
	ctx := context.Background()
	t.Run("set_run_mode", func(t *testing.T) {
		s := startReplay(t, fixtureFrames(t, "unauthorized_set_run_mode.s2c.bin"))
		c := dialReplay(t, s)
		_, err := c.Call(ctx, "<set_run_mode>\n<never/>\n<duration>0</duration>\n</set_run_mode>")
		if !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("set_run_mode err = %v", err)
		}
		rs, err := c.GetResults(ctx, false)
		if err != nil || len(rs) != 0 {
			t.Fatalf("get_results = %v, %v", rs, err)
		}
		ms, err := c.GetMessages(ctx, 0)
		if err != nil || len(ms) != 40 {
			t.Fatalf("get_messages = %d, %v", len(ms), err)
		}
		want := fixtureFrames(t, "unauthorized_set_run_mode.c2s.bin")
		if got := s.received(); got[0] != string(want[0]) || got[1] != string(want[1]) {
			t.Errorf("requests differ:\n%q\n%q", got[:2], want[:2])
		}
	})
	t.Run("get_state", func(t *testing.T) {
		s := startReplay(t, fixtureFrames(t, "unauthorized_get_state.s2c.bin"))
		c := dialReplay(t, s)
		v, err := c.ExchangeVersions(ctx)
		if err != nil || v != (Version{7, 20, 5}) {
			t.Fatalf("exchange_versions = %v, %v", v, err)
		}
		st, err := c.GetState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Projects) != 1 || len(st.Results) != 0 || len(st.AppVersions) != 1 {
			t.Errorf("state: %d projects %d results %d versions", len(st.Projects), len(st.Results), len(st.AppVersions))
		}
		cc, err := c.GetCCStatus(ctx)
		if err != nil || cc.NetworkStatus != NetworkOnline {
			t.Fatalf("cc = %+v, %v", cc, err)
		}
	})
}

func frame(body string) []byte {
	return []byte("<boinc_gui_rpc_reply>\n" + body + "\n</boinc_gui_rpc_reply>\n\003")
}

func TestErrorReplies(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		reply   []byte
		call    func(c *Client) error
		wantErr string
		is      error
	}{
		{"rpc error", frame("<error>No such project</error>"), func(c *Client) error {
			_, err := c.Call(ctx, "<project_update>\n  <project_url>http://x/</project_url>\n</project_update>")
			var re *RPCError
			if errors.As(err, &re) && (re.Op != "project_update" || re.Msg != "No such project") {
				t.Errorf("RPCError %+v", re)
			}
			return err
		}, "project_update: No such project", nil},
		{"unauthorized", frame("<unauthorized/>"), func(c *Client) error {
			_, err := c.GetState(ctx)
			return err
		}, "get_state", ErrUnauthorized},
		{"no envelope", []byte("HTTP/1.1 400 Bad Request\r\n\r\n\003"), func(c *Client) error {
			_, err := c.GetState(ctx)
			return err
		}, "does not start with <boinc_gui_rpc_reply>", nil},
		{"no close tag", []byte("<boinc_gui_rpc_reply>\n<results>\n\003"), func(c *Client) error {
			_, err := c.GetResults(ctx, false)
			return err
		}, "has no </boinc_gui_rpc_reply>", nil},
		{"bad number", frame("<results>\n<result>\n<name>a</name>\n<active_task>\n<fraction_done>half</fraction_done>\n</active_task>\n</result>\n</results>"), func(c *Client) error {
			_, err := c.GetResults(ctx, false)
			return err
		}, `<result> #1: <fraction_done>: "half" is not a number`, nil},
		{"missing container", frame("<success/>"), func(c *Client) error {
			_, err := c.GetProjectStatus(ctx)
			return err
		}, "reply has no <projects>", nil},
		{"bad xml", frame("<msgs>\n<msg>\n<body>x"), func(c *Client) error {
			_, err := c.GetMessages(ctx, 0)
			return err
		}, "get_messages reply from", nil},
		{"closed mid-reply", []byte("<boinc_gui_rpc_reply>\n<cc_status>"), func(c *Client) error {
			_, err := c.GetCCStatus(ctx)
			return err
		}, "read reply", nil},
		{"bad message count", frame("<seqno>many</seqno>"), func(c *Client) error {
			_, err := c.GetMessageCount(ctx)
			return err
		}, `<seqno>: "many" is not an integer`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startReplay(t, [][]byte{tt.reply})
			c := dialReplay(t, s)
			err := tt.call(c)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not contain %q", err, tt.wantErr)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
		})
	}
}

func TestBrokenAfterFailure(t *testing.T) {
	s := startReplay(t, [][]byte{[]byte("<boinc_gui_rpc_reply>\n")}) // partial, then hang-up
	c := dialReplay(t, s)
	ctx := context.Background()
	if _, err := c.GetCCStatus(ctx); err == nil {
		t.Fatal("no error on truncated reply")
	}
	if _, err := c.GetCCStatus(ctx); !errors.Is(err, ErrBroken) {
		t.Fatalf("second call err = %v, want ErrBroken", err)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	s := startReplay(t, [][]byte{frame("<cc_status>\n</cc_status>")})
	s.gotRequest = make(chan string, 1)
	s.release = make(chan struct{})
	c := dialReplay(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.gotRequest
		cancel()
	}()
	_, err := c.GetCCStatus(ctx)
	close(s.release)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if _, err := c.GetCCStatus(context.Background()); !errors.Is(err, ErrBroken) {
		t.Fatalf("after cancel err = %v, want ErrBroken", err)
	}
}

func TestDialRefused(t *testing.T) {
	s := startReplay(t, nil)
	addr := s.addr()
	_ = s.ln.Close()
	_, err := Dial(context.Background(), addr)
	if err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err = %v, want one naming %s", err, addr)
	}
}

func TestNormalizeAddr(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "127.0.0.1:31416"},
		{"localhost", "localhost:31416"},
		{"10.0.0.2:1234", "10.0.0.2:1234"},
		{"::1", "[::1]:31416"},
		{"[::1]", "[::1]:31416"},
		{"[::1]:9", "[::1]:9"},
	}
	for _, tt := range tests {
		if got := NormalizeAddr(tt.in); got != tt.want {
			t.Errorf("NormalizeAddr(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSyntheticForms covers shapes the captures lack: both boolean
// spellings, running transfers, GPUs, per-resource backoffs and bytes
// that are not UTF-8.
func TestSyntheticForms(t *testing.T) {
	ctx := context.Background()
	projects := frame(`<projects>
<project>
    <master_url>https://example.org/p/</master_url>
    <project_name>Caf` + "\xe9" + ` &amp; Co</project_name>
    <nrpc_failures>3</nrpc_failures>
    <min_rpc_time>1795268600.5</min_rpc_time>
    <suspended_via_gui/>
    <dont_request_more_work>1</dont_request_more_work>
    <detach_when_done>0</detach_when_done>
    <rsc_backoff_time>
        <name>CPU</name>
        <value>1795269000.000000</value>
    </rsc_backoff_time>
    <rsc_backoff_interval>
        <name>CPU</name>
        <value>600.000000</value>
    </rsc_backoff_interval>
    <rsc_backoff_time>
        <name>NVIDIA</name>
        <value>0.000000</value>
    </rsc_backoff_time>
    <no_rsc_apps>NVIDIA</no_rsc_apps>
    <gui_urls>
        <gui_url><name>Home</name><url>https://example.org/</url></gui_url>
    </gui_urls>
</project>
</projects>`)
	transfers := frame(`<file_transfers>
<file_transfer>
    <project_url>https://example.org/p/</project_url>
    <project_name>P</project_name>
    <name>out_0</name>
    <nbytes>2048.000000</nbytes>
    <max_nbytes>0.000000</max_nbytes>
    <status>0</status>
    <persistent_file_xfer>
        <num_retries>2</num_retries>
        <first_request_time>1795268000.000000</first_request_time>
        <next_request_time>1795268900.000000</next_request_time>
        <time_so_far>12.000000</time_so_far>
        <last_bytes_xferred>100.000000</last_bytes_xferred>
        <is_upload>1</is_upload>
    </persistent_file_xfer>
    <file_xfer>
        <bytes_xferred>1024.000000</bytes_xferred>
        <file_offset>0.000000</file_offset>
        <xfer_speed>512.000000</xfer_speed>
        <url>https://example.org/upload</url>
    </file_xfer>
</file_transfer>
<file_transfer>
    <name>in_1</name>
    <nbytes>10.000000</nbytes>
    <persistent_file_xfer>
        <num_retries>0</num_retries>
        <last_bytes_xferred>5.000000</last_bytes_xferred>
    </persistent_file_xfer>
</file_transfer>
</file_transfers>`)
	host := frame(`<host_info>
    <p_ncpus>8</p_ncpus>
    <wsl_available>0</wsl_available>
    <docker_version>4.9.3</docker_version>
    <docker_type>2</docker_type>
    <coprocs>
<coproc_cuda>
   <count>2</count>
   <name>NVIDIA H200</name>
   <peak_flops>1e14</peak_flops>
</coproc_cuda>
<coproc_intel_gpu>
   <count>1</count>
   <name>Intel UHD</name>
</coproc_intel_gpu>
    </coprocs>
</host_info>`)
	s := startReplay(t, [][]byte{projects, transfers, host})
	c := dialReplay(t, s)

	ps, err := c.GetProjectStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.ProjectName != "Caf\uFFFD & Co" || !p.SuspendedViaGUI || !p.DontRequestMoreWork || p.DetachWhenDone || p.NRPCFailures != 3 {
		t.Errorf("project %+v", p)
	}
	if p.MinRPCTime.UnixMilli() != 1795268600500 {
		t.Errorf("min_rpc_time %v", p.MinRPCTime)
	}
	if len(p.RscBackoffs) != 2 || p.RscBackoffs[0] != (RscBackoff{"CPU", time.Unix(1795269000, 0), 10 * time.Minute}) || p.RscBackoffs[1].Resource != "NVIDIA" || !p.RscBackoffs[1].Until.IsZero() {
		t.Errorf("backoffs %+v", p.RscBackoffs)
	}
	if got := p.NoRsc["apps"]; len(got) != 1 || got[0] != "NVIDIA" {
		t.Errorf("no_rsc %v", p.NoRsc)
	}

	fs, err := c.GetFileTransfers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fs) != 2 {
		t.Fatalf("%d transfers", len(fs))
	}
	up := fs[0]
	if !up.IsUpload || !up.Active || up.NumRetries != 2 || up.BytesXferred != 1024 || up.XferSpeed != 512 || up.NBytes != 2048 || up.NextRequestTime.Unix() != 1795268900 || up.TimeSoFar != 12*time.Second {
		t.Errorf("upload %+v", up)
	}
	if down := fs[1]; down.IsUpload || down.Active || down.BytesXferred != 5 {
		t.Errorf("download %+v", down)
	}

	h, err := c.GetHostInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Coprocs) != 2 || h.Coprocs[0] != (Coproc{"NVIDIA", 2, "NVIDIA H200", 1e14}) || h.Coprocs[1].Type != "intel_gpu" {
		t.Errorf("coprocs %+v", h.Coprocs)
	}
	if h.DockerVersion != "4.9.3" || h.DockerType != 2 {
		t.Errorf("container engine %q type %d, want 4.9.3 type 2", h.DockerVersion, h.DockerType)
	}
}

func TestCloseUnblocksCall(t *testing.T) {
	s := startReplay(t, [][]byte{frame("<cc_status>\n</cc_status>")})
	s.gotRequest = make(chan string, 1)
	s.release = make(chan struct{})
	c := dialReplay(t, s)
	go func() {
		<-s.gotRequest
		_ = c.Close()
	}()
	_, err := c.GetCCStatus(context.Background())
	close(s.release)
	if err == nil {
		t.Fatal("call survived Close")
	}
	if _, err := c.GetCCStatus(context.Background()); !errors.Is(err, ErrBroken) {
		t.Fatalf("after Close err = %v, want ErrBroken", err)
	}
}
