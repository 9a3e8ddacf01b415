package hostcond

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Hold times of the CPU-usage condition. The non-BOINC load is already a
// 10-second average (CPUSampler), but builds, browsers and updates make
// it jump over the threshold for seconds at a time; suspending and
// resuming every task on each jump would cost more than it saves
// (checkpoints are lost on suspend unless apps stay in memory). So the
// load must stay above the threshold for CPUUsageSuspendHold before tasks
// are suspended, and below it for CPUUsageResumeHold before they resume.
//
// The other conditions act at once. Battery power and the time-of-day
// windows change rarely and are meant to act at once. User activity has
// its hysteresis by definition: any input suspends (the user must get the
// machine back immediately) and the user counts as active until
// idle_time_to_run minutes after the last input.
const (
	CPUUsageSuspendHold = 30 * time.Second
	CPUUsageResumeHold  = 30 * time.Second
)

// Inputs are the host observations at one instant.
type Inputs struct {
	// Now is the current time; its Location is the time zone of the
	// time-of-day windows, so pass time.Now() (local).
	Now time.Time
	// IdleSecs is the time since the last user input; < 0 = unknown.
	IdleSecs float64
	// OnBattery is whether the host runs on batteries; unknown = false.
	OnBattery bool
	// NonBOINCCPU is the CPU usage, 0–100 % of all CPUs, of processes
	// other than boincd's tasks; < 0 = unknown.
	NonBOINCCPU float64
}

// Decision is what the conditions require now.
type Decision struct {
	// Computing is the bitmask of reasons (Reason*) to suspend all tasks;
	// 0 = tasks may compute.
	Computing uint32
	// GPU is the bitmask of reasons to suspend GPU tasks. It includes
	// every Computing reason (a GPU task is a task), plus ReasonUserActive
	// when run_gpu_if_user_active is off; GPU tasks may run iff GPU == 0.
	// GPU &^ Computing is the GPU-only part (cc_status gpu_suspend_reason).
	GPU uint32
	// Network is the bitmask of reasons to suspend file transfers and
	// scheduler requests (ReasonTimeOfDay: outside net_start/end_hour).
	Network uint32
	// UserActive is whether the user counts as active (input within
	// idle_time_to_run); false when the idle time is unknown.
	UserActive bool
	// Reasons describe every reason in force, in BOINC's precedence
	// order, for the event log and status output.
	Reasons []string
}

// Evaluator turns Inputs and Prefs into a Decision, keeping the state
// that hysteresis needs. The zero value is ready; it is safe for
// concurrent use, but it expects time to move forward from one call to
// the next.
type Evaluator struct {
	mu  sync.Mutex
	cpu latch
}

// latch is one debounced condition: it flips only after the raw value
// has differed from it continuously for the hold time of that direction.
type latch struct {
	on      bool
	pending bool
	since   time.Time
}

func (l *latch) update(raw bool, now time.Time, onHold, offHold time.Duration) bool {
	if raw == l.on {
		l.pending = false
		return l.on
	}
	if !l.pending || now.Before(l.since) {
		// A clock stepped backwards restarts the hold rather than
		// stretching it by the step.
		l.pending, l.since = true, now
	}
	hold := offHold
	if raw {
		hold = onHold
	}
	if now.Sub(l.since) >= hold {
		l.on, l.pending = raw, false
	}
	return l.on
}

func (l *latch) reset() { *l = latch{} }

// Evaluate applies p to in (check_suspend_processing and
// check_suspend_network of the C++ client, less run modes, benchmarks and
// the conditions boincd checks elsewhere).
//
// Unknown inputs never suspend: an unknown idle time makes the user
// "not active" (as the C++ client, which finds no input device, sees an
// idle user) and disables suspend_if_no_recent_input; an unknown CPU load
// counts as below every threshold.
func (e *Evaluator) Evaluate(in Inputs, p Prefs) Decision {
	e.mu.Lock()
	defer e.mu.Unlock()

	var d Decision
	idleKnown := in.IdleSecs >= 0
	d.UserActive = idleKnown && in.IdleSecs < p.IdleTimeToRun*60
	var cpuReasons, gpuReasons, netReasons []string

	if !p.RunOnBatteries && in.OnBattery {
		d.Computing |= ReasonBatteries
		cpuReasons = append(cpuReasons, "on batteries")
	}
	if d.UserActive {
		why := fmt.Sprintf("computer is in use (last input %s ago; computing waits for %s without input)",
			dur(in.IdleSecs), dur(p.IdleTimeToRun*60))
		if !p.RunIfUserActive {
			d.Computing |= ReasonUserActive
			cpuReasons = append(cpuReasons, why)
		} else if !p.RunGPUIfUserActive {
			d.GPU |= ReasonUserActive
			gpuReasons = append(gpuReasons, "GPU: "+why)
		}
	}
	hour := hourOf(in.Now)
	if w := p.cpuWindow(in.Now); w.Suspended(hour) {
		d.Computing |= ReasonTimeOfDay
		cpuReasons = append(cpuReasons, fmt.Sprintf("time of day (computing allowed %s on %s, now %s)",
			w, in.Now.Weekday(), in.Now.Format("15:04")))
	}
	if p.SuspendIfNoRecentInput > 0 && idleKnown && in.IdleSecs >= p.SuspendIfNoRecentInput*60 {
		d.Computing |= ReasonNoRecentInput
		cpuReasons = append(cpuReasons, fmt.Sprintf("no recent user activity (no input for %s; limit %s)",
			dur(in.IdleSecs), dur(p.SuspendIfNoRecentInput*60)))
	}
	limit, which := p.NIUSuspendCPUUsage, "niu_suspend_cpu_usage"
	if d.UserActive {
		limit, which = p.SuspendCPUUsage, "suspend_cpu_usage"
	}
	if limit <= 0 {
		// Turning the preference off must resume at once, not after
		// the resume hold.
		e.cpu.reset()
	} else if e.cpu.update(in.NonBOINCCPU > limit, in.Now, CPUUsageSuspendHold, CPUUsageResumeHold) {
		d.Computing |= ReasonCPUUsage
		load := "unknown"
		if in.NonBOINCCPU >= 0 {
			load = fmt.Sprintf("%.0f%%", in.NonBOINCCPU)
		}
		why := fmt.Sprintf("CPU is busy (non-BOINC CPU usage %s; %s %g%%", load, which, limit)
		if in.NonBOINCCPU <= limit {
			why += fmt.Sprintf("; resuming after %s below it", dur(CPUUsageResumeHold.Seconds()))
		}
		cpuReasons = append(cpuReasons, why+")")
	}
	d.GPU |= d.Computing

	if w := p.netWindow(in.Now); w.Suspended(hour) {
		d.Network |= ReasonTimeOfDay
		netReasons = append(netReasons, fmt.Sprintf("network: time of day (network allowed %s on %s, now %s)",
			w, in.Now.Weekday(), in.Now.Format("15:04")))
	}
	d.Reasons = append(append(cpuReasons, gpuReasons...), netReasons...)
	return d
}

// NeedsIdle reports whether the time since the last user input can change
// Evaluate's decision under p, given the non-BOINC CPU load and whether
// the host has GPUs in use. Where it cannot, the caller passes IdleSecs
// -1 and saves probing the input devices: with the default preferences on
// a GPU-less host that is whenever the load is below both CPU limits.
func (e *Evaluator) NeedsIdle(p Prefs, nonBOINCCPU float64, gpus bool) bool {
	if !p.RunIfUserActive || gpus && !p.RunGPUIfUserActive || p.SuspendIfNoRecentInput > 0 {
		return true
	}
	// User activity then only picks the CPU limit: suspend_cpu_usage
	// while the user is active, niu_suspend_cpu_usage otherwise.
	if p.SuspendCPUUsage == p.NIUSuspendCPUUsage {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cpu.on || e.cpu.pending {
		// A hold in progress runs against one limit or the other.
		return true
	}
	// With the latch at rest, a load at or below every enabled limit
	// leaves it at rest whichever limit applies (a limit <= 0 is off).
	lo := -1.0
	for _, l := range []float64{p.SuspendCPUUsage, p.NIUSuspendCPUUsage} {
		if l > 0 && (lo < 0 || l < lo) {
			lo = l
		}
	}
	return lo > 0 && nonBOINCCPU > lo
}

// dur writes seconds the way a person reads them: "45s", "3m", "2h5m".
func dur(secs float64) string {
	s := time.Duration(secs * float64(time.Second)).Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
