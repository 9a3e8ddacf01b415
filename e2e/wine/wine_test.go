//go:build linux

package wine

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
)

const (
	guiPassword = "wine-e2e-password"
	accountKey  = "wine-e2e-account-key"
	// The platforms a 64-bit Windows client names in its scheduler
	// requests (CLIENT_STATE::detect_platforms, write_platforms).
	wantPlatform    = "windows_x86_64"
	wantAltPlatform = "windows_intelx86"
	// appFile is the demo app as a Windows project installs it:
	// boincd-demo.exe is a multi-call binary that runs the app when its
	// name begins with boincd_demoapp.
	appFile = demoapp.BinaryPrefix + "_1.00_" + wantPlatform + ".exe"
	// taskSeconds is the CPU time of the run and service tasks: long
	// enough for a checkpoint (disk_interval 1 s) and a suspension before
	// they end, short enough for the 2-CPU CI machine.
	taskSeconds = 8
)

// TestWindowsBuildUnderWine runs boincd.exe and boincd-demo.exe under
// Wine: the demo, a foreground daemon driven by boinccmd, and the Windows
// service (see doc.go).
func TestWindowsBuildUnderWine(t *testing.T) {
	tl := findTools(t)
	modRoot := moduleRoot(t)
	root := t.TempDir()
	rep := &report{}
	start := time.Now()
	var w *winEnv
	defer func() {
		if w != nil {
			s := time.Now()
			w.stop(t)
			rep.add("stop: wineserver -k, holder ended", "ok", time.Since(s))
		}
		rep.add("in all", map[bool]string{true: "FAIL", false: "ok"}[t.Failed()], time.Since(start))
		tbl := rep.String()
		t.Log("boincd's Windows build under Wine:\n" + tbl)
		if !testing.Verbose() {
			fmt.Print("boincd's Windows build under Wine:\n" + tbl)
		}
		if p := os.Getenv(envReport); p != "" {
			if err := os.WriteFile(p, []byte("boincd's Windows build under Wine (e2e/wine):\n"+tbl), 0o644); err != nil {
				t.Errorf("writing the table to %s: %v", p, err)
			}
		}
	}()

	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	var dll string
	const built = "build boincd.exe, boincd-demo.exe (GOOS=windows), bcryptprimitives.dll"
	s := time.Now()
	rep.add(built, "FAIL", 0) // replaced below unless a build fails
	buildWindows(t, tl, modRoot, bin)
	dll = buildDLL(t, tl, bin)
	rep.rows[len(rep.rows)-1] = [3]string{built, "ok", fmt.Sprintf("%.1f", time.Since(s).Seconds())}
	var took time.Duration
	w, took = newWinEnv(t, tl, root, dll)
	rep.add("wineboot -i (fresh WINEPREFIX)", "ok", took)
	// The binaries go to C:\boincd, as an installer would put them.
	if err := os.MkdirAll(w.drive("boincd"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.boincd, w.demo = w.drive("boincd", "boincd.exe"), w.drive("boincd", "boincd-demo.exe")
	for _, f := range [][2]string{{"boincd.exe", w.boincd}, {"boincd-demo.exe", w.demo}} {
		if err := copyFile(filepath.Join(bin, f[0]), f[1]); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("demo", func(t *testing.T) { testDemo(t, w, rep) })
	t.Run("run", func(t *testing.T) { testForeground(t, w, rep) })
	t.Run("service", func(t *testing.T) { testService(t, w, rep) })
}

// testDemo runs the README's first command, the Windows build: 4 tasks,
// all computed, uploaded, reported and acknowledged.
func testDemo(t *testing.T, w *winEnv, rep *report) {
	rep.step(t, "tasks", "demo: boincd-demo.exe --tasks 4, all succeed and are acked", func(t *testing.T) {
		out, err := w.run(150*time.Second, "demo", w.demo, "--tasks", "4", "--seconds", "2")
		if err != nil {
			t.Fatalf("boincd-demo.exe: %v\n%s", err, out)
		}
		for _, want := range []string{
			"tasks received 4 of 4, succeeded 4, failed 0",
			"results reported and acknowledged by the project: 4",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("boincd-demo.exe's summary lacks %q:\n%s", want, out)
			}
		}
	})
}

// newProject starts a test project on 127.0.0.1 with one job of the demo
// app as a Windows app.
func newProject(t *testing.T, w *winEnv, name string) *testproject.Server {
	t.Helper()
	srv, err := testproject.New(testproject.Config{
		Name: "boincd Wine " + name,
		Apps: []testproject.App{{
			Name: "demoapp", FriendlyName: "boincd demo (Windows)", VersionNum: 100, APIVersion: "7.20.5",
			Files:    []testproject.AppFile{{Name: appFile, Path: w.demo, Executable: true, MainProgram: true}},
			AvgNCPUs: 1, Flops: 1e9,
		}},
		Job: testproject.JobTemplate{
			CommandLine:       fmt.Sprintf("--seconds %d --seed {seed}", taskSeconds),
			FpopsEst:          taskSeconds * 1e9,
			FpopsBound:        taskSeconds * 1e9 * 50,
			Deadline:          24 * time.Hour,
			InputSize:         4096,
			ReportImmediately: true,
		},
		TotalJobs: 1, MaxJobsPerRPC: 1, RequestDelay: time.Second,
	})
	if err == nil {
		err = srv.Start()
	}
	if err != nil {
		t.Fatalf("test project: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// writeDataDir puts the config and the GUI RPC password into a data
// directory: the project, checkpoints every second, and no "CPU busy"
// suspension (the CI machine runs other tests beside this one).
func writeDataDir(t *testing.T, dir string, srv *testproject.Server, guiAddr string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if guiAddr != "" {
		fmt.Fprintf(&b, "[gui_rpc]\naddress = %q\n\n", guiAddr)
	}
	// leave_apps_in_memory: a task suspended from boinccmd stays in
	// memory (SUSPENDED) whether or not its app has checkpointed yet;
	// without it, one that had checkpointed is asked to quit
	// (daemon.preempt, ACTIVE_TASK::preempt), which the suspend step
	// met now and then. Stopping the service still makes tasks quit.
	b.WriteString("[prefs]\ndisk_interval = 1\nsuspend_cpu_usage = 0\nleave_apps_in_memory = true\n\n")
	fmt.Fprintf(&b, "[[project]]\nurl = %q\nauthenticator = %q\n", srv.URL(), accountKey)
	for name, data := range map[string]string{"boincd.toml": b.String(), "gui_rpc_auth.cfg": guiPassword + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// waitReported waits until the project has acked the one result it sent
// and has its output, and returns what was reported.
func waitReported(t *testing.T, srv *testproject.Server, timeout time.Duration, diag func() string) testproject.ReportedResult {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st := srv.Stats()
		if len(st.Sent) == 1 && len(st.Acked) >= 1 {
			name := st.Sent[0]
			rr, ok := st.ReportedResults[name]
			if !ok {
				t.Fatalf("the project acked %v but has no report of %s", st.Acked, name)
			}
			if rr.ExitStatus != 0 {
				t.Errorf("%s reported with exit status %d; stderr:\n%s", name, rr.ExitStatus, rr.StderrOut)
			}
			out := st.Uploaded[st.Jobs[name].OutputFiles[0]]
			want := fmt.Sprintf("demoapp output\nseed: %d\n", st.Jobs[name].Seed)
			if !bytes.HasPrefix(out, []byte(want)) || !bytes.Contains(out, []byte("\ninput bytes: 4096\n")) {
				t.Errorf("the uploaded output of %s is %q, want %q... with input bytes: 4096", name, out, want)
			}
			if !strings.Contains(rr.StderrOut, "demoapp: done") {
				t.Errorf("%s: the app's stderr lacks \"demoapp: done\":\n%s", name, rr.StderrOut)
			}
			return rr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the result was not reported within %v (sent %v, acked %v, uploaded %d files, errors %v)\n%s",
				timeout, st.Sent, st.Acked, len(st.Uploaded), st.Errors, diag())
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// tailFile is the last n lines of a log file.
func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// testForeground runs boincd.exe run in the foreground, attached to a
// test project, and drives it with the Linux boinccmd.
func testForeground(t *testing.T, w *winEnv, rep *report) {
	srv := newProject(t, w, "run")
	dir := w.drive("boincd-run")
	writeDataDir(t, dir, srv, "")
	port := freePort(t)
	c := boinccmd{bin: w.tl.boinccmd, addr: fmt.Sprintf("127.0.0.1:%d", port), pass: guiPassword}
	daemon, logPath, err := w.start("boincd-run", w.boincd, "run", "--dir", w.winPath(dir),
		"--gui_rpc_port", strconv.Itoa(port), "--skip_cpu_benchmarks")
	if err != nil {
		t.Fatalf("starting boincd.exe run: %v", err)
	}
	diag := func() string { return "boincd.exe run's log, last lines:\n" + tailFile(logPath, 40) }
	url := srv.URL()
	t.Cleanup(func() {
		// After a failed step: ask the daemon to quit, so it computes
		// nothing beside the service test (the end of the test kills
		// whatever is left).
		if ended, _ := daemon.wait(0); !ended {
			c.exec("--quit")
			daemon.wait(30 * time.Second)
		}
	})

	var name string
	if !rep.step(t, "executing", "run: boincd.exe run fetches the task, it executes", func(t *testing.T) {
		tk, err := c.waitTask("executing task", 90*time.Second, func(tk task) bool {
			return tk["active_task_state"] == "EXECUTING" && tk.num("fraction done") > 0
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, diag())
		}
		name = tk["name"]
	}) {
		return
	}
	rep.step(t, "suspend_resume", "run: boinccmd --task suspend, resume", func(t *testing.T) {
		if out, err := c.exec("--task", url, name, "suspend"); err != nil {
			t.Fatalf("boinccmd --task %s suspend: %v\n%s", name, err, out)
		}
		if _, err := c.waitTask("suspended task", 30*time.Second, func(tk task) bool {
			return tk["suspended via GUI"] == "yes" && tk["active_task_state"] == "SUSPENDED"
		}); err != nil {
			t.Fatalf("%v\n%s", err, diag())
		}
		// A suspended app computes nothing: its CPU time comes to a stop.
		// The numbers boinccmd shows lag by up to a second (the app
		// reports once a second, and finishes its batch on the message),
		// so the test waits for one that holds for 2 s.
		held, err := c.steadyCPU(2*time.Second, 20*time.Second)
		if err != nil {
			t.Fatalf("suspended, the task computes on: %v\n%s", err, diag())
		}
		if out, err := c.exec("--task", url, name, "resume"); err != nil {
			t.Fatalf("boinccmd --task %s resume: %v\n%s", name, err, out)
		}
		// Resumed, it computes again (or has finished already).
		if _, err := c.waitTask("resumed task computing", 30*time.Second, func(tk task) bool {
			_, susp := tk["suspended via GUI"]
			return !susp && (tk["active_task_state"] == "EXECUTING" && tk.num("current CPU time") > held || tk["ready to report"] == "yes")
		}); err != nil {
			t.Fatalf("%v\n%s", err, diag())
		}
	})
	rep.step(t, "checkpoint", "run: the task checkpoints", func(t *testing.T) {
		if _, err := c.waitTask("checkpoint", 60*time.Second, func(tk task) bool {
			return tk.num("CPU time at last checkpoint") > 0
		}); err != nil {
			t.Fatalf("%v\n%s", err, diag())
		}
	})
	var req []byte
	rep.step(t, "reported", "run: output uploaded, result reported and acked", func(t *testing.T) {
		waitReported(t, srv, 90*time.Second, diag)
		req = srv.Stats().LastRequest
	})
	rep.step(t, "platforms", "run: request names "+wantPlatform+", alt "+wantAltPlatform, func(t *testing.T) {
		checkPlatforms(t, req)
	})
	rep.step(t, "quit", "run: boinccmd --quit, boincd.exe exits 0", func(t *testing.T) {
		if out, err := c.exec("--quit"); err != nil {
			t.Fatalf("boinccmd --quit: %v\n%s", err, out)
		}
		ok, err := daemon.wait(60 * time.Second)
		switch {
		case !ok:
			t.Fatalf("boincd.exe run still running 60 s after --quit\n%s", diag())
		case err != nil:
			t.Errorf("boincd.exe run: %v\n%s", err, diag())
		}
		if log, _ := os.ReadFile(logPath); !bytes.Contains(log, []byte("boincd stopped")) {
			t.Errorf("boincd.exe run exited without logging its stop\n%s", diag())
		}
	})
}

// checkPlatforms checks a scheduler request's platforms: a 64-bit Windows
// client asks for windows_x86_64 work and also runs windows_intelx86.
func checkPlatforms(t *testing.T, req []byte) {
	t.Helper()
	if len(req) == 0 {
		t.Fatal("the project saw no scheduler request")
	}
	primary := regexp.MustCompile(`<platform_name>\s*` + wantPlatform + `\s*</platform_name>`)
	alt := regexp.MustCompile(`<alt_platform>\s*<name>\s*` + wantAltPlatform + `\s*</name>\s*</alt_platform>`)
	var got []string
	for _, m := range regexp.MustCompile(`<platform_name>[^<]*</platform_name>|<alt_platform>\s*<name>[^<]*</name>`).FindAll(req, -1) {
		got = append(got, strings.Join(strings.Fields(string(m)), ""))
	}
	if !primary.Match(req) {
		t.Errorf("the scheduler request does not name <platform_name>%s</platform_name>; its platforms: %v", wantPlatform, got)
	}
	if !alt.Match(req) {
		t.Errorf("the scheduler request has no <alt_platform><name>%s</name></alt_platform>; its platforms: %v", wantAltPlatform, got)
	}
}

// scState is the STATE number `sc query boincd` prints (1 stopped,
// 4 running), or an error with its output.
func scState(w *winEnv) (int, string, error) {
	// Wine's sc.exe exits 1 after printing the state of a stopped
	// service: the output counts, not the exit status.
	out, err := w.run(30*time.Second, "sc-query", "sc", "query", "boincd")
	m := regexp.MustCompile(`STATE\s*:\s*(\d+)`).FindStringSubmatch(out)
	if m == nil {
		return 0, out, fmt.Errorf("sc query boincd: no STATE (%v):\n%s", err, out)
	}
	n, _ := strconv.Atoi(m[1])
	return n, out, nil
}

// waitState polls sc query until the service is in state want.
func waitState(t *testing.T, w *winEnv, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		n, out, err := scState(w)
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("service not in state %d within %v: state %d, %v\n%s", want, timeout, n, err, out)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// testService installs boincd as a service in Wine's service manager and
// starts, stops and restarts it around a task's checkpoint.
func testService(t *testing.T, w *winEnv, rep *report) {
	srv := newProject(t, w, "service")
	port := freePort(t)
	c := boinccmd{bin: w.tl.boinccmd, addr: fmt.Sprintf("127.0.0.1:%d", port), pass: guiPassword}
	dir := w.drive("ProgramData", "boincd") // the service's default data directory
	diag := func() string {
		out, err := c.exec("--get_messages", "0")
		if err != nil {
			return fmt.Sprintf("(boinccmd --get_messages: %v)", err)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		return "the service's messages (boinccmd --get_messages), last lines:\n" + strings.Join(lines[max(0, len(lines)-30):], "\n")
	}

	if !rep.step(t, "install", "service: boincd.exe service install --manual", func(t *testing.T) {
		out, err := w.run(60*time.Second, "service-install", w.boincd, "service", "install", "--manual")
		if err != nil {
			t.Fatalf("boincd.exe service install --manual: %v\n%s", err, out)
		}
		t.Logf("service install:\n%s", out)
		waitState(t, w, 1, 30*time.Second)
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Fatalf("install made no data directory %s: %v", w.winPath(dir), err)
		}
		writeDataDir(t, dir, srv, c.addr)
	}) {
		return
	}

	var name, slot string
	if !rep.step(t, "start", "service: net start, the task runs and checkpoints", func(t *testing.T) {
		if out, err := w.run(60*time.Second, "net-start", "net", "start", "boincd"); err != nil {
			t.Fatalf("net start boincd: %v\n%s", err, out)
		}
		waitState(t, w, 4, 30*time.Second)
		tk, err := c.waitTask("checkpointed task", 120*time.Second, func(tk task) bool {
			return tk["active_task_state"] == "EXECUTING" && tk.num("CPU time at last checkpoint") > 0
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, diag())
		}
		name, slot = tk["name"], tk["slot"]
	}) {
		return
	}
	if !rep.step(t, "stop", "service: net stop, stopped with the task unfinished", func(t *testing.T) {
		if out, err := w.run(120*time.Second, "net-stop", "net", "stop", "boincd"); err != nil {
			t.Fatalf("net stop boincd: %v\n%s", err, out)
		}
		waitState(t, w, 1, 90*time.Second)
		if st := srv.Stats(); len(st.Reported) > 0 {
			t.Fatalf("the task ended before the stop (reported %v): no resume to check; a longer task is needed", st.Reported)
		}
		ckpt := filepath.Join(dir, "slots", slot, demoapp.CheckpointName)
		if _, err := os.Stat(ckpt); err != nil {
			t.Errorf("no checkpoint of %s in its slot after the stop: %v", name, err)
		}
	}) {
		return
	}
	rep.step(t, "restart", "service: net start, resumed from checkpoint, reported", func(t *testing.T) {
		if out, err := w.run(60*time.Second, "net-start-2", "net", "start", "boincd"); err != nil {
			t.Fatalf("net start boincd (again): %v\n%s", err, out)
		}
		waitState(t, w, 4, 30*time.Second)
		rr := waitReported(t, srv, 120*time.Second, diag)
		if !strings.Contains(rr.StderrOut, "resumed from checkpoint") {
			t.Errorf("%s: the app did not resume from its checkpoint; stderr:\n%s", name, rr.StderrOut)
		}
	})
	rep.step(t, "uninstall", "service: net stop, service uninstall", func(t *testing.T) {
		if out, err := w.run(120*time.Second, "net-stop-2", "net", "stop", "boincd"); err != nil {
			t.Fatalf("net stop boincd (at the end): %v\n%s", err, out)
		}
		waitState(t, w, 1, 90*time.Second)
		out, err := w.run(60*time.Second, "service-uninstall", w.boincd, "service", "uninstall")
		if err != nil {
			t.Fatalf("boincd.exe service uninstall: %v\n%s", err, out)
		}
		// sc query says nothing either way under WINEDEBUG=-all; reg
		// query says whether the service's key is gone.
		out, err = w.run(30*time.Second, "reg-query", "reg", "query", `HKLM\System\CurrentControlSet\Services\boincd`)
		if err == nil || !strings.Contains(out, "Unable to find") {
			t.Errorf("the service's registry key is still there after uninstall (%v):\n%s", err, out)
		}
	})
}
