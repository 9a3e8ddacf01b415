package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/boincd/boincd/hostcond"
)

// hostState tracks the host conditions that suspend computing in "auto"
// mode: user activity, non-BOINC CPU load, battery, time of day.
type hostState struct {
	eval      hostcond.Evaluator
	sampler   *hostcond.CPUSampler
	prefs     hostcond.Prefs
	decision  hostcond.Decision
	lastCPU   map[string]float64 // task → CPU seconds at the last sample
	loggedKey [3]uint32          // reasons (computing, GPU, network) last logged, to log changes once
	// idle and onBattery read the host (tests give their own). They are
	// called only when their answer can change the decision: the idle
	// probe stats every terminal and input device.
	idle      func(now time.Time) float64
	onBattery func() bool
}

func newHostState() *hostState {
	return &hostState{sampler: hostcond.NewCPUSampler(), lastCPU: map[string]float64{}, prefs: hostcond.DefaultPrefs(),
		idle: hostcond.NewIdleProbe().IdleSeconds, onBattery: hostcond.OnBattery}
}

// refreshHostPrefs rebuilds the suspend-condition preferences: the
// config's, then the override file's (which may hold day_prefs and the
// rest of BOINC's global preferences).
func (d *Daemon) refreshHostPrefs() {
	p := d.cfg.HostCondPrefs()
	if raw, err := os.ReadFile(filepath.Join(d.opt.DataDir, PrefsOverrideFile)); err == nil {
		if err := p.ApplyXML(raw); err != nil {
			d.log.Error("preferences override: suspend conditions ignored", slog.Any("err", err))
			p = d.cfg.HostCondPrefs()
		}
	}
	d.hostc.prefs = p
}

// evaluateHost samples the host once per poll and decides whether
// conditions suspend computing, the GPU or the network.
func (d *Daemon) evaluateHost(now time.Time, ownCPU map[string]float64) {
	if d.opt.IgnoreHostConditions {
		return
	}
	h := d.hostc
	delta := 0.0
	for k, cpu := range ownCPU {
		if last, ok := h.lastCPU[k]; ok && cpu > last {
			delta += cpu - last
		}
	}
	h.lastCPU = ownCPU
	in := hostcond.Inputs{Now: now, IdleSecs: -1, NonBOINCCPU: h.sampler.Sample(now, delta)}
	if !h.prefs.RunOnBatteries {
		in.OnBattery = h.onBattery()
	}
	// GPU reasons count only on a host with GPUs (suspendReasons).
	if h.eval.NeedsIdle(h.prefs, in.NonBOINCCPU, d.host.NUsableCoprocs > 0) {
		in.IdleSecs = h.idle(now)
	}
	h.decision = h.eval.Evaluate(in, h.prefs)
	// What is suspended, and why, is the reason bitmasks; the texts carry
	// countdowns ("last input 7s ago") that change every second and
	// would log (and re-check work fetch) every second.
	key := [3]uint32{h.decision.Computing, h.decision.GPU, h.decision.Network}
	if key != h.loggedKey {
		if msg := strings.Join(h.decision.Reasons, "; "); msg == "" {
			d.log.Info("host conditions allow computing again")
		} else {
			d.log.Info("suspending by host conditions", slog.String("reasons", msg))
		}
		h.loggedKey = key
		d.fetchSoon(now)
	}
}

// suspendReasons is the cc_status view: user request from the run mode,
// else the host conditions in "auto" mode (ModeAlways ignores them).
func (d *Daemon) suspendReasons(now time.Time) (cpu, gpu, network uint32) {
	switch {
	case d.benchRunning:
		// As the C++ client (check_suspend_processing), before any mode:
		// benchmarks measure the CPUs alone, and tasks running beside
		// them would skew every estimate made from the result.
		cpu = hostcond.ReasonBenchmarks
	case d.initialDelay(now):
		// start_delay (cc_config.xml): no task starts until it has
		// passed since the client started, whatever the mode.
		cpu = hostcond.ReasonInitialDelay
	case d.modes.Run.Current(now) == ModeNever:
		cpu = SuspendUserReq
	case d.modes.Run.Current(now) == ModeAuto:
		cpu = d.hostc.decision.Computing
		// exclusive_app: checked by the C++ client among the "run
		// according to preferences" conditions only.
		if d.cc.excl.Suspends(now) {
			cpu |= hostcond.ReasonExclusiveApp
		}
	}
	switch d.modes.GPU.Current(now) {
	case ModeNever:
		gpu = SuspendUserReq
	case ModeAuto:
		gpu = d.hostc.decision.GPU
		if d.cc.exclGPU.Suspends(now) {
			gpu |= hostcond.ReasonExclusiveApp
		}
	}
	gpu |= cpu
	if d.host.NUsableCoprocs == 0 {
		// The C++ client reports a GPU state only on a host that has
		// GPUs: boinccmd and the Manager show "not suspended" otherwise.
		gpu = 0
	}
	switch d.modes.Network.Current(now) {
	case ModeNever:
		network = SuspendUserReq
	case ModeAuto:
		network = d.hostc.decision.Network
		if d.overXferQuota(now) {
			network |= hostcond.ReasonNetworkQuota
		}
	}
	return hostcond.Primary(cpu), hostcond.Primary(gpu), hostcond.Primary(network)
}
