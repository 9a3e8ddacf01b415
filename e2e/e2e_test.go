//go:build unix

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/platform"
)

// step is one expected log line of a sequence.
type step struct {
	name string
	pred func(logLine) bool
}

// checkOrder asserts that lines matching the steps appear in d's log in
// this order.
func checkOrder(t *testing.T, d *daemonProc, what string, steps ...step) {
	t.Helper()
	lines := d.snapshot()
	at := 0
	for _, s := range steps {
		for at < len(lines) && !s.pred(lines[at]) {
			at++
		}
		if at == len(lines) {
			t.Errorf("%s: no %q in the log after the previous step", what, s.name)
			return
		}
	}
}

func TestTwoProjects(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	a := startProject(t, testproject.Config{Name: "project A", TotalJobs: 3,
		Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 3000}})
	b := startProject(t, testproject.Config{Name: "project B", TotalJobs: 3,
		Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 5000}})
	writeConfig(t, dir, configSpec{projects: []*project{a, b}})

	d := startDaemon(t, "daemon", childOptions{DataDir: dir})
	waitAllReported(t, d, a, 3, 90*time.Second)
	waitAllReported(t, d, b, 3, 90*time.Second)
	waitNoLeftovers(t, dir, 15*time.Second, a, b)
	d.stop()

	for _, p := range []*project{a, b} {
		checkReportedOnce(t, p, 3, refOutput(p, 1))
		url := p.URL()
		checkOrder(t, d, "project "+url,
			step{"attached to project", msgIs("attached to project", "project", url)},
			step{"fetching master page", msgIs("fetching master page", "project", url)},
			step{"found scheduler", msgIs("found scheduler", "project", url)},
			step{"sending scheduler request", msgIs("sending scheduler request", "project", url)},
			step{"scheduler request completed", msgIs("scheduler request completed", "project", url)},
		)
		st := p.Stats()
		for _, name := range st.Sent {
			j := st.Jobs[name]
			checkOrder(t, d, name,
				step{"finished download of " + j.InputFile, msgIs("finished download", "project", url, "file", j.InputFile)},
				step{"task files downloaded", msgIs("task files downloaded", "task", name)},
				step{"task started", msgIs("task started", "task", name)},
				step{"computation finished", msgIs("computation finished", "task", name)},
				step{"finished upload of " + j.OutputFiles[0], msgIs("finished upload", "project", url, "file", j.OutputFiles[0])},
				step{"ready to report", msgIs("ready to report", "task", name)},
				step{"result acknowledged", msgIs("result acknowledged", "task", name)},
			)
		}
	}
	if left := leftovers(dir, a, b); len(left) > 0 {
		t.Errorf("left behind after shutdown: %v", left)
	}
}

// killCase is one point of a task's life at which the daemon is killed.
type killCase struct {
	name string
	cfg  testproject.Config
	secs int // --seconds of the jobs
	// first: options of the run that gets killed (DataDir is filled in).
	first childOptions
	// holdFirst: the first run asks for work once (holdReports).
	holdFirst bool
	// atKillPoint returns once the first daemon reached the kill point.
	atKillPoint func(t *testing.T, d *daemonProc, p *project, dir string)
	// beforeRestart runs between the kill and the restart.
	beforeRestart func(p *project)
	// afterRestart runs right after the restarted daemon was started.
	afterRestart func(t *testing.T, restarted *daemonProc, dir string)
	// check, if set, runs at the end with the killed and the restarted
	// daemon.
	check func(t *testing.T, killed, restarted *daemonProc, p *project)
}

// wrapperScript runs the refapp as a child process and waits for it.
const wrapperScript = "#!/bin/sh\n" +
	"# The work runs in a child process, as under BOINC's wrapper.\n" +
	"cat > work.sh <<'WORK_EOF'\n" + testproject.RefAppScript + "WORK_EOF\n" +
	"sh work.sh \"$@\" &\n" +
	"wait $!\n"

func TestKill9Recovery(t *testing.T) {
	t.Parallel()
	job := func(secs, input int) testproject.JobTemplate {
		return testproject.JobTemplate{CommandLine: "--seconds " + strconv.Itoa(secs), InputSize: input}
	}
	isInput := func(l logLine) bool {
		return strings.Contains(l.Msg, "started download") && strings.HasSuffix(l.str("file"), "_in")
	}
	cases := []killCase{
		{
			name: "during download",
			// 120 kB at 40 kB/s: the input takes ~3 s to arrive.
			cfg:  testproject.Config{TotalJobs: 1, Job: job(1, 120_000), Faults: testproject.Faults{DownloadBytesPerSec: 40_000}},
			secs: 1,
			atKillPoint: func(t *testing.T, d *daemonProc, p *project, dir string) {
				l := d.waitFor("the input download", 60*time.Second, isInput)
				path := filepath.Join(dir, "projects", p.dirName(), l.str("file"))
				// Kill once part of the file is on disk, so the restart
				// has something to resume from.
				deadline := time.Now().Add(10 * time.Second)
				for {
					if fi, err := os.Stat(path); err == nil && fi.Size() >= 10_000 {
						if fi.Size() >= 120_000 {
							t.Fatalf("precondition: the download finished before the kill")
						}
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("no partial download at %s after 10 s", path)
					}
					time.Sleep(20 * time.Millisecond)
				}
			},
			check: func(t *testing.T, killed, restarted *daemonProc, p *project) {
				st := p.Stats()
				for _, j := range st.Jobs {
					if st.RangeDownloads[j.InputFile] == 0 {
						t.Errorf("the download of %s was not resumed with a Range request (downloads %d)", j.InputFile, st.Downloads[j.InputFile])
					}
				}
			},
		},
		{
			name: "while computing",
			cfg:  testproject.Config{TotalJobs: 1, Job: job(4, 2000)},
			secs: 4,
			atKillPoint: func(t *testing.T, d *daemonProc, p *project, dir string) {
				d.waitLog("task started", 60*time.Second)
				time.Sleep(time.Second)
			},
			check: func(t *testing.T, killed, restarted *daemonProc, p *project) {
				started, _ := killed.find(msgIs("task started", "component", "client"))
				again, ok := restarted.find(msgIs("task restarted", "task", started.str("task")))
				if !ok {
					t.Errorf("the restarted daemon did not log \"task restarted\" for %s", started.str("task"))
				} else if again.num("slot") != started.num("slot") {
					t.Errorf("task restarted in slot %v, it had slot %v", again.num("slot"), started.num("slot"))
				}
			},
		},
		{
			// The app's work runs in a child process, as with BOINC's
			// wrapper or a script calling a solver: the child outlives a
			// SIGKILL of the daemon (Pdeathsig only reaches the process
			// the daemon started) and must not keep running next to the
			// restarted task in the same slot.
			name: "while computing, app with a worker process",
			cfg: testproject.Config{TotalJobs: 1, Job: job(4, 2000),
				Apps: []testproject.App{testproject.ShellApp("wrapperapp", wrapperScript)}},
			secs: 4,
			atKillPoint: func(t *testing.T, d *daemonProc, p *project, dir string) {
				d.waitLog("task started", 60*time.Second, "component", "client")
				time.Sleep(time.Second)
			},
			afterRestart: func(t *testing.T, d *daemonProc, dir string) {
				again := d.waitLog("task restarted", 60*time.Second)
				slotDir := filepath.Join(dir, "slots", strconv.Itoa(int(again.num("slot"))))
				if left := strangersIn(slotDir, int(again.num("pid"))); len(left) > 0 {
					t.Errorf("processes of the killed daemon's task still run in %s next to the restarted task: %v", slotDir, left)
				}
			},
		},
		{
			name: "after compute, before upload",
			cfg:  testproject.Config{TotalJobs: 1, Job: job(1, 2000), Faults: testproject.Faults{UploadFailures: 1000}},
			secs: 1,
			atKillPoint: func(t *testing.T, d *daemonProc, p *project, dir string) {
				d.waitLog("computation finished", 60*time.Second)
				// An upload attempt means the finished state is on disk.
				d.waitLog("upload failed; will retry", 30*time.Second)
			},
			beforeRestart: func(p *project) { p.SetFaults(testproject.Faults{}) },
			check: func(t *testing.T, killed, restarted *daemonProc, p *project) {
				if _, ok := restarted.find(msgIs("task started")); ok {
					t.Errorf("the task ran again after the restart although it had finished")
				}
				if _, ok := restarted.find(msgIs("task restarted")); ok {
					t.Errorf("the task ran again after the restart although it had finished")
				}
			},
		},
		{
			name: "after upload, before report",
			cfg:  testproject.Config{TotalJobs: 1, Job: job(1, 2000)},
			secs: 1,
			// The result waits for its report (1 h), and no work fetch
			// (which would carry it) follows the first request.
			first:     childOptions{MaxReportDelay: time.Hour, FetchBackoffMin: time.Hour},
			holdFirst: true,
			atKillPoint: func(t *testing.T, d *daemonProc, p *project, dir string) {
				d.waitLog("ready to report", 60*time.Second)
				time.Sleep(500 * time.Millisecond)
				if st := p.Stats(); len(st.Reported) > 0 {
					t.Fatalf("precondition: the result was reported before the kill: %v", st.Reported)
				}
			},
			check: func(t *testing.T, killed, restarted *daemonProc, p *project) {
				if _, ok := restarted.find(msgIs("started upload")); ok {
					t.Errorf("the output was uploaded again after the restart")
				}
				for _, n := range p.Stats().UploadRequests {
					if n != 1 {
						t.Errorf("upload requests %v, want one per file", p.Stats().UploadRequests)
						break
					}
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			p := startProject(t, tc.cfg)
			writeConfig(t, dir, configSpec{projects: []*project{p}})
			if tc.holdFirst {
				holdReports(t, dir)
			}
			first := tc.first
			first.DataDir = dir
			killed := startDaemon(t, "first daemon", first)
			tc.atKillPoint(t, killed, p, dir)
			killed.kill9()
			if tc.beforeRestart != nil {
				tc.beforeRestart(p)
			}
			restarted := startDaemon(t, "restarted daemon", childOptions{DataDir: dir})
			if tc.afterRestart != nil {
				tc.afterRestart(t, restarted, dir)
			}
			waitAllReported(t, restarted, p, tc.cfg.TotalJobs, 90*time.Second)
			waitNoLeftovers(t, dir, 15*time.Second, p)
			restarted.stop()
			checkReportedOnce(t, p, tc.cfg.TotalJobs, refOutput(p, tc.secs))
			if left := leftovers(dir, p); len(left) > 0 {
				t.Errorf("left behind after shutdown: %v", left)
			}
			if tc.check != nil {
				tc.check(t, killed, restarted, p)
			}
		})
	}

	t.Run("random kills", func(t *testing.T) {
		t.Parallel()
		seed := uint64(20240917)
		if s := os.Getenv("E2E_KILL_SEED"); s != "" {
			seed, _ = strconv.ParseUint(s, 10, 64)
		}
		t.Logf("kill seed %d (set E2E_KILL_SEED to repeat another)", seed)
		rng := rand.New(rand.NewPCG(seed, 0x5eed))
		dir := newDataDir(t)
		p := startProject(t, testproject.Config{TotalJobs: 4, Job: job(2, 20_000)})
		writeConfig(t, dir, configSpec{projects: []*project{p}})
		// windows counts, per result, the kills that came inside its
		// report exchange (the server has the report, the state has no
		// ack): each makes the next run report it again, rightly.
		windows := map[string]int{}
		for i := 1; i <= 5 && !allReported(p.Stats(), 4); i++ {
			d := startDaemon(t, fmt.Sprintf("daemon run %d", i), childOptions{DataDir: dir, Seed: rng.Uint64()})
			d.waitLog("boincd started", 30*time.Second)
			after := 200*time.Millisecond + time.Duration(rng.Int64N(int64(2500*time.Millisecond)))
			time.Sleep(after)
			d.kill9()
			t.Logf("run %d killed %v after start", i, after)
			if !p.Quiesce(5 * time.Second) {
				t.Fatalf("the server still handles requests 5 s after kill %d", i)
			}
			snap := newSoakAccount(nil).checkState(t, fmt.Sprintf("after kill %d", i), dir)
			if snap == nil {
				continue
			}
			st := p.Stats()
			for _, r := range snap.Results {
				if st.Reported[r.Name] > 0 {
					windows[r.Name]++
					t.Logf("run %d was killed inside the exchange reporting %s", i, r.Name)
				}
			}
		}
		d := startDaemon(t, "final daemon", childOptions{DataDir: dir})
		// The killed runs may have reported everything already (a finished
		// upload brings the report at once): the stop below must still
		// find a daemon that handles SIGTERM.
		d.waitLog("boincd started", 30*time.Second)
		waitAllReported(t, d, p, 4, 120*time.Second)
		waitNoLeftovers(t, dir, 15*time.Second, p)
		d.stop()
		checkReportedOnceBut(t, p, 4, refOutput(p, 2), windows)
		if left := leftovers(dir, p); len(left) > 0 {
			t.Errorf("left behind after shutdown: %v", left)
		}
	})
}

func TestRestartResumesFromCheckpoint(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The app is this test binary: TestMain runs the demo app when it is
	// started under the demo app's name.
	app := testproject.App{
		Name: "demoapp", APIVersion: "7.20.5",
		Files: []testproject.AppFile{{Name: demoapp.BinaryPrefix + "_1.00_" + platform.This(), Path: exe, Executable: true, MainProgram: true}},
	}
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{
		Apps: []testproject.App{app}, TotalJobs: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 6 --seed {seed}", FpopsEst: 6e9, InputSize: 4096},
	})
	// Checkpoints every second.
	writeConfig(t, dir, configSpec{projects: []*project{p}, diskInterval: 1})

	first := startDaemon(t, "first daemon", childOptions{DataDir: dir})
	started := first.waitLog("task started", 90*time.Second, "component", "client")
	slot := int(started.num("slot"))
	// The app writes its checkpoint file, tells the client through shared
	// memory, and the runner records it in the slot's boinc_task_state.xml
	// in the same poll in which the daemon queues it for its state file.
	slotDir := filepath.Join(dir, "slots", strconv.Itoa(slot))
	deadline := time.Now().Add(30 * time.Second)
	for !dirExists(filepath.Join(slotDir, demoapp.CheckpointName)) || !dirExists(filepath.Join(slotDir, "boinc_task_state.xml")) {
		if time.Now().After(deadline) {
			t.Fatalf("no checkpoint in %s 30 s after the task started:\n%s", slotDir, first.tail(30))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The daemon commits right after that poll; give it a moment.
	time.Sleep(300 * time.Millisecond)
	first.kill9()

	second := startDaemon(t, "restarted daemon", childOptions{DataDir: dir})
	again := second.waitLog("task restarted", 60*time.Second, "task", started.str("task"))
	if int(again.num("slot")) != slot {
		t.Errorf("task restarted in slot %v, it had slot %d", again.num("slot"), slot)
	}
	if again.num("from_checkpoint_cpu") <= 0 {
		t.Errorf("the daemon restarted the task without knowing its checkpoint: %s", again.Raw)
	}
	waitAllReported(t, second, p, 1, 90*time.Second)
	waitNoLeftovers(t, dir, 15*time.Second, p)
	second.stop()

	checkReportedOnce(t, p, 1, nil)
	st := p.Stats()
	for _, j := range st.Jobs {
		// The digest depends on the iterations calibrated on this machine;
		// the header, the seed and the input size do not.
		got := st.Uploaded[j.OutputFiles[0]]
		want := fmt.Sprintf("demoapp output\nseed: %d\n", j.Seed)
		if !bytes.HasPrefix(got, []byte(want)) || !bytes.Contains(got, []byte("\ninput bytes: 4096\n")) {
			t.Errorf("output of %s is %q, want %q... with input bytes: 4096", j.ResultName, got, want)
		}
	}
	for name, rr := range st.ReportedResults {
		if !strings.Contains(rr.StderrOut, "resumed from checkpoint") {
			t.Errorf("result %s: the app did not resume from its checkpoint; stderr:\n%s", name, rr.StderrOut)
		}
	}
}

func TestDetachReportsFirst(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		name := "report then detach"
		if drop {
			name = "drop_results_on_detach"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			p := startProject(t, testproject.Config{TotalJobs: 2, Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000}})
			writeConfig(t, dir, configSpec{projects: []*project{p}})
			// Finished results wait (1 h) and no work fetch carries them.
			holdReports(t, dir)
			d := startDaemon(t, "daemon", childOptions{DataDir: dir, MaxReportDelay: time.Hour, FetchBackoffMin: time.Hour})
			ready := map[string]bool{}
			d.waitFor("both results ready to report", 90*time.Second, func(l logLine) bool {
				if strings.Contains(l.Msg, "ready to report") {
					ready[l.str("task")] = true
				}
				return len(ready) == 2
			})
			time.Sleep(500 * time.Millisecond)
			if st := p.Stats(); len(st.Reported) > 0 || len(st.Sent) != 2 {
				t.Fatalf("precondition: sent %v, reported %v before the detach", st.Sent, st.Reported)
			}

			writeConfig(t, dir, configSpec{dropResultsOnDetach: drop})
			d.signal(syscall.SIGHUP)
			d.waitLog("detached from project", 60*time.Second, "project", p.URL())
			projDir := filepath.Join(dir, "projects", p.dirName())
			if dirExists(projDir) {
				t.Errorf("project directory %s still exists after the detach", projDir)
			}
			if drop {
				if st := p.Stats(); len(st.Reported) > 0 {
					t.Errorf("results were reported although drop_results_on_detach is set: %v", st.Reported)
				}
			} else {
				checkReportedOnce(t, p, 2, refOutput(p, 1))
			}
			d.stop()

			again := startDaemon(t, "restarted daemon", childOptions{DataDir: dir})
			l := again.waitLog("boincd started", 30*time.Second)
			if l.num("projects") != 0 || l.num("tasks") != 0 {
				t.Errorf("after the detach and a restart the daemon has %v projects and %v tasks", l.num("projects"), l.num("tasks"))
			}
			again.stop()
			if dirExists(projDir) {
				t.Errorf("project directory %s came back", projDir)
			}
			if left := leftovers(dir, p); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

func TestSecondDaemonRefused(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	first := startDaemon(t, "first daemon", childOptions{DataDir: dir})
	first.waitLog("boincd started", 30*time.Second)
	second := startDaemon(t, "second daemon", childOptions{DataDir: dir})
	if code := second.wait(30 * time.Second); code == 0 {
		t.Errorf("the second daemon on the same directory exited with 0")
	}
	if out := second.output(); !strings.Contains(out, "another boincd uses this data directory") {
		t.Errorf("the second daemon's output does not say why it stopped:\n%s", out)
	}
	// The first one is unaffected.
	select {
	case <-first.exited:
		t.Fatalf("the first daemon exited:\n%s", first.tail(20))
	default:
	}
	first.stop()
}

func TestCorruptStateFile(t *testing.T) {
	t.Parallel()
	random := make([]byte, 4*4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range random {
		random[i] = byte(r.UintN(256))
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"text", bytes.Repeat([]byte("this is not a bbolt file\n"), 400)},
		{"random pages", random},
		{"short", []byte("x")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			path := filepath.Join(dir, "boincd.db")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			d := startDaemon(t, "daemon", childOptions{DataDir: dir})
			if code := d.wait(30 * time.Second); code == 0 {
				t.Errorf("the daemon started on a corrupt state file")
			}
			if out := d.output(); !strings.Contains(out, path) {
				t.Errorf("the error does not name %s:\n%s", path, out)
			}
			if got := readAll(t, path); !bytes.Equal(got, tc.data) {
				t.Errorf("the corrupt state file was changed (%d bytes, was %d)", len(got), len(tc.data))
			}
		})
	}
}

func TestBadConfigReloadKeepsRunning(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{TotalJobs: 2, Job: testproject.JobTemplate{CommandLine: "--seconds 3", InputSize: 1000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d := startDaemon(t, "daemon", childOptions{DataDir: dir})
	d.waitLog("task started", 60*time.Second)

	// Line 5 is not TOML.
	bad := fmt.Sprintf("[[project]]\nurl = %q\nauthenticator = %q\n\nthis line is not toml\n", p.URL(), accountKey)
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(bad))
	d.signal(syscall.SIGHUP)
	l := d.waitLog("config reload refused", 30*time.Second)
	if !strings.Contains(l.str("err"), "boincd.toml:5") {
		t.Errorf("the refusal does not name the file and line (boincd.toml:5): %s", l.Raw)
	}

	waitAllReported(t, d, p, 2, 90*time.Second)
	waitNoLeftovers(t, dir, 15*time.Second, p)
	d.stop()
	checkReportedOnce(t, p, 2, refOutput(p, 3))
	for _, bad := range []string{"project removed from config", "detached from project", "task aborted"} {
		if l, ok := d.find(msgIs(bad)); ok {
			t.Errorf("the refused config had an effect: %s", l.Raw)
		}
	}
}

// The README's first command: the demo project, the daemon computing its
// tasks, every result reported and acknowledged, nothing left behind.
func TestDemoCommand(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to build boincd: %v", err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if !dirExists(filepath.Join(root, "go.mod")) {
		t.Fatalf("module root not found at %s", root)
	}
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "boincd-demo")
	build := exec.Command(goBin, "build", "-o", bin, "./cmd/boincd-demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/boincd-demo: %v\n%s", err, out)
	}

	// The demo's temporary data directory goes under demoTmp, so the
	// orphan check can find its app processes.
	demoTmp := filepath.Join(tmp, "tmp")
	if err := os.Mkdir(demoTmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoProcessesUnder(t, demoTmp) })
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--tasks", "2", "--seconds", "2")
	cmd.Env = append(os.Environ(), "TMPDIR="+demoTmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("boincd-demo did not finish within 120 s; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	if err != nil {
		t.Fatalf("boincd-demo: %v; stdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "results reported and acknowledged by the project: 2") {
		t.Errorf("the demo's summary lacks the two acknowledged results:\n%s", stdout.String())
	}
	if entries, _ := os.ReadDir(demoTmp); len(entries) > 0 {
		t.Errorf("the demo left its temporary data directory behind: %v", entries[0].Name())
	}
}
