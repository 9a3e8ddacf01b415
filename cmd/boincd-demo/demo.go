package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/tty"
	"github.com/boincd/boincd/platform"
)

// runDemo starts the built-in demo project on loopback, attaches a daemon
// to it and shows live progress until every task is computed, uploaded,
// reported and acknowledged, or until Ctrl-C.
func runDemo(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd-demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tasks := fs.Int("tasks", 6, "number of tasks the demo project hands out")
	seconds := fs.Int("seconds", 20, "CPU seconds of real work per task")
	dir := fs.String("dir", "", "data directory (default: a temporary one, removed at the end)")
	keep := fs.Bool("keep", false, "keep the temporary data directory")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *tasks < 1 || *seconds < 1 {
		fmt.Fprintln(stderr, "boincd-demo: --tasks and --seconds must be at least 1")
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "boincd-demo: cannot find my own executable:", err)
		return 1
	}
	dataDir := *dir
	if dataDir == "" {
		dataDir, err = os.MkdirTemp("", "boincd-demo-")
		if err != nil {
			fmt.Fprintln(stderr, "boincd-demo:", err)
			return 1
		}
		if !*keep {
			defer os.RemoveAll(dataDir)
		}
	}
	logPath := filepath.Join(dataDir, "boincd.log")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		fmt.Fprintln(stderr, "boincd-demo:", err)
		return 1
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		fmt.Fprintln(stderr, "boincd-demo:", err)
		return 1
	}
	defer logFile.Close()
	logger := slog.New(slog.NewTextHandler(logFile, &slog.HandlerOptions{Level: slog.LevelInfo}))

	// The demo app is this very binary under another name (a multi-call
	// binary), so the demo needs nothing but `go run`.
	appName := demoapp.BinaryPrefix + "_1.00_" + platform.This()
	srv, err := testproject.New(testproject.Config{
		Name: "boincd demo project",
		Apps: []testproject.App{{
			Name: "demoapp", FriendlyName: "boincd demo (prime counting)", VersionNum: 100, APIVersion: "7.20.5",
			Files:    []testproject.AppFile{{Name: appName, Path: exe, Executable: true, MainProgram: true}},
			AvgNCPUs: 1, Flops: 1e9,
		}},
		Job: testproject.JobTemplate{
			CommandLine:       fmt.Sprintf("--seconds %d --seed {seed}", *seconds),
			FpopsEst:          float64(*seconds) * 1e9,
			FpopsBound:        float64(*seconds) * 1e9 * 50,
			Deadline:          24 * time.Hour,
			InputSize:         4096,
			ReportImmediately: true,
		},
		TotalJobs:     *tasks,
		MaxJobsPerRPC: 2,
		RequestDelay:  time.Second,
		Logger:        logger.With(slog.String("component", "demo-project")),
	})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd-demo: cannot start the demo project:", err)
		return 1
	}
	defer srv.Close()

	cfg := config.Default()
	// The demo's app is boincd itself: nothing untrusted runs, so a
	// root user may watch the demo too.
	cfg.AllowRootApps = true
	// The demo is watched, not left alone: a busy machine (say, the go
	// build that started it) must not pause it as "CPU busy".
	noCPULimit := 0.0
	cfg.Prefs.SuspendCPUUsage = &noCPULimit
	// The demo project sends no container apps: looking for podman would
	// only leave its rootless pause process behind when the demo ends.
	cfg.DontUseDocker = true
	cfg.Projects = []config.Project{{URL: srv.URL(), Authenticator: "demo-account-key", ResourceShare: 100}}
	d, err := daemon.New(daemon.Options{
		DataDir: dataDir, Config: cfg, Logger: logger, ExitWhenIdle: true,
		WorkFetchInterval: 5 * time.Second, RPCBackoffMin: 5 * time.Second,
		XferBackoffMin: 5 * time.Second, FetchBackoffMin: 5 * time.Second,
		BenchmarkDuration: 300 * time.Millisecond,
		// Ports of its own, so that the demo neither collides with a
		// BOINC client already running here nor shows that one's tasks.
		GUIRPCAddr: "127.0.0.1:0", WebAddr: "127.0.0.1:0",
	})
	if err != nil {
		fmt.Fprintln(stderr, "boincd-demo:", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	fmt.Fprintf(stdout, "boincd-demo: project %s, %d tasks of ~%d CPU seconds, data in %s (log: %s)\n", srv.URL(), *tasks, *seconds, dataDir, logPath)
	dash := dashboardLine(ctx, d, dataDir)
	if dash != "" {
		fmt.Fprintln(stdout, dash)
	}
	onTTY := tty.Is(stdout)
	start := time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last daemon.View
	var runErr error
loop:
	for {
		select {
		case runErr = <-done:
			break loop
		case <-tick.C:
			qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			v, err := d.Snapshot(qctx)
			cancel()
			if err != nil {
				continue
			}
			last = v
			render(stdout, v, srv.Stats(), time.Since(start), dash, onTTY)
		}
	}
	st := srv.Stats()
	last = d.FinalView()
	fmt.Fprintln(stdout)
	if ctx.Err() != nil {
		fmt.Fprintln(stdout, "interrupted: tasks were asked to quit and would resume from their checkpoints next time")
	}
	summary(stdout, last, st, *tasks, time.Since(start))
	if runErr != nil && !errors.Is(runErr, daemon.ErrIdle) {
		fmt.Fprintln(stderr, "boincd-demo:", runErr)
		return 1
	}
	return 0
}

// dashboardLine says where the demo daemon's web dashboard is and how to
// log in, once it listens ("" if it does not within a few seconds). The
// password is the demo's own, in its own data directory: showing it to
// whoever runs the demo gives away nothing.
func dashboardLine(ctx context.Context, d *daemon.Daemon, dataDir string) string {
	for range 50 {
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		u, err := d.WebURL(qctx)
		cancel()
		if err == nil && u != "" {
			line := "dashboard: " + u
			if pass, err := os.ReadFile(filepath.Join(dataDir, guirpc.PasswordFile)); err == nil {
				line += "  password: " + strings.TrimSpace(string(pass))
			}
			qctx, cancel := context.WithTimeout(ctx, time.Second)
			gui, err := d.GUIRPCAddr(qctx)
			cancel()
			if err == nil && gui != "" {
				line += "  (boinccmd --host " + gui + ")"
			}
			return line
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(100 * time.Millisecond):
		}
	}
	return ""
}

func render(w io.Writer, v daemon.View, st testproject.Stats, up time.Duration, dash string, tty bool) {
	var b strings.Builder
	if tty {
		b.WriteString("\033[H\033[2J")
	}
	fmt.Fprintf(&b, "boincd demo  %s  cpus %d  rpcs %d  downloads %d  uploads %d  acked %d/%d\n",
		up.Round(time.Second), v.CPUs, v.Stats.RPCs, v.Stats.Downloaded, v.Stats.Uploaded, len(st.Acked), len(st.Sent))
	if tty && dash != "" {
		// The screen is redrawn each second: keep the address on it.
		b.WriteString(dash + "\n")
	}
	for _, t := range v.Tasks {
		state := t.Phase.String()
		if t.Running {
			state = "running"
		} else if t.Suspended {
			state = "suspended"
		}
		fmt.Fprintf(&b, "  %-28s %s %5.1f%%  elapsed %6s  left %6s  %s\n", trim(t.Name, 28), bar(t.FractionDone, 20),
			100*t.FractionDone, fmtSecs(t.ElapsedSecs), fmtSecs(t.RemainingSecs), state)
	}
	for _, x := range v.Transfers {
		dir := "download"
		if x.Upload {
			dir = "upload"
		}
		fmt.Fprintf(&b, "  %s %s\n", dir, x.File)
	}
	if !tty {
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

func summary(w io.Writer, v daemon.View, st testproject.Stats, want int, took time.Duration) {
	fmt.Fprintf(w, "summary after %s:\n", took.Round(time.Second))
	fmt.Fprintf(w, "  tasks received %d of %d, succeeded %d, failed %d\n", len(st.Sent), want, v.Stats.TasksSucceeded, v.Stats.TasksFailed)
	fmt.Fprintf(w, "  results reported and acknowledged by the project: %d\n", len(st.Acked))
	fmt.Fprintf(w, "  scheduler RPCs %d (%d failed), downloads %d, uploads %d\n", v.Stats.RPCs, v.Stats.RPCFailures, v.Stats.Downloaded, v.Stats.Uploaded)
	var cpu float64
	for _, r := range st.ReportedResults {
		cpu += r.FinalCPUTime
	}
	fmt.Fprintf(w, "  CPU time computed: %s\n", fmtSecs(cpu))
	if left := len(v.Tasks); left > 0 {
		fmt.Fprintf(w, "  tasks still on the host: %d\n", left)
	}
}

func bar(f float64, n int) string {
	k := int(f*float64(n) + 0.5)
	k = max(0, min(n, k))
	return "[" + strings.Repeat("#", k) + strings.Repeat(".", n-k) + "]"
}

func fmtSecs(s float64) string {
	d := time.Duration(s) * time.Second
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func trim(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
