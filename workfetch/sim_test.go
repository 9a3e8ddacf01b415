package workfetch

import (
	"encoding/binary"
	"fmt"
	"hash"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }

func cpuHost(n float64) Host {
	return Host{Instances: [NumRsc]float64{CPU: n}, RelSpeed: [NumRsc]float64{CPU: 1}, CPUAvail: 1, GPUAvail: 1}
}

func cpuJob(p int, rem float64) Job {
	return Job{Project: p, Rsc: CPU, NCPUs: 1, Remaining: rem, Deadline: at(1e7), Runnable: true}
}

// lateJob is a CPU job due at the given second, so that it misses
// (deadline less buf's BufMin) unless it finishes by then.
func lateJob(p int, rem, due float64) Job {
	j := cpuJob(p, rem)
	j.Deadline = at(due)
	return j
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }

// buf is a buffer with low mark 1000 s and high mark 10000 s.
var buf = Prefs{BufMin: 1000, BufAdditional: 9000}

func TestSimulateResources(t *testing.T) {
	gpuHost := Host{Instances: [NumRsc]float64{CPU: 2, NVIDIA: 1}, RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 10}, CPUAvail: 1, GPUAvail: 1}
	tests := []struct {
		name      string
		h         Host
		jobs      []Job
		r         Rsc
		shortfall float64
		idleNow   float64
		saturated float64
		busy      float64
	}{
		{"empty queue: whole window idle", cpuHost(2), nil, CPU, 2 * 10000, 2, 0, 0},
		{"one CPU, two jobs back to back", cpuHost(1), []Job{cpuJob(0, 3000), cpuJob(0, 3000)}, CPU, 4000, 0, 6000, 0},
		// BusyTime counts only the jobs that miss their deadline (less
		// BufMin), as the C++ client's estimator does.
		{"two late jobs keep the CPU busy", cpuHost(1), []Job{lateJob(0, 3000, 2000), lateJob(0, 3000, 2000)}, CPU, 4000, 0, 6000, 6000},
		{"only the late job counts", cpuHost(1), []Job{cpuJob(0, 3000), lateJob(0, 3000, 2500)}, CPU, 4000, 0, 6000, 3000},
		{"late jobs on two CPUs: the least busy instance", cpuHost(2), []Job{lateJob(0, 3000, 2000), lateJob(0, 1000, 500), lateJob(0, 1000, 500)}, CPU, 2*10000 - 3000 - 2000, 0, 1000, 1000},
		{"two CPUs, one job: idle now", cpuHost(2), []Job{cpuJob(0, 3000)}, CPU, 10000 + 7000, 1, 0, 0},
		{"queue beyond the window: no shortfall", cpuHost(1), []Job{cpuJob(0, 20000)}, CPU, 0, 0, 20000, 0},
		{"availability 0.5 stretches", Host{Instances: [NumRsc]float64{CPU: 1}, CPUAvail: 0.5}, []Job{cpuJob(0, 1000)}, CPU, 8000, 0, 2000, 0},
		{"not runnable (downloading) counts as runnable from now", cpuHost(1), []Job{{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 3000, Deadline: at(1e7)}}, CPU, 7000, 0, 3000, 0},
		{"job of a missing GPU type is ignored", cpuHost(1), []Job{{Project: 0, Rsc: AMD, NGPUs: 1, NCPUs: 1, Remaining: 3000, Deadline: at(1e7), Runnable: true}}, CPU, 10000, 1, 0, 0},
		{"invalid project ignored", cpuHost(1), []Job{cpuJob(7, 3000)}, CPU, 10000, 1, 0, 0},
		{"GPU job's CPU fills the CPU", gpuHost, []Job{
			{Project: 0, Rsc: NVIDIA, NGPUs: 1, NCPUs: 1, Remaining: 2000, Deadline: at(1e7), Runnable: true},
			cpuJob(0, 1000), cpuJob(0, 1000),
		}, CPU, 2 * 8000, 0, 2000, 0},
		{"GPU resource", gpuHost, []Job{
			{Project: 0, Rsc: NVIDIA, NGPUs: 1, NCPUs: 1, Remaining: 2000, Deadline: at(1e7), Runnable: true},
			cpuJob(0, 1000), cpuJob(0, 1000),
		}, NVIDIA, 8000, 0, 2000, 0},
		{"half-GPU jobs share an instance", gpuHost, []Job{
			{Project: 0, Rsc: NVIDIA, NGPUs: 0.5, Remaining: 4000, Deadline: at(1e7), Runnable: true},
			{Project: 0, Rsc: NVIDIA, NGPUs: 0.5, Remaining: 4000, Deadline: at(1e7), Runnable: true},
		}, NVIDIA, 6000, 0, 4000, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out SimResult
			projects := []Project{{Name: "a", Share: 1}}
			Simulate(t0, tc.h, buf, projects, tc.jobs, nil, &out)
			rs := out.Rsc[tc.r]
			if !near(rs.Shortfall, tc.shortfall) || !near(rs.NIdleNow, tc.idleNow) || !near(rs.SaturatedTime, tc.saturated) || !near(rs.BusyTime, tc.busy) {
				t.Errorf("got shortfall %v idle %v saturated %v busy %v; want %v %v %v %v",
					rs.Shortfall, rs.NIdleNow, rs.SaturatedTime, rs.BusyTime, tc.shortfall, tc.idleNow, tc.saturated, tc.busy)
			}
		})
	}
}

// finishes returns each job's simulated finish time.
func finishes(out *SimResult, n int) []float64 {
	f := make([]float64, n)
	js := simJobs(out)
	for i := range f {
		f[i] = js[i].finish
	}
	return f
}

func TestSimulateOrder(t *testing.T) {
	tests := []struct {
		name     string
		ncpus    float64
		projects []Project
		prio     []float64
		jobs     []Job
		want     []float64
	}{
		{
			name:     "shares 2:1 on 3 CPUs split 2:1",
			ncpus:    3,
			projects: []Project{{Share: 2}, {Share: 1}},
			jobs:     []Job{cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(1, 1000), cpuJob(1, 1000)},
			want:     []float64{1000, 1000, 2000, 2000, 1000, 2000},
		},
		{
			name:     "equal shares, higher priority first on one CPU",
			ncpus:    1,
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{-100, 0},
			jobs:     []Job{cpuJob(0, 1000), cpuJob(1, 1000)},
			want:     []float64{2000, 1000},
		},
		{
			name:     "a project owed far more takes every instance",
			ncpus:    2,
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{0, -1e6},
			jobs:     []Job{cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(1, 1000)},
			want:     []float64{1000, 1000, 2000},
		},
		{
			name:     "zero share runs only on instances nobody else wants",
			ncpus:    2,
			projects: []Project{{Share: 0}, {Share: 1}},
			prio:     []float64{100, 0},
			jobs:     []Job{cpuJob(0, 1000), cpuJob(1, 1000), cpuJob(1, 1000), cpuJob(1, 1000)},
			want:     []float64{2000, 1000, 1000, 2000},
		},
		{
			name:     "EDF within a project",
			ncpus:    1,
			projects: []Project{{Share: 1}},
			jobs: []Job{
				{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 100, Deadline: at(9e6)},
				{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 100, Deadline: at(5e6)},
			},
			want: []float64{200, 100},
		},
		{
			name:     "preempted job keeps its progress",
			ncpus:    2,
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{0, 0},
			// B's short job ends, B has no more: A gets both CPUs; A's second
			// job started at 500.
			jobs: []Job{cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(1, 500)},
			want: []float64{1000, 1500, 500},
		},
		{
			name:     "multi-CPU job overshoots the last instance",
			ncpus:    2,
			projects: []Project{{Share: 1}},
			jobs: []Job{
				{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 100, Deadline: at(1e5)},
				{Project: 0, Rsc: CPU, NCPUs: 4, Remaining: 100, Deadline: at(2e5)},
				{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 100, Deadline: at(3e5)},
			},
			want: []float64{100, 100, 200},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out SimResult
			Simulate(t0, cpuHost(tc.ncpus), buf, tc.projects, tc.jobs, tc.prio, &out)
			got := finishes(&out, len(tc.jobs))
			for i := range got {
				if !near(got[i], tc.want[i]) {
					t.Fatalf("finish times %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSimulateDeadlines(t *testing.T) {
	// One CPU, jobs of 3000 s; low mark 1000 s: a job misses if it ends
	// after deadline − 1000.
	jobs := []Job{
		{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 3000, Deadline: at(5000), Runnable: true},  // ends 3000 ≤ 4000
		{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 3000, Deadline: at(6500), Runnable: true},  // ends 6000 > 5500
		{Project: 1, Rsc: CPU, NCPUs: 1, Remaining: 3000, Deadline: at(10010), Runnable: true}, // ends 9010 ≤ 9010
		{Project: 1, Rsc: CPU, NCPUs: 1, Remaining: 10, Deadline: at(100), Runnable: true},     // EDF: ends 6010, too late
	}
	var out SimResult
	projects := []Project{{Share: 1}, {Share: 1}}
	Simulate(t0, cpuHost(1), buf, projects, jobs, []float64{1, 0}, &out)
	want := []bool{false, true, false, true}
	for i, w := range want {
		if out.MissesDeadline[i] != w {
			t.Errorf("job %d misses = %v, want %v (finish %v)", i, out.MissesDeadline[i], w, simJobs(&out)[i].finish)
		}
	}
	if out.Projects[0].DeadlinesMissed[CPU] != 1 || out.Projects[1].DeadlinesMissed[CPU] != 1 {
		t.Errorf("per-project misses %v %v", out.Projects[0].DeadlinesMissed, out.Projects[1].DeadlinesMissed)
	}
	if out.Rsc[CPU].DeadlineMissedInstances != 2 {
		t.Errorf("missed instances %v", out.Rsc[CPU].DeadlineMissedInstances)
	}
}

func TestSimulateProjectStats(t *testing.T) {
	h := Host{Instances: [NumRsc]float64{CPU: 4, NVIDIA: 1}, CPUAvail: 1, GPUAvail: 1}
	jobs := []Job{
		cpuJob(0, 100),
		{Project: 0, Rsc: NVIDIA, NGPUs: 1, NCPUs: 0.5, Remaining: 200, Deadline: at(1e7)},
		{Project: 1, Rsc: CPU, NCPUs: 2, Remaining: 50, Deadline: at(1e7), Runnable: true},
	}
	var out SimResult
	Simulate(t0, h, buf, []Project{{Share: 1}, {Share: 1}}, jobs, nil, &out)
	p0, p1 := out.Projects[0], out.Projects[1]
	if p0.NRunnable != [NumRsc]int{CPU: 1, NVIDIA: 1} || p1.NRunnable != [NumRsc]int{CPU: 1} {
		t.Errorf("NRunnable %v %v", p0.NRunnable, p1.NRunnable)
	}
	if p0.NUsed != [NumRsc]float64{CPU: 1.5, NVIDIA: 1} || p1.NUsed != [NumRsc]float64{CPU: 2} {
		t.Errorf("NUsed %v %v", p0.NUsed, p1.NUsed)
	}
	if p0.Queue != [NumRsc]float64{CPU: 100 + 100, NVIDIA: 200} || p1.Queue != [NumRsc]float64{CPU: 100} {
		t.Errorf("Queue %v %v", p0.Queue, p1.Queue)
	}
	// Reuse with fewer projects and jobs shrinks and clears the outputs.
	Simulate(t0, h, buf, []Project{{Share: 1}}, jobs[:1], nil, &out)
	if len(out.Projects) != 1 || len(out.MissesDeadline) != 1 || out.Projects[0].NRunnable[NVIDIA] != 0 {
		t.Errorf("reuse: %+v", out.Projects)
	}
}

// The incremental hand-outs (a finished job's successor taking its place,
// a hand-out carried on) must give what handing out everything again at
// every completion gives.
func TestSimulateIncrementalMatchesFull(t *testing.T) {
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 7))
		h := Host{Instances: [NumRsc]float64{CPU: float64(1 + rng.IntN(8)), NVIDIA: float64(rng.IntN(3)), AMD: float64(rng.IntN(2))},
			RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 5, AMD: 3}, CPUAvail: 0.7, GPUAvail: 0.9}
		projects := make([]Project, 1+rng.IntN(6))
		prio := make([]float64, len(projects))
		for i := range projects {
			projects[i].Share = float64(rng.IntN(4))
			prio[i] = -rng.Float64() * 20000
		}
		// Some groups have mixed usage, most uniform.
		mixed := rng.IntN(2) == 0
		jobs := make([]Job, rng.IntN(300))
		for j := range jobs {
			jb := Job{Project: rng.IntN(len(projects)), Rsc: Rsc(rng.IntN(3)), NCPUs: 1, NGPUs: 1,
				Remaining: float64(1 + rng.IntN(20000)), Deadline: at(float64(rng.IntN(200000)))}
			if jb.Rsc.IsGPU() {
				jb.NCPUs = float64(jb.Project%3) * 0.5
			}
			if mixed && rng.IntN(4) == 0 {
				jb.NCPUs, jb.NGPUs = 2, 0.5
			}
			jobs[j] = jb
		}
		var fast, full SimResult
		Simulate(t0, h, buf, projects, jobs, prio, &fast)
		full.scratch = &simScratch{alwaysFull: true}
		Simulate(t0, h, buf, projects, jobs, prio, &full)
		fastJobs, fullJobs := simJobs(&fast), simJobs(&full)
		for j := range jobs {
			if a, b := fastJobs[j].finish, fullJobs[j].finish; !near(a, b) {
				t.Fatalf("seed %d: job %d (%+v) finishes at %v incrementally, %v in full", seed, j, jobs[j], a, b)
			}
		}
		for r := range NumRsc {
			a, b := fast.Rsc[r], full.Rsc[r]
			if !near(a.Shortfall, b.Shortfall) || !near(a.SaturatedTime, b.SaturatedTime) || a.NIdleNow != b.NIdleNow || !near(a.BusyTime, b.BusyTime) {
				t.Fatalf("seed %d %v: %+v vs %+v", seed, Rsc(r), a, b)
			}
		}
	}
}

func TestSortKeys(t *testing.T) {
	// Packed keys order by deadline, then index; out-of-range deadlines
	// saturate rather than wrap.
	ordered := []uint64{
		sortKey(math.Inf(-1), 5), sortKey(-1e12, 9), sortKey(-10, 3), sortKey(0, 1), sortKey(0, 2),
		sortKey(0.5, 0), sortKey(86400*365, 4), sortKey(1e12, 6), sortKey(math.Inf(1), 7),
	}
	for i := 1; i < len(ordered); i++ {
		if ordered[i-1] >= ordered[i] {
			t.Errorf("key %d not after key %d", i, i-1)
		}
	}
	// The fallback for queues too long to pack compares the jobs.
	s := &simScratch{jobs: []sjob{{dl: 5}, {dl: 1}, {dl: 5}}}
	for _, tc := range []struct {
		x, y uint64
		want int
	}{{0, 1, 1}, {1, 0, -1}, {0, 2, -1}, {2, 0, 1}, {2, 2, 0}} {
		if got := s.cmpJobs(tc.x, tc.y); got != tc.want {
			t.Errorf("cmpJobs(%d, %d) = %d, want %d", tc.x, tc.y, got, tc.want)
		}
	}
}

func TestRscNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    Rsc
		ok   bool
	}{{"CPU", CPU, true}, {"CUDA", NVIDIA, true}, {" nvidia ", NVIDIA, true}, {"ATI", AMD, true}, {"amd", AMD, true}, {"intel_gpu", Intel, true}, {"apple_gpu", 0, false}} {
		r, ok := RscByName(tc.name)
		if r != tc.r || ok != tc.ok {
			t.Errorf("RscByName(%q) = %v, %v", tc.name, r, ok)
		}
	}
	if Rsc(9).String() != "rsc?" || AMD.String() != "ATI" {
		t.Error("String")
	}
}

// simDigest hashes every output of a simulation, bit for bit: the
// results, each job's verdict and its simulated start and finish.
func simDigest(hsh hash.Hash64, out *SimResult, jobs []Job) {
	w := func(x float64) { binary.Write(hsh, binary.LittleEndian, math.Float64bits(x)) }
	for _, rs := range out.Rsc {
		w(rs.Shortfall)
		w(rs.NIdleNow)
		w(rs.SaturatedTime)
		w(rs.BusyTime)
		w(rs.DeadlineMissedInstances)
	}
	fmt.Fprintf(hsh, "%v|%v|", out.Projects, out.MissesDeadline)
	js := simJobs(out)
	for j := range jobs {
		if sj := js[j]; sj.grp >= 0 {
			w(sj.start)
			w(sj.finish)
		}
	}
}

// randomSimInput is a random queue with ties in deadlines and lengths,
// mixed and uniform usage, several GPU types, limits, zero and missing
// deadlines, shares and priorities.
func randomSimInput(rng *rand.Rand) (time.Time, Host, Prefs, []Project, []Job, []float64) {
	now := t0
	if rng.IntN(3) == 0 {
		now = time.Now() // a monotonic reading
	}
	h := Host{Instances: [NumRsc]float64{CPU: float64(1 + rng.IntN(16)), NVIDIA: float64(rng.IntN(4)), AMD: float64(rng.IntN(2)), Intel: 0.5 * float64(rng.IntN(3))},
		RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 5 * rng.Float64(), AMD: 3}, CPUAvail: rng.Float64(), GPUAvail: []float64{0, 0.5, 1}[rng.IntN(3)]}
	p := Prefs{BufMin: float64(rng.IntN(3)) * 3000, BufAdditional: float64(rng.IntN(4)) * 20000}
	projects := make([]Project, 1+rng.IntN(8))
	prio := make([]float64, rng.IntN(len(projects)+1))
	for i := range projects {
		projects[i].Share = float64(rng.IntN(4))
		if rng.IntN(5) == 0 {
			projects[i].MaxConcurrent = 1 + rng.IntN(4)
		}
	}
	for i := range prio {
		prio[i] = -float64(rng.IntN(5)) * 5000
	}
	limits := rng.IntN(3) == 0
	mixed := rng.IntN(2) == 0
	jobs := make([]Job, rng.IntN(400))
	for j := range jobs {
		jb := Job{Project: rng.IntN(len(projects)+1) - rng.IntN(2), Rsc: Rsc(rng.IntN(NumRsc)), NCPUs: 1, NGPUs: 1,
			Remaining: float64(rng.IntN(40)) * 500, Runnable: rng.IntN(5) != 0}
		switch rng.IntN(10) {
		case 0: // none
		case 1:
			jb.Deadline = now.Add(time.Duration(rng.Int64N(1e15)) - 5e14)
		case 2: // no monotonic reading, beyond a Duration, or both
			jb.Deadline = []time.Time{now.Round(0).Add(time.Hour), time.Unix(1<<40, 0), time.Time{}.Add(1), time.Unix(-1<<40, 5)}[rng.IntN(4)]
		default:
			jb.Deadline = now.Add(time.Duration(rng.IntN(50)) * 3000 * time.Second)
		}
		if rng.IntN(4) == 0 {
			jb.Received = jb.Deadline.Add(-time.Duration(rng.IntN(1e6)) * time.Second)
			jb.Estimate = float64(rng.IntN(1e5))
		}
		if jb.Rsc.IsGPU() {
			jb.NCPUs = float64(rng.IntN(3)) * 0.5
		}
		if mixed && rng.IntN(4) == 0 {
			jb.NCPUs, jb.NGPUs = float64(rng.IntN(3)), 0.5
		}
		if limits && rng.IntN(2) == 0 {
			jb.App, jb.AppMax = 1+rng.IntN(3), 1+rng.IntN(3)
		}
		jobs[j] = jb
	}
	return now, h, p, projects, jobs, prio
}

// TestSimulateRecorded compares the simulation with what it gave on
// random queues before its memory layout was reworked for speed: the
// digest of every output must not change. (Recorded again when BusyTime
// came to count only the jobs that miss their deadline, as the C++
// client's estimator does.)
// Every way of sorting the jobs (short queues and long ones sort
// differently) must give the same.
func TestSimulateRecorded(t *testing.T) {
	for _, path := range []uint8{sortAuto, sortCompare, sortRadix, sortRadixLookup} {
		hsh := fnv.New64a()
		// Reused across runs, like the daemon's.
		out := SimResult{scratch: &simScratch{sortPath: path}}
		for seed := range uint64(400) {
			rng := rand.New(rand.NewPCG(seed, 99))
			now, h, p, projects, jobs, prio := randomSimInput(rng)
			Simulate(now, h, p, projects, jobs, prio, &out)
			simDigest(hsh, &out, jobs)
		}
		const want uint64 = 0x5c6dcdbef398e4a1
		if got := hsh.Sum64(); got != want {
			t.Errorf("sort path %d: digest %#x, want %#x", path, got, want)
		}
	}
}

// A long queue (sorted by radix) gives what sorting each group gives.
func TestSimulateLongQueueSorts(t *testing.T) {
	h, p, projects, jobs := benchSetup(5000)
	rng := rand.New(rand.NewPCG(3, 3))
	for j := range jobs {
		if rng.IntN(50) == 0 {
			jobs[j].Deadline = jobs[(j*7)%len(jobs)].Deadline // ties
		}
	}
	var want []byte
	for _, path := range []uint8{sortCompare, sortAuto, sortRadixLookup} {
		hsh := fnv.New64a()
		out := SimResult{scratch: &simScratch{sortPath: path}}
		Simulate(t0, h, p, projects, jobs, nil, &out)
		simDigest(hsh, &out, jobs)
		if got := hsh.Sum(nil); want == nil {
			want = got
		} else if string(got) != string(want) {
			t.Errorf("sort path %d: outputs differ", path)
		}
	}
}

// simJob is a job's simulation record with its simulated finish.
type simJob struct {
	sjob
	finish float64
}

// simJobs is each input job's simulation record, with its start and
// finish (the simulation keeps them only in EDF order, and the finish
// as start + dur).
func simJobs(out *SimResult) []simJob {
	s := out.scratch
	js := make([]simJob, len(s.jobs))
	for j := range js {
		js[j].sjob = s.jobs[j]
	}
	for k := range s.edf {
		e := &s.edf[k]
		js[e.orig].sjob = *e
		js[e.orig].finish = e.start + e.dur
	}
	return js
}
