//go:build unix

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// Account managers (issue 17): the test AM (internal/testproject
// AccountManager) lists projects of the test project server; hosts join
// it from boincd.toml or with boinccmd --acct_mgr and follow it.

const (
	amUser     = "Alice"
	amPassword = "correct horse"
)

func startAM(t *testing.T) *testproject.AccountManager {
	t.Helper()
	am, err := testproject.NewAccountManager("Test Account Manager", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := am.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = am.Close() })
	return am
}

// amProjects starts n test projects that hand out no work: the tests are
// about which projects a host has, not about computing.
func amProjects(t *testing.T, n int) []*project {
	t.Helper()
	var ps []*project
	for i := range n {
		ps = append(ps, startProject(t, testproject.Config{Name: fmt.Sprintf("AM Project %c", 'A'+i), TotalJobs: 1}))
	}
	return ps
}

// amConfigToml joins the AM from boincd.toml with a password file.
func amConfigToml(t *testing.T, dir, url string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "am_password"), []byte(amPassword+"\n"))
	toml := fmt.Sprintf("allow_root_apps = true\n\n[account_manager]\nurl = %q\nuser = %q\npassword_file = \"am_password\"\n", url, amUser)
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(toml))
}

// projectBlocks runs --get_project_status and returns each project's
// block by master URL.
func projectBlocks(c *boinccmdClient) map[string]string {
	c.t.Helper()
	out := c.run("--get_project_status")
	m := map[string]string{}
	for _, b := range regexp.MustCompile(`(?m)^\d+\) -+$`).Split(out, -1) {
		if u := field(b, "master URL"); u != "" {
			m[u] = b
		}
	}
	return m
}

func projectURLs(c *boinccmdClient) []string {
	var urls []string
	for u := range projectBlocks(c) {
		urls = append(urls, u)
	}
	slices.Sort(urls)
	return urls
}

// amSyncs counts the daemon's successful AM contacts.
func amSyncs(d *daemonProc) int {
	n := 0
	for _, l := range d.snapshot() {
		if strings.Contains(l.Msg, "Account manager contact succeeded") {
			n++
		}
	}
	return n
}

func waitAMSyncs(t *testing.T, d *daemonProc, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for amSyncs(d) < n {
		if time.Now().After(deadline) {
			t.Fatalf("no %d successful account manager contacts within 60 s:\n%s", n, d.tail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAcctMgrJoinFollowLeave: a host joins the AM from boincd.toml, gets
// its projects with the AM's shares and preferences, follows the AM's
// changes on the next sync, refuses a forged URL signature, may not
// detach an AM project itself, and keeps its projects, unmarked, when it
// leaves the AM.
func TestAcctMgrJoinFollowLeave(t *testing.T) {
	t.Parallel()
	boinccmdPath(t)
	am := startAM(t)
	ps := amProjects(t, 4)
	a, b, c, dp := ps[0], ps[1], ps[2], ps[3]
	am.SetUser(testproject.AMUser{
		Name: amUser,
		Projects: []testproject.AMProject{
			{URL: a.URL(), Authenticator: "key-a", ResourceShare: 200},
			{URL: b.URL(), Authenticator: "key-b", ResourceShare: 50},
			{URL: dp.URL(), Authenticator: "key-d"},
		},
		GlobalPrefs: "<work_buf_min_days>0.3</work_buf_min_days>\n<venue name=\"work\">\n<max_ncpus_pct>50</max_ncpus_pct>\n</venue>",
		HostVenue:   "work",
		Messages:    []string{"Welcome to the test AM"},
	}, amPassword)

	dir := newDataDir(t)
	amConfigToml(t, dir, am.URL())
	d, bc := guiDaemon(t, "am", dir, childOptions{})
	waitAMSyncs(t, d, 1)

	blocks := projectBlocks(bc)
	if got, want := projectURLs(bc), sortedURLs(a, b, dp); !slices.Equal(got, want) {
		t.Fatalf("after joining: projects %v, want %v\n%s", got, want, d.tail(40))
	}
	if s := field(blocks[a.URL()], "resource share"); !strings.HasPrefix(s, "200") {
		t.Errorf("project A resource share %q, want the AM's 200", s)
	}
	if s := field(blocks[b.URL()], "resource share"); !strings.HasPrefix(s, "50") {
		t.Errorf("project B resource share %q, want the AM's 50", s)
	}
	for u, blk := range blocks {
		if !strings.Contains(blk, "attached via Account Manager: yes") {
			t.Errorf("%s not shown as attached via the account manager:\n%s", u, blk)
		}
	}
	if _, ok := d.find(func(l logLine) bool {
		return strings.Contains(l.Msg, "preferences changed") && l.num("work_buf_min_days") == 0.3 && l.num("max_ncpus_pct") == 50
	}); !ok {
		t.Errorf("the AM's preferences (work_buf_min_days 0.3, venue work's max_ncpus_pct 50) not applied:\n%s", d.tail(40))
	}
	// Where the preferences in force came from, as the C++ client says
	// it (show_global_prefs_source) after an AM reply brought them.
	for _, want := range []string{"General prefs: from " + am.URL() + " (last modified ", "Computer location: work",
		"General prefs: using separate prefs for work"} {
		if _, ok := d.find(func(l logLine) bool { return strings.HasPrefix(l.Msg, want) }); !ok {
			t.Errorf("no %q in the event log:\n%s", want, d.tail(40))
		}
	}
	if out := bc.run("--get_notices", "0"); !strings.Contains(out, "Welcome to the test AM") {
		t.Errorf("the AM's message is not a notice:\n%s", out)
	}
	if out := bc.run("--acct_mgr", "info"); !strings.Contains(out, "Name: Test Account Manager") || !strings.Contains(out, "URL: "+am.URL()) {
		t.Errorf("--acct_mgr info:\n%s", out)
	}
	// The user may not detach an AM project (the C++ client's rule).
	if out, err := bc.exec(bc.pass, "--project", a.URL(), "detach"); err == nil {
		t.Errorf("detaching an AM project succeeded: %q, want the refusal", out)
	}
	d.waitLog("This project must be detached using the account manager web site.", 10*time.Second)
	if !slices.Contains(projectURLs(bc), a.URL()) {
		t.Errorf("project A was detached by the user, not through the AM")
	}
	// The host echoes the AM's opaque and reports its AM projects.
	reqs := am.Requests()
	if len(reqs) == 0 || reqs[len(reqs)-1].User != amUser {
		t.Fatalf("the AM saw no request from %s", amUser)
	}

	// The AM changes a share, sets no-new-tasks, detaches a project and
	// adds another, and lists one whose signature is forged.
	forged := startProject(t, testproject.Config{Name: "Forged", TotalJobs: 1})
	am.Update(amUser, func(u *testproject.AMUser) {
		u.Projects = []testproject.AMProject{
			{URL: a.URL(), Authenticator: "key-a", ResourceShare: 300},
			{URL: b.URL(), Authenticator: "key-b", ResourceShare: 50, NoNewTasks: ptr(true)},
			{URL: c.URL(), Authenticator: "key-c"},
			{URL: dp.URL(), Authenticator: "key-d", Detach: true},
			{URL: forged.URL(), Authenticator: "key-f", ForgeSignature: true},
		}
	})
	bc.run("--acct_mgr", "sync")
	waitAMSyncs(t, d, 2)
	d.waitLog("Bad signature for URL "+forged.URL(), 10*time.Second)
	bc.until("the AM's changes", 30*time.Second, func(string) bool {
		blocks = projectBlocks(bc)
		return slices.Equal(mapKeys(blocks), sortedURLs(a, b, c))
	}, "--client_version")
	if s := field(blocks[a.URL()], "resource share"); !strings.HasPrefix(s, "300") {
		t.Errorf("project A resource share %q, want the AM's new 300", s)
	}
	if s := field(blocks[b.URL()], "don't request more work"); s != "yes" {
		t.Errorf("project B don't request more work %q, want yes", s)
	}
	if last := am.Requests(); !strings.Contains(last[len(last)-1].Opaque, "<host_seq>") {
		t.Errorf("the AM's opaque was not echoed: %q", last[len(last)-1].Opaque)
	}

	// Leaving the AM keeps the projects, without their AM flags; the
	// user may then detach them.
	bc.run("--acct_mgr", "detach")
	if out := bc.run("--acct_mgr", "info"); field(out, "URL") != "" {
		t.Errorf("after leaving, --acct_mgr info:\n%s", out)
	}
	blocks = projectBlocks(bc)
	if !slices.Equal(mapKeys(blocks), sortedURLs(a, b, c)) {
		t.Errorf("after leaving: projects %v, want them kept", mapKeys(blocks))
	}
	for u, blk := range blocks {
		if !strings.Contains(blk, "attached via Account Manager: no") {
			t.Errorf("%s still marked as attached via the account manager:\n%s", u, blk)
		}
	}
	bc.run("--project", c.URL(), "detach")
	bc.until("project C detached", 30*time.Second, func(string) bool {
		return !slices.Contains(projectURLs(bc), c.URL())
	}, "--client_version")

	// A restart keeps the host out of the AM it left (boincd.toml still
	// names it, unchanged).
	d.stop()
	d2, bc2 := guiDaemon(t, "am-restart", dir, childOptions{})
	d2.waitLog("boincd.toml names an account manager that was left over GUI RPC", 30*time.Second)
	if out := bc2.run("--acct_mgr", "info"); field(out, "URL") != "" {
		t.Errorf("after restart, --acct_mgr info:\n%s", out)
	}
}

func sortedURLs(ps ...*project) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.URL())
	}
	slices.Sort(out)
	return out
}

func mapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestAcctMgrThreeHostsConverge: three hosts in the same AM have the same
// projects after one sync, and again after the AM changes them.
func TestAcctMgrThreeHostsConverge(t *testing.T) {
	t.Parallel()
	boinccmdPath(t)
	am := startAM(t)
	ps := amProjects(t, 3)
	am.SetUser(testproject.AMUser{Name: amUser, Projects: []testproject.AMProject{
		{URL: ps[0].URL(), Authenticator: "k0"}, {URL: ps[1].URL(), Authenticator: "k1"},
	}}, amPassword)
	type host struct {
		d  *daemonProc
		bc *boinccmdClient
	}
	var hosts []host
	for i := range 3 {
		dir := newDataDir(t)
		amConfigToml(t, dir, am.URL())
		d, bc := guiDaemon(t, fmt.Sprintf("host%d", i), dir, childOptions{Seed: uint64(i + 1)})
		hosts = append(hosts, host{d, bc})
	}
	want := sortedURLs(ps[0], ps[1])
	for i, h := range hosts {
		waitAMSyncs(t, h.d, 1)
		if got := projectURLs(h.bc); !slices.Equal(got, want) {
			t.Errorf("host %d after its first sync: %v, want %v", i, got, want)
		}
	}
	am.Update(amUser, func(u *testproject.AMUser) {
		u.Projects = []testproject.AMProject{
			{URL: ps[1].URL(), Authenticator: "k1"}, {URL: ps[2].URL(), Authenticator: "k2"},
			{URL: ps[0].URL(), Authenticator: "k0", Detach: true},
		}
	})
	want = sortedURLs(ps[1], ps[2])
	for i, h := range hosts {
		h.bc.run("--acct_mgr", "sync")
		waitAMSyncs(t, h.d, 2)
		h.bc.until(fmt.Sprintf("host %d converged", i), 30*time.Second, func(string) bool {
			return slices.Equal(projectURLs(h.bc), want)
		}, "--client_version")
	}
	cpids := map[string]bool{}
	for _, r := range am.Requests() {
		cpids[r.HostCPID] = true
	}
	if len(cpids) != 3 {
		t.Errorf("the AM saw %d hosts, want 3", len(cpids))
	}
}

// TestAcctMgrBoinccmdLikeCppClient runs boinccmd --acct_mgr attach, info,
// sync and detach against boincd and the C++ client, on the same test
// AM, and compares what each command printed and did.
func TestAcctMgrBoinccmdLikeCppClient(t *testing.T) {
	t.Parallel()
	boinccmdPath(t)
	bin := os.Getenv("BOINC_CLIENT")
	if bin == "" {
		bin = "/usr/bin/boinc"
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skip("the C++ client is not installed")
	}
	am := startAM(t)
	ps := amProjects(t, 3)
	am.SetUser(testproject.AMUser{Name: amUser, Projects: []testproject.AMProject{
		{URL: ps[0].URL(), Authenticator: accountKey, ResourceShare: 25},
		{URL: ps[1].URL(), Authenticator: accountKey},
	}}, amPassword)
	home := startProject(t, testproject.Config{Name: "Home", TotalJobs: 1})
	cpp := startCppClient(t, bin, home.URL())
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{home}})
	d, ours := guiDaemon(t, "am-vs-cpp", dir, childOptions{})
	clients := []struct {
		name string
		c    *boinccmdClient
	}{{"C++ client", cpp}, {"boincd", ours}}

	run := func(args ...string) []string {
		var outs []string
		var failed []bool
		for _, cl := range clients {
			out, err := cl.c.exec(cl.c.pass, args...)
			outs = append(outs, strings.TrimSpace(out))
			failed = append(failed, err != nil)
		}
		if failed[0] != failed[1] {
			t.Errorf("boinccmd %s: failed for the C++ client %v, for boincd %v", strings.Join(args, " "), failed[0], failed[1])
		}
		// The daemons differ in the alerts of their environment (boincd
		// warns that apps run as root here), and in how many polls find
		// the RPC still in progress (timing).
		outs[0], outs[1] = normalizeAMOutput(outs[0]), normalizeAMOutput(outs[1])
		if outs[0] != outs[1] {
			t.Errorf("boinccmd %s prints differently:\nC++ client: %q\nboincd:     %q", strings.Join(args, " "), outs[0], outs[1])
		}
		return outs
	}
	state := func(what string, want []string, viaAM string) {
		for _, cl := range clients {
			ok := cl.c.until(cl.name+" "+what, 60*time.Second, func(string) bool {
				b := projectBlocks(cl.c)
				if !slices.Equal(mapKeys(b), want) {
					return false
				}
				for u, blk := range b {
					if u == home.URL() {
						continue
					}
					if !strings.Contains(blk, "attached via Account Manager: "+viaAM) {
						return false
					}
				}
				return true
			}, "--client_version")
			if !ok {
				t.Logf("%s projects:\n%s", cl.name, cl.c.run("--get_project_status"))
			}
		}
	}

	run("--acct_mgr", "info")
	// A wrong password: the same alert in the event log, under the AM's
	// name (ACCT_MGR_OP::handle_reply), and the same notice.
	run("--acct_mgr", "attach", am.URL(), amUser, "wrong-password")
	var alerts []string
	for _, cl := range clients {
		var line string
		cl.c.until(cl.name+" alert for the wrong password", 30*time.Second, func(out string) bool {
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "Message from account manager") {
					line = l
					return true
				}
			}
			return false
		}, "--get_messages", "0")
		// "SEQNO: TIME (PROJECT) TEXT" without its number and time
		if i := strings.Index(line, " ("); i >= 0 {
			line = line[i+1:]
		}
		alerts = append(alerts, line)
		// The C++ client 7.20.5's notice reads `_("Message from account
		// manager"): Invalid password` (its translation macro's text left
		// in); boincd's reads as its event log line does.
		out := cl.c.run("--get_notices", "0")
		if cl.name == "boincd" && !strings.Contains(out, "Message from account manager: Invalid password") {
			t.Errorf("%s: no notice for the wrong password:\n%s", cl.name, out)
		}
		if cl.name != "boincd" && !strings.Contains(out, "Invalid password") {
			t.Errorf("%s: no notice for the wrong password:\n%s", cl.name, out)
		}
	}
	if alerts[0] == "" || alerts[0] != alerts[1] {
		t.Errorf("the wrong password's alert:\nC++ client: %q\nboincd:     %q", alerts[0], alerts[1])
	}
	run("--acct_mgr", "attach", am.URL(), amUser, amPassword)
	state("joined", sortedURLs(home, ps[0], ps[1]), "yes")
	run("--acct_mgr", "info")
	// The refusal reads the same: the C++ client's reply has no newline
	// after its <error>, which boinccmd then prints as "Error -1".
	run("--project", ps[0].URL(), "detach")
	// Joining a second AM is refused until the first is left.
	run("--acct_mgr", "attach", "http://127.0.0.1:1/other/", amUser, amPassword)

	am.Update(amUser, func(u *testproject.AMUser) {
		u.Projects = append(u.Projects, testproject.AMProject{URL: ps[2].URL(), Authenticator: accountKey})
	})
	run("--acct_mgr", "sync")
	state("synced", sortedURLs(home, ps[0], ps[1], ps[2]), "yes")
	// The C++ client applies the AM's share to a project it attaches
	// only from the next sync on; boincd at once (the rule). After
	// a sync both have it.
	for _, cl := range clients {
		if s := field(projectBlocks(cl.c)[ps[0].URL()], "resource share"); !strings.HasPrefix(s, "25") {
			t.Errorf("%s: project resource share %q after a sync, want the AM's 25", cl.name, s)
		}
	}

	run("--acct_mgr", "detach")
	run("--acct_mgr", "info")
	state("left", sortedURLs(home, ps[0], ps[1], ps[2]), "no")

	// Both sent the AM the same kind of request.
	byCPID := map[string]string{}
	for _, r := range am.Requests() {
		byCPID[r.HostCPID] = string(r.Body)
	}
	if len(byCPID) != 2 {
		t.Fatalf("the AM saw %d hosts, want 2", len(byCPID))
	}
	var tags [][]string
	for _, body := range byCPID {
		// A container engine is an 8.x host_info field the 7.20 client
		// does not have; boincd reports it (issue 20) when one works,
		// and the harness gives it a stand-in working engine.
		tags = append(tags, slices.DeleteFunc(topLevelTags(body), func(t string) bool {
			return t == "docker_version" || t == "docker_type"
		}))
	}
	if !slices.Equal(tags[0], tags[1]) {
		t.Errorf("request elements differ:\n%v\n%v", tags[0], tags[1])
	}
	_ = d
}

func normalizeAMOutput(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.TrimSpace(l) == "", strings.HasPrefix(l, "Alert from client:"), l == "poll status: operation in progress":
		case len(keep) > 0 && keep[len(keep)-1] == l:
		default:
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

var topTagRE = regexp.MustCompile(`(?m)^ {0,4}<([a-z_]+)[ />]`)

// topLevelTags lists the element names a request starts lines with, in
// order, once each.
func topLevelTags(body string) []string {
	var out []string
	for _, m := range topTagRE.FindAllStringSubmatch(body, -1) {
		if !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}
