package daemon

import (
	"bytes"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/internal/hostilehttp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// Transport-level hostility (internal/hostilehttp in front of a real test
// project): each test checks that the hostile project costs bounded time,
// is backed off, and that a healthy project alongside loses nothing.

// hostileStall is the daemon's HTTP stall timeout in these tests: replies
// are then bounded at 2 s (ReplyTimeout defaults to twice the stall) and
// must move 10 bytes in every 1 s window.
const hostileStall = time.Second

// hostileProject serves a test project through wrap, which gets the
// project's own handler and returns the one to serve. The server closes
// after the daemon (cleanups run in reverse).
func hostileProject(t *testing.T, cfg testproject.Config, wrap func(tp http.Handler) http.Handler) (*testproject.Server, string) {
	t.Helper()
	tp := testsupport.NewProject(t, cfg)
	srv := httptest.NewServer(wrap(tp.Handler()))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return tp, srv.URL + "/"
}

// route serves bad for requests matching match and tp otherwise.
func route(tp http.Handler, bad http.Handler, match func(*http.Request) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if match(r) {
			bad.ServeHTTP(w, r)
			return
		}
		tp.ServeHTTP(w, r)
	})
}

func isScheduler(r *http.Request) bool { return r.URL.Path == "/cgi" }
func isInput(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/download/") && strings.HasSuffix(r.URL.Path, "_in")
}

func configFor(urls ...string) *config.Config {
	cfg := config.Default()
	for _, u := range urls {
		cfg.Projects = append(cfg.Projects, config.Project{URL: u, Authenticator: "test-account-key", ResourceShare: 100})
	}
	return cfg
}

func startHostileDaemon(t *testing.T, urls ...string) *harness {
	t.Helper()
	return startDaemonIn(t, filepath.Join(t.TempDir(), "data"), configFor(urls...), func(o *Options) {
		o.HTTPStallTimeout = hostileStall
	})
}

// TestHostileSchedulerTransport: scheduler replies that never end, drip,
// hang, inflate or redirect badly each fail the RPC within the bounds with
// an error saying why; the project is backed off; the healthy project is
// served meanwhile; once the server is fixed the project's jobs complete.
func TestHostileSchedulerTransport(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		bad     http.Handler
		wantErr string
	}{
		{name: "reply never ends", bad: hostilehttp.Drip{Prefix: []byte("<scheduler_reply>\n"), Filler: ' ', Chunk: 100, Interval: 10 * time.Millisecond, Total: -1},
			wantErr: "reply took longer than 2s"},
		{name: "slow drip", bad: hostilehttp.Drip{Filler: ' ', Chunk: 1, Interval: 300 * time.Millisecond, Total: -1},
			wantErr: "too slow"},
		{name: "hang after headers", bad: hostilehttp.Hang{Headers: true}, wantErr: "no data for 1s"},
		{name: "gzip bomb", bad: hostilehttp.GzipBomb{Inflated: 1 << 30}, wantErr: "reply larger than"},
		{name: "redirect loop", bad: hostilehttp.Redirect{Loop: true}, wantErr: "more than 10 redirects"},
		{name: "redirect to file", bad: hostilehttp.Redirect{To: "file:///etc/passwd"}, wantErr: `scheme "file"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var toggle *hostilehttp.Toggle
			faulty, faultyURL := hostileProject(t, testproject.Config{TotalJobs: 2}, func(tp http.Handler) http.Handler {
				toggle = &hostilehttp.Toggle{Bad: route(tp, tc.bad, isScheduler), Good: tp}
				return toggle
			})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startHostileDaemon(t, faultyURL, healthy.URL())
			watch := newBackoffWatch(faultyURL)

			start := time.Now()
			testsupport.WaitFor(t, testLimit, "two failed RPCs to the hostile scheduler", func() bool {
				watch.observe(h.snapshot())
				return len(h.logs.Find("scheduler request failed", "project", faultyURL)) >= 2
			})
			t.Logf("figures: %s: two failed RPCs after %s", tc.name, time.Since(start).Round(time.Millisecond))
			for _, f := range h.logs.Find("scheduler request failed", "project", faultyURL) {
				if !strings.Contains(f.Str("err"), tc.wantErr) {
					t.Errorf("failure logged as %q, want it to mention %q", f.Str("err"), tc.wantErr)
				}
			}
			watch.check(t, h.logs)
			checkHealthy(t, healthy, healthyJobs, testLimit)

			toggle.Heal()
			checkHealthy(t, faulty, 2, testLimit)
		})
	}
}

// TestHostileDownloadTransport: input-file downloads that overflow nbytes
// or inflate are cut at nbytes+1 and rejected (never stored), and after
// the retries the task fails its download; ones that break off (a
// Content-Length longer than the body, a slow drip) are resumed with Range;
// one with a short Content-Length is fetched again whole. The healthy
// project is unaffected.
func TestHostileDownloadTransport(t *testing.T) {
	t.Parallel()
	const inputSize = 100000
	cases := []struct {
		name string
		// bad serves the first bad requests for the input file, given
		// its real bytes.
		bad  func(body []byte) http.Handler
		nBad int64
		// fails: the task's download must fail for good (else it must
		// complete and be reported successfully).
		fails   bool
		wantErr string
		// ranged: the completing download must have used Range.
		ranged bool
	}{
		{name: "endless body past nbytes", nBad: 1 << 20, fails: true, wantErr: "file too big",
			bad: func(body []byte) http.Handler {
				return hostilehttp.Drip{Prefix: body, Filler: 'x', Chunk: 64 << 10, Interval: time.Millisecond, Total: -1}
			}},
		{name: "gzip bomb", nBad: 1 << 20, fails: true, wantErr: "file too big",
			bad: func([]byte) http.Handler { return hostilehttp.GzipBomb{Inflated: 1 << 30} }},
		{name: "content-length longer than body", nBad: 1, ranged: true, wantErr: "unexpected EOF",
			bad: func(body []byte) http.Handler {
				return hostilehttp.WrongLength{Body: body[:len(body)/2], ContentLength: int64(len(body))}
			}},
		{name: "content-length shorter than body", nBad: 1, wantErr: "wrong size",
			bad: func(body []byte) http.Handler {
				return hostilehttp.WrongLength{Body: body, ContentLength: int64(len(body)) / 2}
			}},
		{name: "slow drip", nBad: 1, ranged: true, wantErr: "too slow",
			bad: func(body []byte) http.Handler {
				return hostilehttp.Drip{Prefix: body[:5000], Rest: body[5000:], Chunk: 1, Interval: 300 * time.Millisecond, Total: -1}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			faulty, faultyURL := hostileProject(t, testproject.Config{TotalJobs: 1, Job: testproject.JobTemplate{InputSize: inputSize}},
				func(tp http.Handler) http.Handler {
					first := &hostilehttp.FirstN{N: tc.nBad, Bad: hostilehttp.Mangle{Next: tp, Bad: tc.bad}, Good: tp}
					return route(tp, first, isInput)
				})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startHostileDaemon(t, faultyURL, healthy.URL())

			start := time.Now()
			if tc.fails {
				testsupport.WaitFor(t, testLimit, "the hostile download to fail for good", func() bool {
					return len(h.logs.Find("download failed permanently", "project", faultyURL)) > 0
				})
				fail := h.logs.Find("download failed permanently", "project", faultyURL)[0]
				if !strings.Contains(fail.Str("err"), tc.wantErr) {
					t.Errorf("permanent failure %q, want it to mention %q", fail.Str("err"), tc.wantErr)
				}
				t.Logf("figures: %s: failed for good after %s, %d attempts", tc.name, time.Since(start).Round(time.Millisecond),
					len(h.logs.Find("download failed; will retry", "project", faultyURL))+1)
				// The rejected bytes are not on disk.
				for _, p := range filesNamed(t, h.dataDir, "_in") {
					if st, err := os.Stat(p); err == nil && st.Size() > inputSize {
						t.Errorf("%s holds %d bytes, more than nbytes %d", p, st.Size(), inputSize)
					}
				}
				// The task is reported (as a download error), not lost.
				waitAllReported(t, faulty, 1, testLimit)
			} else {
				checkHealthy(t, faulty, 1, testLimit)
				retries := h.logs.Find("download failed; will retry", "project", faultyURL)
				if len(retries) == 0 || !strings.Contains(retries[0].Str("err"), tc.wantErr) {
					t.Errorf("first failure not logged with %q: %v", tc.wantErr, retries)
				}
				st := faulty.Stats()
				ranged := 0
				for _, n := range st.RangeDownloads {
					ranged += n
				}
				if tc.ranged && ranged == 0 {
					t.Errorf("the broken-off download was not resumed with Range")
				}
				for name, job := range st.Jobs {
					out := st.Uploaded[job.OutputFiles[0]]
					if want := testproject.RefAppOutput(testproject.JobInput(1, inputSize), 1); !bytes.Equal(out, want) {
						t.Errorf("result %s output %q: the task did not see the real input", name, out)
					}
				}
				t.Logf("figures: %s: recovered after %s, %d range requests", tc.name, time.Since(start).Round(time.Millisecond), ranged)
			}
			checkHealthy(t, healthy, healthyJobs, testLimit)
		})
	}
}

// TestHostileUploadTransport: an upload handler whose size query lies
// (more than the file, negative, junk) gets the whole file; its final
// status decides, so the result is uploaded and reported once.
func TestHostileUploadTransport(t *testing.T) {
	t.Parallel()
	const outSize = 20000 // past the 8192-byte size-query threshold
	app := testproject.ShellApp("bigout", "#!/bin/sh\nhead -c "+strconv.Itoa(outSize)+" /dev/zero | tr '\\0' 'x' > out\necho 0 > boinc_finish_called\nexit 0\n")
	cases := []struct {
		name string
		size string
	}{
		{name: "claims more than the file", size: "999999"},
		{name: "negative", size: "-5"},
		{name: "junk", size: "lots"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var liar *hostilehttp.LyingUploadHandler
			faulty, faultyURL := hostileProject(t, testproject.Config{TotalJobs: 1, Apps: []testproject.App{app}},
				func(tp http.Handler) http.Handler {
					liar = &hostilehttp.LyingUploadHandler{FileSize: func(int) string { return tc.size }, Next: tp}
					return route(tp, liar, func(r *http.Request) bool { return r.URL.Path == "/cgi-bin/file_upload_handler" })
				})
			healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startHostileDaemon(t, faultyURL, healthy.URL())
			st := waitAllReported(t, faulty, 1, testLimit)
			for name, job := range st.Jobs {
				if rr := st.ReportedResults[name]; rr.State != 5 || rr.ExitStatus != 0 {
					t.Errorf("result %s reported state %d exit %d", name, rr.State, rr.ExitStatus)
				}
				if out := st.Uploaded[job.OutputFiles[0]]; !bytes.Equal(out, bytes.Repeat([]byte("x"), outSize)) {
					t.Errorf("server holds %d bytes of the output, want the whole %d", len(out), outSize)
				}
				if n := st.UploadRequests[job.OutputFiles[0]]; n != 1 {
					t.Errorf("%d upload requests, want 1", n)
				}
			}
			if liar.Queries() != 1 {
				t.Errorf("%d size queries, want 1", liar.Queries())
			}
			if len(h.logs.Find("upload handler claims more bytes than the file has; sending it all"))+
				len(h.logs.Find("upload handler sent no usable <file_size>; sending the whole file")) == 0 {
				t.Errorf("the lie was not logged")
			}
			checkHealthy(t, healthy, healthyJobs, testLimit)
		})
	}
}

// TestUntrustedTLSProject: an https project whose certificate is not
// trusted fails with an error naming the host and the certificate, is
// backed off, and does not hold up the healthy project.
func TestUntrustedTLSProject(t *testing.T) {
	t.Parallel()
	tp, err := testproject.New(testproject.Config{Apps: []testproject.App{testproject.DefaultApp()}, TotalJobs: 1, RequestDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(tp.Handler())
	t.Cleanup(func() {
		srv.Close()
		tp.Close()
	})
	url := srv.URL + "/"
	healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
	h := startHostileDaemon(t, url, healthy.URL())
	testsupport.WaitFor(t, testLimit, "the master fetch of the https project to fail twice", func() bool {
		return len(h.logs.Find("cannot read the project's master page", "project", url)) >= 2
	})
	host := strings.TrimPrefix(srv.URL, "https://")
	for _, f := range h.logs.Find("cannot read the project's master page", "project", url) {
		if e := f.Str("err"); !strings.Contains(e, host) || !strings.Contains(e, "certificate") {
			t.Errorf("failure %q does not name the host %s and the certificate", e, host)
		}
	}
	checkHealthy(t, healthy, healthyJobs, testLimit)
	if tp.Stats().RPCs != 0 {
		t.Errorf("the untrusted server got %d scheduler RPCs", tp.Stats().RPCs)
	}
}

// The same https project, its certificate trusted through ca_bundle in
// boincd.toml, or through the data directory's ca-bundle.crt as the C++
// client trusts it (a broken one there is reported and skipped): the
// whole job cycle runs over verified TLS.
func TestTLSProjectWithCABundle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// config: the CA in boincd.toml's ca_bundle; dataDir: what the
		// data directory's ca-bundle.crt holds ("" for no file; "CA"
		// for the server's certificate).
		config  bool
		dataDir string
		warn    string
	}{
		{name: "config", config: true},
		{name: "data dir", dataDir: "CA"},
		{name: "broken data dir file", config: true, dataDir: "not a certificate\n", warn: "no PEM certificate found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tp, err := testproject.New(testproject.Config{
				Apps: []testproject.App{testproject.DefaultApp()}, TotalJobs: 1, RequestDelay: -1,
				Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
			})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewTLSServer(tp.Handler())
			t.Cleanup(func() {
				srv.Close()
				tp.Close()
			})
			pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
			cfg := config.Default()
			if tc.config {
				cfg.CABundle = filepath.Join(t.TempDir(), "ca.pem")
				if err := os.WriteFile(cfg.CABundle, pemBytes, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data := filepath.Join(t.TempDir(), "data")
			if tc.dataDir != "" {
				body := []byte(tc.dataDir)
				if tc.dataDir == "CA" {
					body = pemBytes
				}
				if err := os.MkdirAll(data, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(data, CABundleFile), body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg.Projects = []config.Project{{URL: srv.URL + "/", Authenticator: "k", ResourceShare: 100}}
			h := startDaemonIn(t, data, cfg, nil)
			testsupport.WaitFor(t, testLimit, "the task reported over TLS", func() bool { return len(tp.Stats().Acked) == 1 })
			warned := h.logs.Find("CA bundle in the data directory not used")
			switch {
			case tc.warn == "" && len(warned) > 0:
				t.Errorf("unexpected warning: %v", warned[0].Str("err"))
			case tc.warn != "" && (len(warned) != 1 || !strings.Contains(warned[0].Str("err"), tc.warn) ||
				!strings.Contains(warned[0].Str("file"), CABundleFile)):
				t.Errorf("warnings %v, want one naming %s and %q", warned, CABundleFile, tc.warn)
			}
		})
	}
}
