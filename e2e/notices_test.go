//go:build unix

package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// What boinccmd --get_notices prints: "SEQNO: (DATE) DESCRIPTION",
// newest first, a description on as many lines as it has.
var noticeLineRE = regexp.MustCompile(`^(\d+): \((\d{2}-[A-Z][a-z]{2}-\d{4} \d{2}:\d{2}:\d{2})\) (.*)$`)

const (
	e2eSchedNotice = "Please update: version 2 of the app is out"
	e2eNewsOld     = "The project was started"
	e2eNewsNew     = "New <b>results</b> are in & published"
)

func e2eNews() *testproject.NewsFeed {
	now := time.Now()
	return &testproject.NewsFeed{Items: []testproject.NewsItem{
		{Title: "Results", Description: e2eNewsNew, Link: "http://example.com/forum_thread.php?id=2", GUID: "http://example.com/forum_thread.php?id=2", PubDate: now.Add(-time.Hour)},
		{Title: "Hello", Description: e2eNewsOld, Link: "http://example.com/forum_thread.php?id=1", PubDate: now.Add(-48 * time.Hour)},
	}}
}

// noticeSeqnos maps each notice's first description line to its seqno,
// from --get_notices output, and checks every notice line's form.
func noticeSeqnos(t *testing.T, out string) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		if sm := noticeLineRE.FindStringSubmatch(l); sm != nil {
			n, _ := strconv.Atoi(sm[1])
			m[strings.TrimSpace(sm[3])] = n
		}
	}
	return m
}

// projectNoticeOrder lists the test project's notices in the order
// boinccmd printed them.
func projectNoticeOrder(out string) []string {
	var order []string
	for _, l := range strings.Split(out, "\n") {
		if sm := noticeLineRE.FindStringSubmatch(l); sm != nil {
			switch d := strings.TrimSpace(sm[3]); d {
			case e2eSchedNotice, e2eNewsOld, e2eNewsNew:
				order = append(order, d)
			}
		}
	}
	return order
}

// A scheduler notice and the project's news reach boinccmd
// --get_notices; a restart keeps them under the same seqnos (nothing is
// announced again); a detach removes them.
func TestNotices(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{Name: "notices e2e project", TotalJobs: 1,
		Notices: []string{e2eSchedNotice}, News: e2eNews()})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	all := func(out string) bool {
		return len(projectNoticeOrder(out)) == 3
	}
	if !c.until("the scheduler notice and both news items", 60*time.Second, all, "--get_notices", "0") {
		t.FailNow()
	}
	out := c.run("--get_notices", "0")
	// Newest first: the items were added oldest first after the notice.
	if got, want := strings.Join(projectNoticeOrder(out), " | "), strings.Join([]string{e2eNewsNew, e2eNewsOld, e2eSchedNotice}, " | "); got != want {
		t.Errorf("order %q, want %q\n%s", got, want, out)
	}
	t.Logf("boincd, boinccmd --get_notices 0:\n%s", out)
	before := noticeSeqnos(t, out)
	last := 0
	for _, n := range before {
		last = max(last, n)
	}
	if got := c.run("--get_notices", strconv.Itoa(last)); noticeLineRE.MatchString(strings.TrimSpace(got)) {
		t.Errorf("--get_notices %d shows notices:\n%s", last, got)
	}
	fetches := p.NewsFetches()

	d.stop()
	_, c = guiDaemon(t, "restarted", dir, childOptions{})
	// A reply comes again with the same notice: still once.
	rpcs := p.Stats().RPCs
	deadline := time.Now().Add(30 * time.Second)
	for p.Stats().RPCs == rpcs && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	out = c.run("--get_notices", "0")
	after := noticeSeqnos(t, out)
	for _, text := range []string{e2eSchedNotice, e2eNewsOld, e2eNewsNew} {
		if before[text] == 0 || after[text] != before[text] {
			t.Errorf("%q: seqno %d before the restart, %d after\n%s", text, before[text], after[text], out)
		}
	}
	if got := c.run("--get_notices", strconv.Itoa(last)); strings.Contains(got, e2eSchedNotice) || strings.Contains(got, e2eNewsNew) {
		t.Errorf("the restart announced old notices again:\n%s", got)
	}
	if n := p.NewsFetches(); n != fetches {
		t.Errorf("the feed was fetched again at restart (%d fetches, was %d): its poll time was not kept", n, fetches)
	}

	c.run("--project", p.URL(), "detach")
	if !c.until("the project's notices gone", 30*time.Second, func(out string) bool {
		return len(projectNoticeOrder(out)) == 0
	}, "--get_notices", "0") {
		t.FailNow()
	}
}

// The C++ client 7.20.5 against the same kind of project: boinccmd prints
// its notices in the same form and order as boincd's.
func TestNoticesLikeCppClient(t *testing.T) {
	boinccmdPath(t)
	bin, err := exec.LookPath("boinc")
	if err != nil {
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "notices cpp project", TotalJobs: 1,
		Notices: []string{e2eSchedNotice}, News: e2eNews()})
	dir := t.TempDir()
	// An empty password file: boinccmd needs none.
	if err := os.WriteFile(filepath.Join(dir, "gui_rpc_auth.cfg"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	var log bytes.Buffer
	// Not --no_info_fetch: the C++ client then fetches no news feed.
	cmd := exec.Command(bin, "--dir", dir, "--no_gpus", "--skip_cpu_benchmarks",
		"--gui_rpc_port", strings.TrimPrefix(addr, "127.0.0.1:"), "--allow_multiple_clients",
		"--attach_project", p.URL(), "0123456789abcdef0123456789abcdef")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	var cppOut string
	deadline := time.Now().Add(60 * time.Second)
	for {
		o, _ := exec.Command(boinccmdPath(t), "--host", addr, "--get_notices", "0").CombinedOutput()
		cppOut = string(o)
		if len(projectNoticeOrder(cppOut)) == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if got, want := strings.Join(projectNoticeOrder(cppOut), " | "), strings.Join([]string{e2eNewsNew, e2eNewsOld, e2eSchedNotice}, " | "); got != want {
		t.Fatalf("C++ client: order %q, want %q\n%s\nclient log:\n%s", got, want, cppOut, log.String())
	}
	t.Logf("C++ client, boinccmd --get_notices 0:\n%s", cppOut)
	for _, l := range strings.Split(strings.TrimSpace(cppOut), "\n") {
		if !noticeLineRE.MatchString(l) {
			t.Errorf("C++ client line %q is not of the form boincd's output is checked against", l)
		}
	}
}
