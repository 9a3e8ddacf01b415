//go:build linux

// Command startup measures how fast boincd and the C++ BOINC client
// answer GUI RPC, side by side on the same host: on a first start (an
// empty data directory) and on a steady start (the state the first start
// left), each several times, and prints the medians and the idle RSS
// after a steady start.
//
//	go run ./bench/startup                 # builds ./cmd/boincd, finds boinc on PATH
//	go run ./bench/startup -boincd BIN -boinc '' -runs 9
//
// As root both clients run as -user (boincd refuses to run science apps
// as root, and a root C++ client is not how either is deployed), through
// setpriv. "Answers" is a complete exchange_versions reply on the GUI RPC
// port, not only an accepted connection: a listener that does not serve
// yet must not count. Targets (issue 18): boincd's first start at most
// half the C++ client's, its steady start at most 0.3 s.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/bench/internal/clientproc"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bench/startup:", err)
		os.Exit(1)
	}
}

type options struct {
	runs         int
	boincd       string
	boinc        string
	user         string
	settle, idle time.Duration
	timeout      time.Duration
}

// client is one program under test: how to start it on a data directory
// and a GUI RPC port.
type client struct {
	name string
	args func(dir string, port int) []string
}

// result holds one client's measurements.
type result struct {
	first, steady []time.Duration
	rss           clientproc.RSS
}

func run() error {
	var o options
	flag.IntVar(&o.runs, "runs", 5, "starts of each kind per client")
	flag.StringVar(&o.boincd, "boincd", "", "boincd binary (default: go build ./cmd/boincd)")
	flag.StringVar(&o.boinc, "boinc", "boinc", "C++ client binary; empty: boincd alone")
	flag.StringVar(&o.user, "user", "boinc", "as root, run both clients as this user (setpriv)")
	flag.DurationVar(&o.settle, "settle", 5*time.Second, "after a first start answers, let it run this long (benchmarks, state) before stopping it")
	flag.DurationVar(&o.idle, "idle", 15*time.Second, "after the last steady start, wait this long, then read the RSS")
	flag.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up on a start after this long")
	flag.Parse()
	if o.runs < 1 {
		return fmt.Errorf("-runs %d: want at least 1", o.runs)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	work, err := clientproc.TempDir("boincd-startup-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if o.boincd == "" {
		o.boincd = filepath.Join(work, "boincd")
		if err := clientproc.BuildBoincd(ctx, o.boincd); err != nil {
			return err
		}
	}
	clients := []client{{name: "boincd", args: func(dir string, port int) []string {
		return []string{o.boincd, "--dir", dir, "--gui_rpc_port", strconv.Itoa(port)}
	}}}
	if o.boinc != "" {
		if path, err := exec.LookPath(o.boinc); err == nil {
			clients = append(clients, client{name: "C++ client", args: func(dir string, port int) []string {
				return []string{path, "--dir", dir, "--gui_rpc_port", strconv.Itoa(port), "--allow_multiple_clients"}
			}})
		} else {
			fmt.Fprintf(os.Stderr, "bench/startup: no C++ client (%v): boincd alone\n", err)
		}
	}
	acct, err := clientproc.RunAs(o.user)
	if err != nil {
		return err
	}

	results := make([]result, len(clients))
	for i, c := range clients {
		for n := range o.runs {
			dir := filepath.Join(work, fmt.Sprintf("%s-%d", strings.ReplaceAll(c.name, " ", "_"), n))
			if err := os.Mkdir(dir, 0o755); err != nil {
				return fmt.Errorf("data directory: %w", err)
			}
			if acct != nil {
				if err := acct.Own(dir); err != nil {
					return fmt.Errorf("data directory: %w", err)
				}
			}
			last := n == o.runs-1
			for _, steady := range []bool{false, true} {
				wait := o.settle
				if steady {
					wait = 0
					if last {
						wait = o.idle
					}
				}
				took, rss, err := startOnce(ctx, c, dir, acct, wait, o.timeout, steady && last)
				if err != nil {
					return fmt.Errorf("%s, run %d: %w", c.name, n+1, err)
				}
				if steady {
					results[i].steady = append(results[i].steady, took)
				} else {
					results[i].first = append(results[i].first, took)
				}
				if rss != nil {
					results[i].rss = *rss
				}
				fmt.Fprintf(os.Stderr, "%s run %d %s: %s\n", c.name, n+1, map[bool]string{false: "first", true: "steady"}[steady], took.Round(time.Millisecond))
			}
		}
	}
	report(os.Stdout, clients, results, o)
	return nil
}

// startOnce starts c on dir, times the first GUI RPC answer, lets it run
// for wait, reads its RSS if asked, and stops it (SIGTERM, as a service
// manager does).
func startOnce(ctx context.Context, c client, dir string, acct *clientproc.Account, wait, timeout time.Duration, readRSS bool) (time.Duration, *clientproc.RSS, error) {
	port, err := clientproc.FreePort()
	if err != nil {
		return 0, nil, err
	}
	args := c.args(dir, port)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	log, err := os.OpenFile(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, nil, fmt.Errorf("log file: %w", err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if acct != nil {
		cmd.SysProcAttr.Credential = acct.Credential()
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, nil, fmt.Errorf("start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer stopProcess(cmd, exited)

	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	for !answers(addr) {
		select {
		case err := <-exited:
			exited <- err
			return 0, nil, fmt.Errorf("exited before answering GUI RPC (%v); log: %s", err, log.Name())
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, nil, fmt.Errorf("no GUI RPC answer in %s; log: %s", timeout, log.Name())
		}
	}
	took := time.Since(start)
	select {
	case <-time.After(wait):
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	}
	if !readRSS {
		return took, nil, nil
	}
	rss, err := clientproc.ReadRSS(cmd.Process.Pid)
	return took, &rss, err
}

// answers reports whether addr serves one complete GUI RPC exchange.
func answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	req := "<boinc_gui_rpc_request>\n<exchange_versions>\n<major>7</major>\n<minor>20</minor>\n<release>5</release>\n</exchange_versions>\n</boinc_gui_rpc_request>\n\x03"
	if _, err := io.WriteString(conn, req); err != nil {
		return false
	}
	reply, err := bufio.NewReader(conn).ReadString('\x03')
	return err == nil && strings.Contains(reply, "<boinc_gui_rpc_reply>")
}

func stopProcess(cmd *exec.Cmd, exited chan error) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(w io.Writer, clients []client, res []result, o options) {
	host, _ := os.Hostname()
	ncpu := 0
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		ncpu = strings.Count(string(b), "\nprocessor")
		if strings.HasPrefix(string(b), "processor") {
			ncpu++
		}
	}
	fmt.Fprintf(w, "GUI RPC start-up, median of %d starts each (%s, %d CPUs)\n\n", o.runs, host, ncpu)
	fmt.Fprintf(w, "%-34s", "")
	for _, c := range clients {
		fmt.Fprintf(w, "%14s", c.name)
	}
	if len(clients) == 2 {
		fmt.Fprintf(w, "%10s", "ratio")
	}
	fmt.Fprintln(w)
	row := func(label string, get func(result) float64, format string) {
		fmt.Fprintf(w, "%-34s", label)
		var vals []float64
		for _, r := range res {
			v := get(r)
			vals = append(vals, v)
			fmt.Fprintf(w, "%14s", fmt.Sprintf(format, v))
		}
		if len(vals) == 2 && vals[1] > 0 {
			fmt.Fprintf(w, "%10.2f", vals[0]/vals[1])
		}
		fmt.Fprintln(w)
	}
	row("first start to GUI RPC (s)", func(r result) float64 { return median(r.first).Seconds() }, "%.3f")
	row("steady start to GUI RPC (s)", func(r result) float64 { return median(r.steady).Seconds() }, "%.3f")
	for _, k := range []struct {
		name string
		kB   func(clientproc.RSS) int64
	}{
		{"VmRSS", func(r clientproc.RSS) int64 { return r.Total }},
		{"RssAnon", func(r clientproc.RSS) int64 { return r.Anon }},
		{"RssFile", func(r clientproc.RSS) int64 { return r.File }},
	} {
		row(fmt.Sprintf("idle %s after %s (MB)", k.name, o.idle), func(r result) float64 { return float64(k.kB(r.rss)) / 1024 }, "%.1f")
	}
	fmt.Fprintln(w)
	first, steady := median(res[0].first), median(res[0].steady)
	if len(res) == 2 {
		fmt.Fprintf(w, "target: first start <= half the C++ client's (%.3f s): %s\n", median(res[1].first).Seconds()/2, verdict(first <= median(res[1].first)/2))
	}
	fmt.Fprintf(w, "target: steady start <= 0.3 s: %s\n", verdict(steady <= 300*time.Millisecond))
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
