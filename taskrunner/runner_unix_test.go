//go:build unix

package taskrunner

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// tagSequence lists the element names opening each line, to compare the
// element order of two init_data.xml documents.
func tagSequence(t *testing.T, doc string) []string {
	t.Helper()
	var tags []string
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(l, "<") || strings.HasPrefix(l, "</") {
			continue
		}
		end := strings.IndexAny(l, ">/ ")
		tags = append(tags, l[1:end])
	}
	return tags
}

func block(doc, tag string) string {
	i := strings.Index(doc, "<"+tag+">")
	j := strings.Index(doc, "</"+tag+">")
	if i < 0 || j < 0 {
		return ""
	}
	return doc[i : j+len(tag)+3]
}

func TestSlotLayoutMatchesFixtureAndSuccess(t *testing.T) {
	e := newTestEnv(t, Config{ClientPID: 6023})
	e.writeApp(t, appFile, refApp)
	spec := e.spec("--seconds 1")
	slot, pid, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if slot != 0 || pid <= 0 {
		t.Fatalf("slot %d pid %d", slot, pid)
	}
	if got := e.runner.Running(); len(got) != 1 || got[0] != spec.Result.Key() {
		t.Fatalf("Running() = %q", got)
	}

	// Soft-link files exactly as in the fixture.
	fixture, err := os.ReadFile(filepath.Join("testdata", "slot0_link_files_and_stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"in", appFile} {
		b, err := os.ReadFile(e.slotPath(slot, name))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(fixture), "== "+name+"\n"+string(b)) {
			t.Errorf("link file %s = %q, not as in the fixture", name, b)
		}
	}
	if b, _ := os.ReadFile(e.slotPath(slot, "out")); string(b) != "<soft_link>../../projects/"+testEsc+"/"+outFile+"</soft_link>\n" {
		t.Errorf("output link %q", b)
	}
	st, err := os.Stat(e.slotPath(slot, boincapi.MmapFileName))
	if err != nil || st.Size() != 8192 || st.Mode().Perm() != 0o666 {
		t.Errorf("mmap file: %v %v", st, err)
	}
	if _, err := os.Stat(e.slotPath(slot, setupMarker)); err != nil {
		t.Errorf("no setup marker: %v", err)
	}

	// init_data.xml: same element order as the fixture, our values.
	got, err := os.ReadFile(e.slotPath(slot, "init_data.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "init_data.xml"))
	if err != nil {
		t.Fatal(err)
	}
	gs, ws := tagSequence(t, string(got)), tagSequence(t, string(want))
	if strings.Join(gs, ",") != strings.Join(ws, ",") {
		t.Errorf("element order differs:\n got %v\nwant %v", gs, ws)
	}
	for _, tag := range []string{"proxy_info", "global_preferences"} {
		if block(string(got), tag) != block(string(want), tag) {
			t.Errorf("%s block differs:\n%s\nwant\n%s", tag, block(string(got), tag), block(string(want), tag))
		}
	}
	for _, line := range []string{
		"<project_dir>" + e.projDir + "</project_dir>",
		"<boinc_dir>" + e.dataDir + "</boinc_dir>",
		"<shm_key>-1</shm_key>",
		"<client_pid>6023</client_pid>",
		"<slot>0</slot>",
		"<wu_name>" + wuName + "</wu_name>",
		"<result_name>" + resName + "</result_name>",
		"<checkpoint_period>60.000000</checkpoint_period>",
		"<gpu_device_num>-1</gpu_device_num>",
		"<rsc_fpops_est>30000000000.000000</rsc_fpops_est>",
		"<computation_deadline>1795864715.000000</computation_deadline>",
		"<app_file>" + appFile + "</app_file>",
		"    <p_ncpus>2</p_ncpus>",
	} {
		if !strings.Contains(string(got), line+"\n") {
			t.Errorf("init_data.xml lacks %q", line)
		}
	}

	ev := waitEvent(t, e.events, 20*time.Second)
	if ev.ResultKey != spec.Result.Key() || ev.Slot != slot {
		t.Fatalf("event %+v", ev)
	}
	x := ev.Exit
	if x.Outcome != Success || x.ExitStatus != 0 {
		t.Fatalf("exit %+v", x)
	}
	if !strings.Contains(x.Stderr, "refapp: start pid=") || !strings.Contains(x.Stderr, "args=--seconds 1") || !strings.Contains(x.Stderr, "refapp: done") {
		t.Errorf("stderr %q", x.Stderr)
	}
	if len(x.Outputs) != 1 {
		t.Fatalf("outputs %+v", x.Outputs)
	}
	o := x.Outputs[0]
	data, err := os.ReadFile(filepath.Join(e.projDir, outFile))
	if err != nil {
		t.Fatal(err)
	}
	if o.Name != outFile || o.Path != filepath.Join(e.projDir, outFile) || o.NBytes != int64(len(data)) || o.MD5 != md5Hex(data) {
		t.Errorf("output %+v (file %d bytes)", o, len(data))
	}
	if !strings.Contains(string(data), "input bytes: "+strconv.Itoa(len(inputTxt))) {
		t.Errorf("app did not read its input through the link: %q", data)
	}
	if x.ElapsedTime < 0.5 {
		t.Errorf("elapsed %v", x.ElapsedTime)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "slots", "0")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("slot not cleaned: %v", err)
	}
	if got := e.runner.Running(); len(got) != 0 {
		t.Errorf("still running: %q", got)
	}
}

func TestExitClassification(t *testing.T) {
	const finish = "echo 0 > boinc_finish_called\n"
	tests := []struct {
		name       string
		script     string
		mutate     func(*TaskSpec)
		outcome    Outcome
		status     int
		signal     int
		delay      time.Duration
		msg        string
		stderr     string
		keepSlot   bool
		outputSize int64
	}{
		{name: "nonzero exit", script: "echo boom >&2\nexit 3\n", outcome: Error, status: 3, msg: "process exited with code 3", stderr: "boom"},
		{name: "missing output", script: finish, outcome: Error, status: boinc.ErrFileMissing, msg: "absent"},
		{name: "oversized output", script: "head -c 2000 /dev/zero > out\n" + finish, outcome: Error, status: boinc.ErrFileTooBig,
			mutate: func(s *TaskSpec) { s.Files[outFile].MaxNBytes = 100 }, msg: "exceeds size limit"},
		{name: "output written through the link", script: "echo hello > ../../projects/" + testEsc + "/" + outFile + "\n" + finish, outcome: Success, outputSize: 6},
		{name: "copy_file output", script: "echo copied > out\n" + finish, outcome: Success, outputSize: 7,
			mutate: func(s *TaskSpec) { s.Result.OutputFiles[0].CopyFile = true }},
		{name: "optional output missing", script: finish, outcome: Success, outputSize: -1,
			mutate: func(s *TaskSpec) { s.Result.OutputFiles[0].Optional = true }},
		{name: "temporary exit", script: "printf '120\\nwaiting for GPU\\n' > boinc_temporary_exit\nexit 0\n",
			outcome: TemporaryExit, delay: 120 * time.Second, msg: "waiting for GPU", keepSlot: true},
		{name: "temporary exit delay out of range", script: "printf '100000\\nx\\n' > boinc_temporary_exit\nexit 0\n",
			outcome: TemporaryExit, delay: 300 * time.Second, msg: "x", keepSlot: true},
		{name: "premature exit 0", script: "exit 0\n", outcome: Restart, keepSlot: true, msg: "without calling boinc_finish"},
		{name: "killed by TERM", script: "kill -TERM $$\nsleep 5\n", outcome: Restart, signal: int(syscall.SIGTERM), keepSlot: true},
		{name: "crashed with SEGV", script: "kill -SEGV $$\nsleep 5\n", outcome: Error, signal: int(syscall.SIGSEGV), status: int(syscall.SIGSEGV)},
		{name: "finish file but nonzero exit", script: "printf '5\\nbad input\\n' > boinc_finish_called\nexit 5\n",
			outcome: Error, status: 5, msg: "bad input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\n"+tc.script)
			spec := e.spec("")
			if tc.mutate != nil {
				tc.mutate(&spec)
			}
			slot, _, err := e.runner.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			x := waitEvent(t, e.events, 10*time.Second).Exit
			if x.Outcome != tc.outcome || x.ExitStatus != tc.status || x.Signal != tc.signal || x.Delay != tc.delay {
				t.Fatalf("got %v status %d signal %d delay %v (%q), want %v status %d signal %d delay %v",
					x.Outcome, x.ExitStatus, x.Signal, x.Delay, x.Message, tc.outcome, tc.status, tc.signal, tc.delay)
			}
			if !strings.Contains(x.Message, tc.msg) {
				t.Errorf("message %q lacks %q", x.Message, tc.msg)
			}
			if !strings.Contains(x.Stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", x.Stderr, tc.stderr)
			}
			_, err = os.Stat(filepath.Join(e.dataDir, "slots", strconv.Itoa(slot)))
			if kept := err == nil; kept != tc.keepSlot {
				t.Errorf("slot kept = %v, want %v", kept, tc.keepSlot)
			}
			switch {
			case tc.outputSize > 0:
				if len(x.Outputs) != 1 || x.Outputs[0].NBytes != tc.outputSize {
					t.Fatalf("outputs %+v", x.Outputs)
				}
				data, err := os.ReadFile(filepath.Join(e.projDir, outFile))
				if err != nil || x.Outputs[0].MD5 != md5Hex(data) {
					t.Fatalf("output file: %v", err)
				}
			case len(x.Outputs) != 0:
				t.Fatalf("unexpected outputs %+v", x.Outputs)
			}
		})
	}
}

func TestKillKillsProcessGroup(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nsleep 1000 &\necho $! > grandchild.pid\nwait\n")
	slot, pid, err := e.runner.Start(context.Background(), e.spec(""))
	if err != nil {
		t.Fatal(err)
	}
	gc := readPID(t, e.slotPath(slot, "grandchild.pid"))
	if err := e.runner.Kill(e.spec("").Result.Key()); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Aborted || x.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v", x)
	}
	waitFor(t, "grandchild to die", 5*time.Second, func() bool { return gone(gc) })
	if !gone(pid) {
		t.Fatal("app process alive")
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "slots", strconv.Itoa(slot))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("slot not cleaned after kill: %v", err)
	}
	if err := e.runner.Kill(e.spec("").Result.Key()); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second kill: %v", err)
	}
}

func TestLeftoverChildrenKilledAfterExit(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nsleep 1000 &\necho $! > ../../gc.pid\necho hi > out\necho 0 > boinc_finish_called\nexit 0\n")
	if _, _, err := e.runner.Start(context.Background(), e.spec("")); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Success {
		t.Fatalf("exit %+v", x)
	}
	gc := readPID(t, filepath.Join(e.dataDir, "gc.pid"))
	waitFor(t, "left-over child to die", 5*time.Second, func() bool { return gone(gc) })
}

func TestSuspendResumePlainProgram(t *testing.T) {
	e := newTestEnv(t, Config{})
	// No forks: dash runs commands through vfork, and a shell stopped
	// while its child has not exec'd yet stays in state D, not T.
	e.writeApp(t, appFile, "#!/bin/sh\necho $$ > pid\nexec sleep 1000\n")
	key := e.spec("").Result.Key()
	slot, pid, err := e.runner.Start(context.Background(), e.spec(""))
	if err != nil {
		t.Fatal(err)
	}
	readPID(t, e.slotPath(slot, "pid"))
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	var states []string
	deadline := time.Now().Add(5 * time.Second)
	for s := procState(pid); s != "T"; s = procState(pid) {
		if len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped; states seen %q", pid, states)
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := e.runner.Poll(time.Now())
	if len(st) != 1 || !st[0].Suspended || st[0].PID != pid {
		t.Fatalf("poll %+v", st)
	}
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "running again", 5*time.Second, func() bool { s := procState(pid); return s == "S" || s == "R" })

	// Quit a stopped program: SIGTERM plus SIGCONT, reported as Restart.
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Quit(key); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Restart {
		t.Fatalf("exit %+v", x)
	}
	if _, err := os.Stat(e.slotPath(slot, "init_data.xml")); err != nil {
		t.Fatalf("slot not kept for the restart: %v", err)
	}
	if err := e.runner.Suspend(key); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("suspend after exit: %v", err)
	}
}

func TestPollPlainProgram(t *testing.T) {
	e := newTestEnv(t, Config{})
	// Burn some CPU so the process group's CPU time grows.
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do :; done\n")
	spec := e.spec("")
	spec.Result.ElapsedTime = 100
	spec.Result.CheckpointCPUTime = 0
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	e.runner.Poll(t0)
	var st []Status
	waitFor(t, "CPU time", 10*time.Second, func() bool {
		st = e.runner.Poll(time.Now())
		return len(st) == 1 && st[0].CPUTime > 0.05
	})
	st = e.runner.Poll(t0.Add(3 * time.Second))
	if st[0].ElapsedTime < 103 || st[0].WorkingSet <= 0 {
		t.Fatalf("status %+v", st[0])
	}
	if err := e.runner.Abort(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Aborted || x.CPUTime < 0.05 {
		t.Fatalf("exit %+v", x)
	}
}

// A container task's CPU time is what it reports, never its process
// tree's (the wrapper and the engine CLI are overhead; the container's
// processes are not its children); the tree's CPU still counts as
// BOINC's (HostCPUTime) when other programs' load is measured.
func TestPollContainerTaskCPU(t *testing.T) {
	tests := []struct {
		name      string
		container bool
	}{{"plain", false}, {"container", true}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do :; done\n")
			spec := e.spec("")
			spec.Result.CheckpointCPUTime = 0
			spec.Container = tc.container
			if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
				t.Fatal(err)
			}
			var st []Status
			waitFor(t, "CPU time", 10*time.Second, func() bool {
				st = e.runner.Poll(time.Now())
				return len(st) == 1 && st[0].HostCPUTime > 0.05
			})
			if tc.container && st[0].CPUTime != 0 {
				t.Errorf("container task CPU time %v from its process tree; want only what it reports (0)", st[0].CPUTime)
			}
			if !tc.container && st[0].CPUTime != st[0].HostCPUTime {
				t.Errorf("plain task: CPU time %v, host CPU time %v", st[0].CPUTime, st[0].HostCPUTime)
			}
			if err := e.runner.Abort(spec.Result.Key()); err != nil {
				t.Fatal(err)
			}
			x := waitEvent(t, e.events, 10*time.Second).Exit
			if tc.container && x.CPUTime != 0 {
				t.Errorf("container task's final CPU time %v from rusage", x.CPUTime)
			}
			if !tc.container && x.CPUTime < 0.05 {
				t.Errorf("plain task's final CPU time %v", x.CPUTime)
			}
		})
	}
}

// A container task is never throttled: pausing its wrapper would not
// pause the container.
func TestContainerTaskNotThrottled(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nsleep 30\n")
	spec := e.spec("")
	spec.Container = true
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	e.runner.SetThrottle(10)
	now := time.Now()
	for i := 0; i < 30; i++ {
		for _, s := range e.runner.Poll(now.Add(time.Duration(i) * time.Second)) {
			if s.Throttled {
				t.Fatalf("container task throttled at %d s", i)
			}
		}
	}
	if err := e.runner.Abort(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, e.events, 10*time.Second)
}

func TestQuitGraceKillsUnresponsiveAPIApp(t *testing.T) {
	e := newTestEnv(t, Config{QuitGrace: 300 * time.Millisecond})
	// Claims the API but never reads the control channel.
	e.writeApp(t, appFile, "#!/bin/sh\nsleep 1000 &\necho $! > gc.pid\nwait\n")
	spec := e.spec("")
	spec.Version.APIVersion = "7.20.0"
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	gc := readPID(t, e.slotPath(slot, "gc.pid"))
	if err := e.runner.Quit(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Restart || x.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v", x)
	}
	waitFor(t, "grandchild to die", 5*time.Second, func() bool { return gone(gc) })
	// The quit message is still in the channel: nobody read it.
	shm, err := boincapi.OpenShmem(e.slotPath(slot, boincapi.MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgQuit {
		t.Fatalf("control channel %q %v", msg, ok)
	}
}

func TestControlTimeoutKillsHungAPIApp(t *testing.T) {
	e := newTestEnv(t, Config{ControlTimeout: 300 * time.Millisecond})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do sleep 0.05; done\n")
	spec := e.spec("")
	spec.Version.APIVersion = "7.20.0"
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Suspend(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	var ev Event
	waitFor(t, "the hung task to be killed", 10*time.Second, func() bool {
		e.runner.Poll(time.Now())
		select {
		case ev = <-e.events:
			return true
		default:
			time.Sleep(50 * time.Millisecond)
			return false
		}
	})
	if ev.Exit.Outcome != Restart || ev.Exit.Signal != int(syscall.SIGKILL) {
		t.Fatalf("exit %+v", ev.Exit)
	}
}

func TestStopAll(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do sleep 0.05; done\n")
	stubborn := "stubborn.sh"
	e.writeApp(t, stubborn, "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 0.05; done\n")

	a := e.spec("")
	b := e.spec("")
	b.Result = &boinc.Result{ProjectURL: testURL, Name: "second_0", OutputFiles: a.Result.OutputFiles}
	b.Version = &boinc.AppVersion{ProjectURL: testURL, AppName: "refapp", VersionNum: 101, FileRefs: []boinc.FileRef{{FileName: stubborn, MainProgram: true}}}
	b.Files[stubborn] = &boinc.FileInfo{Name: stubborn}
	sa, _, err := e.runner.Start(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	sb, _, err := e.runner.Start(context.Background(), b)
	if err != nil {
		t.Fatal(err)
	}
	if sa != 0 || sb != 1 {
		t.Fatalf("slots %d %d", sa, sb)
	}
	// Let the stubborn script install its trap.
	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	e.runner.StopAll(ctx)
	got := map[string]Outcome{}
	for i := 0; i < 2; i++ {
		ev := waitEvent(t, e.events, time.Second)
		got[ev.ResultKey] = ev.Exit.Outcome
	}
	if got[a.Result.Key()] != Restart || got[b.Result.Key()] != Restart {
		t.Fatalf("outcomes %v", got)
	}
	for _, s := range []int{sa, sb} {
		if _, err := os.Stat(e.slotPath(s, "init_data.xml")); err != nil {
			t.Errorf("slot %d not kept: %v", s, err)
		}
	}
	if _, _, err := e.runner.Start(context.Background(), e.spec("")); !errors.Is(err, ErrClosed) {
		t.Fatalf("start after StopAll: %v", err)
	}
	if len(e.runner.Running()) != 0 {
		t.Fatal("tasks left")
	}
}

func TestRestartInSameSlotAndAllocation(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nn=$(cat runs 2>/dev/null || echo 0)\necho $((n+1)) > runs\n"+
		"if [ \"$n\" -ge 1 ]; then echo x > out; echo 0 > boinc_finish_called; fi\nexit 0\n")
	// Slot 0 holds another task's checkpoint files; slot 1 is an empty
	// leftover directory: the new task gets slot 1.
	os.MkdirAll(filepath.Join(e.dataDir, "slots", "0"), 0o755)
	os.WriteFile(filepath.Join(e.dataDir, "slots", "0", "checkpoint"), []byte("x"), 0o644)
	os.MkdirAll(filepath.Join(e.dataDir, "slots", "1"), 0o755)
	spec := e.spec("")
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if slot != 1 {
		t.Fatalf("slot %d, want 1", slot)
	}
	if x := waitEvent(t, e.events, 10*time.Second).Exit; x.Outcome != Restart {
		t.Fatalf("first run %+v", x)
	}
	spec.Slot = slot
	if s, _, err := e.runner.Start(context.Background(), spec); err != nil || s != slot {
		t.Fatalf("restart: %d %v", s, err)
	}
	if x := waitEvent(t, e.events, 10*time.Second).Exit; x.Outcome != Success {
		t.Fatalf("second run %+v", x)
	}
	if err := CleanSlot(e.dataDir, 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "slots", "0")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CleanSlot left the slot: %v", err)
	}
	if err := CleanSlot("relative", 0, nil); err == nil {
		t.Fatal("CleanSlot accepted a relative data dir")
	}
}

func TestStartRefusesBadSpecs(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*testEnv, *TaskSpec)
		want   string
	}{
		{"physical name escapes", func(_ *testEnv, s *TaskSpec) {
			s.WU.InputFiles[0].FileName = "../../etc/passwd"
			s.Files["../../etc/passwd"] = &boinc.FileInfo{}
		}, "path separator"},
		{"open name escapes", func(_ *testEnv, s *TaskSpec) { s.WU.InputFiles[0].OpenName = "../x" }, "'..'"},
		{"open name fakes finish file", func(_ *testEnv, s *TaskSpec) { s.Result.OutputFiles[0].OpenName = "boinc_finish_called" }, "collides"},
		{"file not in list", func(_ *testEnv, s *TaskSpec) { delete(s.Files, inFile) }, "not in the task's file list"},
		{"no main program", func(_ *testEnv, s *TaskSpec) { s.Version.FileRefs[0].MainProgram = false }, "no main program"},
		{"main program not executable", func(e *testEnv, s *TaskSpec) { os.Chmod(filepath.Join(e.projDir, appFile), 0o644) }, "not executable"},
		{"main program missing", func(e *testEnv, s *TaskSpec) { os.Remove(filepath.Join(e.projDir, appFile)) }, "no such file"},
		{"bad command line", func(_ *testEnv, s *TaskSpec) { s.WU.CommandLine = "--name 'unterminated" }, "unterminated"},
		{"no result", func(_ *testEnv, s *TaskSpec) { s.Result = nil }, "no result"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\nexit 0\n")
			spec := e.spec("")
			tc.mutate(e, &spec)
			_, _, err := e.runner.Start(context.Background(), spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if _, err := os.Stat(filepath.Join(e.dataDir, "..", "..", "etc", "passwd_link")); err == nil {
				t.Fatal("file created outside the data dir")
			}
			e.runner.mu.Lock()
			n := len(e.runner.busy)
			e.runner.mu.Unlock()
			if n != 0 {
				t.Fatal("slot left reserved after a failed start")
			}
		})
	}
}

func TestCopyFileInputAndSubdirs(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\ncat data/in.txt > out\nsed -n 's:.*<soft_link>\\(.*\\)</soft_link>.*:\\1:p' lib/x > linked\necho 0 > boinc_finish_called\n")
	spec := e.spec("")
	spec.WU.InputFiles[0] = boinc.FileRef{FileName: inFile, OpenName: "data/in.txt", CopyFile: true}
	spec.Version.FileRefs = append(spec.Version.FileRefs, boinc.FileRef{FileName: "lib.so", OpenName: "lib/x"})
	spec.Files["lib.so"] = &boinc.FileInfo{Name: "lib.so"}
	os.WriteFile(filepath.Join(e.projDir, "lib.so"), []byte("lib"), 0o644)
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(e.slotPath(slot, "data/in.txt"))
	if err != nil || string(b) != inputTxt {
		t.Fatalf("copied input %q %v", b, err)
	}
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Success || len(x.Outputs) != 1 || x.Outputs[0].NBytes != int64(len(inputTxt)) {
		t.Fatalf("exit %+v", x)
	}
}

func TestKillOrphan(t *testing.T) {
	dataDir := t.TempDir()
	slot3 := filepath.Join(dataDir, "slots", "3")
	if err := os.MkdirAll(slot3, 0o755); err != nil {
		t.Fatal(err)
	}
	start := func(dir string) *exec.Cmd {
		cmd := exec.Command("sh", "-c", "sleep 1000 & echo $! > child.pid; wait")
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			cmd.Wait()
		})
		return cmd
	}
	waitExit := func(cmd *exec.Cmd) error {
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			return err
		case <-time.After(5 * time.Second):
			return errors.New("still running")
		}
	}

	t.Run("live orphan in its slot", func(t *testing.T) {
		cmd := start(slot3)
		child := readPID(t, filepath.Join(slot3, "child.pid"))
		KillOrphan(dataDir, 3, cmd.Process.Pid)
		if err := waitExit(cmd); err == nil || err.Error() != "signal: killed" {
			t.Fatalf("orphan: %v", err)
		}
		waitFor(t, "orphan's child", 5*time.Second, func() bool { return gone(child) })
	})
	t.Run("reused pid elsewhere", func(t *testing.T) {
		other := t.TempDir()
		cmd := start(other)
		KillOrphan(dataDir, 3, cmd.Process.Pid)
		KillOrphan(dataDir, 4, cmd.Process.Pid)
		time.Sleep(100 * time.Millisecond)
		if gone(cmd.Process.Pid) {
			t.Fatal("a process outside the slot was killed")
		}
	})
	t.Run("dead pid", func(t *testing.T) {
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		KillOrphan(dataDir, 3, cmd.Process.Pid) // must not panic or kill anything
		KillOrphan(dataDir, 3, 0)
		KillOrphan(dataDir, -1, os.Getpid())
		KillOrphan(dataDir, 3, os.Getpid()) // our cwd is not the slot
	})
}
