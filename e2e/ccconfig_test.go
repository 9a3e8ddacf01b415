//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// fakeGame runs a copy of /bin/sleep named name (an "exclusive app", a
// game the volunteer plays) until the returned stop is called.
func fakeGame(t *testing.T, name string) (stop func()) {
	t.Helper()
	src, err := os.ReadFile("/bin/sleep")
	if err != nil {
		t.Skip("no /bin/sleep to copy:", err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = cmd.Process.Kill()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

func ccConfigXML(options string) []byte {
	return []byte("<cc_config>\n<options>\n" + options + "</options>\n</cc_config>\n")
}

const exclusiveSuspended = "suspended: an exclusive app is running"

// TestCCConfigExclusiveApp: with <exclusive_app>fakegame</exclusive_app>
// in cc_config.xml, boincd suspends computing while a program of that
// name runs ("suspended: an exclusive app is running" in cc_status, the
// task no longer executing) and resumes once it has ended.
func TestCCConfigExclusiveApp(t *testing.T) {
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "exclusive app", TotalJobs: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 600", FpopsEst: 600e9, InputSize: 1000}})
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte(sideBySidePrefs))
	writeFile(t, filepath.Join(dir, "cc_config.xml"), ccConfigXML("<exclusive_app>fakegame</exclusive_app>\n"))
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	if !c.until("one task executing", 90*time.Second, executingIs(1), "--get_tasks") {
		t.FailNow()
	}
	stop := fakeGame(t, "fakegame")
	if !c.until(exclusiveSuspended, 60*time.Second, func(out string) bool {
		return strings.Contains(cpuStatus(out), exclusiveSuspended)
	}, "--get_cc_status") {
		t.FailNow()
	}
	if !c.until("the task suspended", 30*time.Second, executingIs(0), "--get_tasks") {
		t.FailNow()
	}
	stop()
	if !c.until("computing resumed", 60*time.Second, func(out string) bool {
		return strings.Contains(cpuStatus(out), "not suspended")
	}, "--get_cc_status") {
		t.FailNow()
	}
	if !c.until("the task executing again", 30*time.Second, executingIs(1), "--get_tasks") {
		t.FailNow()
	}
	if !strings.Contains(c.run("--get_messages"), "Suspending computation - an exclusive app is running") {
		t.Errorf("event log lacks the C++ client's suspension line:\n%s", d.tail(40))
	}
	d.stop()
}

// TestCCConfigSideBySide runs the C++ client (7.20) and boincd on the same
// test project, two tasks each, and gives both the same cc_config.xml,
// read with boinccmd --read_cc_config: ncpus 1 (one task executing), then
// exclusive_app (computing suspended while the program runs, both report
// the same reason), then neither (two executing again).
func TestCCConfigSideBySide(t *testing.T) {
	boinccmdPath(t)
	cppBin, err := exec.LookPath("boinc")
	if err != nil {
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs to tell ncpus 1 from the CPU count")
	}
	t.Parallel()
	p := startProject(t, testproject.Config{Name: "cc_config side by side", TotalJobs: 2, MaxJobsPerRPC: 2,
		Job: testproject.JobTemplate{CommandLine: "--seconds 900", FpopsEst: 900e9, InputSize: 1000}})
	url := p.URL()
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte(sideBySidePrefs))
	_, ours := guiDaemon(t, "daemon", dir, childOptions{MaxReportDelay: time.Second})
	if !ours.until("two tasks executing", 90*time.Second, executingIs(2), "--get_tasks") {
		t.FailNow()
	}
	ours.run("--project", url, "nomorework")
	p.AddJobs(2)
	theirs := startCppClient(t, cppBin, url)
	if !theirs.until("two tasks executing", 90*time.Second, executingIs(2), "--get_tasks") {
		t.FailNow()
	}
	theirs.run("--project", url, "nomorework")
	cppDir := cppDataDir(t, theirs)
	clients := []struct {
		who string
		bc  *boinccmdClient
		dir string
	}{{"boincd", ours, dir}, {"C++ client", theirs, cppDir}}
	apply := func(options string) {
		// The C++ client's own start-up options stay (startCppClient).
		for _, c := range clients {
			writeFile(t, filepath.Join(c.dir, "cc_config.xml"), ccConfigXML("<no_info_fetch>1</no_info_fetch>\n"+options))
			c.bc.run("--read_cc_config")
		}
	}

	apply("<ncpus>1</ncpus>\n")
	for _, c := range clients {
		if !c.bc.until(c.who+": ncpus 1, one executing", 60*time.Second, executingIs(1), "--get_tasks") {
			t.FailNow()
		}
	}
	holdsAt(t, ours, "boincd, ncpus 1", 1, 3*time.Second)
	holdsAt(t, theirs, "C++ client, ncpus 1", 1, 3*time.Second)

	apply("<exclusive_app>fakegame</exclusive_app>\n")
	for _, c := range clients {
		if !c.bc.until(c.who+": two executing", 60*time.Second, executingIs(2), "--get_tasks") {
			t.FailNow()
		}
	}
	stop := fakeGame(t, "fakegame")
	for _, c := range clients {
		if !c.bc.until(c.who+": "+exclusiveSuspended, 60*time.Second, func(out string) bool {
			return strings.Contains(cpuStatus(out), exclusiveSuspended)
		}, "--get_cc_status") {
			t.FailNow()
		}
		if !c.bc.until(c.who+": none executing", 30*time.Second, executingIs(0), "--get_tasks") {
			t.FailNow()
		}
	}
	stop()
	for _, c := range clients {
		if !c.bc.until(c.who+": two executing after the game", 60*time.Second, executingIs(2), "--get_tasks") {
			t.FailNow()
		}
	}
	t.Log("ncpus 1: both ran one task; exclusive_app: both suspended with the same reason and resumed")
}
