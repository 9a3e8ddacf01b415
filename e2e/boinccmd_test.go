//go:build unix

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// The tests in this file drive a real daemon with the real C++ boinccmd
// (7.20, Debian's boinc-client package, installed by .ci/run): what a
// volunteer types must have the effect the C++ client would give it, seen
// both in boinccmd's own output and in what the project server receives.

// resultAborted is RESULT_ABORTED (lib/common_defs.h), the state a task
// aborted with boinccmd --task … abort is reported in.
const resultAborted = 6

// boinccmdClient runs boinccmd against one daemon.
type boinccmdClient struct {
	t    *testing.T
	bin  string
	d    *daemonProc
	addr string // host:port
	pass string
	cwd  string // an empty directory, so no stray gui_rpc_auth.cfg is read
}

// newBoinccmd skips the test where boinccmd is not installed, otherwise
// waits for d's GUI RPC listener and reads the password the daemon made.
func newBoinccmd(t *testing.T, d *daemonProc) *boinccmdClient {
	t.Helper()
	bin := boinccmdPath(t)
	l := d.waitLog("GUI RPC listening", 30*time.Second)
	addr := l.str("address")
	if addr == "" {
		t.Fatalf("GUI RPC listening without an address: %s", l.Raw)
	}
	pass, err := os.ReadFile(filepath.Join(d.dir, "gui_rpc_auth.cfg"))
	if err != nil {
		t.Fatalf("the daemon made no GUI RPC password file: %v", err)
	}
	return &boinccmdClient{t: t, bin: bin, d: d, addr: addr, pass: strings.TrimSpace(string(pass)), cwd: t.TempDir()}
}

func boinccmdPath(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("boinccmd")
	if err != nil {
		t.Skip("boinccmd (package boinc-client) is not installed")
	}
	return bin
}

// exec runs boinccmd with password pass and returns its output and exit
// error.
func (c *boinccmdClient) exec(pass string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--host", c.addr, "--passwd", pass}, args...)...)
	cmd.Dir = c.cwd
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// daemonTail is the end of boincd's log (nothing for another client).
func (c *boinccmdClient) daemonTail() string {
	if c.d == nil {
		return "(not boincd)"
	}
	return c.d.tail(40)
}

// run runs a command that must succeed; a failure fails the test at once
// (later steps depend on it).
func (c *boinccmdClient) run(args ...string) string {
	c.t.Helper()
	out, err := c.exec(c.pass, args...)
	if err != nil {
		c.t.Fatalf("boinccmd %s: %v\n%s\ndaemon log:\n%s", strings.Join(args, " "), err, out, c.daemonTail())
	}
	return out
}

// until runs boinccmd args every 200 ms until ok accepts the output; it
// reports an error (and returns false) after timeout.
func (c *boinccmdClient) until(what string, timeout time.Duration, ok func(out string) bool, args ...string) bool {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		out := c.run(args...)
		if ok(out) {
			return true
		}
		if time.Now().After(deadline) {
			c.t.Errorf("boinccmd %s: no %s within %v; last output:\n%s\ndaemon log:\n%s",
				strings.Join(args, " "), what, timeout, out, c.daemonTail())
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tasks runs --get_tasks and splits its output per task name.
func (c *boinccmdClient) tasks() map[string]string {
	c.t.Helper()
	return taskBlocks(c.run("--get_tasks"))
}

var blockStart = regexp.MustCompile(`(?m)^\d+\) -----------\n`)

// taskBlocks splits --get_tasks output into the block of each task, by
// name.
func taskBlocks(out string) map[string]string {
	m := map[string]string{}
	for _, b := range blockStart.Split(out, -1)[1:] {
		if name := field(b, "name"); name != "" {
			m[name] = b
		}
	}
	return m
}

// field is the value of the first "   key: value" line of a block.
func field(block, key string) string {
	for _, line := range strings.Split(block, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+": "); ok {
			return strings.TrimSpace(v)
		}
		if strings.TrimSpace(line) == key+":" {
			return ""
		}
	}
	return ""
}

// executing lists the tasks boinccmd shows as EXECUTING.
func executing(blocks map[string]string) []string {
	var out []string
	for name, b := range blocks {
		if field(b, "active_task_state") == "EXECUTING" {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// stopped reports whether the process boinccmd shows as a task's PID is
// stopped (SIGSTOP), from /proc; ok is false where that cannot be told.
func stopped(block string) (isStopped, ok bool) {
	pid := field(block, "PID")
	if pid == "" || pid == "0" {
		return false, false
	}
	n, err := strconv.Atoi(pid)
	if err != nil {
		return false, false
	}
	st, ok, err := testsupport.Proc(n).Stat()
	if err != nil || !ok {
		return false, false
	}
	return st.State == 'T', true
}

// runsAsShown says whether the task's process state agrees with its
// active_task_state: a SUSPENDED task's process is stopped, an EXECUTING
// one's is not. Without /proc it trusts boinccmd.
//
// A stop or continue shows in /proc only once the process next runs: at
// nice 19 beside a loaded machine's other tests that may take many
// seconds, which is why the waits on it (stateWait) are long bounds.
func runsAsShown(block string) bool {
	st, ok := stopped(block)
	if !ok {
		return true
	}
	switch field(block, "active_task_state") {
	case "SUSPENDED":
		return st
	case "EXECUTING":
		return !st
	}
	return true
}

// stateWait bounds the waits for a task state to show both in boinccmd
// and in /proc (runsAsShown).
const stateWait = 60 * time.Second

// cpuStatus is the "CPU status" section of --get_cc_status.
func cpuStatus(out string) string {
	_, after, ok := strings.Cut(out, "CPU status\n")
	if !ok {
		return ""
	}
	before, _, _ := strings.Cut(after, "GPU status")
	return before
}

// guiDaemon starts a daemon with GUI RPC on a free port and a boinccmd
// client for it.
func guiDaemon(t *testing.T, name, dir string, o childOptions) (*daemonProc, *boinccmdClient) {
	t.Helper()
	boinccmdPath(t) // skip before starting anything
	o.DataDir = dir
	o.GUIRPCAddr = "127.0.0.1:0"
	d := startDaemon(t, name, o)
	return d, newBoinccmd(t, d)
}

// TestBoinccmdInspectAndControl runs the read and control commands of
// boinccmd against a daemon computing a project's tasks, and checks each
// command's effect on the daemon, its tasks and the project server.
func TestBoinccmdInspectAndControl(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	const projName = "boinccmd e2e project"
	p := startProject(t, testproject.Config{Name: projName, TotalJobs: 3,
		// Long enough to stay running through every step; --quit ends them.
		Job: testproject.JobTemplate{CommandLine: "--seconds 120", FpopsEst: 120e9, InputSize: 1000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{MaxReportDelay: time.Second})
	url := p.URL()
	// As many tasks run as there are CPUs, up to the three jobs.
	want := min(runtime.NumCPU(), 3)

	// The daemon asks for more than a day of work: the three jobs come at
	// once, their inputs follow, and as many start as there are CPUs.
	if !c.until(fmt.Sprintf("three tasks downloaded, %d executing", want), 60*time.Second, func(out string) bool {
		blocks := taskBlocks(out)
		for _, b := range blocks {
			if field(b, "state") != "downloaded" {
				return false
			}
		}
		return len(blocks) == 3 && len(executing(blocks)) == want
	}, "--get_tasks") {
		t.FailNow()
	}
	sent := p.Stats().Sent
	if len(sent) != 3 {
		t.Fatalf("boinccmd shows three tasks, the server sent %v", sent)
	}

	t.Run("get_state", func(t *testing.T) {
		out := c.run("--get_state")
		wants := []string{"name: " + projName, "master URL: " + url, "name: refapp", "active_task_state: EXECUTING"}
		for _, n := range sent {
			wants = append(wants, "name: "+n)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("--get_state lacks %q:\n%s", w, out)
			}
		}
	})
	t.Run("get_tasks", func(t *testing.T) {
		blocks := c.tasks()
		for _, n := range sent {
			b, ok := blocks[n]
			if !ok {
				t.Errorf("--get_tasks does not list %s (the server sent it): %v", n, slices.Sorted(maps.Keys(blocks)))
				continue
			}
			if got := field(b, "project URL"); got != url {
				t.Errorf("task %s: project URL %q, want %q", n, got, url)
			}
			if got := field(b, "WU name"); got != p.Stats().Jobs[n].WUName {
				t.Errorf("task %s: WU name %q, want %q", n, got, p.Stats().Jobs[n].WUName)
			}
		}
		for _, n := range executing(blocks) {
			if got := field(blocks[n], "scheduler state"); got != "scheduled" {
				t.Errorf("executing task %s: scheduler state %q, want scheduled", n, got)
			}
		}
	})
	t.Run("get_project_status", func(t *testing.T) {
		out := c.run("--get_project_status")
		for _, w := range []string{"name: " + projName, "master URL: " + url, "suspended via GUI: no", "don't request more work: no"} {
			if !strings.Contains(out, w) {
				t.Errorf("--get_project_status lacks %q:\n%s", w, out)
			}
		}
	})
	t.Run("get_messages", func(t *testing.T) {
		out := c.run("--get_messages", "0")
		for _, w := range []string{"[" + projName + "] Scheduler request completed", "[" + projName + "] Attached to project"} {
			if !strings.Contains(out, w) {
				t.Errorf("--get_messages 0 lacks %q:\n%s", w, out)
			}
		}
		maxSeq := 0
		for _, m := range regexp.MustCompile(`(?m)^(\d+): `).FindAllStringSubmatch(out, -1) {
			n, _ := strconv.Atoi(m[1])
			maxSeq = max(maxSeq, n)
		}
		if maxSeq == 0 {
			t.Fatalf("--get_messages 0 shows no numbered messages:\n%s", out)
		}
		cnt := c.run("--get_message_count")
		m := regexp.MustCompile(`Greatest message sequence number: (\d+)`).FindStringSubmatch(cnt)
		if m == nil {
			t.Fatalf("--get_message_count: %q", cnt)
		}
		if n, _ := strconv.Atoi(m[1]); n < maxSeq {
			t.Errorf("--get_message_count says %d, but --get_messages showed message %d", n, maxSeq)
		}
		// Messages after a seqno are only the newer ones.
		later := c.run("--get_messages", strconv.Itoa(maxSeq))
		if strings.Contains(later, "\n"+strconv.Itoa(maxSeq)+": ") || strings.HasPrefix(later, strconv.Itoa(maxSeq)+": ") {
			t.Errorf("--get_messages %d repeats message %d:\n%s", maxSeq, maxSeq, later)
		}
	})
	t.Run("get_cc_status", func(t *testing.T) {
		cpu := cpuStatus(c.run("--get_cc_status"))
		for _, w := range []string{"not suspended", "current mode: according to prefs", "perm mode: according to prefs"} {
			if !strings.Contains(cpu, w) {
				t.Errorf("--get_cc_status CPU status lacks %q:\n%s", w, cpu)
			}
		}
	})
	t.Run("get_host_info", func(t *testing.T) {
		out := c.run("--get_host_info")
		if w := fmt.Sprintf("#CPUS: %d\n", runtime.NumCPU()); !strings.Contains(out, w) {
			t.Errorf("--get_host_info lacks %q:\n%s", w, out)
		}
		if name := field(out, "OS name"); !strings.Contains(strings.ToLower(name), runtime.GOOS) {
			t.Errorf("--get_host_info: OS name %q does not name %s:\n%s", name, runtime.GOOS, out)
		}
		if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
			if v := field(out, "OS version"); !strings.Contains(v, strings.TrimSpace(string(rel))) {
				t.Errorf("--get_host_info: OS version %q lacks the kernel release %q", v, strings.TrimSpace(string(rel)))
			}
		}
	})

	t.Run("set_run_mode", func(t *testing.T) {
		running := executing(c.tasks())
		c.run("--set_run_mode", "never", "60")
		cpu := cpuStatus(c.run("--get_cc_status"))
		for _, w := range []string{"suspended: user request", "current mode: never", "perm mode: according to prefs"} {
			if !strings.Contains(cpu, w) {
				t.Errorf("--get_cc_status after --set_run_mode never 60 lacks %q:\n%s", w, cpu)
			}
		}
		if m := regexp.MustCompile(`perm becomes current in (\d+) sec`).FindStringSubmatch(cpu); m == nil {
			t.Errorf("--get_cc_status: no \"perm becomes current in N sec\":\n%s", cpu)
		} else if n, _ := strconv.Atoi(m[1]); n < 50 || n > 60 {
			t.Errorf("--get_cc_status: perm becomes current in %d sec, want about 60", n)
		}
		c.until("running tasks suspended", stateWait, func(out string) bool {
			blocks := taskBlocks(out)
			for _, n := range running {
				b := blocks[n]
				if field(b, "active_task_state") != "SUSPENDED" || field(b, "scheduler state") != "preempted" || !runsAsShown(b) {
					return false
				}
			}
			return len(executing(blocks)) == 0
		}, "--get_tasks")

		c.run("--set_run_mode", "auto", "0")
		cpu = cpuStatus(c.run("--get_cc_status"))
		for _, w := range []string{"not suspended", "current mode: according to prefs", "perm mode: according to prefs"} {
			if !strings.Contains(cpu, w) {
				t.Errorf("--get_cc_status after --set_run_mode auto 0 lacks %q:\n%s", w, cpu)
			}
		}
		c.until("the tasks executing again", stateWait, func(out string) bool {
			blocks := taskBlocks(out)
			for _, n := range running {
				if !runsAsShown(blocks[n]) {
					return false
				}
			}
			return slices.Equal(executing(blocks), running)
		}, "--get_tasks")
	})

	t.Run("project suspend/resume", func(t *testing.T) {
		c.run("--project", url, "suspend")
		if out := c.run("--get_project_status"); !strings.Contains(out, "suspended via GUI: yes") {
			t.Errorf("--get_project_status after --project suspend:\n%s", out)
		}
		c.until("no task executing", stateWait, func(out string) bool {
			blocks := taskBlocks(out)
			for _, b := range blocks {
				if !runsAsShown(b) {
					return false
				}
			}
			return len(executing(blocks)) == 0
		}, "--get_tasks")
		c.run("--project", url, "resume")
		if out := c.run("--get_project_status"); !strings.Contains(out, "suspended via GUI: no") {
			t.Errorf("--get_project_status after --project resume:\n%s", out)
		}
		c.until(fmt.Sprintf("%d tasks executing", want), stateWait, func(out string) bool {
			return len(executing(taskBlocks(out))) == want
		}, "--get_tasks")
	})

	t.Run("project update", func(t *testing.T) {
		userRPC := msgIs("sending scheduler request", "project", url, "reason", "Requested by user")
		if l, ok := d.find(userRPC); ok {
			t.Fatalf("precondition: a user-requested scheduler request before --project update: %s", l.Raw)
		}
		c.run("--project", url, "update")
		d.waitFor("a scheduler request \"Requested by user\"", 15*time.Second, userRPC)
		d.waitFor("the user-requested scheduler request to complete", 15*time.Second, msgIs("scheduler request completed", "project", url))
	})

	t.Run("project nomorework", func(t *testing.T) {
		c.run("--project", url, "nomorework")
		if out := c.run("--get_project_status"); !strings.Contains(out, "don't request more work: yes") {
			t.Errorf("--get_project_status after --project nomorework:\n%s", out)
		}
	})

	// victim is the task the task operations act on: one that runs now.
	running := executing(c.tasks())
	if len(running) == 0 {
		t.Fatalf("no task executing before the task operations:\n%s", d.tail(40))
	}
	victim := running[0]

	t.Run("task suspend/resume", func(t *testing.T) {
		c.run("--task", url, victim, "suspend")
		c.until(victim+" suspended via GUI and not executing", stateWait, func(out string) bool {
			b := taskBlocks(out)[victim]
			return field(b, "suspended via GUI") == "yes" && field(b, "active_task_state") != "EXECUTING" && runsAsShown(b)
		}, "--get_tasks")
		c.run("--task", url, victim, "resume")
		c.until(victim+" no longer suspended via GUI, all CPUs busy", stateWait, func(out string) bool {
			blocks := taskBlocks(out)
			b, ok := blocks[victim]
			return ok && !strings.Contains(b, "suspended via GUI") && len(executing(blocks)) == want && runsAsShown(b)
		}, "--get_tasks")
	})

	t.Run("task abort", func(t *testing.T) {
		c.run("--task", url, victim, "abort")
		// The report may wait MaxReportDelay (1 s).
		deadline := time.Now().Add(30 * time.Second)
		for {
			st := p.Stats()
			if rr, ok := st.ReportedResults[victim]; ok {
				if rr.ExitStatus != boinc.ExitAbortedViaGUI {
					t.Errorf("the server got %s with exit status %d, want %d (EXIT_ABORTED_VIA_GUI)", victim, rr.ExitStatus, boinc.ExitAbortedViaGUI)
				}
				if rr.State != resultAborted {
					t.Errorf("the server got %s in state %d, want %d (RESULT_ABORTED)", victim, rr.State, resultAborted)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the aborted task %s was not reported within 30 s (reported: %v); tasks:\n%s\ndaemon log:\n%s",
					victim, st.Reported, c.run("--get_tasks"), d.tail(60))
			}
			time.Sleep(200 * time.Millisecond)
		}
		// The other tasks carry on.
		left := min(runtime.NumCPU(), 2)
		c.until(fmt.Sprintf("%d other tasks executing", left), stateWait, func(out string) bool {
			ex := executing(taskBlocks(out))
			return len(ex) == left && !slices.Contains(ex, victim)
		}, "--get_tasks")
	})

	t.Run("quit", func(t *testing.T) {
		c.run("--quit")
		if code := d.wait(30 * time.Second); code != 0 {
			t.Errorf("exit code %d after --quit, want 0:\n%s", code, d.tail(40))
		}
		if _, ok := d.find(msgIs("quit requested over GUI RPC")); !ok {
			t.Errorf("no \"quit requested over GUI RPC\" in the log:\n%s", d.tail(20))
		}
	})
	for _, e := range p.Stats().Errors {
		t.Errorf("the project server saw a protocol error: %s", e)
	}
}

// TestBoinccmdFileTransfers checks --get_file_transfers while an input file
// is slowly downloading.
func TestBoinccmdFileTransfers(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	// 200 kB at 10 kB/s: the download takes about 20 s.
	p := startProject(t, testproject.Config{TotalJobs: 1,
		Job:    testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 200_000},
		Faults: testproject.Faults{DownloadBytesPerSec: 10_000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})

	l := d.waitFor("the input download", 60*time.Second, func(l logLine) bool {
		return strings.Contains(l.Msg, "started download") && strings.HasSuffix(l.str("file"), "_in")
	})
	file := l.str("file")
	c.until("the input download in flight with bytes received", 15*time.Second, func(out string) bool {
		for _, b := range blockStart.Split(out, -1)[1:] {
			if field(b, "name") != file {
				continue
			}
			n, _ := strconv.ParseFloat(field(b, "bytes_xferred"), 64)
			return field(b, "direction") == "download" && field(b, "xfer active") == "yes" && n > 0 && n < 200_000
		}
		return false
	}, "--get_file_transfers")
	d.stop()
}

// TestBoinccmdWrongPassword checks that a wrong password is refused and
// leaves the daemon serving the right one.
func TestBoinccmdWrongPassword(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	if c.pass == "" {
		t.Fatalf("the daemon made an empty GUI RPC password")
	}
	for _, wrong := range []string{"wrong", c.pass + "x"} {
		out, err := c.exec(wrong, "--set_run_mode", "never", "0")
		if err == nil {
			t.Errorf("boinccmd with password %q exited 0:\n%s", wrong, out)
		}
		if !strings.Contains(out, "Authorization failure") {
			t.Errorf("boinccmd with password %q does not say \"Authorization failure\":\n%s", wrong, out)
		}
	}
	d.waitLog("GUI RPC authentication failed", 10*time.Second)
	select {
	case <-d.exited:
		t.Fatalf("the daemon exited after a wrong password:\n%s", d.tail(40))
	default:
	}
	// The refused command had no effect; the right password still works.
	cpu := cpuStatus(c.run("--get_cc_status"))
	if !strings.Contains(cpu, "current mode: according to prefs") || !strings.Contains(cpu, "not suspended") {
		t.Errorf("--get_cc_status after a refused --set_run_mode never:\n%s", cpu)
	}
	c.run("--quit")
	if code := d.wait(30 * time.Second); code != 0 {
		t.Errorf("exit code %d after --quit, want 0:\n%s", code, d.tail(40))
	}
}

// TestBoinccmdAttachSurvivesReload attaches a project with
// --project_attach on a daemon whose config has none, and checks that a
// config reload (SIGHUP) keeps it: GUI RPC attaches persist across reloads.
func TestBoinccmdAttachSurvivesReload(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{})
	p := startProject(t, testproject.Config{Name: "attached by boinccmd", TotalJobs: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 60", FpopsEst: 60e9, InputSize: 1000}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})
	url := p.URL()

	if out := c.run("--get_project_status"); strings.Contains(out, url) {
		t.Fatalf("precondition: %s attached before --project_attach:\n%s", url, out)
	}
	// boinccmd prints every user alert in the event log after a command:
	// starting unattached is not one (the C++ client prints nothing).
	if out := c.run("--project_attach", url, accountKey); strings.Contains(out, "no_projects") {
		t.Errorf("--project_attach printed an alert:\n%s", out)
	}
	if !c.until("a task of the attached project executing", 60*time.Second, func(out string) bool {
		return len(executing(taskBlocks(out))) == 1
	}, "--get_tasks") {
		t.FailNow()
	}
	st := p.Stats()
	if len(st.Sent) != 1 {
		t.Fatalf("the attached project sent %v, want one task", st.Sent)
	}
	task := st.Sent[0]
	if out := c.run("--get_project_status"); !strings.Contains(out, "name: attached by boinccmd") || !strings.Contains(out, "master URL: "+url) {
		t.Errorf("--get_project_status after --project_attach:\n%s", out)
	}

	d.signal(syscall.SIGHUP)
	d.waitLog("config reloaded", 15*time.Second)
	// Give a wrongly started detach time to show: an abort, a report.
	time.Sleep(2 * time.Second)
	for _, bad := range []string{"detached from project", "project removed from config", "task aborted"} {
		if l, ok := d.find(msgIs(bad)); ok {
			t.Errorf("after the reload of a config without the GUI-attached project: %s", l.Raw)
		}
	}
	if out := c.run("--get_project_status"); !strings.Contains(out, "master URL: "+url) || !strings.Contains(out, "don't request more work: no") {
		t.Errorf("--get_project_status after the reload: the GUI-attached project is gone or changed:\n%s", out)
	}
	if ex := executing(c.tasks()); !slices.Equal(ex, []string{task}) {
		t.Errorf("after the reload executing %v, want [%s]:\n%s", ex, task, d.tail(40))
	}
	if rr, ok := p.Stats().ReportedResults[task]; ok {
		t.Errorf("the task was reported (exit status %d) after the reload; it should still run", rr.ExitStatus)
	}
	d.stop()
}
