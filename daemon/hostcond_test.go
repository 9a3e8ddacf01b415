package daemon

import (
	"log/slog"
	"testing"
	"time"

	"github.com/boincd/boincd/hostcond"
	"github.com/boincd/boincd/internal/testsupport"
)

// The run modes decide how host conditions count: "never" is a user
// request, "always" ignores the conditions, "auto" reports them; the GPU
// is suspended whenever computing is.
func TestSuspendReasons(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	busy := hostcond.Decision{Computing: hostcond.ReasonCPUUsage, GPU: hostcond.ReasonCPUUsage}
	tests := []struct {
		name             string
		run, gpu, net    int
		bench            bool
		dec              hostcond.Decision
		wantCPU, wantGPU uint32
		wantNet          uint32
	}{
		{"auto, nothing", ModeAuto, ModeAuto, ModeAuto, false, hostcond.Decision{}, 0, 0, 0},
		{"auto, cpu busy", ModeAuto, ModeAuto, ModeAuto, false, busy, hostcond.ReasonCPUUsage, hostcond.ReasonCPUUsage, 0},
		{"always ignores conditions", ModeAlways, ModeAlways, ModeAuto, false, busy, 0, 0, 0},
		{"never is a user request", ModeNever, ModeAuto, ModeNever, false, hostcond.Decision{}, SuspendUserReq, SuspendUserReq, SuspendUserReq},
		{"gpu never only", ModeAuto, ModeNever, ModeAuto, false, hostcond.Decision{}, 0, SuspendUserReq, 0},
		{"network window", ModeAuto, ModeAuto, ModeAuto, false, hostcond.Decision{Network: hostcond.ReasonTimeOfDay}, 0, 0, hostcond.ReasonTimeOfDay},
		{"benchmarks stop computing whatever the mode", ModeAlways, ModeAlways, ModeAuto, true, hostcond.Decision{}, hostcond.ReasonBenchmarks, hostcond.ReasonBenchmarks, 0},
		{"benchmarks come before never", ModeNever, ModeAuto, ModeAuto, true, busy, hostcond.ReasonBenchmarks, hostcond.ReasonBenchmarks, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := &Daemon{hostc: newHostState(), benchRunning: tt.bench}
			d.host.NUsableCoprocs = 1
			d.modes.Run.Perm, d.modes.GPU.Perm, d.modes.Network.Perm = tt.run, tt.gpu, tt.net
			d.hostc.decision = tt.dec
			cpu, gpu, net := d.suspendReasons(now)
			if cpu != tt.wantCPU || gpu != tt.wantGPU || net != tt.wantNet {
				t.Fatalf("reasons = %d/%d/%d, want %d/%d/%d", cpu, gpu, net, tt.wantCPU, tt.wantGPU, tt.wantNet)
			}
			if d.computingSuspended(now) != (tt.wantCPU != 0) || d.networkSuspended(now) != (tt.wantNet != 0) {
				t.Fatal("computingSuspended/networkSuspended disagree with the reasons")
			}
			// Without a GPU there is no GPU state to report.
			d.host.NUsableCoprocs = 0
			if _, gpu, _ := d.suspendReasons(now); gpu != 0 {
				t.Fatalf("GPU reason %d on a host without GPUs", gpu)
			}
		})
	}
}

// A temporary mode lasts its duration, then the permanent one is back.
func TestRunModeTemporary(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	var m runMode
	if err := m.set(ModeNever, time.Hour, now); err != nil {
		t.Fatal(err)
	}
	if m.Current(now) != ModeNever || m.Current(now.Add(2*time.Hour)) != ModeAuto {
		t.Fatalf("temporary mode: %d then %d", m.Current(now), m.Current(now.Add(2*time.Hour)))
	}
	if d := m.Delay(now.Add(30 * time.Minute)); d < 1799 || d > 1801 {
		t.Fatalf("delay = %g", d)
	}
	if err := m.set(ModeRestore, 0, now); err != nil || m.Current(now) != ModeAuto {
		t.Fatalf("restore: %v %d", err, m.Current(now))
	}
	if err := m.set(9, 0, now); err == nil {
		t.Fatal("mode 9 accepted")
	}
}

// A suspension is logged when what is suspended changes, not every second
// as its countdown text ("last input 7s ago") does.
func TestHostSuspensionLoggedOnce(t *testing.T) {
	t.Parallel()
	logs := &testsupport.LogBuffer{}
	d := &Daemon{hostc: newHostState(), log: slog.New(slog.NewJSONHandler(logs, nil))}
	d.hostc.prefs.SuspendCPUUsage, d.hostc.prefs.NIUSuspendCPUUsage = 0, 0
	d.hostc.prefs.RunIfUserActive = false
	d.hostc.onBattery = func() bool { return false }
	idle := 5.0
	d.hostc.idle = func(time.Time) float64 { return idle }
	now := time.Unix(1_800_000_000, 0)
	for i := range 10 {
		d.evaluateHost(now.Add(time.Duration(i)*time.Second), nil)
		idle++
	}
	idle = 3600
	for i := range 3 {
		d.evaluateHost(now.Add(time.Duration(10+i)*time.Second), nil)
	}
	if got := len(logs.Find("suspending by host conditions")); got != 1 {
		t.Errorf("%d suspension lines over 10 s of user activity, want 1:\n%s", got, logs)
	}
	if got := len(logs.Find("host conditions allow computing again")); got != 1 {
		t.Errorf("%d resume lines, want 1", got)
	}
}
