//go:build unix

package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// envChild carries the JSON childOptions of a daemon child process; its
// presence makes the test binary run the daemon instead of the tests.
const envChild = "BOINCD_E2E_CHILD"

// childOptions are the daemon options a test chooses per start. The
// intervals not listed are fixed short values (see runChild).
type childOptions struct {
	DataDir string `json:"data_dir"`
	// MaxReportDelay defaults to 1 s: finished results are reported at
	// once unless a test wants them to wait.
	MaxReportDelay time.Duration `json:"max_report_delay"`
	// FetchBackoffMin defaults to 1 s. A finished job's upload clears the
	// backoff of its resource (WORK_FETCH::clear_backoffs), and the work
	// request that follows carries every ready result: a test that wants
	// finished results to sit unreported uses holdReports as well.
	FetchBackoffMin time.Duration `json:"fetch_backoff_min"`
	Seed            uint64        `json:"seed"`
	// GUIRPCAddr is passed to daemon.Options.GUIRPCAddr; tests that talk
	// GUI RPC use "127.0.0.1:0" and read the port from the log.
	GUIRPCAddr string `json:"gui_rpc_addr"`
	// CrashAtCommit > 0 makes the child SIGKILL itself inside its Nth
	// state commit, after CrashAfterWrites (default 1) write syscalls of
	// that commit (commitCrasher).
	CrashAtCommit    int `json:"crash_at_commit"`
	CrashAfterWrites int `json:"crash_after_writes"`
	// IgnoreFileSizeSignal ignores SIGXFSZ, so that writes past a
	// RLIMIT_FSIZE the parent sets fail with EFBIG instead of killing the
	// child (disk-full tests).
	IgnoreFileSizeSignal bool `json:"ignore_sigxfsz"`
	// FillTrigger names a file the parent may write (fillhook_test.go):
	// the child's next state commit then fills the disk itself, from
	// inside the commit.
	FillTrigger string `json:"fill_trigger"`
	// StateReserve is daemon.Options.StateReserve (0: the default).
	StateReserve int64 `json:"state_reserve"`
}

func TestMain(m *testing.M) {
	// The demo science app is this binary under a name starting with the
	// demo app's prefix (the daemon runs the downloaded copy).
	demoapp.RunIfInvoked()
	if spec := os.Getenv(envChild); spec != "" {
		os.Exit(runChild(spec))
	}
	testsupport.RaiseParallel(testsupport.WaitingParallel)
	os.Exit(m.Run())
}

// runChild is the daemon process: JSON logs on stderr, SIGTERM stops it
// gracefully, SIGHUP reloads the config (DATADIR/boincd.toml).
// workingEngine is a container engine that answers as a working podman
// with no images or containers, without running anything.
type workingEngine struct{}

func (workingEngine) LookPath(name string) (string, error) {
	if name == "podman" {
		return "/usr/bin/podman", nil
	}
	return "", exec.ErrNotFound
}

func (workingEngine) Run(_ context.Context, _ string, args ...string) ([]byte, error) {
	if len(args) > 0 && args[0] == "--version" {
		return []byte("podman version 4.9.3\n"), nil
	}
	return nil, nil
}

func runChild(spec string) int {
	var o childOptions
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		fmt.Fprintf(os.Stderr, "e2e child: bad %s: %v\n", envChild, err)
		return 2
	}
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	def := func(d, v time.Duration) time.Duration {
		if d == 0 {
			return v
		}
		return d
	}
	// Signals are caught before the daemon exists: the parent only sends
	// them after "boincd started", but a HUP must never kill the process.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if o.IgnoreFileSizeSignal {
		signal.Ignore(syscall.SIGXFSZ)
	}

	d, err := daemon.New(daemon.Options{
		DataDir: o.DataDir,
		Logger:  logger,
		// The parent's environment must not attach projects behind the
		// test's back (BOINCD_PROJECT_URL and friends).
		Getenv:            func(string) string { return "" },
		PollInterval:      200 * time.Millisecond,
		WorkFetchInterval: time.Second,
		RPCBackoffMin:     time.Second,
		XferBackoffMin:    time.Second,
		FetchBackoffMin:   def(o.FetchBackoffMin, time.Second),
		MaxReportDelay:    def(o.MaxReportDelay, time.Second),
		QuitGrace:         2 * time.Second,
		BenchmarkDuration: -1,
		// no test reaches BOINC's web site (port 1 refuses at once)
		ProjectListURL: "http://127.0.0.1:1/project_list.php",
		Seed:           o.Seed,
		// Never the default 31416: parallel daemons (or a real BOINC
		// client on the machine) would fight over it.
		GUIRPCAddr: cmp.Or(o.GUIRPCAddr, "127.0.0.1:0"),
		// The dashboard on any free port: beside a GUI RPC port a test
		// chose, port + 1 may be another daemon's or client's.
		WebAddr:              "127.0.0.1:0",
		IgnoreHostConditions: true,
		StateReserve:         o.StateReserve,
		StateCommitHook:      chainHooks(commitCrasher(o.CrashAtCommit, o.CrashAfterWrites), diskFillHook(o.FillTrigger)),
		// A stand-in engine: a crashed child must not leave the
		// machine's podman or docker running behind it, and one that
		// works keeps the notices those of the C++ client 7.20 the
		// side-by-side tests compare with (no "install Docker" notice).
		Containers: workingEngine{},
	})
	if err != nil {
		logger.Error("cannot start", slog.Any("err", err))
		return 1
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-hup:
				d.Reload()
			case <-ctx.Done():
				return
			}
		}
	}()
	err = d.Run(ctx)
	stop()
	wg.Wait()
	if err != nil && !errors.Is(err, daemon.ErrIdle) {
		logger.Error("boincd stopped with an error", slog.Any("err", err))
		return 1
	}
	return 0
}

// logLine is one line of a daemon's output: a JSON log record, or raw text
// (Msg is then the whole line and Attrs is nil).
type logLine struct {
	Msg   string
	Attrs map[string]any
	Raw   string
}

func (l logLine) str(key string) string {
	switch v := l.Attrs[key].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (l logLine) num(key string) float64 {
	f, _ := l.Attrs[key].(float64)
	return f
}

func parseLogLine(raw string) logLine {
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return logLine{Msg: raw, Raw: raw}
	}
	msg, _ := m["msg"].(string)
	return logLine{Msg: msg, Attrs: m, Raw: raw}
}

// msgIs matches lines whose message contains sub and whose string
// attributes have the given values (pairs: key, value).
func msgIs(sub string, kv ...string) func(logLine) bool {
	return func(l logLine) bool {
		if !strings.Contains(l.Msg, sub) {
			return false
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if l.str(kv[i]) != kv[i+1] {
				return false
			}
		}
		return true
	}
}

// daemonProc is a running daemon child process.
type daemonProc struct {
	t    *testing.T
	name string
	dir  string
	cmd  *exec.Cmd

	mu      sync.Mutex
	lines   []logLine
	changed chan struct{} // closed and replaced when a line arrives

	readDone chan struct{} // output drained
	exited   chan struct{} // process reaped
	state    *os.ProcessState
}

// startDaemon starts a daemon on o.DataDir; it is killed (SIGKILL) at
// cleanup if the test left it running.
func startDaemon(t *testing.T, name string, o childOptions) *daemonProc {
	t.Helper()
	spec, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "BOINCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, envChild+"="+string(spec))
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatalf("%s: start: %v", name, err)
	}
	pw.Close()
	p := &daemonProc{
		t: t, name: name, dir: o.DataDir, cmd: cmd,
		changed:  make(chan struct{}),
		readDone: make(chan struct{}),
		exited:   make(chan struct{}),
	}
	go func() {
		defer close(p.readDone)
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			l := parseLogLine(sc.Text())
			p.mu.Lock()
			p.lines = append(p.lines, l)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.state = cmd.ProcessState
		p.mu.Unlock()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		// Apps never hold the pipe (their stdout is /dev/null and stderr
		// a slot file), so the output ends with the process.
		select {
		case <-p.readDone:
		case <-time.After(10 * time.Second):
			t.Errorf("%s: output still open 10 s after exit", name)
			pr.Close()
		}
		for _, l := range p.snapshot() {
			if strings.Contains(l.Raw, "DATA RACE") {
				t.Errorf("%s: the race detector fired in the daemon:\n%s", name, p.tail(200))
				break
			}
		}
	})
	return p
}

func (p *daemonProc) snapshot() []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.lines)
}

// tail is the last n output lines, for failure messages.
func (p *daemonProc) tail(n int) string {
	lines := p.snapshot()
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("    ")
		b.WriteString(l.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// output is everything the process wrote.
func (p *daemonProc) output() string {
	var b strings.Builder
	for _, l := range p.snapshot() {
		b.WriteString(l.Raw)
		b.WriteByte('\n')
	}
	return b.String()
}

// find returns the first line matching pred so far.
func (p *daemonProc) find(pred func(logLine) bool) (logLine, bool) {
	for _, l := range p.snapshot() {
		if pred(l) {
			return l, true
		}
	}
	return logLine{}, false
}

// waitFor blocks until a line matching pred appears and returns it; it
// fails the test on timeout or when the process ends without it.
func (p *daemonProc) waitFor(what string, timeout time.Duration, pred func(logLine) bool) logLine {
	p.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	next := 0
	for {
		p.mu.Lock()
		for ; next < len(p.lines); next++ {
			if pred(p.lines[next]) {
				l := p.lines[next]
				p.mu.Unlock()
				return l
			}
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-p.readDone:
			if l, ok := p.find(pred); ok {
				return l
			}
			p.t.Fatalf("%s ended without logging %s:\n%s", p.name, what, p.tail(60))
		case <-deadline.C:
			p.t.Fatalf("%s: no %s within %v:\n%s", p.name, what, timeout, p.tail(60))
		}
	}
}

// waitLog waits for a log message containing sub.
func (p *daemonProc) waitLog(sub string, timeout time.Duration, kv ...string) logLine {
	p.t.Helper()
	return p.waitFor(strconv.Quote(sub), timeout, msgIs(sub, kv...))
}

func (p *daemonProc) signal(sig os.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatalf("%s: signal %v: %v; its last output:\n%s", p.name, sig, err, p.tail(60))
	}
}

// wait waits for the process to exit and returns its exit code (-1 when a
// signal ended it).
func (p *daemonProc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("%s still running after %v:\n%s", p.name, timeout, p.tail(60))
	}
	<-p.readDone
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state.ExitCode()
}

// kill9 ends the daemon with SIGKILL, as a crash or the OOM killer would.
func (p *daemonProc) kill9() {
	p.t.Helper()
	p.signal(syscall.SIGKILL)
	p.wait(10 * time.Second)
}

// stop ends the daemon with SIGTERM and expects a clean exit.
func (p *daemonProc) stop() {
	p.t.Helper()
	p.signal(syscall.SIGTERM)
	if code := p.wait(30 * time.Second); code != 0 {
		p.t.Errorf("%s: exit code %d after SIGTERM, want 0:\n%s", p.name, code, p.tail(40))
	}
	if _, ok := p.find(msgIs("boincd stopped")); !ok {
		p.t.Errorf("%s: no shutdown message after SIGTERM:\n%s", p.name, p.tail(20))
	}
}

// newDataDir makes a data directory whose slots are checked at the end of
// the test: no process may still work in one (an orphaned app).
func newDataDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoProcessesUnder(t, filepath.Join(dir, "slots")) })
	return dir
}

// processesUnder lists the processes whose working directory is at or
// below root (Linux /proc; empty elsewhere).
func processesUnder(root string) map[int]string {
	out := map[int]string{}
	for p := range testsupport.Processes() {
		if cwd := p.Cwd(); testsupport.Under(cwd, root) {
			out[int(p)] = cwd + ": " + strings.Join(p.Cmdline(), " ")
		}
	}
	return out
}

// processGroup reads a process's group id from /proc/PID/stat.
func processGroup(pid int) (int, error) {
	st, ok, err := testsupport.Proc(pid).Stat()
	if err == nil && !ok {
		err = fmt.Errorf("process %d: %w", pid, os.ErrNotExist)
	}
	return st.PGRP, err
}

// strangersIn lists the processes working in dir that are not in process
// group pgid (the task the daemon runs there now).
func strangersIn(dir string, pgid int) []string {
	var out []string
	for pid, what := range processesUnder(dir) {
		if g, err := processGroup(pid); err == nil && g != pgid {
			out = append(out, fmt.Sprintf("pid %d (group %d) %s", pid, g, what))
		}
	}
	return out
}

// checkNoProcessesUnder fails the test if a process still runs in root
// after a short grace (a refapp's last `sleep 1` may outlive a killed
// shell by up to a second), and kills what it finds.
func checkNoProcessesUnder(t *testing.T, root string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := processesUnder(root)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for pid, what := range left {
				t.Errorf("orphan process %d still running: %s", pid, what)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// project is a started test project server, closed at cleanup.
type project struct {
	*testproject.Server
	cfg testproject.Config
}

// startProject starts a testproject server; unset fields get test
// defaults: the refapp, no request delay.
func startProject(t *testing.T, cfg testproject.Config) *project {
	t.Helper()
	if len(cfg.Apps) == 0 {
		cfg.Apps = []testproject.App{testproject.DefaultApp()}
	}
	if cfg.RequestDelay == 0 {
		cfg.RequestDelay = -1
	}
	s, err := testproject.New(cfg)
	if err != nil {
		t.Fatalf("testproject.New: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("testproject.Start: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("closing test project: %v", err)
		}
	})
	return &project{Server: s, cfg: cfg}
}

// dirName is the project's directory under DATADIR/projects.
func (p *project) dirName() string { return boinc.EscapeProjectURL(p.URL()) }

// configSpec is what a test puts into DATADIR/boincd.toml.
type configSpec struct {
	projects            []*project
	dropResultsOnDetach bool
	// diskInterval is the checkpoint period given to apps (seconds);
	// 0 keeps the default.
	diskInterval float64
}

const accountKey = "e2e-account-key"

// holdReports keeps finished results unreported (with MaxReportDelay
// long): cc_config.xml's fetch_minimal_work, so that after its first work
// request a daemon asks for no more work, and no work request carries
// the results (CLIENT_STATE::scheduler_rpc_poll: fetch_minimal_work &&
// had_or_requested_work). A daemon started again on dir asks once more,
// and so reports them.
func holdReports(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "cc_config.xml"), ccConfigXML("<fetch_minimal_work>1</fetch_minimal_work>\n"))
}

func (c configSpec) toml() string {
	var b strings.Builder
	fmt.Fprintf(&b, "drop_results_on_detach = %v\n", c.dropResultsOnDetach)
	// CI runs the tests as root; privilege_test.go covers the refusal.
	b.WriteString("allow_root_apps = true\n")
	if c.diskInterval > 0 {
		fmt.Fprintf(&b, "\n[prefs]\ndisk_interval = %g\n", c.diskInterval)
	}
	for _, p := range c.projects {
		fmt.Fprintf(&b, "\n[[project]]\nurl = %q\nauthenticator = %q\n", p.URL(), accountKey)
	}
	return b.String()
}

func writeConfig(t *testing.T, dir string, c configSpec) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(c.toml()))
}

// writeFile replaces a file atomically, so a daemon reloading at the same
// moment never reads half of it.
func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// allReported says whether the server handed out want results and saw
// each of them reported and acked.
func allReported(st testproject.Stats, want int) bool {
	if len(st.Sent) < want {
		return false
	}
	acked := map[string]bool{}
	for _, a := range st.Acked {
		acked[a] = true
	}
	for _, name := range st.Sent {
		if st.Reported[name] == 0 || !acked[name] {
			return false
		}
	}
	return true
}

// waitAllReported waits until the project handed out want results and got
// every one reported and acked, while d runs.
func waitAllReported(t *testing.T, d *daemonProc, p *project, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !allReported(p.Stats(), want) {
		select {
		case <-d.exited:
			t.Fatalf("%s exited before every result was reported:\n%s", d.name, d.tail(60))
		default:
		}
		if time.Now().After(deadline) {
			st := p.Stats()
			t.Fatalf("after %v: sent %v, reported %v, acked %v; daemon log:\n%s", timeout, st.Sent, st.Reported, st.Acked, d.tail(80))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// outputFunc gives the expected content of a job's output file; nil skips
// the comparison.
type outputFunc func(testproject.Job) []byte

// refOutput is the refapp's output for jobs with inputs of the project's
// size, run with --seconds secs.
func refOutput(p *project, secs int) outputFunc {
	return func(j testproject.Job) []byte {
		return testproject.RefAppOutput(testproject.JobInput(j.N, p.cfg.Job.InputSize), secs)
	}
}

// checkReportedOnce asserts the server-side outcome: want results sent,
// each reported exactly once with success, acked exactly once, outputs
// uploaded and correct, and no protocol error.
func checkReportedOnce(t *testing.T, p *project, want int, output outputFunc) {
	t.Helper()
	checkReportedOnceBut(t, p, want, output, nil)
}

// checkReportedOnceBut is checkReportedOnce allowing result name windows[name]
// more reports and acks: the kills that came while the server had its
// report and the client's state did not yet have the ack (the client
// cannot know whether a request it died in reached the server, and must
// report again, as the C++ client does).
func checkReportedOnceBut(t *testing.T, p *project, want int, output outputFunc, windows map[string]int) {
	t.Helper()
	st := p.Stats()
	if len(st.Sent) != want {
		t.Errorf("server sent %d results, want %d: %v", len(st.Sent), want, st.Sent)
	}
	for _, e := range st.Errors {
		t.Errorf("server saw a protocol error: %s", e)
	}
	acks := map[string]int{}
	for _, a := range st.Acked {
		acks[a]++
	}
	for _, name := range st.Sent {
		if n := st.Reported[name]; n < 1 || n > 1+windows[name] {
			t.Errorf("result %s reported %d times, want exactly once (plus %d for kills inside its report exchange)", name, n, windows[name])
		}
		if a := acks[name]; a < 1 || a > 1+windows[name] {
			t.Errorf("result %s acked %d times, want once (plus %d for kills inside its report exchange)", name, a, windows[name])
		}
		rr := st.ReportedResults[name]
		if rr.ExitStatus != 0 {
			t.Errorf("result %s reported exit status %d; stderr:\n%s", name, rr.ExitStatus, rr.StderrOut)
		}
		job := st.Jobs[name]
		for _, out := range job.OutputFiles {
			got, ok := st.Uploaded[out]
			if !ok {
				t.Errorf("result %s: output %s never uploaded", name, out)
				continue
			}
			if output != nil {
				if want := output(job); !bytes.Equal(got, want) {
					t.Errorf("result %s: output %s is\n%q\nwant\n%q", name, out, got, want)
				}
			}
		}
	}
}

// leftovers lists what a finished run must not leave in the data
// directory: slot directories, and files of results the projects acked.
func leftovers(dir string, projects ...*project) []string {
	var out []string
	if entries, err := os.ReadDir(filepath.Join(dir, "slots")); err == nil {
		for _, e := range entries {
			out = append(out, "slots/"+e.Name())
		}
	}
	for _, p := range projects {
		st := p.Stats()
		acked := map[string]bool{}
		for _, a := range st.Acked {
			acked[a] = true
		}
		for name, j := range st.Jobs {
			if !acked[name] {
				continue
			}
			files := append([]string{j.InputFile}, j.OutputFiles...)
			for _, f := range files {
				if f == "" {
					continue
				}
				rel := filepath.Join("projects", p.dirName(), f)
				if _, err := os.Lstat(filepath.Join(dir, rel)); err == nil {
					out = append(out, rel)
				}
			}
		}
	}
	return out
}

// waitNoLeftovers waits until the daemon has cleaned up after the acked
// results (it does so right after processing the ack).
func waitNoLeftovers(t *testing.T, dir string, timeout time.Duration, projects ...*project) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		left := leftovers(dir, projects...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("left behind in the data directory after every result was acked: %v", left)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dirExists reports whether path exists.
func dirExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readAll reads a file or fails.
func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHarnessSeesStrayProcesses checks the orphan detection the other
// tests rely on: a process working in a slot is found, with its group.
func TestHarnessSeesStrayProcesses(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("no /proc: orphan detection is Linux-only")
	}
	slot := filepath.Join(newDataDir(t), "slots", "0")
	if err := os.MkdirAll(slot, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "30")
	cmd.Dir = slot
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	pid := cmd.Process.Pid
	if _, ok := processesUnder(filepath.Dir(slot))[pid]; !ok {
		t.Errorf("process %d working in %s not found", pid, slot)
	}
	if g, err := processGroup(pid); err != nil || g != pid {
		t.Errorf("process group of %d: %d, %v; want %d", pid, g, err, pid)
	}
	if s := strangersIn(slot, pid); len(s) != 0 {
		t.Errorf("the process's own group counted as strangers: %v", s)
	}
	if s := strangersIn(slot, pid+1); len(s) != 1 {
		t.Errorf("strangers in another group's slot: %v, want the sleep", s)
	}
}
