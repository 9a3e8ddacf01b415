package webui

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
)

// wizardBackend carries out the wizard's web RPCs as the daemon does, in
// the background, against a real (test) project, and records attaches.
type wizardBackend struct {
	fakeBackend
	wmu      sync.Mutex
	web      map[string]*guirpc.WebRPCStatus
	attached []guirpc.Attach
}

func (b *wizardBackend) Do(ctx context.Context, a guirpc.Action) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	switch a := a.(type) {
	case guirpc.WebRPC:
		st := &guirpc.WebRPCStatus{Started: true}
		b.web[a.Kind] = st
		go func() {
			var reply []byte
			r, err := http.Get(a.Endpoint + "?" + a.Query)
			if err == nil {
				reply, err = io.ReadAll(r.Body)
				r.Body.Close()
			}
			b.wmu.Lock()
			defer b.wmu.Unlock()
			st.Done, st.Reply = true, reply
			if err != nil {
				st.ErrorNum = guirpc.ErrNumConnect
			}
		}()
	case guirpc.WebRPCPoll:
		if st := b.web[a.Kind]; st != nil {
			*a.Out = *st
		}
	case guirpc.Attach:
		b.attached = append(b.attached, a)
	case guirpc.AttachPoll:
		*a.Out = guirpc.AttachStatus{}
	default:
		return b.fakeBackend.Do(ctx, a)
	}
	return nil
}

func (b *wizardBackend) attaches() []guirpc.Attach {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return append([]guirpc.Attach(nil), b.attached...)
}

// TestAttachByEmail: the form's email and password become the
// Manager's lookup_account (password hashed as it hashes it), the
// project's answer is read as lookup_account_poll reads it, and its
// account key is attached with; a wrong password and an unknown address
// come back in words; a new account is created. The result reaches the
// page through its stream.
func TestAttachByEmail(t *testing.T) {
	proj, err := testproject.New(testproject.Config{
		Name: "wizard", Logger: slog.New(slog.DiscardHandler), Apps: []testproject.App{testproject.DefaultApp()},
		Accounts: []testproject.Account{{Email: "Vol@Example.org", Password: "right password", Authenticator: "key-of-vol"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := proj.Start(); err != nil {
		t.Fatal(err)
	}
	defer proj.Close()
	wb := &wizardBackend{fakeBackend: fakeBackend{st: testState()}, web: map[string]*guirpc.WebRPCStatus{}}
	s, base := startServer(t, wb)
	c := newClient(t)
	login(t, c, base, "sekrit")
	r, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, r)
	csrf := csrfRE.FindStringSubmatch(page)[1]
	sid := ""
	for _, ck := range c.Jar.Cookies(r.Request.URL) {
		if ck.Name == cookieName {
			sid = ck.Value
		}
	}
	post := func(f url.Values) (int, string) {
		t.Helper()
		f.Set("csrf", csrf)
		req, _ := http.NewRequest("POST", base+"/account", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Requested-With", "fetch")
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode, body(t, r)
	}
	// wait for the session's job to end; its line as the page shows it
	wait := func() accountView {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if v, ok := s.accountStatus(sid); ok && v.Done {
				return v
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatal("the attach job did not end")
		return accountView{}
	}

	for _, tc := range []struct {
		email, password, op, user string
		want                      string
		failed                    bool
	}{
		{"vol@example.org", "wrong password", "lookup", "", "Bad password", true},
		{"nobody@example.org", "right password", "lookup", "", "No such account", true},
		{"vol@example.org", "right password", "lookup", "", "Attached to " + proj.URL(), false},
		{"new@example.org", "new password", "create", "Newbie", "Attached to " + proj.URL(), false},
	} {
		code, b := post(url.Values{"url": {proj.URL()}, "email": {tc.email}, "password": {tc.password}, "op": {tc.op}, "user_name": {tc.user}})
		if code != http.StatusAccepted {
			t.Fatalf("%s %s: %d %s", tc.op, tc.email, code, b)
		}
		v := wait()
		if v.Failed != tc.failed || !strings.Contains(v.Stage, tc.want) {
			t.Errorf("%s %s / %s: %+v, want %q (failed %v)", tc.op, tc.email, tc.password, v, tc.want, tc.failed)
		}
	}
	rpcs := proj.AccountRPCs()
	if len(rpcs) != 4 || !strings.Contains(rpcs[2].Query, "passwd_hash="+testproject.PasswdHash("right password", "vol@example.org")) ||
		rpcs[3].Path != "create_account.php" || !strings.Contains(rpcs[3].Query, "user_name=Newbie") {
		t.Errorf("the project saw %+v", rpcs)
	}
	for _, rpc := range rpcs {
		if strings.Contains(rpc.Query, "password") {
			t.Errorf("a password in clear went to the project: %s", rpc.Query)
		}
	}
	newKey, _ := proj.AccountKey("new@example.org")
	want := []guirpc.Attach{{URL: proj.URL(), Authenticator: "key-of-vol"}, {URL: proj.URL(), Authenticator: newKey}}
	if got := wb.attaches(); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("attached %+v, want %+v", got, want)
	}

	// The stream of the Projects view carries the line.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/events?tab=projects", nil)
	r, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var got strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(got.String(), "event: account") || !strings.Contains(got.String(), "Attached to") {
		n, err := r.Body.Read(buf)
		got.Write(buf[:n])
		if err != nil {
			t.Fatalf("stream: %v\n%s", err, got.String())
		}
	}

	// Bad forms are refused before anything is asked.
	before := len(proj.AccountRPCs())
	for _, f := range []url.Values{
		{"url": {proj.URL()}, "email": {"not an address"}, "password": {"x"}, "op": {"lookup"}},
		{"url": {proj.URL()}, "email": {"a@b.org"}, "password": {""}, "op": {"lookup"}},
		{"url": {""}, "email": {"a@b.org"}, "password": {"x"}, "op": {"lookup"}},
		{"url": {proj.URL()}, "email": {"a@b.org"}, "password": {"x"}, "op": {"create"}},
	} {
		if code, b := post(f); code != http.StatusUnprocessableEntity {
			t.Errorf("%v: %d %s, want 422", f, code, b)
		}
	}
	if n := len(proj.AccountRPCs()); n != before {
		t.Errorf("a refused form reached the project")
	}
}
