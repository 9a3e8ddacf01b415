package apptest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"golang.org/x/sys/unix"
)

// The harness runs the real daemon in-process against a real testproject
// server on 127.0.0.1 that hands out real programs: the BOINC-API app
// compiled from testdata/apiapp.cpp, or a shell script. Only the daemon's
// intervals are shortened.

// apiProject starts a project serving the compiled BOINC-API app and one
// job with the given command line.
func apiProject(t *testing.T, appPath, cmdline string) *testproject.Server {
	t.Helper()
	return startProject(t, testproject.App{
		Name:       "apiapp",
		APIVersion: "7.20.5",
		Files:      []testproject.AppFile{{Name: apiAppName, Path: appPath, Executable: true, MainProgram: true}},
	}, cmdline)
}

// startProject starts a project that hands out exactly one job of app.
func startProject(t *testing.T, app testproject.App, cmdline string) *testproject.Server {
	t.Helper()
	return testsupport.StartProject(t, testproject.Config{
		Apps:          []testproject.App{app},
		Job:           testproject.JobTemplate{CommandLine: cmdline, InputSize: 4096},
		TotalJobs:     1,
		MaxJobsPerRPC: 1,
		RequestDelay:  -1,
	})
}

// daemonConfig attaches to srv; diskInterval > 0 sets the checkpoint
// period apps are given (init_data.xml checkpoint_period).
//
// suspend_cpu_usage is 0 (never suspend for non-BOINC CPU load): the
// tests run in parallel, and every other test's app, compiler or daemon
// is non-BOINC load to this daemon, which with the default 25% would
// suspend its task at random.
func daemonConfig(srv *testproject.Server, diskInterval float64) *config.Config {
	cfg := config.Default()
	cfg.Projects = []config.Project{{URL: srv.URL(), Authenticator: "test-account-key", ResourceShare: 100}}
	// CI runs as root; the refusal of root apps has its own tests.
	cfg.AllowRootApps = true
	noCPUSuspend := 0.0
	cfg.Prefs.SuspendCPUUsage = &noCPUSuspend
	if diskInterval > 0 {
		cfg.Prefs.DiskInterval = &diskInterval
	}
	return cfg
}

// harness is one daemon running in the background of a test.
type harness struct {
	t       *testing.T
	d       *daemon.Daemon
	logs    *testsupport.LogBuffer
	dataDir string
	run     *testsupport.Runner
}

// startDaemon runs a daemon on dataDir until the test ends (or stop).
// The cleanup is registered after the project's, so the daemon stops
// before the server closes.
func startDaemon(t *testing.T, dataDir string, cfg *config.Config) *harness {
	t.Helper()
	h := &harness{t: t, logs: &testsupport.LogBuffer{}, dataDir: dataDir}
	d, err := daemon.New(daemon.Options{
		DataDir:           dataDir,
		Config:            cfg,
		Logger:            slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PollInterval:      100 * time.Millisecond,
		WorkFetchInterval: 500 * time.Millisecond,
		RPCBackoffMin:     500 * time.Millisecond,
		XferBackoffMin:    500 * time.Millisecond,
		FetchBackoffMin:   500 * time.Millisecond,
		GUIRPCAddr:        "127.0.0.1:0",
		MaxReportDelay:    200 * time.Millisecond,
		QuitGrace:         5 * time.Second,
		BenchmarkDuration: -1,
		// no test reaches BOINC's web site (port 1 refuses at once)
		ProjectListURL: "http://127.0.0.1:1/project_list.php",
		Seed:           42,
		// No container engine: the machine's podman or docker is not
		// run by these tests.
		Containers: container.Exec{Env: []string{"PATH="}},
	})
	if err != nil {
		t.Fatalf("daemon.New: %v", err)
	}
	h.d = d
	h.run = testsupport.Run(t, d.Run, 20*time.Second, h.logs, dataDir)
	return h
}

// stop cancels the daemon (a graceful shutdown: tasks are sent <quit/>)
// and waits up to limit for Run to return. It may be called twice.
func (h *harness) stop(limit time.Duration) error { return h.run.Stop(limit) }

// task returns the daemon's view of its only task, if it has one.
func (h *harness) task() (daemon.TaskView, bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := h.d.Snapshot(ctx)
	if err != nil {
		h.t.Fatalf("Snapshot: %v (is the daemon loop blocked?)", err)
	}
	if len(v.Tasks) == 0 {
		return daemon.TaskView{}, false
	}
	return v.Tasks[0], true
}

// waitRunning waits until the daemon runs its task and returns it.
func (h *harness) waitRunning(limit time.Duration) daemon.TaskView {
	h.t.Helper()
	var tv daemon.TaskView
	waitFor(h.t, limit, "the task to run", func() bool {
		var ok bool
		tv, ok = h.task()
		return ok && tv.Running
	})
	return tv
}

// gui opens an authorized GUI RPC connection to the daemon, with the
// password the daemon wrote to DATADIR/gui_rpc_auth.cfg.
func (h *harness) gui() *client.Client {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var addr string
	waitFor(h.t, 10*time.Second, "GUI RPC to listen", func() bool {
		a, err := h.d.GUIRPCAddr(ctx)
		addr = a
		return err == nil && a != ""
	})
	pw, err := os.ReadFile(filepath.Join(h.dataDir, "gui_rpc_auth.cfg"))
	if err != nil {
		h.t.Fatalf("GUI RPC password: %v", err)
	}
	c, err := client.Dial(ctx, addr)
	if err != nil {
		h.t.Fatalf("GUI RPC dial %s: %v", addr, err)
	}
	h.t.Cleanup(func() { _ = c.Close() })
	if err := c.Authorize(ctx, strings.TrimSpace(string(pw))); err != nil {
		h.t.Fatalf("GUI RPC authorize: %v", err)
	}
	return c
}

// resultOp sends suspend_result, resume_result or abort_result for the
// task over GUI RPC, as boinccmd --task URL NAME OP does.
func resultOp(t *testing.T, c *client.Client, op, url, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := fmt.Sprintf("<%s>\n<project_url>%s</project_url>\n<name>%s</name>\n</%s>", op, url, name, op)
	body, err := c.Call(ctx, req)
	if err != nil {
		t.Fatalf("GUI RPC %s: %v", op, err)
	}
	if !bytes.Contains(body, []byte("<success/>")) {
		t.Fatalf("GUI RPC %s: reply %q, want <success/>", op, body)
	}
}

// activeResult returns the task's GUI RPC form (get_results), which
// carries the process id and the checkpoint CPU time.
func activeResult(t *testing.T, c *client.Client, name string) (client.Result, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, err := c.GetResults(ctx, false)
	if err != nil {
		t.Fatalf("GUI RPC get_results: %v", err)
	}
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return client.Result{}, false
}

// waitFor is testsupport.WaitFor polling every 50 ms, as these tests
// always have (their conditions are daemon snapshots and GUI RPCs).
func waitFor(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	testsupport.Poll(t, 50*time.Millisecond, limit, what, cond)
}

// waitReported waits until the server got the report of its one job and
// returns that report.
func waitReported(t *testing.T, srv *testproject.Server, limit time.Duration) (string, testproject.ReportedResult, testproject.Stats) {
	t.Helper()
	var st testproject.Stats
	waitFor(t, limit, "the result to be reported", func() bool {
		st = srv.Stats()
		return len(st.Sent) == 1 && st.Reported[st.Sent[0]] > 0
	})
	name := st.Sent[0]
	return name, st.ReportedResults[name], st
}

// readProcStat reads /proc/PID/stat; ok is false once the process is
// gone.
func readProcStat(pid int) (testsupport.ProcStat, bool, error) {
	return testsupport.Proc(pid).Stat()
}

// mustProcStat is readProcStat failing the test when the process is gone.
func mustProcStat(t *testing.T, pid int) testsupport.ProcStat {
	t.Helper()
	s, ok, err := readProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("process %d is gone", pid)
	}
	return s
}

// processGroup lists the live (non-zombie) processes of group pgid.
func processGroup(t *testing.T, pgid int) map[int]testsupport.ProcStat {
	t.Helper()
	out := map[int]testsupport.ProcStat{}
	for p := range testsupport.Processes() {
		s, ok, err := p.Stat()
		if err != nil || !ok || s.PGRP != pgid || s.State == 'Z' {
			continue
		}
		out[int(p)] = s
	}
	return out
}

// cpuOver measures how much CPU time pid uses over d.
func cpuOver(t *testing.T, pid int, d time.Duration) float64 {
	t.Helper()
	before := mustProcStat(t, pid).CPU
	time.Sleep(d)
	return mustProcStat(t, pid).CPU - before
}

// normalPriority gives the app process group of pid nice 0 where the test
// may (as root, as in CI). boincd runs apps at nice 19, where a machine
// running other test packages on every CPU gives one about 1.5% of a CPU
// (CFS weight 15 against 1024 per busy process): a test about
// suspension, checkpoints or limits would then time out waiting for the
// app rather than for what it tests.
func normalPriority(t *testing.T, pid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	if err := unix.Setpriority(unix.PRIO_PGRP, pid, 0); err != nil {
		t.Logf("renice the app to 0: %v", err)
	}
}
