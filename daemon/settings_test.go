package daemon

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// forwardProxy is a plain HTTP forward proxy that records the URLs it
// carried.
type forwardProxy struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
	auth []string
}

func startForwardProxy(t *testing.T) *forwardProxy {
	p := &forwardProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.seen = append(p.seen, r.URL.String())
		p.auth = append(p.auth, r.Header.Get("Proxy-Authorization"))
		p.mu.Unlock()
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		out := r.Clone(r.Context())
		out.RequestURI = ""
		out.Header.Del("Proxy-Authorization")
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *forwardProxy) carried(sub string) (n int, auth string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, u := range p.seen {
		if strings.Contains(u, sub) {
			n++
			auth = p.auth[i]
		}
	}
	return n, auth
}

func guiDo(t *testing.T, h *harness, a guirpc.Action) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := (rpcBackend{h.d}).Do(ctx, a); err != nil {
		t.Fatalf("%T: %v", a, err)
	}
}

// The proxy set over GUI RPC carries every later request (scheduler
// request, download, upload), hosts on no_proxy go direct, and the
// setting survives a restart.
func TestProxySettingsCarryRequests(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000, ReportImmediately: true},
		TotalJobs: 1,
	})
	px := startForwardProxy(t)
	pu, _ := url.Parse(px.URL)
	port, _ := strconv.Atoi(pu.Port())
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := projectsConfig(srv)
	// Attach with network off, so that nothing goes out before the proxy
	// is set.
	h := startDaemonIn(t, dataDir, cfg, nil)
	guiDo(t, h, guirpc.SetMode{Which: "network", Mode: guirpc.ModeNever})
	info := boinc.ProxyInfo{UseHTTPProxy: true, UseHTTPAuth: true, HTTPServerName: "127.0.0.1", HTTPServerPort: port,
		HTTPUserName: "vol", HTTPUserPasswd: "pw"}
	guiDo(t, h, guirpc.SetProxy{Info: info})
	before := srv.Stats().RPCs
	guiDo(t, h, guirpc.SetMode{Which: "network", Mode: guirpc.ModeAlways})
	guiDo(t, h, guirpc.ProjectOp{URL: srv.URL(), Op: guirpc.ProjectUpdate})
	waitAllReported(t, srv, 1, 60*time.Second)
	host := strings.TrimPrefix(strings.TrimSuffix(srv.URL(), "/"), "http://")
	n, auth := px.carried(host)
	if n == 0 {
		t.Fatalf("no request went through the proxy (server saw %d RPCs, %d before the proxy was set)", srv.Stats().RPCs, before)
	}
	if want := "Basic dm9sOnB3"; auth != want {
		t.Errorf("Proxy-Authorization %q, want %q", auth, want)
	}
	for _, kind := range []string{"/cgi", "/download/", "file_upload_handler"} {
		if n, _ := px.carried(kind); n == 0 {
			t.Errorf("no %s request went through the proxy", kind)
		}
	}

	// Restart: the proxy is still in force, and a no_proxy host bypasses it.
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	h2 := startDaemonIn(t, dataDir, cfg, nil)
	st := guiStateOf(t, h2)
	if st.Proxy != info {
		t.Fatalf("after restart proxy %+v, want %+v", st.Proxy, info)
	}
	info.NoProxy = "127.0.0.1"
	guiDo(t, h2, guirpc.SetProxy{Info: info})
	// A request the restarted daemon began before the change may still
	// reach the proxy: count from when the proxy has been quiet a while.
	n0, _ := px.carried(host)
	for quiet := 0; quiet < 15; {
		time.Sleep(100 * time.Millisecond)
		if n, _ := px.carried(host); n != n0 {
			n0, quiet = n, 0
		} else {
			quiet++
		}
	}
	rpcs := srv.Stats().RPCs
	guiDo(t, h2, guirpc.ProjectOp{URL: srv.URL(), Op: guirpc.ProjectUpdate})
	testsupport.WaitFor(t, 30*time.Second, "a direct scheduler request", func() bool { return srv.Stats().RPCs > rpcs })
	if n1, _ := px.carried(host); n1 != n0 {
		t.Errorf("a no_proxy host went through the proxy (%d requests, %d before)", n1, n0)
	}
}

func guiStateOf(t *testing.T, h *harness) *guirpc.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := (rpcBackend{h.d}).Snapshot(ctx, guirpc.PartAll)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// The files a GUI edits land where the C++ client keeps them, whole; the
// product name reaches the project and survives a restart; host info can
// be probed again.
func TestGUIConfigFilesAndHostInfo(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 0})
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := projectsConfig(srv)
	h := startDaemonIn(t, dataDir, cfg, nil)
	url := srv.URL()

	read := func(f guirpc.ConfigFile, u string) []byte {
		var out []byte
		guiDo(t, h, guirpc.ReadConfigFile{File: f, URL: u, Out: &out})
		return out
	}
	if b := read(guirpc.CCConfig, ""); b != nil {
		t.Fatalf("cc_config.xml before any was written: %q", b)
	}
	cc := "<cc_config>\n<options><ncpus>1</ncpus></options>\n</cc_config>"
	guiDo(t, h, guirpc.WriteConfigFile{File: guirpc.CCConfig, XML: cc})
	if b := readFile(t, filepath.Join(dataDir, "cc_config.xml")); string(b) != cc+"\n" {
		t.Errorf("cc_config.xml = %q", b)
	}
	if b := read(guirpc.CCConfig, ""); string(b) != cc+"\n" {
		t.Errorf("read back %q", b)
	}
	ac := "<app_config>\n<project_max_concurrent>1</project_max_concurrent>\n</app_config>"
	guiDo(t, h, guirpc.WriteConfigFile{File: guirpc.AppConfig, URL: url, XML: ac})
	if b := readFile(t, filepath.Join(dataDir, "projects", boinc.EscapeProjectURL(url), "app_config.xml")); string(b) != ac+"\n" {
		t.Errorf("app_config.xml = %q", b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := (rpcBackend{h.d}).Do(ctx, guirpc.WriteConfigFile{File: guirpc.AppConfig, URL: "http://nowhere.example/", XML: ac})
	if err != guirpc.ErrNoSuchProject {
		t.Errorf("app_config of a project not attached: %v", err)
	}
	entries, _ := os.ReadDir(dataDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".cc_config") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}

	guiDo(t, h, guirpc.SetHostInfo{ProductName: "Rack 7 <node 3>"})
	guiDo(t, h, guirpc.ProjectOp{URL: url, Op: guirpc.ProjectUpdate})
	// A request already under way when the name was set goes out
	// without it; the update's request carries it.
	want := []byte("<product_name>Rack 7 &lt;node 3&gt;</product_name>")
	testsupport.WaitFor(t, 30*time.Second, "a scheduler request with the product name", func() bool {
		return bytes.Contains(srv.Stats().LastRequest, want)
	})
	guiDo(t, h, guirpc.ResetHostInfo{})
	testsupport.WaitFor(t, 30*time.Second, "host info probed again", func() bool { return len(h.logs.Find("host info probed again")) > 0 })
	if got := guiStateOf(t, h).Host.ProductName; got != "Rack 7 <node 3>" {
		t.Errorf("product name after reset_host_info: %q", got)
	}
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	h2 := startDaemonIn(t, dataDir, cfg, nil)
	if got := guiStateOf(t, h2).Host.ProductName; got != "Rack 7 <node 3>" {
		t.Errorf("product name after restart: %q", got)
	}
}

// Scheduler requests count in the day's traffic, as with the C++ client:
// a host that only talks to its projects still shows what it sent.
func TestSchedulerTrafficInDailyHistory(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 0})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, 30*time.Second, "a scheduler request", func() bool { return srv.Stats().RPCs > 0 })
	testsupport.WaitFor(t, 10*time.Second, "the request in the day's traffic", func() bool {
		x := guiStateOf(t, h).DailyXfers
		return len(x) == 1 && x[0].Up >= float64(len(srv.Stats().LastRequest)) && x[0].Down > 0
	})
}

// The override file reaches only the replies that ask for it, and it is
// read as it is on disk now (as the C++ client's get_global_prefs_override
// reads it), off the owner goroutine.
func TestSnapshotPrefsOverride(t *testing.T) {
	t.Parallel()
	h := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	snap := func(need guirpc.Parts) string {
		t.Helper()
		st, err := rpcBackend{h.d}.Snapshot(ctx, need)
		if err != nil {
			t.Fatal(err)
		}
		return st.PrefsOverride
	}
	if got := snap(guirpc.PartPrefsOverride); got != "" {
		t.Fatalf("no override file: PrefsOverride %q", got)
	}
	body := "<global_preferences>\n<max_ncpus_pct>50</max_ncpus_pct>\n</global_preferences>\n"
	if err := os.WriteFile(filepath.Join(h.dataDir, PrefsOverrideFile), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := snap(guirpc.PartPrefsOverride); got != body {
		t.Errorf("asked for: PrefsOverride %q, want the file", got)
	}
	if got := snap(guirpc.PartResults); got != "" {
		t.Errorf("not asked for: PrefsOverride %q, want it not read", got)
	}
}
