package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/statefile"
)

// These tests hold issue 14's promise: never run an unverified file, never
// report what was not computed. Each runs the real daemon, real app
// processes and a real test project. Tasks are held back with the run
// mode "never" (seeded in the state file before the first start, so no
// task can start before the test has changed a file), then released.

var refAppName = "refapp_1.00_" + platform.This() + ".sh"

// tamperMarker is what a tampered refapp leaves in the data directory
// when it runs (the slot is DATA/slots/N).
const tamperMarker = "TAMPERED"

// tamperedLine replaces the refapp's comment line (line 2): same size,
// other bytes, and running it leaves the marker.
func tamperedScript(t *testing.T, orig []byte, sameSize bool) []byte {
	t.Helper()
	lines := bytes.SplitN(orig, []byte("\n"), 3)
	if len(lines) != 3 || !bytes.HasPrefix(lines[1], []byte("#")) {
		t.Fatalf("refapp script has no comment on line 2: %q", orig)
	}
	evil := []byte("echo x >> ../../" + tamperMarker)
	if !sameSize {
		// The edit: a line inserted after #!/bin/sh.
		out := append(append(append([]byte(nil), lines[0]...), '\n'), evil...)
		return append(append(out, '\n'), orig[len(lines[0])+1:]...)
	}
	if len(evil)+2 > len(lines[1]) {
		t.Fatal("comment line too short to hide the tampering")
	}
	line := append(append(evil, " #"...), bytes.Repeat([]byte("x"), len(lines[1])-len(evil)-2)...)
	out := bytes.Join([][]byte{lines[0], line, lines[2]}, []byte("\n"))
	if len(out) != len(orig) {
		t.Fatalf("tampered script is %d bytes, original %d", len(out), len(orig))
	}
	return out
}

// seedRunMode writes the computing run mode into a fresh state file.
func seedRunMode(t *testing.T, dataDir string, mode int) {
	t.Helper()
	editState(t, dataDir, func(_ *statefile.Snapshot, b *statefile.Batch) {
		b.PutMeta(modesMetaKey, &modes{Run: runMode{Perm: mode}})
	})
}

// editState changes the state file of a daemon that is not running.
func editState(t *testing.T, dataDir string, edit func(*statefile.Snapshot, *statefile.Batch)) {
	t.Helper()
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := statefile.Open(filepath.Join(dataDir, StateFileName), statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	var b statefile.Batch
	edit(snap, &b)
	if err := s.Commit(&b); err != nil {
		t.Fatal(err)
	}
}

// setRunMode switches computing on or off in a running daemon.
func (h *harness) setRunMode(mode int) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if qerr := h.d.query(ctx, func() { err = h.d.setMode("run", mode, 0, time.Now()) }); qerr != nil {
		h.t.Fatalf("set run mode: %v", qerr)
	}
	if err != nil {
		h.t.Fatalf("set run mode: %v", err)
	}
}

// waitDownloaded waits until n tasks have all their files.
func (h *harness) waitDownloaded(n int) {
	h.t.Helper()
	testsupport.WaitFor(h.t, 60*time.Second, "tasks downloaded", func() bool {
		got := 0
		for _, tv := range h.snapshot().Tasks {
			if tv.Phase == boinc.PhaseDownloaded {
				got++
			}
		}
		return got >= n
	})
}

// projectFile is the path of a project file in the data directory.
func projectFile(t *testing.T, dataDir, name string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dataDir, "projects", "*", name))
	if len(m) != 1 {
		t.Fatalf("project file %s: found %v", name, m)
	}
	return m[0]
}

// errorLogged reports whether an error-level record names the file.
func (h *harness) errorLogged(file string) bool {
	for _, r := range h.logs.Records() {
		if r.Str("level") == "ERROR" && r.Str("file") == file && strings.Contains(r.Str("msg"), "does not match what was verified") {
			return true
		}
	}
	return false
}

// checkOutputs asserts every result was computed on its real input by the
// real app and reported as a success.
func checkOutputs(t *testing.T, st testproject.Stats, inputSize, seconds int) {
	t.Helper()
	for _, name := range st.Sent {
		rr := st.ReportedResults[name]
		if rr.State != 5 || rr.ExitStatus != 0 {
			t.Errorf("result %s reported with state %d exit_status %d, want 5 and 0 (stderr %q)", name, rr.State, rr.ExitStatus, rr.StderrOut)
		}
		job := st.Jobs[name]
		for _, out := range job.OutputFiles {
			want := testproject.RefAppOutput(testproject.JobInput(job.N, inputSize), seconds)
			if got := st.Uploaded[out]; !bytes.Equal(got, want) {
				t.Errorf("output %s of %s:\n%s\nwant:\n%s", out, name, got, want)
			}
		}
	}
}

// A signed app file changed on disk after it was verified (same size
// included) is never run: it is removed, fetched again, verified again,
// an error names it, and the tasks complete with the good app. Checked
// before a first start while the daemon runs, and after a restart (where
// a size change is caught by the start-up check already).
func TestTamperedAppFileNotRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		sameSize bool
		restart  bool
	}{
		{"same size, daemon running", true, false},
		{"same size, after restart", true, true},
		{"line inserted, after restart", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const jobs = 2
			srv := testsupport.StartProject(t, testproject.Config{
				TotalJobs: jobs,
				Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
			})
			dataDir := filepath.Join(t.TempDir(), "data")
			seedRunMode(t, dataDir, ModeNever)
			h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
			h.waitDownloaded(jobs)
			app := projectFile(t, dataDir, refAppName)
			orig := readFile(t, app)
			if tc.restart {
				if err := h.stop(15 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(app, tamperedScript(t, orig, tc.sameSize), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.restart {
				h = startDaemonIn(t, dataDir, projectsConfig(srv), nil)
			}
			h.setRunMode(ModeAlways)
			st := waitAllReported(t, srv, jobs, 60*time.Second)
			checkOutputs(t, st, 100, 1)
			if _, err := os.Stat(filepath.Join(dataDir, tamperMarker)); err == nil {
				t.Error("the tampered app ran")
			}
			if n := st.Downloads[refAppName]; n != 2 {
				t.Errorf("app file downloaded %d times, want 2 (once, then again after the tampering)", n)
			}
			if !h.errorLogged(refAppName) {
				t.Errorf("no error-level log record names %s", refAppName)
			}
			if got := readFile(t, app); !bytes.Equal(got, orig) {
				t.Errorf("app file on disk is not the signed one again")
			}
		})
	}
}

// An input file of a queued task that was deleted, truncated or changed
// is fetched again before the task starts, and the task computes on the
// real input: the start-up check catches a missing or short file, the
// check before the start a changed one.
func TestInputFileRefetchedBeforeStart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		damage  func(path string) error
		restart bool
	}{
		{"deleted, after restart", os.Remove, true},
		{"truncated, after restart", func(p string) error { return os.Truncate(p, 10) }, true},
		{"deleted, daemon running", os.Remove, false},
		{"same size changed, daemon running", func(p string) error {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b[0] ^= 0xff
			return os.WriteFile(p, b, 0o644)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const jobs, size = 2, 1000
			srv := testsupport.StartProject(t, testproject.Config{
				TotalJobs: jobs,
				Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: size},
			})
			dataDir := filepath.Join(t.TempDir(), "data")
			seedRunMode(t, dataDir, ModeNever)
			h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
			h.waitDownloaded(jobs)
			st := srv.Stats()
			input := st.Jobs[st.Sent[0]].InputFile
			if tc.restart {
				if err := h.stop(15 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			if err := tc.damage(projectFile(t, dataDir, input)); err != nil {
				t.Fatal(err)
			}
			if tc.restart {
				h = startDaemonIn(t, dataDir, projectsConfig(srv), nil)
			}
			h.setRunMode(ModeAlways)
			st = waitAllReported(t, srv, jobs, 60*time.Second)
			checkOutputs(t, st, size, 1)
			if n := st.Downloads[input]; n != 2 {
				t.Errorf("input %s downloaded %d times, want 2", input, n)
			}
			if !h.errorLogged(input) {
				t.Errorf("no error-level log record names %s", input)
			}
		})
	}
}

// blockFiles serves h but answers 404 for the named download files once
// blocked: a server that no longer has them.
type blockFiles struct {
	h       http.Handler
	mu      sync.Mutex
	blocked map[string]bool
}

func (b *blockFiles) block(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.blocked == nil {
		b.blocked = map[string]bool{}
	}
	b.blocked[name] = true
}

func (b *blockFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	blocked := b.blocked[filepath.Base(r.URL.Path)]
	b.mu.Unlock()
	if blocked && r.Method == http.MethodGet {
		http.NotFound(w, r)
		return
	}
	b.h.ServeHTTP(w, r)
}

// An input file deleted locally that the server no longer serves: the
// task never starts on the missing input; it is reported as an error
// (ERR_FILE_MISSING) whose message names the file, never as a success.
// The other task completes.
func TestInputFileGoneFromServer(t *testing.T) {
	t.Parallel()
	for _, restart := range []bool{true, false} {
		name := "daemon running"
		if restart {
			name = "after restart"
		}
		t.Run(name, func(t *testing.T) {
			const jobs, size = 2, 1000
			srv, err := testproject.New(testproject.Config{
				Apps:         []testproject.App{testproject.DefaultApp()},
				RequestDelay: -1,
				TotalJobs:    jobs,
				Job:          testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: size},
			})
			if err != nil {
				t.Fatal(err)
			}
			bf := &blockFiles{h: srv.Handler()}
			ts := httptest.NewServer(bf)
			t.Cleanup(ts.Close)
			cfg := func() *config.Config {
				c := config.Default()
				c.Projects = []config.Project{{URL: ts.URL + "/", Authenticator: "k", ResourceShare: 100}}
				return c
			}
			dataDir := filepath.Join(t.TempDir(), "data")
			seedRunMode(t, dataDir, ModeNever)
			h := startDaemonIn(t, dataDir, cfg(), nil)
			h.waitDownloaded(jobs)
			st := srv.Stats()
			victim := st.Sent[0]
			input := st.Jobs[victim].InputFile
			if restart {
				if err := h.stop(15 * time.Second); err != nil {
					t.Fatal(err)
				}
			}
			bf.block(input)
			if err := os.Remove(projectFile(t, dataDir, input)); err != nil {
				t.Fatal(err)
			}
			if restart {
				h = startDaemonIn(t, dataDir, cfg(), nil)
			}
			h.setRunMode(ModeAlways)
			st = waitAllReported(t, srv, jobs, 60*time.Second)
			for _, name := range st.Sent {
				rr := st.ReportedResults[name]
				if name != victim {
					if rr.State != 5 || rr.ExitStatus != 0 {
						t.Errorf("other result %s: state %d exit_status %d, want a success", name, rr.State, rr.ExitStatus)
					}
					continue
				}
				if rr.State == 5 || rr.ExitStatus != boinc.ErrFileMissing {
					t.Errorf("result %s with its input gone: state %d exit_status %d, want an error with %d", name, rr.State, rr.ExitStatus, boinc.ErrFileMissing)
				}
				if !strings.Contains(rr.StderrOut, input) || !strings.Contains(rr.StderrOut, "missing") {
					t.Errorf("result %s: the reported message %q does not say which file went missing", name, rr.StderrOut)
				}
				if len(st.Jobs[name].OutputFiles) > 0 {
					if _, ok := st.Uploaded[st.Jobs[name].OutputFiles[0]]; ok {
						t.Errorf("result %s: an output was uploaded though its input was missing", name)
					}
				}
			}
			for _, r := range h.logs.Find("task started") {
				if r.Str("task") == victim {
					t.Errorf("task %s was started without its input", victim)
				}
			}
		})
	}
}

// A state written by a boincd that kept no hashes: before the first task
// start that needs it, each present file is verified again (size, MD5,
// signature) and its hash recorded; an app file that no longer matches
// its signature is fetched again instead, and never run.
func TestUnsealedFilesVerifiedOnce(t *testing.T) {
	t.Parallel()
	const jobs, size = 1, 100
	srv := testsupport.StartProject(t, testproject.Config{
		TotalJobs: jobs,
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: size},
	})
	dataDir := filepath.Join(t.TempDir(), "data")
	seedRunMode(t, dataDir, ModeNever)
	h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	h.waitDownloaded(jobs)
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	input := srv.Stats().Jobs[srv.Stats().Sent[0]].InputFile
	unsealed := 0
	editState(t, dataDir, func(snap *statefile.Snapshot, b *statefile.Batch) {
		for _, f := range snap.Files {
			if f.Sealed() {
				unsealed++
				f.SHA256, f.VerifiedBytes = "", 0
				b.PutFile(f)
			}
		}
	})
	if unsealed < 2 {
		t.Fatalf("%d files had a hash recorded at download, want the app and the input", unsealed)
	}
	app := projectFile(t, dataDir, refAppName)
	if err := os.WriteFile(app, tamperedScript(t, readFile(t, app), true), 0o755); err != nil {
		t.Fatal(err)
	}
	h = startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	h.setRunMode(ModeAlways)
	st := waitAllReported(t, srv, jobs, 60*time.Second)
	checkOutputs(t, st, size, 1)
	if _, err := os.Stat(filepath.Join(dataDir, tamperMarker)); err == nil {
		t.Error("the tampered app ran")
	}
	if n := st.Downloads[refAppName]; n != 2 {
		t.Errorf("app file downloaded %d times, want 2", n)
	}
	if len(h.logs.Find("recorded the hash of a file verified before hashes were kept", "file", input)) != 1 {
		t.Errorf("the unsealed input %s was not verified and hashed once", input)
	}
	if !h.errorLogged(refAppName) {
		t.Errorf("the tampered unsealed app file was not refused")
	}
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Every file of the state has its hash again, and it is the file's.
	editState(t, dataDir, func(snap *statefile.Snapshot, _ *statefile.Batch) {
		for _, f := range snap.Files {
			if f.IsUpload() || f.Status != boinc.FilePresent {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dataDir, "projects", boinc.EscapeProjectURL(f.ProjectURL), f.Name))
			if err != nil {
				continue // removed after the task was acked
			}
			sum := sha256.Sum256(b)
			if f.SHA256 != hex.EncodeToString(sum[:]) || f.VerifiedBytes != int64(len(b)) {
				t.Errorf("file %s: recorded sha256 %q size %d, file has %x size %d", f.Name, f.SHA256, f.VerifiedBytes, sum, len(b))
			}
		}
	})
}

// fileCheckDaemon is a daemon with one project file, enough for the file
// checks (no loop, no state file).
func fileCheckDaemon(t testing.TB, data []byte) (*Daemon, *boinc.FileInfo) {
	t.Helper()
	d := &Daemon{opt: Options{DataDir: t.TempDir()}, st: newClientState(), log: slog.New(slog.DiscardHandler)}
	f := &boinc.FileInfo{ProjectURL: "http://p.example/", Name: "app_1.0", NBytes: float64(len(data)), Status: boinc.FilePresent}
	d.st.files[f.Key()] = f
	if err := os.MkdirAll(filepath.Dir(d.filePath(f)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.filePath(f), data, 0o755); err != nil {
		t.Fatal(err)
	}
	seal, err := readSeal(d.filePath(f), false)
	if err != nil {
		t.Fatal(err)
	}
	f.SHA256, f.VerifiedBytes = seal.sha256, seal.size
	return d, f
}

// What the check before a start sees, and what the cheaper start-up
// check (no hash) lets through.
func TestFileProblem(t *testing.T) {
	t.Parallel()
	orig := []byte("#!/bin/sh\necho hello\n")
	for _, tc := range []struct {
		name       string
		damage     func(t *testing.T, path string)
		want       string // substring of the problem with hashing; "" = fine
		wantNoHash string
	}{
		{"untouched", func(*testing.T, string) {}, "", ""},
		{"missing", func(t *testing.T, p string) { must(t, os.Remove(p)) }, "missing", "missing"},
		{"truncated", func(t *testing.T, p string) { must(t, os.Truncate(p, 3)) }, "wrong size: 3 bytes, verified 21", "wrong size"},
		{"same size", func(t *testing.T, p string) {
			must(t, os.WriteFile(p, []byte("#!/bin/sh\necho HELLO\n"), 0o755))
		}, "content changed since it was verified", ""},
		{"replaced by a link to the same bytes", func(t *testing.T, p string) {
			other := p + ".elsewhere"
			must(t, os.WriteFile(other, orig, 0o755))
			must(t, os.Remove(p))
			must(t, os.Symlink(other, p))
		}, "not a regular file", "not a regular file"},
		{"replaced by a directory", func(t *testing.T, p string) {
			must(t, os.Remove(p))
			must(t, os.Mkdir(p, 0o755))
		}, "not a regular file", "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, f := fileCheckDaemon(t, orig)
			tc.damage(t, d.filePath(f))
			for _, c := range []struct {
				hash bool
				want string
			}{{true, tc.want}, {false, tc.wantNoHash}} {
				got := d.fileProblem(f, c.hash)
				if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
					t.Errorf("fileProblem(hash=%v) = %q, want %q", c.hash, got, c.want)
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A file that failed is out of use: removed, not present, its hash and
// transfer state forgotten, the reason kept for the task's error.
func TestRefetchMarksFile(t *testing.T) {
	t.Parallel()
	d, f := fileCheckDaemon(t, []byte("data"))
	f.Xfer.NumRetries = 2
	d.refetch(f, "content changed", "before task start", "task_1")
	if _, err := os.Lstat(d.filePath(f)); err == nil {
		t.Error("the file that failed is still on disk")
	}
	if f.Status != boinc.FileNotPresent || f.LocalError != "content changed" || f.Sealed() || f.Xfer.NumRetries != 0 {
		t.Errorf("after refetch: %+v", f)
	}
	if msg := refetchFailedMsg(f); !strings.Contains(msg, f.Name) || !strings.Contains(msg, "content changed") {
		t.Errorf("task error message %q names neither the file nor the reason", msg)
	}
}

// BenchmarkFileCheck10MB is the check before a task start of one 10 MB
// file: lstat, open, fstat, read and SHA-256.
func BenchmarkFileCheck10MB(b *testing.B) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 10<<20/16)
	d, f := fileCheckDaemon(b, data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for range b.N {
		if p := d.fileProblem(f, true); p != "" {
			b.Fatal(p)
		}
	}
}
