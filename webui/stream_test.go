package webui

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// openStream opens /events with query q and returns the names of the
// events it sends.
func openStream(t *testing.T, c *http.Client, base, q string) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events"+q, nil)
	r, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Body.Close() })
	events := make(chan string, 100)
	go func() {
		defer close(events)
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
				return
			}
		}
	}()
	return events
}

var viewRE = regexp.MustCompile(`data-view="([0-9a-f]+)"`)

// TestStreamStartsFromThePage: a page's stream sends nothing the page
// already holds, keeps only the view shown current, and a switch of view
// sends the new view's sections only when they changed since the page
// was rendered.
func TestStreamStartsFromThePage(t *testing.T) {
	fb := &fakeBackend{st: testState()}
	_, base := startServer(t, fb)
	c := newClient(t)
	login(t, c, base, "sekrit")
	r, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	m := viewRE.FindStringSubmatch(body(t, r))
	if m == nil {
		t.Fatal("no view id in the page")
	}
	quiet := func(events <-chan string, what string) {
		t.Helper()
		select {
		case e := <-events:
			t.Fatalf("%s: section %s sent, nothing changed", what, e)
		case <-time.After(300 * time.Millisecond):
		}
	}
	expect := func(events <-chan string, want string) {
		t.Helper()
		select {
		case e := <-events:
			if e != want {
				t.Fatalf("sent %s, want %s", e, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s not sent", want)
		}
	}
	tasks := openStream(t, c, base, "?tab=tasks&view="+m[1])
	quiet(tasks, "the Tasks view's stream of a fresh page")

	// A change to the projects (hidden) is not sent to the Tasks view;
	// a change to a task is.
	fb.mu.Lock()
	fb.st.Projects = append([]guirpc.ProjectInfo(nil), fb.st.Projects...)
	fb.st.Projects[0].UserName = "someone else"
	fb.mu.Unlock()
	quiet(tasks, "a hidden view changed")
	fb.mu.Lock()
	rs := append([]guirpc.ResultInfo(nil), fb.st.Results...)
	a := *rs[0].Active
	a.FractionDone = 0.75
	rs[0].Active = &a
	fb.st.Results = rs
	fb.mu.Unlock()
	// Progress alone: the task's new figures, not the list again.
	expect(tasks, "progress")
	quiet(tasks, "after the progress")
	// The task stops running: its card changes otherwise, and goes alone.
	fb.mu.Lock()
	rs = append([]guirpc.ResultInfo(nil), fb.st.Results...)
	stopped := *rs[0].Active
	stopped.ActiveState, stopped.SchedulerState = 9, 1
	rs[0].Active = &stopped
	fb.st.Results = rs
	fb.mu.Unlock()
	expect(tasks, "cards")
	quiet(tasks, "after the card")
	// A new task changes the list: it goes whole.
	fb.mu.Lock()
	rs = append([]guirpc.ResultInfo(nil), fb.st.Results...)
	rs = append(rs, guirpc.ResultInfo{Result: boinc.Result{ProjectURL: "http://p.example/", Name: "task_2", Phase: boinc.PhaseComputing}})
	fb.st.Results = rs
	fb.mu.Unlock()
	expect(tasks, "tasks")
	quiet(tasks, "after the list")

	// The page switches to Projects: its stream sends the projects,
	// which changed since the page was rendered, and nothing else.
	projects := openStream(t, c, base, "?tab=projects&view="+m[1])
	expect(projects, "projects")
	quiet(projects, "after the switch")
	// Host did not change: switching to it sends nothing.
	host := openStream(t, c, base, "?tab=host&view="+m[1])
	quiet(host, "switching to an unchanged view")
}

// suspendingBackend carries out a task suspension in its state, as the
// daemon would.
type suspendingBackend struct{ *fakeBackend }

func (b suspendingBackend) Do(ctx context.Context, a guirpc.Action) error {
	if op, ok := a.(guirpc.ResultOp); ok && op.Op == "suspend" {
		b.mu.Lock()
		rs := append([]guirpc.ResultInfo(nil), b.st.Results...)
		for i := range rs {
			if rs[i].Name == op.Name && rs[i].Active != nil {
				at := *rs[i].Active
				at.ActiveState, at.SchedulerState = 9, 1
				rs[i].Active = &at
			}
		}
		b.st.Results = rs
		b.mu.Unlock()
	}
	return b.fakeBackend.Do(ctx, a)
}

// TestActionWakesStream: the page's action shows at once, not at the
// stream's next look (which here would come in an hour).
func TestActionWakesStream(t *testing.T) {
	fb := &fakeBackend{st: testState()}
	s, err := Listen(Config{Addr: "127.0.0.1:0", Password: "sekrit", Backend: suspendingBackend{fb}, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	base := strings.TrimSuffix(s.URL(), "/")
	c := newClient(t)
	login(t, c, base, "sekrit")
	r, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, r)
	view, csrf := viewRE.FindStringSubmatch(page), csrfRE.FindStringSubmatch(page)
	if view == nil || csrf == nil {
		t.Fatal("no view id or CSRF token in the page")
	}
	events := openStream(t, c, base, "?tab=tasks&view="+view[1])
	time.Sleep(200 * time.Millisecond) // the stream's first look: nothing to send
	form := url.Values{"kind": {"task"}, "op": {"suspend"}, "url": {"http://p.example/"}, "name": {"task_1"}, "csrf": {csrf[1]}}
	req, _ := http.NewRequest("POST", base+"/act", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Requested-With", "fetch")
	r, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, r)
	select {
	case e := <-events:
		if e != "cards" {
			t.Fatalf("after the suspension the stream sent %s, want cards", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the suspension was not pushed: the action did not wake the stream")
	}
}
