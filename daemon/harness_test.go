package daemon

import (
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// The harness runs the real daemon in-process against real testproject
// servers on 127.0.0.1, with real processes and a real bbolt file. Only the
// intervals are shortened, so a whole fetch → run → upload → report cycle
// takes a few seconds.

// harness is one daemon running in the background of a test.
type harness struct {
	t       *testing.T
	d       *Daemon
	logs    *testsupport.LogBuffer
	root    string // parent of dataDir: nothing may appear here but dataDir
	dataDir string
	run     *testsupport.Runner
}

// testOptions are the shortened intervals every harness daemon uses.
func testOptions(dataDir string, logs *testsupport.LogBuffer, cfg *config.Config) Options {
	return Options{
		DataDir:              dataDir,
		Config:               cfg,
		Logger:               slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollInterval:         100 * time.Millisecond,
		WorkFetchInterval:    500 * time.Millisecond,
		RPCBackoffMin:        500 * time.Millisecond,
		XferBackoffMin:       500 * time.Millisecond,
		FetchBackoffMin:      500 * time.Millisecond,
		GUIRPCAddr:           "127.0.0.1:0",
		IgnoreHostConditions: true,
		MaxReportDelay:       200 * time.Millisecond,
		QuitGrace:            time.Second,
		// no test reaches BOINC's web site (projectlist_test.go serves one)
		ProjectListURL:    deadProjectListURL,
		BenchmarkDuration: -1,
		Seed:              42,
		// No container engine: the machine's own docker or podman is
		// never run by a test that does not ask for one (docker_unix_test.go).
		Containers: container.Exec{Env: []string{"PATH="}},
	}
}

// projectsConfig attaches to each server with a fixed account key.
func projectsConfig(servers ...*testproject.Server) *config.Config {
	cfg := config.Default()
	for _, s := range servers {
		cfg.Projects = append(cfg.Projects, config.Project{URL: s.URL(), Authenticator: "test-account-key", ResourceShare: 100})
	}
	return cfg
}

// startDaemon runs a daemon attached to servers until the test ends. The
// daemon is stopped (and Run awaited) before the servers close.
func startDaemon(t *testing.T, servers ...*testproject.Server) *harness {
	t.Helper()
	return startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(servers...), nil)
}

// startDaemonIn runs a daemon on dataDir with cfg; tune, if set, adjusts
// the options first.
func startDaemonIn(t *testing.T, dataDir string, cfg *config.Config, tune func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, logs: &testsupport.LogBuffer{}, root: filepath.Dir(dataDir), dataDir: dataDir}
	opt := testOptions(h.dataDir, h.logs, cfg)
	if cfg != nil && os.Geteuid() == 0 {
		// CI runs the tests as root: apps may run as root here unless a
		// test says otherwise (privilege_test.go covers the refusal).
		cfg.AllowRootApps = true
	}
	if tune != nil {
		tune(&opt)
	}
	d, err := New(opt)
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	h.d = d
	h.run = testsupport.Run(t, d.Run, 15*time.Second, h.logs, h.dataDir)
	return h
}

// stop cancels the daemon and waits up to limit for Run to return. It is
// safe to call more than once.
func (h *harness) stop(limit time.Duration) error { return h.run.Stop(limit) }

// snapshot is the daemon's current view; it fails the test if the loop
// does not answer, which would mean the owner goroutine is blocked.
func (h *harness) snapshot() View {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := h.d.Snapshot(ctx)
	if err != nil {
		h.t.Fatalf("Snapshot: %v (is the daemon loop blocked?)", err)
	}
	return v
}

func (v View) project(url string) (ProjectView, bool) {
	for _, p := range v.Projects {
		if p.URL == url {
			return p, true
		}
	}
	return ProjectView{}, false
}

// waitAllReported waits until the server handed out n results and every
// one of them was reported; it returns the server's stats then.
func waitAllReported(t *testing.T, srv *testproject.Server, n int, limit time.Duration) testproject.Stats {
	t.Helper()
	var st testproject.Stats
	testsupport.WaitFor(t, limit, "all "+strconv.Itoa(n)+" results of "+srv.URL()+" reported", func() bool {
		st = srv.Stats()
		if len(st.Sent) < n {
			return false
		}
		for _, name := range st.Sent {
			if st.Reported[name] == 0 {
				return false
			}
		}
		return true
	})
	return st
}

// checkHealthy asserts that every result of a fault-free project was
// computed, uploaded and reported exactly once, without protocol errors.
func checkHealthy(t *testing.T, srv *testproject.Server, n int, limit time.Duration) {
	t.Helper()
	st := waitAllReported(t, srv, n, limit)
	for _, name := range st.Sent {
		rr := st.ReportedResults[name]
		if rr.State != 5 || rr.ExitStatus != 0 {
			t.Errorf("healthy project: result %s reported with state %d exit_status %d, want 5 and 0 (stderr %q)", name, rr.State, rr.ExitStatus, rr.StderrOut)
		}
		if st.Reported[name] != 1 {
			t.Errorf("healthy project: result %s reported %d times, want 1", name, st.Reported[name])
		}
		for _, out := range st.Jobs[name].OutputFiles {
			if _, ok := st.Uploaded[out]; !ok {
				t.Errorf("healthy project: output %s of %s never uploaded", out, name)
			}
		}
	}
	if len(st.Errors) > 0 {
		t.Errorf("healthy project saw protocol errors: %q", st.Errors)
	}
}

// filesNamed lists paths under root whose base name contains any of names.
func filesNamed(t *testing.T, root string, names ...string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		for _, n := range names {
			if strings.Contains(e.Name(), n) {
				out = append(out, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	return out
}

// readFile is os.ReadFile failing the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return b
}

// deadProjectListURL refuses connections at once (port 1, privileged).
const deadProjectListURL = "http://127.0.0.1:1/project_list.php"
