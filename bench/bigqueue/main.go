//go:build linux

// Command bigqueue runs boincd and the C++ BOINC client side by side on
// the same big queue, as in issue 18 and BOINC issue #6332 (the C++ client
// reported to spend a core for a minute with big queues).
//
//	go run ./bench/bigqueue [-boinc /usr/bin/boinc] [-window 30s] [-settle_timeout 10m]
//
// It generates a C++ client data directory the way client 7.20 writes one
// (client_state.xml modelled on the captures in testdata/boinc-7.20):
// 20 projects whose master and scheduler URLs point at 127.0.0.1 ports
// nobody listens on (an offline host: scheduler RPCs fail at once) and
// whose <min_rpc_time> is a day ahead, so neither client contacts them;
// 10,000 tasks, 1,000 of them ready to run (50 per project, input files on
// disk with their MD5 and size in the state) and 9,000 computed, uploaded
// and waiting to be reported; one app per project, a signed shell script
// that execs "sleep 100000"; cc_config.xml with <ncpus>64</ncpus>.
//
// Then, one client at a time so that neither measures the other's load:
//
//   - the C++ client runs on a copy of that directory (--dir,
//     --allow_multiple_clients, --no_gpus, --skip_cpu_benchmarks,
//     --no_info_fetch);
//   - boincd, built from this checkout, runs on a data directory made from
//     another copy by "boincd import", with the same
//     global_prefs_override.xml;
//
// and for each it measures: the time from start to the first GUI RPC
// answer (exchange_versions); the time until 64 sleep tasks run (counted
// in /proc among the client's descendants), with the client's CPU over
// that time sampled every second; after a pause, CPU ticks
// (utime+stime of /proc/PID/stat, 1/100 s) over an idle window in which
// nothing changes, and RSS (/proc/PID/status); then the wall time of
// <get_state/> and <get_results/> (median of 5 each), the client's CPU
// ticks per call (less dependent on the host's load than wall time) and
// the reply sizes.
// It prints a table: boincd, the C++ client and boincd/C++.
//
// The 7.20 client does not keep the <min_rpc_time> it reads from the
// state (it writes it back as 0 at start-up), so it tries a scheduler
// request to each project in turn, each reporting its finished tasks
// and failing at once; the table counts them, in all and during the CPU
// window. boincd keeps the backoff and tries none.
//
// Run as root: both clients run as user boinc (setpriv), as the packages
// run them. Every process it started (clients and their tasks) is killed
// and its temporary directory removed when it ends. It is a benchmark, not
// a test: the numbers depend on the host.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/bench/internal/clientproc"
	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/guirpc/client"
	"golang.org/x/sys/unix"
)

// password is the GUI RPC password written for both clients.
const password = "bigqueue-benchmark"

type options struct {
	boincBin      string
	runAs         string
	projects      int
	tasks         int
	ready         int
	ncpus         int
	settleTimeout time.Duration
	pause         time.Duration
	window        time.Duration
	calls         int
	keep          bool
}

func main() {
	var o options
	flag.StringVar(&o.boincBin, "boinc", "/usr/bin/boinc", "the C++ client (skipped when absent)")
	flag.StringVar(&o.runAs, "user", "boinc", "user both clients run as when started by root (\"\" keeps root)")
	flag.IntVar(&o.projects, "projects", 20, "projects in the queue")
	flag.IntVar(&o.tasks, "tasks", 10000, "tasks in the queue")
	flag.IntVar(&o.ready, "ready", 1000, "of the tasks, those ready to run (the rest are uploaded and waiting to report)")
	flag.IntVar(&o.ncpus, "ncpus", 64, "<ncpus> of cc_config.xml: the tasks each client should end up running")
	flag.DurationVar(&o.settleTimeout, "settle_timeout", 10*time.Minute, "how long a client may take to run -ncpus tasks")
	flag.DurationVar(&o.pause, "pause", 10*time.Second, "wait after the tasks run before the CPU window")
	flag.DurationVar(&o.window, "window", 30*time.Second, "idle CPU measurement window")
	flag.IntVar(&o.calls, "calls", 5, "GUI RPC calls of each kind (the median is printed)")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (its path is printed)")
	flag.Parse()
	if o.projects < 1 || o.ready < o.projects || o.tasks < o.ready || o.calls < 1 {
		fmt.Fprintln(os.Stderr, "bigqueue: need 1 <= projects <= ready <= tasks and calls >= 1")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bigqueue:", err)
		os.Exit(1)
	}
}

// result is what one client measured.
type result struct {
	name        string
	firstRPC    time.Duration
	settled     time.Duration // until ncpus tasks ran; 0: never
	running     int           // tasks running at the end of settling
	settleTicks int64
	cpuTrace    []int64 // ticks per second while settling
	idleTicks   int64
	rss         int64 // kB
	stateTime   time.Duration
	stateSize   int
	resTime     time.Duration
	resSize     int
	nResults    int
	stateTicks  float64 // client CPU ticks per get_state
	resTicks    float64
	executing   int
	schedRPCs   int // scheduler requests tried, from the client's log
	windowRPCs  int // of them, during the CPU window
}

func run(ctx context.Context, o options) error {
	tmp, err := clientproc.TempDir("bigqueue-")
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Println("temporary directory (kept):", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	// Whatever happens, no task outlives the benchmark, and none is
	// left a zombie: tasks orphaned when a client is killed become this
	// process's children, reaped after each client.
	defer killUnder(tmp)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("child subreaper: %w", err)
	}
	acct, err := clientproc.RunAs(o.runAs)
	if err != nil {
		return err
	}

	bin := filepath.Join(tmp, "boincd")
	if err := clientproc.BuildBoincd(ctx, bin); err != nil {
		return err
	}

	gen := filepath.Join(tmp, "generated")
	t0 := time.Now()
	if err := generate(gen, o); err != nil {
		return fmt.Errorf("generating the C++ data directory: %w", err)
	}
	genTime := time.Since(t0)

	var results []*result

	// boincd: import a copy, as a volunteer switching would.
	src := filepath.Join(tmp, "import-src")
	if err := copyDir(ctx, gen, src); err != nil {
		return err
	}
	bdir := filepath.Join(tmp, "boincd-data")
	t0 = time.Now()
	out, err := exec.CommandContext(ctx, bin, "import", src, "--dir", bdir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("boincd import: %w\n%s", err, out)
	}
	importTime := time.Since(t0)
	for _, name := range []string{"gui_rpc_auth.cfg", "global_prefs_override.xml"} {
		b, err := os.ReadFile(filepath.Join(gen, name))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(bdir, name), b, 0o600); err != nil {
			return err
		}
	}
	r, err := measure(ctx, o, tmp, "boincd", bdir, acct, func(port int) []string {
		return []string{bin, "run", "--dir", bdir, "--gui_rpc_port", strconv.Itoa(port), "--no_gpus", "--skip_cpu_benchmarks"}
	})
	if err != nil {
		return err
	}
	results = append(results, r)

	if _, err := os.Stat(o.boincBin); err == nil {
		cdir := filepath.Join(tmp, "cpp-data")
		if err := copyDir(ctx, gen, cdir); err != nil {
			return err
		}
		r, err := measure(ctx, o, tmp, "C++ client", cdir, acct, func(port int) []string {
			return []string{o.boincBin, "--dir", cdir, "--allow_multiple_clients", "--gui_rpc_port", strconv.Itoa(port),
				"--no_gpus", "--skip_cpu_benchmarks", "--no_info_fetch"}
		})
		if err != nil {
			return err
		}
		results = append(results, r)
	} else {
		fmt.Printf("C++ client %s not found: boincd only\n", o.boincBin)
	}

	report(o, results, genTime, importTime, out)
	return nil
}

// measure runs one client on dir until it runs o.ncpus tasks, measures
// it, and kills it and its tasks.
func measure(ctx context.Context, o options, tmp, name, dir string, acct *clientproc.Account, argv func(port int) []string) (*result, error) {
	port, err := clientproc.FreePort()
	if err != nil {
		return nil, err
	}
	args := argv(port)
	if acct != nil {
		if err := acct.Own(dir); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		args = acct.Setpriv(args)
	}
	logPath := filepath.Join(tmp, strings.ReplaceAll(name, " ", "_")+".log")
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if acct != nil && acct.Home != "" {
		// As a service the client has its user's home, not root's.
		cmd.Env = append(os.Environ(), "HOME="+acct.Home)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fmt.Fprintf(os.Stderr, "bigqueue: starting %s\n", name)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	pid := cmd.Process.Pid
	defer func() {
		killTree(pid)
		<-exited
		killUnder(dir)
		reapOrphans()
	}()
	fail := func(err error) (*result, error) {
		return nil, fmt.Errorf("%s: %w (log: %s)", name, err, logPath)
	}
	r := &result{name: name}
	addr := fmt.Sprintf("127.0.0.1:%d", port)

	// The client's CPU, every second from its start until its tasks run.
	stopTrace := make(chan struct{})
	traced := make(chan []int64, 1)
	go func() {
		var trace []int64
		var last int64
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-stopTrace:
				traced <- trace
				return
			case <-tick.C:
			}
			if t, err := clientproc.CPUTicks(pid); err == nil {
				trace = append(trace, t-last)
				last = t
			}
		}
	}()
	endTrace := func() {
		if stopTrace != nil {
			close(stopTrace)
			r.cpuTrace = <-traced
			stopTrace = nil
		}
	}
	defer endTrace()

	// Time to the first GUI RPC answer.
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		select {
		case <-exited:
			return fail(errors.New("exited during start-up"))
		default:
		}
		if firstAnswer(ctx, addr) {
			r.firstRPC = time.Since(start)
			break
		}
		if time.Since(start) > time.Minute {
			return fail(errors.New("no GUI RPC answer within a minute"))
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Until ncpus tasks run.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := start.Add(o.settleTimeout)
	for {
		r.running = countTasks(pid)
		if r.running >= o.ncpus {
			r.settled = time.Since(start)
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(os.Stderr, "bigqueue: %s runs %d of %d tasks after %s; measuring anyway\n", name, r.running, o.ncpus, o.settleTimeout)
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-exited:
			return fail(errors.New("exited while starting tasks"))
		case <-tick.C:
		}
	}
	endTrace()
	t, err := clientproc.CPUTicks(pid)
	if err != nil {
		return fail(err)
	}
	r.settleTicks = t

	// Idle: nothing changes from here on.
	select {
	case <-time.After(o.pause):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	schedBefore := schedRequests(logPath)
	before, err := clientproc.CPUTicks(pid)
	if err != nil {
		return fail(err)
	}
	select {
	case <-time.After(o.window):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	after, err := clientproc.CPUTicks(pid)
	if err != nil {
		return fail(err)
	}
	r.idleTicks = after - before
	r.windowRPCs = schedRequests(logPath) - schedBefore
	rss, err := clientproc.ReadRSS(pid)
	if err != nil {
		return fail(err)
	}
	r.rss = rss.Total
	r.running = countTasks(pid)

	// GUI RPC replies.
	c, err := client.Dial(ctx, addr)
	if err != nil {
		return fail(err)
	}
	defer c.Close()
	if err := c.Authorize(ctx, password); err != nil {
		return fail(err)
	}
	// Wall time depends on the host's load; the client's CPU ticks per
	// call less so.
	timeCall := func(req string, ticks *float64) (time.Duration, []byte, error) {
		var ds []time.Duration
		var body []byte
		t0, err := clientproc.CPUTicks(pid)
		if err != nil {
			return 0, nil, err
		}
		defer func() {
			if t1, err := clientproc.CPUTicks(pid); err == nil {
				*ticks = float64(t1-t0) / float64(o.calls)
			}
		}()
		for range o.calls {
			t := time.Now()
			b, err := c.Call(ctx, req)
			if err != nil {
				return 0, nil, err
			}
			ds = append(ds, time.Since(t))
			body = b
		}
		slices.Sort(ds)
		return ds[len(ds)/2], body, nil
	}
	var body []byte
	if r.stateTime, body, err = timeCall("<get_state/>", &r.stateTicks); err != nil {
		return fail(err)
	}
	r.stateSize = len(body)
	if r.resTime, body, err = timeCall("<get_results/>", &r.resTicks); err != nil {
		return fail(err)
	}
	r.resSize = len(body)
	r.nResults = bytes.Count(body, []byte("<result>"))
	r.executing = bytes.Count(body, []byte("<active_task_state>1</active_task_state>"))
	r.schedRPCs = schedRequests(logPath)
	fmt.Fprintf(os.Stderr, "bigqueue: %s measured\n", name)
	return r, nil
}

// firstAnswer reports whether the GUI RPC server at addr answers
// exchange_versions.
func firstAnswer(ctx context.Context, addr string) bool {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, addr)
	if err != nil {
		return false
	}
	defer c.Close()
	_, err = c.Call(dctx, "<exchange_versions>\n<major>7</major>\n<minor>20</minor>\n<release>5</release>\n</exchange_versions>")
	return err == nil
}

func report(o options, rs []*result, genTime, importTime time.Duration, importOut []byte) {
	host, _ := os.Hostname()
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("host %s, %d CPUs, load %s", host, runtime.NumCPU(), load)
	fmt.Printf("queue: %d projects, %d tasks (%d ready to run, %d uploaded and waiting to report), <ncpus>%d</ncpus>\n",
		o.projects, o.tasks, o.ready, o.tasks-o.ready, o.ncpus)
	fmt.Printf("generated in %s; boincd import took %s:\n", genTime.Round(time.Millisecond), importTime.Round(time.Millisecond))
	sc := bufio.NewScanner(bytes.NewReader(importOut))
	for n := 0; sc.Scan() && n < 6; n++ {
		line := sc.Text()
		if len(line) > 150 {
			line = line[:150] + "..."
		}
		fmt.Println("  " + line)
	}
	fmt.Println()
	for _, r := range rs {
		// At most about 60 numbers a client: seconds summed in buckets.
		per := max(1, (len(r.cpuTrace)+59)/60)
		fmt.Printf("%s CPU while starting tasks, ticks (1/100 s) per %d s:", r.name, per)
		for i := 0; i < len(r.cpuTrace); i += per {
			var sum int64
			for _, t := range r.cpuTrace[i:min(i+per, len(r.cpuTrace))] {
				sum += t
			}
			fmt.Printf(" %d", sum)
		}
		fmt.Println()
	}
	fmt.Println()
	type row struct {
		label string
		val   func(r *result) float64
		f     string
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	rows := []row{
		{"start to first GUI RPC answer (s)", func(r *result) float64 { return r.firstRPC.Seconds() }, "%.2f"},
		{fmt.Sprintf("start to %d tasks running (s)", o.ncpus), func(r *result) float64 { return r.settled.Seconds() }, "%.1f"},
		{"CPU ticks, start to tasks running", func(r *result) float64 { return float64(r.settleTicks) }, "%.0f"},
		{fmt.Sprintf("idle CPU ticks over %s", o.window), func(r *result) float64 { return float64(r.idleTicks) }, "%.0f"},
		{"RSS (MB)", func(r *result) float64 { return float64(r.rss) / 1000 }, "%.1f"},
		{"RSS per task (kB)", func(r *result) float64 { return float64(r.rss) / float64(o.tasks) }, "%.2f"},
		{"get_state, median (ms)", func(r *result) float64 { return ms(r.stateTime) }, "%.1f"},
		{"get_state, client CPU ticks per call", func(r *result) float64 { return r.stateTicks }, "%.1f"},
		{"get_state reply (kB)", func(r *result) float64 { return float64(r.stateSize) / 1000 }, "%.0f"},
		{"get_results, median (ms)", func(r *result) float64 { return ms(r.resTime) }, "%.1f"},
		{"get_results, client CPU ticks per call", func(r *result) float64 { return r.resTicks }, "%.1f"},
		{"get_results reply (kB)", func(r *result) float64 { return float64(r.resSize) / 1000 }, "%.0f"},
		{"results in get_results", func(r *result) float64 { return float64(r.nResults) }, "%.0f"},
		{"executing (get_results)", func(r *result) float64 { return float64(r.executing) }, "%.0f"},
		{"sleep tasks running (/proc)", func(r *result) float64 { return float64(r.running) }, "%.0f"},
		{"scheduler requests tried (log)", func(r *result) float64 { return float64(r.schedRPCs) }, "%.0f"},
		{"  of them in the CPU window", func(r *result) float64 { return float64(r.windowRPCs) }, "%.0f"},
	}
	fmt.Printf("%-36s", "")
	for _, r := range rs {
		fmt.Printf(" %12s", r.name)
	}
	if len(rs) == 2 {
		fmt.Printf(" %12s", "boincd/C++")
	}
	fmt.Println()
	for _, w := range rows {
		fmt.Printf("%-36s", w.label)
		for _, r := range rs {
			fmt.Printf(" %12s", fmt.Sprintf(w.f, w.val(r)))
		}
		if len(rs) == 2 {
			a, b := w.val(rs[0]), w.val(rs[1])
			switch {
			case b == 0 && a == 0:
				fmt.Printf(" %12s", "1.00")
			case b == 0:
				fmt.Printf(" %12s", "inf")
			default:
				fmt.Printf(" %12.2f", a/b)
			}
		}
		fmt.Println()
	}
	for _, r := range rs {
		if r.name == "C++ client" && r.schedRPCs > 0 {
			fmt.Printf("C++ client: %d scheduler requests although each project's <min_rpc_time> was a day ahead (7.20 sets it to 0 at start-up); each failed at once (connection refused)\n", r.schedRPCs)
		}
		if r.settled == 0 {
			fmt.Printf("%s did not run %d tasks within %s (it ran %d)\n", r.name, o.ncpus, o.settleTimeout, r.running)
		}
	}
}

// generate writes a C++ client 7.20 data directory holding the big queue.
func generate(dir string, o options) error {
	key, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		return err
	}
	signKey := codesign.FormatPublicKey(&key.PublicKey)
	app := []byte("#!/bin/sh\nexec sleep 100000\n")
	appSum := md5.Sum(app)
	appMD5 := hex.EncodeToString(appSum[:])
	appSig, err := codesign.SignMD5Hex(key, appMD5)
	if err != nil {
		return err
	}
	const (
		appName  = "bigq"
		platform = "x86_64-pc-linux-gnu"
		version  = 100
		appFile  = "bigq_1.00_x86_64-pc-linux-gnu.sh"
		fpopsEst = 3600e9 // an hour at the app version's 1 GFLOPS
		memBound = 20e6
	)
	now := float64(time.Now().UnixMicro()) / 1e6
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, data []byte, mode os.FileMode) error {
		return os.WriteFile(filepath.Join(dir, name), data, mode)
	}
	var s bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&s, format, a...) }
	p("<client_state>\n")
	hostname, _ := os.Hostname()
	p(`<host_info>
    <timezone>0</timezone>
    <domain_name>%s</domain_name>
    <ip_addr>127.0.0.1</ip_addr>
    <host_cpid>%s</host_cpid>
    <p_ncpus>%d</p_ncpus>
    <p_vendor>GenuineIntel</p_vendor>
    <p_model>bigqueue benchmark host</p_model>
    <p_features>fpu sse sse2</p_features>
    <p_fpops>1000000000.000000</p_fpops>
    <p_iops>1000000000.000000</p_iops>
    <p_membw>1000000000.000000</p_membw>
    <p_calculated>%f</p_calculated>
    <p_vm_extensions_disabled>0</p_vm_extensions_disabled>
    <m_nbytes>25276502016.000000</m_nbytes>
    <m_cache>272629760.000000</m_cache>
    <m_swap>0.000000</m_swap>
    <d_total>270553174016.000000</d_total>
    <d_free>84733190144.000000</d_free>
    <os_name>Linux Debian</os_name>
    <os_version>Debian GNU/Linux 12 (bookworm)</os_version>
    <n_usable_coprocs>0</n_usable_coprocs>
    <wsl_available>0</wsl_available>
    <coprocs>
    </coprocs>
</host_info>
<time_stats>
    <on_frac>1.000000</on_frac>
    <connected_frac>-1.000000</connected_frac>
    <cpu_and_network_available_frac>1.000000</cpu_and_network_available_frac>
    <active_frac>1.000000</active_frac>
    <gpu_active_frac>1.000000</gpu_active_frac>
    <client_start_time>%f</client_start_time>
    <total_start_time>%f</total_start_time>
    <total_duration>86400.000000</total_duration>
    <total_active_duration>86400.000000</total_active_duration>
    <total_gpu_active_duration>86400.000000</total_gpu_active_duration>
    <previous_uptime>86400.000000</previous_uptime>
    <last_update>%f</last_update>
</time_stats>
<net_stats>
    <bwup>858383.065298</bwup>
    <avg_up>41902036516.330849</avg_up>
    <avg_time_up>%f</avg_time_up>
    <bwdown>4417228.318518</bwdown>
    <avg_down>282969324462.065613</avg_down>
    <avg_time_down>%f</avg_time_down>
</net_stats>
`, hostname, md5hex("host "+hostname), runtime.NumCPU(), now-86400, now-86400, now-86400*2, now-60, now-3600, now-3600)

	perProject := func(n, i int) int { // tasks of n spread over projects
		q := n / o.projects
		if i < n%o.projects {
			q++
		}
		return q
	}
	files := 0
	for i := range o.projects {
		port, err := clientproc.FreePort()
		if err != nil {
			return err
		}
		url := fmt.Sprintf("http://127.0.0.1:%d/", port)
		esc := boinc.EscapeProjectURL(url)
		pdir := filepath.Join(dir, "projects", esc)
		if err := os.MkdirAll(pdir, 0o755); err != nil {
			return err
		}
		auth := md5hex(fmt.Sprintf("account %d", i))
		pname := fmt.Sprintf("Big Queue Project %02d", i)
		acct := fmt.Sprintf("<account>\n    <master_url>%s</master_url>\n    <authenticator>%s</authenticator>\n    <project_name>%s</project_name>\n<project_preferences>\n\n<resource_share>100</resource_share>\n</project_preferences>\n</account>\n", url, auth, pname)
		if err := write("account_"+esc+".xml", []byte(acct), 0o600); err != nil {
			return err
		}
		master := fmt.Sprintf("<html><head><title>%s</title>\n<scheduler>%scgi</scheduler>\n<link rel=\"boinc_scheduler\" href=\"%scgi\">\n</head></html>\n", pname, url, url)
		if err := write("master_"+esc+".xml", []byte(master), 0o644); err != nil {
			return err
		}
		p(`<project>
    <master_url>%s</master_url>
    <project_name>%s</project_name>
    <symstore></symstore>
    <user_name>benchuser</user_name>
    <team_name></team_name>
    <host_venue></host_venue>
    <email_hash>00000000000000000000000000000000</email_hash>
    <cross_project_id>%s</cross_project_id>
    <external_cpid></external_cpid>
    <cpid_time>%f</cpid_time>
    <user_total_credit>%f</user_total_credit>
    <user_expavg_credit>%f</user_expavg_credit>
    <user_create_time>%f</user_create_time>
    <rpc_seqno>%d</rpc_seqno>
    <userid>%d</userid>
    <teamid>0</teamid>
    <hostid>%d</hostid>
    <host_total_credit>%f</host_total_credit>
    <host_expavg_credit>%f</host_expavg_credit>
    <host_create_time>%f</host_create_time>
    <nrpc_failures>0</nrpc_failures>
    <master_fetch_failures>0</master_fetch_failures>
    <min_rpc_time>%f</min_rpc_time>
    <next_rpc_time>0.000000</next_rpc_time>
    <rec>%f</rec>
    <rec_time>%f</rec_time>
    <resource_share>100.000000</resource_share>
    <disk_usage>0.000000</disk_usage>
    <disk_share>0.000000</disk_share>
    <desired_disk_usage>0.000000</desired_disk_usage>
    <duration_correction_factor>1.000000</duration_correction_factor>
    <sched_rpc_pending>0</sched_rpc_pending>
    <send_time_stats_log>0</send_time_stats_log>
    <send_job_log>0</send_job_log>
    <njobs_success>%d</njobs_success>
    <njobs_error>0</njobs_error>
    <elapsed_time>%f</elapsed_time>
    <last_rpc_time>%f</last_rpc_time>
    <rsc_backoff_time>
        <name>CPU</name>
        <value>0.000000</value>
    </rsc_backoff_time>
    <rsc_backoff_interval>
        <name>CPU</name>
        <value>0.000000</value>
    </rsc_backoff_interval>
    <scheduler_url>%scgi</scheduler_url>
    <code_sign_key>
%s</code_sign_key>
    <cpu_ec>%f</cpu_ec>
    <cpu_time>%f</cpu_time>
    <gpu_ec>0.000000</gpu_ec>
    <gpu_time>0.000000</gpu_time>
</project>
<app>
    <name>%s</name>
    <user_friendly_name>Sleeper</user_friendly_name>
    <non_cpu_intensive>0</non_cpu_intensive>
</app>
<file>
    <name>%s</name>
    <nbytes>%d.000000</nbytes>
    <max_nbytes>0.000000</max_nbytes>
    <md5_cksum>%s</md5_cksum>
    <status>1</status>
    <executable/>
    <signature_required/>
    <file_signature>
%s</file_signature>
    <download_url>%sdownload/%s</download_url>
</file>
`, url, pname, md5hex("cpid"), now-86400*30, 1000.0*float64(i), 10.0, now-86400*30, 10, i+1, i+1, 1000.0*float64(i), 10.0, now-86400*30,
			now+86400, 1000.0, now-3600, perProject(o.tasks-o.ready, i), 3600.0*float64(perProject(o.tasks-o.ready, i)), now-3600,
			url, signKey, 1.0, 3500.0*float64(perProject(o.tasks-o.ready, i)),
			appName, appFile, len(app), appMD5, appSig, url, appFile)
		if err := os.WriteFile(filepath.Join(pdir, appFile), app, 0o755); err != nil {
			return err
		}
		files++

		// Tasks: first the computed ones (older), then the ready ones.
		nDone, nReady := perProject(o.tasks-o.ready, i), perProject(o.ready, i)
		type task struct {
			wu, res, in, out string
			done             bool
			inSum, outSum    string
			inLen, outLen    int
		}
		var tasks []task
		for k := range nDone + nReady {
			wu := fmt.Sprintf("bq%02d_%d_%05d", i, int64(now)-86400, k)
			t := task{wu: wu, res: wu + "_0", in: wu + "_in", out: wu + "_0_r" + strconv.Itoa(1000+k) + "_0", done: k < nDone}
			in := []byte(fmt.Sprintf("input of %s\n%s\n", wu, strings.Repeat("x", 64)))
			t.inLen, t.inSum = len(in), md5hex(string(in))
			if err := os.WriteFile(filepath.Join(pdir, t.in), in, 0o644); err != nil {
				return err
			}
			files++
			outData := fmt.Sprintf("output of %s\n", t.res)
			t.outLen, t.outSum = len(outData), md5hex(outData)
			tasks = append(tasks, t)
		}
		for _, t := range tasks {
			p(`<file>
    <name>%s</name>
    <nbytes>%d.000000</nbytes>
    <max_nbytes>0.000000</max_nbytes>
    <md5_cksum>%s</md5_cksum>
    <status>1</status>
    <download_url>%sdownload/%s</download_url>
</file>
`, t.in, t.inLen, t.inSum, url, t.in)
			// A computed task's output, uploaded: the 7.20 client
			// deleted it after the upload (FILE_INFO::delete_file sets
			// status 0) and keeps the entry until the report is acked.
			if t.done {
				p(`<file>
    <name>%s</name>
    <nbytes>%d.000000</nbytes>
    <max_nbytes>65536.000000</max_nbytes>
    <md5_cksum>%s</md5_cksum>
    <status>0</status>
    <uploaded/>
    <upload_url>%scgi-bin/file_upload_handler</upload_url>
</file>
`, t.out, t.outLen, t.outSum, url)
			} else {
				p(`<file>
    <name>%s</name>
    <nbytes>0.000000</nbytes>
    <max_nbytes>65536.000000</max_nbytes>
    <status>0</status>
    <upload_url>%scgi-bin/file_upload_handler</upload_url>
</file>
`, t.out, url)
			}
		}
		p(`<app_version>
    <app_name>%s</app_name>
    <version_num>%d</version_num>
    <platform>%s</platform>
    <avg_ncpus>1.000000</avg_ncpus>
    <flops>1000000000.000000</flops>
    <file_ref>
        <file_name>%s</file_name>
        <main_program/>
    </file_ref>
</app_version>
`, appName, version, platform, appFile)
		for _, t := range tasks {
			p(`<workunit>
    <name>%s</name>
    <app_name>%s</app_name>
    <version_num>%d</version_num>
    <rsc_fpops_est>%f</rsc_fpops_est>
    <rsc_fpops_bound>%f</rsc_fpops_bound>
    <rsc_memory_bound>%f</rsc_memory_bound>
    <rsc_disk_bound>100000000.000000</rsc_disk_bound>
    <file_ref>
        <file_name>%s</file_name>
        <open_name>in</open_name>
    </file_ref>
</workunit>
`, t.wu, appName, version, fpopsEst, fpopsEst*100, memBound, t.in)
		}
		for k, t := range tasks {
			received := now - 86400 + float64(k)
			deadline := received + 14*86400
			if t.done {
				completed := now - 7200 + float64(k)*0.5
				p(`<result>
    <name>%s</name>
    <final_cpu_time>3500.000000</final_cpu_time>
    <final_elapsed_time>3600.000000</final_elapsed_time>
    <exit_status>0</exit_status>
    <state>5</state>
    <platform>%s</platform>
    <version_num>%d</version_num>
    <final_peak_working_set_size>1691648.000000</final_peak_working_set_size>
    <final_peak_swap_size>2990080.000000</final_peak_swap_size>
    <final_peak_disk_usage>4096.000000</final_peak_disk_usage>
<stderr_out>
<core_client_version>7.20.5</core_client_version>
<![CDATA[
<stderr_txt>

</stderr_txt>
]]>
</stderr_out>
    <ready_to_report/>
    <completed_time>%f</completed_time>
    <wu_name>%s</wu_name>
    <report_deadline>%f</report_deadline>
    <received_time>%f</received_time>
    <file_ref>
        <file_name>%s</file_name>
        <open_name>out</open_name>
        <copy_file/>
    </file_ref>
</result>
`, t.res, platform, version, completed, t.wu, deadline, received, t.out)
			} else {
				p(`<result>
    <name>%s</name>
    <final_cpu_time>0.000000</final_cpu_time>
    <final_elapsed_time>0.000000</final_elapsed_time>
    <exit_status>0</exit_status>
    <state>2</state>
    <platform>%s</platform>
    <version_num>%d</version_num>
    <wu_name>%s</wu_name>
    <report_deadline>%f</report_deadline>
    <received_time>%f</received_time>
    <file_ref>
        <file_name>%s</file_name>
        <open_name>out</open_name>
        <copy_file/>
    </file_ref>
</result>
`, t.res, platform, version, t.wu, deadline, received, t.out)
			}
		}
	}
	p(`<active_task_set>
</active_task_set>
<platform_name>x86_64-pc-linux-gnu</platform_name>
<core_client_major_version>7</core_client_major_version>
<core_client_minor_version>20</core_client_minor_version>
<core_client_release>5</core_client_release>
<user_run_request>2</user_run_request>
<user_run_prev_request>2</user_run_prev_request>
<user_gpu_request>2</user_gpu_request>
<user_gpu_prev_request>2</user_gpu_prev_request>
<user_network_request>2</user_network_request>
<new_version_check_time>%f</new_version_check_time>
<all_projects_list_check_time>%f</all_projects_list_check_time>
<client_version_check_url>https://boinc.berkeley.edu/download.php?xml=1</client_version_check_url>
</client_state>
`, now, now)
	if err := write("client_state.xml", s.Bytes(), 0o644); err != nil {
		return err
	}
	cc := fmt.Sprintf("<cc_config>\n  <log_flags>\n    <task>1</task>\n    <sched_ops>1</sched_ops>\n  </log_flags>\n  <options>\n    <ncpus>%d</ncpus>\n    <no_info_fetch>1</no_info_fetch>\n  </options>\n</cc_config>\n", o.ncpus)
	if err := write("cc_config.xml", []byte(cc), 0o644); err != nil {
		return err
	}
	// Compute whatever else the host does (a shared machine's load
	// must not suspend either client), on every CPU, while the user is
	// active; memory enough for the tasks.
	prefs := `<global_preferences>
   <run_on_batteries>1</run_on_batteries>
   <run_if_user_active>1</run_if_user_active>
   <run_gpu_if_user_active>1</run_gpu_if_user_active>
   <suspend_cpu_usage>0.000000</suspend_cpu_usage>
   <max_ncpus_pct>100.000000</max_ncpus_pct>
   <cpu_usage_limit>100.000000</cpu_usage_limit>
   <ram_max_used_busy_pct>90.000000</ram_max_used_busy_pct>
   <ram_max_used_idle_pct>90.000000</ram_max_used_idle_pct>
   <work_buf_min_days>0.100000</work_buf_min_days>
   <work_buf_additional_days>0.500000</work_buf_additional_days>
</global_preferences>
`
	if err := write("global_prefs_override.xml", []byte(prefs), 0o644); err != nil {
		return err
	}
	if err := write("gui_rpc_auth.cfg", []byte(password+"\n"), 0o600); err != nil {
		return err
	}
	return write("lockfile", nil, 0o644)
}

// schedRequests counts the scheduler requests a client's log shows: the
// C++ client logs "Sending scheduler request", boincd "scheduler request
// completed" or "scheduler request failed".
func schedRequests(logPath string) int {
	b, err := os.ReadFile(logPath)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte("Sending scheduler request")) +
		bytes.Count(b, []byte("scheduler request completed")) + bytes.Count(b, []byte("scheduler request failed"))
}

// reapOrphans waits for the killed tasks that became this process's
// children (it is their subreaper) until none is left, for at most 5 s.
func reapOrphans() {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		switch {
		case errors.Is(err, syscall.ECHILD):
			return
		case err == nil && pid > 0:
			continue
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func copyDir(ctx context.Context, from, to string) error {
	if out, err := exec.CommandContext(ctx, "cp", "-a", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("copy %s: %w: %s", from, err, out)
	}
	return nil
}

// procs maps each process id to its parent and command name.
func procs() map[int]struct {
	ppid int
	comm string
} {
	m := map[int]struct {
		ppid int
		comm string
	}{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i, j := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if i < 0 || j < i {
			continue
		}
		f := strings.Fields(s[j+1:])
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		m[pid] = struct {
			ppid int
			comm string
		}{ppid, s[i+1 : j]}
	}
	return m
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	m := procs()
	children := map[int][]int{}
	for p, v := range m {
		children[v.ppid] = append(children[v.ppid], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// countTasks counts the sleep processes below pid: the running tasks.
func countTasks(pid int) int {
	m := procs()
	n := 0
	for _, d := range descendants(pid) {
		if m[d].comm == "sleep" {
			n++
		}
	}
	return n
}

// killTree kills pid and every process below it.
func killTree(pid int) {
	ds := descendants(pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for _, d := range ds {
		_ = syscall.Kill(d, syscall.SIGKILL)
	}
}

// killUnder kills every process whose working directory lies in dir (the
// tasks run in slot directories there), should one have left the
// client's tree.
func killUnder(dir string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd")
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
