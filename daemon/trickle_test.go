package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/taskrunner"
)

// demoApp is the test binary as a BOINC API app (demoapp.RunIfInvoked
// in TestMain).
func demoApp(t *testing.T) []testproject.App {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	appName := demoapp.BinaryPrefix + "_1.00_" + platform.This()
	return []testproject.App{{
		Name: "demoapp", APIVersion: "7.20.5",
		Files: []testproject.AppFile{{Name: appName, Path: exe, Executable: true, MainProgram: true}},
	}}
}

// A running app's trickle-up reaches the server in a scheduler request
// made for it, shortly after the app sent it, as a <msg_from_host> with
// the task's name and the app's text; the server's answer, a trickle-down
// (trickle_echo), lands in the task's slot where the app reads it.
func TestTrickleUpAndDown(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Apps:        demoApp(t),
		Job:         testproject.JobTemplate{CommandLine: "--seconds 1 --trickle-up <progress>{n}</progress> --trickle-down-wait 60s"},
		TotalJobs:   1,
		TrickleEcho: true,
	})
	h := startDaemon(t, srv)

	var msg testproject.MsgFromHost
	testsupport.WaitFor(t, 60*time.Second, "the server to get the trickle-up", func() bool {
		st := srv.Stats()
		if len(st.MsgsFromHost) == 0 {
			return false
		}
		msg = st.MsgsFromHost[0]
		return true
	})
	st := srv.Stats()
	if len(st.Sent) != 1 || msg.ResultName != st.Sent[0] {
		t.Fatalf("msg_from_host for task %q, want %v", msg.ResultName, st.Sent)
	}
	if msg.Variety != "demo" || !strings.Contains(msg.Text, "<progress>1</progress>") {
		t.Fatalf("msg_from_host variety %q text %q", msg.Variety, msg.Text)
	}
	if msg.Time <= 0 || msg.Time > time.Now().Unix() {
		t.Fatalf("msg_from_host time %d", msg.Time)
	}
	if !strings.Contains(h.logs.String(), "To send trickle-up message") {
		t.Errorf("no scheduler request with the trickle-up reason in the log:\n%s", h.logs.String())
	}

	// The echo comes back as a trickle-down the app copies to its stderr;
	// the report carries it.
	testsupport.WaitFor(t, 60*time.Second, "the task to be reported", func() bool {
		_, ok := srv.Stats().ReportedResults[msg.ResultName]
		return ok
	})
	rep := srv.Stats().ReportedResults[msg.ResultName]
	if rep.ExitStatus != 0 || !strings.Contains(rep.StderrOut, "demoapp: trickle-down trickle_down_") || !strings.Contains(rep.StderrOut, "<progress>1</progress>") {
		t.Fatalf("report: exit %d, stderr:\n%s", rep.ExitStatus, rep.StderrOut)
	}

	// Acknowledged: nothing of the trickle is left, the flag is down.
	dir := filepath.Join(h.dataDir, "projects", boinc.EscapeProjectURL(srv.URL()))
	testsupport.WaitFor(t, 10*time.Second, "the acknowledged trickle file to go", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "trickle_") {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pending bool
	if err := h.d.peek(ctx, func() { pending = h.d.st.projects[srv.URL()].TrickleUpPending }); err != nil {
		t.Fatal(err)
	}
	if pending {
		t.Fatal("trickle_up_pending still set after the acknowledged request")
	}
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "trickle") && !strings.Contains(l, "DEBUG") {
			t.Log(l)
		}
	}
	if n := len(srv.Stats().MsgsFromHost); n != 1 {
		t.Fatalf("the server got %d trickle-ups, want 1 (sent again?)", n)
	}
}

// What the apps left in the project directory goes into the request when
// it can be sent whole; what cannot stays, named in the log.
func TestReadTrickleFilesHostile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &testsupport.LogBuffer{}
	d := &Daemon{opt: Options{DataDir: dir}, st: newClientState(), log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	const url = "http://p.example/"
	p := &boinc.Project{MasterURL: url}
	d.st.projects[url] = p
	pdir := d.projectDir(url)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"trickle_up_wu_1_0_100.xml":      "<variety>v</variety>\nok",
		"trickle_up_wu_2_0_200.xml.sent": "<variety>v</variety>\nresent",
		"trickle_up_wu_3_0_300.xml":      "<variety>v</variety>\n</msg_from_host><result><name>forged</name></result>",
		"trickle_up_wu_4_0_400.xml":      strings.Repeat("x", taskrunner.MaxTrickleBytes+1),
		"trickle_up_nonsense.xml":        "ignored",
		"other_file":                     "ignored",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(pdir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	msgs, more := d.readTrickleFiles(p)
	if more || len(msgs) != 2 {
		t.Fatalf("read %+v (more %v), want the two sendable ones", msgs, more)
	}
	if msgs[0] != (rpcclient.MsgFromHost{ResultName: "wu_1_0", Time: 100, Body: "<variety>v</variety>\nok"}) ||
		msgs[1] != (rpcclient.MsgFromHost{ResultName: "wu_2_0", Time: 200, Body: "<variety>v</variety>\nresent"}) {
		t.Fatalf("read %+v", msgs)
	}
	for _, w := range []string{"trickle_up_wu_3_0_300.xml", `the message contains \"</msg_from_host>\"`, "trickle_up_wu_4_0_400.xml", "more than the 262144"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	// Sent ones are marked; the acknowledgement deletes only those.
	d.removeTrickleFiles(p)
	var left []string
	entries, _ := os.ReadDir(pdir)
	for _, e := range entries {
		left = append(left, e.Name())
	}
	want := []string{"other_file", "trickle_up_nonsense.xml", "trickle_up_wu_3_0_300.xml", "trickle_up_wu_4_0_400.xml"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Fatalf("left %v, want %v", left, want)
	}
}

// A trickle-down for a task not started yet waits in the project
// directory and moves into the slot when the task gets one; one for a
// task the client does not hold, or with a hostile name, goes nowhere.
func TestTrickleDownForQueuedTask(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	logs := &testsupport.LogBuffer{}
	d := &Daemon{opt: Options{DataDir: dir}, st: newClientState(), active: map[string]*activeTask{},
		log: slog.New(slog.NewJSONHandler(logs, nil))}
	const url = "http://p.example/"
	p := &boinc.Project{MasterURL: url}
	d.st.projects[url] = p
	r := &boinc.Result{ProjectURL: url, Name: "wu_1_0", Slot: -1, Phase: boinc.PhaseDownloaded}
	d.st.putResult(r)
	d.st.putResult(&boinc.Result{ProjectURL: url, Name: "../x", Slot: -1, Phase: boinc.PhaseDownloaded})
	d.handleTrickleDowns(p, &rpcclient.SchedulerReply{
		TrickleDowns: []rpcclient.TrickleDown{
			{ResultName: "wu_1_0", Time: 9, Body: "<cmd>1</cmd>\n"},
			{ResultName: "unknown", Time: 9, Body: "x"},
			{ResultName: "../x", Time: 9, Body: "x"},
		},
		RefusedTrickleDowns: []string{"trickle_down #4 for task \"big\": 300000 bytes, more than the limit of 262144"},
	})
	for _, w := range []string{`"task":"unknown"`, "no such task", "cannot be part of a file name", "300000 bytes"} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, logs.String())
		}
	}
	if got := d.pendingTrickleDowns(r); len(got) != 1 || got[0] != "trickle_down_wu_1_0_9" {
		t.Fatalf("kept %v", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Fatal("a hostile task name wrote outside the project directory")
	}
	r.Slot = 3
	d.movePendingTrickleDowns(r)
	if b, err := os.ReadFile(filepath.Join(dir, "slots", "3", "trickle_down_9")); err != nil || string(b) != "<cmd>1</cmd>\n" {
		t.Fatalf("slot file: %q, %v", b, err)
	}
	if got := d.pendingTrickleDowns(r); len(got) != 0 {
		t.Fatalf("still kept: %v", got)
	}
}

// A trickle-up the server could not take keeps the project
// trickle_up_pending, over GUI RPC and across a restart, and its file
// waits; once the server answers it arrives.
func TestTrickleUpPendingSurvivesRestart(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Apps:        demoApp(t),
		Job:         testproject.JobTemplate{CommandLine: "--seconds 1 --trickle-up <n>{n}</n> --trickle-down-wait 120s"},
		TotalJobs:   1,
		TrickleEcho: true,
	})
	dir := filepath.Join(t.TempDir(), "data")
	cfg := projectsConfig(srv)
	h := startDaemonIn(t, dir, cfg, nil)
	testsupport.WaitFor(t, 60*time.Second, "the task to run", func() bool {
		for _, tv := range h.snapshot().Tasks {
			if tv.Running {
				return true
			}
		}
		return false
	})
	srv.SetFaults(testproject.Faults{HTTPErrors: 1 << 30})
	pending := func(h *harness) bool {
		for _, p := range guiProjects(t, h) {
			if p.MasterURL == srv.URL() {
				return p.TricklePending
			}
		}
		return false
	}
	testsupport.WaitFor(t, 60*time.Second, "trickle_up_pending over GUI RPC", func() bool { return pending(h) })
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Stats().MsgsFromHost); n != 0 {
		t.Fatalf("the failing server recorded %d trickle-ups", n)
	}
	h2 := startDaemonIn(t, dir, cfg, nil)
	if !pending(h2) {
		t.Fatal("trickle_up_pending lost in the restart")
	}
	srv.SetFaults(testproject.Faults{})
	testsupport.WaitFor(t, 60*time.Second, "the server to get the trickle-up", func() bool {
		return len(srv.Stats().MsgsFromHost) > 0
	})
	if m := srv.Stats().MsgsFromHost[0]; !strings.Contains(m.Text, "<n>1</n>") || m.ResultName != srv.Stats().Sent[0] {
		t.Fatalf("got %+v", m)
	}
	testsupport.WaitFor(t, 60*time.Second, "trickle_up_pending to clear", func() bool { return !pending(h2) })
}

// guiProjects is what get_project_status answers now.
func guiProjects(t *testing.T, h *harness) []guirpc.ProjectInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []guirpc.ProjectInfo
	if err := h.d.peek(ctx, func() { out = h.d.guiState(time.Now(), 0).Projects }); err != nil {
		t.Fatal(err)
	}
	return out
}

// An output the app asks to upload before it ends (boinc_upload_file)
// is uploaded while the task runs; the app hears that it is over, and
// the finished task reports it without uploading it again.
func TestIntermediateUpload(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Apps:      demoApp(t),
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1 --upload-early 60s"},
		TotalJobs: 1,
	})
	startDaemon(t, srv)
	testsupport.WaitFor(t, 60*time.Second, "the task to be reported", func() bool {
		return len(srv.Stats().ReportedResults) > 0
	})
	st := srv.Stats()
	name := st.Sent[0]
	rep := st.ReportedResults[name]
	if rep.ExitStatus != 0 || !strings.Contains(rep.StderrOut, "demoapp: early upload of out: status 0") {
		t.Fatalf("report: exit %d, stderr:\n%s", rep.ExitStatus, rep.StderrOut)
	}
	out := st.Jobs[name].OutputFiles[0]
	if _, ok := st.Uploaded[out]; !ok || st.UploadRequests[out] != 1 {
		t.Fatalf("output %s uploaded %v, %d upload requests; want once", out, ok, st.UploadRequests[out])
	}
	if len(st.Errors) > 0 {
		t.Fatalf("server saw errors: %v", st.Errors)
	}
}

// A project naming trickle handlers (<trickle_up_urls>) gets each
// trickle-up posted to every one of them too, as a small scheduler
// request of its own (send_replicated_trickles); the scheduler request
// still carries it.
func TestReplicatedTrickles(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var posts []string
	handler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		mu.Lock()
		posts = append(posts, string(b))
		mu.Unlock()
		_, _ = io.WriteString(w, "<scheduler_reply>\n</scheduler_reply>\n")
	}))
	t.Cleanup(handler.Close)
	urls := "<trickle_up_urls>\n<url>" + handler.URL + "/trickle</url>\n<url>javascript:alert(1)</url>\n</trickle_up_urls>\n"
	srv := testsupport.StartProject(t, testproject.Config{
		Apps:      demoApp(t),
		Job:       testproject.JobTemplate{CommandLine: "--seconds 3 --trickle-up <progress>{n}</progress>"},
		TotalJobs: 1,
		Faults: testproject.Faults{RewriteReply: func(_ int, reply []byte) []byte {
			return bytes.Replace(reply, []byte("</scheduler_reply>"), []byte(urls+"</scheduler_reply>"), 1)
		}},
	})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, 60*time.Second, "the server to get the trickle-up", func() bool { return len(srv.Stats().MsgsFromHost) > 0 })
	testsupport.WaitFor(t, 10*time.Second, "the handler to get it too", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) > 0
	})
	mu.Lock()
	got := posts[0]
	mu.Unlock()
	name := srv.Stats().MsgsFromHost[0].ResultName
	for _, want := range []string{"<authenticator>test-account-key</authenticator>", "<core_client_release>99</core_client_release>",
		"<result_name>" + name + "</result_name>", "<progress>1</progress>", "</msg_from_host>\n</scheduler_request>"} {
		if !strings.Contains(got, want) {
			t.Errorf("replicated trickle lacks %q:\n%s", want, got)
		}
	}
	if len(h.logs.Find("trickle handler URL ignored")) == 0 {
		t.Error("the javascript: handler URL was not named as ignored")
	}
}
