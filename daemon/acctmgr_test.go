package daemon

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/rpcclient"
)

func signURL(t *testing.T, key *rsa.PrivateKey, url string) string {
	t.Helper()
	sum := md5.Sum([]byte(url))
	sig, err := codesign.SignMD5Hex(key, hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	return sig
}

func TestPlanAcctMgrReply(t *testing.T) {
	t.Parallel()
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	keyText := codesign.FormatPublicKey(&key.PublicKey)
	acct := func(url, auth string, mod ...func(*rpcclient.AcctMgrAccount)) rpcclient.AcctMgrAccount {
		a := rpcclient.AcctMgrAccount{URL: url, URLSignature: signURL(t, key, url), Authenticator: auth}
		for _, m := range mod {
			m(&a)
		}
		return a
	}
	yes := true
	have := map[string]acctMgrProject{
		"http://conf/": {origin: originConfig, authenticator: "k"},
		"http://am/":   {origin: originAcctMgr, authenticator: "k"},
		"http://gui/":  {origin: originGUIRPC, authenticator: "k"},
	}
	cases := []struct {
		name     string
		accts    []rpcclient.AcctMgrAccount
		actions  []string // kind url
		problems []string // substrings, in order
		listed   []string
	}{
		{"new project attached", []rpcclient.AcctMgrAccount{acct("http://new", "k")}, []string{"attach http://new/"}, nil, []string{"http://new/"}},
		{"forged signature", []rpcclient.AcctMgrAccount{acct("http://new/", "k", func(a *rpcclient.AcctMgrAccount) { a.URLSignature = signURL(t, other, a.URL) })},
			nil, []string{"Bad signature for URL http://new/"}, nil},
		{"signature of another URL", []rpcclient.AcctMgrAccount{acct("http://new/", "k", func(a *rpcclient.AcctMgrAccount) { a.URLSignature = signURL(t, key, "http://evil/") })},
			nil, []string{"Bad signature for URL http://new/"}, nil},
		{"no signature", []rpcclient.AcctMgrAccount{acct("http://new/", "k", func(a *rpcclient.AcctMgrAccount) { a.URLSignature = "" })},
			nil, []string{"Bad signature for URL http://new/", "no url_signature"}, nil},
		{"new without key", []rpcclient.AcctMgrAccount{acct("http://new/", "")}, nil, []string{"Account manager reply missing authenticator for http://new/"}, []string{"http://new/"}},
		{"detach of unknown", []rpcclient.AcctMgrAccount{acct("http://new/", "k", func(a *rpcclient.AcctMgrAccount) { a.Detach = true })}, nil, nil, nil},
		{"detach when done of unknown", []rpcclient.AcctMgrAccount{acct("http://new/", "k", func(a *rpcclient.AcctMgrAccount) { a.DetachWhenDone = &yes })}, nil, nil, []string{"http://new/"}},
		{"AM project detached", []rpcclient.AcctMgrAccount{acct("http://am/", "", func(a *rpcclient.AcctMgrAccount) { a.Detach = true })}, []string{"detach http://am/"}, nil, nil},
		{"GUI project not detached by the AM", []rpcclient.AcctMgrAccount{acct("http://gui/", "", func(a *rpcclient.AcctMgrAccount) { a.Detach = true })}, nil, nil, nil},
		{"AM project changed", []rpcclient.AcctMgrAccount{acct("http://am/", "")}, []string{"set http://am/"}, nil, []string{"http://am/"}},
		{"GUI project taken over", []rpcclient.AcctMgrAccount{acct("http://gui/", "k")}, []string{"set http://gui/"}, nil, []string{"http://gui/"}},
		{"other account", []rpcclient.AcctMgrAccount{acct("http://gui/", "k2")}, nil, []string{"Already attached to a different account: http://gui/"}, []string{"http://gui/"}},
		{"config wins", []rpcclient.AcctMgrAccount{acct("http://conf/", "k", func(a *rpcclient.AcctMgrAccount) { a.Detach = true })}, nil, nil, nil},
		{"twice", []rpcclient.AcctMgrAccount{acct("http://new/", "k"), acct("http://new", "k")}, []string{"attach http://new/"}, []string{"names project http://new/ twice"}, []string{"http://new/"}},
		{"bad URL", []rpcclient.AcctMgrAccount{acct("ftp://x/", "k")}, nil, []string{`invalid project URL "ftp://x/"`}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl := planAcctMgrReply(keyText, c.accts, have)
			var got []string
			for _, a := range pl.actions {
				got = append(got, a.kind+" "+a.url)
			}
			if strings.Join(got, ";") != strings.Join(c.actions, ";") {
				t.Errorf("actions %q, want %q", got, c.actions)
			}
			all := strings.Join(pl.problems, "\n")
			for _, p := range c.problems {
				if !strings.Contains(all, p) {
					t.Errorf("problems %q lack %q", pl.problems, p)
				}
			}
			if len(c.problems) == 0 && len(pl.problems) > 0 {
				t.Errorf("problems %q, want none", pl.problems)
			}
			if strings.Join(pl.listed, ";") != strings.Join(c.listed, ";") {
				t.Errorf("listed %q, want %q", pl.listed, c.listed)
			}
		})
	}
}

func TestAcctMgrBackoff(t *testing.T) {
	t.Parallel()
	cases := []struct {
		n    int
		r    float64
		want time.Duration
	}{
		{0, 0.99, 600 * time.Second},
		{1, 0, 600 * time.Second},
		{1, 0.99, 600 * time.Second},
		{2, 0, 600 * time.Second},
		{2, 1, 1200 * time.Second},
		{3, 1, 2400 * time.Second},
		{4, 0.5, 3600 * time.Second},
		{8, 1, 76800 * time.Second},
		{9, 1, 86400 * time.Second},
		{50, 1, 86400 * time.Second},
		{50, 0, 43200 * time.Second},
	}
	for _, c := range cases {
		if got := acctMgrBackoff(c.n, c.r); got != c.want {
			t.Errorf("acctMgrBackoff(%d, %g) = %v, want %v", c.n, c.r, got, c.want)
		}
	}
}

func TestAcctMgrSigningKey(t *testing.T) {
	t.Parallel()
	k1, _ := rsa.GenerateKey(rand.Reader, 1024)
	k2, _ := rsa.GenerateKey(rand.Reader, 1024)
	t1, t2 := codesign.FormatPublicKey(&k1.PublicKey), codesign.FormatPublicKey(&k2.PublicKey)
	cases := []struct {
		stored, sent, want, err string
	}{
		{"", "", "", "no signing key"},
		{"", t1, t1, ""},
		{"", "1024\nzz\n.", "", "not usable"},
		{t1, "", t1, ""},
		{t1, t1, t1, ""},
		{t1, t2, "", "inconsistent signing key"},
	}
	for i, c := range cases {
		got, err := acctMgrSigningKey(c.stored, c.sent)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%d: error %v, want %q", i, err, c.err)
			}
			continue
		}
		if err != nil || strings.TrimSpace(got) != strings.TrimSpace(c.want) {
			t.Errorf("%d: %q, %v", i, got, err)
		}
	}
}

func (h *harness) amPoll() guirpc.AcctMgrStatus {
	h.t.Helper()
	var st guirpc.AcctMgrStatus
	testsupport.WaitFor(h.t, 20*time.Second, "the account manager RPC", func() bool {
		if err := h.do(guirpc.AcctMgrPoll{Out: &st}); err != nil {
			h.t.Fatal(err)
		}
		return st.ErrorNum != guirpc.ErrNumInProgress
	})
	return st
}

func (h *harness) projectCopy(url string) (boinc.Project, bool) {
	h.t.Helper()
	var p boinc.Project
	var ok bool
	if err := h.d.query(context.Background(), func() {
		if q := h.d.st.projects[url]; q != nil {
			p, ok = *q, true
		}
	}); err != nil {
		h.t.Fatal(err)
	}
	return p, ok
}

func (h *harness) amInfo() (guirpc.AcctMgrInfoOut, acctMgrInfo) {
	h.t.Helper()
	var out guirpc.AcctMgrInfoOut
	if err := h.do(guirpc.AcctMgrInfo{Out: &out}); err != nil {
		h.t.Fatal(err)
	}
	var info acctMgrInfo
	if err := h.d.query(context.Background(), func() { info = h.d.am.info }); err != nil {
		h.t.Fatal(err)
	}
	return out, info
}

// TestAcctMgrJoinPersistBackoff: a wrong password joins nothing; a join
// attaches the AM's projects, marked, with its share; the membership
// (never the clear password) survives a restart; a failing AM backs off.
func TestAcctMgrJoinPersistBackoff(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{Name: "p"})
	am, err := testproject.NewAccountManager("Unit AM", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	am.SetUser(testproject.AMUser{Name: "Bob", SendTasksAll: true, Dynamic: true, RepeatSec: 7200, Projects: []testproject.AMProject{{URL: srv.URL(), Authenticator: "test-account-key", ResourceShare: 30}}}, "pw")
	dir := filepath.Join(t.TempDir(), "data")
	h := startDaemonIn(t, dir, config.Default(), nil)

	// The Manager's AM wizard reads the AM's get_project_config.php.
	if st := h.webRPC(guirpc.WebRPCProjectConfig, am.URL()+"get_project_config.php", ""); st.ErrorNum != 0 || !strings.Contains(string(st.Reply), "<account_manager/>") {
		t.Errorf("AM project config: %+v %q", st, st.Reply)
	}

	if err := h.do(guirpc.AcctMgrRPC{URL: am.URL(), Name: "Bob", PasswordHash: guirpc.AcctMgrPasswordHash("Bob", "wrong")}); err != nil {
		t.Fatal(err)
	}
	if st := h.amPoll(); st.ErrorNum != guirpc.ErrNumBadPasswd || st.Message != "Invalid password" {
		t.Errorf("wrong password: poll %+v", st)
	}
	// As ACCT_MGR_OP::handle_reply words it: a user alert under the
	// account manager, and its notice.
	const alert = "Message from account manager: Invalid password"
	if rs := h.logs.Find(alert); len(rs) != 1 || rs[0].Str("level") != "WARN" || rs[0].Str("project") != am.URL() {
		t.Errorf("event log for the wrong password: %v; want one WARN (user alert) record %q with project %s", rs, alert, am.URL())
	}
	found := false
	for _, n := range h.notices(t) {
		found = found || (n.Description == alert && n.ProjectURL == am.URL() && n.Title == "")
	}
	if !found {
		t.Errorf("no notice %q under the account manager: %+v", alert, h.notices(t))
	}
	if out, _ := h.amInfo(); out.URL != "" {
		t.Errorf("a refused login joined %+v", out)
	}

	if err := h.do(guirpc.AcctMgrRPC{URL: am.URL(), Name: "Bob", PasswordHash: guirpc.AcctMgrPasswordHash("Bob", "pw")}); err != nil {
		t.Fatal(err)
	}
	if st := h.amPoll(); st.ErrorNum != 0 {
		t.Fatalf("join: poll %+v\n%s", st, testsupport.Tail(h.logs.String(), 3000))
	}
	out, info := h.amInfo()
	if out.URL != am.URL() || out.Name != "Unit AM" || !out.HaveCredentials || info.Origin != originGUIRPC || info.SigningKey == "" {
		t.Errorf("after join: %+v %+v", out, info)
	}
	if err := h.do(guirpc.AcctMgrRPC{URL: "http://127.0.0.1:1/other/", Name: "x", PasswordHash: "y"}); err != guirpc.ErrDifferentAM {
		t.Errorf("second AM: %v", err)
	}
	pv, ok := h.projectCopy(srv.URL())
	if !ok || pv.Origin != originAcctMgr || pv.ResourceShare != 30 || !pv.AMShare {
		t.Fatalf("AM project %+v (attached %v)", pv, ok)
	}
	if err := h.do(guirpc.ProjectOp{URL: srv.URL(), Op: guirpc.ProjectDetach}); err != guirpc.ErrMustDetachViaAM {
		t.Errorf("user detach of an AM project: %v", err)
	}
	// The next sync is the AM's repeat_sec away; when it is due, it
	// happens by itself.
	if _, info := h.amInfo(); time.Until(info.NextRPCTime) < 7000*time.Second || time.Until(info.NextRPCTime) > 7200*time.Second {
		t.Errorf("next sync in %v, want the AM's 2 h", time.Until(info.NextRPCTime))
	}
	n := len(am.Requests())
	if err := h.d.query(context.Background(), func() { h.d.am.info.NextRPCTime = time.Now().Add(-time.Second) }); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "the periodic sync", func() bool { return len(am.Requests()) > n })
	if st := h.amPoll(); st.ErrorNum != 0 {
		t.Errorf("periodic sync: %+v", st)
	}

	// A sloppy reply is refused whole, saying what and where; nothing
	// of the membership or the projects changes.
	am.Update("Bob", func(u *testproject.AMUser) {
		u.RawReply = "<acct_mgr_reply>\n<account><url>http://x/</url>\n</acct_mgr_reply>"
	})
	_, prev := h.amInfo()
	if err := h.do(guirpc.AcctMgrRPC{UseCurrent: true}); err != nil {
		t.Fatal(err)
	}
	if st := h.amPoll(); st.ErrorNum != guirpc.ErrNumXMLParse || !strings.Contains(st.Message, "account manager reply: line 3") {
		t.Errorf("sloppy reply: poll %+v", st)
	}
	if _, after := h.amInfo(); after.URL != prev.URL || after.Opaque != prev.Opaque || after.Failures != 1 {
		t.Errorf("sloppy reply changed the membership: %+v", after)
	}
	if pv, ok := h.projectCopy(srv.URL()); !ok || pv.ResourceShare != 30 {
		t.Errorf("sloppy reply changed the project: %+v", pv)
	}
	am.Update("Bob", func(u *testproject.AMUser) { u.RawReply = "" })
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	if b := readFile(t, filepath.Join(dir, StateFileName)); strings.Contains(string(b), `"pw"`) {
		t.Error("the clear password is in the state file")
	}

	h2 := startDaemonIn(t, dir, config.Default(), nil)
	out, info = h2.amInfo()
	if out.URL != am.URL() || info.PasswordHash != guirpc.AcctMgrPasswordHash("Bob", "pw") || !strings.Contains(info.Opaque, "host_seq") || !info.SendTasksAll {
		t.Errorf("after restart: %+v %+v", out, info)
	}
	// The AM asked for the host's tasks: the next request has them.
	if err := h2.do(guirpc.AcctMgrRPC{UseCurrent: true}); err != nil {
		t.Fatal(err)
	}
	if st := h2.amPoll(); st.ErrorNum != 0 {
		t.Fatalf("sync: %+v", st)
	}
	reqs := am.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "</net_stats>\n<results>\n") || !strings.Contains(last, "</results>\n</acct_mgr_request>") {
		t.Errorf("request without the tasks the AM asked for:\n%s", last[max(0, len(last)-600):])
	}
	if !strings.Contains(last, "<previous_host_cpid>") || !strings.Contains(last, "<account_key>test-account-key</account_key>") {
		t.Errorf("sync request lacks previous_host_cpid or the AM project's key")
	}
	if !strings.Contains(last, "      <nrpc_failures>0</nrpc_failures>\n      <cpu_ec>") {
		t.Errorf("a dynamic AM gets no work and usage counters")
	}
	// The AM goes away; a sync fails and the next one waits 600 s or more.
	am.Close()
	before := time.Now()
	if err := h2.do(guirpc.AcctMgrRPC{UseCurrent: true}); err != nil {
		t.Fatal(err)
	}
	if st := h2.amPoll(); st.ErrorNum == 0 {
		t.Errorf("sync with a closed AM: %+v", st)
	}
	_, info = h2.amInfo()
	if info.Failures != 1 || info.NextRPCTime.Sub(before) < acctMgrMinBackoff {
		t.Errorf("after a failure: failures %d, next RPC in %v", info.Failures, info.NextRPCTime.Sub(before))
	}

	// Leaving keeps the project, as a GUI RPC one.
	if err := h2.do(guirpc.AcctMgrRPC{}); err != nil {
		t.Fatal(err)
	}
	if out, _ := h2.amInfo(); out.URL != "" {
		t.Errorf("after leaving: %+v", out)
	}
	if pv, ok := h2.projectCopy(srv.URL()); !ok || pv.Origin != originGUIRPC || pv.AMShare {
		t.Errorf("after leaving: project %+v (attached %v)", pv, ok)
	}
	if err := h2.do(guirpc.AcctMgrRPC{UseCurrent: true}); err == nil || err.Error() != "bad arg" {
		t.Errorf("sync outside an AM: %v", err)
	}
}

// TestAcctMgrFeedAndMessages: the AM's messages and its news feed become
// notices under its name; leaving the AM drops them.
func TestAcctMgrFeedAndMessages(t *testing.T) {
	t.Parallel()
	news := testsupport.StartProject(t, testproject.Config{Name: "news", News: &testproject.NewsFeed{Items: []testproject.NewsItem{
		{Title: "AM news", Description: "All hosts: new projects on the AM", GUID: "am-1", PubDate: time.Now().Add(-time.Hour)},
	}}})
	am, err := testproject.NewAccountManager("Feed AM", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	am.SetUser(testproject.AMUser{Name: "Carol", Messages: []string{"Welcome, Carol"}, RSSFeeds: []string{news.URL() + "notices.php"}}, "pw")
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), config.Default(), nil)
	if err := h.do(guirpc.AcctMgrRPC{URL: am.URL(), Name: "Carol", PasswordHash: guirpc.AcctMgrPasswordHash("Carol", "pw")}); err != nil {
		t.Fatal(err)
	}
	if st := h.amPoll(); st.ErrorNum != 0 {
		t.Fatalf("join: %+v", st)
	}
	notices := func() map[string]string {
		var l *guirpc.NoticeList
		if err := h.d.query(context.Background(), func() { l = h.d.noticeList() }); err != nil {
			t.Fatal(err)
		}
		m := map[string]string{}
		for _, n := range l.Notices {
			m[n.Description] = n.ProjectName
		}
		return m
	}
	testsupport.WaitFor(t, 20*time.Second, "the AM's message and news as notices", func() bool {
		m := notices()
		return m["Welcome, Carol"] == "Feed AM" && strings.Contains(strings.Join(mapKeysOf(m), "\n"), "new projects on the AM")
	})
	if err := h.do(guirpc.AcctMgrRPC{}); err != nil {
		t.Fatal(err)
	}
	for d, name := range notices() {
		if name == "Feed AM" || strings.Contains(d, "Carol") || strings.Contains(d, "new projects on the AM") {
			t.Errorf("after leaving, the AM's notice %q stays", d)
		}
	}
}

func mapKeysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestAcctMgrConfigJoinRetried: a host whose boincd.toml names an AM
// that refuses it at first (down at boot, a login being fixed) keeps
// trying with the failure backoff, and joins once the AM accepts it.
func TestAcctMgrConfigJoinRetried(t *testing.T) {
	t.Parallel()
	am, err := testproject.NewAccountManager("Retry AM", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	defer am.Close()
	am.SetUser(testproject.AMUser{Name: "Dan", ErrorText: "account suspended"}, "pw")
	cfg := config.Default()
	cfg.AccountManager = config.AccountManager{URL: am.URL(), User: "Dan", PasswordHash: guirpc.AcctMgrPasswordHash("Dan", "pw")}
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), cfg, nil)
	var retry time.Time
	testsupport.WaitFor(t, 20*time.Second, "the refused join", func() bool {
		if err := h.d.query(context.Background(), func() { retry = h.d.am.joinRetry }); err != nil {
			t.Fatal(err)
		}
		return !retry.IsZero()
	})
	if d := time.Until(retry); d < 200*time.Second || d > acctMgrMinBackoff {
		t.Errorf("join retried in %v, want the failure backoff", d)
	}
	if out, _ := h.amInfo(); out.URL != "" {
		t.Fatalf("a refused join joined: %+v", out)
	}
	am.Update("Dan", func(u *testproject.AMUser) { u.ErrorText = "" })
	if err := h.d.query(context.Background(), func() { h.d.am.joinRetry = time.Now().Add(-time.Second) }); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "the join on retry", func() bool {
		out, info := h.amInfo()
		return out.URL == am.URL() && info.Origin == originConfig
	})
}
