//go:build linux

package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// pollUntilExit polls like the daemon (every 100 ms here) until an exit
// event arrives, and returns it with every Status.LimitExceeded the polls
// reported.
func pollUntilExit(t *testing.T, e *testEnv, d time.Duration) (Event, []string) {
	t.Helper()
	var limits []string
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		for _, s := range e.runner.Poll(time.Now()) {
			if s.LimitExceeded != "" {
				limits = append(limits, s.LimitExceeded)
			}
		}
		select {
		case ev := <-e.events:
			return ev, limits
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatal("timed out waiting for an exit event")
	return Event{}, nil
}

func TestElapsedLimitKillsTask(t *testing.T) {
	tests := []struct {
		name         string
		startElapsed float64
		limit        time.Duration
		wantMsg      string
	}{
		{"fresh task", 0, time.Second, "exceeded elapsed time limit 1.00 (10000.00G/2.00G)"},
		// A restarted task resumes from its recorded elapsed time.
		{"restarted task", 100, 101 * time.Second, "exceeded elapsed time limit 101.00 ("},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\nsleep 1000 &\nwait\n")
			spec := e.spec("")
			spec.Version.Flops = 2e9
			spec.Result.ElapsedTime = tc.startElapsed
			spec.MaxElapsed = tc.limit
			slot, _, err := e.runner.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			ev, limits := pollUntilExit(t, e, 15*time.Second)
			x := ev.Exit
			if x.Outcome != Error || x.ExitStatus != boinc.ExitTimeLimitExceeded || !strings.HasPrefix(x.Message, tc.wantMsg) {
				t.Fatalf("exit %v status %d %q", x.Outcome, x.ExitStatus, x.Message)
			}
			// A plain program cannot hear <abort/>: killed at once.
			if x.Signal != int(syscall.SIGKILL) {
				t.Errorf("signal %d, want SIGKILL", x.Signal)
			}
			if len(limits) != 1 || limits[0] != x.Message {
				t.Errorf("Status.LimitExceeded reported %q, want once %q", limits, x.Message)
			}
			if x.ElapsedTime < tc.limit.Seconds() {
				t.Errorf("elapsed %v under the limit", x.ElapsedTime)
			}
			if _, err := os.Stat(e.slotPath(slot, "init_data.xml")); !os.IsNotExist(err) {
				t.Errorf("slot not cleaned: %v", err)
			}
		})
	}
}

func TestElapsedLimitSkipsSuspendedTime(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do sleep 0.05; done\n")
	spec := e.spec("")
	spec.MaxElapsed = 2 * time.Second
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	e.runner.Poll(t0)
	if err := e.runner.Suspend(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	// An hour suspended does not count.
	if st := e.runner.Poll(t0.Add(time.Hour)); len(st) != 1 || st[0].ElapsedTime > 2 {
		t.Fatalf("status while suspended %+v", st)
	}
	select {
	case ev := <-e.events:
		t.Fatalf("suspended task ended: %+v", ev.Exit)
	default:
	}
	if err := e.runner.Resume(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	e.runner.Poll(t0.Add(time.Hour + 3*time.Second))
	x := waitEvent(t, e.events, 10*time.Second).Exit
	if x.Outcome != Error || x.ExitStatus != boinc.ExitTimeLimitExceeded {
		t.Fatalf("exit %+v", x)
	}
	if x.ElapsedTime > 10 {
		t.Errorf("elapsed %v counts the suspension", x.ElapsedTime)
	}
}

func TestMemoryLimitKillsTask(t *testing.T) {
	e := newTestEnv(t, Config{})
	// tail keeps a line in memory until it ends; this one is 200 MB long
	// and the pipe stays open.
	e.writeApp(t, appFile, "#!/bin/sh\n{ head -c 200000000 /dev/zero; sleep 1000; } | tail\n")
	spec := e.spec("")
	spec.MaxMemory = 50e6
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	var seen float64
	deadline := time.Now().Add(60 * time.Second)
	var ev Event
	for done := false; !done; {
		if time.Now().After(deadline) {
			t.Fatalf("no exit; smoothed working set reached %.0f", seen)
		}
		for _, s := range e.runner.Poll(time.Now()) {
			seen = max(seen, s.WorkingSet)
		}
		select {
		case ev = <-e.events:
			done = true
		case <-time.After(200 * time.Millisecond):
		}
	}
	x := ev.Exit
	if x.Outcome != Error || x.ExitStatus != boinc.ExitMemLimitExceeded || !strings.HasPrefix(x.Message, "working set size > client RAM limit: ") ||
		!strings.HasSuffix(x.Message, "MB > 47.68MB") {
		t.Fatalf("exit %v status %d %q", x.Outcome, x.ExitStatus, x.Message)
	}
	// The smoothed value lags the samples: the peak is the raw one, above
	// the limit. (How far above depends on how fast the app grew while
	// the average caught up: 121 MB on a busy CI host, 150 MB+ alone.)
	if x.PeakWorkingSet < 50e6 || seen <= 0 || seen > x.PeakWorkingSet {
		t.Errorf("peak %.0f, smoothed status %.0f", x.PeakWorkingSet, seen)
	}
}

func TestDiskLimitKillsTask(t *testing.T) {
	e := newTestEnv(t, Config{DiskCheckInterval: 200 * time.Millisecond})
	e.writeApp(t, appFile, "#!/bin/sh\nhead -c 5000000 /dev/zero > big\nsleep 1000\n")
	spec := e.spec("")
	spec.MaxDisk = 1 << 20
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	ev, limits := pollUntilExit(t, e, 15*time.Second)
	x := ev.Exit
	if x.Outcome != Error || x.ExitStatus != boinc.ExitDiskLimitExceeded || x.Message != "Disk usage limit exceeded" {
		t.Fatalf("exit %v status %d %q", x.Outcome, x.ExitStatus, x.Message)
	}
	if len(limits) != 1 || !strings.HasPrefix(limits[0], "exceeded disk limit: ") || !strings.HasSuffix(limits[0], "MB > 1.00MB") {
		t.Errorf("Status.LimitExceeded reported %q", limits)
	}
	if x.PeakDiskUsage <= spec.MaxDisk {
		t.Errorf("peak disk usage %.0f", x.PeakDiskUsage)
	}
}

func TestDiskCheckInterval(t *testing.T) {
	e := newTestEnv(t, Config{DiskCheckInterval: time.Hour})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.02; done\nhead -c 100000 /dev/zero > big\necho > written\nsleep 1000\n")
	spec := e.spec("")
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	st := e.runner.Poll(t0)
	before := st[0].DiskUsage
	if before <= 0 || before > 50000 {
		t.Fatalf("first measure %v", before)
	}
	if err := os.WriteFile(e.slotPath(slot, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the file", 10*time.Second, func() bool {
		_, err := os.Stat(e.slotPath(slot, "written"))
		return err == nil
	})
	if st := e.runner.Poll(t0.Add(time.Minute)); st[0].DiskUsage != before {
		t.Fatalf("measured again within the interval: %v", st[0].DiskUsage)
	}
	if st := e.runner.Poll(t0.Add(time.Hour)); st[0].DiskUsage < before+100000 {
		t.Fatalf("not measured after the interval: %v", st[0].DiskUsage)
	}
}

// stoppedFraction samples the process state for d and returns the share
// of samples in which it was stopped, polling the runner as it goes.
func stoppedFraction(e *testEnv, pid int, d time.Duration) (frac float64, throttled bool) {
	n, stopped := 0, 0
	nextPoll := time.Now()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(25 * time.Millisecond) {
		if now := time.Now(); !now.Before(nextPoll) {
			for _, s := range e.runner.Poll(now) {
				throttled = throttled || s.Throttled
			}
			nextPoll = now.Add(250 * time.Millisecond)
		}
		n++
		if procState(pid) == "T" {
			stopped++
		}
	}
	return float64(stopped) / float64(n), throttled
}

func TestThrottleDutyCyclesBusyTask(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do :; done\n")
	spec := e.spec("")
	_, pid, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	cpuAt := func() float64 { return processCPU(t, pid) }

	e.runner.SetThrottle(50)
	c0, w0 := cpuAt(), time.Now()
	frac, throttled := stoppedFraction(e, pid, 10*time.Second)
	cpuShare := (cpuAt() - c0) / time.Since(w0).Seconds()
	t.Logf("50%%: stopped %.2f of the time, CPU %.2f of wall time", frac, cpuShare)
	if frac < 0.3 || frac > 0.7 || !throttled {
		t.Errorf("throttled at 50%%: stopped %.2f of the time (throttled status %v)", frac, throttled)
	}
	// Other load can only lower the CPU share, never raise it.
	if cpuShare > 0.75 {
		t.Errorf("throttled at 50%%: CPU %.2f of wall time", cpuShare)
	}

	e.runner.SetThrottle(100)
	if s := procState(pid); s == "T" {
		t.Fatalf("still stopped after SetThrottle(100)")
	}
	frac, throttled = stoppedFraction(e, pid, 3*time.Second)
	if frac != 0 || throttled {
		t.Errorf("SetThrottle(100): stopped %.2f of the time, throttled %v", frac, throttled)
	}
}

// TestThrottleAndDaemonSuspend drives the throttle with a synthetic clock
// and checks it never undoes the daemon's Suspend and Resume.
func TestThrottleAndDaemonSuspend(t *testing.T) {
	e := newTestEnv(t, Config{})
	// No forks: a shell stopped inside vfork (dash) would not show as
	// stopped, though its group is.
	e.writeApp(t, appFile, "#!/bin/sh\nexec sleep 1000\n")
	cpu := e.spec("")
	gpu := e.spec("")
	gpu.Result = &boinc.Result{ProjectURL: testURL, Name: "gpu_0", OutputFiles: cpu.Result.OutputFiles}
	gpu.GPUType, gpu.GPUDevices = "NVIDIA", []int{0}
	key := cpu.Result.Key()
	_, pid, err := e.runner.Start(context.Background(), cpu)
	if err != nil {
		t.Fatal(err)
	}
	_, gpid, err := e.runner.Start(context.Background(), gpu)
	if err != nil {
		t.Fatal(err)
	}
	waitState := func(pid int, want bool) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for (procState(pid) == "T") != want {
			if time.Now().After(deadline) {
				e.runner.mu.Lock()
				tk := e.runner.tasks[key]
				e.runner.mu.Unlock()
				t.Fatalf("process %d state %q, want stopped=%v; throttle %+v, task %+v", pid, procState(pid), want, e.runner.throttle, tk)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	status := func(st []Status) Status {
		for _, s := range st {
			if s.ResultKey == key {
				return s
			}
		}
		t.Fatalf("no status for the CPU task in %+v", st)
		return Status{}
	}
	e.runner.SetThrottle(50) // 5 s on, 5 s off
	t0 := time.Now()
	poll := func(sec int) Status { return status(e.runner.Poll(t0.Add(time.Duration(sec) * time.Second))) }
	for s := 0; s < 5; s++ {
		poll(s)
	}
	if st := poll(5); !st.Throttled || st.Suspended {
		t.Fatalf("off phase: %+v", st)
	}
	waitState(pid, true)
	if procState(gpid) == "T" {
		t.Fatal("GPU task throttled")
	}
	// The daemon suspends during the off phase, the on phase comes: the
	// task stays stopped.
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	for s := 6; s <= 10; s++ {
		poll(s)
	}
	if st := poll(10); !st.Suspended || st.Throttled {
		t.Fatalf("suspended in the on phase: %+v", st)
	}
	time.Sleep(100 * time.Millisecond)
	waitState(pid, true)
	// Resume in the on phase runs at once; in the next off phase it stops.
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}
	waitState(pid, false)
	for s := 11; s <= 15; s++ {
		poll(s)
	}
	waitState(pid, true)
	// Suspend and Resume within the off phase: stays stopped until the
	// on phase.
	if err := e.runner.Suspend(key); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.Resume(key); err != nil {
		t.Fatal(err)
	}
	if st := poll(16); st.Suspended || !st.Throttled {
		t.Fatalf("resumed in the off phase: %+v", st)
	}
	time.Sleep(100 * time.Millisecond)
	waitState(pid, true)
	for s := 17; s <= 20; s++ {
		poll(s)
	}
	waitState(pid, false)
	// Elapsed time counted through the throttle's off phases.
	if st := poll(20); st.ElapsedTime < 14 {
		t.Errorf("elapsed %v", st.ElapsedTime)
	}
	// Turning the throttle off mid-phase continues the task at once.
	for s := 21; s <= 25; s++ {
		poll(s)
	}
	waitState(pid, true)
	e.runner.SetThrottle(0)
	waitState(pid, false)
}

func TestThrottleAPIAppGetsMessages(t *testing.T) {
	e := newTestEnv(t, Config{})
	// Claims the API; the test reads its control channel.
	e.writeApp(t, appFile, "#!/bin/sh\nwhile :; do sleep 0.05; done\n")
	spec := e.spec("")
	spec.Version.APIVersion = "7.20.0"
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	shm, err := boincapi.OpenShmem(e.slotPath(slot, boincapi.MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	e.runner.SetThrottle(50)
	t0 := time.Now()
	for s := 0; s <= 5; s++ {
		e.runner.Poll(t0.Add(time.Duration(s) * time.Second))
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgSuspend {
		t.Fatalf("off phase: control channel %q %v", msg, ok)
	}
	for s := 6; s <= 10; s++ {
		e.runner.Poll(t0.Add(time.Duration(s) * time.Second))
	}
	if msg, ok, _ := shm.Receive(boincapi.ProcessControlRequest); !ok || msg != boincapi.MsgResume {
		t.Fatalf("on phase: control channel %q %v", msg, ok)
	}
	// Quit goes through even in an off phase, and stops the throttling.
	for s := 11; s <= 15; s++ {
		e.runner.Poll(t0.Add(time.Duration(s) * time.Second))
	}
	shm.Receive(boincapi.ProcessControlRequest)
	if err := e.runner.Kill(spec.Result.Key()); err != nil {
		t.Fatal(err)
	}
	if x := waitEvent(t, e.events, 10*time.Second).Exit; x.Outcome != Aborted {
		t.Fatalf("exit %+v", x)
	}
}

func TestGPUInitDataAndArgv(t *testing.T) {
	tests := []struct {
		name     string
		gpuType  string
		devices  []int
		usage    float64
		api      string
		avg      float64
		wantArgs string
		wantInit []string
	}{
		{name: "CPU task", api: "7.20.0", avg: 1, wantArgs: "--seconds 1",
			wantInit: []string{"<gpu_type></gpu_type>", "<gpu_device_num>-1</gpu_device_num>",
				"<gpu_opencl_dev_index>-1</gpu_opencl_dev_index>", "<gpu_usage>0.000000</gpu_usage>", "<ncpus>1.000000</ncpus>"}},
		{name: "API 7.20 NVIDIA", gpuType: "NVIDIA", devices: []int{1}, usage: 0.5, api: "7.20.0", avg: 0.04, wantArgs: "--seconds 1",
			wantInit: []string{"<gpu_type>NVIDIA</gpu_type>", "<gpu_device_num>1</gpu_device_num>",
				"<gpu_opencl_dev_index>1</gpu_opencl_dev_index>", "<gpu_usage>0.500000</gpu_usage>", "<ncpus>0.040000</ncpus>"}},
		{name: "API 7.4 ATI, two devices", gpuType: "ATI", devices: []int{2, 0}, usage: 2, api: "7.4.0", avg: 1,
			wantArgs: "--seconds 1 --device 2 --device 0",
			wantInit: []string{"<gpu_type>ATI</gpu_type>", "<gpu_device_num>2</gpu_device_num>",
				"<gpu_opencl_dev_index>2</gpu_opencl_dev_index>", "<gpu_usage>2.000000</gpu_usage>"}},
		{name: "plain intel_gpu app", gpuType: "intel_gpu", devices: []int{0}, api: "", avg: 1,
			wantArgs: "--seconds 1 --device 0",
			wantInit: []string{"<gpu_type>intel_gpu</gpu_type>", "<gpu_device_num>0</gpu_device_num>", "<gpu_usage>1.000000</gpu_usage>"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\necho \"$*\" > ../../args\nenv > ../../env\nexit 0\n")
			spec := e.spec("--seconds 1")
			spec.Version.APIVersion = tc.api
			spec.Version.AvgNCPUs = tc.avg
			spec.Version.Coproc = &boinc.CoprocUsage{Type: tc.gpuType, Count: 1}
			spec.GPUType, spec.GPUDevices, spec.GPUUsage = tc.gpuType, tc.devices, tc.usage
			slot, _, err := e.runner.Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			if x := waitEvent(t, e.events, 10*time.Second).Exit; x.Outcome != Restart {
				t.Fatalf("exit %+v", x)
			}
			args, err := os.ReadFile(filepath.Join(e.dataDir, "args"))
			if err != nil || strings.TrimSpace(string(args)) != tc.wantArgs {
				t.Errorf("argv %q (%v), want %q", args, err, tc.wantArgs)
			}
			init, err := os.ReadFile(e.slotPath(slot, "init_data.xml"))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range tc.wantInit {
				if !strings.Contains(string(init), "\n"+l+"\n") {
					t.Errorf("init_data.xml lacks %q", l)
				}
			}
			if _, set := os.LookupEnv("CUDA_VISIBLE_DEVICES"); !set {
				env, _ := os.ReadFile(filepath.Join(e.dataDir, "env"))
				if strings.Contains(string(env), "CUDA_VISIBLE_DEVICES") {
					t.Error("CUDA_VISIBLE_DEVICES set for the app")
				}
			}
		})
	}
}

func TestStartRefusesBadGPUAndLimits(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*TaskSpec)
		want   string
	}{
		{"GPU without device", func(s *TaskSpec) { s.GPUType = "NVIDIA" }, "no assigned device"},
		{"negative device", func(s *TaskSpec) { s.GPUType, s.GPUDevices = "NVIDIA", []int{-1} }, "invalid GPU device"},
		{"negative limit", func(s *TaskSpec) { s.MaxMemory = -1 }, "negative resource limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEnv(t, Config{})
			e.writeApp(t, appFile, "#!/bin/sh\nexit 0\n")
			spec := e.spec("")
			tc.mutate(&spec)
			if _, _, err := e.runner.Start(context.Background(), spec); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
