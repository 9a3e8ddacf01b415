//go:build linux

package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/demoapp"
)

// processCPU is utime+stime of one process, from /proc.
func processCPU(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	_, cpu, _, _, ok := parseStat(b)
	if !ok {
		t.Fatalf("cannot parse /proc/%d/stat", pid)
	}
	return cpu
}

// TestDemoAppEndToEnd runs the real demo app (boincapi over the shared
// memory) through the runner: progress, suspend, checkpoint, quit,
// restart from the checkpoint in the same slot, success with output.
func TestDemoAppEndToEnd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := newTestEnv(t, Config{QuitGrace: 20 * time.Second})
	name := demoapp.BinaryPrefix + "_1.00_x86_64-pc-linux-gnu"
	if err := os.Symlink(exe, filepath.Join(e.projDir, name)); err != nil {
		t.Fatal(err)
	}
	spec := e.spec("--seconds 2 --seed 7")
	spec.Version.APIVersion = "7.20.0"
	spec.Version.FileRefs = []boinc.FileRef{{FileName: name, MainProgram: true}}
	spec.Files[name] = &boinc.FileInfo{Name: name, Executable: true}
	spec.Prefs.DiskInterval = 1
	key := spec.Result.Key()

	slot, pid, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(e.slotPath(slot, "stderr.txt"))
			t.Logf("app stderr:\n%s\nlast status: %+v", b, e.runner.Poll(time.Now()))
		}
	})
	noEvent := func() {
		t.Helper()
		select {
		case ev := <-e.events:
			b, _ := os.ReadFile(e.slotPath(slot, "stderr.txt"))
			t.Fatalf("task ended early: %+v\n%s", ev.Exit, b)
		default:
		}
	}
	poll := func() Status {
		t.Helper()
		st := e.runner.Poll(time.Now())
		if len(st) != 1 || st[0].ResultKey != key || st[0].PID != pid {
			noEvent()
			t.Fatalf("poll: %+v", st)
		}
		return st[0]
	}

	// Suspend early: the worker blocks in Wait and its CPU time stops.
	time.Sleep(200 * time.Millisecond)
	poll()
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the API reads control messages every 100 ms
	before := poll()
	c1 := processCPU(t, pid)
	time.Sleep(time.Second)
	c2 := processCPU(t, pid)
	after := poll()
	if c2-c1 > 0.3 {
		t.Fatalf("CPU time grew by %.2f s while suspended", c2-c1)
	}
	if !after.Suspended || after.ElapsedTime != before.ElapsedTime {
		t.Fatalf("suspended status: before %+v after %+v", before, after)
	}
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}

	// Progress and a checkpoint, then quit. The wait also covers the
	// resumed app's first CPU time: a loaded machine may have let the app
	// checkpoint before the suspension, and may take a while to schedule
	// it again.
	var fractions []float64
	var ckpt Status
	waitFor(t, "a checkpoint and CPU time after the resume", 60*time.Second, func() bool {
		noEvent()
		s := poll()
		if s.FractionDone > 0 && (len(fractions) == 0 || s.FractionDone != fractions[len(fractions)-1]) {
			fractions = append(fractions, s.FractionDone)
		}
		ckpt = s
		done := s.Checkpointed && processCPU(t, pid) > c2
		if !done {
			time.Sleep(30 * time.Millisecond)
		}
		return done
	})
	if ckpt.CheckpointCPUTime <= 0 || ckpt.FractionDone <= 0 || ckpt.CPUTime < ckpt.CheckpointCPUTime {
		t.Fatalf("checkpoint status %+v", ckpt)
	}
	// Compared with its CPU time at the end of the suspension, not with a
	// fixed amount: on a loaded machine a second of wall time may bring
	// the app only a fraction of a CPU second.
	if c3 := processCPU(t, pid); c3 <= c2 {
		t.Fatalf("resumed app did not compute: %.2f s CPU, %.2f s when suspended", c3, c2)
	}
	if err := e.runner.Quit(key); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, e.events, 30*time.Second)
	x := ev.Exit
	if x.Outcome != Restart || x.ExitStatus != 0 || x.Signal != 0 {
		t.Fatalf("quit: %+v", x)
	}
	if x.CheckpointCPUTime < ckpt.CheckpointCPUTime || x.CheckpointCPUTime <= 0 {
		t.Fatalf("quit checkpoint %v < %v", x.CheckpointCPUTime, ckpt.CheckpointCPUTime)
	}
	for _, f := range []string{demoapp.CheckpointName, "init_data.xml", "stderr.txt"} {
		if _, err := os.Stat(e.slotPath(slot, f)); err != nil {
			t.Fatalf("slot lost %s: %v", f, err)
		}
	}
	if _, err := os.Stat(e.slotPath(slot, "boinc_finish_called")); err == nil {
		t.Fatal("finish file after quit")
	}

	// Restart in the same slot from the checkpoint.
	res := *spec.Result
	res.CheckpointCPUTime = x.CheckpointCPUTime
	res.CheckpointElapsedTime = x.CheckpointElapsedTime
	res.ElapsedTime = x.ElapsedTime
	res.FractionDone = x.FractionDone
	spec.Result = &res
	spec.Slot = slot
	slot2, pid2, err := e.runner.Start(context.Background(), spec)
	if err != nil || slot2 != slot {
		t.Fatalf("restart: slot %d err %v", slot2, err)
	}
	initData, _ := os.ReadFile(e.slotPath(slot, "init_data.xml"))
	if want := "<wu_cpu_time>" + strconv.FormatFloat(x.CheckpointCPUTime, 'f', 6, 64) + "</wu_cpu_time>"; !strings.Contains(string(initData), want) {
		t.Fatalf("init_data.xml lacks %s", want)
	}
	pid = pid2
	// Progress made after the last checkpoint is lost by the quit, as in
	// BOINC: the restarted run reports from the checkpoint on, so each run
	// is checked for going forward on its own.
	beforeQuit := fractions
	fractions = nil
	var final Event
	waitFor(t, "the restarted task to finish", 60*time.Second, func() bool {
		select {
		case final = <-e.events:
			return true
		default:
		}
		if st := e.runner.Poll(time.Now()); len(st) == 1 {
			s := st[0]
			if s.CPUTime < x.CheckpointCPUTime {
				t.Fatalf("restarted CPU time %v below the checkpoint's %v", s.CPUTime, x.CheckpointCPUTime)
			}
			// Until the app's first report the runner shows the fraction
			// carried over from the quit; the app's own start from its
			// checkpoint may be lower.
			carried := len(fractions) == 0 && s.FractionDone == x.FractionDone
			if s.FractionDone > 0 && !carried && (len(fractions) == 0 || s.FractionDone != fractions[len(fractions)-1]) {
				fractions = append(fractions, s.FractionDone)
			}
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
	fx := final.Exit
	if fx.Outcome != Success {
		t.Fatalf("final: %+v", fx)
	}
	fractions = append(fractions, fx.FractionDone)
	for _, run := range [][]float64{beforeQuit, fractions} {
		for i := 1; i < len(run); i++ {
			if run[i] < run[i-1] {
				t.Fatalf("fraction done went backwards: before the quit %v, after the restart %v", beforeQuit, fractions)
			}
		}
	}
	if len(beforeQuit) < 1 || len(fractions) < 1 || fx.FractionDone != 1 {
		t.Fatalf("fractions: before the quit %v, after the restart %v", beforeQuit, fractions)
	}
	if !strings.Contains(fx.Stderr, "demoapp: resumed from checkpoint at") || !strings.Contains(fx.Stderr, "demoapp: done") {
		t.Fatalf("stderr:\n%s", fx.Stderr)
	}
	if strings.Count(fx.Stderr, "demoapp: start") != 2 {
		t.Fatalf("stderr should show two starts:\n%s", fx.Stderr)
	}
	if fx.CPUTime < x.CheckpointCPUTime || fx.ElapsedTime < x.ElapsedTime {
		t.Fatalf("final times %+v after %+v", fx, x)
	}
	if len(fx.Outputs) != 1 {
		t.Fatalf("outputs %+v", fx.Outputs)
	}
	out, err := os.ReadFile(fx.Outputs[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	if fx.Outputs[0].MD5 != md5Hex(out) || !strings.Contains(string(out), "seed: 7\n") ||
		!strings.Contains(string(out), "input bytes: "+strconv.Itoa(len(inputTxt))+"\n") {
		t.Fatalf("output %+v:\n%s", fx.Outputs[0], out)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, "slots", strconv.Itoa(slot))); !os.IsNotExist(err) {
		t.Fatalf("slot not cleaned: %v", err)
	}
}
