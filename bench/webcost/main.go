//go:build linux

// Command webcost measures what an open web dashboard tab costs the
// daemon (issue 31: within 1 CPU tick per 20 s and 2 MB of the closed-tab
// figures). It builds boincd from this checkout, attaches it to the
// in-repo test project handing out tasks that run for minutes (so that
// the page always has something changing: elapsed times, progress), lets
// it settle, and then measures the daemon over -duration twice: first
// with no tab open, then with one headless Chromium tab logged into the
// dashboard (chromedp), its live stream open; the browser runs, on a
// blank page, in the first window too. For each window it reads
// the daemon's CPU ticks (utime+stime of /proc/PID/stat, 1/100 s) and its
// RSS (VmRSS sampled every second: mean and last; VmHWM, reset through
// /proc/PID/clear_refs at the start of each window, for the peak) and
// prints both side by side with the difference per 20 s and in MB. It
// also prints the page weight of the first load: the bytes over the wire
// (as Chromium counts them, headers included) for every request from the
// login page to the dashboard with its script and style, and what the
// live stream sent in its first seconds.
//
//	go run ./bench/webcost [-duration 10m] [-settle 45s] [-chromium /usr/bin/chromium]
//
// It is a benchmark, not a test: the numbers depend on the host and its
// load (it prints the load average at the start and end of each window),
// so it prints them and leaves judging them to the reader.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/boincd/boincd/bench/internal/clientproc"
	"github.com/boincd/boincd/internal/testproject"
)

const accountKey = "webcost-account-key"

func main() {
	duration := flag.Duration("duration", 10*time.Minute, "length of each measurement window (tab closed, then tab open)")
	settle := flag.Duration("settle", 45*time.Second, "time after the dashboard answers before measuring, so that start-up work is over and tasks run")
	taskSecs := flag.Int("task-seconds", 3600, "how long each test task runs: longer than the run, so that both windows see the same tasks running (a task's end and the next one's start are the daemon's busiest moments)")
	queue := flag.Int("queue", 20, "about how many tasks the daemon keeps (its work buffer is sized for them)")
	chromium := flag.String("chromium", "", "the browser to drive (default: chromium on PATH)")
	runAs := flag.String("user", "boinc", "user the daemon runs as when started by root, as the packaged service does (boincd refuses to run science apps as root)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bufDays := float64(*queue) * float64(*taskSecs) / float64(runtime.NumCPU()) / 86400
	if err := run(ctx, *duration, *settle, *taskSecs, bufDays, *chromium, *runAs); err != nil {
		fmt.Fprintln(os.Stderr, "webcost:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, duration, settle time.Duration, taskSecs int, bufDays float64, chromium, runAs string) error {
	acct, err := clientproc.RunAs(runAs)
	if err != nil {
		return err
	}
	if chromium == "" {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if p, err := exec.LookPath(name); err == nil {
				chromium = p
				break
			}
		}
		if chromium == "" {
			return errors.New("no chromium on PATH (apt-get install chromium), or give -chromium")
		}
	}
	tmp, err := clientproc.TempDir("webcost-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "boincd")
	if err := clientproc.BuildBoincd(ctx, bin); err != nil {
		return err
	}

	proj, err := testproject.New(testproject.Config{
		Name: "webcost project", Apps: []testproject.App{testproject.DefaultApp()},
		Job:    testproject.JobTemplate{CommandLine: fmt.Sprintf("--seconds %d", taskSecs), FpopsEst: float64(taskSecs) * 1e9},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return fmt.Errorf("test project: %w", err)
	}
	if err := proj.Start(); err != nil {
		return fmt.Errorf("test project: %w", err)
	}
	defer proj.Close()

	guiPort, err := clientproc.FreePort()
	if err != nil {
		return err
	}
	webPort, err := clientproc.FreePort()
	if err != nil {
		return err
	}
	ddir := filepath.Join(tmp, "data")
	if err := os.MkdirAll(ddir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	conf := fmt.Sprintf("[[project]]\nurl = %q\nauthenticator = %q\n\n[web]\nlisten = \"127.0.0.1:%d\"\n\n[prefs]\nwork_buf_min_days = %g\nwork_buf_additional_days = %g\nsuspend_cpu_usage = 0\n",
		proj.URL(), accountKey, webPort, bufDays/2, bufDays/2)
	if err := os.WriteFile(filepath.Join(ddir, "boincd.toml"), []byte(conf), 0o644); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	logf, err := os.Create(filepath.Join(tmp, "boincd.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "run", "--dir", ddir, "--gui_rpc_port", strconv.Itoa(guiPort), "--no_gpus", "--skip_cpu_benchmarks")
	cmd.Dir = ddir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if acct != nil {
		if err := acct.Own(ddir); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		cmd.SysProcAttr.Credential = acct.Credential()
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("boincd: %w", err)
	}
	defer func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}()
	pid := cmd.Process.Pid
	if err := clientproc.WaitPort(ctx, webPort, 60*time.Second); err != nil {
		return fmt.Errorf("web dashboard: %w (log: %s)", err, logf.Name())
	}
	pass, err := os.ReadFile(filepath.Join(ddir, "gui_rpc_auth.cfg"))
	if err != nil {
		return fmt.Errorf("GUI RPC password: %w", err)
	}
	password, _, _ := strings.Cut(string(pass), "\n")
	password = strings.TrimSpace(password)
	fmt.Printf("boincd pid %d, dashboard http://127.0.0.1:%d/, %d CPUs, settling %s\n", pid, webPort, runtime.NumCPU(), settle)
	if err := sleep(ctx, settle); err != nil {
		return err
	}
	if st := proj.Stats(); st.RPCs == 0 {
		return fmt.Errorf("no scheduler RPC reached the project (log: %s)", logf.Name())
	}

	// The browser runs in both windows, on a blank page in the first:
	// the daemon reads /proc each second to follow its tasks' processes,
	// so the browser's dozen processes cost it a little whether or not a
	// tab shows the dashboard, and that is not the tab's cost. The
	// browser outlives the second window, so that the page can be asked
	// how it stands at its end.
	bctx, closeTab, err := openTab(ctx, chromium, tmp)
	if err != nil {
		return err
	}
	defer closeTab()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		return fmt.Errorf("browser: %w", err)
	}
	if err := sleep(ctx, 10*time.Second); err != nil {
		return err
	}
	closed, err := measure(ctx, pid, duration, nil)
	if err != nil {
		return err
	}

	var weight *pageWeight
	var tasks, running int
	open, err := measure(ctx, pid, duration, func(wctx context.Context, started func()) error {
		weight, err = firstLoad(bctx, fmt.Sprintf("http://127.0.0.1:%d/", webPort), password)
		if err != nil {
			return err
		}
		// The window starts with the tab loaded and its stream open,
		// so that it measures an open tab, not the load.
		weight.startWindow()
		started()
		<-wctx.Done()
		weight.endWindow()
		live, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.documentElement.dataset.live || "never opened"`))
		if err == nil && live != "1" {
			return fmt.Errorf("the tab's live stream is %q at the end of the window", live)
		}
		if err != nil {
			return fmt.Errorf("asking the page: %w", err)
		}
		tasks, _ = chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("li.task").length`))
		running, _ = chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("li.task.running").length`))
		if os.Getenv("WEBCOST_DEBUG") != "" {
			txt, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("main").innerText.slice(0, 3000)`))
			fmt.Println(txt)
			b, _ := os.ReadFile(logf.Name())
			fmt.Println(string(b[max(0, len(b)-8000):]))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if st := proj.Stats(); st.RPCs == 0 {
		return errors.New("the project saw no scheduler RPC")
	}
	weight.mu.Lock()
	defer weight.mu.Unlock()
	fmt.Printf("\nfirst load (login page, log in, dashboard, script, style sheet): %d requests, %d bytes over the wire (%d of them bodies)\n",
		weight.requests, weight.wire, weight.bodies)
	fmt.Printf("live stream, its first %s: %d bytes over the wire (what the page already holds is not sent again)\n", streamWindow, weight.stream)
	fmt.Printf("live stream over the open-tab window: %d updates %v, %d bytes of section HTML; the page showed %d tasks, %d running\n",
		weight.messages, weight.byName, weight.data, tasks, running)
	fmt.Printf("\ndaemon over %s each, test project tasks of %d s running (CPU ticks of 1/100 s)\n\n", duration, taskSecs)
	printTable(duration, closed, open)
	return nil
}

// window is the daemon's figures over one measurement window.
type window struct {
	ticks              int64
	rssMean, rssLast   int64 // kB
	hwm                int64 // kB, VmHWM since the window's start
	loadStart, loadEnd string
	samples            int
	hwmReset           bool
	elapsed            time.Duration
}

// measure runs during (when given) and, once it calls started (or at
// once without it), reads the daemon's CPU ticks and RSS over d.
func measure(ctx context.Context, pid int, d time.Duration, during func(ctx context.Context, started func()) error) (window, error) {
	var w window
	startc := make(chan struct{})
	var once sync.Once
	started := func() { once.Do(func() { close(startc) }) }
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	if during == nil {
		started()
		errc <- nil
	} else {
		go func() { errc <- during(dctx, started) }()
		select {
		case <-startc:
		case err := <-errc:
			if err == nil {
				err = errors.New("the open tab ended before the window")
			}
			return w, err
		case <-ctx.Done():
			return w, ctx.Err()
		}
	}
	// VmHWM is the peak since start; writing 5 to clear_refs resets it
	// (Linux 4.0), so that the peak is this window's.
	w.hwmReset = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
	w.loadStart = loadavg()
	before, err := clientproc.CPUTicks(pid)
	if err != nil {
		return w, err
	}
	t0 := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	end := time.After(d)
	var sum int64
loop:
	for {
		select {
		case <-ctx.Done():
			return w, ctx.Err()
		case <-end:
			break loop
		case <-tick.C:
			r, err := clientproc.ReadRSS(pid)
			if err != nil {
				return w, err
			}
			sum += r.Total
			w.samples++
			w.rssLast = r.Total
		}
	}
	after, err := clientproc.CPUTicks(pid)
	if err != nil {
		return w, err
	}
	w.elapsed = time.Since(t0)
	w.ticks = after - before
	w.loadEnd = loadavg()
	if w.samples > 0 {
		w.rssMean = sum / int64(w.samples)
	}
	w.hwm = vmHWM(pid)
	cancel()
	if err := <-errc; err != nil && !errors.Is(err, context.Canceled) {
		return w, err
	}
	return w, nil
}

func printTable(d time.Duration, closed, open window) {
	per20 := func(w window) float64 { return float64(w.ticks) * 20 / w.elapsed.Seconds() }
	mb := func(kb int64) float64 { return float64(kb) / 1024 }
	fmt.Printf("%-28s %12s %12s %12s\n", "", "no tab", "tab open", "difference")
	fmt.Printf("%-28s %12d %12d %12d\n", "CPU ticks, whole window", closed.ticks, open.ticks, open.ticks-closed.ticks)
	fmt.Printf("%-28s %12.2f %12.2f %12.2f\n", "CPU ticks per 20 s", per20(closed), per20(open), per20(open)-per20(closed))
	fmt.Printf("%-28s %12.1f %12.1f %12.1f\n", "RSS mean, MB", mb(closed.rssMean), mb(open.rssMean), mb(open.rssMean-closed.rssMean))
	fmt.Printf("%-28s %12.1f %12.1f %12.1f\n", "RSS at the end, MB", mb(closed.rssLast), mb(open.rssLast), mb(open.rssLast-closed.rssLast))
	hwm := "RSS peak (VmHWM), MB"
	if !closed.hwmReset || !open.hwmReset {
		hwm = "VmHWM since start, MB"
	}
	fmt.Printf("%-28s %12.1f %12.1f %12.1f\n", hwm, mb(closed.hwm), mb(open.hwm), mb(open.hwm-closed.hwm))
	fmt.Printf("%-28s %16s %16s\n", "load average at the start", closed.loadStart, open.loadStart)
	fmt.Printf("%-28s %16s %16s\n", "load average at the end", closed.loadEnd, open.loadEnd)
	fmt.Printf("(target, issue 31: within 1 tick per 20 s and 2 MB of the closed-tab figures; windows of %s)\n", d)
}

// pageWeight is what the first load cost over the wire, and what the
// live stream sent during the measurement window.
type pageWeight struct {
	mu           sync.Mutex
	requests     int
	wire, bodies int64
	stream       int64
	window       bool // counting the stream's messages
	messages     int
	data         int64
	byName       map[string]int
}

func (w *pageWeight) startWindow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.window = true
}

func (w *pageWeight) endWindow() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.window = false
}

// streamWindow is how long the live stream's first bytes are counted.
const streamWindow = 5 * time.Second

func openTab(ctx context.Context, bin, tmp string) (context.Context, func(), error) {
	dir, err := os.MkdirTemp(tmp, "chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(dir),
		chromedp.WindowSize(412, 915),
		chromedp.Flag("disable-gpu", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelA := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	done := func() { cancelB(); cancelA() }
	if err := chromedp.Do(bctx); err != nil {
		done()
		return nil, nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	return bctx, done, nil
}

// firstLoad logs in and waits for the dashboard and its stream, counting
// the bytes of every request as Chromium's network domain reports them;
// it goes on counting the stream's messages until ctx ends.
func firstLoad(ctx context.Context, base, password string) (*pageWeight, error) {
	w := &pageWeight{byName: map[string]int{}}
	var (
		streamID network.RequestID
		counting = true // the first load's requests
		first    = true // the stream's first seconds
	)
	err := chromedp.Listen(ctx, func(ev any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if strings.Contains(e.Request.URL, "/events") {
				streamID = e.RequestID
			}
		case *network.EventDataReceived:
			if e.RequestID == streamID {
				if first {
					w.stream += e.EncodedDataLength
				}
			} else if counting {
				w.bodies += e.DataLength
			}
		case *network.EventLoadingFinished:
			if counting && e.RequestID != streamID {
				w.requests++
				w.wire += int64(e.EncodedDataLength)
			}
		case *network.EventEventSourceMessageReceived:
			if w.window {
				w.messages++
				w.data += int64(len(e.Data))
				w.byName[e.EventName]++
			}
		}
	})
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx,
		chromedp.Navigate(base),
		chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Submit(chromedp.CSS(`#password`)),
		chromedp.WaitVisible(chromedp.CSS(`#tasks`)),
	); err != nil {
		return nil, fmt.Errorf("logging in to the dashboard: %w", err)
	}
	if _, err := chromedp.Run(tctx, chromedp.Poll[bool](`document.documentElement.dataset.live === "1"`, chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		return nil, fmt.Errorf("waiting for the live stream: %w", err)
	}
	w.mu.Lock()
	counting = false
	w.mu.Unlock()
	if err := sleep(ctx, streamWindow); err != nil {
		return nil, err
	}
	w.mu.Lock()
	first = false
	w.mu.Unlock()
	return w, nil
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
