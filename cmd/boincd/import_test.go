package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"log/slog"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/importer/importtest"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/statefile"
)

func TestImportCommandUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no directory", args: nil, code: 2, want: "exactly one BOINC data directory"},
		{name: "two directories", args: []string{"a", "b"}, code: 2, want: "exactly one"},
		{name: "help", args: []string{"--help"}, code: 0, want: "usage: boincd import"},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, want: "flag provided but not defined"},
		{name: "missing BOINC dir", args: []string{filepath.Join(t.TempDir(), "nope"), "--dir", t.TempDir()}, code: 1, want: "BOINC directory"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := runImport(tc.args, &out, &errb); code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if !strings.Contains(out.String()+errb.String(), tc.want) {
				t.Errorf("output lacks %q:\n%s%s", tc.want, out.String(), errb.String())
			}
		})
	}
}

// deadURL is a project URL nothing listens on.
func deadURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/"
}

var deadlineRE = regexp.MustCompile(`<report_deadline>[0-9.]+</report_deadline>`)

// syncBuffer collects the daemon's log while it runs.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// The whole path a volunteer takes: import a BOINC 7.20 directory with a
// running task, check the records, then start the daemon on it and see
// it keep the project and resume the task from its slot.
func TestImportEndToEnd(t *testing.T) {
	url := deadURL(t)
	deadline := strconv.FormatInt(time.Now().Add(7*24*time.Hour).Unix(), 10)
	src := importtest.Build(t, importtest.Options{
		StateFile: "client_state_task_running.xml",
		URL:       url,
		Edit: func(s string) string {
			return deadlineRE.ReplaceAllString(s, "<report_deadline>"+deadline+"</report_deadline>")
		},
	})
	dst := filepath.Join(t.TempDir(), "boincd")

	var out, errb bytes.Buffer
	if code := runImport([]string{src.Path, "--dir", dst, "--dry_run"}, &out, &errb); code != 0 {
		t.Fatalf("dry run: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "Dry run") || !strings.Contains(out.String(), "1 computing") {
		t.Errorf("dry run output:\n%s", out.String())
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("dry run wrote the data directory")
	}
	out.Reset()
	if code := runImport([]string{src.Path, "--dir", dst}, &out, &errb); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"project " + url, "host id 1", "tasks: 1 (1 computing)", "resumes from its checkpoint: refwu_1795268541_1_0", "files copied: 2", "credit pending: 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
	var again bytes.Buffer
	if code := runImport([]string{src.Path, "--dir", dst}, &out, &again); code != 1 || !strings.Contains(again.String(), "already has state for "+url) {
		t.Errorf("second import: exit %d: %s", code, again.String())
	}

	esc := boinc.EscapeProjectURL(url)
	snap := openState(t, dst)
	if len(snap.Projects) != 1 || len(snap.Results) != 1 || len(snap.Workunits) != 1 || len(snap.AppVersions) != 1 || len(snap.Files) != 3 {
		t.Fatalf("imported state: %d projects %d results %d workunits %d versions %d files",
			len(snap.Projects), len(snap.Results), len(snap.Workunits), len(snap.AppVersions), len(snap.Files))
	}
	p, r := snap.Projects[0], snap.Results[0]
	if p.MasterURL != url || p.HostID != 1 || p.Authenticator != "0123456789abcdef0123456789abcdef" || p.CodeSignKey == "" {
		t.Errorf("project %+v", p)
	}
	if r.Phase != boinc.PhaseComputing || r.Slot != 0 || r.PID != 0 {
		t.Errorf("result phase %s slot %d pid %d", r.Phase, r.Slot, r.PID)
	}
	for _, f := range snap.Files {
		if !f.IsUpload() && f.Status != boinc.FilePresent {
			t.Errorf("input %s status %d", f.Name, f.Status)
		}
	}
	if _, err := os.Stat(filepath.Join(dst, "projects", esc, importtest.AppFile)); err != nil {
		t.Errorf("app file: %v", err)
	}

	if runtime.GOOS == "windows" {
		t.Skip("the captured app is a shell script")
	}
	// The daemon on the imported directory, with the config the import
	// wrote: the project must stay attached and the task resume.
	logs := &syncBuffer{}
	d, err := daemon.New(daemon.Options{
		DataDir:              dst,
		Logger:               slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollInterval:         50 * time.Millisecond,
		GUIRPCAddr:           "off",
		IgnoreHostConditions: true,
		BenchmarkDuration:    -1,
		ProjectListURL:       "http://127.0.0.1:1/project_list.php",
		QuitGrace:            time.Second,
		Containers:           container.Exec{Env: []string{"PATH="}}, // not the machine's podman or docker
		// CI runs as root; the refusal of root apps has its own tests.
		Getenv: func(k string) string {
			if k == "BOINCD_ALLOW_ROOT_APPS" && os.Geteuid() == 0 {
				return "true"
			}
			return ""
		},
		Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	deadlineWait := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), `"task restarted"`) && time.Now().Before(deadlineWait) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
	log := logs.String()
	if !strings.Contains(log, `"task restarted"`) {
		t.Errorf("the daemon did not resume the imported task; log:\n%s", tail(log, 6000))
	}
	for _, bad := range []string{"detach", "dropping task", "cannot start task"} {
		if strings.Contains(log, bad) {
			t.Errorf("daemon log mentions %q:\n%s", bad, tail(log, 6000))
		}
	}
	if b, err := os.ReadFile(filepath.Join(dst, "slots", "0", importtest.CheckpointFile)); err != nil || !strings.Contains(string(b), r.Name) {
		t.Errorf("checkpoint in the resumed slot: %q %v", b, err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "slots", "0", "init_data.xml")); err != nil || !strings.Contains(string(b), "<project_dir>"+filepath.Join(dst, "projects", esc)) {
		t.Errorf("the runner did not write its own init_data.xml: %v", err)
	}

	snap = openState(t, dst)
	if len(snap.Projects) != 1 || snap.Projects[0].DetachPending {
		t.Fatalf("project after the daemon ran: %+v", snap.Projects)
	}
	if p := snap.Projects[0]; p.Origin != "config" || p.HostID != 1 || p.Authenticator != "0123456789abcdef0123456789abcdef" {
		t.Errorf("project after the daemon ran: origin %q hostid %d", p.Origin, p.HostID)
	}
	if len(snap.Results) != 1 || snap.Results[0].Phase.ReadyToReport() {
		t.Errorf("results after the daemon ran: %+v", snap.Results)
	}
	cfg, err := config.Load(filepath.Join(dst, config.FileName), false, nil)
	if err != nil || len(cfg.Projects) != 1 || cfg.Projects[0].URL != url {
		t.Errorf("config after import: %v %+v", err, cfg)
	}
	var sched struct {
		DCF float64 `json:"dcf"`
	}
	if err := json.Unmarshal(snap.Meta["sched:"+url], &sched); err != nil || sched.DCF != 1 {
		t.Errorf("sched meta %s: %v", snap.Meta["sched:"+url], err)
	}
}

// Finished tasks the C++ client had not reported carry credit: after the
// import the daemon reports them to the project at once, with what the
// C++ client would have sent, and forgets them once acknowledged.
func TestImportReportsPendingCredit(t *testing.T) {
	const (
		uploaded, failed, acked = "refwu_1795268042_1_0", "refwu_1795268042_2_0", "refwu_1795268042_3_0"
		out1                    = "refwu_1795268042_1_0_r7919_0"
	)
	srv, err := testproject.New(testproject.Config{Apps: []testproject.App{testproject.DefaultApp()}, RequestDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close test project: %v", err)
		}
	})
	src := importtest.Build(t, importtest.Options{
		StateFile: "client_state_2executing_1downloading.xml",
		URL:       srv.URL(),
		Edit: func(s string) string {
			// The project's code-signing key is the capture's, so no new
			// work is asked for: only the reports are under test.
			s = strings.Replace(s, "</project>", "    <dont_request_more_work/>\n</project>", 1)
			for _, r := range []struct{ name, state string }{{uploaded, "5"}, {failed, "3"}, {acked, "5"}} {
				s = importtest.SetResultField(t, s, r.name, "state", r.state)
				s = importtest.SetResultField(t, s, r.name, "ready_to_report", "1")
				s = importtest.SetResultField(t, s, r.name, "final_cpu_time", "29.5")
				s = importtest.SetResultField(t, s, r.name, "completed_time", "1795268100")
			}
			s = importtest.SetResultField(t, s, failed, "exit_status", "-186")
			s = importtest.SetResultField(t, s, acked, "got_server_ack", "1")
			s = importtest.SetFileField(t, s, out1, "status", "1")
			s = importtest.SetFileField(t, s, out1, "nbytes", "64")
			return importtest.AddFileFlag(t, s, out1, "uploaded")
		},
	})
	dst := filepath.Join(t.TempDir(), "boincd")
	var out, errb bytes.Buffer
	if code := runImport([]string{"--dir", dst, src.Path}, &out, &errb); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "credit pending: 1 finished task(s) to report; reported at the next scheduler request: "+uploaded) {
		t.Errorf("summary:\n%s", out.String())
	}

	logs := &syncBuffer{}
	d, err := daemon.New(daemon.Options{
		DataDir:              dst,
		Logger:               slog.New(slog.NewJSONHandler(logs, nil)),
		PollInterval:         50 * time.Millisecond,
		GUIRPCAddr:           "off",
		IgnoreHostConditions: true,
		BenchmarkDuration:    -1,
		ProjectListURL:       "http://127.0.0.1:1/project_list.php",
		QuitGrace:            time.Second,
		Containers:           container.Exec{Env: []string{"PATH="}}, // not the machine's podman or docker
		// CI runs as root; the refusal of root apps has its own tests.
		Getenv: func(k string) string {
			if k == "BOINCD_ALLOW_ROOT_APPS" && os.Geteuid() == 0 {
				return "true"
			}
			return ""
		},
		Seed: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	limit := time.Now().Add(20 * time.Second)
	for strings.Count(logs.String(), "result acknowledged by the server") < 2 && time.Now().Before(limit) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("daemon Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("daemon did not stop")
	}
	st := srv.Stats()
	if st.Reported[uploaded] != 1 || st.Reported[failed] != 1 || st.Reported[acked] != 0 {
		t.Fatalf("reports %v; daemon log:\n%s", st.Reported, tail(logs.String(), 6000))
	}
	if rr := st.ReportedResults[uploaded]; rr.State != 5 || rr.ExitStatus != 0 || rr.FinalCPUTime != 29.5 || len(rr.OutputFiles) != 1 || rr.OutputFiles[0] != out1 {
		t.Errorf("report of the uploaded task: %+v", rr)
	}
	if rr := st.ReportedResults[failed]; rr.State != 3 || rr.ExitStatus != -186 {
		t.Errorf("report of the failed task: %+v", rr)
	}
	if len(st.Errors) > 0 {
		t.Errorf("protocol errors: %q", st.Errors)
	}
	snap := openState(t, dst)
	if len(snap.Results) != 0 || len(snap.Projects) != 1 || snap.Projects[0].HostID != 1 {
		t.Errorf("after the acks: %d results, projects %+v", len(snap.Results), snap.Projects)
	}
}

func openState(t *testing.T, dir string) *statefile.Snapshot {
	t.Helper()
	st, err := statefile.Open(filepath.Join(dir, daemon.StateFileName), statefile.Options{})
	if err != nil {
		t.Fatalf("open state: %v", err)
	}
	defer st.Close()
	snap, err := st.Load()
	if err != nil {
		t.Fatalf("load state: %v", err)
	}
	return snap
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
