package workfetch

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchSetup is 16 CPUs + 4 NVIDIA GPUs, 20 projects (a quarter of them
// with GPU apps) and n jobs: a seeded mix of CPU and GPU jobs with random
// sizes and deadlines, some running, some still downloading.
func benchSetup(n int) (Host, Prefs, []Project, []Job) {
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	h := Host{
		Instances: [NumRsc]float64{CPU: 16, NVIDIA: 4},
		RelSpeed:  [NumRsc]float64{CPU: 1, NVIDIA: 20},
		CPUAvail:  0.9, GPUAvail: 0.8,
	}
	p := Prefs{BufMin: 0.1 * 86400, BufAdditional: 0.5 * 86400}
	projects := make([]Project, 20)
	for i := range projects {
		projects[i] = Project{Name: fmt.Sprintf("p%d", i), Share: float64(50 + rng.IntN(200))}
		projects[i].State.DCF = 1
		projects[i].State.Debt[CPU] = -rng.Float64() * 50000
		projects[i].State.Debt[NVIDIA] = -rng.Float64() * 50000
		if i%4 != 0 {
			projects[i].NoRsc[NVIDIA] = true
		}
	}
	jobs := make([]Job, n)
	for j := range jobs {
		pi := rng.IntN(len(projects))
		jb := Job{
			Project:   pi,
			Rsc:       CPU,
			NCPUs:     1,
			Remaining: 600 + rng.Float64()*36000,
			Deadline:  t0.Add(time.Duration(86400*(1+rng.Float64()*13)) * time.Second),
			Runnable:  rng.IntN(10) != 0,
		}
		if !projects[pi].NoRsc[NVIDIA] && rng.IntN(2) == 0 {
			jb.Rsc, jb.NGPUs, jb.NCPUs = NVIDIA, 1, 0.5
		}
		jobs[j] = jb
	}
	return h, p, projects, jobs
}

func benchDecision(b *testing.B, n int) {
	h, p, projects, jobs := benchSetup(n)
	var sim SimResult
	var prio []float64
	var pol DebtPolicy
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		Simulate(t0, h, p, projects, jobs, prio, &sim)
		prio = pol.Priorities(projects, h, &sim, prio)
		d := Choose(t0, h, p, projects, &sim, prio)
		if len(d.NotFetching) == 0 {
			b.Fatal("no reasons")
		}
	}
}

// One full decision pass: Simulate + DebtPolicy.Priorities + Choose.
func BenchmarkDecision1000(b *testing.B)   { benchDecision(b, 1000) }
func BenchmarkDecision10000(b *testing.B)  { benchDecision(b, 10000) }
func BenchmarkDecision100000(b *testing.B) { benchDecision(b, 100000) }

// The simulation's cost must grow linearly (up to the deadline sort) with
// the queue; compare ns/op per job across these.
func BenchmarkSimulate(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			h, p, projects, jobs := benchSetup(n)
			var sim SimResult
			b.ReportAllocs()
			for b.Loop() {
				Simulate(t0, h, p, projects, jobs, nil, &sim)
			}
		})
	}
}
