package daemon

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// Each test here feeds the daemon one kind of bad input and checks three
// things: the problem is logged with an error that says what is wrong,
// the daemon backs off where retrying makes sense, and no other project or
// task loses anything meanwhile (a healthy project runs alongside).

const (
	healthyJobs = 2
	testLimit   = 40 * time.Second
)

// backoffWatch records, for each consecutive-failure count seen in the
// daemon's view of a project, the MinRPCTime the daemon set then.
type backoffWatch struct {
	url   string
	minAt map[int]time.Time
	// future is true once a view showed MinRPCTime after the view's time
	// while failures were counted: the project was really backed off.
	future bool
}

func newBackoffWatch(url string) *backoffWatch {
	return &backoffWatch{url: url, minAt: map[int]time.Time{}}
}

func (w *backoffWatch) observe(v View) {
	p, ok := v.project(w.url)
	if !ok || p.RPCFailures == 0 {
		return
	}
	if _, seen := w.minAt[p.RPCFailures]; !seen {
		w.minAt[p.RPCFailures] = p.MinRPCTime
	}
	if p.MinRPCTime.After(v.Now) {
		w.future = true
	}
}

// check asserts that the daemon saw failures, backed off, and that no
// scheduler request to the project went out before the backoff expired.
func (w *backoffWatch) check(t *testing.T, logs *testsupport.LogBuffer) {
	t.Helper()
	if len(w.minAt) == 0 {
		t.Fatalf("the daemon's view never showed RPC failures for %s", w.url)
	}
	if !w.future {
		t.Errorf("the daemon's view never showed MinRPCTime in the future for %s: no backoff", w.url)
	}
	failures := logs.Find("scheduler request failed", "project", w.url)
	sends := logs.Find("sending scheduler request", "project", w.url)
	for i, f := range failures {
		minRPC, ok := w.minAt[i+1]
		if !ok {
			continue // that failure's view was missed by the poller
		}
		failedAt := f.Time()
		for _, s := range sends {
			if at := s.Time(); at.After(failedAt) {
				if at.Before(minRPC) {
					t.Errorf("after failure %d at %s the next request went out at %s, before the backoff ended at %s",
						i+1, failedAt.Format(time.StampMicro), at.Format(time.StampMicro), minRPC.Format(time.StampMicro))
				}
				break
			}
		}
	}
}

// TestSchedulerReplyFaults: replies that cannot be used (truncated, HTTP
// 500, larger than the limit) are logged with the reason, the project is
// backed off, the healthy project carries on, and once the server behaves
// the faulty project's jobs are done and reported exactly once.
func TestSchedulerReplyFaults(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		faults testproject.Faults
		// failures is how many daemon-level RPC failures the faults cause.
		failures int
		wantErr  string
	}{
		{name: "truncated reply", faults: testproject.Faults{MalformedReplies: 2}, failures: 2, wantErr: "truncated reply"},
		// The HTTP client retries 5xx twice by itself (500 ms, 1 s), so
		// three injected errors make one failed RPC as the daemon sees it.
		{name: "HTTP 500", faults: testproject.Faults{HTTPErrors: 3}, failures: 1, wantErr: "HTTP 500"},
		{name: "oversized reply", faults: testproject.Faults{OversizedReply: true}, failures: 1, wantErr: "reply larger than"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: 2, Faults: tc.faults})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startDaemon(t, faulty, healthy)
			watch := newBackoffWatch(faulty.URL())

			testsupport.WaitFor(t, testLimit, "the faulty project's jobs to be reported", func() bool {
				watch.observe(h.snapshot())
				st := faulty.Stats()
				if len(st.Sent) < 2 {
					return false
				}
				for _, n := range st.Sent {
					if st.Reported[n] == 0 {
						return false
					}
				}
				return true
			})
			checkHealthy(t, healthy, healthyJobs, testLimit)

			fails := h.logs.Find("scheduler request failed", "project", faulty.URL())
			if len(fails) != tc.failures {
				t.Errorf("logged %d scheduler failures for the faulty project, want %d", len(fails), tc.failures)
			}
			for _, f := range fails {
				t.Logf("failure: %s", f.Str("err"))
				if !strings.Contains(f.Str("err"), tc.wantErr) {
					t.Errorf("failure logged with err %q, want it to mention %q", f.Str("err"), tc.wantErr)
				}
				if f.Str("level") != "WARN" && f.Str("level") != "ERROR" {
					t.Errorf("failure logged at level %s", f.Str("level"))
				}
			}
			if len(h.logs.Find("scheduler request failed", "project", healthy.URL())) != 0 {
				t.Errorf("the healthy project had scheduler failures")
			}
			watch.check(t, h.logs)
			t.Logf("backoffs seen: %v", watch.minAt)

			// The faulty project recovered: jobs computed, uploaded and
			// reported once (faulted RPCs are not processed by the
			// server, so nothing was reported into the void).
			checkHealthy(t, faulty, 2, testLimit)
			if p, _ := h.snapshot().project(faulty.URL()); p.RPCFailures != 0 {
				t.Errorf("after recovery RPCFailures = %d, want 0", p.RPCFailures)
			}
		})
	}
}

// TestHostileFileNames: a reply naming a file that would land outside the
// project directory is refused as a whole, with an error naming the file;
// nothing is written outside the project directory, and the project
// recovers with its next jobs.
func TestHostileFileNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file string
		wantErr    string // in the logged error
		lookFor    string // file name that must not appear anywhere
	}{
		{name: "parent dir", file: "../evil", wantErr: `"../evil"`, lookFor: "evil"},
		{name: "nested parent dir", file: "x/../../evil2", wantErr: `"x/../../evil2"`, lookFor: "evil2"},
		{name: "absolute", file: "/etc/passwd_boincd_test", wantErr: `"/etc/passwd_boincd_test"`, lookFor: "passwd_boincd_test"},
		// A NUL cannot appear in XML at all: the reply does not parse.
		{name: "NUL byte", file: "evil3\x00.txt", wantErr: "illegal character code U+0000", lookFor: "evil3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// One job per reply: the first (hostile) reply carries job 1
			// only, jobs 2 and 3 come in later, clean replies.
			faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: 3, MaxJobsPerRPC: 1, Faults: testproject.Faults{HostileFileName: tc.file}})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startDaemon(t, faulty, healthy)
			watch := newBackoffWatch(faulty.URL())

			var st testproject.Stats
			testsupport.WaitFor(t, testLimit, "the faulty project's clean jobs to be reported", func() bool {
				watch.observe(h.snapshot())
				st = faulty.Stats()
				if len(st.Sent) < 3 {
					return false
				}
				for _, n := range st.Sent[1:] {
					if st.Reported[n] == 0 {
						return false
					}
				}
				return true
			})
			checkHealthy(t, healthy, healthyJobs, testLimit)

			fails := h.logs.Find("scheduler request failed", "project", faulty.URL())
			if len(fails) != 1 {
				t.Fatalf("logged %d scheduler failures, want 1 (the hostile reply)", len(fails))
			}
			t.Logf("refusal: %s", fails[0].Str("err"))
			if err := fails[0].Str("err"); !strings.Contains(err, tc.wantErr) {
				t.Errorf("refusal logged as %q, want it to name %q", err, tc.wantErr)
			}
			watch.check(t, h.logs)
			t.Logf("backoffs seen: %v", watch.minAt)

			hostile := st.Sent[0]
			if st.Jobs[hostile].InputFile != tc.file {
				t.Fatalf("job 1 input is %q, not the hostile name: test setup broken", st.Jobs[hostile].InputFile)
			}
			if st.Reported[hostile] != 0 {
				t.Errorf("the refused job %s was reported: the reply was not refused as a whole", hostile)
			}
			for _, n := range st.Sent[1:] {
				if rr := st.ReportedResults[n]; rr.State != 5 || rr.ExitStatus != 0 {
					t.Errorf("clean job %s reported with state %d exit %d", n, rr.State, rr.ExitStatus)
				}
			}
			if got := filesNamed(t, h.root, tc.lookFor); len(got) > 0 {
				t.Errorf("files with the hostile name exist: %q", got)
			}
			if _, err := os.Lstat(tc.file); tc.file[0] == '/' && err == nil {
				t.Errorf("%s exists", tc.file)
			}
			for _, task := range h.snapshot().Tasks {
				if task.Name == hostile {
					t.Errorf("the daemon holds the refused task %s", hostile)
				}
			}
		})
	}
}

// TestCorruptDownload: a download whose MD5 is wrong is retried after a
// backoff and the task completes; a file that stays corrupt is declared
// bad after three attempts and its task reported as a download error,
// while the other project completes normally.
func TestCorruptDownload(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		corrupt int
		// wantDownloads is how often the input file is fetched.
		wantDownloads int
		wantOK        bool
	}{
		{name: "once", corrupt: 1, wantDownloads: 2, wantOK: true},
		{name: "always", corrupt: 10, wantDownloads: verifyRetries, wantOK: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const inputSize = 4096
			faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Job: testproject.JobTemplate{InputSize: inputSize},
				Faults: testproject.Faults{CorruptDownloads: tc.corrupt}})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs, Job: testproject.JobTemplate{InputSize: inputSize}})
			h := startDaemon(t, faulty, healthy)

			st := waitAllReported(t, faulty, 1, testLimit)
			checkHealthy(t, healthy, healthyJobs, testLimit)

			name := st.Sent[0]
			job := st.Jobs[name]
			rr := st.ReportedResults[name]
			if got := st.Downloads[job.InputFile]; got != tc.wantDownloads {
				t.Errorf("input %s downloaded %d times, want %d", job.InputFile, got, tc.wantDownloads)
			}
			retries := h.logs.Find("download failed; will retry", "file", job.InputFile)
			if len(retries) != min(tc.corrupt, verifyRetries-1) {
				t.Errorf("logged %d download retries, want %d", len(retries), min(tc.corrupt, verifyRetries-1))
			}
			for _, r := range retries {
				if !strings.Contains(r.Str("err"), "MD5 mismatch") {
					t.Errorf("retry logged with err %q, want an MD5 mismatch", r.Str("err"))
				}
			}
			if tc.wantOK {
				if rr.State != 5 || rr.ExitStatus != 0 {
					t.Errorf("result reported with state %d exit %d, want 5 and 0", rr.State, rr.ExitStatus)
				}
				want := testproject.RefAppOutput(testproject.JobInput(job.N, inputSize), 1)
				if got := st.Uploaded[job.OutputFiles[0]]; !bytes.Equal(got, want) {
					t.Errorf("uploaded output %q, want %q (computed from a corrupt input?)", got, want)
				}
				// The retry waited for the backoff: the second download
				// started no sooner than XferBackoffMin/2 (less logging
				// latency) after the failure.
				starts := h.logs.Find("started download", "file", job.InputFile)
				if len(retries) == 1 && len(starts) == 2 {
					if gap := starts[1].Time().Sub(retries[0].Time()); gap < 200*time.Millisecond {
						t.Errorf("download retried %s after the failure, before the backoff", gap)
					}
				}
				return
			}
			if rr.ExitStatus != boinc.ErrResultDownload {
				t.Errorf("result reported with exit_status %d, want %d (ERR_RESULT_DOWNLOAD)", rr.ExitStatus, boinc.ErrResultDownload)
			}
			if !strings.Contains(rr.StderrOut, job.InputFile) {
				t.Errorf("stderr_out %q does not name the bad file %s", rr.StderrOut, job.InputFile)
			}
			bad := h.logs.Find("download failed permanently", "file", job.InputFile)
			if len(bad) != 1 || !strings.Contains(bad[0].Str("err"), "MD5 mismatch") {
				t.Errorf("want one 'download failed permanently' with an MD5 mismatch, got %v", bad)
			}
			if st.Reported[name] != 1 {
				t.Errorf("result reported %d times, want 1", st.Reported[name])
			}
			waitForgotten(t, h, name)
			if left := filesNamed(t, h.dataDir, job.InputFile); len(left) > 0 {
				t.Errorf("corrupt input left on disk after the ack: %q", left)
			}
		})
	}
}

// waitForgotten waits until the daemon no longer lists the task (acked
// results are deleted with their files).
func waitForgotten(t *testing.T, h *harness, name string) {
	t.Helper()
	testsupport.WaitFor(t, 10*time.Second, "the acked task "+name+" to be forgotten", func() bool {
		for _, task := range h.snapshot().Tasks {
			if task.Name == name {
				return false
			}
		}
		return true
	})
}

// TestUploadHandlerErrors: transient upload refusals are retried and the
// result reported once; a permanent refusal makes the result an upload
// failure that is still reported, not lost.
func TestUploadHandlerErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		faults   testproject.Faults
		attempts int
		state    int
		exit     int
	}{
		{name: "transient", faults: testproject.Faults{UploadFailures: 2}, attempts: 3, state: 5, exit: 0},
		{name: "permanent", faults: testproject.Faults{UploadPermanent: true}, attempts: 1, state: 7, exit: boinc.ErrResultUpload},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Faults: tc.faults})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startDaemon(t, faulty, healthy)

			st := waitAllReported(t, faulty, 1, testLimit)
			checkHealthy(t, healthy, healthyJobs, testLimit)
			name := st.Sent[0]
			out := st.Jobs[name].OutputFiles[0]
			rr := st.ReportedResults[name]
			if got := st.UploadRequests[out]; got != tc.attempts {
				t.Errorf("upload of %s attempted %d times, want %d", out, got, tc.attempts)
			}
			if st.Reported[name] != 1 {
				t.Errorf("result reported %d times, want exactly 1", st.Reported[name])
			}
			if rr.State != tc.state || rr.ExitStatus != tc.exit {
				t.Errorf("result reported with state %d exit_status %d, want %d and %d (stderr %q)", rr.State, rr.ExitStatus, tc.state, tc.exit, rr.StderrOut)
			}
			retries := h.logs.Find("upload failed; will retry", "file", out)
			if want := tc.attempts - 1; len(retries) != want {
				t.Errorf("logged %d upload retries, want %d", len(retries), want)
			}
			if tc.state == 7 {
				bad := h.logs.Find("upload failed permanently", "file", out)
				if len(bad) != 1 || !strings.Contains(bad[0].Str("err"), "injected fault") {
					t.Errorf("want one 'upload failed permanently' carrying the server's message, got %v", bad)
				}
			} else if !bytes.Equal(st.Uploaded[out], testproject.RefAppOutput(nil, 1)) {
				t.Errorf("uploaded %q", st.Uploaded[out])
			}
			// Reported and acked: the daemon forgets the task, nothing
			// of it is left behind.
			waitForgotten(t, h, name)
			if left := filesNamed(t, h.dataDir, out); len(left) > 0 {
				t.Errorf("output files left after the ack: %q", left)
			}
		})
	}
}

// TestHangingScheduler: a server that sends half a reply and then nothing
// holds the RPC until the stall timeout, which the daemon cannot shorten
// (rpcclient's 5 min default; see the report). What must hold meanwhile:
// the loop stays responsive, and shutdown does not wait for the RPC.
func TestHangingScheduler(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Faults: testproject.Faults{HangReplies: 1}})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, testLimit, "the scheduler RPC to hang", func() bool {
		return srv.Faults().HangReplies == 0 && len(h.logs.Find("sending scheduler request", "project", srv.URL())) == 1
	})
	time.Sleep(300 * time.Millisecond)
	// The RPC runs in its own goroutine: views are still served.
	v := h.snapshot()
	if p, ok := v.project(srv.URL()); !ok || p.RPCFailures != 0 {
		t.Errorf("project view during the hang: %+v", p)
	}
	start := time.Now()
	if err := h.stop(5 * time.Second); err != nil {
		t.Fatalf("Run with a hanging RPC: %v after %s", err, time.Since(start))
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("shutdown took %s with a hanging RPC", took)
	}
	if fails := h.logs.Find("scheduler request failed"); len(fails) != 0 {
		t.Errorf("a cancelled RPC was counted as a failure: %v", fails)
	}
}

// TestAppFailures: an app that exits non-zero or dies by a signal is
// reported as a compute error with its stderr, and repeated failures back
// off the project's work fetch; the healthy project is unaffected.
func TestAppFailures(t *testing.T) {
	t.Parallel()
	segv := testproject.ShellApp("crasher", "#!/bin/sh\necho 'crasher: about to crash' >&2\nkill -SEGV $$\nsleep 5\n")
	cases := []struct {
		name     string
		app      testproject.App
		cmdline  string
		exit     int
		inStderr []string
	}{
		{name: "exit 3", app: testproject.DefaultApp(), cmdline: "--seconds 1 --exit 3", exit: 3,
			inStderr: []string{"refapp: failing with exit 3", "process exited with code 3"}},
		{name: "SIGSEGV", app: segv, cmdline: "--seconds 1", exit: 11, // the signal number, as the C++ client reports it
			inStderr: []string{"crasher: about to crash", "process got signal 11"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const jobs = 3
			faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: jobs, Apps: []testproject.App{tc.app},
				Job: testproject.JobTemplate{CommandLine: tc.cmdline}})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startDaemon(t, faulty, healthy)

			st := waitAllReported(t, faulty, jobs, testLimit)
			checkHealthy(t, healthy, healthyJobs, testLimit)
			for _, name := range st.Sent {
				rr := st.ReportedResults[name]
				if rr.State != 3 {
					t.Errorf("%s reported with state %d, want 3 (compute error)", name, rr.State)
				}
				if rr.ExitStatus != tc.exit {
					t.Errorf("%s reported with exit_status %d, want %d", name, rr.ExitStatus, tc.exit)
				}
				for _, s := range tc.inStderr {
					if !strings.Contains(rr.StderrOut, s) {
						t.Errorf("%s: stderr_out %q lacks %q", name, rr.StderrOut, s)
					}
				}
				if len(rr.OutputFiles) != 0 {
					t.Errorf("%s: failed result reports output files %q", name, rr.OutputFiles)
				}
			}
			errs := h.logs.Find("computation error", "project", faulty.URL())
			if len(errs) != jobs {
				t.Errorf("logged %d computation errors, want %d", len(errs), jobs)
			}
			keep := h.logs.Find("tasks keep failing; holding off work fetch from this project", "project", faulty.URL())
			if len(keep) == 0 {
				t.Errorf("no task-failure backoff logged after %d failures", jobs)
			}
			for _, k := range keep {
				if k.Num("consecutive_failures") < 2 {
					t.Errorf("task-failure backoff engaged after %v failures, want ≥ 2", k["consecutive_failures"])
				}
			}
			if n := len(h.logs.Find("tasks keep failing; holding off work fetch from this project", "project", healthy.URL())); n != 0 {
				t.Errorf("the healthy project was backed off for task failures %d times", n)
			}
		})
	}
}

// TestLockedDataDir: a second daemon on a data directory in use refuses to
// start and says why; the first keeps running.
func TestLockedDataDir(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, testLimit, "the first daemon to start", func() bool {
		return len(h.logs.Find("boincd started")) == 1
	})
	logs := &testsupport.LogBuffer{}
	d2, err := New(testOptions(h.dataDir, logs, projectsConfig(srv)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err = d2.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "another boincd uses this data directory") {
		t.Fatalf("second Run on %s: %v, want 'another boincd uses this data directory'", h.dataDir, err)
	}
	if !strings.Contains(err.Error(), filepath.Join(h.dataDir, StateFileName)) {
		t.Errorf("error %q does not name the state file", err)
	}
	// The first daemon is unaffected and finishes its job.
	h.snapshot()
	checkHealthy(t, srv, 1, testLimit)
}

// TestCorruptStateFile: a state file that is not a usable database stops
// Run with an error naming the file, and the file is left exactly as it
// was (it may be someone's only copy of their work).
func TestCorruptStateFile(t *testing.T) {
	t.Parallel()
	// A real state file, cut in half.
	realState := func(t *testing.T) []byte {
		srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
		h := startDaemon(t, srv)
		checkHealthy(t, srv, 1, testLimit)
		if err := h.stop(15 * time.Second); err != nil {
			t.Fatalf("stop: %v", err)
		}
		b := readFile(t, filepath.Join(h.dataDir, StateFileName))
		return b[:len(b)/2]
	}
	cases := []struct {
		name string
		data func(t *testing.T) []byte
	}{
		{name: "short garbage", data: func(*testing.T) []byte { return []byte("this is not a bbolt file\n") }},
		{name: "page of garbage", data: func(*testing.T) []byte { return bytes.Repeat([]byte{0xde, 0xad, 0xbe, 0xef}, 4096) }},
		{name: "truncated state file", data: realState},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			data := tc.data(t)
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, StateFileName)
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			d, err := New(testOptions(dir, &testsupport.LogBuffer{}, projectsConfig()))
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = d.Run(ctx)
			if err == nil {
				t.Fatalf("Run on a corrupt state file returned nil")
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Run did not notice the corrupt state file: %v", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if got := readFile(t, path); !bytes.Equal(got, data) {
				t.Errorf("the corrupt state file was modified (%d bytes → %d bytes)", len(data), len(got))
			}
		})
	}
}

// TestHangWhileReportingThenRestart: the RPC carrying a finished result
// hangs and the daemon is stopped meanwhile. Nothing is lost: the next
// daemon on the same data directory reports the result, exactly once,
// without computing it again.
func TestHangWhileReportingThenRestart(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := projectsConfig(srv)
	// The first request that reports a result hangs: the report goes
	// with the work request the finished upload brings at once.
	srv.SetFaults(testproject.Faults{HangReplies: 1, HangReportsOnly: true})
	h := startDaemonIn(t, dataDir, cfg, nil)
	var name string
	testsupport.WaitFor(t, testLimit, "a job to be sent", func() bool {
		st := srv.Stats()
		if len(st.Sent) == 0 {
			return false
		}
		name = st.Sent[0]
		return true
	})
	testsupport.WaitFor(t, testLimit, "the reporting RPC to hang", func() bool {
		return srv.Faults().HangReplies == 0
	})
	if req := string(srv.Stats().LastRequest); !strings.Contains(req, "<name>"+name+"</name>") {
		t.Fatalf("the hanging RPC does not report %s:\n%s", name, req)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := h.stop(5 * time.Second); err != nil {
		t.Fatalf("Run with a hanging RPC: %v after %s", err, time.Since(start))
	}
	if n := srv.Stats().Reported[name]; n != 0 {
		t.Fatalf("the hung RPC was processed (%d reports): test setup broken", n)
	}

	h2 := startDaemonIn(t, dataDir, cfg, nil)
	st := waitAllReported(t, srv, 1, testLimit)
	if rr := st.ReportedResults[name]; rr.State != 5 || rr.ExitStatus != 0 {
		t.Errorf("after restart %s reported with state %d exit %d, want 5 and 0", name, rr.State, rr.ExitStatus)
	}
	if st.Reported[name] != 1 {
		t.Errorf("reported %d times, want 1", st.Reported[name])
	}
	if st.UploadRequests[st.Jobs[name].OutputFiles[0]] != 1 {
		t.Errorf("output uploaded %d times, want 1", st.UploadRequests[st.Jobs[name].OutputFiles[0]])
	}
	if n := len(h2.logs.Find("task started")); n != 0 {
		t.Errorf("the restarted daemon ran %d tasks; the finished one must not run again", n)
	}
}

// TestFirstContactRetried: a project attached with no_new_tasks whose
// scheduler fails at first contact must still be contacted again after
// the backoff, so it gets a host id (and its messages, prefs and
// notices), as the C++ client keeps sched_rpc_pending until an RPC
// succeeds.
func TestFirstContactRetried(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Faults: testproject.Faults{HTTPErrors: 3}})
	cfg := projectsConfig(srv)
	cfg.Projects[0].NoNewTasks = true
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), cfg, nil)
	testsupport.WaitFor(t, testLimit, "the first contact to fail", func() bool {
		return len(h.logs.Find("scheduler request failed", "project", srv.URL())) == 1
	})
	testsupport.WaitFor(t, 5*time.Second, "a retried first contact to give the project a host id "+
		"(BUG if this times out: the failed RPC's SchedRPCPending was cleared when it started and is never restored)", func() bool {
		p, _ := h.snapshot().project(srv.URL())
		return p.HostID != 0
	})
}

// TestOverlongFileName: a file name longer than the file system allows
// (a 300-byte component; NAME_MAX is 255 on Linux) can never be stored.
// Either the reply is refused up front, or the download fails for good
// and the task is reported as a download error; what must not happen is
// a task stuck "downloading" behind retries of an error that cannot go
// away.
func TestOverlongFileName(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 300)
	faulty := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, MaxJobsPerRPC: 1, Faults: testproject.Faults{HostileFileName: long}})
	healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
	h := startDaemon(t, faulty, healthy)
	checkHealthy(t, healthy, healthyJobs, testLimit)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, f := range h.logs.Find("scheduler request failed", "project", faulty.URL()) {
			if strings.Contains(f.Str("err"), long) {
				return // refused up front, naming the file
			}
		}
		st := faulty.Stats()
		if len(st.Sent) == 1 && st.Reported[st.Sent[0]] > 0 {
			if rr := st.ReportedResults[st.Sent[0]]; rr.ExitStatus != boinc.ErrResultDownload {
				t.Errorf("reported with exit_status %d, want %d", rr.ExitStatus, boinc.ErrResultDownload)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	retries := h.logs.Find("download failed; will retry", "file", long)
	var last string
	if len(retries) > 0 {
		last = retries[len(retries)-1].Str("err")
	}
	t.Errorf("BUG: a %d-byte file name is neither refused nor failed: the task stays downloading, retried %d times so far (last error %q); ENAMETOOLONG is treated as transient",
		len(long), len(retries), testsupport.Tail(last, 120))
}
