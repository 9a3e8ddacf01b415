//go:build linux

package wine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	// envRequire=1 turns every "cannot run here" skip into a failure (CI).
	envRequire = "BOINCD_REQUIRE_WINE"
	// envReport names a file the result table is written to, for CI to
	// print (go test shows a passing package's log only with -v).
	envReport = "BOINCD_WINE_REPORT"
)

// unavailable ends the test when it cannot run here: a skip, or a failure
// under BOINCD_REQUIRE_WINE=1 so CI never skips silently.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(envRequire) == "1" {
		t.Fatalf("Wine test cannot run: %s (%s=1: this is a failure, not a skip)", msg, envRequire)
	}
	t.Skipf("Wine test skipped: %s (%s=1 makes this a failure)", msg, envRequire)
}

// tools are the Linux programs the test needs.
type tools struct {
	wine, wineserver string // Wine 8's 64-bit loader and its server
	as, ld           string // mingw-w64 binutils, for bcryptprimitives.dll
	boinccmd         string
	gobin            string
}

// findTools looks for every tool and calls unavailable naming all that
// are missing, with the Debian package that has each.
func findTools(t *testing.T) tools {
	t.Helper()
	var missing []string
	find := func(pkg string, candidates ...string) string {
		for _, c := range candidates {
			if strings.HasPrefix(c, "/") {
				if fi, err := os.Stat(c); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
					return c
				}
				continue
			}
			if p, err := exec.LookPath(c); err == nil {
				return p
			}
		}
		missing = append(missing, fmt.Sprintf("%s (package %s)", candidates[len(candidates)-1], pkg))
		return ""
	}
	tl := tools{
		// Debian's wine64 package puts the loader in /usr/lib/wine and
		// nothing on PATH; /usr/bin/wine (package wine) prefers a wine32.
		wine:       find("wine64", "/usr/lib/wine/wine64", "wine64"),
		wineserver: find("wine64", "/usr/lib/wine/wineserver64", "/usr/lib/wine/wineserver", "wineserver"),
		as:         find("binutils-mingw-w64-x86-64", "x86_64-w64-mingw32-as"),
		ld:         find("binutils-mingw-w64-x86-64", "x86_64-w64-mingw32-ld"),
		boinccmd:   find("boinc-client", "boinccmd"),
		gobin:      find("golang", "go"),
	}
	if len(missing) > 0 {
		unavailable(t, "missing %s", strings.Join(missing, ", "))
	}
	return tl
}

// moduleRoot is the directory holding go.mod above the working directory.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the working directory")
		}
		dir = parent
	}
}

// ---------------------------------------------------------------- the Wine prefix

// winEnv is one fresh WINEPREFIX and what runs in it.
type winEnv struct {
	tl     tools
	root   string // the test's temporary directory
	prefix string // WINEPREFIX, under root
	env    []string
	logs   string // command output files, under root

	boincd, demo string // Linux paths of the Windows binaries (in drive_c)

	mu      sync.Mutex
	procs   []*proc // long-running Wine processes this test started, the holder first
	nlog    int
	holdIn  io.WriteCloser
	stopped bool
}

// proc is a started process whose end is awaited once, in the background.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{} // closed when it has ended; err is set then
	err  error
}

func newProc(cmd *exec.Cmd) *proc {
	p := &proc{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p
}

// wait waits up to timeout for p to end: ended is false when it is still
// running, err is its exit error.
func (p *proc) wait(timeout time.Duration) (ended bool, err error) {
	select {
	case <-p.done:
		return true, p.err
	case <-time.After(timeout):
		return false, nil
	}
}

// wineEnviron is the environment of every Wine process: the test's, less
// what would change what boincd does (BOINCD_* attaches projects and
// overrides the config) or where Wine draws and looks, plus the prefix.
// WINEDLLOVERRIDES keeps wineboot from installing Mono and Gecko (a
// prompt, or minutes, and nothing here needs them).
func wineEnviron(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "BOINCD_") || strings.HasPrefix(k, "WINE") || k == "DISPLAY" || k == "WAYLAND_DISPLAY" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "WINEPREFIX="+prefix, "WINEDEBUG=-all", "WINEDLLOVERRIDES=mscoree,mshtml=")
}

// drive is the Linux path of a path on the prefix's drive C:.
func (w *winEnv) drive(rel ...string) string {
	return filepath.Join(append([]string{w.prefix, "drive_c"}, rel...)...)
}

// winPath is the Windows path (C:\...) of a Linux path on drive C:.
func (w *winEnv) winPath(linux string) string {
	rel, err := filepath.Rel(w.drive(), linux)
	if err != nil || strings.HasPrefix(rel, "..") {
		panic(fmt.Sprintf("%s is not on the prefix's drive C:", linux))
	}
	return `C:\` + strings.ReplaceAll(rel, "/", `\`)
}

// command is wine64 with args, its output going to a new log file (a
// file, not a pipe: the first Wine process of a session starts wineserver
// and services.exe, which inherit its stdout and would keep a pipe open).
func (w *winEnv) command(ctx context.Context, name string, args ...string) (*exec.Cmd, string, error) {
	w.mu.Lock()
	w.nlog++
	logPath := filepath.Join(w.logs, fmt.Sprintf("%02d-%s.log", w.nlog, name))
	w.mu.Unlock()
	f, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	cmd := exec.CommandContext(ctx, w.tl.wine, args...)
	cmd.Env = w.env
	cmd.Dir = w.root
	cmd.Stdout, cmd.Stderr = f, f
	cmd.WaitDelay = 5 * time.Second
	return cmd, logPath, nil
}

// run runs wine64 args to the end (at most timeout) and returns its
// output and exit error.
func (w *winEnv) run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd, logPath, err := w.command(ctx, name, args...)
	if err != nil {
		return "", err
	}
	err = cmd.Run()
	cmd.Stdout.(*os.File).Close()
	out, _ := os.ReadFile(logPath)
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (after %v)", ctx.Err(), timeout)
	}
	return string(out), err
}

// start starts a long-running wine64 process; it is killed by pid at the
// end of the test if it is still running then.
func (w *winEnv) start(name string, args ...string) (*proc, string, error) {
	cmd, logPath, err := w.command(context.Background(), name, args...)
	if err != nil {
		return nil, "", err
	}
	p, err := w.track(cmd)
	return p, logPath, err
}

// track starts cmd and adds it to the processes stop ends.
func (w *winEnv) track(cmd *exec.Cmd) (*proc, error) {
	err := cmd.Start()
	cmd.Stdout.(*os.File).Close() // the child has its own copy
	if err != nil {
		return nil, err
	}
	p := newProc(cmd)
	w.mu.Lock()
	w.procs = append(w.procs, p)
	w.mu.Unlock()
	return p, nil
}

// newWinEnv makes a fresh prefix under root with wineboot -i, copies the
// DLL into System32 and starts the holder process. The returned duration
// is wineboot's.
func newWinEnv(t *testing.T, tl tools, root, dll string) (*winEnv, time.Duration) {
	t.Helper()
	w := &winEnv{tl: tl, root: root, prefix: filepath.Join(root, "prefix"), logs: filepath.Join(root, "logs")}
	w.env = wineEnviron(w.prefix)
	if err := os.MkdirAll(w.logs, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.stop(t) })
	stopOnSignal(w)
	start := time.Now()
	out, err := w.run(2*time.Minute, "wineboot", "wineboot", "-i")
	if err != nil {
		t.Fatalf("wineboot -i: %v\n%s", err, out)
	}
	// Then wait for that first session to end (wineserver -w, about 5 s):
	// a process started while it winds down gets a second services.exe
	// beside the first, and the two SCMs answer "Service database
	// locked" and "Could not get handle to service" in turn.
	if out, err := w.wineserver(time.Minute, "-w"); err != nil {
		t.Fatalf("wineserver -w after wineboot: %v\n%s", err, out)
	}
	took := time.Since(start)
	sys32 := w.drive("windows", "system32")
	if _, err := os.Stat(filepath.Join(sys32, "kernel32.dll")); err != nil {
		t.Fatalf("wineboot -i made no System32: %v\n%s", err, out)
	}
	// The Go runtime loads bcryptprimitives.dll from System32 only.
	if err := copyFile(dll, filepath.Join(sys32, "bcryptprimitives.dll")); err != nil {
		t.Fatal(err)
	}
	// The holder: a Wine user process for the whole test. Without one
	// Wine ends services.exe, and the services with it, a few seconds
	// after the last user process, and every command would start
	// wineserver anew. cmd.exe reads its stdin, a pipe this test holds.
	h, _, err := w.command(context.Background(), "holder", "cmd.exe")
	if err != nil {
		t.Fatal(err)
	}
	in, err := h.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.holdIn = in
	w.mu.Unlock()
	if _, err := w.track(h); err != nil {
		t.Fatalf("starting the holder (wine64 cmd.exe): %v", err)
	}
	return w, took
}

// stop ends everything this test started in the prefix: wineserver -k
// kills every process of the prefix (services, apps), then the holder and
// the long-running wine64 processes are waited for, and killed by pid if
// they are still there.
func (w *winEnv) stop(t *testing.T) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.stopped = true
	in, procs := w.holdIn, w.procs
	w.mu.Unlock()
	if in != nil {
		in.Close()
	}
	// -k, then -w: the prefix (hundreds of MB) is removed next, and a
	// server still writing its registry files would make that fail.
	for _, arg := range []string{"-k", "-w"} {
		if out, err := w.wineserver(30*time.Second, arg); err != nil && t != nil {
			// Exit 1 only says no wineserver was running.
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Logf("wineserver %s: %v\n%s", arg, err, out)
			}
		}
	}
	for _, p := range procs {
		if ended, _ := p.wait(10 * time.Second); !ended {
			_ = p.cmd.Process.Kill()
			p.wait(5 * time.Second)
		}
	}
}

// wineserver runs the prefix's wineserver with args (-k: kill every
// process of the prefix; -w: wait until the server has ended).
func (w *winEnv) wineserver(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.tl.wineserver, args...)
	cmd.Env = w.env
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// stopOnSignal runs w.stop when the test binary gets SIGINT or SIGTERM,
// so an interrupted run leaves no Wine processes behind.
func stopOnSignal(w *winEnv) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "wine test: %v: stopping the Wine processes of %s\n", sig, w.prefix)
		w.stop(nil)
		os.Exit(2)
	}()
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// ---------------------------------------------------------------- builds

// buildWindows builds boincd.exe and boincd-demo.exe into dir.
func buildWindows(t *testing.T, tl tools, modRoot, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// -pgo=off as .ci/run's cross build, so this is a link from its cache.
	cmd := exec.CommandContext(ctx, tl.gobin, "build", "-pgo=off", "-o", dir+"/", "./cmd/boincd", "./cmd/boincd-demo")
	cmd.Dir = modRoot
	cmd.Env = append(os.Environ(), "GOOS=windows", "GOARCH=amd64", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("GOOS=windows go build ./cmd/boincd ./cmd/boincd-demo: %v\n%s", err, out)
	}
}

// buildDLL assembles and links testdata's bcryptprimitives.dll into dir.
func buildDLL(t *testing.T, tl tools, dir string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "bcryptprimitives"))
	if err != nil {
		t.Fatal(err)
	}
	obj := filepath.Join(dir, "dllmain.o")
	dll := filepath.Join(dir, "bcryptprimitives.dll")
	for _, c := range [][]string{
		{tl.as, "-o", obj, filepath.Join(src, "dllmain.s")},
		{tl.ld, "--dll", "-e", "DllMain", "--subsystem", "windows", "-o", dll, obj, filepath.Join(src, "bcryptprimitives.def")},
	} {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(c, " "), err, out)
		}
	}
	return dll
}

// ---------------------------------------------------------------- boinccmd

// boinccmd drives one daemon's GUI RPC from Linux.
type boinccmd struct {
	bin, addr, pass string
}

func (c boinccmd) exec(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append([]string{"--host", c.addr, "--passwd", c.pass}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// task is one task of --get_tasks, its fields by name.
type task map[string]string

var blockStart = regexp.MustCompile(`(?m)^\d+\) -----------\n`)

// tasks runs --get_tasks; the error is boinccmd's (no daemon yet, say).
func (c boinccmd) tasks() ([]task, string, error) {
	out, err := c.exec("--get_tasks")
	if err != nil {
		return nil, out, err
	}
	var ts []task
	for _, b := range blockStart.Split(out, -1)[1:] {
		tk := task{}
		for _, line := range strings.Split(b, "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), ": "); ok {
				if _, seen := tk[k]; !seen {
					tk[k] = strings.TrimSpace(v)
				}
			}
		}
		ts = append(ts, tk)
	}
	return ts, out, nil
}

func (tk task) num(key string) float64 {
	f, _ := strconv.ParseFloat(tk[key], 64)
	return f
}

// waitTask polls --get_tasks every 250 ms until ok accepts the one task
// (with the daemon's errors as "not yet"), and returns it; on timeout the
// error carries the last output.
func (c boinccmd) waitTask(what string, timeout time.Duration, ok func(task) bool) (task, error) {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ts, out, err := c.tasks()
		last = out
		if err == nil && len(ts) == 1 && ok(ts[0]) {
			return ts[0], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no %s within %v; last boinccmd --get_tasks (err %v):\n%s", what, timeout, err, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// freePort is a TCP port on 127.0.0.1 free right now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ---------------------------------------------------------------- the report

// report is the table the test ends with: what was checked, how it went,
// how long it took.
type report struct {
	mu   sync.Mutex
	rows [][3]string
}

func (r *report) add(what, result string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, [3]string{what, result, fmt.Sprintf("%.1f", d.Seconds())})
}

// step runs f as subtest name, one row of the table: ok, FAIL or
// skipped. It returns whether f passed (later steps that need what f
// did are not run after a failure).
func (r *report) step(t *testing.T, name, what string, f func(t *testing.T)) bool {
	t.Helper()
	start := time.Now()
	res := "FAIL"
	ok := t.Run(name, func(t *testing.T) {
		defer func() {
			switch {
			case t.Skipped():
				res = "skipped"
			case !t.Failed():
				res = "ok"
			}
		}()
		f(t)
	})
	r.add(what, res, time.Since(start))
	return ok
}

func (r *report) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := [3]int{len("what"), len("result"), len("seconds")}
	for _, row := range r.rows {
		for i, c := range row {
			w[i] = max(w[i], len(c))
		}
	}
	var b strings.Builder
	line := func(c [3]string) { fmt.Fprintf(&b, "  %-*s  %-*s  %*s\n", w[0], c[0], w[1], c[1], w[2], c[2]) }
	line([3]string{"what", "result", "seconds"})
	for _, row := range r.rows {
		line(row)
	}
	return b.String()
}

// steadyCPU waits until the one task's "current CPU time" has stayed the
// same for hold, at most timeout, and returns it.
func (c boinccmd) steadyCPU(hold, timeout time.Duration) (float64, error) {
	deadline := time.Now().Add(timeout)
	cpu, since := -1.0, time.Now()
	for {
		ts, out, err := c.tasks()
		if err == nil && len(ts) == 1 {
			if v := ts[0].num("current CPU time"); v != cpu {
				cpu, since = v, time.Now()
			} else if time.Since(since) >= hold {
				return cpu, nil
			}
		}
		if time.Now().After(deadline) {
			return cpu, fmt.Errorf("CPU time still moving after %v (last %.2f s); boinccmd --get_tasks (err %v):\n%s", timeout, cpu, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
