//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/workfetch"
)

// The app_config.xml files these tests write, for the test project's
// default app (refapp).
const (
	acMaxConcurrent1 = "<app_config>\n<app>\n<name>refapp</name>\n<max_concurrent>1</max_concurrent>\n</app>\n</app_config>\n"
	acProjectMax1    = "<app_config>\n<project_max_concurrent>1</project_max_concurrent>\n</app_config>\n"
	// acNone removes the file. (The C++ client keeps an app's
	// max_concurrent when a file read again no longer names the app; it
	// clears it only when the file is gone. boincd takes the file as it
	// is, so both agree once it is removed.)
	acNone = ""
)

// writeAppConfig puts app_config.xml into a project's directory under a
// client's data directory, as a volunteer does; empty content removes it.
func writeAppConfig(t *testing.T, dataDir, projectDir, content string) {
	t.Helper()
	dir := filepath.Join(dataDir, "projects", projectDir)
	if content == "" {
		if err := os.Remove(filepath.Join(dir, "app_config.xml")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "app_config.xml"), []byte(content))
}

// holdsAt checks for a few seconds that a client never shows more than
// want tasks executing, and at the end exactly want.
func holdsAt(t *testing.T, c *boinccmdClient, who string, want int, d time.Duration) {
	t.Helper()
	end := time.Now().Add(d)
	n := 0
	for time.Now().Before(end) {
		n = len(executing(c.tasks()))
		if n > want {
			t.Fatalf("%s: %d tasks executing, the limit allows %d:\n%s", who, n, want, c.run("--get_tasks"))
		}
		time.Sleep(300 * time.Millisecond)
	}
	if n != want {
		t.Fatalf("%s: %d tasks executing, want %d", who, n, want)
	}
}

func executingIs(n int) func(string) bool {
	return func(out string) bool { return len(executing(taskBlocks(out))) == n }
}

// TestAppConfigLimits: with max_concurrent 1 for the app boincd runs one
// task at a time however many CPUs it has, and stops asking the project
// for work once a task waits on the limit (the C++ client 7.x's rule:
// no work is fetched that the limit will not let run). read_cc_config
// applies an edited file: without limits as many tasks run as there are
// CPUs and work fetch resumes; project_max_concurrent 1 then holds the
// project to one task again.
func TestAppConfigLimits(t *testing.T) {
	boinccmdPath(t)
	ncpu := runtime.NumCPU()
	if ncpu < 2 {
		t.Skip("needs two CPUs to tell a limit of 1 from the CPU count")
	}
	t.Parallel()
	// One job per reply: every job the daemon holds is one it asked for.
	p := startProject(t, testproject.Config{Name: "app_config limits", TotalJobs: 40, MaxJobsPerRPC: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 600", FpopsEst: 600e9, InputSize: 1000}})
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	writeAppConfig(t, dir, p.dirName(), acMaxConcurrent1)
	d, c := guiDaemon(t, "daemon", dir, childOptions{})

	if !c.until("two tasks, one executing", 90*time.Second, func(out string) bool {
		return len(taskBlocks(out)) >= 2 && executingIs(1)(out)
	}, "--get_tasks") {
		t.FailNow()
	}
	d.waitLog("not requesting work", 30*time.Second, "reason", workfetch.WhyMaxConcurrent, "resource", "CPU")
	sent := len(p.Stats().Sent)
	holdsAt(t, c, "max_concurrent 1", 1, 6*time.Second)
	if now := len(p.Stats().Sent); now != sent {
		t.Fatalf("the daemon fetched %d more tasks while one waited on max_concurrent", now-sent)
	}
	t.Logf("max_concurrent 1: 1 task executing of %d held, %d CPUs, no fetch in 6 s", sent, ncpu)

	// No limit: every CPU gets a task and work fetch fills the buffer.
	writeAppConfig(t, dir, p.dirName(), acNone)
	c.run("--read_cc_config")
	want := min(ncpu, 40)
	if !c.until(fmt.Sprintf("%d tasks executing", want), 90*time.Second, executingIs(want), "--get_tasks") {
		t.FailNow()
	}
	waitStats(t, d, p, "work fetch to resume", 60*time.Second, func(st testproject.Stats) bool { return len(st.Sent) > sent })

	// project_max_concurrent 1: back to one task.
	writeAppConfig(t, dir, p.dirName(), acProjectMax1)
	c.run("--read_cc_config")
	if !c.until("one task executing", 60*time.Second, executingIs(1), "--get_tasks") {
		t.FailNow()
	}
	holdsAt(t, c, "project_max_concurrent 1", 1, 4*time.Second)
	d.stop()
}

// waitStats polls the project's stats until ok holds.
func waitStats(t *testing.T, d *daemonProc, p *project, what string, timeout time.Duration, ok func(testproject.Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok(p.Stats()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v:\n%s", what, timeout, d.tail(60))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAppConfigCmdlineAndReport: an <app_version> cmdline reaches the
// app after the workunit's command line (the refapp's last --seconds
// wins, and its output says how long it slept), and an app's
// report_results_immediately reports the result at once although the
// daemon would otherwise hold it for an hour.
func TestAppConfigCmdlineAndReport(t *testing.T) {
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "app_config cmdline", TotalJobs: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 600", FpopsEst: 600e9, InputSize: 1000}})
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	writeAppConfig(t, dir, p.dirName(), "<app_config>\n<app>\n<name>refapp</name>\n<report_results_immediately/>\n</app>\n"+
		"<app_version>\n<app_name>refapp</app_name>\n<cmdline>--seconds 2</cmdline>\n</app_version>\n</app_config>\n")
	holdReports(t, dir)
	d := startDaemon(t, "daemon", childOptions{DataDir: dir, MaxReportDelay: time.Hour, FetchBackoffMin: time.Hour})
	waitAllReported(t, d, p, 1, 60*time.Second)
	checkReportedOnce(t, p, 1, refOutput(p, 2))
	d.stop()
}

// cppDataDir finds the data directory of the C++ client that c talks to:
// the working directory of the boinc process serving c's GUI RPC port.
func cppDataDir(t *testing.T, c *boinccmdClient) string {
	t.Helper()
	port := c.addr[strings.LastIndexByte(c.addr, ':')+1:]
	if _, err := os.Stat("/proc"); err != nil {
		t.Skip("no /proc: cannot find the C++ client's data directory")
	}
	for p := range testsupport.Processes() {
		args := p.Cmdline()
		if i := slices.Index(args, "--gui_rpc_port"); i < 0 || i+1 >= len(args) || args[i+1] != port {
			continue
		}
		if cwd := p.Cwd(); cwd != "" {
			return cwd
		}
	}
	t.Fatalf("no C++ client process serving port %s", port)
	return ""
}

// TestAppConfigSideBySide runs the C++ client (7.20) and boincd against
// the same test project, each with two CPUs' worth of its own tasks, puts
// the same app_config.xml in each one's project directory and has each
// read it (boinccmd --read_cc_config): max_concurrent 1, no limit, then
// project_max_concurrent 1. Both must run the same number of tasks at
// every step.
func TestAppConfigSideBySide(t *testing.T) {
	boinccmdPath(t)
	cppBin, err := exec.LookPath("boinc")
	if err != nil {
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to tell a limit of 1 from the CPU count")
	}
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "app_config side by side", TotalJobs: 2, MaxJobsPerRPC: 2,
		Job: testproject.JobTemplate{CommandLine: "--seconds 900", FpopsEst: 900e9, InputSize: 1000}})
	url := p.URL()
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte(sideBySidePrefs))
	_, ours := guiDaemon(t, "daemon", dir, childOptions{MaxReportDelay: time.Second})
	if !ours.until("two tasks executing", 90*time.Second, executingIs(2), "--get_tasks") {
		t.FailNow()
	}
	// Each client computes its own two jobs (see TestBoinccmdSideBySide).
	ours.run("--project", url, "nomorework")
	p.AddJobs(2)
	theirs := startCppClient(t, cppBin, url)
	if !theirs.until("two tasks executing", 90*time.Second, executingIs(2), "--get_tasks") {
		t.FailNow()
	}
	theirs.run("--project", url, "nomorework")
	cppDir := cppDataDir(t, theirs)

	steps := []struct {
		name, file string
		want       int
	}{
		{"max_concurrent 1", acMaxConcurrent1, 1},
		{"no limit", acNone, 2},
		{"project_max_concurrent 1", acProjectMax1, 1},
	}
	for _, s := range steps {
		writeAppConfig(t, dir, p.dirName(), s.file)
		writeAppConfig(t, cppDir, p.dirName(), s.file)
		ours.run("--read_cc_config")
		theirs.run("--read_cc_config")
		for _, c := range []struct {
			who string
			bc  *boinccmdClient
		}{{"boincd", ours}, {"C++ client", theirs}} {
			if !c.bc.until(fmt.Sprintf("%s: %d executing", s.name, s.want), 60*time.Second, executingIs(s.want), "--get_tasks") {
				t.FailNow()
			}
		}
		holdsAt(t, ours, "boincd, "+s.name, s.want, 3*time.Second)
		holdsAt(t, theirs, "C++ client, "+s.name, s.want, 3*time.Second)
		t.Logf("%s: boincd %d executing, C++ client %d executing", s.name, len(executing(ours.tasks())), len(executing(theirs.tasks())))
	}
}
