package guirpc

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/boincd/boincd/boinc"
)

// cppOps is the op table of the current C++ client (client/
// gui_rpc_server_ops.cpp, gui_rpcs[], 8.x), without the auth handshake
// (auth1, auth2) the server handles itself. noAuth marks the ops it
// allows a local connection that has not authenticated. A tool that
// works with the C++ client must find every one of them here: an op
// missing from boincd's table fails this test.
var cppOps = map[string]bool{
	"exchange_versions": true, "get_all_projects_list": true, "get_cc_status": true,
	"get_disk_usage": true, "get_daily_xfer_history": true, "get_file_transfers": true,
	"get_host_info": true, "get_messages": true, "get_message_count": true,
	"get_newer_version": true, "get_notices_public": true, "get_old_results": true,
	"get_project_status": true, "get_results": true, "get_screensaver_tasks": true,
	"get_simple_gui_info": true, "get_state": true, "get_statistics": true,
	"run_graphics_app": true,

	"get_notices": false, "get_project_init_status": false, "report_device_status": false,
	"set_language": false, "abort_file_transfer": false, "abort_result": false,
	"acct_mgr_info": false, "get_cc_config": false, "get_app_config": false,
	"get_global_prefs_file": false, "get_global_prefs_override": false,
	"get_global_prefs_working": false, "get_proxy_settings": false,
	"network_available": false, "project_allowmorework": false, "project_detach": false,
	"project_detach_when_done": false, "project_dont_detach_when_done": false,
	"project_nomorework": false, "project_resume": false, "project_suspend": false,
	"quit": false, "read_cc_config": false, "read_global_prefs_override": false,
	"resume_result": false, "run_benchmarks": false, "set_app_config": false,
	"set_cc_config": false, "set_global_prefs_override": false, "set_gpu_mode": false,
	"set_host_info": false, "reset_host_info": false, "set_network_mode": false,
	"set_proxy_settings": false, "set_run_mode": false, "suspend_result": false,

	// "enable network" ops (PROTOCOLS.md §5.2).
	"acct_mgr_rpc": false, "acct_mgr_rpc_poll": false, "create_account": false,
	"create_account_poll": false, "get_project_config": false, "get_project_config_poll": false,
	"lookup_account": false, "lookup_account_poll": false, "project_attach": false,
	"project_attach_poll": false, "project_reset": false, "project_update": false,
	"retry_file_transfer": false,
}

func TestOpTableMatchesCPlusPlusClient(t *testing.T) {
	var missing, extra, authDiff []string
	for op, noAuth := range cppOps {
		h, ok := ops[op]
		switch {
		case !ok:
			missing = append(missing, op)
		case h.noAuth != noAuth:
			authDiff = append(authDiff, op)
		}
	}
	for op := range ops {
		if _, ok := cppOps[op]; !ok {
			extra = append(extra, op)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	slices.Sort(authDiff)
	if len(missing)+len(extra)+len(authDiff) > 0 {
		t.Errorf("op table differs from the C++ client's:\n missing: %v\n not in the C++ client: %v\n auth rule differs: %v", missing, extra, authDiff)
	}
	if len(cppOps) != 68 {
		t.Errorf("cppOps lists %d ops, want 68", len(cppOps))
	}
}

// fileBackend serves ReadConfigFile from files and records every action.
type fileBackend struct {
	fakeBackend
	fmu   sync.Mutex
	files map[string][]byte // "cc" or the project URL
}

func (b *fileBackend) Do(ctx context.Context, a Action) error {
	if r, ok := a.(ReadConfigFile); ok {
		b.fmu.Lock()
		defer b.fmu.Unlock()
		key := "cc"
		if r.File == AllProjectsList {
			key = "apl"
		}
		if r.File == AppConfig {
			if r.URL != "http://p.example/" {
				return ErrNoSuchProject
			}
			key = r.URL
		}
		*r.Out = b.files[key]
		return nil
	}
	return b.fakeBackend.Do(ctx, a)
}

func TestSettingsOps(t *testing.T) {
	st := richState()
	st.Proxy = boinc.ProxyInfo{UseHTTPProxy: true, HTTPServerName: "proxy.lan", HTTPServerPort: 3128, NoProxy: "intranet"}
	b := &fileBackend{fakeBackend: fakeBackend{st: st}, files: map[string][]byte{
		"cc":                []byte("<cc_config>\n<options><ncpus>1</ncpus></options>\n</cc_config>\n\003"),
		"http://p.example/": []byte("<app_config><app><name>a</name><max_concurrent>1</max_concurrent></app></app_config>"),
		"apl":               []byte("<?xml version=\"1.0\"?>\n<projects>\n<project><name>Einstein@Home</name></project>\n</projects>\n"),
	}}
	srv := startServer(t, Config{Backend: b})
	cl := dial(t, srv)
	cases := []struct {
		req    string
		want   []string // substrings of the reply, in order
		action Action   // the action carried out, nil for none
	}{
		{"<get_proxy_settings/>", []string{"<proxy_info>\n    <use_http_proxy/>\n", "<http_server_name>proxy.lan</http_server_name>", "<http_server_port>3128</http_server_port>", "<no_proxy>intranet</no_proxy>"}, nil},
		{"<set_proxy_settings>\n<proxy_info>\n<use_socks_proxy/>\n<socks_server_name>socks.lan</socks_server_name>\n<socks_server_port>1080</socks_server_port>\n<socks5_user_name>u</socks5_user_name>\n<no_proxy>a.org, b.org</no_proxy>\n</proxy_info>\n</set_proxy_settings>",
			[]string{"<success/>"}, SetProxy{boinc.ProxyInfo{UseSOCKSProxy: true, SOCKSServerName: "socks.lan", SOCKSServerPort: 1080, HTTPServerPort: 80, SOCKS5UserName: "u", NoProxy: "a.org, b.org"}}},
		{"<set_proxy_settings>\n<proxy_info>\n<http_server_port>99999</http_server_port>\n</proxy_info>\n</set_proxy_settings>", []string{"<error>proxy_info: &lt;http_server_port&gt;99999"}, nil},
		{"<set_proxy_settings/>", []string{"<error>Missing proxy_info</error>"}, nil},
		{"<set_host_info>\n<host_info>\n<product_name>Pixel 7</product_name>\n</host_info>\n</set_host_info>", []string{"<success/>"}, SetHostInfo{ProductName: "Pixel 7"}},
		{"<set_host_info/>", []string{"<error>Missing host_info</error>"}, nil},
		{"<reset_host_info/>", []string{"<success/>"}, ResetHostInfo{}},
		{"<get_cc_config/>", []string{"<cc_config>\n<options><ncpus>1</ncpus></options>\n</cc_config>\n</boinc_gui_rpc_reply>"}, nil},
		{"<set_cc_config>\n<cc_config>\n<options><ncpus>2</ncpus></options>\n</cc_config>\n</set_cc_config>", []string{"<success/>"},
			WriteConfigFile{File: CCConfig, XML: "<cc_config>\n<options><ncpus>2</ncpus></options>\n</cc_config>"}},
		{"<set_cc_config>\n<cc_config>\n<options><ncpus>2</options>\n</cc_config>\n</set_cc_config>", []string{"<error>cc_config: XML syntax error on line 2: element &lt;ncpus&gt; closed by &lt;/options&gt;</error>"}, nil},
		{"<set_cc_config/>", []string{"<error>No cc_config.xml data is present</error>"}, nil},
		{"<get_app_config>\n<url>http://p.example</url>\n</get_app_config>", []string{"<app_config><app><name>a</name>"}, nil},
		{"<get_app_config>\n<url>http://other.example/</url>\n</get_app_config>", []string{"<error>no such project</error>"}, nil},
		{"<set_app_config>\n<url>http://p.example/</url>\n<app_config>\n<project_max_concurrent>2</project_max_concurrent>\n</app_config>\n</set_app_config>", []string{"<success/>"},
			WriteConfigFile{File: AppConfig, URL: "http://p.example/", XML: "<app_config>\n<project_max_concurrent>2</project_max_concurrent>\n</app_config>"}},
		{"<set_app_config>\n<url>http://p.example/</url>\n</set_app_config>", []string{"<error>bad URL or app_config</error>"}, nil},
		{"<set_language>\n<language>de_DE</language>\n</set_language>", []string{"<success/>"}, SetLanguage{Language: "de_DE"}},
		{"<report_device_status>\n<device_status>\n<on_ac_power>1</on_ac_power>\n<battery_charge_pct>55.5</battery_charge_pct>\n<user_active>0</user_active>\n<device_name>tab</device_name>\n</device_status>\n</report_device_status>",
			[]string{"<success/>"}, ReportDeviceStatus{DeviceStatus{OnACPower: true, BatteryChargePct: 55.5, DeviceName: "tab"}}},
		{"<run_graphics_app>\n<slot>0</slot>\n</run_graphics_app>", []string{"<error>boincd runs as a headless service"}, nil},
		{"<get_all_projects_list/>", []string{"<boinc_gui_rpc_reply>\n<projects>\n<project><name>Einstein@Home</name></project>\n</projects>\n</boinc_gui_rpc_reply>"}, nil},
		{"<get_screensaver_tasks/>", []string{"<handle_get_screensaver_tasks>\n    <suspend_reason>0</suspend_reason>\n", "</handle_get_screensaver_tasks>"}, nil},
		{"<acct_mgr_rpc>\n<url>http://am.example/</url>\n<name>N</name>\n<password>p</password>\n</acct_mgr_rpc>", []string{"<success/>"},
			AcctMgrRPC{URL: "http://am.example/", Name: "N", PasswordHash: "ded0804cf804b6d26e37953dc2dbc505"}},
	}
	for _, c := range cases {
		before := len(b.done())
		reply := cl.call(c.req)
		at := 0
		for _, w := range c.want {
			i := strings.Index(reply[at:], w)
			if i < 0 {
				t.Errorf("%s\nreply %q\nlacks %q (after byte %d)", c.req, reply, w, at)
				break
			}
			at += i + len(w)
		}
		got := b.done()[before:]
		switch {
		case c.action == nil && len(got) > 0:
			t.Errorf("%s: actions %+v, want none", c.req, got)
		case c.action != nil && (len(got) != 1 || !reflect.DeepEqual(got[0], c.action)):
			t.Errorf("%s: actions %+v, want %+v", c.req, got, c.action)
		}
	}
}

// TestScreensaverTasksAreScheduledOnes: only tasks scheduled to run now.
func TestScreensaverTasksAreScheduledOnes(t *testing.T) {
	st := richState()
	var running, other int
	for i := range st.Results {
		if a := st.Results[i].Active; a != nil && a.SchedulerState == 2 {
			running++
		} else {
			other++
		}
	}
	if running == 0 || other == 0 {
		t.Fatalf("richState has %d running and %d other tasks; the test needs both", running, other)
	}
	w := &xw{}
	opScreensaverTasks(nil, st, nil, w)
	if n := strings.Count(w.String(), "<result>"); n != running {
		t.Errorf("%d results, want the %d scheduled ones:\n%s", n, running, w.String())
	}
}

func TestUnknownOpIsLogged(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	h := slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug})
	srv := startServer(t, Config{Backend: &fakeBackend{st: richState()}, Logger: slog.New(h)})
	cl := dial(t, srv)
	if r := cl.call("<frobnicate/>"); !strings.Contains(r, "<error>unrecognized op: frobnicate</error>") {
		t.Fatalf("reply %q", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(buf.String(), "unrecognized op") || !strings.Contains(buf.String(), "op=frobnicate") {
		t.Errorf("unknown op not logged with its name:\n%s", buf.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func TestProxyInfoRoundTrip(t *testing.T) {
	in := boinc.ProxyInfo{UseHTTPProxy: true, UseHTTPAuth: true, HTTPServerName: "p & q", HTTPServerPort: 8080,
		HTTPUserName: "me", HTTPUserPasswd: "s<e>cret", SOCKSServerPort: 1080, SOCKS5RemoteDNS: true, NoProxy: "a,b", NoAutodetect: true}
	w := &xw{}
	writeProxyInfo(w, &in)
	out, err := boinc.ParseProxyInfo(w.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if out != in {
		t.Errorf("round trip:\n got %+v\nwant %+v\n%s", out, in, w.String())
	}
}
