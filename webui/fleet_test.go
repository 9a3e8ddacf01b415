package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/guirpc/client"
)

// TestFleetStore: hosts survive a reopen; the file is 0600 and holds
// the password, which nothing else prints; bad input is refused.
func TestFleetStore(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFleet(dir)
	if err != nil || len(f.Hosts()) != 0 {
		t.Fatalf("new fleet: %v, %d hosts", err, len(f.Hosts()))
	}
	a, err := f.Add("", "192.0.2.7", "pw-a")
	if err != nil {
		t.Fatal(err)
	}
	if a.Addr != "192.0.2.7:31416" || a.Name != "192.0.2.7:31416" || a.ID == "" {
		t.Errorf("added %+v: want the default port and the address as name", a)
	}
	b, err := f.Add("lab <b>", "[::1]:4000", "pw-b")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []struct{ name, addr, pass string }{
		{"", "", "x"},                       // no address
		{"", "192.0.2.7:31416", "x"},        // already there
		{"", "http://host/", "x"},           // a URL, not an address
		{"", "host:", "x"},                  // no port
		{"", "host", "two\nlines"},          // not one line
		{strings.Repeat("n", 101), "h", ""}, // name too long
	} {
		if _, err := f.Add(bad.name, bad.addr, bad.pass); err == nil {
			t.Errorf("Add(%q, %q) accepted", bad.name, bad.addr)
		}
	}

	g, err := OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Hosts(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("reopened: %+v, want %+v and %+v", got, a, b)
	}
	if runtime.GOOS != "windows" {
		fi, err := os.Stat(g.Path())
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("fleet file mode %v, want 0600", fi.Mode().Perm())
		}
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("x", slog.Any("host", b))
	if s := logged.String() + fmt.Sprint(b) + fmt.Sprintf("%v", a); strings.Contains(s, "pw-") {
		t.Errorf("a host printed or logged shows its password: %s", s)
	}
	if ok, err := g.Remove(a.ID); !ok || err != nil {
		t.Fatalf("remove: %v %v", ok, err)
	}
	if ok, _ := g.Remove(a.ID); ok {
		t.Error("removed twice")
	}
	h, err := OpenFleet(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Hosts(); len(got) != 1 || got[0] != b {
		t.Fatalf("after remove: %+v", got)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".fleet*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestFleetCorruptFile: an unreadable file is named in the error, kept
// byte for byte aside, and the fleet starts empty and works.
func TestFleetCorruptFile(t *testing.T) {
	for name, content := range map[string]string{
		"not json":     `{"format":1,"hosts":[{"id":"a","addr":"h:1"`,
		"wrong format": `{"format":7,"hosts":[]}`,
		"no address":   `{"format":1,"hosts":[{"id":"a","addr":""}]}`,
		"repeated id":  `{"format":1,"hosts":[{"id":"a","addr":"h:1"},{"id":"a","addr":"h:2"}]}`,
		"unknown key":  `{"format":1,"hosts":[],"extra":1}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, FleetFile)
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := OpenFleet(dir)
			if err == nil || f == nil {
				t.Fatalf("OpenFleet: %v, %v; want a usable fleet and an error", f, err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "kept as") {
				t.Errorf("error %q does not name the file and where it went", err)
			}
			aside, _ := filepath.Glob(path + ".bad-*")
			if len(aside) != 1 {
				t.Fatalf("set aside: %v", aside)
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != content {
				t.Errorf("the set-aside file holds %q, want the original", b)
			}
			if _, err := f.Add("", "h", ""); err != nil {
				t.Fatal(err)
			}
			if b, _ := os.ReadFile(aside[0]); string(b) != content {
				t.Error("a change touched the set-aside file")
			}
		})
	}
}

// remoteHost is boincd's GUI RPC server in process standing in for
// another host: it serves state and records what it is asked to do.
type remoteHost struct {
	be   *fakeBackend
	addr string
}

func startRemote(t *testing.T, pass string, st guirpc.State) *remoteHost {
	t.Helper()
	be := &fakeBackend{st: st}
	srv, err := guirpc.Listen(guirpc.Config{Addr: "127.0.0.1:0", Backend: be, Password: pass, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &remoteHost{be: be, addr: srv.Addr().String()}
}

func remoteState() guirpc.State {
	st := testState()
	st.Results = append(st.Results, guirpc.ResultInfo{Result: boinc.Result{ProjectURL: "http://p.example/", Name: "task_err", Phase: boinc.PhaseComputeError}})
	st.Projects[0].RPCFailures = 3
	st.Projects[0].MinRPCTime = time.Now().Add(2 * time.Hour)
	st.CCStatus = guirpc.CCStatus{TaskMode: guirpc.ModeAuto, GPUMode: guirpc.ModeAuto, NetworkMode: guirpc.ModeNever, NetworkSuspendReason: 4,
		Health: []guirpc.HealthWarning{{Name: "disk_limit_reached", Message: "Disk limit reached"}}}
	return st
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// waitFor polls cond (the poller runs on its own goroutines).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFleetPoller: a host's tasks and problems; a wrong password and an
// unreachable host are told apart; a removed host's poller ends.
func TestFleetPoller(t *testing.T) {
	good := startRemote(t, "right", remoteState())
	locked := startRemote(t, "right", remoteState())
	f, err := OpenFleet(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	hg, _ := f.Add("good", good.addr, "right")
	hl, _ := f.Add("locked", locked.addr, "wrong")
	hd, _ := f.Add("down", closedAddr(t), "x")
	p := newFleetPoller(f, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.start(ctx)
	defer p.stop()
	p.watch()
	waitFor(t, "all three hosts read", func() bool {
		return p.snap(hg.ID).Status == hostOK && p.snap(hl.ID).Status == hostAuthFailed && p.snap(hd.ID).Status == hostUnreachable
	})

	v := remoteHostOf(hg, p.snap(hg.ID))
	if len(v.Tasks) != 1 || v.Tasks[0].Name != "task_1" || v.Tasks[0].State != "Running" || v.Tasks[0].Percent != "25.0%" || v.Total != 2 {
		t.Errorf("good host's tasks: %+v (of %d)", v.Tasks, v.Total)
	}
	if v.Version != "7.20.5" || len(v.Modes) != 3 || v.Modes[2].Mode != guirpc.ModeNever {
		t.Errorf("good host: version %q modes %+v", v.Version, v.Modes)
	}
	problems := strings.Join(v.Problems, "|")
	for _, want := range []string{"Disk limit reached", "Network suspended: user request", "1 task ended in error", "Evil: 3 failed scheduler requests, next in "} {
		if !strings.Contains(problems, want) {
			t.Errorf("problems %q lack %q", problems, want)
		}
	}
	if v := remoteHostOf(hl, p.snap(hl.ID)); len(v.Problems) != 1 || !strings.Contains(v.Problems[0], "password was refused") {
		t.Errorf("wrong password shown as %q", v.Problems)
	}
	if v := remoteHostOf(hd, p.snap(hd.ID)); len(v.Problems) != 1 || !strings.HasPrefix(v.Problems[0], "Unreachable: ") {
		t.Errorf("unreachable host shown as %q", v.Problems)
	}

	if _, err := f.Remove(hd.ID); err != nil {
		t.Fatal(err)
	}
	p.watch()
	p.mu.Lock()
	_, running := p.workers[hd.ID]
	n := len(p.workers)
	p.mu.Unlock()
	if running || n != 2 {
		t.Errorf("after removing a host: its poller running %v, %d pollers", running, n)
	}
}

// TestFleetPollerOnlyWhileWatched: nothing is polled before Serve or
// with an empty fleet; a host's poller ends once nobody has looked for
// the linger time, and the next look starts it again.
func TestFleetPollerOnlyWhileWatched(t *testing.T) {
	host := startRemote(t, "pw", remoteState())
	f, _ := OpenFleet(t.TempDir())
	p := newFleetPoller(f, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	p.linger = 50 * time.Millisecond
	workers := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.workers)
	}
	h, _ := f.Add("", host.addr, "pw")
	p.watch()
	if n := workers(); n != 0 {
		t.Fatalf("%d pollers before start", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.start(ctx)
	p.watch()
	if n := workers(); n != 1 {
		t.Fatalf("%d pollers for one host", n)
	}
	waitFor(t, "the host read", func() bool { return p.snap(h.ID).Status == hostOK })
	waitFor(t, "the poller to end unwatched", func() bool { return workers() == 0 })
	if p.snap(h.ID).Status != hostOK {
		t.Error("the last snapshot was dropped with the poller")
	}
	p.watch()
	if n := workers(); n != 1 {
		t.Fatalf("%d pollers after a new look", n)
	}
	cancel()
	p.stop()
	if n := workers(); n != 0 {
		t.Fatalf("%d pollers after stop", n)
	}
}

// TestFleetProblems: what a host's state says is wrong with it.
func TestFleetProblems(t *testing.T) {
	for _, tc := range []struct {
		f    hostFacts
		want []string
	}{
		{hostFacts{tasks: 3}, nil},
		{hostFacts{}, []string{"No tasks"}},
		{hostFacts{tasks: 1, taskSusp: 4, gpuSusp: 4}, []string{"Computing suspended: user request"}},
		{hostFacts{tasks: 1, taskSusp: 64}, nil}, // CPU throttling is not a problem
		{hostFacts{tasks: 2, errored: 2, netSusp: 1024, health: []string{"No GPU found"}}, []string{"No GPU found", "Network suspended: CPU is busy", "2 tasks ended in error"}},
	} {
		got := problemsOf(tc.f)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%+v: %q, want %q", tc.f, got, tc.want)
		}
	}
}

// TestFleetPage: a host added through the page shows its tasks; its
// password appears in no page; actions reach the right host; forms need
// the CSRF token; removing asks nothing of the host and forgets it.
func TestFleetPage(t *testing.T) {
	local := &fakeBackend{st: testState()}
	remote := startRemote(t, "remote-secret-pw", remoteState())
	dir := t.TempDir()
	s, err := Listen(Config{Addr: "127.0.0.1:0", Password: "sekrit", Backend: local, PollInterval: 20 * time.Millisecond,
		DataDir: dir, FleetPollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	base := strings.TrimSuffix(s.URL(), "/")
	c := newClient(t)
	login(t, c, base, "sekrit")
	page := func() string {
		r, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		return body(t, r)
	}
	m := csrfRE.FindStringSubmatch(page())
	if m == nil {
		t.Fatal("no CSRF token")
	}
	post := func(path string, form url.Values) int {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Requested-With", "fetch")
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := body(t, r)
		if r.StatusCode >= 300 {
			t.Logf("POST %s: %d %s", path, r.StatusCode, b)
		}
		return r.StatusCode
	}
	add := url.Values{"name": {"<i>lab</i>"}, "addr": {remote.addr}, "password": {"remote-secret-pw"}}
	if code := post("/fleet/add", add); code != http.StatusForbidden {
		t.Fatalf("add without CSRF token: %d", code)
	}
	add.Set("csrf", m[1])
	if code := post("/fleet/add", add); code != http.StatusNoContent {
		t.Fatalf("add: %d", code)
	}
	var p string
	waitFor(t, "the remote host's task on the page", func() bool {
		p = page()
		return strings.Contains(p, `data-task="task_1"`) && strings.Count(p, `class="card fleet-host`) == 2 && strings.Contains(p, "Disk limit reached")
	})
	if strings.Contains(p, "remote-secret-pw") {
		t.Fatal("the host's password is in the page")
	}
	if strings.Contains(p, "<i>lab</i>") || !strings.Contains(p, "&lt;i&gt;lab&lt;/i&gt;") {
		t.Error("the host's name is not escaped")
	}
	raw, _ := os.ReadFile(filepath.Join(dir, FleetFile))
	var ff fleetFile
	if err := json.Unmarshal(raw, &ff); err != nil || len(ff.Hosts) != 1 || ff.Hosts[0].Password != "remote-secret-pw" {
		t.Fatalf("fleet file %s: %v", raw, err)
	}
	id := ff.Hosts[0].ID

	act := url.Values{"csrf": {m[1]}, "host": {id}, "kind": {"task"}, "op": {"suspend"}, "url": {"http://p.example/"}, "name": {"task_1"}}
	if code := post("/fleet/act", act); code != http.StatusNoContent {
		t.Fatalf("remote suspend: %d", code)
	}
	mode := url.Values{"csrf": {m[1]}, "host": {id}, "kind": {"mode"}, "which": {"network"}, "mode": {"1"}}
	if code := post("/fleet/act", mode); code != http.StatusNoContent {
		t.Fatalf("remote mode: %d", code)
	}
	want := []guirpc.Action{guirpc.ResultOp{URL: "http://p.example/", Name: "task_1", Op: "suspend"}, guirpc.SetMode{Which: "network", Mode: guirpc.ModeAlways}}
	if got := remote.be.actions(); fmt.Sprint(got) != fmt.Sprint(want) || len(local.actions()) != 0 {
		t.Fatalf("remote did %v, local %v; want %v on the remote only", got, local.actions(), want)
	}
	act.Set("host", localHostID)
	act.Set("op", "resume")
	if code := post("/fleet/act", act); code != http.StatusNoContent || len(local.actions()) != 1 {
		t.Fatalf("local resume: %d, %v", code, local.actions())
	}
	for _, bad := range []url.Values{
		{"csrf": {m[1]}, "host": {"nosuch"}, "kind": {"task"}, "op": {"suspend"}, "url": {"http://p.example/"}, "name": {"task_1"}},
		{"csrf": {m[1]}, "host": {id}, "kind": {"attach"}, "url": {"http://p.example/"}, "key": {"k"}},
		{"csrf": {m[1]}, "host": {id}, "kind": {"task"}, "op": {"explode"}, "url": {"http://p.example/"}, "name": {"task_1"}},
	} {
		if code := post("/fleet/act", bad); code != http.StatusBadRequest {
			t.Errorf("%v: %d, want 400", bad, code)
		}
	}
	if n := len(remote.be.actions()); n != 2 {
		t.Errorf("refused forms reached the remote host: %d actions", n)
	}

	if code := post("/fleet/remove", url.Values{"csrf": {m[1]}, "host": {id}}); code != http.StatusNoContent {
		t.Fatalf("remove: %d", code)
	}
	if f, _ := OpenFleet(dir); len(f.Hosts()) != 0 {
		t.Errorf("after remove the file holds %v", f.Hosts())
	}
	waitFor(t, "the host gone from the page", func() bool { return strings.Count(page(), `class="card fleet-host`) == 1 })
}

// TestAbortedStates: a task aborted from a GUI (EXIT_ABORTED_VIA_GUI,
// 203, what both clients write for abort_result) reads "Aborted by
// user", one the project aborted (202) "Aborted by project"; a C++
// client's aborted task goes through the same words.
func TestAbortedStates(t *testing.T) {
	cc := &guirpc.CCStatus{}
	for exit, want := range map[int]string{203: "Aborted by user", 202: "Aborted by project"} {
		r := resultInfoOf(&client.Result{Name: "t", State: boinc.ResultAborted, ExitStatus: exit})
		if got := taskState(&r, false, cc); got != want {
			t.Errorf("exit status %d: %q, want %q", exit, got, want)
		}
	}
}

// TestRemoteDoRefuses: actions a fleet host is not sent.
func TestRemoteDoRefuses(t *testing.T) {
	err := remoteDo(context.Background(), nil, guirpc.RunBenchmarks{})
	if !errors.Is(err, errBadRequest) {
		t.Errorf("benchmarks on a fleet host: %v", err)
	}
}
