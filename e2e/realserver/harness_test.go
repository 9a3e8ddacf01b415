//go:build linux

package realserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testsupport"
)

const (
	// envRequire=1 turns every "cannot run here" skip into a failure (CI).
	envRequire = "BOINCD_REQUIRE_REALSERVER"
	// envOnlyCases names the feature cases to run alone (onlyCases).
	envOnlyCases = "BOINCD_REALSERVER_CASES"
	// envShared overrides where the harness scripts are (the realserver
	// directory itself, or the shared directory holding it).
	envShared = "BOINCD_SHARED"
	// envKeep=1 keeps RS_ROOT (client dirs, logs) after a passing run too.
	envKeep = "BOINCD_REALSERVER_KEEP"

	project    = "rstest" // lib.sh PROJECT
	clientUser = "boinc"  // lib.sh CLIENT_USER: runs the clients
	guiPW      = "pw"     // lib.sh GUI_PW
	cppClient  = "/usr/bin/boinc"

	nTasks    = 4 // jobs per client run
	wuSeconds = 5 // how long each job runs

	// suiteBudget bounds the whole test, teardown excluded; teardownReserve
	// is kept free before go test's -timeout so the teardown always runs.
	suiteBudget     = 9 * time.Minute
	teardownReserve = 100 * time.Second
	teardownTimeout = 90 * time.Second
	// pollEvery is run_client.sh's polling period; boincd_config uses the
	// same so the timings compare.
	pollEvery = 2 * time.Second
)

// harnessKnobs are the harness settings a developer may have exported for
// manual runs; the suite sets what it needs and drops the rest, so its
// server is the stock one whatever the caller's environment.
var harnessKnobs = []string{
	"RS_ROOT", "BOINC_SRC", "PROJECT", "HTTP_PORT", "DB_PORT", "SRV_USER", "CLIENT_USER",
	"DB_USER", "DB_PASS", "APP", "APP_VERSION", "PLATFORM", "NWU", "WU_SECONDS", "KIT",
	"FORCE_BUILD", "MAKE_JOBS", "KEEP_PROJECT", "ESCAPE_GUI_URLS", "MAKE_WORK", "TIMEOUT",
	"CLIENT_ARGS", "GUI_PW", "KEEP_CLIENT", "NUDGE", "NO_CPU_PREFS", "P1", "P2",
	"IMPORT_AFTER", "CPP_CLIENT", "TIMEOUT_STOCK", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV",
}

// scripts the suite drives; all must be in the shared directory.
var scripts = []string{"lib.sh", "setup.sh", "run_client.sh", "make_work.sh", "import_test.sh", "teardown.sh"}

func required() bool { return os.Getenv(envRequire) == "1" }

// unavailable ends the test when the suite cannot run here: a skip, or a
// failure under BOINCD_REQUIRE_REALSERVER=1 so CI never skips silently.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if required() {
		t.Fatalf("real-server suite cannot run: %s (%s=1: this is a failure, not a skip)", msg, envRequire)
	}
	t.Skipf("real-server suite skipped: %s (%s=1 makes this a failure)", msg, envRequire)
}

// ---------------------------------------------------------------- cleanup on signals

// suiteCtx ends when the test binary gets SIGINT or SIGTERM: every
// command the suite runs derives from it (s.ctx), so the running script
// gets SIGTERM (run_client.sh then stops its client) and nothing new starts.
var suiteCtx, interrupt = context.WithCancel(context.Background())

// emergency holds the teardown a signal must run before the binary exits.
var emergency struct {
	mu       sync.Mutex
	teardown func()
}

// handleSignals makes SIGINT/SIGTERM stop what the suite runs and tear the
// server down before the test binary exits. go test's own -timeout cannot
// be caught (the binary panics), so the suite keeps its own deadline well
// before it instead.
func handleSignals() {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "realserver: %v: stopping what this test started\n", sig)
		interrupt()
		emergency.mu.Lock()
		td := emergency.teardown
		emergency.mu.Unlock()
		if td != nil {
			td()
		}
		os.Exit(2)
	}()
}

// checkInterrupted ends t when a signal came.
func checkInterrupted(t *testing.T) {
	t.Helper()
	if suiteCtx.Err() != nil {
		t.Fatal("interrupted by a signal")
	}
}

// ---------------------------------------------------------------- locating things

// moduleRoot is the nearest directory above the working directory holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.mod")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// sharedDir finds the harness scripts: $BOINCD_SHARED (the realserver
// directory, or the directory holding it; relative to the module root),
// else ../shared/realserver next to the module root.
func sharedDir(modRoot string) (string, error) {
	var cands []string
	if v := os.Getenv(envShared); v != "" {
		if !filepath.IsAbs(v) {
			v = filepath.Join(modRoot, v)
		}
		cands = []string{v, filepath.Join(v, "realserver")}
	} else {
		cands = []string{filepath.Join(modRoot, "..", "shared", "realserver")}
	}
	for _, d := range cands {
		if !fileExists(filepath.Join(d, "setup.sh")) {
			continue
		}
		for _, s := range scripts {
			if !fileExists(filepath.Join(d, s)) {
				return "", fmt.Errorf("%s has setup.sh but no %s", d, s)
			}
		}
		return filepath.Abs(d)
	}
	if v := os.Getenv(envShared); v != "" {
		return "", fmt.Errorf("%s=%s: no setup.sh there nor in its realserver/", envShared, v)
	}
	return "", fmt.Errorf("no harness scripts at %s (set %s)", cands[0], envShared)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

// ---------------------------------------------------------------- ports

// portFree reports whether nothing listens on 127.0.0.1:p (a listener on
// the wildcard address makes the bind fail too).
func portFree(p int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// freePorts picks n free ports in [lo, hi], scanning from a random start so
// two concurrent runs rarely race for the same ones; taken ports go into
// avoid.
func freePorts(lo, hi, n int, avoid map[int]bool) ([]int, error) {
	span := hi - lo + 1
	start := rand.IntN(span)
	var out []int
	for i := 0; i < span && len(out) < n; i++ {
		p := lo + (start+i)%span
		if avoid[p] || !portFree(p) {
			continue
		}
		avoid[p] = true
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("only %d of %d free ports in %d-%d", len(out), n, lo, hi)
	}
	return out, nil
}

const reservedPortsFile = "/proc/sys/net/ipv4/ip_local_reserved_ports"

// reservePorts keeps the kernel from handing ports out as the local end
// of outgoing connections while the suite holds them: 33000-33999 lies in
// Linux's ephemeral range (32768-60999), and a test beside this one that
// opens connections by the hundred thousand (the GUI RPC abuse test) can
// otherwise take a client's GUI RPC port between the pick and the bind
// ("GUI RPC bind to port ... failed: 98"). Reserved ports can still be
// bound explicitly. The returned func restores the list; without a
// writable /proc/sys the ports are only picked free, which is logged.
func reservePorts(logf func(string, ...any), ports []int) func() {
	old, err := os.ReadFile(reservedPortsFile)
	if err != nil {
		logf("cannot reserve ports %v: %v", ports, err)
		return func() {}
	}
	list := strings.TrimSpace(string(old))
	for _, p := range ports {
		if list != "" {
			list += ","
		}
		list += strconv.Itoa(p)
	}
	if err := os.WriteFile(reservedPortsFile, []byte(list), 0o644); err != nil {
		logf("cannot reserve ports %v: %v", ports, err)
		return func() {}
	}
	return func() {
		if err := os.WriteFile(reservedPortsFile, old, 0o644); err != nil {
			logf("restoring %s: %v", reservedPortsFile, err)
		}
	}
}

// ---------------------------------------------------------------- the server instance

type server struct {
	shared   string // the harness scripts
	modRoot  string
	root     string // RS_ROOT
	logs     string // RS_ROOT/logs: output of every command the suite ran
	httpPort int
	dbPort   int
	env      []string
	boincd   string    // boincd built from this tree
	deadline time.Time // the suite's own deadline (before go test's)

	uid, gid int // clientUser

	teardownOnce sync.Once
	strays       []string // what teardown found still running under root
	// the busy case's CGI stand-in (cases_test.go), installed once
	busyOnce sync.Once
	busyErr  error
	busyMu   sync.Mutex
	// the https case's TLS port (httpscase_test.go), set up once
	tlsPort int
	tlsOnce sync.Once
	tlsErr  error
	// the arm64 case's boincd (arm64case_test.go), built once
	armOnce sync.Once
	armBin  string
	armErr  error
}

func (s *server) masterURL() string {
	return fmt.Sprintf("http://127.0.0.1:%d/%s/", s.httpPort, project)
}

func (s *server) script(name string) string { return filepath.Join(s.shared, name) }

func (s *server) remaining() time.Duration { return time.Until(s.deadline) }

// ctx is a context ending after d or at the suite deadline, whichever is first.
func (s *server) ctx(d time.Duration) (context.Context, context.CancelFunc) {
	dl := time.Now().Add(d)
	if s.deadline.Before(dl) {
		dl = s.deadline
	}
	return context.WithDeadline(suiteCtx, dl)
}

// harnessEnv is the caller's environment without harness knobs, plus this
// instance's settings: own RS_ROOT and ports, no spare work, short jobs,
// the stock gui_urls.xml.
func harnessEnv(root string, httpPort, dbPort int) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(harnessKnobs, k)
	})
	return append(env,
		"RS_ROOT="+root,
		"HTTP_PORT="+strconv.Itoa(httpPort),
		"DB_PORT="+strconv.Itoa(dbPort),
		"NWU=0",
		"WU_SECONDS="+strconv.Itoa(wuSeconds),
		"ESCAPE_GUI_URLS=0",
		"GUI_PW="+guiPW,
		// The client user's rootless podman would leave its pause
		// process behind after the suite: boincd looks for no engine.
		"BOINCD_DONT_USE_DOCKER=true",
		// boincd's web dashboard on any free port: its default, GUI RPC's
		// port + 1, is the next client's GUI RPC port here.
		"BOINCD_WEB_LISTEN=127.0.0.1:0",
	)
}

// command prepares name args with the harness environment (plus extra),
// stdout and stderr going to out. On ctx's end the command gets SIGTERM
// (the scripts trap it and stop their client), then SIGKILL 30 s later.
func (s *server) command(ctx context.Context, out *os.File, extra []string, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(slices.Clone(s.env), extra...)
	cmd.Dir = s.root
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	return cmd
}

// run runs a command to completion, its output in logPath (a file, not a
// pipe, so a daemon a script leaves behind cannot hold Wait up). It returns
// the exit code; err is set when it could not run or ctx ended first.
func (s *server) run(ctx context.Context, logPath string, extra []string, name string, args ...string) (int, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	cmd := s.command(ctx, f, extra, name, args...)
	if err := cmd.Start(); err != nil {
		return -1, err
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return -1, fmt.Errorf("%s: stopped: %v (%v)", filepath.Base(name), ctx.Err(), err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// sql runs a query against the project DB as MariaDB root over the unix
// socket (tab-separated, no header), like lib.sh's sql.
func (s *server) sql(q string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mariadb", "--socket="+filepath.Join(s.root, "mysql", "mysqld.sock"),
		"-u", "root", "-N", "-B", project, "-e", q)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sql %q: %v: %s", q, err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// sqlInts runs a one-row query of numbers.
func (s *server) sqlInts(q string) ([]float64, error) {
	out, err := s.sql(q)
	if err != nil {
		return nil, err
	}
	var vals []float64
	for _, f := range strings.Fields(out) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, fmt.Errorf("sql %q: %q is not a number", q, f)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// boinccmd runs boinccmd against the client on port.
func boinccmd(port int, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "boinccmd", append([]string{"--host", "127.0.0.1:" + strconv.Itoa(port), "--passwd", guiPW}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// build compiles boincd from the tree into RS_ROOT.
func (s *server) build(t *testing.T) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("no go command to build boincd: %v", err)
	}
	s.boincd = filepath.Join(s.root, "boincd")
	ctx, cancel := s.ctx(4 * time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", s.boincd, "./cmd/boincd")
	cmd.Dir = s.modRoot
	cmd.Env = os.Environ()
	if os.Getenv("CGO_CFLAGS") == "" {
		// The README's flags: with the same flags as .ci/run and the other
		// tests that build boincd, this build is a link from the cache.
		cmd.Env = append(cmd.Env, "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	}
	t0 := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/boincd: %v\n%s", err, out)
	}
	if err := os.Chmod(s.boincd, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("built boincd from %s in %.1f s", s.modRoot, time.Since(t0).Seconds())
}

// setup runs setup.sh; a failure means the suite cannot run here.
func (s *server) setup(t *testing.T) {
	t.Helper()
	ctx, cancel := s.ctx(4 * time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, "setup.log")
	t0 := time.Now()
	rc, err := s.run(ctx, logPath, nil, s.script("setup.sh"))
	for try := 2; try <= 4 && err == nil && rc != 0 && ctx.Err() == nil; try++ {
		// setup.sh's smoke check pipes curl into grep -q under pipefail:
		// when grep has its match and exits before curl has written the
		// whole page, curl fails with "(23) Failed writing body" and the
		// script fails on a server that is up; on a loaded machine twice
		// in a row has been seen. The script is idempotent, so more runs
		// (keeping the project it made) tell that race from a real
		// failure, which fails every time.
		t.Logf("setup.sh failed (exit %d); running it again. ---- %s (last 15 lines) ----\n%s",
			rc, logPath, tail(logPath, 15))
		logPath = filepath.Join(s.logs, fmt.Sprintf("setup-%d.log", try))
		rc, err = s.run(ctx, logPath, []string{"KEEP_PROJECT=1"}, s.script("setup.sh"))
	}
	if err != nil || rc != 0 {
		t.Logf("---- %s (last 40 lines) ----\n%s", logPath, tail(logPath, 40))
		unavailable(t, "setup.sh failed (exit %d, %v); log %s", rc, err, logPath)
	}
	t.Logf("setup.sh: server up in %.1f s: %s (MariaDB 127.0.0.1:%d, RS_ROOT %s)",
		time.Since(t0).Seconds(), s.masterURL(), s.dbPort, s.root)
	u, err := user.Lookup(clientUser)
	if err != nil {
		t.Fatalf("setup.sh did not create user %s: %v", clientUser, err)
	}
	s.uid, _ = strconv.Atoi(u.Uid)
	s.gid, _ = strconv.Atoi(u.Gid)
}

// Real projects cap the jobs a host holds and give jobs deadlines of days
// (issue 28); the stock example project does neither. maxWUsInProgress is
// config.xml's <max_wus_in_progress> (per CPU: 2 jobs on a 2-CPU host, so
// every run of nTasks jobs meets the cap) and delayBound the input
// template's <delay_bound>, one week.
const (
	maxWUsInProgress = 1
	delayBound       = 7 * 24 * 3600
	// inProgressLimitLog is what the scheduler logs (debug_send) when the
	// cap stops it from sending more jobs in a reply; the client hears
	// "This computer has reached a limit on tasks in progress" only when
	// the reply has no job at all.
	inProgressLimitLog = "max_jobs_in_progress limit exceeded"
)

// configureAsRealProjects sets the per-host job cap in config.xml and the
// one-week deadline in the input template, as real projects configure
// them. Both are read afresh: config.xml by each scheduler CGI run, the
// template by each create_work.
func (s *server) configureAsRealProjects(t *testing.T) {
	t.Helper()
	s.editProjectFile(t, "config.xml", "<config>", fmt.Sprintf("<config>\n    <max_wus_in_progress>%d</max_wus_in_progress>", maxWUsInProgress))
	s.editProjectFile(t, filepath.Join("templates", "rsapp_in"), "<delay_bound>86400</delay_bound>", fmt.Sprintf("<delay_bound>%d</delay_bound>", delayBound))
	s.enableFeatureCases(t)
	t.Logf("project configured as real projects are: max_wus_in_progress %d (per CPU), delay_bound %d s", maxWUsInProgress, delayBound)
}

// heldReports counts the client's finished tasks that were never reported
// (boinccmd --get_tasks, saved as rs_tasks.txt at the end of the run).
func heldReports(dir string) int {
	b, err := os.ReadFile(filepath.Join(dir, "rs_tasks.txt"))
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("ready to report: yes"))
}

// checkLimitMet counts the scheduler requests of the client's account
// that met configureAsRealProjects's cap (rs_scheduler_log.txt): a run
// that never met it shows nothing about it.
func checkLimitMet(t *testing.T, tm *timings, dir string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, "rs_scheduler_log.txt"))
	if err != nil {
		t.Error(err)
		return
	}
	n := bytes.Count(log, []byte(inProgressLimitLog))
	tm.values["limit_met"] = strconv.Itoa(n)
	if n == 0 {
		t.Errorf("the scheduler log of %s's account never says %q: the run did not meet the project's in-progress cap", tm.label, inProgressLimitLog)
	}
}

// teardown runs teardown.sh --purge with the instance's environment (it
// stops clients, project daemons, Apache and MariaDB by this RS_ROOT's pid
// files only), then removes RS_ROOT, or keeps the evidence after a failure.
func (s *server) teardown(logf func(string, ...any), failed bool) {
	s.teardownOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), teardownTimeout)
		defer cancel()
		logPath := filepath.Join(s.logs, "teardown.log")
		rc, err := s.run(ctx, logPath, nil, s.script("teardown.sh"), "--purge")
		if err != nil || rc != 0 {
			logf("teardown.sh --purge failed (exit %d, %v):\n%s", rc, err, tail(logPath, 30))
			failed = true
		}
		if s.strays = killStrays(s.root); len(s.strays) > 0 {
			logf("processes started under %s outlived the suite; killed: %s", s.root, strings.Join(s.strays, "; "))
			failed = true
		}
		if failed || os.Getenv(envKeep) == "1" {
			// the unpacked server kit and the binary are big and rebuildable
			_ = os.RemoveAll(filepath.Join(s.root, "boinc"))
			_ = os.Remove(s.boincd)
			logf("server stopped; evidence kept in %s (c_*/rs_*, imp_boincd/rs_*, logs/)", s.root)
			return
		}
		if err := os.RemoveAll(s.root); err != nil {
			logf("removing %s: %v", s.root, err)
		}
	})
}

// killStrays kills what a client left behind under root: any process
// whose HOME or working directory lies there (a rootless podman's pause
// process, say, which no pid file names). It says what it killed.
func killStrays(root string) []string {
	var killed []string
	for p := range testsupport.Processes() {
		if int(p) == os.Getpid() {
			continue
		}
		home, _ := p.Env("HOME")
		if !testsupport.Under(p.Cwd(), root) && !testsupport.Under(home, root) {
			continue
		}
		cmdline := strings.Join(p.Cmdline(), " ")
		if syscall.Kill(int(p), syscall.SIGKILL) == nil {
			killed = append(killed, fmt.Sprintf("%d %s", p, cmdline))
		}
	}
	return killed
}

// ---------------------------------------------------------------- work

// prepareWork makes sure n unsent results are waiting and that the feeder
// has put them in the scheduler's shared-memory cache before a client
// starts. make_work.sh alone leaves a race: the transitioner creates the
// results and the feeder loads them some seconds after create_work, and a
// client whose first request comes before that gets "no work" and backs
// off for 10 minutes (both clients do; the C++ client just asks later).
func (s *server) prepareWork(t *testing.T, n int) {
	t.Helper()
	q := "select (select count(*) from result where server_state=2) + " +
		"(select count(*) from workunit w where not exists (select 1 from result r where r.workunitid=w.id))"
	v, err := s.sqlInts(q)
	if err != nil || len(v) != 1 {
		t.Fatalf("counting waiting work: %v", err)
	}
	if need := n - int(v[0]); need > 0 {
		ctx, cancel := s.ctx(2 * time.Minute)
		defer cancel()
		logPath := filepath.Join(s.logs, fmt.Sprintf("make_work_%d.log", time.Now().UnixNano()))
		rc, err := s.run(ctx, logPath, nil, s.script("make_work.sh"), strconv.Itoa(need), strconv.Itoa(wuSeconds))
		if err != nil || rc != 0 {
			t.Fatalf("make_work.sh %d: exit %d, %v\n%s", need, rc, err, tail(logPath, 20))
		}
	}
	feeders, _ := filepath.Glob(filepath.Join(s.root, "projects", project, "log_*", "feeder.log"))
	deadline := time.Now().Add(60 * time.Second)
	for {
		ids, err := s.sql("select id from result where server_state=2 order by id")
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		fields := strings.Fields(ids)
		var feederLog []byte
		if len(feeders) > 0 {
			feederLog, _ = os.ReadFile(feeders[0])
		}
		for _, id := range fields {
			if !bytes.Contains(feederLog, []byte("adding result [RESULT#"+id+"]")) {
				missing = append(missing, id)
			}
		}
		if len(fields) >= n && len(missing) == 0 {
			return
		}
		checkInterrupted(t)
		if time.Now().After(deadline) {
			t.Logf("warning: after 60 s %d unsent results, not yet in the feeder's cache: %v (feeder logs %v)",
				len(fields), missing, feeders)
			return
		}
		time.Sleep(time.Second)
	}
}

// newAccount creates a fresh account through create_account.php with
// lib.sh's new_account and returns its authenticator and user id.
func (s *server) newAccount(t *testing.T, label string) (string, int) {
	t.Helper()
	ctx, cancel := s.ctx(time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, label+"_account.log")
	rc, err := s.run(ctx, logPath, nil, "bash", "-c",
		`source "$1/lib.sh" && new_account "$2" && echo "ACCOUNT $AUTH $UID_"`, "new_account", s.shared, label)
	out, _ := os.ReadFile(logPath)
	m := regexp.MustCompile(`(?m)^ACCOUNT (\S+) (\d+)$`).FindSubmatch(out)
	if err != nil || rc != 0 || m == nil {
		t.Fatalf("new_account %s: exit %d, %v\n%s", label, rc, err, out)
	}
	uid, _ := strconv.Atoi(string(m[2]))
	return string(m[1]), uid
}

// ---------------------------------------------------------------- scheduler log

func (s *server) schedulerLog() string {
	m, _ := filepath.Glob(filepath.Join(s.root, "projects", project, "log_*", "scheduler.log"))
	if len(m) == 0 {
		return ""
	}
	return m[0]
}

// schedulerLogSize is where the scheduler log ends now; lines after it
// were written later.
func (s *server) schedulerLogSize() int64 {
	if st, err := os.Stat(s.schedulerLog()); err == nil {
		return st.Size()
	}
	return 0
}

var pidTagRE = regexp.MustCompile(`\[PID=[0-9]* *\]`)

// collectSchedulerLog writes what run_client.sh leaves for its runs, from
// the scheduler log lines written after offset: rs_scheduler_log_all.txt,
// rs_scheduler_log.txt (every request, by its CGI [PID=n] tag, that names
// one of the account's hosts) and rs_scheduler_problems.txt.
func (s *server) collectSchedulerLog(offset int64, userID int, dir string) error {
	f, err := os.Open(s.schedulerLog())
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		return err
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		return err
	}
	hosts, err := s.sql(fmt.Sprintf("select id from host where userid=%d", userID))
	if err != nil {
		return err
	}
	pids := map[string]bool{}
	for _, h := range strings.Fields(hosts) {
		for _, l := range lines {
			if strings.Contains(l, "[HOST#"+h+"]") {
				if tag := pidTagRE.FindString(l); tag != "" {
					pids[tag] = true
				}
			}
		}
	}
	var mine, problems []string
	problemRE := regexp.MustCompile(`CRITICAL|Can.t parse|unrecognized|ERROR|error`)
	for _, l := range lines {
		if pids[pidTagRE.FindString(l)] {
			mine = append(mine, l)
		}
		if problemRE.MatchString(l) {
			problems = append(problems, l)
		}
	}
	write := func(name string, ls []string) error {
		var b strings.Builder
		for _, l := range ls {
			b.WriteString(l + "\n")
		}
		return os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644)
	}
	return errors.Join(write("rs_scheduler_log_all.txt", lines), write("rs_scheduler_log.txt", mine),
		write("rs_scheduler_problems.txt", problems))
}

// schedProblemRE: what must not appear in the scheduler's log lines for a
// client's own requests.
var schedProblemRE = regexp.MustCompile(`CRITICAL|Can't parse|unrecognized|XML`)

// checkSchedulerLog fails t when path (a client's rs_scheduler_log.txt) is
// missing or empty, or holds a CRITICAL or parse-error line.
func checkSchedulerLog(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("scheduler log evidence: %v", err)
		return
	}
	var bad []string
	n := 0
	for l := range strings.SplitSeq(string(data), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n++
		if schedProblemRE.MatchString(l) {
			bad = append(bad, l)
		}
	}
	if n == 0 {
		t.Errorf("%s is empty: the scheduler logged no request from this account's host(s)", path)
	}
	if len(bad) > 0 {
		t.Errorf("the scheduler log has %d CRITICAL/parse-error line(s) for this client's requests (%s):\n%s",
			len(bad), path, strings.Join(bad[:min(len(bad), 20)], "\n"))
	}
}

// ---------------------------------------------------------------- timings

// timingKeys are run_client.sh's timing fields, in order.
var timingKeys = []string{"gui_rpc", "attach", "first_sent", "first_running", "first_reported",
	"all_reported", "first_validated", "end"}

// timings is one client run: run_client.sh's timing line, or the same
// figures measured by the suite (boincd_config). Values are seconds from
// the client's start, "-" when it never happened.
type timings struct {
	label   string
	values  map[string]string
	success int
	invalid int
	errors  int
	credit  float64
	passed  bool // N validated (exit 0)
	// host is the account's host row (hostFields), for the table.
	host map[string]string
}

// hostFields are the host-row columns shown side by side: what both
// clients should report alike, and what the server derives from the
// request (transfer rates, the disk share it stores as d_boinc_max).
var hostFields = []string{"p_ncpus", "p_vendor", "os_name", "m_nbytes", "d_total",
	"n_bwup", "n_bwdown", "d_boinc_max", "rpc_seqno"}

// hostRow reads the host row of a user's (single) host.
func (s *server) hostRow(userID int) (map[string]string, error) {
	out, err := s.sql(fmt.Sprintf("select p_ncpus, p_vendor, os_name, m_nbytes, d_total, round(n_bwup), round(n_bwdown), "+
		"round(d_boinc_max), rpc_seqno from host where userid=%d order by id desc limit 1", userID))
	if err != nil {
		return nil, err
	}
	vals := strings.Split(out, "\t")
	if len(vals) != len(hostFields) {
		return nil, fmt.Errorf("host row of user %d: %q", userID, out)
	}
	row := map[string]string{}
	for i, f := range hostFields {
		row[f] = vals[i]
	}
	return row, nil
}

// checkHostRow records a client's host row and checks what boincd must
// send like the C++ client: measured transfer rates and a disk share.
func (s *server) checkHostRow(t *testing.T, tm *timings, userID int) {
	row, err := s.hostRow(userID)
	if err != nil {
		t.Error(err)
		return
	}
	tm.host = row
	for _, f := range []string{"n_bwup", "n_bwdown", "d_boinc_max"} {
		if v, _ := strconv.ParseFloat(row[f], 64); !(v > 0) {
			t.Errorf("host row: %s = %s, want > 0 (the C++ client reports it)", f, row[f])
		}
	}
}

var timingsRE = regexp.MustCompile(`(?m)^timings (\S+): ([^;]*); success=(\S+) invalid=(\S+) errors=(\S+) credit=([^;\s]+)`)

// parseTimings reads run_client.sh's timing line.
func parseTimings(out string) (timings, error) {
	m := timingsRE.FindStringSubmatch(out)
	if m == nil {
		return timings{}, errors.New("no timings line in run_client.sh's output")
	}
	tm := timings{label: m[1], values: map[string]string{}}
	for kv := range strings.FieldsSeq(m[2]) {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			tm.values[k] = strings.TrimSuffix(v, "s")
		}
	}
	var err error
	ints := []*int{&tm.success, &tm.invalid, &tm.errors}
	for i, p := range ints {
		if *p, err = strconv.Atoi(m[3+i]); err != nil {
			return tm, fmt.Errorf("timings line: %q: %v", m[0], err)
		}
	}
	if tm.credit, err = strconv.ParseFloat(m[6], 64); err != nil {
		return tm, fmt.Errorf("timings line: %q: %v", m[0], err)
	}
	return tm, nil
}

func (tm timings) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "timings %s:", tm.label)
	for _, k := range timingKeys {
		fmt.Fprintf(&b, " %s=%ss", k, tm.get(k))
	}
	fmt.Fprintf(&b, "; success=%d invalid=%d errors=%d credit=%g", tm.success, tm.invalid, tm.errors, tm.credit)
	return b.String()
}

func (tm timings) get(k string) string {
	if v, ok := tm.values[k]; ok && v != "" {
		return v
	}
	return "-"
}

// table is the side-by-side view of the runs: a row per milestone (seconds
// from each client's start), a column per client.
func table(runs []timings, notes []string) string {
	rows := []struct{ name, key string }{
		{"GUI RPC up", "gui_rpc"},
		{"attach", "attach"},
		{"first task sent", "first_sent"},
		{"first task running", "first_running"},
		{"first reported", "first_reported"},
		{"all reported", "all_reported"},
		{"first validated", "first_validated"},
		{"all validated", "all_validated"},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "real BOINC server: %d jobs of %d s per client; seconds from the client's start\n", nTasks, wuSeconds)
	fmt.Fprintf(&b, "%-20s", "")
	for _, r := range runs {
		fmt.Fprintf(&b, " %14s", r.label)
	}
	b.WriteString("\n")
	for _, row := range rows {
		fmt.Fprintf(&b, "%-20s", row.name)
		for _, r := range runs {
			v := r.get(row.key)
			if row.key == "all_validated" {
				v = "-"
				if r.passed {
					v = r.get("end")
				}
			}
			fmt.Fprintf(&b, " %14s", v)
		}
		b.WriteString("\n")
	}
	extra := []struct {
		name string
		f    func(timings) string
	}{
		{"replies capped", func(r timings) string { return r.get("limit_met") }},
		{"reports held at end", func(r timings) string { return r.get("held") }},
		{"client errors", func(r timings) string { return strconv.Itoa(r.errors) }},
		{"credit", func(r timings) string { return strconv.FormatFloat(r.credit, 'f', 3, 64) }},
		{"result", func(r timings) string {
			if r.passed {
				return "PASS"
			}
			return "FAIL"
		}},
	}
	for _, e := range extra {
		fmt.Fprintf(&b, "%-20s", e.name)
		for _, r := range runs {
			fmt.Fprintf(&b, " %14s", e.f(r))
		}
		b.WriteString("\n")
	}
	b.WriteString("host row (server DB)\n")
	for _, f := range hostFields {
		fmt.Fprintf(&b, "  %-18s", f)
		for _, r := range runs {
			v := r.host[f]
			if v == "" {
				v = "-"
			}
			if len(v) > 14 {
				v = v[:13] + "…"
			}
			fmt.Fprintf(&b, " %14s", v)
		}
		b.WriteString("\n")
	}
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	return b.String()
}

// ---------------------------------------------------------------- evidence

// tail is the last n lines of a file (or why it cannot be read).
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// logEvidence puts the tails of a failed run's files in the test log, so
// the CI log says why.
func logEvidence(t *testing.T, files ...string) {
	t.Helper()
	if suiteCtx.Err() != nil {
		return
	}
	for _, f := range files {
		n := 30
		if strings.HasSuffix(f, "rs_results.tsv") {
			n = 20
		}
		t.Logf("---- %s (last %d lines) ----\n%s", f, n, tail(f, n))
	}
}

func clientEvidence(dir string) []string {
	return []string{
		filepath.Join(dir, "rs_client.out"),
		filepath.Join(dir, "rs_messages.txt"),
		filepath.Join(dir, "rs_scheduler_problems.txt"),
		filepath.Join(dir, "rs_results.tsv"),
	}
}

// addVersions makes the project take up the app versions put under
// apps/ (and, with xadd, the apps added to project.xml) as setup.sh does:
// the given project paths chowned to the server user, bin/xadd,
// bin/update_versions --noconfirm (which signs the files), then
// reread_db for the feeder. It returns the log's path for the caller's
// checks of the DB; call awaitReread after them.
func (s *server) addVersions(t *testing.T, label string, xadd bool, paths ...string) string {
	t.Helper()
	var script strings.Builder
	script.WriteString("set -e\nsource \"$1\"\nchown -R \"$SRV_USER:$SRV_USER\"")
	for _, p := range paths {
		fmt.Fprintf(&script, " \"$PROJ_DIR/%s\"", p)
	}
	script.WriteString("\n")
	if xadd {
		script.WriteString("as_srv bin/xadd\n")
	}
	script.WriteString("as_srv bin/update_versions --noconfirm\nas_srv touch reread_db\n")
	ctx, cancel := s.ctx(2 * time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, label+".log")
	if rc, err := s.run(ctx, logPath, nil, "bash", "-c", script.String(), label, s.script("lib.sh")); err != nil || rc != 0 {
		t.Fatalf("%s: update_versions: exit %d, %v\n%s", label, rc, err, tail(logPath, 30))
	}
	return logPath
}

// awaitReread waits up to 60 s for the feeder to take up reread_db (it
// rereads apps and versions into the scheduler's shared memory, then
// removes the file); what names what the scheduler would not know.
func (s *server) awaitReread(t *testing.T, what string) {
	t.Helper()
	proj := filepath.Join(s.root, "projects", project)
	for deadline := time.Now().Add(60 * time.Second); fileExists(filepath.Join(proj, "reread_db")); {
		checkInterrupted(t)
		if time.Now().After(deadline) {
			t.Fatalf("the feeder did not take up reread_db within 60 s: the scheduler does not know %s", what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
