package taskrunner

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// Elapsed-time bounds of ACTIVE_TASK::init (client/app.cpp): a limit
// under MIN_TIME_BOUND means the project's numbers are not credible, and
// DEFAULT_TIME_BOUND is used instead.
const (
	minTimeBound     = 120 * time.Second
	defaultTimeBound = 12 * time.Hour
)

// ElapsedLimit is the elapsed-time limit of a task: rsc_fpops_bound /
// flops seconds, or 12 h when that is under 120 s or not a number (a
// zero or negative bound or speed).
func ElapsedLimit(fpopsBound, flops float64) time.Duration {
	if flops <= 0 {
		return defaultTimeBound
	}
	x := fpopsBound / flops
	if !(x >= minTimeBound.Seconds()) {
		return defaultTimeBound
	}
	if x >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(x * float64(time.Second))
}

// WSSHalfLife is the half-life of the smoothed working set. The C++
// client samples every 10 s and sets smoothed = (smoothed + sample) / 2
// (ACTIVE_TASK_SET::get_memory_usage); the runner samples at every Poll
// and weighs a sample taken dt after the previous one by
// 1 - 2^(-dt/WSSHalfLife), which gives the same decay over time whatever
// the poll rate. The smoothed value starts at 0 when the process starts,
// so a brief spike at start-up does not trip the memory limit.
const WSSHalfLife = 10 * time.Second

// smoothWSS folds a working-set sample taken dt after the previous one
// into the smoothed value.
func smoothWSS(prev, sample float64, dt time.Duration) float64 {
	if dt <= 0 {
		return prev
	}
	a := 1 - math.Exp2(-dt.Seconds()/WSSHalfLife.Seconds())
	return prev + a*(sample-prev)
}

// DefaultDiskCheckInterval is how often the slot directory is measured:
// walking it is too costly for every Poll.
const DefaultDiskCheckInterval = 10 * time.Second

// diskUsage is the task's disk footprint as the C++ client counts it
// (ACTIVE_TASK::current_disk_usage): every regular file under the slot
// directory, plus the outputs already written into the project
// directory. Links are not followed, so soft-linked inputs count as the
// few bytes of their link file.
func diskUsage(dir string, extra []string) (float64, error) {
	var total float64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if path == dir {
				return err
			}
			return nil // a file the app removed meanwhile
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		total += float64(info.Size())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("disk usage of %s: %w", dir, err)
	}
	for _, p := range extra {
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			total += float64(st.Size())
		}
	}
	return total, nil
}

// limitExceeded describes why a task is being aborted for a resource
// limit (ACTIVE_TASK_SET::check_rsc_limits_exceeded).
type limitExceeded struct {
	status int
	// msg is the result's error message (abort_task's msg argument).
	msg string
	// logMsg is what the C++ client writes to the event log after
	// "Aborting task NAME: ". It differs from msg only for the disk
	// limit.
	logMsg string
}

// megabyte is the C++ client's MEGA.
const megabyte = 1 << 20

// elapsedLimitMessage is check_rsc_limits_exceeded's wording: the limit
// in seconds, then rsc_fpops_bound and the speed in units of 1e9.
func elapsedLimitMessage(limit time.Duration, fpopsBound, flops float64) string {
	return fmt.Sprintf("exceeded elapsed time limit %.2f (%.2fG/%.2fG)", limit.Seconds(), fpopsBound/1e9, flops/1e9)
}

// memoryLimitMessage is check_rsc_limits_exceeded's wording for a
// working set over the client's RAM limit, or, when the limit is the
// workunit's rsc_memory_bound, the wording of its (disabled) check of
// that bound.
func memoryLimitMessage(wss, limit float64, wuBound bool) string {
	what := "client RAM limit"
	if wuBound {
		what = "workunit.rsc_memory_bound"
	}
	return fmt.Sprintf("working set size > %s: %.2fMB > %.2fMB", what, wss/megabyte, limit/megabyte)
}

// diskLimit is ACTIVE_TASK::check_max_disk_exceeded's: the event log
// gives the numbers, the result only "Disk usage limit exceeded".
func diskLimit(usage, limit float64) *limitExceeded {
	return &limitExceeded{
		status: boinc.ExitDiskLimitExceeded,
		msg:    "Disk usage limit exceeded",
		logMsg: fmt.Sprintf("exceeded disk limit: %.2fMB > %.2fMB", usage/megabyte, limit/megabyte),
	}
}

// apiVersionAtLeast is APP_VERSION::api_version_at_least: the version
// must start with "major.minor"; anything else (empty included) is older
// than every version.
func apiVersionAtLeast(v string, major, minor int) bool {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err := strconv.Atoi(leadingInt(parts[0]))
	if err != nil {
		return false
	}
	mnr, err := strconv.Atoi(leadingInt(parts[1]))
	if err != nil {
		return false
	}
	if maj != major {
		return maj > major
	}
	return mnr >= minor
}

// leadingInt is the prefix sscanf("%d") would read: optional sign, then
// digits.
func leadingInt(s string) string {
	s = strings.TrimLeft(s, " \t\n")
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// deviceArgs is what the C++ client appends to the command line of a GPU
// job whose app predates API 7.5 (coproc_cmdline in client/app_start.cpp):
// `--device N` for each assigned instance. Newer apps read the device
// from init_data.xml.
func deviceArgs(spec TaskSpec) []string {
	if spec.GPUType == "" || apiVersionAtLeast(spec.Version.APIVersion, 7, 5) {
		return nil
	}
	var args []string
	for _, d := range spec.GPUDevices {
		args = append(args, "--device", strconv.Itoa(d))
	}
	return args
}

// Throttle cycle bounds: a cycle lasts throttleCycle, stretched so that
// the shorter phase lasts at least throttleMinPhase, the granularity of
// the daemon's once-a-second Poll (the C++ throttler's 1-s on-phase).
const (
	throttleCycle    = 10 * time.Second
	throttleMinPhase = time.Second
	// A gap between Polls longer than this (the host slept, the daemon
	// stalled) is not counted: it says nothing about the duty cycle.
	throttleMaxStep = 10 * time.Second
)

// throttle is the CPU-usage duty cycle, driven only by the clock passed
// to Poll. It is a sigma-delta modulator: debt is the run time owed
// (frac of the time elapsed minus the time spent running, in seconds).
// Running pays it off at 1-frac per second, pausing accrues it at frac
// per second, and the phase flips when the debt crosses ±half, the
// amplitude that makes a phase last frac·cycle (on) or (1-frac)·cycle
// (off). A phase that overruns because Polls come at whole seconds
// leaves its overrun in the debt, so the next phase compensates and the
// long-run duty cycle is exactly frac.
type throttle struct {
	frac float64 // 0: not throttling
	on   bool
	debt float64
	last time.Time
}

func throttleHalf(frac float64) float64 {
	cycle := throttleCycle.Seconds()
	if short := min(frac, 1-frac); short > 0 && throttleMinPhase.Seconds()/short > cycle {
		cycle = throttleMinPhase.Seconds() / short
	}
	return frac * (1 - frac) * cycle / 2
}

func (th *throttle) active() bool { return th.frac > 0 }

// set changes the limit to pct percent; outside (0, 100) it stops
// throttling. A running cycle keeps its phase.
func (th *throttle) set(pct float64) {
	f := pct / 100
	if !(f > 0 && f < 1) {
		*th = throttle{}
		return
	}
	if !th.active() {
		*th = throttle{frac: f, on: true, debt: throttleHalf(f)}
		return
	}
	th.frac = f
	h := throttleHalf(f)
	th.debt = min(max(th.debt, -h), h)
}

// advance moves the throttle to now and reports whether tasks may run.
func (th *throttle) advance(now time.Time) bool {
	if !th.active() {
		return true
	}
	if th.last.IsZero() {
		th.last = now
		return th.on
	}
	dt := now.Sub(th.last).Seconds()
	th.last = now
	if dt < 0 || dt > throttleMaxStep.Seconds() {
		dt = 0
	}
	if th.on {
		th.debt -= (1 - th.frac) * dt
	} else {
		th.debt += th.frac * dt
	}
	// The tolerance keeps a phase that ends exactly on a poll (5 s at
	// 50%) from running one poll longer through rounding.
	h := throttleHalf(th.frac) - 1e-9
	if th.on && th.debt <= -h {
		th.on = false
	} else if !th.on && th.debt >= h {
		th.on = true
	}
	return th.on
}
