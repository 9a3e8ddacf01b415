//go:build linux

package realserver

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	handleSignals()
	os.Exit(m.Run())
}

// TestRealServer stands up a real BOINC server (setup.sh), then runs, one
// after the other, the C++ client and boincd against it and compares them.
func TestRealServer(t *testing.T) {
	start := time.Now()
	if testing.Short() && !required() {
		t.Skip("real-server suite skipped in -short mode (it takes minutes)")
	}
	if os.Geteuid() != 0 {
		unavailable(t, "needs root (it starts MariaDB and Apache and runs the clients as user %s): sudo go test ./e2e/realserver/", clientUser)
	}
	modRoot, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	shared, err := sharedDir(modRoot)
	if err != nil {
		unavailable(t, "%v", err)
	}
	for _, tool := range []string{"boinccmd", "setpriv", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable(t, "no %s in PATH (boinccmd: apt-get install boinc-client)", tool)
		}
	}
	deadline := start.Add(suiteBudget)
	if d, ok := t.Deadline(); ok && d.Add(-teardownReserve).Before(deadline) {
		deadline = d.Add(-teardownReserve)
		if time.Until(deadline) < 4*time.Minute {
			unavailable(t, "go test -timeout leaves %v: the suite needs up to %v plus %v to tear down (use -timeout 10m)",
				time.Until(d).Round(time.Second), suiteBudget, teardownReserve)
		}
	}

	// own ports: never the scripts' defaults (a developer's server may run there)
	avoid := map[int]bool{33080: true, 33306: true, 33416: true, 33417: true, 33418: true, 33419: true}
	srvPorts, err := freePorts(33100, 33899, 3, avoid)
	if err != nil {
		unavailable(t, "server ports: %v", err)
	}
	guiPorts, err := freePorts(33000, 33999, 5+2*len(featureCases()), avoid)
	if err != nil {
		unavailable(t, "GUI RPC ports: %v", err)
	}
	unreserve := reservePorts(t.Logf, append(append([]int(nil), srvPorts...), guiPorts...))
	t.Cleanup(unreserve)
	root, err := os.MkdirTemp("/tmp", "boincd-realserver-")
	if err != nil {
		t.Fatal(err)
	}
	// the server runs as boincsrv and the clients as boinc: both must reach it
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	s := &server{
		shared:   shared,
		modRoot:  modRoot,
		root:     root,
		logs:     filepath.Join(root, "logs"),
		httpPort: srvPorts[0],
		dbPort:   srvPorts[1],
		tlsPort:  srvPorts[2],
		env:      harnessEnv(root, srvPorts[0], srvPorts[1]),
		deadline: deadline,
	}
	if err := os.Mkdir(s.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	emergency.mu.Lock()
	emergency.teardown = func() {
		s.teardown(func(f string, a ...any) { fmt.Fprintf(os.Stderr, "realserver: "+f+"\n", a...) }, true)
		unreserve()
	}
	emergency.mu.Unlock()
	t.Cleanup(func() {
		s.teardown(t.Logf, t.Failed())
		if len(s.strays) > 0 {
			t.Errorf("the suite left processes behind (killed): %s", strings.Join(s.strays, "; "))
		}
		emergency.mu.Lock()
		emergency.teardown = nil
		emergency.mu.Unlock()
	})
	t.Logf("RS_ROOT %s, HTTP 127.0.0.1:%d, MariaDB 127.0.0.1:%d, GUI RPC ports %v, scripts %s, suite deadline in %v",
		root, s.httpPort, s.dbPort, guiPorts, shared, time.Until(deadline).Round(time.Second))

	s.build(t)
	s.setup(t)
	s.configureAsRealProjects(t)

	// the subtests run one at a time: no locking
	var (
		runs  []timings
		notes []string
	)
	record := func(tm *timings) {
		runs = append(runs, *tm)
		t.Log(tm.String())
	}
	_, cppErr := os.Stat(cppClient)

	t.Run("cpp", func(t *testing.T) {
		checkInterrupted(t)
		skipIfOnlyCases(t)
		if cppErr != nil {
			t.Skipf("no C++ client at %s (apt-get install boinc-client): %v", cppClient, cppErr)
		}
		tm := &timings{label: "cpp", values: map[string]string{}}
		defer record(tm)
		s.runClient(t, tm, cppClient, guiPorts[0], 150*time.Second)
	})
	t.Run("boincd", func(t *testing.T) {
		checkInterrupted(t)
		skipIfOnlyCases(t)
		tm := &timings{label: "boincd", values: map[string]string{}}
		defer record(tm)
		s.runClient(t, tm, s.boincd, guiPorts[1], 120*time.Second)
	})
	t.Run("boincd_config", func(t *testing.T) {
		checkInterrupted(t)
		skipIfOnlyCases(t)
		tm := &timings{label: "boincd_config", values: map[string]string{}}
		defer record(tm)
		s.runConfigClient(t, tm, guiPorts[2], 120*time.Second)
	})
	t.Run("import", func(t *testing.T) {
		checkInterrupted(t)
		skipIfOnlyCases(t)
		if cppErr != nil {
			t.Skipf("no C++ client at %s: %v", cppClient, cppErr)
		}
		if left := s.remaining(); left < 150*time.Second {
			notes = append(notes, fmt.Sprintf("import: skipped, %v left of the suite's budget", left.Round(time.Second)))
			t.Skipf("only %v left of the suite's %v budget; import needs about 150 s", left.Round(time.Second), suiteBudget)
		}
		note := s.runImport(t, guiPorts[3], guiPorts[4], 100*time.Second)
		notes = append(notes, note)
	})

	features := ""
	t.Run("features", func(t *testing.T) {
		checkInterrupted(t)
		if cppErr != nil {
			t.Skipf("no C++ client at %s: %v", cppClient, cppErr)
		}
		if left := s.remaining(); left < 150*time.Second {
			notes = append(notes, fmt.Sprintf("features: skipped, %v left of the suite's budget", left.Round(time.Second)))
			t.Skipf("only %v left of the suite's %v budget; the feature cases need about 150 s", left.Round(time.Second), suiteBudget)
		}
		features = s.runFeatures(t, guiPorts[5:], min(180*time.Second, s.remaining()-60*time.Second))
	})

	notes = append(notes, fmt.Sprintf("suite: %.0f s before teardown; RS_ROOT %s", time.Since(start).Seconds(), root))
	tbl := table(runs, notes) + features
	t.Log("side by side:\n" + tbl)
	if !testing.Verbose() {
		fmt.Print(tbl)
	}
	// go test ./... shows a passing package's output only with -v: CI
	// names a file for the table and prints it after the run.
	if p := os.Getenv("BOINCD_REALSERVER_REPORT"); p != "" {
		if err := os.WriteFile(p, []byte("real BOINC server suite, side by side:\n"+tbl), 0o644); err != nil {
			t.Errorf("writing the timing table to %s: %v", p, err)
		}
	}
}

// heldGrace is how long the C++ client may sit with every task it has
// finished and ready to report, and nothing else to do, before
// endHeldRun ends its run: a client that reports does so within seconds
// of its last upload, as boincd does and the C++ client mostly does.
const heldGrace = 30 * time.Second

// endHeldRun watches a C++ client run (run_client.sh on port) for the
// client's held-report race (see runClient): when every task it has has
// been ready to report for heldGrace, no task left to run, it records
// how many into held and stops the client (SIGTERM, by run_client.sh's
// pid file), which ends run_client.sh at once with its evidence, rather
// than at its timeout 100 s later. Ends with ctx.
func (s *server) endHeldRun(ctx context.Context, t *testing.T, label string, port int, held *atomic.Int64) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := heldTasks(port)
		switch {
		case n == 0:
			since = time.Time{}
			continue
		case since.IsZero():
			since = time.Now()
			continue
		case time.Since(since) < heldGrace:
			continue
		}
		b, err := os.ReadFile(filepath.Join(s.root, "clients", strconv.Itoa(port)+".pid"))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 1 {
			t.Logf("%s: %d task(s) held for %v, but no pid file to stop the client (%v %v)", label, n, heldGrace, err, perr)
			return
		}
		held.Store(int64(n))
		t.Logf("%s: every task (%d) ready to report and held for %v with nothing else to do: stopping the client (pid %d)",
			label, n, heldGrace, pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		return
	}
}

// heldTasks is how many tasks the client on port has when every one of
// them is ready to report (the held-report race's sign), else 0.
func heldTasks(port int) int {
	tasks, err := getTasks(port)
	if err != nil {
		return 0
	}
	for _, tk := range tasks {
		if !tk.ready {
			return 0
		}
	}
	return len(tasks)
}

// skipIfOnlyCases skips a main run when BOINCD_REALSERVER_CASES names
// the feature cases to run alone.
func skipIfOnlyCases(t *testing.T) {
	if onlyCases() != nil {
		t.Skipf("%s=%s: only those feature cases run", envOnlyCases, os.Getenv(envOnlyCases))
	}
}

// runClient runs run_client.sh (a fresh account, the client as user boinc,
// attach with boinccmd --project_attach, wait until N results are
// validated) and checks its outcome and evidence.
func (s *server) runClient(t *testing.T, tm *timings, bin string, port int, timeout time.Duration) {
	label := tm.label
	runTimeout := min(timeout, s.remaining()-75*time.Second)
	if runTimeout < 30*time.Second {
		t.Fatalf("only %v left of the suite's budget", s.remaining().Round(time.Second))
	}
	dir := filepath.Join(s.root, "c_"+label)
	s.prepareWork(t, nTasks)
	logPath := filepath.Join(s.logs, label+".log")
	ctx, cancel := s.ctx(runTimeout + 75*time.Second)
	defer cancel()
	t0 := time.Now()
	var heldEnd atomic.Int64
	if bin == cppClient {
		wctx, stopWatch := context.WithCancel(ctx)
		watched := make(chan struct{})
		go func() { defer close(watched); s.endHeldRun(wctx, t, label, port, &heldEnd) }()
		defer func() { stopWatch(); <-watched }()
	}
	rc, err := s.run(ctx, logPath, []string{"MAKE_WORK=0", fmt.Sprintf("TIMEOUT=%d", int(runTimeout.Seconds()))},
		s.script("run_client.sh"), bin, dir, strconv.Itoa(port), strconv.Itoa(nTasks), label)
	out, _ := os.ReadFile(logPath)
	if ptm, perr := parseTimings(string(out)); perr != nil {
		t.Error(perr)
	} else {
		*tm = ptm
		tm.label = label
		if tm.errors != 0 {
			t.Errorf("errors=%d in the timing line: results that ended in a client error", tm.errors)
		}
		if !(tm.credit > 0) {
			t.Errorf("credit=%g in the timing line: no credit granted", tm.credit)
		}
	}
	tm.passed = err == nil && rc == 0
	validated := regexp.MustCompile(`(?m)^validated .*$`).Find(out)
	t.Logf("run_client.sh %s: exit %d after %.0f s: %s", label, rc, time.Since(t0).Seconds(), validated)
	held := heldReports(dir)
	tm.values["held"] = strconv.Itoa(held)
	if n := int(heldEnd.Load()); n > 0 {
		// endHeldRun stopped the client: its task list is gone with it
		held = n
		tm.values["held"] = fmt.Sprintf("%d, stopped", held)
	}
	switch {
	case err != nil:
		t.Errorf("run_client.sh: %v", err)
	case rc != 0 && bin == cppClient && held > 0 && tm.success+held >= nTasks:
		// The reference client's own race, not the server's nor the
		// harness's: its last upload ended between a work request and
		// the "no work" reply, whose backoff then held the result
		// (update_results clears the backoff, handle_reply sets it), with
		// nothing due for a week. boincd reports such a result at once
		// (daemon TestJobFinishedDuringRPCIsReported). Shown in the table.
		t.Logf("the C++ client held %d finished result(s) unreported at the end (ready to report: yes): its backoff race; not a failure of the suite", held)
	case rc != 0:
		t.Errorf("run_client.sh exit %d: %s did not get %d results validated within %v", rc, label, nTasks, runTimeout)
	}
	checkSchedulerLog(t, filepath.Join(dir, "rs_scheduler_log.txt"))
	checkLimitMet(t, tm, dir)
	if user, err := os.ReadFile(filepath.Join(dir, "rs_user.tsv")); err != nil {
		t.Error(err)
	} else if id, err := strconv.Atoi(strings.Fields(string(user) + " x")[0]); err != nil {
		t.Errorf("rs_user.tsv: %q", user)
	} else {
		s.checkHostRow(t, tm, id)
	}
	if t.Failed() {
		logEvidence(t, append([]string{logPath}, clientEvidence(dir)...)...)
	}
}

// clientDir makes a fresh client dir the way lib.sh's fresh_dir does (the
// marker, the GUI RPC password, the preferences override that keeps a busy
// machine from suspending the client), plus, when auth is given,
// boincd.toml attaching the project by account key; all owned by the
// client user.
func (s *server) clientDir(dir, auth string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	type file struct {
		name, body string
		mode       os.FileMode
	}
	files := []file{
		{".rs_client", "", 0o644},
		{"gui_rpc_auth.cfg", guiPW + "\n", 0o600},
		{"global_prefs_override.xml", "<global_preferences>\n  <suspend_cpu_usage>0</suspend_cpu_usage>\n" +
			"  <niu_suspend_cpu_usage>0</niu_suspend_cpu_usage>\n</global_preferences>\n", 0o644},
	}
	if auth != "" {
		files = append(files, file{"boincd.toml", fmt.Sprintf("# written by e2e/realserver: the project attached by account key\n"+
			"[[project]]\nurl = %q\nauthenticator = %q\n", s.masterURL(), auth), 0o600})
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			return err
		}
		if err := os.Chown(p, s.uid, s.gid); err != nil {
			return err
		}
	}
	return os.Chown(dir, s.uid, s.gid)
}

// runConfigClient attaches boincd by its config file (run_client.sh can
// only attach over GUI RPC): fresh account, work, boincd started as user
// boinc on a dir whose boincd.toml names the project, the DB polled as
// run_client.sh does until N results are validated; the same evidence and
// checks. The process is always stopped (SIGTERM, SIGKILL after 30 s).
func (s *server) runConfigClient(t *testing.T, tm *timings, port int, timeout time.Duration) {
	label := tm.label
	runTimeout := min(timeout, s.remaining()-60*time.Second)
	if runTimeout < 30*time.Second {
		t.Fatalf("only %v left of the suite's budget", s.remaining().Round(time.Second))
	}
	dir := filepath.Join(s.root, "c_"+label)
	auth, userID := s.newAccount(t, label)
	t.Logf("%s: account user id %d", label, userID)
	s.prepareWork(t, nTasks)
	if err := s.clientDir(dir, auth); err != nil {
		t.Fatal(err)
	}
	offset := s.schedulerLogSize()
	t0 := time.Now()
	stop, exited := s.startClient(t, label, s.boincd, dir, port, "run", "--dir", dir, "--gui_rpc_port", strconv.Itoa(port))
	defer stop()

	el := func() string { return fmt.Sprintf("%.1f", time.Since(t0).Seconds()) }
	set := func(k string) {
		if _, ok := tm.values[k]; !ok {
			tm.values[k] = el()
		}
	}
	q := fmt.Sprintf("select count(*), ifnull(sum(server_state=5),0), ifnull(sum(server_state=5 and outcome=1),0), "+
		"ifnull(sum(validate_state=1),0), ifnull(sum(validate_state=2),0), ifnull(sum(outcome<>1 and server_state=5),0), "+
		"ifnull(sum(granted_credit),0) from result where userid=%d", userID)
	var sent, over, valid int
	last, why := "", ""
	if err := waitGUIRPC(port, exited); err != nil {
		why = err.Error()
	} else {
		set("gui_rpc")
	}
	for why == "" {
		// attach: the project from boincd.toml shows in the project list
		if _, ok := tm.values["attach"]; !ok {
			if ps, err := boinccmd(port, "--get_project_status"); err == nil && strings.Contains(ps, s.masterURL()) {
				set("attach")
			}
		}
		v, err := s.sqlInts(q)
		if err != nil || len(v) != 7 {
			t.Errorf("polling the DB: %v", err)
			why = "DB poll failed"
			break
		}
		sent, over, valid = int(v[0]), int(v[1]), int(v[3])
		tm.success, tm.invalid, tm.errors, tm.credit = int(v[2]), int(v[4]), int(v[5]), v[6]
		if sent > 0 {
			set("first_sent")
		}
		if over > 0 {
			set("first_reported")
		}
		if valid > 0 {
			set("first_validated")
		}
		if sent >= nTasks && over >= sent {
			set("all_reported")
		}
		if _, ok := tm.values["first_running"]; !ok {
			if ts, err := boinccmd(port, "--get_tasks"); err == nil && strings.Contains(ts, "active_task_state: EXECUTING") {
				set("first_running")
			}
		}
		cur := fmt.Sprintf("sent=%d reported=%d success=%d valid=%d invalid=%d errors=%d credit=%g",
			sent, over, tm.success, valid, tm.invalid, tm.errors, tm.credit)
		if cur != last {
			t.Logf("%s t=%ss %s", label, el(), cur)
			last = cur
		}
		if valid >= nTasks {
			tm.passed = true
			break
		}
		if time.Since(t0) > runTimeout {
			why = fmt.Sprintf("timeout: %d of %d validated after %v", valid, nTasks, runTimeout)
			break
		}
		select {
		case <-exited:
			why = "boincd exited (its output: rs_client.out)"
		case <-suiteCtx.Done():
			why = "interrupted by a signal"
		case <-time.After(pollEvery):
		}
	}
	tm.values["end"] = el()

	// evidence, as run_client.sh leaves it
	for _, e := range []struct{ file, arg string }{
		{"rs_messages.txt", "--get_messages"}, {"rs_tasks.txt", "--get_tasks"},
		{"rs_project_status.txt", "--get_project_status"}, {"rs_host_info.txt", "--get_host_info"},
	} {
		args := []string{e.arg}
		if e.arg == "--get_messages" {
			args = append(args, "0")
		}
		o, _ := boinccmd(port, args...)
		_ = os.WriteFile(filepath.Join(dir, e.file), []byte(o), 0o644)
	}
	for _, e := range []struct{ file, q string }{
		{"rs_results.tsv", fmt.Sprintf("select r.id, r.name, r.hostid, r.server_state, r.outcome, r.client_state, "+
			"r.validate_state, r.exit_status, round(r.elapsed_time,1), round(r.cpu_time,2), round(r.granted_credit,4), "+
			"from_unixtime(r.sent_time), from_unixtime(r.received_time), r.app_version_id from result r where r.userid=%d order by r.id", userID)},
		{"rs_hosts.tsv", fmt.Sprintf("select h.id, h.domain_name, h.os_name, h.os_version, h.p_ncpus, h.p_vendor, h.p_model, "+
			"round(h.p_fpops), round(h.p_iops), h.m_nbytes, h.d_total, h.serialnum, round(h.total_credit,4), h.rpc_seqno, "+
			"from_unixtime(h.rpc_time) from host h where h.userid=%d", userID)},
	} {
		o, err := s.sql(e.q)
		if err != nil {
			o = err.Error()
		}
		_ = os.WriteFile(filepath.Join(dir, e.file), []byte(o+"\n"), 0o644)
	}
	if err := s.collectSchedulerLog(offset, userID, dir); err != nil {
		t.Errorf("collecting the scheduler log: %v", err)
	}
	stop()

	checkLimitMet(t, tm, dir)
	t.Logf("%s: validated %d/%d in %s s", label, valid, sent, tm.values["end"])
	if !tm.passed {
		t.Errorf("%s did not get %d results validated: %s", label, nTasks, why)
	}
	if tm.errors != 0 {
		t.Errorf("errors=%d: results that ended in a client error", tm.errors)
	}
	if !(tm.credit > 0) {
		t.Errorf("credit=%g: no credit granted", tm.credit)
	}
	if _, ok := tm.values["attach"]; !ok {
		t.Errorf("the project from boincd.toml never showed in --get_project_status")
	}
	checkSchedulerLog(t, filepath.Join(dir, "rs_scheduler_log.txt"))
	s.checkHostRow(t, tm, userID)
	if t.Failed() {
		logEvidence(t, clientEvidence(dir)...)
	}
}

var (
	importUserRE = regexp.MustCompile(`account \S+: user id (\d+)`)
	importProgRE = regexp.MustCompile(`imported boincd t=(\d+)s sent=(\d+) reported=(\d+) valid=(\d+)`)
)

// runImport runs import_test.sh: the C++ client attaches and runs a while,
// boincd import takes its dir over, boincd finishes the jobs under the same
// host id. It returns a line for the summary.
func (s *server) runImport(t *testing.T, p1, p2 int, timeout time.Duration) string {
	runTimeout := min(timeout, s.remaining()-100*time.Second)
	offset := s.schedulerLogSize()
	logPath := filepath.Join(s.logs, "import.log")
	ctx, cancel := s.ctx(runTimeout + 100*time.Second)
	defer cancel()
	t0 := time.Now()
	rc, err := s.run(ctx, logPath, []string{"P1=" + strconv.Itoa(p1), "P2=" + strconv.Itoa(p2),
		fmt.Sprintf("TIMEOUT=%d", int(runTimeout.Seconds()))},
		s.script("import_test.sh"), cppClient, s.boincd, strconv.Itoa(nTasks))
	total := time.Since(t0).Seconds()
	out, _ := os.ReadFile(logPath)
	dir := filepath.Join(s.root, "imp_boincd")

	for _, l := range regexp.MustCompile(`(?m)^.*(CHECK (OK|FAILED)|boincd import: exit).*$`).FindAll(out, -1) {
		t.Log(string(l))
	}
	switch {
	case err != nil:
		t.Errorf("import_test.sh: %v", err)
	case rc != 0:
		t.Errorf("import_test.sh exit %d", rc)
	}
	if m := importUserRE.FindSubmatch(out); m == nil {
		t.Errorf("no account line in import_test.sh's output")
	} else {
		uid, _ := strconv.Atoi(string(m[1]))
		if err := s.collectSchedulerLog(offset, uid, dir); err != nil {
			t.Errorf("collecting the scheduler log: %v", err)
		} else {
			checkSchedulerLog(t, filepath.Join(dir, "rs_scheduler_log.txt"))
		}
	}
	allRep, allVal := "-", "-"
	for _, m := range importProgRE.FindAllSubmatch(out, -1) {
		sent, _ := strconv.Atoi(string(m[2]))
		rep, _ := strconv.Atoi(string(m[3]))
		val, _ := strconv.Atoi(string(m[4]))
		if allRep == "-" && sent >= nTasks && rep >= sent {
			allRep = string(m[1])
		}
		if allVal == "-" && val >= nTasks {
			allVal = string(m[1])
		}
	}
	if t.Failed() {
		logEvidence(t, logPath, filepath.Join(dir, "rs_import.out"), filepath.Join(dir, "rs_client.out"),
			filepath.Join(dir, "rs_messages.txt"), filepath.Join(dir, "rs_results.tsv"))
	}
	result := "PASS"
	if t.Failed() {
		result = "FAIL"
	}
	return fmt.Sprintf("import: %s in %.0f s (C++ client, boincd import, boincd on the imported dir: all reported at %s s, all validated at %s s of its run)",
		result, total, allRep, allVal)
}
