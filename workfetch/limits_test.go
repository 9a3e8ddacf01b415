package workfetch

import (
	"math/rand/v2"
	"testing"
)

// limited puts jb in max_concurrent group g with at most m running.
func limited(jb Job, g, m int) Job { jb.App, jb.AppMax = g, m; return jb }

func gpuJob(p int, u, rem float64) Job {
	return Job{Project: p, Rsc: NVIDIA, NGPUs: u, NCPUs: 0.5, Remaining: rem, Deadline: at(1e7), Runnable: true}
}

// TestSimulateLimits checks the simulation under max_concurrent and
// project_max_concurrent: which jobs run when, the idle instances a
// limit leaves, and the deferred flags work fetch reads.
func TestSimulateLimits(t *testing.T) {
	gpuHost := Host{Instances: [NumRsc]float64{CPU: 4, NVIDIA: 1}, RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 10}, CPUAvail: 1, GPUAvail: 1}
	tests := []struct {
		name      string
		h         Host
		projects  []Project
		prio      []float64
		jobs      []Job
		finish    []float64
		idleNow   float64 // CPU
		shortfall float64 // CPU
		deferred  [][NumRsc]bool
	}{
		{
			name:     "max_concurrent 1 runs the app's jobs one after another",
			h:        cpuHost(4),
			projects: []Project{{Share: 1}},
			jobs:     []Job{limited(cpuJob(0, 1000), 1, 1), limited(cpuJob(0, 1000), 1, 1), limited(cpuJob(0, 1000), 1, 1)},
			finish:   []float64{1000, 2000, 3000},
			idleNow:  3, shortfall: 3*3000 + 4*7000,
			deferred: [][NumRsc]bool{{CPU: true}},
		},
		{
			name:     "a limit the queue does not reach defers nothing",
			h:        cpuHost(4),
			projects: []Project{{Share: 1}},
			jobs:     []Job{limited(cpuJob(0, 1000), 1, 2), limited(cpuJob(0, 2000), 1, 2)},
			finish:   []float64{1000, 2000},
			idleNow:  2, shortfall: 2*1000 + 3*1000 + 4*8000,
			deferred: [][NumRsc]bool{{}},
		},
		{
			name:     "a full resource defers nothing: the job waits for an instance anyway",
			h:        cpuHost(1),
			projects: []Project{{Share: 1}},
			jobs:     []Job{limited(cpuJob(0, 1000), 1, 1), limited(cpuJob(0, 1000), 1, 1)},
			finish:   []float64{1000, 2000},
			idleNow:  0, shortfall: 8000,
			deferred: [][NumRsc]bool{{}},
		},
		{
			name:     "project_max_concurrent 2: the other project fills the rest",
			h:        cpuHost(4),
			projects: []Project{{Share: 1, MaxConcurrent: 2}, {Share: 1}},
			prio:     []float64{1e9, 0},
			jobs:     []Job{cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(0, 1000), cpuJob(1, 3000), cpuJob(1, 3000), cpuJob(1, 3000)},
			finish:   []float64{1000, 1000, 2000, 3000, 3000, 4000},
			idleNow:  0, shortfall: 1*1000 + 3*1000 + 4*6000,
			deferred: [][NumRsc]bool{{CPU: true}, {}},
		},
		{
			name:     "an app's GPU and CPU jobs share its limit; the GPU goes first",
			h:        gpuHost,
			projects: []Project{{Share: 1}},
			jobs:     []Job{limited(gpuJob(0, 1, 1000), 1, 1), limited(cpuJob(0, 1000), 1, 1), cpuJob(0, 500)},
			finish:   []float64{1000, 2000, 500},
			idleNow:  2.5, shortfall: 2.5*500 + 3.5*500 + 3*1000 + 4*8000,
			deferred: [][NumRsc]bool{{CPU: true}},
		},
		{
			name:     "project_max_concurrent counts GPU jobs: the CPU job waits for the GPU job",
			h:        gpuHost,
			projects: []Project{{Share: 1, MaxConcurrent: 1}},
			jobs:     []Job{gpuJob(0, 1, 1000), cpuJob(0, 1000)},
			finish:   []float64{1000, 2000},
			idleNow:  3.5, shortfall: 3.5*1000 + 3*1000 + 4*8000,
			deferred: [][NumRsc]bool{{CPU: true}},
		},
		{
			name:     "0.5 GPU jobs: two share the GPU, and a limit of 1 holds the second back",
			h:        gpuHost,
			projects: []Project{{Share: 1}, {Share: 1}},
			prio:     []float64{1e9, 0},
			jobs:     []Job{limited(gpuJob(0, 0.5, 1000), 1, 1), limited(gpuJob(0, 0.5, 1000), 1, 1), gpuJob(1, 0.5, 1000)},
			finish:   []float64{1000, 2000, 1000},
			idleNow:  3, shortfall: 3*1000 + 3.5*1000 + 4*8000,
			deferred: [][NumRsc]bool{{NVIDIA: true}, {}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out SimResult
			Simulate(t0, tc.h, buf, tc.projects, tc.jobs, tc.prio, &out)
			js := simJobs(&out)
			for j, want := range tc.finish {
				if got := js[j].finish; !near(got, want) {
					t.Errorf("job %d finishes at %v, want %v", j, got, want)
				}
			}
			if rs := out.Rsc[CPU]; !near(rs.NIdleNow, tc.idleNow) || !near(rs.Shortfall, tc.shortfall) {
				t.Errorf("CPU idle now %v shortfall %v, want %v %v", rs.NIdleNow, rs.Shortfall, tc.idleNow, tc.shortfall)
			}
			for p, want := range tc.deferred {
				if got := out.Projects[p].Deferred; got != want {
					t.Errorf("project %d deferred %v, want %v", p, got, want)
				}
			}
		})
	}
}

// TestSimulateLimitsRandom checks on random queues that the simulation
// never runs more jobs of an app or a project than its limit at once,
// that the limits do not leak into the next run, and that limits that
// never bind change nothing.
func TestSimulateLimitsRandom(t *testing.T) {
	var out SimResult
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 11))
		h := Host{Instances: [NumRsc]float64{CPU: float64(1 + rng.IntN(8)), NVIDIA: float64(rng.IntN(3))},
			RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 5}, CPUAvail: 0.7, GPUAvail: 0.9}
		projects := make([]Project, 1+rng.IntN(4))
		prio := make([]float64, len(projects))
		for i := range projects {
			projects[i].Share = float64(1 + rng.IntN(3))
			if rng.IntN(2) == 0 {
				projects[i].MaxConcurrent = 1 + rng.IntN(3)
			}
			prio[i] = -rng.Float64() * 20000
		}
		jobs := make([]Job, 1+rng.IntN(100))
		for j := range jobs {
			jb := cpuJob(rng.IntN(len(projects)), float64(1+rng.IntN(20000)))
			if rng.IntN(4) == 0 {
				jb = gpuJob(jb.Project, []float64{1, 0.5}[rng.IntN(2)], jb.Remaining)
			}
			if a := rng.IntN(4); a > 0 {
				jb.App, jb.AppMax = a, a
			}
			jobs[j] = jb
		}
		Simulate(t0, h, buf, projects, jobs, prio, &out)
		// Sweep the simulated intervals: at every start, count what runs.
		js := simJobs(&out)
		for j := range jobs {
			sj := js[j]
			if sj.grp < 0 {
				continue
			}
			at := sj.start
			app, proj := 0, 0
			for k := range jobs {
				sk := js[k]
				if sk.grp < 0 || !(sk.start <= at && at < sk.finish) {
					continue
				}
				if jobs[k].Project == jobs[j].Project {
					proj++
				}
				if jobs[j].App > 0 && jobs[k].App == jobs[j].App {
					app++
				}
			}
			if m := projects[jobs[j].Project].MaxConcurrent; m > 0 && proj > m {
				t.Fatalf("seed %d: %d jobs of project %d run at %v, limit %d", seed, proj, jobs[j].Project, at, m)
			}
			if jobs[j].App > 0 && app > jobs[j].AppMax {
				t.Fatalf("seed %d: %d jobs of app %d run at %v, limit %d", seed, app, jobs[j].App, at, jobs[j].AppMax)
			}
		}
		// The same queue without limits: nothing deferred.
		free := make([]Project, len(projects))
		copy(free, projects)
		for i := range free {
			free[i].MaxConcurrent = 0
		}
		plain := make([]Job, len(jobs))
		for j := range jobs {
			plain[j] = jobs[j]
			plain[j].App, plain[j].AppMax = 0, 0
		}
		Simulate(t0, h, buf, free, plain, prio, &out)
		for i := range out.Projects {
			if out.Projects[i].Deferred != [NumRsc]bool{} {
				t.Fatalf("seed %d: project %d deferred without limits", seed, i)
			}
		}
		want := make([]float64, len(jobs))
		js = simJobs(&out)
		for j := range jobs {
			want[j] = js[j].finish
		}
		// Limits that never bind take the full hand-out at every
		// completion, and must give what the incremental paths give.
		loose := make([]Job, len(jobs))
		for j := range jobs {
			loose[j] = plain[j]
			loose[j].App, loose[j].AppMax = 1, len(jobs)
		}
		Simulate(t0, h, buf, free, loose, prio, &out)
		js = simJobs(&out)
		for j := range jobs {
			if got := js[j].finish; js[j].grp >= 0 && !near(got, want[j]) {
				t.Fatalf("seed %d: job %d finishes at %v with a loose limit, %v without", seed, j, got, want[j])
			}
		}
	}
}

func TestChooseMaxConcurrent(t *testing.T) {
	// Two projects, CPU idle. Project 0 (higher priority) has a job held
	// back by a limit: it is not asked; project 1 is.
	ps := make([]ProjSim, 2)
	ps[0].Deferred[CPU] = true
	ps[0].NRunnable[CPU] = 3
	ps[0].NUsed[NVIDIA] = 1 // not starved for the GPU
	sim := SimResult{Projects: ps}
	sim.Rsc[CPU] = rsim(3, 0, 30000)
	sim.Rsc[NVIDIA] = rsim(0, 20000, 0)
	projects := []Project{{Share: 1}, {Share: 1}}
	d := Choose(t0, twoRsc, buf, projects, &sim, []float64{10, 0})
	if d.Request.Project != 1 {
		t.Fatalf("asked project %d, want 1 (%+v)", d.Request.Project, d.Request)
	}
	if why := whyOf(d, 0, CPU); why != WhyMaxConcurrent {
		t.Errorf("project 0 CPU: %q, want %q", why, WhyMaxConcurrent)
	}
	// Alone, it is asked for nothing, not even on an RPC made anyway.
	d = Choose(t0, twoRsc, buf, projects[:1], &sim, []float64{10})
	if d.Request.Project != -1 || whyOf(d, 0, CPU) != WhyMaxConcurrent {
		t.Errorf("alone: request %+v, CPU reason %q", d.Request, whyOf(d, 0, CPU))
	}
	if req := RequestFor(0, t0, twoRsc, buf, projects[:1], &sim, []float64{10}); req.Project != -1 || req.Secs[CPU] != 0 {
		t.Errorf("piggyback: %+v", req)
	}
	// Deferred on the CPU only: a GPU request does not carry the CPU.
	sim.Rsc[NVIDIA] = rsim(0, 500, 5000)
	sim.Rsc[CPU] = rsim(0, 500, 5000)
	d = Choose(t0, twoRsc, buf, projects[:1], &sim, []float64{10})
	if d.Request.Project != 0 || d.Request.Secs[NVIDIA] == 0 || d.Request.Secs[CPU] != 0 {
		t.Errorf("GPU request %+v", d.Request)
	}
	if req := RequestFor(0, t0, twoRsc, buf, projects[:1], &sim, []float64{10}); req.Secs[CPU] != 0 {
		t.Errorf("piggyback asks for the deferred CPU: %+v", req)
	}
}

// TestLimitsEndToEnd: the simulation's deferred flag stops work fetch
// for a project whose queued work a max_concurrent limit holds back,
// though its CPUs are idle.
func TestLimitsEndToEnd(t *testing.T) {
	h := cpuHost(4)
	projects := []Project{{Name: "limited", Share: 1, State: ProjectState{DCF: 1}}}
	jobs := []Job{limited(cpuJob(0, 3000), 1, 1), limited(cpuJob(0, 3000), 1, 1)}
	var sim SimResult
	Simulate(t0, h, buf, projects, jobs, []float64{0}, &sim)
	d := Choose(t0, h, buf, projects, &sim, []float64{0})
	if d.Request.Project != -1 || whyOf(d, 0, CPU) != WhyMaxConcurrent {
		t.Errorf("limited: request %+v, reason %q", d.Request, whyOf(d, 0, CPU))
	}
	// One job: it runs, nothing waits on the limit, and the idle CPUs
	// are asked for.
	Simulate(t0, h, buf, projects, jobs[:1], []float64{0}, &sim)
	d = Choose(t0, h, buf, projects, &sim, []float64{0})
	if d.Request.Project != 0 || d.Request.Secs[CPU] == 0 {
		t.Errorf("one job: request %+v", d.Request)
	}
}

// BenchmarkSimulateLimits1000 is the benchmark queue with one app of
// every fourth project limited to 2 and every fifth project to 3 jobs:
// every completion hands everything out again, and it must stay
// allocation-free.
func BenchmarkSimulateLimits1000(b *testing.B) {
	h, p, projects, jobs := benchSetup(1000)
	for i := range projects {
		if i%5 == 0 {
			projects[i].MaxConcurrent = 3
		}
	}
	for j := range jobs {
		if pi := jobs[j].Project; pi%4 == 0 {
			jobs[j].App, jobs[j].AppMax = 1+pi, 2
		}
	}
	var sim SimResult
	Simulate(t0, h, p, projects, jobs, nil, &sim)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Simulate(t0, h, p, projects, jobs, nil, &sim)
	}
}
