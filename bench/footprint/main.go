//go:build linux

// Command footprint measures what boincd costs a host that runs it idle,
// side by side with the C++ BOINC client when one is installed: both are
// attached to the same in-repo test project, which gives no work (its only
// app is a GPU app and both clients run without GPUs), and after a settle
// time the command reads each process's RSS from /proc/PID/status and its
// CPU ticks (utime+stime of /proc/PID/stat) over a window. Then, as when
// a volunteer keeps BOINC Manager or boinctui open, a GUI RPC client polls
// each of them every second (get_cc_status, get_state, get_messages) for
// -poll, and RSS and CPU are read again: the state a daemon's heap
// settles in once it collects garbage, which an idle minute never shows
// (Go collects nothing below a 4 MB heap by default).
//
//	go run ./bench/footprint [-boinc /usr/bin/boinc] [-window 20s] [-poll 2m]
//
// It builds boincd from this checkout. Run as root, both clients run as
// user boinc (setpriv), as the packages run them. It is a benchmark, not
// a test: the numbers depend on the host, so it prints them and the
// ratios and leaves judging them to the reader.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/bench/internal/clientproc"
	guiclient "github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
)

const accountKey = "footprint-account-key"

func main() {
	boincBin := flag.String("boinc", "/usr/bin/boinc", "the C++ client (skipped when absent)")
	settle := flag.Duration("settle", 15*time.Second, "time after GUI RPC answers before measuring, so the first scheduler RPC and start-up work are over")
	window := flag.Duration("window", 20*time.Second, "CPU measurement window")
	runAs := flag.String("user", "boinc", "user both clients run as when started by root (\"\" keeps root)")
	straceFor := flag.Duration("strace", 0, "after the CPU window, count each client's system calls (strace -f -c) for this long")
	poll := flag.Duration("poll", 2*time.Minute, "then poll each client's GUI RPC every second as a Manager does for this long, and measure again (0: skip)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *boincBin, *runAs, *settle, *window, *straceFor, *poll); err != nil {
		fmt.Fprintln(os.Stderr, "footprint:", err)
		os.Exit(1)
	}
}

// client is one measured process.
type client struct {
	name string
	cmd  *exec.Cmd
	dir  string
	port int
}

func run(ctx context.Context, boincBin, runAs string, settle, window, straceFor, poll time.Duration) error {
	tmp, err := clientproc.TempDir("footprint-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	bin := filepath.Join(tmp, "boincd")
	if err := clientproc.BuildBoincd(ctx, bin); err != nil {
		return err
	}

	// A GPU-only app: neither client (no GPUs) is ever sent a job, so
	// both sit idle attached to a live project.
	app := testproject.DefaultApp()
	app.NGPUs = 1
	proj, err := testproject.New(testproject.Config{Apps: []testproject.App{app}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("test project: %w", err)
	}
	if err := proj.Start(); err != nil {
		return fmt.Errorf("test project: %w", err)
	}
	defer proj.Close()

	acct, err := clientproc.RunAs(runAs)
	if err != nil {
		return err
	}

	var clients []*client
	defer func() {
		for _, c := range clients {
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			_ = c.cmd.Wait()
		}
	}()
	start := func(name string, dir string, args ...string) (*client, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if acct != nil {
			if err := acct.Own(dir); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			args = acct.Setpriv(args)
		}
		log, err := os.Create(filepath.Join(tmp, name+".log"))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer log.Close()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = dir
		cmd.Stdout, cmd.Stderr = log, log
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		c := &client{name: name, cmd: cmd, dir: dir}
		clients = append(clients, c)
		return c, nil
	}

	port, err := clientproc.FreePort()
	if err != nil {
		return err
	}
	ddir := filepath.Join(tmp, "boincd-data")
	if err := os.MkdirAll(ddir, 0o755); err != nil {
		return fmt.Errorf("boincd data dir: %w", err)
	}
	conf := fmt.Sprintf("[[project]]\nurl = %q\nauthenticator = %q\n", proj.URL(), accountKey)
	if err := os.WriteFile(filepath.Join(ddir, "boincd.toml"), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("boincd config: %w", err)
	}
	bd, err := start("boincd", ddir, bin, "run", "--dir", ddir, "--gui_rpc_port", strconv.Itoa(port), "--no_gpus", "--skip_cpu_benchmarks")
	if err != nil {
		return err
	}
	bd.port = port

	if _, err := os.Stat(boincBin); err == nil {
		port, err := clientproc.FreePort()
		if err != nil {
			return err
		}
		cdir := filepath.Join(tmp, "cpp-data")
		cc, err := start("C++ client", cdir, boincBin, "--dir", cdir, "--no_gpus", "--skip_cpu_benchmarks", "--no_info_fetch",
			"--gui_rpc_port", strconv.Itoa(port), "--allow_multiple_clients", "--attach_project", proj.URL(), accountKey)
		if err != nil {
			return err
		}
		cc.port = port
	} else {
		fmt.Printf("C++ client %s not found: boincd only\n", boincBin)
	}

	for _, c := range clients {
		if err := clientproc.WaitPort(ctx, c.port, 60*time.Second); err != nil {
			return fmt.Errorf("%s: GUI RPC: %w (log: %s)", c.name, err, filepath.Join(tmp, c.name+".log"))
		}
	}
	select {
	case <-time.After(settle):
	case <-ctx.Done():
		return ctx.Err()
	}
	if st := proj.Stats(); st.RPCs < len(clients) {
		return fmt.Errorf("only %d scheduler RPCs reached the project from %d clients", st.RPCs, len(clients))
	}

	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("host %s, load %s", host, load)
	res, err := measure(ctx, clients, window, nil)
	if err != nil {
		return err
	}
	fmt.Printf("idle, attached to one project with no work; CPU over %s (ticks of 1/100 s)\n\n", window)
	printTable(clients, res)
	if poll > 0 {
		res, err := measure(ctx, clients, poll, func(ctx context.Context) error { return pollLikeManager(ctx, clients) })
		if err != nil {
			return err
		}
		load, _ := os.ReadFile("/proc/loadavg")
		fmt.Printf("\npolled every second over GUI RPC as by BOINC Manager (get_cc_status, get_state, get_messages) for %s; CPU over that time; load %s\n", poll, load)
		printTable(clients, res)
	}
	if straceFor > 0 {
		// Separately from the CPU window: tracing costs the traced
		// process CPU time.
		for _, c := range clients {
			out, err := exec.CommandContext(ctx, "timeout", "-s", "INT", strconv.Itoa(int(straceFor.Seconds())),
				"strace", "-f", "-c", "-p", strconv.Itoa(c.cmd.Process.Pid)).CombinedOutput()
			if err != nil && len(out) == 0 {
				return fmt.Errorf("strace %s: %w", c.name, err)
			}
			fmt.Printf("\n%s, system calls over %s:\n%s", c.name, straceFor, out)
		}
	}
	return nil
}

// sample is one client's figures at the end of a window.
type sample struct {
	rss   clientproc.RSS
	ticks int64
}

// measure reads each client's CPU ticks over d, while during runs (when
// given) until d ends, and the RSS at the end.
func measure(ctx context.Context, clients []*client, d time.Duration, during func(context.Context) error) ([]sample, error) {
	before := make([]int64, len(clients))
	for i, c := range clients {
		var err error
		if before[i], err = clientproc.CPUTicks(c.cmd.Process.Pid); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if during != nil {
		if err := during(wctx); err != nil && wctx.Err() == nil {
			return nil, err
		}
	}
	<-wctx.Done()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := make([]sample, len(clients))
	for i, c := range clients {
		t, err := clientproc.CPUTicks(c.cmd.Process.Pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		res[i].ticks = t - before[i]
		if res[i].rss, err = clientproc.ReadRSS(c.cmd.Process.Pid); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
	}
	return res, nil
}

func printTable(clients []*client, res []sample) {
	fmt.Printf("%-12s %10s %10s %10s %10s\n", "", "RSS MB", "anon MB", "file MB", "CPU ticks")
	for i, c := range clients {
		s := res[i]
		fmt.Printf("%-12s %10.1f %10.1f %10.1f %10d\n", c.name, mb(s.rss.Total), mb(s.rss.Anon), mb(s.rss.File), s.ticks)
	}
	if len(clients) == 2 {
		ratio := func(a, b int64) string {
			if b == 0 {
				if a == 0 {
					return "1.00"
				}
				return "inf"
			}
			return fmt.Sprintf("%.2f", float64(a)/float64(b))
		}
		fmt.Printf("%-12s %10s %10s %10s %10s\n", "boincd/C++", ratio(res[0].rss.Total, res[1].rss.Total), ratio(res[0].rss.Anon, res[1].rss.Anon),
			ratio(res[0].rss.File, res[1].rss.File), ratio(res[0].ticks, res[1].ticks))
	}
}

// pollLikeManager asks each client, once a second until ctx ends, what
// BOINC Manager asks an idle client each second, on one authorized
// connection per client as the Manager keeps.
func pollLikeManager(ctx context.Context, clients []*client) error {
	conns := make([]*guiclient.Client, len(clients))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, c := range clients {
		pw, err := os.ReadFile(filepath.Join(c.dir, "gui_rpc_auth.cfg"))
		if err != nil {
			return fmt.Errorf("%s: GUI RPC password: %w", c.name, err)
		}
		conn, err := guiclient.Dial(ctx, fmt.Sprintf("127.0.0.1:%d", c.port))
		if err != nil {
			return fmt.Errorf("%s: GUI RPC: %w", c.name, err)
		}
		conns[i] = conn
		if err := conn.Authorize(ctx, strings.TrimSpace(string(pw))); err != nil {
			return fmt.Errorf("%s: GUI RPC authorization: %w", c.name, err)
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		for i, conn := range conns {
			for _, req := range []string{"<get_cc_status/>", "<get_state/>", "<get_messages>\n<seqno>0</seqno>\n</get_messages>"} {
				if _, err := conn.Call(ctx, req); err != nil {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("%s: %s: %w", clients[i].name, req, err)
				}
			}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

func mb(kb int64) float64 { return float64(kb) / 1000 }
