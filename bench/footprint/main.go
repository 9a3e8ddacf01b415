//go:build linux

// Command footprint measures what boincd costs a host that runs it idle,
// side by side with the C++ BOINC client when one is installed: both are
// attached to the same in-repo test project, which gives no work (its only
// app is a GPU app and both clients run without GPUs), and after a settle
// time the command reads each process's RSS from /proc/PID/status and its
// CPU ticks (utime+stime of /proc/PID/stat) over a window.
//
//	go run ./bench/footprint [-boinc /usr/bin/boinc] [-window 20s]
//
// It builds boincd from this checkout. Run as root, both clients run as
// user boinc (setpriv), as the packages run them. It is a benchmark, not
// a test: the numbers depend on the host, so it prints them and the
// ratios and leaves judging them to the reader.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

const accountKey = "footprint-account-key"

func main() {
	boincBin := flag.String("boinc", "/usr/bin/boinc", "the C++ client (skipped when absent)")
	settle := flag.Duration("settle", 15*time.Second, "time after GUI RPC answers before measuring, so the first scheduler RPC and start-up work are over")
	window := flag.Duration("window", 20*time.Second, "CPU measurement window")
	runAs := flag.String("user", "boinc", "user both clients run as when started by root (\"\" keeps root)")
	straceFor := flag.Duration("strace", 0, "after the CPU window, count each client's system calls (strace -f -c) for this long")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *boincBin, *runAs, *settle, *window, *straceFor); err != nil {
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

func run(ctx context.Context, boincBin, runAs string, settle, window, straceFor time.Duration) error {
	tmp, err := os.MkdirTemp("", "footprint-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}

	bin := filepath.Join(tmp, "boincd")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/boincd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building boincd: %w", err)
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

	var uid, gid int = -1, -1
	if os.Geteuid() == 0 && runAs != "" {
		u, err := user.Lookup(runAs)
		if err != nil {
			return fmt.Errorf("user %s: %w", runAs, err)
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
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
		if uid >= 0 {
			if err := chownAll(dir, uid, gid); err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			args = append([]string{"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid), "--init-groups", "--"}, args...)
			args = append([]string{"setpriv"}, args...)
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

	port, err := freePort()
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
		port, err := freePort()
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
		if err := waitPort(ctx, c.port, 60*time.Second); err != nil {
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

	type sample struct {
		rss, anon, file int64 // kB
		ticks           int64
	}
	before := make([]int64, len(clients))
	for i, c := range clients {
		if before[i], err = cpuTicks(c.cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	select {
	case <-time.After(window):
	case <-ctx.Done():
		return ctx.Err()
	}
	res := make([]sample, len(clients))
	for i, c := range clients {
		t, err := cpuTicks(c.cmd.Process.Pid)
		if err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
		res[i].ticks = t - before[i]
		if res[i].rss, res[i].anon, res[i].file, err = rss(c.cmd.Process.Pid); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}

	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("host %s, load %s", host, load)
	fmt.Printf("idle, attached to one project with no work; CPU over %s (ticks of 1/100 s)\n\n", window)
	fmt.Printf("%-12s %10s %10s %10s %10s\n", "", "RSS MB", "anon MB", "file MB", "CPU ticks")
	for i, c := range clients {
		s := res[i]
		fmt.Printf("%-12s %10.1f %10.1f %10.1f %10d\n", c.name, mb(s.rss), mb(s.anon), mb(s.file), s.ticks)
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
		fmt.Printf("%-12s %10s %10s %10s %10s\n", "boincd/C++", ratio(res[0].rss, res[1].rss), ratio(res[0].anon, res[1].anon),
			ratio(res[0].file, res[1].file), ratio(res[0].ticks, res[1].ticks))
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

func mb(kb int64) float64 { return float64(kb) / 1000 }

// cpuTicks is utime+stime of /proc/PID/stat, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu ticks: %w", err)
	}
	// The command name may hold spaces: fields count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu ticks: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu ticks: malformed /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu ticks: %w", err)
	}
	return ut + st, nil
}

// rss reads VmRSS, RssAnon and RssFile (kB) of /proc/PID/status.
func rss(pid int) (total, anon, file int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, fmt.Errorf("rss: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			total = n
		case "RssAnon":
			anon = n
		case "RssFile":
			file = n
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, 0, fmt.Errorf("rss: %w", err)
	}
	return total, anon, file, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitPort(ctx context.Context, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d not answering after %s: %w", port, timeout, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func chownAll(dir string, uid, gid int) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}
