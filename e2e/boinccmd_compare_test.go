//go:build unix

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// TestBoinccmdSideBySide runs every boinccmd command against boincd and
// against the C++ client (7.20, Debian's boinc-client), both attached to
// the same test project and computing its tasks, and compares the two
// outputs field by field. A field whose value must differ between two
// hosts (times, ids, task names, process sizes) is named in
// sideBySideDiffer and compared for presence only; every other field
// must read the same. This is the check that a volunteer's tools and
// scripts see the client they know.
func TestBoinccmdSideBySide(t *testing.T) {
	boinccmdPath(t)
	cppBin, err := exec.LookPath("boinc")
	if err != nil {
		t.Skip("the C++ BOINC client (package boinc-client) is not installed")
	}
	t.Parallel()
	const projName = "side by side"
	// Two jobs for each client, handed out in two rounds so that each
	// gets its own.
	p := startProject(t, testproject.Config{Name: projName, TotalJobs: 2, MaxJobsPerRPC: 2,
		Notices: []string{"Side by side: both clients show this notice."},
		Job:     testproject.JobTemplate{CommandLine: "--seconds 400", FpopsEst: 400e9, InputSize: 1000}})
	url := p.URL()

	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	// Each client sees the other's tasks as "non-BOINC" CPU load: with
	// the default 25 % limit the C++ client would suspend for it.
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte(sideBySidePrefs))
	d, ours := guiDaemon(t, "daemon", dir, childOptions{MaxReportDelay: time.Second})
	if !ours.until("two tasks executing", 90*time.Second, func(out string) bool {
		return len(executing(taskBlocks(out))) == 2
	}, "--get_tasks") {
		t.FailNow()
	}
	_ = d
	// boincd would take the next jobs too: it asks for none until the
	// C++ client has its own.
	ours.run("--project", url, "nomorework")
	p.AddJobs(2)
	theirs := startCppClient(t, cppBin, url)
	if !theirs.until("two tasks executing", 90*time.Second, func(out string) bool {
		return len(executing(taskBlocks(out))) == 2
	}, "--get_tasks") {
		t.FailNow()
	}
	ours.run("--project", url, "allowmorework")
	// Let both settle: the C++ client asks for more work once its tasks
	// run (and is told there is none); compare when neither has a
	// request pending.
	for _, c := range []*boinccmdClient{ours, theirs} {
		c.until("no scheduler request pending", 60*time.Second, func(out string) bool {
			return strings.Contains(out, "scheduler RPC pending: no")
		}, "--get_project_status")
	}
	time.Sleep(time.Second)

	ourTask := executing(ours.tasks())[0]
	theirTask := executing(theirs.tasks())[0]
	both := func(args ...string) (string, string) {
		t.Helper()
		a, _ := ours.exec(ours.pass, args...)
		b, _ := theirs.exec(theirs.pass, args...)
		return a, b
	}
	// act runs a control command on both and gives them time to carry it
	// out: the C++ client applies modes and task changes in its once-a-
	// second poll.
	act := func(args ...string) {
		t.Helper()
		both(args...)
		time.Sleep(1500 * time.Millisecond)
	}
	// perClient substitutes each client's own task name for "TASK".
	perClient := func(args ...string) (string, string) {
		t.Helper()
		sub := func(task string) []string {
			out := slices.Clone(args)
			for i := range out {
				out[i] = strings.ReplaceAll(out[i], "TASK", task)
			}
			return out
		}
		a, _ := ours.exec(ours.pass, sub(ourTask)...)
		b, _ := theirs.exec(theirs.pass, sub(theirTask)...)
		return a, b
	}
	cmds := []struct {
		name string
		run  func() (string, string)
	}{
		{"client_version", func() (string, string) { return both("--client_version") }},
		{"get_state", func() (string, string) { return both("--get_state") }},
		{"get_tasks", func() (string, string) { return both("--get_tasks") }},
		{"get_simple_gui_info", func() (string, string) { return both("--get_simple_gui_info") }},
		{"get_project_status", func() (string, string) { return both("--get_project_status") }},
		{"get_file_transfers", func() (string, string) { return both("--get_file_transfers") }},
		{"get_disk_usage", func() (string, string) { return both("--get_disk_usage") }},
		{"get_proxy_settings", func() (string, string) { return both("--get_proxy_settings") }},
		{"get_host_info", func() (string, string) { return both("--get_host_info") }},
		{"get_cc_status", func() (string, string) { return both("--get_cc_status") }},
		{"get_daily_xfer_history", func() (string, string) { return both("--get_daily_xfer_history") }},
		{"get_notices", func() (string, string) { return both("--get_notices", "0") }},
		{"get_message_count", func() (string, string) { return both("--get_message_count") }},
		{"get_old_tasks", func() (string, string) { return both("--get_old_tasks") }},
		{"get_app_config", func() (string, string) { return both("--get_app_config", url) }},
		{"acct_mgr info", func() (string, string) { return both("--acct_mgr", "info") }},
		{"get_project_config", func() (string, string) { return both("--get_project_config", url) }},
		{"lookup_account", func() (string, string) { return both("--lookup_account", url, "nobody@example.com", "wrong") }},
		{"read_cc_config", func() (string, string) { return both("--read_cc_config") }},
		{"read_global_prefs_override", func() (string, string) { return both("--read_global_prefs_override") }},
		{"network_available", func() (string, string) { return both("--network_available") }},
		{"set_run_mode never", func() (string, string) {
			act("--set_run_mode", "never", "3600")
			return both("--get_cc_status")
		}},
		{"set_run_mode auto", func() (string, string) {
			act("--set_run_mode", "auto", "0")
			return both("--get_cc_status")
		}},
		{"set_gpu_mode never", func() (string, string) {
			act("--set_gpu_mode", "never", "0")
			return both("--get_cc_status")
		}},
		{"set_gpu_mode auto", func() (string, string) {
			act("--set_gpu_mode", "auto", "0")
			return both("--get_cc_status")
		}},
		{"set_network_mode never", func() (string, string) {
			act("--set_network_mode", "never", "600")
			return both("--get_cc_status")
		}},
		{"set_network_mode auto", func() (string, string) {
			act("--set_network_mode", "auto", "0")
			return both("--get_cc_status")
		}},
		{"project suspend", func() (string, string) {
			act("--project", url, "suspend")
			return both("--get_project_status")
		}},
		{"project resume", func() (string, string) {
			act("--project", url, "resume")
			return both("--get_project_status")
		}},
		{"project nomorework", func() (string, string) {
			act("--project", url, "nomorework")
			return both("--get_project_status")
		}},
		{"project allowmorework", func() (string, string) {
			act("--project", url, "allowmorework")
			return both("--get_project_status")
		}},
		{"project detach_when_done", func() (string, string) {
			act("--project", url, "detach_when_done")
			return both("--get_project_status")
		}},
		{"project dont_detach_when_done", func() (string, string) {
			act("--project", url, "dont_detach_when_done")
			return both("--get_project_status")
		}},
		{"project of an unknown URL", func() (string, string) { return both("--project", "http://nowhere.example/", "update") }},
		{"task suspend", func() (string, string) {
			perClient("--task", url, "TASK", "suspend")
			time.Sleep(1500 * time.Millisecond)
			return both("--get_tasks")
		}},
		{"task resume", func() (string, string) {
			perClient("--task", url, "TASK", "resume")
			time.Sleep(1500 * time.Millisecond)
			return both("--get_tasks")
		}},
		{"task of an unknown name", func() (string, string) { return both("--task", url, "no_such_task", "suspend") }},
		{"file_transfer of an unknown file", func() (string, string) { return both("--file_transfer", url, "no_such_file", "retry") }},
		{"set_host_info", func() (string, string) {
			act("--set_host_info", "Side Box")
			return both("--get_host_info")
		}},
		{"reset_host_info", func() (string, string) { return both("--reset_host_info") }},
		{"set_proxy_settings", func() (string, string) {
			act("--set_proxy_settings", "proxy.example", "3128", "vol", "pw", "", "0", "", "", "0", "localhost")
			return both("--get_proxy_settings")
		}},
		{"clear proxy settings", func() (string, string) {
			act("--set_proxy_settings", "", "0", "", "", "", "0", "", "", "0", "")
			return both("--get_proxy_settings")
		}},
		// Last: the benchmarks suspend computing for a while.
		{"run_benchmarks", func() (string, string) {
			both("--run_benchmarks")
			time.Sleep(1500 * time.Millisecond)
			return both("--get_cc_status")
		}},
	}
	report := &strings.Builder{}
	for _, c := range cmds {
		a, b := c.run()
		diffs := compareBoinccmd(a, b)
		if len(diffs) > 0 {
			t.Errorf("boinccmd %s: boincd and the C++ client differ:\n  %s", c.name, strings.Join(diffs, "\n  "))
			fmt.Fprintf(report, "==== %s\n--- boincd\n%s\n--- C++ client\n%s\n", c.name, a, b)
		}
	}
	if t.Failed() {
		t.Logf("outputs of the commands that differ:\n%s", report)
	}
}

const sideBySidePrefs = "<global_preferences>\n<suspend_cpu_usage>0</suspend_cpu_usage>\n</global_preferences>\n"

// sideBySideDiffer names the fields (section/key) whose values differ
// between two clients on one host by nature: times, ids, task and file
// names, process sizes, the data directory, counters. They are compared
// for presence only.
var sideBySideDiffer = []*regexp.Regexp{
	// Times and durations.
	regexp.MustCompile(`(?i)time|deadline|received|elapsed|remaining|duration|when|delay|last RPC|next RPC|backoff|deferred|requested|^now$`),
	// Identities and names of this client's own things.
	regexp.MustCompile(`(?i)^(name|WU name|host ID|cross-project ID|host_cpid|external CPID|slot|PID|seqno|Greatest message sequence number)$`),
	regexp.MustCompile(`(?i)^(result name|file name|project dir|directory|data dir|domain name|IP addr|current dir)$`),
	// Progress and process measurements.
	regexp.MustCompile(`(?i)fraction done|CPU time|swap size|working set|virtual|page fault|progress rate|checkpoint`),
	// Disk use depends on files each client keeps (logs, state files).
	regexp.MustCompile(`(?i)^(total|free|used by BOINC|free, not used by BOINC|allowed|disk usage|BOINC|disk free)`),
	// Set while a request is under way. After "project resume" the C++
	// client asks for work at once, boincd waits out the backoff the
	// project's last "no work" reply set.
	regexp.MustCompile(`^scheduler RPC pending$`),
	// Traffic of the day: each client made its own requests.
	regexp.MustCompile(`^\d{1,2}-[A-Z][a-z]{2}-\d{4}$`),
	// Benchmarks: the C++ client is started without them.
	regexp.MustCompile(`(?i)FLOPS|integer ops|memory bandwidth|fpops|iops|p_calculated|^CPU FP OPS$|^CPU int OPS$`),
}

func differs(key string) bool {
	for _, re := range sideBySideDiffer {
		if re.MatchString(key) {
			return true
		}
	}
	return false
}

var (
	bcSection = regexp.MustCompile(`^=+ (.*?) =+$`)
	bcBlock   = regexp.MustCompile(`^\d+\) -+$`)
	bcField   = regexp.MustCompile(`^(\s*)([^:]+?):\s?(.*)$`)
	// bcTime is a time as boinccmd prints one inside a value (notices).
	bcTime = regexp.MustCompile(`\d{1,2}-[A-Z][a-z]{2}-\d{4} \d\d:\d\d:\d\d`)
)

// bcFields reads boinccmd output into section/key → the values (in
// order) of every line "key: value", and keeps the other lines.
func bcFields(out string) (fields map[string][]string, other []string) {
	fields = map[string][]string{}
	section := ""
	for _, line := range strings.Split(out, "\n") {
		// A line that starts with a time ("26-Nov-2026 00:25:45: GUI RPC
		// error: ...") would split at the time's first colon; the two
		// clients print it a second apart now and then.
		line = bcTime.ReplaceAllString(line, "TIME")
		trim := strings.TrimSpace(line)
		switch {
		case trim == "":
		case bcSection.MatchString(trim):
			section = bcSection.FindStringSubmatch(trim)[1]
		case bcBlock.MatchString(trim):
		case trim == "poll status: operation in progress":
			// boinccmd's progress while it polls: the C++ client does
			// the web request in its next loop, boincd at once.
		case bcField.MatchString(line):
			m := bcField.FindStringSubmatch(line)
			key := section + "/" + strings.TrimSpace(m[2])
			fields[key] = append(fields[key], bcTime.ReplaceAllString(strings.TrimSpace(m[3]), "TIME"))
		default:
			other = append(other, trim)
		}
	}
	return fields, other
}

// compareBoinccmd lists the differences between boincd's output a and the
// C++ client's b.
func compareBoinccmd(a, b string) []string {
	fa, oa := bcFields(a)
	fb, ob := bcFields(b)
	var diffs []string
	keys := map[string]bool{}
	for k := range fa {
		keys[k] = true
	}
	for k := range fb {
		keys[k] = true
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		va, inA := fa[k]
		vb, inB := fb[k]
		_, key, _ := strings.Cut(k, "/")
		switch {
		case !inA:
			diffs = append(diffs, fmt.Sprintf("%s: missing (C++ client: %q)", k, vb))
		case !inB:
			diffs = append(diffs, fmt.Sprintf("%s: not shown by the C++ client (boincd: %q)", k, va))
		case len(va) != len(vb):
			diffs = append(diffs, fmt.Sprintf("%s: %d values, the C++ client %d (%q vs %q)", k, len(va), len(vb), va, vb))
		case differs(key):
		default:
			sa, sb := slices.Sorted(slices.Values(va)), slices.Sorted(slices.Values(vb))
			if !slices.Equal(sa, sb) {
				diffs = append(diffs, fmt.Sprintf("%s: %q, the C++ client %q", k, sa, sb))
			}
		}
	}
	if !slices.Equal(oa, ob) {
		diffs = append(diffs, fmt.Sprintf("other lines: %q, the C++ client %q", oa, ob))
	}
	return diffs
}

// startCppClient runs the C++ client on a data dir of its own, attached
// to url with the e2e account key, and returns a boinccmd for it.
func startCppClient(t *testing.T, bin, url string) *boinccmdClient {
	t.Helper()
	dir := t.TempDir()
	const pass = "cpp-client-password"
	writeFile(t, filepath.Join(dir, "gui_rpc_auth.cfg"), []byte(pass+"\n"))
	writeFile(t, filepath.Join(dir, "cc_config.xml"), []byte("<cc_config>\n<options><no_info_fetch>1</no_info_fetch></options>\n</cc_config>\n"))
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte(sideBySidePrefs))
	port := freePort(t)
	log, err := os.Create(filepath.Join(dir, "client.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--dir", dir, "--no_gpus", "--skip_cpu_benchmarks", "--no_info_fetch",
		"--gui_rpc_port", strconv.Itoa(port), "--allow_multiple_clients", "--attach_project", url, accountKey)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		log.Close()
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "client.out"))
			t.Logf("C++ client output:\n%s", b[max(0, len(b)-4000):])
		}
	})
	c := &boinccmdClient{t: t, bin: boinccmdPath(t), addr: fmt.Sprintf("127.0.0.1:%d", port), pass: pass, cwd: t.TempDir()}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := c.exec(pass, "--client_version"); err == nil {
			return c
		}
		if time.Now().After(deadline) {
			t.Fatal("the C++ client's GUI RPC did not answer within 30 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
}
