package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/boincd/boincd/workfetch"
)

// Scenario is one emulation setup: a host, preferences, projects and
// their servers. It is read from TOML (see sim/README.md for every key)
// and checked by Validate.
type Scenario struct {
	// Path is the file it came from, for error messages ("" if built in Go).
	Path string `toml:"-" json:"-"`

	DurationDays float64 `toml:"duration_days"`
	// StepSeconds is the simulated clock's step (default 60).
	StepSeconds float64 `toml:"step_seconds"`
	// EventDriven ends a step early at the first event inside it (a job
	// completing, the host going on or off, a reply arriving, a project
	// attaching), so the client reacts at once; StepSeconds is then the
	// longest step.
	EventDriven bool   `toml:"event_driven"`
	Seed        uint64 `toml:"seed"`
	// RPCDelaySeconds is how long a scheduler RPC takes: the reply and its
	// jobs arrive that much after the request (default 0: within the step).
	RPCDelaySeconds float64 `toml:"rpc_delay_seconds"`

	Host     HostSpec      `toml:"host"`
	Prefs    PrefsSpec     `toml:"prefs"`
	Policies PoliciesSpec  `toml:"policies"`
	Projects []ProjectSpec `toml:"project"`

	raw []byte
}

// HostSpec is the simulated computer.
type HostSpec struct {
	CPUs int `toml:"cpus"`
	// CPUFlops is one CPU's speed, FLOPS (default 1e9).
	CPUFlops float64   `toml:"cpu_flops"`
	GPUs     []GPUSpec `toml:"gpus"`
	// Availability makes the host come and go; nil means always on.
	Availability *AvailabilitySpec `toml:"availability"`
	// ConnectionIntervalDays makes the host go online only now and then
	// (the 2007 simulator's connection_interval): it can reach servers
	// during the first hour of every interval and at no other time.
	// 0: always connected.
	ConnectionIntervalDays float64 `toml:"connection_interval_days"`
}

// PoliciesSpec names the policy alternative at each decision point, as
// in Kondo, Anderson and McLeod (e-Science 2007); "" is boincd's
// default. Options set in Go (or on the command line) override these.
type PoliciesSpec struct {
	// Priority is the project priority: "debt" (long-term debt, the
	// default) or "rec" (the C++ client's recent estimated credit).
	Priority string `toml:"priority"`
	// CPUSched is "cs2" (rr simulation, EDF for jobs that would miss,
	// weighted round robin for the rest; the default, also "core") or
	// "cs1" (weighted round robin by share only).
	CPUSched string `toml:"cpu_sched"`
	// WorkFetch is "wf2" (debt + simulated shortfall; the default, also
	// "core") or "wf1" (keep the buffer full, split by share).
	WorkFetch string `toml:"work_fetch"`
	// WorkSend is the servers' send policy: "ws1" (send until the
	// requested seconds are covered, no check; the default), "plain"
	// (the stock BOINC server's check: send a job while the request's
	// estimated delay plus its run time is within the latency bound,
	// as deadline_check on every project) or "ws2" (send a job only if
	// an EDF simulation of the host's queue with it added keeps it and
	// every job now on time on time, and no late job gets later).
	WorkSend string `toml:"work_send"`
	// Estimate is "jc2" (per-project duration correction factor; the
	// default) or "jc1" (no correction: every project as dont_use_dcf).
	Estimate string `toml:"estimate"`
}

// Policy names accepted in [policies].
const (
	WorkSendWS1   = "ws1"
	WorkSendWS2   = "ws2"
	WorkSendPlain = "plain"
	EstimateJC1   = "jc1"
	EstimateJC2   = "jc2"
)

// GPUSpec is one GPU type on the host.
type GPUSpec struct {
	Type  string `toml:"type"` // NVIDIA, ATI/AMD or intel_gpu
	Count int    `toml:"count"`
	// RelativeSpeed is one instance's speed relative to one CPU.
	RelativeSpeed float64 `toml:"relative_speed"`
}

// AvailabilitySpec is an alternating renewal process: on periods are
// exponential with mean OnMeanS, off periods exponential with mean
// OffMeanS. The long-run on fraction is on/(on+off).
type AvailabilitySpec struct {
	OnMeanS  float64 `toml:"on_mean_s"`
	OffMeanS float64 `toml:"off_mean_s"`
}

// OnFrac is the long-run fraction of time the host is on.
func (a *AvailabilitySpec) OnFrac() float64 {
	if a == nil || a.OffMeanS == 0 {
		return 1
	}
	return a.OnMeanS / (a.OnMeanS + a.OffMeanS)
}

// PrefsSpec are the volunteer's computing preferences; zero means the
// BOINC default.
type PrefsSpec struct {
	WorkBufMinDays             float64 `toml:"work_buf_min_days"`
	WorkBufAdditionalDays      float64 `toml:"work_buf_additional_days"`
	CPUSchedulingPeriodMinutes float64 `toml:"cpu_scheduling_period_minutes"`
}

// ProjectSpec is one simulated project and its server.
type ProjectSpec struct {
	Name             string  `toml:"name"`
	Share            float64 `toml:"share"`
	LatencyBoundDays float64 `toml:"latency_bound_days"`
	// AttachAtDays: the host attaches to the project this far into the run.
	AttachAtDays float64 `toml:"attach_at_days"`
	// DontUseDCF is the server's <dont_use_dcf/>: the client keeps DCF at 1.
	DontUseDCF bool `toml:"dont_use_dcf"`
	// DeadlineCheck makes the server send a job only if the client could
	// start it (after the request's estimated delay) and finish it within
	// the latency bound, as BOINC servers do; off, it sends blindly.
	DeadlineCheck bool      `toml:"deadline_check"`
	Apps          []AppSpec `toml:"apps"`
	// Outages are intervals when the server refuses RPCs.
	Outages []OutageSpec `toml:"outages"`

	line int
}

// AppSpec is one app version of a project: what resource it uses and how
// big its jobs are.
type AppSpec struct {
	Resource string  `toml:"resource"` // CPU, NVIDIA, ATI, intel_gpu
	NCPUs    float64 `toml:"ncpus"`    // default 1 for CPU apps, 0 for GPU apps
	NGPUs    float64 `toml:"ngpus"`    // default 1 for GPU apps
	// FlopsMean and FlopsStddev give each job's true size (normal,
	// truncated at 1% of the mean).
	FlopsMean   float64 `toml:"flops_mean"`
	FlopsStddev float64 `toml:"flops_stddev"`
	// EstimateFactor is true size / estimated size: the server's estimate
	// is FlopsMean/EstimateFactor (default 1: right on average).
	EstimateFactor float64 `toml:"estimate_factor"`
	// AvailableFromDays and AvailableToDays bound when the server has jobs
	// of this app (to 0 = until the end).
	AvailableFromDays float64 `toml:"available_from_days"`
	AvailableToDays   float64 `toml:"available_to_days"`
	// MaxJobs caps how many jobs the server ever sends (0 = no cap).
	MaxJobs int `toml:"max_jobs"`
	// LatencyBoundDays overrides the project's latency bound for this app.
	LatencyBoundDays float64 `toml:"latency_bound_days"`

	rsc workfetch.Rsc
}

// OutageSpec is a server outage [FromDays, ToDays).
type OutageSpec struct {
	FromDays float64 `toml:"from_days"`
	ToDays   float64 `toml:"to_days"`
}

// Defaults of omitted settings.
const (
	DefaultStepSeconds     = 60
	DefaultCPUFlops        = 1e9
	DefaultBufMinDays      = 0.1
	DefaultBufAddDays      = 0.5
	DefaultSchedPeriodMins = 60
	DefaultLatencyDays     = 10
)

// LoadScenario reads and checks a scenario file.
func LoadScenario(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return ParseScenario(path, data)
}

var lineRE = regexp.MustCompile(`^line (\d+)(?: \(last key "[^"]*"\))?`)

// ParseScenario decodes and checks a scenario's bytes; path names it in
// errors.
func ParseScenario(path string, data []byte) (*Scenario, error) {
	sc := &Scenario{Path: path, raw: data}
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(sc)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		line := 0
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line = pe.Position.Line
		}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimLeft(strings.TrimPrefix(msg, m[0]), " :")
		}
		return nil, fmt.Errorf("%s: %s", sc.where(line), msg)
	}
	if und := md.Undecoded(); len(und) > 0 {
		last := und[0][len(und[0])-1]
		return nil, fmt.Errorf("%s: unknown setting %q", sc.where(sc.lineOf(last, 0)), und[0].String())
	}
	hdr := 0
	for i := range sc.Projects {
		hdr = lineOfTable(data, "project", hdr)
		sc.Projects[i].line = hdr
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return sc, nil
}

func (sc *Scenario) where(line int) string {
	name := sc.Path
	if name == "" {
		name = "scenario"
	}
	if line <= 0 {
		return name
	}
	return name + ":" + strconv.Itoa(line)
}

// lineOf finds the first line at or after line `from` that sets key
// (`key =` or `key=` at the start or inside an inline table). Simple on
// purpose: it is only for pointing at the right line in messages.
func (sc *Scenario) lineOf(key string, from int) int {
	re := regexp.MustCompile(`(^|[{,\s])` + regexp.QuoteMeta(key) + `\s*=`)
	lines := strings.Split(string(sc.raw), "\n")
	for i := max(from-1, 0); i < len(lines); i++ {
		if re.MatchString(lines[i]) {
			return i + 1
		}
	}
	if from > 0 {
		return from
	}
	return 0
}

// lineOfTable returns the line of the next [[name]] header after line `after`.
func lineOfTable(data []byte, name string, after int) int {
	for i, l := range strings.Split(string(data), "\n") {
		if i+1 <= after {
			continue
		}
		if strings.HasPrefix(strings.ReplaceAll(strings.TrimSpace(l), " ", ""), "[["+name+"]]") {
			return i + 1
		}
	}
	return 0
}

// Validate fills in defaults and checks every value, naming the file,
// line and bad value.
func (sc *Scenario) Validate() error {
	bad := func(key string, from int, format string, args ...any) error {
		return fmt.Errorf("%s: %s", sc.where(sc.lineOf(key, from)), fmt.Sprintf(format, args...))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if !finite(sc.DurationDays) || sc.DurationDays <= 0 || sc.DurationDays > 36500 {
		return bad("duration_days", 0, "duration_days = %g: want a number of days in (0, 36500]", sc.DurationDays)
	}
	if sc.StepSeconds == 0 {
		sc.StepSeconds = DefaultStepSeconds
	}
	if !finite(sc.StepSeconds) || sc.StepSeconds < 1 || sc.StepSeconds > 3600 {
		return bad("step_seconds", 0, "step_seconds = %g: want seconds in [1, 3600]", sc.StepSeconds)
	}
	if !finite(sc.RPCDelaySeconds) || sc.RPCDelaySeconds < 0 || sc.RPCDelaySeconds > 86400 {
		return bad("rpc_delay_seconds", 0, "rpc_delay_seconds = %g: want seconds in [0, 86400]", sc.RPCDelaySeconds)
	}
	h := &sc.Host
	if h.CPUs < 0 || h.CPUs > 4096 {
		return bad("cpus", 0, "host.cpus = %d: want 0..4096", h.CPUs)
	}
	if h.CPUFlops == 0 {
		h.CPUFlops = DefaultCPUFlops
	}
	if !finite(h.CPUFlops) || h.CPUFlops <= 0 {
		return bad("cpu_flops", 0, "host.cpu_flops = %g: want FLOPS > 0", h.CPUFlops)
	}
	var seen [workfetch.NumRsc]bool
	gpuLine := sc.lineOf("gpus", 0)
	for i, g := range h.GPUs {
		r, ok := workfetch.RscByName(g.Type)
		if !ok || !r.IsGPU() {
			return bad("type", gpuLine, "host.gpus[%d].type = %q: want NVIDIA, ATI or intel_gpu", i, g.Type)
		}
		if seen[r] {
			return bad("type", gpuLine, "host.gpus[%d].type = %q: that GPU type is listed twice", i, g.Type)
		}
		seen[r] = true
		if g.Count < 1 || g.Count > 64 {
			return bad("count", gpuLine, "host.gpus[%d].count = %d: want 1..64", i, g.Count)
		}
		if g.RelativeSpeed == 0 {
			h.GPUs[i].RelativeSpeed = 1
		} else if !finite(g.RelativeSpeed) || g.RelativeSpeed < 0 {
			return bad("relative_speed", gpuLine, "host.gpus[%d].relative_speed = %g: want > 0", i, g.RelativeSpeed)
		}
	}
	if h.CPUs == 0 && len(h.GPUs) == 0 {
		return bad("cpus", 0, "host.cpus = 0 and no GPUs: the host has nothing to compute on")
	}
	if h.CPUs == 0 {
		return bad("cpus", 0, "host.cpus = 0: GPU jobs need a CPU to drive them; want at least 1")
	}
	if a := h.Availability; a != nil {
		if !finite(a.OnMeanS) || a.OnMeanS <= 0 {
			return bad("on_mean_s", 0, "host.availability.on_mean_s = %g: want seconds > 0", a.OnMeanS)
		}
		if !finite(a.OffMeanS) || a.OffMeanS < 0 {
			return bad("off_mean_s", 0, "host.availability.off_mean_s = %g: want seconds >= 0", a.OffMeanS)
		}
	}
	if !finite(h.ConnectionIntervalDays) || h.ConnectionIntervalDays < 0 || h.ConnectionIntervalDays > 365 {
		return bad("connection_interval_days", 0, "host.connection_interval_days = %g: want days in [0, 365]", h.ConnectionIntervalDays)
	}
	if err := sc.Policies.check(func(key, format string, args ...any) error { return bad(key, 0, format, args...) }); err != nil {
		return err
	}
	p := &sc.Prefs
	if p.WorkBufMinDays == 0 && p.WorkBufAdditionalDays == 0 {
		p.WorkBufMinDays, p.WorkBufAdditionalDays = DefaultBufMinDays, DefaultBufAddDays
	}
	if !finite(p.WorkBufMinDays) || p.WorkBufMinDays < 0 || p.WorkBufMinDays > 10 {
		return bad("work_buf_min_days", 0, "prefs.work_buf_min_days = %g: want days in [0, 10]", p.WorkBufMinDays)
	}
	if !finite(p.WorkBufAdditionalDays) || p.WorkBufAdditionalDays < 0 || p.WorkBufAdditionalDays > 10 {
		return bad("work_buf_additional_days", 0, "prefs.work_buf_additional_days = %g: want days in [0, 10]", p.WorkBufAdditionalDays)
	}
	if p.CPUSchedulingPeriodMinutes == 0 {
		p.CPUSchedulingPeriodMinutes = DefaultSchedPeriodMins
	}
	if !finite(p.CPUSchedulingPeriodMinutes) || p.CPUSchedulingPeriodMinutes < 1 || p.CPUSchedulingPeriodMinutes > 1440 {
		return bad("cpu_scheduling_period_minutes", 0, "prefs.cpu_scheduling_period_minutes = %g: want minutes in [1, 1440]", p.CPUSchedulingPeriodMinutes)
	}
	if len(sc.Projects) == 0 {
		return fmt.Errorf("%s: no [[project]]: want at least one", sc.where(0))
	}
	names := map[string]bool{}
	for i := range sc.Projects {
		pr := &sc.Projects[i]
		ln := pr.line
		if strings.TrimSpace(pr.Name) == "" {
			return fmt.Errorf("%s: project %d has no name", sc.where(ln), i+1)
		}
		if names[pr.Name] {
			return bad("name", ln, "project name %q is used twice", pr.Name)
		}
		names[pr.Name] = true
		if !finite(pr.Share) || pr.Share < 0 {
			return bad("share", ln, "project %q: share = %g: want >= 0", pr.Name, pr.Share)
		}
		if pr.LatencyBoundDays == 0 {
			pr.LatencyBoundDays = DefaultLatencyDays
		}
		if !finite(pr.LatencyBoundDays) || pr.LatencyBoundDays < 0 || pr.LatencyBoundDays > 3650 {
			return bad("latency_bound_days", ln, "project %q: latency_bound_days = %g: want days in (0, 3650]", pr.Name, pr.LatencyBoundDays)
		}
		if !finite(pr.AttachAtDays) || pr.AttachAtDays < 0 || pr.AttachAtDays >= sc.DurationDays {
			return bad("attach_at_days", ln, "project %q: attach_at_days = %g: want days in [0, duration_days = %g)", pr.Name, pr.AttachAtDays, sc.DurationDays)
		}
		if len(pr.Apps) == 0 {
			return bad("apps", ln, "project %q has no apps: want at least one", pr.Name)
		}
		if len(pr.Apps) > 64 {
			return bad("apps", ln, "project %q has %d apps: want at most 64", pr.Name, len(pr.Apps))
		}
		for j := range pr.Apps {
			if err := sc.checkApp(pr, j, bad, finite); err != nil {
				return err
			}
		}
		for j, o := range pr.Outages {
			if !finite(o.FromDays) || !finite(o.ToDays) || o.FromDays < 0 || o.ToDays <= o.FromDays {
				return bad("outages", ln, "project %q: outages[%d] = {from_days = %g, to_days = %g}: want 0 <= from_days < to_days", pr.Name, j, o.FromDays, o.ToDays)
			}
		}
	}
	return nil
}

func (sc *Scenario) checkApp(pr *ProjectSpec, j int, bad func(string, int, string, ...any) error, finite func(float64) bool) error {
	a := &pr.Apps[j]
	// Point at app j's own line: the (j+1)th "resource =" after "apps".
	ln := sc.lineOf("apps", pr.line)
	for k := 0; k <= j; k++ {
		if next := sc.lineOf("resource", ln); next > 0 {
			if k < j {
				next++
			}
			ln = next
		}
	}
	r, ok := workfetch.RscByName(a.Resource)
	if !ok {
		return bad("resource", ln, "project %q: apps[%d].resource = %q: want CPU, NVIDIA, ATI or intel_gpu", pr.Name, j, a.Resource)
	}
	// An app for a GPU type the host lacks is allowed: the client never
	// asks for that type, as with a real server.
	a.rsc = r
	if r.IsGPU() {
		if a.NGPUs == 0 {
			a.NGPUs = 1
		}
		if !finite(a.NGPUs) || a.NGPUs <= 0 || a.NGPUs > 64 {
			return bad("ngpus", ln, "project %q: apps[%d].ngpus = %g: want (0, 64]", pr.Name, j, a.NGPUs)
		}
		if !finite(a.NCPUs) || a.NCPUs < 0 || a.NCPUs > 1 {
			return bad("ncpus", ln, "project %q: apps[%d].ncpus = %g: a GPU app uses [0, 1] CPUs", pr.Name, j, a.NCPUs)
		}
	} else {
		if a.NGPUs != 0 {
			return bad("ngpus", ln, "project %q: apps[%d].ngpus = %g: a CPU app uses no GPU", pr.Name, j, a.NGPUs)
		}
		if a.NCPUs == 0 {
			a.NCPUs = 1
		}
		if !finite(a.NCPUs) || a.NCPUs <= 0 || a.NCPUs > 4096 {
			return bad("ncpus", ln, "project %q: apps[%d].ncpus = %g: want (0, 4096]", pr.Name, j, a.NCPUs)
		}
	}
	if !finite(a.FlopsMean) || a.FlopsMean <= 0 {
		return bad("flops_mean", ln, "project %q: apps[%d].flops_mean = %g: want FLOPs > 0", pr.Name, j, a.FlopsMean)
	}
	if !finite(a.FlopsStddev) || a.FlopsStddev < 0 {
		return bad("flops_stddev", ln, "project %q: apps[%d].flops_stddev = %g: want >= 0", pr.Name, j, a.FlopsStddev)
	}
	if a.EstimateFactor == 0 {
		a.EstimateFactor = 1
	}
	if !finite(a.EstimateFactor) || a.EstimateFactor < 0.001 || a.EstimateFactor > 1000 {
		return bad("estimate_factor", ln, "project %q: apps[%d].estimate_factor = %g: want true/estimated size in [0.001, 1000]", pr.Name, j, a.EstimateFactor)
	}
	if !finite(a.AvailableFromDays) || a.AvailableFromDays < 0 {
		return bad("available_from_days", ln, "project %q: apps[%d].available_from_days = %g: want days >= 0", pr.Name, j, a.AvailableFromDays)
	}
	if !finite(a.AvailableToDays) || a.AvailableToDays < 0 || (a.AvailableToDays != 0 && a.AvailableToDays <= a.AvailableFromDays) {
		return bad("available_to_days", ln, "project %q: apps[%d].available_to_days = %g: want 0 (no end) or days > available_from_days", pr.Name, j, a.AvailableToDays)
	}
	if !finite(a.LatencyBoundDays) || a.LatencyBoundDays < 0 || a.LatencyBoundDays > 3650 {
		return bad("latency_bound_days", ln, "project %q: apps[%d].latency_bound_days = %g: want days in (0, 3650], or 0 for the project's", pr.Name, j, a.LatencyBoundDays)
	}
	if a.LatencyBoundDays == 0 {
		a.LatencyBoundDays = pr.LatencyBoundDays
	}
	if a.MaxJobs < 0 {
		return bad("max_jobs", ln, "project %q: apps[%d].max_jobs = %d: want >= 0", pr.Name, j, a.MaxJobs)
	}
	return nil
}

// instances is how many instances of r the host has.
func (h *HostSpec) instances(r workfetch.Rsc) float64 {
	if r == workfetch.CPU {
		return float64(h.CPUs)
	}
	for _, g := range h.GPUs {
		if gr, _ := workfetch.RscByName(g.Type); gr == r {
			return float64(g.Count)
		}
	}
	return 0
}

// relSpeed is one instance of r's speed relative to a CPU.
func (h *HostSpec) relSpeed(r workfetch.Rsc) float64 {
	if r == workfetch.CPU {
		return 1
	}
	for _, g := range h.GPUs {
		if gr, _ := workfetch.RscByName(g.Type); gr == r {
			return g.RelativeSpeed
		}
	}
	return 0
}

// check rejects unknown policy names; Run resolves them.
func (ps *PoliciesSpec) check(bad func(key, format string, args ...any) error) error {
	if _, err := PolicyByName(ps.Priority); err != nil {
		return bad("priority", "policies.priority = %q: %v", ps.Priority, err)
	}
	if _, err := SchedulerByName(ps.CPUSched); err != nil {
		return bad("cpu_sched", "policies.cpu_sched = %q: %v", ps.CPUSched, err)
	}
	if _, err := FetcherByName(ps.WorkFetch); err != nil {
		return bad("work_fetch", "policies.work_fetch = %q: %v", ps.WorkFetch, err)
	}
	switch ps.WorkSend {
	case "", WorkSendWS1, WorkSendWS2, WorkSendPlain:
	default:
		return bad("work_send", "policies.work_send = %q: want ws1, plain or ws2", ps.WorkSend)
	}
	switch ps.Estimate {
	case "", EstimateJC1, EstimateJC2:
	default:
		return bad("estimate", "policies.estimate = %q: want jc1 or jc2", ps.Estimate)
	}
	return nil
}
