package daemon

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestRootAppsRefused: a daemon running as root with neither app_user nor
// allow_root_apps downloads its work but starts no app; the task stays
// queued (nothing fails, nothing is lost), the refusal is logged once and
// shown as a health problem.
func TestRootAppsRefused(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the refusal concerns a daemon running as root")
	}
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
		TotalJobs: 1,
	})
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) {
		// The harness allows root apps (tests run as root in CI): this
		// test wants the default.
		o.Config.AllowRootApps = false
	})

	testsupport.WaitFor(t, 30*time.Second, "the task downloaded", func() bool {
		var ok bool
		_ = h.d.query(t.Context(), func() {
			for _, r := range h.d.st.results {
				ok = ok || r.Phase == boinc.PhaseDownloaded
			}
		})
		return ok
	})
	// A few more scheduling passes: still nothing runs.
	time.Sleep(time.Second)
	var name, msg string
	var phases []string
	var active int
	if err := h.d.query(t.Context(), func() {
		name, msg = h.d.appPolicyProblem()
		active = len(h.d.active)
		for _, r := range h.d.st.results {
			phases = append(phases, r.Phase.String())
		}
	}); err != nil {
		t.Fatal(err)
	}
	if active != 0 {
		t.Fatalf("%d tasks started as root", active)
	}
	if name != healthAppsRefusedRoot || !strings.Contains(msg, "app_user") || !strings.Contains(msg, "allow_root_apps = true") {
		t.Fatalf("health problem = %q: %q", name, msg)
	}
	for _, p := range phases {
		if p != boinc.PhaseDownloaded.String() {
			t.Fatalf("result phases %v: the refused task must stay queued", phases)
		}
	}
	n := 0
	for _, r := range h.logs.Records() {
		if strings.HasPrefix(r.Str("msg"), "refusing to run science apps as root") && r.Str("warning") == healthAppsRefusedRoot {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("refusal logged %d times, want once", n)
	}
	if got := srv.Stats(); len(got.Reported) != 0 {
		t.Fatalf("reported %v: a refused task must not be failed", got.Reported)
	}
}

// Distinctive secrets: any appearance in logs or metrics is a leak.
const (
	secretAuthenticator = "authkey-5e1f0c2b9a7d4e68b3c1d0f9e8a7b6c5"
	secretGUIPassword   = "guipw-0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e"
)

// TestNoSecretsInLogsOrMetrics runs a full job cycle with a distinctive
// account key and GUI RPC password, logging at debug level, with one
// good and one bad GUI RPC login, and checks that neither secret appears
// in any log record or in a /metrics scrape.
func TestNoSecretsInLogsOrMetrics(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000},
		TotalJobs: 2,
	})
	cfg := projectsConfig(srv)
	cfg.Projects[0].Authenticator = secretAuthenticator
	cfg.AllowRootApps = true
	cfg.Metrics.Enabled = true
	cfg.Metrics.Address = "127.0.0.1:0"
	dataDir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(dataDir, guirpc.PasswordFile)
	if err := os.WriteFile(pwFile, []byte(secretGUIPassword+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pwFile, 0o644); err != nil {
		t.Fatal(err)
	}
	h := startDaemonIn(t, dataDir, cfg, nil)

	var metricsURL, guiAddr string
	testsupport.WaitFor(t, 30*time.Second, "the metrics and GUI RPC endpoints", func() bool {
		for _, r := range h.logs.Records() {
			switch r.Str("msg") {
			case "metrics endpoint listening":
				metricsURL = "http://" + r.Str("addr") + r.Str("path")
			case "GUI RPC listening":
				guiAddr = r.Str("address")
			}
		}
		return metricsURL != "" && guiAddr != ""
	})
	if st, err := os.Stat(pwFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("password file mode after start: %v, %v (want 0600)", st.Mode().Perm(), err)
	}
	if !guiLogin(t, guiAddr, secretGUIPassword) {
		t.Fatal("GUI RPC login with the right password refused")
	}
	if guiLogin(t, guiAddr, secretGUIPassword+"-wrong") {
		t.Fatal("GUI RPC login with a wrong password accepted")
	}
	waitAllReported(t, srv, 2, 90*time.Second)

	resp, err := http.Get(metricsURL)
	if err != nil {
		t.Fatal(err)
	}
	scrape, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(scrape), "boincd_") {
		t.Fatalf("scrape: %s\n%s", resp.Status, scrape)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, `"level":"DEBUG"`) {
		t.Fatal("no debug records: the test must log at debug level")
	}
	// The password as the client sends it (md5 of nonce and password)
	// differs per login; the raw secret and its unsalted md5 must not show.
	md5pw := md5.Sum([]byte(secretGUIPassword))
	for what, secret := range map[string]string{
		"authenticator":         secretAuthenticator,
		"GUI RPC password":      secretGUIPassword,
		"GUI RPC password md5":  hex.EncodeToString(md5pw[:]),
		"authenticator's start": secretAuthenticator[:20],
	} {
		if i := strings.Index(logs, secret); i >= 0 {
			t.Errorf("the %s appears in the logs: ...%s...", what, logs[max(0, i-200):min(len(logs), i+100)])
		}
		if strings.Contains(string(scrape), secret) {
			t.Errorf("the %s appears in the metrics", what)
		}
	}
	// The scheduler request is logged at debug level (if at all) without
	// its <authenticator> element's content.
	if m := regexp.MustCompile(`<authenticator>[^<]+</authenticator>`).FindString(logs); m != "" {
		t.Errorf("a scheduler request with its authenticator is logged: %s", m)
	}
}

// guiLogin does the GUI RPC auth1/auth2 exchange and reports whether the
// daemon accepted the password.
func guiLogin(t *testing.T, addr, password string) bool {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	rd := bufio.NewReader(conn)
	call := func(req string) string {
		if _, err := io.WriteString(conn, "<boinc_gui_rpc_request>\n"+req+"\n</boinc_gui_rpc_request>\n\003"); err != nil {
			t.Fatal(err)
		}
		reply, err := rd.ReadString('\003')
		if err != nil {
			t.Fatalf("GUI RPC reply: %v", err)
		}
		return reply
	}
	m := regexp.MustCompile(`<nonce>([^<]*)</nonce>`).FindStringSubmatch(call("<auth1/>"))
	if m == nil {
		t.Fatal("no nonce in the auth1 reply")
	}
	sum := md5.Sum([]byte(m[1] + password))
	return strings.Contains(call("<auth2>\n<nonce_hash>"+hex.EncodeToString(sum[:])+"</nonce_hash>\n</auth2>"), "<authorized/>")
}
