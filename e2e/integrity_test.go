//go:build unix

package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/platform"
)

// notFound serves h but answers 404 for the named download files once
// they are blocked: a project that no longer has them.
type notFound struct {
	h       http.Handler
	mu      sync.Mutex
	blocked map[string]bool
}

func (n *notFound) block(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.blocked[name] = true
}

func (n *notFound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	blocked := n.blocked[filepath.Base(r.URL.Path)]
	n.mu.Unlock()
	if blocked && r.Method == http.MethodGet {
		http.NotFound(w, r)
		return
	}
	n.h.ServeHTTP(w, r)
}

// Issue 14, as reported: boincd is stopped with tasks running, a line is
// inserted after #!/bin/sh in the project's signed app file, and one
// running task's input file is deleted while the server no longer has it.
// On the next start the edited script never runs (the start-up check
// finds the size changed; the file is fetched again and its signature
// verified again), the task whose input is gone is reported as an error
// naming the file and never as a success, and the other task completes
// with the good app.
func TestTamperedFilesAfterRestart(t *testing.T) {
	t.Parallel()
	const jobs, size, secs = 2, 100, 8
	appFile := "refapp_1.00_" + platform.This() + ".sh"
	cfg := testproject.Config{
		Apps: []testproject.App{testproject.DefaultApp()}, RequestDelay: -1, TotalJobs: jobs,
		Job: testproject.JobTemplate{CommandLine: fmt.Sprintf("--seconds %d", secs), InputSize: size},
	}
	srv, err := testproject.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nf := &notFound{h: srv.Handler(), blocked: map[string]bool{}}
	ts := httptest.NewServer(nf)
	t.Cleanup(ts.Close)
	p := &project{Server: srv, cfg: cfg}

	dir := newDataDir(t)
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(fmt.Sprintf(
		"allow_root_apps = true\n\n[[project]]\nurl = %q\nauthenticator = %q\n", ts.URL+"/", accountKey)))

	first := startDaemon(t, "first daemon", childOptions{DataDir: dir})
	// Both tasks running when the daemon stops (as many as there are CPUs):
	// both are resumed by the next daemon.
	started := map[string]bool{}
	victim := ""
	for len(started) < min(jobs, runtime.NumCPU()) {
		l := first.waitFor("a task start", 90*time.Second, func(l logLine) bool {
			return l.Msg == "task started" && l.str("component") == "client" && !started[l.str("task")]
		})
		started[l.str("task")] = true
		if victim == "" {
			victim = l.str("task")
		}
	}
	first.stop()

	appPath := filepath.Join(dir, "projects", boinc.EscapeProjectURL(ts.URL+"/"), appFile)
	orig, err := os.ReadFile(appPath)
	if err != nil {
		t.Fatal(err)
	}
	shebang, rest, ok := bytes.Cut(orig, []byte("\n"))
	if !ok {
		t.Fatalf("app file has one line: %q", orig)
	}
	evil := append(append(append([]byte(nil), shebang...), "\necho x >> ../../TAMPERED\n"...), rest...)
	if err := os.WriteFile(appPath, evil, 0o755); err != nil {
		t.Fatal(err)
	}
	input := p.Stats().Jobs[victim].InputFile
	if input == "" {
		t.Fatalf("task %s has no input file", victim)
	}
	nf.block(input)
	if err := os.Remove(filepath.Join(dir, "projects", boinc.EscapeProjectURL(ts.URL+"/"), input)); err != nil {
		t.Fatal(err)
	}

	second := startDaemon(t, "restarted daemon", childOptions{DataDir: dir})
	waitAllReported(t, second, p, jobs, 120*time.Second)
	waitNoLeftovers(t, dir, 15*time.Second)
	second.stop()

	if dirExists(filepath.Join(dir, "TAMPERED")) {
		t.Error("the edited app script ran")
	}
	st := p.Stats()
	if n := st.Downloads[appFile]; n != 2 {
		t.Errorf("app file downloaded %d times, want 2 (again after the edit)", n)
	}
	if got, err := os.ReadFile(appPath); err == nil && !bytes.Equal(got, orig) {
		t.Error("the app file on disk is not the signed one")
	}
	for _, f := range []string{appFile, input} {
		if _, ok := second.find(func(l logLine) bool {
			return l.str("level") == "ERROR" && l.str("file") == f && strings.Contains(l.Msg, "does not match what was verified")
		}); !ok {
			t.Errorf("no error-level log line names %s:\n%s", f, second.tail(60))
		}
	}
	for _, name := range st.Sent {
		rr := st.ReportedResults[name]
		if name == victim {
			if rr.State == 5 || rr.ExitStatus != boinc.ErrFileMissing || !strings.Contains(rr.StderrOut, input) {
				t.Errorf("task %s without its input reported state %d exit %d message %q; want an error (%d) naming %s",
					name, rr.State, rr.ExitStatus, rr.StderrOut, boinc.ErrFileMissing, input)
			}
			continue
		}
		want := testproject.RefAppOutput(testproject.JobInput(st.Jobs[name].N, size), secs)
		if rr.State != 5 || rr.ExitStatus != 0 || !bytes.Equal(st.Uploaded[st.Jobs[name].OutputFiles[0]], want) {
			t.Errorf("task %s: state %d exit %d output %q; want a success with the good app's output", name, rr.State, rr.ExitStatus, st.Uploaded[st.Jobs[name].OutputFiles[0]])
		}
	}
}
