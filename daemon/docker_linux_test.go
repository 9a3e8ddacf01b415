package daemon

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/notices"
	"github.com/boincd/boincd/workfetch"
)

// fakeEngine is a scripted podman (or docker) CLI on a PATH of its own.
type fakeEngine struct {
	dir, log string
}

// newFakeEngine writes name into a fresh directory: `--version` prints
// version, `run` runs runBody, `ps`/`image ls` print ps/images, and every
// call is logged. The daemon's PATH is that directory alone, so the
// machine's real docker (or podman) is never found.
func newFakeEngine(t *testing.T, name, version, runBody, ps, images string) *fakeEngine {
	t.Helper()
	f := &fakeEngine{dir: t.TempDir()}
	f.log = filepath.Join(f.dir, "calls.log")
	f.add(t, name, version, runBody, ps, images)
	return f
}

func (f *fakeEngine) add(t *testing.T, name, version, runBody, ps, images string) {
	t.Helper()
	script := "#!/bin/sh\n" +
		"echo \"" + name + " $*\" >> '" + f.log + "'\n" +
		"case \"$1\" in\n" +
		"--version) echo '" + version + "';;\n" +
		"run) " + runBody + ";;\n" +
		"ps) /bin/cat <<'EOF'\n" + ps + "\nEOF\n;;\n" +
		"image) if [ \"$2\" = ls ]; then /bin/cat <<'EOF'\n" + images + "\nEOF\nfi;;\n" +
		"esac\n"
	tmp := filepath.Join(f.dir, "."+name)
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	// Renamed into place: a lookup never sees half a script.
	if err := os.Rename(tmp, filepath.Join(f.dir, name)); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeEngine) runner() container.Runner { return container.Exec{Env: []string{"PATH=" + f.dir}} }

func (f *fakeEngine) calls() []string {
	b, _ := os.ReadFile(f.log)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func (f *fakeEngine) count(call string) int {
	n := 0
	for _, c := range f.calls() {
		if c == call {
			n++
		}
	}
	return n
}

const helloOK = "echo 'Hello from Docker!'"

func (h *harness) requestXML(t *testing.T, url string) string {
	t.Helper()
	var buf bytes.Buffer
	err := h.d.query(context.Background(), func() {
		p := h.d.st.projects[url]
		if p == nil {
			return
		}
		req, _ := h.d.buildRequest(p, workfetch.Request{Project: -1}, time.Now())
		_, _ = req.WriteTo(&buf)
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func (h *harness) guiHost(t *testing.T) boinc.Host {
	t.Helper()
	var out boinc.Host
	if err := h.d.query(context.Background(), func() { out = h.d.reportedHost() }); err != nil {
		t.Fatal(err)
	}
	return out
}

func containerNotices(ns []notices.Notice) []notices.Notice {
	var out []notices.Notice
	for _, n := range ns {
		if n.Key == "docker:missing" {
			out = append(out, n)
		}
	}
	return out
}

// The engine found is reported in host_info (scheduler request and GUI
// RPC), logged once, and no notice is shown; without one, the notice is
// there and nothing is reported; dont_use_docker skips the detection,
// puts <dont_use_docker/> in requests and shows no notice.
func TestContainerEngineReporting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		version     string
		run         string
		dontUse     func(cfg *config.Config, dataDir string)
		wantXML     []string
		wantNoXML   []string
		wantLog     string
		wantNotice  bool
		wantVersion string
		wantType    int
	}{
		{
			name: "podman works", version: "podman version 4.9.3", run: helloOK,
			wantXML:   []string{"    <docker_version>4.9.3</docker_version>\n    <docker_type>2</docker_type>\n"},
			wantNoXML: []string{"dont_use_docker"},
			wantLog:   "Docker: version 4.9.3 (podman)", wantVersion: "4.9.3", wantType: 2,
		},
		{
			name: "hello-world fails", version: "podman version 4.9.3",
			run:       "echo 'Error: crun: cgroups in hybrid mode not supported' >&2; exit 126",
			wantNoXML: []string{"docker_version", "docker_type", "dont_use_docker"},
			wantLog:   "Docker: not usable: podman 4.9.3 cannot run a container", wantNotice: true,
		},
		{
			name: "dont_use_docker in boincd.toml", version: "podman version 4.9.3", run: helloOK,
			dontUse:   func(cfg *config.Config, _ string) { cfg.DontUseDocker = true },
			wantXML:   []string{"    <dont_use_docker/>\n"},
			wantNoXML: []string{"docker_version"},
			wantLog:   "Docker: not used (dont_use_docker)",
		},
		{
			name: "dont_use_docker in cc_config.xml", version: "podman version 4.9.3", run: helloOK,
			dontUse: func(_ *config.Config, dataDir string) {
				writeTestFile(t, filepath.Join(dataDir, CCConfigFile), "<cc_config><options><dont_use_docker/></options></cc_config>\n")
			},
			wantXML:   []string{"    <dont_use_docker/>\n"},
			wantNoXML: []string{"docker_version"},
			wantLog:   "Docker: not used (dont_use_docker)",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := testsupport.StartProject(t, testproject.Config{})
			eng := newFakeEngine(t, "podman", tc.version, tc.run, "", "")
			dataDir := filepath.Join(t.TempDir(), "data")
			cfg := projectsConfig(srv)
			if tc.dontUse != nil {
				if err := os.MkdirAll(dataDir, 0o755); err != nil {
					t.Fatal(err)
				}
				tc.dontUse(cfg, dataDir)
			}
			h := startDaemonIn(t, dataDir, cfg, func(o *Options) { o.Containers = eng.runner() })
			testsupport.WaitFor(t, 20*time.Second, "the container engine logged", func() bool {
				for _, r := range h.logs.Records() {
					if strings.HasPrefix(r.Str("msg"), tc.wantLog) {
						return true
					}
				}
				return false
			})
			testsupport.WaitFor(t, 20*time.Second, "the project in the state", func() bool { return h.requestXML(t, srv.URL()) != "" })
			xml := h.requestXML(t, srv.URL())
			for _, w := range tc.wantXML {
				if !strings.Contains(xml, w) {
					t.Errorf("request lacks %q:\n%s", w, xml)
				}
			}
			for _, w := range tc.wantNoXML {
				if strings.Contains(xml, w) {
					t.Errorf("request has %q", w)
				}
			}
			if host := h.guiHost(t); host.DockerVersion != tc.wantVersion || host.DockerType != tc.wantType {
				t.Errorf("get_host_info engine %q type %d, want %q type %d", host.DockerVersion, host.DockerType, tc.wantVersion, tc.wantType)
			}
			if tc.wantNotice {
				testsupport.WaitFor(t, 20*time.Second, "the notice", func() bool { return len(containerNotices(h.notices(t))) == 1 })
				n := containerNotices(h.notices(t))[0]
				if n.Link != InstallDockerURL || !strings.Contains(n.Description, "install podman") || !strings.Contains(n.Description, "hybrid mode") {
					t.Errorf("notice %+v", n)
				}
			} else {
				// Notices follow the health check every step: give it a few.
				time.Sleep(500 * time.Millisecond)
				if ns := containerNotices(h.notices(t)); len(ns) != 0 {
					t.Errorf("notice %+v", ns)
				}
			}
			if tc.dontUse != nil && eng.count("podman --version") != 0 {
				t.Errorf("engine run with dont_use_docker: %q", eng.calls())
			}
			n := 0
			for _, r := range h.logs.Records() {
				if strings.HasPrefix(r.Str("msg"), tc.wantLog) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%q logged %d times", tc.wantLog, n)
			}
		})
	}
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// reset_host_info detects again; an engine installed after start is
// found by the PATH lookup without a restart, and the notice goes.
func TestContainerRedetection(t *testing.T) {
	t.Parallel()
	eng := newFakeEngine(t, "docker", "something that is not docker", helloOK, "", "")
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), config.Default(), func(o *Options) { o.Containers = eng.runner() })
	testsupport.WaitFor(t, 20*time.Second, "the missing-engine notice", func() bool { return len(containerNotices(h.notices(t))) == 1 })
	if err := h.do(guirpc.ResetHostInfo{}); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "a second detection", func() bool { return eng.count("docker --version") == 2 })

	// podman is installed; the next lookup (brought forward here: it
	// comes every 10 minutes) finds it.
	eng.add(t, "podman", "podman version 5.0.2", helloOK, "", "")
	if err := h.d.query(context.Background(), func() { h.d.ctr.nextLook = time.Time{} }); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "podman found", func() bool { return h.guiHost(t).DockerVersion == "5.0.2" })
	if got := h.guiHost(t).DockerType; got != int(container.Podman) {
		t.Errorf("docker_type %d", got)
	}
	testsupport.WaitFor(t, 20*time.Second, "the notice gone", func() bool { return len(containerNotices(h.notices(t))) == 0 })
	if n := len(h.logs.Find("container engine programs changed; looking for a working engine again")); n != 1 {
		t.Errorf("change logged %d times", n)
	}
}

// At start and after a detach, BOINC's images and containers that no
// task uses are removed; other images and containers are left alone.
func TestContainerCleanup(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{})
	esc := strings.ToLower(boinc.EscapeProjectURL(srv.URL()))
	ps := strings.Join([]string{"boinc__" + esc + "__gone_0", "boinc__old.example.org__x_0", "postgres"}, "\n")
	images := strings.Join([]string{
		"localhost/boinc__" + esc + "__gone:latest",
		"docker.io/library/hello-world:latest",
		"docker.io/library/postgres:16",
		"quay.io/someone/boinc__lookalike:1",
	}, "\n")
	eng := newFakeEngine(t, "podman", "podman version 4.9.3", helloOK, ps, images)
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) { o.Containers = eng.runner() })
	testsupport.WaitFor(t, 20*time.Second, "the start-up cleanup", func() bool { return eng.count("podman image rm localhost/boinc__"+esc+"__gone:latest") == 1 })
	for _, want := range []string{
		"podman rm --force boinc__" + esc + "__gone_0",
		"podman rm --force boinc__old.example.org__x_0",
	} {
		if eng.count(want) != 1 {
			t.Errorf("no %q in %q", want, eng.calls())
		}
	}
	for _, c := range eng.calls() {
		if strings.Contains(c, "postgres") || strings.Contains(c, "hello-world:latest") || strings.Contains(c, "lookalike") {
			t.Errorf("touched another owner's object: %q", c)
		}
	}
	// The engine saw the removal before the daemon logs it.
	testsupport.WaitFor(t, 20*time.Second, "the image removal logged", func() bool {
		return len(h.logs.Find("removed an image no task uses", "image", "__gone")) > 0
	})
	if n := len(h.logs.Find("removed an image no task uses", "image", "__gone")); n != 1 {
		t.Errorf("image removal logged %d times", n)
	}
	testsupport.WaitFor(t, 20*time.Second, "the project attached", func() bool { _, ok := h.projectCopy(srv.URL()); return ok })
	lists := eng.count("podman ps --all --format {{.Names}}")
	if err := h.do(guirpc.ProjectOp{URL: srv.URL(), Op: "reset"}); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "a cleanup after the reset", func() bool { return eng.count("podman ps --all --format {{.Names}}") > lists })
}

func TestNoticeReasonIsShort(t *testing.T) {
	t.Parallel()
	long := "podman 4.3.1 cannot run a container: exit status 126: " + strings.Repeat("é", 300)
	for _, tc := range []struct{ in, want string }{
		{"podman not found", "podman not found"},
		{"podman --version failed: exit status 1: time=x level=error\nmore\nlines", "podman --version failed: exit status 1: time=x level=error"},
	} {
		if got := noticeReason(tc.in); got != tc.want {
			t.Errorf("noticeReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	got := noticeReason(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "(the event log has the rest)") || len(got) > 260 {
		t.Errorf("long reason cut to %q", got)
	}
}

// Scheduler requests wait for the first detection, as the C++ client's
// first request comes after get_host_info found the engine, so the first
// request a project sees already offers the engine.
func TestFirstRequestWaitsForContainerDetection(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{})
	release := filepath.Join(t.TempDir(), "release")
	eng := newFakeEngine(t, "podman", "podman version 4.9.3",
		"while [ ! -e '"+release+"' ]; do sleep 0.05; done; "+helloOK, "", "")
	startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) { o.Containers = eng.runner() })
	testsupport.WaitFor(t, 20*time.Second, "the detection running", func() bool { return eng.count("podman run --rm hello-world") > 0 })
	// Long enough for a first request, which comes at once otherwise
	// (the other tests of this file see theirs within a second).
	time.Sleep(2 * time.Second)
	if n := srv.Stats().RPCs; n != 0 {
		t.Fatalf("%d scheduler requests before the engine was known", n)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "a scheduler request", func() bool { return srv.Stats().RPCs > 0 })
	if req := string(srv.Stats().LastRequest); !strings.Contains(req, "<docker_type>2</docker_type>") {
		t.Errorf("the first request does not offer podman:\n%s", req)
	}
}
