package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/rpcclient"
)

// do runs a GUI RPC action on the daemon, as the GUI RPC server does.
func (h *harness) do(a guirpc.Action) error {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return rpcBackend{h.d}.Do(ctx, a)
}

// webRPC starts a web RPC and polls it until it is done.
func (h *harness) webRPC(kind, endpoint, query string) guirpc.WebRPCStatus {
	h.t.Helper()
	if err := h.do(guirpc.WebRPC{Kind: kind, Endpoint: endpoint, Query: query}); err != nil {
		h.t.Fatalf("start %s: %v", kind, err)
	}
	return h.webRPCWait(kind)
}

func (h *harness) webRPCWait(kind string) guirpc.WebRPCStatus {
	h.t.Helper()
	var st guirpc.WebRPCStatus
	testsupport.WaitFor(h.t, 20*time.Second, kind+" to finish", func() bool {
		if err := h.do(guirpc.WebRPCPoll{Kind: kind, Out: &st}); err != nil {
			h.t.Fatalf("poll %s: %v", kind, err)
		}
		if !st.Started {
			h.t.Fatalf("poll %s: not started", kind)
		}
		return st.Done
	})
	return st
}

func (h *harness) attachStatus() guirpc.AttachStatus {
	h.t.Helper()
	var st guirpc.AttachStatus
	if err := h.do(guirpc.AttachPoll{Out: &st}); err != nil {
		h.t.Fatalf("project_attach_poll: %v", err)
	}
	return st
}

// waitAttach polls project_attach_poll until it is no longer in progress.
func (h *harness) waitAttach() guirpc.AttachStatus {
	h.t.Helper()
	var st guirpc.AttachStatus
	testsupport.WaitFor(h.t, 30*time.Second, "the attach's first contact", func() bool {
		st = h.attachStatus()
		return st.ErrorNum != guirpc.ErrNumInProgress
	})
	return st
}

func TestWizardWebRPCs(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Name:     "wizard project",
		Accounts: []testproject.Account{{Email: "Vol@Example.org", Password: "secret", UserName: "vol"}},
	})
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), config.Default(), nil)
	base := srv.URL()

	var st guirpc.WebRPCStatus
	if err := h.do(guirpc.WebRPCPoll{Kind: guirpc.WebRPCLookupAccount, Out: &st}); err != nil || st.Started {
		t.Fatalf("poll before any request: %+v, %v", st, err)
	}

	st = h.webRPC(guirpc.WebRPCProjectConfig, base+"get_project_config.php", "")
	if st.ErrorNum != 0 || !strings.Contains(string(st.Reply), "<name>wizard project</name>") {
		t.Errorf("get_project_config: %+v %s", st, st.Reply)
	}

	hash := testproject.PasswdHash("secret", "vol@example.org")
	key, _ := srv.AccountKey("vol@example.org")
	st = h.webRPC(guirpc.WebRPCLookupAccount, base+"lookup_account.php", "email_addr=vol%40example%2Eorg&passwd_hash="+hash)
	if st.ErrorNum != 0 || !strings.Contains(string(st.Reply), "<authenticator>"+key+"</authenticator>") {
		t.Errorf("lookup_account: %+v %s", st, st.Reply)
	}
	wrong := testproject.PasswdHash("wrong", "vol@example.org")
	st = h.webRPC(guirpc.WebRPCLookupAccount, base+"lookup_account.php", "email_addr=vol%40example%2Eorg&passwd_hash="+wrong)
	if st.ErrorNum != 0 || !strings.Contains(string(st.Reply), "<error_num>-206</error_num>") {
		t.Errorf("lookup_account with a wrong password: %+v %s", st, st.Reply)
	}

	// Failures become the C++ client's error numbers; nothing logged
	// holds the password hash.
	st = h.webRPC(guirpc.WebRPCProjectConfig, base+"nothere/get_project_config.php", "")
	if st.ErrorNum != guirpc.ErrNumHTTPPermanent {
		t.Errorf("HTTP 404: error %d, want %d", st.ErrorNum, guirpc.ErrNumHTTPPermanent)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	st = h.webRPC(guirpc.WebRPCCreateAccount, closed+"create_account.php", "email_addr=x&passwd_hash="+wrong+"&user_name=x")
	if st.ErrorNum != guirpc.ErrNumConnect {
		t.Errorf("connection refused: error %d, want %d", st.ErrorNum, guirpc.ErrNumConnect)
	}
	if logs := h.logs.String(); strings.Contains(logs, wrong) || strings.Contains(logs, hash) {
		t.Errorf("the log holds a password hash:\n%s", logs)
	}
	if recs := h.logs.Find("project web RPC failed", "url", closed+"create_account.php"); len(recs) != 1 || recs[0].Num("error_num") != guirpc.ErrNumConnect {
		t.Errorf("failure log records: %v", recs)
	}
}

// A new request replaces the one in flight: its late reply is dropped.
func TestWizardWebRPCReplaced(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		_, _ = w.Write([]byte("<project_config><name>slow</name></project_config>"))
	}))
	defer slow.Close()
	defer close(release)
	srv := testsupport.StartProject(t, testproject.Config{Name: "fast"})
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), config.Default(), nil)

	if err := h.do(guirpc.WebRPC{Kind: guirpc.WebRPCProjectConfig, Endpoint: slow.URL + "/get_project_config.php"}); err != nil {
		t.Fatal(err)
	}
	var st guirpc.WebRPCStatus
	if err := h.do(guirpc.WebRPCPoll{Kind: guirpc.WebRPCProjectConfig, Out: &st}); err != nil || !st.Started || st.Done {
		t.Fatalf("in flight: %+v %v", st, err)
	}
	st = h.webRPC(guirpc.WebRPCProjectConfig, srv.URL()+"get_project_config.php", "")
	if !strings.Contains(string(st.Reply), "<name>fast</name>") {
		t.Fatalf("the newer request's reply: %+v %s", st, st.Reply)
	}
	// Other kinds are independent.
	if err := h.do(guirpc.WebRPCPoll{Kind: guirpc.WebRPCCreateAccount, Out: &st}); err != nil || st.Started {
		t.Errorf("create_account poll: %+v %v", st, err)
	}
}

func TestAttachPollFollowsFirstContact(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	good := testsupport.StartProject(t, testproject.Config{Name: "good", Authenticator: "right-key", TotalJobs: 1,
		// The first master page waits for the test, which sees the
		// attach in progress meanwhile.
		Faults: testproject.Faults{RewriteMaster: func(page []byte) []byte { <-release; return page }}})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the project closes: it waits for its handlers
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), config.Default(), nil)

	if st := h.attachStatus(); st.ErrorNum != 0 || len(st.Messages) != 0 {
		t.Errorf("before any attach: %+v", st)
	}
	// A refused account key: in progress, then the project's message and
	// ERR_ATTACH_FAIL_BAD_KEY.
	if err := h.do(guirpc.Attach{URL: good.URL(), Authenticator: "wrong-key"}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if st := h.attachStatus(); st.ErrorNum != guirpc.ErrNumInProgress {
		t.Errorf("while the master page is on its way: %+v", st)
	}
	open()
	st := h.waitAttach()
	if st.ErrorNum != guirpc.ErrNumAttachFailBadKey || len(st.Messages) == 0 || !strings.Contains(st.Messages[0], "account key") {
		t.Errorf("bad key: %+v", st)
	}
	if err := h.do(guirpc.ProjectOp{URL: good.URL(), Op: guirpc.ProjectDetach}); err != nil {
		t.Fatal(err)
	}

	// The right key: 0 once the first RPC is done, and a host id.
	if err := h.do(guirpc.Attach{URL: good.URL(), Authenticator: "right-key"}); err != nil {
		t.Fatal(err)
	}
	if st := h.waitAttach(); st.ErrorNum != 0 {
		t.Errorf("good key: %+v", st)
	}
	if p, ok := h.snapshot().project(good.URL()); !ok || p.HostID == 0 {
		t.Errorf("project after the attach: %+v (attached %v)", p, ok)
	}

	// A master page that is not there: ERR_ATTACH_FAIL_DOWNLOAD.
	missing := good.URL() + "no/such/project/"
	if err := h.do(guirpc.Attach{URL: missing, Authenticator: "k"}); err != nil {
		t.Fatal(err)
	}
	if st := h.waitAttach(); st.ErrorNum != guirpc.ErrNumAttachFailDownload || len(st.Messages) != 1 {
		t.Errorf("no master page: %+v", st)
	}
	// A second attach of the same project is refused, the status kept.
	if err := h.do(guirpc.Attach{URL: missing, Authenticator: "k"}); !errors.Is(err, guirpc.ErrAlreadyAttached) {
		t.Errorf("attach twice: %v", err)
	}
	if st := h.attachStatus(); st.ErrorNum != guirpc.ErrNumAttachFailDownload {
		t.Errorf("after a refused attach: %+v", st)
	}
}

func TestWebErrNum(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want int
	}{
		{&rpcclient.HTTPError{StatusCode: 404}, guirpc.ErrNumHTTPPermanent},
		{&rpcclient.HTTPError{StatusCode: 403}, guirpc.ErrNumHTTPPermanent},
		{&rpcclient.HTTPError{StatusCode: 500}, guirpc.ErrNumHTTPTransient},
		{&rpcclient.HTTPError{StatusCode: 503}, guirpc.ErrNumHTTPTransient},
		{fmt.Errorf("GET x: %w", &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}), guirpc.ErrNumGetHostByName},
		{fmt.Errorf("GET x: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), guirpc.ErrNumConnect},
		{&rpcclient.StallError{}, guirpc.ErrNumTimeout},
		{&rpcclient.ReplyTimeoutError{}, guirpc.ErrNumTimeout},
		{context.DeadlineExceeded, guirpc.ErrNumTimeout},
		{&rpcclient.ReplyTooLargeError{}, guirpc.ErrNumFileTooBig},
		{errors.New(`GET: <url> "ftp://x/": scheme "ftp" is not http or https`), guirpc.ErrNumInvalidURL},
		{errors.New("tls: bad certificate"), guirpc.ErrNumHTTPTransient},
	} {
		if got := webErrNum(tc.err); got != tc.want {
			t.Errorf("webErrNum(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}
