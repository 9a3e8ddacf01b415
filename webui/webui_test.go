package webui

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// fakeBackend records actions and serves a fixed state.
type fakeBackend struct {
	mu      sync.Mutex
	st      guirpc.State
	notices []guirpc.Notice
	done    []guirpc.Action
}

func (f *fakeBackend) Snapshot(context.Context, guirpc.Parts) (*guirpc.State, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.st
	return &st, nil
}

func (f *fakeBackend) Do(_ context.Context, a guirpc.Action) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.done = append(f.done, a)
	return nil
}

func (f *fakeBackend) Notices(context.Context) (*guirpc.NoticeList, error) {
	return &guirpc.NoticeList{Notices: f.notices}, nil
}

func (f *fakeBackend) actions() []guirpc.Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]guirpc.Action(nil), f.done...)
}

const hostileName = `<script>alert("x")</script>Evil`

func startServer(t *testing.T, b guirpc.Backend) (*Server, string) {
	t.Helper()
	s, err := Listen(Config{Addr: "127.0.0.1:0", Password: "sekrit", Backend: b, PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	// Short, so that a stream outliving it shows the stream is not cut
	// by the read deadline.
	s.readTimeout = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, strings.TrimSuffix(s.URL(), "/")
}

func newClient(t testing.TB) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, Timeout: 20 * time.Second}
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func login(t *testing.T, c *http.Client, base, pass string) (*http.Response, string) {
	t.Helper()
	r, err := c.PostForm(base+"/login", url.Values{"password": {pass}})
	if err != nil {
		t.Fatal(err)
	}
	return r, body(t, r)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func testState() guirpc.State {
	return guirpc.State{
		Projects: []guirpc.ProjectInfo{{Project: boinc.Project{MasterURL: "http://p.example/", ProjectName: hostileName}}},
		Results: []guirpc.ResultInfo{{
			Result: boinc.Result{ProjectURL: "http://p.example/", Name: "task_1", Phase: boinc.PhaseComputing},
			Active: &guirpc.ActiveTask{ActiveState: 1, SchedulerState: 2, FractionDone: 0.25, ElapsedTime: 65},
		}},
	}
}

// TestLoginSessionCSRF: the dashboard needs the password; a session
// cookie is HttpOnly and SameSite=Strict; an action without the CSRF token
// is refused and one with it reaches the Backend as GUI RPC's op would.
func TestLoginSessionCSRF(t *testing.T) {
	fb := &fakeBackend{st: testState()}
	_, base := startServer(t, fb)
	c := newClient(t)

	r, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	if b := body(t, r); r.Request.URL.Path != "/login" || !strings.Contains(b, `name="password"`) {
		t.Fatalf("GET / without a session: ended at %s, want the login page", r.Request.URL)
	}
	r, b := login(t, c, base, "wrong")
	if r.StatusCode != http.StatusUnauthorized || !strings.Contains(b, "Wrong password") {
		t.Fatalf("wrong password: %d %q", r.StatusCode, b)
	}
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r, err = noRedirect.PostForm(base+"/login", url.Values{"password": {"sekrit"}})
	if err != nil {
		t.Fatal(err)
	}
	body(t, r)
	if r.StatusCode != http.StatusSeeOther {
		t.Fatalf("right password: status %d, want 303", r.StatusCode)
	}
	sc := r.Header.Get("Set-Cookie")
	for _, want := range []string{cookieName + "=", "HttpOnly", "SameSite=Strict", "Path=/"} {
		if !strings.Contains(sc, want) {
			t.Errorf("Set-Cookie %q lacks %q", sc, want)
		}
	}
	if loc := r.Header.Get("Location"); strings.Contains(loc, "sekrit") || strings.Contains(loc, "?") {
		t.Errorf("redirect after login %q carries something in the URL", loc)
	}

	r, err = c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, r)
	if r.StatusCode != 200 {
		t.Fatalf("dashboard: %d", r.StatusCode)
	}
	if strings.Contains(page, "<script>alert") {
		t.Fatal("the hostile project name reached the page unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;Evil") {
		t.Errorf("the hostile project name is not shown as text")
	}
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no CSRF token in the page")
	}
	form := url.Values{"kind": {"task"}, "op": {"suspend"}, "url": {"http://p.example/"}, "name": {"task_1"}}
	r, err = c.PostForm(base+"/act", form)
	if err != nil {
		t.Fatal(err)
	}
	body(t, r)
	if r.StatusCode != http.StatusForbidden || len(fb.actions()) != 0 {
		t.Fatalf("action without CSRF token: %d, actions %v; want 403 and none", r.StatusCode, fb.actions())
	}
	form.Set("csrf", m[1])
	req, _ := http.NewRequest("POST", base+"/act", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Requested-With", "fetch")
	r, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, r)
	want := guirpc.ResultOp{URL: "http://p.example/", Name: "task_1", Op: "suspend"}
	if got := fb.actions(); r.StatusCode != http.StatusNoContent || len(got) != 1 || got[0] != want {
		t.Fatalf("action with CSRF token: %d, actions %#v; want 204 and %#v", r.StatusCode, got, want)
	}
}

// TestActionsMatchGUIRPC: each form becomes the action GUI RPC's op
// builds; anything else is refused before the Backend hears of it.
func TestActionsMatchGUIRPC(t *testing.T) {
	for _, tc := range []struct {
		form map[string]string
		want []guirpc.Action
		bad  bool
	}{
		{map[string]string{"kind": "project", "op": "update", "url": "http://p.example"}, []guirpc.Action{guirpc.ProjectOp{URL: "http://p.example/", Op: "update"}}, false},
		{map[string]string{"kind": "project", "op": "reset", "url": "http://p.example/"}, nil, true},
		{map[string]string{"kind": "task", "op": "abort", "url": "http://p.example/", "name": "t"}, []guirpc.Action{guirpc.ResultOp{URL: "http://p.example/", Name: "t", Op: "abort"}}, false},
		{map[string]string{"kind": "task", "op": "abort", "url": "http://p.example/"}, nil, true},
		{map[string]string{"kind": "mode", "which": "gpu", "mode": "3", "duration": "60"}, []guirpc.Action{guirpc.SetMode{Which: "gpu", Mode: 3, Duration: 60}}, false},
		{map[string]string{"kind": "mode", "which": "gpu", "mode": "9"}, nil, true},
		{map[string]string{"kind": "mode", "which": "run", "mode": "1", "duration": "1e300"}, nil, true},
		{map[string]string{"kind": "snooze"}, []guirpc.Action{guirpc.SetMode{Which: "run", Mode: 3, Duration: 3600}, guirpc.SetMode{Which: "gpu", Mode: 3, Duration: 3600}}, false},
		{map[string]string{"kind": "attach", "url": "http://q.example", "key": " k "}, []guirpc.Action{guirpc.Attach{URL: "http://q.example/", Authenticator: "k"}}, false},
		{map[string]string{"kind": "attach", "url": "http://q.example"}, nil, true},
		{map[string]string{"kind": "quit"}, nil, true},
	} {
		got, err := actions(func(k string) string { return tc.form[k] })
		if tc.bad != (err != nil) {
			t.Errorf("%v: err %v, want bad=%v", tc.form, err, tc.bad)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%v: %#v, want %#v", tc.form, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%v: %#v, want %#v", tc.form, got, tc.want)
			}
		}
	}
}

// TestNoticeText: a notice's HTML is shown as text, never as markup.
func TestNoticeText(t *testing.T) {
	for in, want := range map[string]string{
		`<p>Hello <b>world</b></p>`:                     "Hello world",
		`<script>alert(1)</script>after`:                "after",
		`a &lt;img src=x onerror=alert(1)&gt; b`:        "a <img src=x onerror=alert(1)> b",
		`<img src=x onerror="alert(1)">shown<style>x{}`: "shown",
	} {
		if got := textOf(in); got != want {
			t.Errorf("textOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStreamPushesOnlyChanges: the stream sends every section once, then
// only a section that changed.
func TestStreamPushesOnlyChanges(t *testing.T) {
	fb := &fakeBackend{st: testState()}
	_, base := startServer(t, fb)
	c := newClient(t)
	login(t, c, base, "sekrit")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events", nil)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	events := make(chan string, 100)
	go func() {
		buf := make([]byte, 64<<10)
		var acc string
		for {
			n, err := r.Body.Read(buf)
			acc += string(buf[:n])
			for {
				i := strings.Index(acc, "\n\n")
				if i < 0 {
					break
				}
				ev := acc[:i]
				acc = acc[i+2:]
				if name, ok := strings.CutPrefix(ev, "event: "); ok {
					name, _, _ = strings.Cut(name, "\n")
					events <- name
				}
			}
			if err != nil {
				close(events)
				return
			}
		}
	}()
	seen := map[string]bool{}
	for len(seen) < len(sections) {
		select {
		case e := <-events:
			if seen[e] {
				t.Fatalf("section %s sent twice without a change", e)
			}
			seen[e] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("sections seen %v, want all of %v", seen, sections)
		}
	}
	// Nothing changes: several polls go by in silence, and the stream
	// outlives the server's read timeout.
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the stream ended")
		}
		t.Fatalf("section %s sent with no change", e)
	case <-time.After(300 * time.Millisecond):
	}
	// A new state, as the daemon's Snapshot makes one per call: the old
	// one may still be being rendered.
	fb.mu.Lock()
	rs := append([]guirpc.ResultInfo(nil), fb.st.Results...)
	a := *rs[0].Active
	a.FractionDone = 0.5
	rs[0].Active = &a
	fb.st.Results = rs
	fb.mu.Unlock()
	select {
	case e, ok := <-events:
		if !ok {
			t.Fatal("the stream ended before the change was pushed")
		}
		if e != "progress" {
			t.Fatalf("after a task's progress changed the stream sent %s, want progress", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the progress change was not pushed")
	}
}

// TestLoginBrake: after a few wrong passwords the next check waits, as
// GUI RPC's auth2 does (guirpc.Brake).
func TestLoginBrake(t *testing.T) {
	_, base := startServer(t, &fakeBackend{})
	c := newClient(t)
	for range 3 {
		login(t, c, base, "wrong")
	}
	start := time.Now()
	login(t, c, base, "wrong")
	login(t, c, base, "wrong")
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Fatalf("two wrong passwords after three took %v: not slowed", d)
	}
}

// TestForeignHostRefused: a loopback dashboard does not answer under
// another site's name (DNS rebinding).
func TestForeignHostRefused(t *testing.T) {
	_, base := startServer(t, &fakeBackend{})
	req, _ := http.NewRequest("GET", base+"/login", nil)
	req.Host = "evil.example:31417"
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, r)
	if r.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("Host evil.example: %d, want 421", r.StatusCode)
	}
}

// TestRemoteNeedsTLS: a dashboard beyond loopback must have TLS.
func TestRemoteNeedsTLS(t *testing.T) {
	_, err := Listen(Config{Addr: "0.0.0.0:0", Password: "p", Backend: &fakeBackend{}})
	if err == nil || !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("Listen on 0.0.0.0 without TLS: %v, want a TLS error", err)
	}
}

// TestStatsChart: a project's credit history becomes two polylines
// spanning the chart, the newest day at the right edge.
func TestStatsChart(t *testing.T) {
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := guirpc.ProjectInfo{Project: boinc.Project{MasterURL: "http://p.example/", ProjectName: hostileName}, Statistics: []guirpc.DailyStats{
		{Day: day, UserTotalCredit: 0, HostTotalCredit: 0},
		{Day: day.AddDate(0, 0, 1), UserTotalCredit: 50, HostTotalCredit: 25},
		{Day: day.AddDate(0, 0, 2), UserTotalCredit: 100, HostTotalCredit: 50},
	}}
	sv, ok := statsOf(&p)
	if !ok {
		t.Fatal("no chart")
	}
	if sv.UserPoints != "0.0,100.0 150.0,50.0 300.0,0.0" || sv.HostPoints != "0.0,100.0 150.0,75.0 300.0,50.0" {
		t.Errorf("points user %q host %q", sv.UserPoints, sv.HostPoints)
	}
	s, err := Listen(Config{Addr: "127.0.0.1:0", Password: "p", Backend: &fakeBackend{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.ln.Close()
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, "sec-stats", &view{Stats: []statView{sv}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `points="0.0,100.0 150.0,50.0 300.0,0.0"`) || strings.Contains(b.String(), "<script>") {
		t.Errorf("rendered:\n%s", b.String())
	}
	if _, ok := statsOf(&guirpc.ProjectInfo{}); ok {
		t.Error("a chart for a project without statistics")
	}
}
