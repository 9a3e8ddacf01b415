package workfetch

import (
	"testing"
)

var twoRsc = Host{Instances: [NumRsc]float64{CPU: 4, NVIDIA: 1}, RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 10}, CPUAvail: 1, GPUAvail: 1}

// rsim is a resource's simulation verdict for the tests.
func rsim(idle, saturated, shortfall float64) RscSim {
	return RscSim{NIdleNow: idle, SaturatedTime: saturated, Shortfall: shortfall}
}

// busyJobs makes every project look like it has queued jobs.
func busyJobs(n int) []ProjSim {
	ps := make([]ProjSim, n)
	for i := range ps {
		ps[i].NRunnable[CPU] = 1
		ps[i].NUsed[CPU] = 4
		ps[i].NUsed[NVIDIA] = 1
	}
	return ps
}

var backedOff = Backoff{Interval: 600, Until: at(300)}

// cppBuf is buf under the C++ client's rules (no deadline guard): the
// tables below check its request sizes, made from projects whose jobs'
// bounds the core is not told.
var cppBuf = func() Prefs { p := buf; p.DeadlineGuard = DeadlineGuardOff; return p }()

func whyOf(d Decision, p int, r Rsc) string {
	for _, nf := range d.NotFetching {
		if nf.Project == p && nf.Rsc == r {
			return nf.Why
		}
	}
	return ""
}

func TestChoose(t *testing.T) {
	type reason struct {
		p   int
		r   Rsc
		why string
	}
	tests := []struct {
		name     string
		cpu, gpu RscSim
		projects []Project
		prio     []float64
		ps       []ProjSim // nil: busyJobs
		project  int
		reason   string
		secs     [NumRsc]float64
		inst     [NumRsc]float64
		whys     []reason
	}{
		{
			name:     "idle GPU before idle CPU",
			cpu:      rsim(2, 0, 20000),
			gpu:      rsim(1, 0, 10000),
			projects: []Project{{Share: 1, NoRsc: [NumRsc]bool{NVIDIA: true}}, {Share: 1}},
			prio:     []float64{10, 5},
			ps:       make([]ProjSim, 2),
			project:  1, reason: "NVIDIA has an idle instance",
			secs: [NumRsc]float64{NVIDIA: 10000}, inst: [NumRsc]float64{NVIDIA: 1},
			whys: []reason{{0, NVIDIA, WhyNoApps}, {0, CPU, WhyOtherChosen}, {1, CPU, WhyOnlyTarget}},
		},
		{
			name:     "a project that sent no work yet: one job per idle instance, not the buffer",
			cpu:      rsim(2, 0, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1, Unestimated: true}},
			prio:     []float64{0},
			ps:       make([]ProjSim, 1),
			project:  0, reason: "CPU has an idle instance",
			secs: [NumRsc]float64{CPU: 1}, inst: [NumRsc]float64{CPU: 2},
			whys: []reason{{0, NVIDIA, WhyOnlyTarget}},
		},
		{
			name:     "a project that sent no work yet beside a busy one: a single job for the shortfall",
			cpu:      rsim(0, 500, 8000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1}, {Share: 1, Unestimated: true}},
			prio:     []float64{-10, 0},
			project:  1, reason: "CPU major shortfall",
			secs: [NumRsc]float64{CPU: 1},
			whys: []reason{{0, CPU, WhyOtherChosen}},
		},
		{
			name:     "idle CPU: highest priority",
			cpu:      rsim(2, 0, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{5, 10},
			ps:       make([]ProjSim, 2),
			project:  1, reason: "CPU has an idle instance",
			secs: [NumRsc]float64{CPU: 10000}, inst: [NumRsc]float64{CPU: 2},
			// Project 0 has no GPU jobs, so it is starved for it, not full.
			whys: []reason{{0, CPU, WhyOtherChosen}, {0, NVIDIA, WhyOtherChosen}, {1, NVIDIA, WhyOnlyTarget}},
		},
		{
			name:     "major shortfall asks for that resource only; sized by fetchable share",
			cpu:      rsim(0, 500, 8000),
			gpu:      rsim(0, 5000, 3000),
			projects: []Project{{Share: 1}, {Share: 3}},
			prio:     []float64{10, 5},
			ps:       []ProjSim{{NUsed: [NumRsc]float64{CPU: 0.5}}, {}},
			project:  0, reason: "CPU major shortfall",
			secs: [NumRsc]float64{CPU: 2000}, inst: [NumRsc]float64{CPU: 0.5},
			whys: []reason{{0, NVIDIA, WhyOnlyTarget}, {1, CPU, WhyOtherChosen}},
		},
		{
			name:     "backoff and NoFetch exclude, with reasons",
			cpu:      rsim(0, 500, 8000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1, State: ProjectState{Backoff: [NumRsc]Backoff{CPU: backedOff}}}, {Share: 1, NoFetch: "suspended by user"}, {Share: 1}},
			prio:     []float64{10, 9, 1},
			// The only project that may fetch the CPU has all its share.
			project: 2, reason: "CPU major shortfall",
			secs: [NumRsc]float64{CPU: 8000}, inst: [NumRsc]float64{CPU: 0},
			whys: []reason{{0, CPU, WhyBackedOff}, {0, NVIDIA, WhyBufferFull}, {1, CPU, "suspended by user"}, {1, NVIDIA, "suspended by user"}},
		},
		{
			name:     "overworked may take a major shortfall",
			cpu:      rsim(0, 500, 8000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1, State: ProjectState{Debt: [NumRsc]float64{CPU: -1e6}}}, {Share: 1}},
			prio:     []float64{10, 1},
			project:  0, reason: "CPU major shortfall",
			secs: [NumRsc]float64{CPU: 4000},
		},
		{
			// The GPU is below the low mark but nobody may fetch it, which
			// opens the gate; the CPU's minor shortfall then asks for all
			// resources with a shortfall, including the backed-off GPU.
			name: "minor shortfall asks for every resource; overworked excluded",
			cpu:  rsim(0, 5000, 4000),
			gpu:  rsim(0, 500, 5000),
			projects: []Project{
				{Share: 1, NoRsc: [NumRsc]bool{NVIDIA: true}, State: ProjectState{Debt: [NumRsc]float64{CPU: -1e6}}},
				{Share: 1, State: ProjectState{Backoff: [NumRsc]Backoff{NVIDIA: backedOff}}},
			},
			prio:    []float64{10, 1},
			ps:      make([]ProjSim, 2),
			project: 1, reason: "CPU minor shortfall",
			secs: [NumRsc]float64{CPU: 2000, NVIDIA: 5000}, inst: [NumRsc]float64{CPU: 2, NVIDIA: 1},
			whys: []reason{{0, CPU, WhyOtherChosen}, {0, NVIDIA, WhyNoApps}},
		},
		{
			name:     "hysteresis: saturated beyond the low mark everywhere",
			cpu:      rsim(0, 5000, 4000),
			gpu:      rsim(0, 5000, 4000),
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{10, 1},
			project:  -1,
			whys:     []reason{{0, CPU, WhyHysteresis}, {1, NVIDIA, WhyHysteresis}},
		},
		{
			name:     "buffer full",
			cpu:      rsim(0, 20000, 0),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1}},
			project:  -1,
			whys:     []reason{{0, CPU, WhyBufferFull}, {0, NVIDIA, WhyBufferFull}},
		},
		{
			name:     "starved project with no jobs passes the gate",
			cpu:      rsim(0, 20000, 0),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1}, {Share: 1, NoRsc: [NumRsc]bool{NVIDIA: true}}},
			prio:     []float64{10, 1},
			ps:       []ProjSim{busyJobs(1)[0], {}},
			project:  1, reason: "CPU starved project",
			secs: [NumRsc]float64{CPU: 1}, inst: [NumRsc]float64{CPU: 2},
			whys: []reason{{0, CPU, WhyBufferFull}, {1, NVIDIA, WhyNoApps}},
		},
		{
			name:     "zero share only when nobody else can take the idle instance",
			cpu:      rsim(2, 0, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 0}, {Share: 1, NoFetch: "no new tasks"}},
			prio:     []float64{10, 1},
			project:  0, reason: "CPU has an idle instance",
			secs: [NumRsc]float64{CPU: 1}, inst: [NumRsc]float64{CPU: 2},
		},
		{
			name:     "wacky DCF asks for 1 s on an idle instance",
			cpu:      rsim(1, 0, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1, State: ProjectState{DCF: 95}}},
			ps:       make([]ProjSim, 1),
			project:  0, reason: "CPU has an idle instance",
			secs: [NumRsc]float64{CPU: 1}, inst: [NumRsc]float64{CPU: 4},
		},
		{
			name:     "wacky DCF excluded from a major shortfall",
			cpu:      rsim(0, 500, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1, State: ProjectState{DCF: 0.001}}},
			project:  -1,
			whys:     []reason{{0, CPU, WhyWackyDCF}},
		},
		{
			name:     "too many queued jobs",
			cpu:      rsim(0, 500, 20000),
			gpu:      rsim(0, 20000, 0),
			projects: []Project{{Share: 1}},
			ps:       []ProjSim{{NRunnable: [NumRsc]int{CPU: 1001}}},
			project:  -1,
			whys:     []reason{{0, CPU, WhyTooManyJobs}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := tc.ps
			if ps == nil {
				ps = busyJobs(len(tc.projects))
			}
			sim := &SimResult{Projects: ps}
			sim.Rsc[CPU], sim.Rsc[NVIDIA] = tc.cpu, tc.gpu
			d := Choose(t0, twoRsc, cppBuf, tc.projects, sim, tc.prio)
			req := d.Request
			if req.Project != tc.project || (tc.project >= 0 && req.Reason != tc.reason) {
				t.Fatalf("chose %d (%q), want %d (%q); reasons %+v", req.Project, req.Reason, tc.project, tc.reason, d.NotFetching)
			}
			if tc.project >= 0 && (!nearArr(req.Secs, tc.secs) || !nearArr(req.Instances, tc.inst)) {
				t.Errorf("request secs %v inst %v, want %v %v", req.Secs, req.Instances, tc.secs, tc.inst)
			}
			if want := 2*len(tc.projects) - nonzero(req.Secs); len(d.NotFetching) != want {
				t.Errorf("%d reasons, want %d: %+v", len(d.NotFetching), want, d.NotFetching)
			}
			for _, nf := range d.NotFetching {
				if nf.Why == "" {
					t.Errorf("empty reason for %+v", nf)
				}
			}
			for _, w := range tc.whys {
				if got := whyOf(d, w.p, w.r); got != w.why {
					t.Errorf("project %d %v: why %q, want %q", w.p, w.r, got, w.why)
				}
			}
		})
	}
}

func nearArr(a, b [NumRsc]float64) bool {
	for i := range a {
		if !near(a[i], b[i]) {
			return false
		}
	}
	return true
}

func nonzero(a [NumRsc]float64) int {
	n := 0
	for _, x := range a {
		if x > 0 {
			n++
		}
	}
	return n
}

func TestRequestFor(t *testing.T) {
	projects := []Project{
		{Share: 1, State: ProjectState{Backoff: [NumRsc]Backoff{CPU: backedOff}}},
		{Share: 1},
		{Share: 1, NoFetch: "in RPC backoff", InRPCBackoff: true},
		{Share: 1, NoFetch: "suspended", InRPCBackoff: true, Suspended: true},
	}
	sim := &SimResult{Projects: make([]ProjSim, 4)}
	sim.Rsc[CPU] = rsim(0, 500, 8000)
	sim.Rsc[NVIDIA] = rsim(0, 5000, 2000)
	tests := []struct {
		name string
		i    int
		prio []float64
		want int
		secs [NumRsc]float64
	}{
		{"backed off but first: asks for all resources with shortfall", 0, []float64{10, 5, 1, 1}, 0, [NumRsc]float64{CPU: 4000, NVIDIA: 1000}},
		{"chosen anyway", 1, []float64{10, 5, 1, 1}, 1, [NumRsc]float64{CPU: 8000, NVIDIA: 1000}},
		{"outranked: nothing", 2, []float64{1, 5, 0, 1}, -1, [NumRsc]float64{}},
		{"in RPC backoff: the RPC happens anyway", 2, []float64{1, 5, 10, 1}, 2, [NumRsc]float64{CPU: 4000, NVIDIA: 2000.0 / 3}},
		{"suspended: nothing", 3, []float64{1, 5, 1, 10}, -1, [NumRsc]float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := RequestFor(tc.i, t0, twoRsc, cppBuf, projects, sim, tc.prio)
			if req.Project != tc.want || !nearArr(req.Secs, tc.secs) || req.Reason == "" {
				t.Errorf("got %+v, want project %d secs %v", req, tc.want, tc.secs)
			}
		})
	}
	// Choose itself skips the backed-off project.
	if d := Choose(t0, twoRsc, cppBuf, projects, sim, []float64{10, 5, 1, 1}); d.Request.Project != 1 {
		t.Errorf("Choose picked %d", d.Request.Project)
	}
}

// End to end: a host with nothing queued asks for work. Under the C++
// client's rules project b is asked for its share of the GPU's
// shortfall; with the deadline guard, which knows nothing of b's jobs
// yet, for one job (1 s and its share of the instances).
func TestSimulateThenChoose(t *testing.T) {
	projects := []Project{{Name: "a", Share: 1}, {Name: "b", Share: 1}}
	jobs := []Job{cpuJob(0, 50000), cpuJob(0, 50000), cpuJob(0, 50000), cpuJob(0, 50000)}
	for _, tc := range []struct {
		name string
		p    Prefs
		secs float64
	}{{"C++ rules", cppBuf, 5000}, {"deadline guard", buf, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			var sim SimResult
			Simulate(t0, twoRsc, tc.p, projects, jobs, nil, &sim)
			prio := DebtPolicy{}.Priorities(projects, twoRsc, &sim, nil)
			d := Choose(t0, twoRsc, tc.p, projects, &sim, prio)
			if d.Request.Project != 1 || d.Request.Reason != "NVIDIA has an idle instance" || d.Request.Secs[NVIDIA] != tc.secs || d.Request.Instances[NVIDIA] != 0.5 {
				t.Errorf("request %+v", d.Request)
			}
			if d.Request.WorkReqSeconds() != tc.secs {
				t.Errorf("work_req_seconds %v", d.Request.WorkReqSeconds())
			}
		})
	}
}
