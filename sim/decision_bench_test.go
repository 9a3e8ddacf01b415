package sim

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

// BenchmarkDecisionPass is one full decision pass of the daemon's core:
// round-robin simulation, priorities, the CPU/GPU schedule and the
// work-fetch choice, for 16 CPUs + 4 GPUs, 20 projects and a queue of
// 1,000 to 100,000 jobs of which about 20 run. Targets: ≤ 0.3 ms at
// 1,000 and ≤ 3 ms at 10,000 jobs, and linear growth. The work is
// linear (the instructions per job, counted with cachegrind, are the
// same at every size); the sizes between (3,000 and 30,000) show where
// the time per job still grows: as the pass's working set (about 500
// bytes a job: the input jobs and tasks, the simulation's copies, the
// schedule's candidates) leaves the processor's caches.
func BenchmarkDecisionPass(b *testing.B) {
	for _, n := range []int{1000, 3000, 10000, 30000, 100000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) { benchPass(b, n) })
	}
}

func benchPass(b *testing.B, n int) {
	now := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	var h workfetch.Host
	h.Instances[workfetch.CPU], h.Instances[workfetch.NVIDIA] = 16, 4
	h.RelSpeed[workfetch.CPU], h.RelSpeed[workfetch.NVIDIA] = 1, 20
	h.CPUAvail, h.GPUAvail = 0.9, 0.8
	prefs := workfetch.Prefs{BufMin: 0.1 * 86400, BufAdditional: 0.5 * 86400}
	projects := make([]workfetch.Project, 20)
	shares := make([]float64, len(projects))
	for i := range projects {
		projects[i] = workfetch.Project{Name: fmt.Sprintf("p%d", i), Share: float64(50 + rng.IntN(200))}
		projects[i].State.DCF = 1
		projects[i].State.Debt[workfetch.CPU] = -rng.Float64() * 50000
		projects[i].State.Debt[workfetch.NVIDIA] = -rng.Float64() * 50000
		if i%4 != 0 {
			projects[i].NoRsc[workfetch.NVIDIA] = true
		}
		shares[i] = projects[i].Share
	}
	jobs := make([]workfetch.Job, n)
	tasks := make([]schedule.Task, 0, n)
	running := [workfetch.NumRsc]float64{}
	for j := range jobs {
		pi := rng.IntN(len(projects))
		jb := workfetch.Job{
			Project: pi, Rsc: workfetch.CPU, NCPUs: 1,
			Remaining: 600 + rng.Float64()*36000,
			Deadline:  now.Add(time.Duration(86400*(1+rng.Float64()*13)) * time.Second),
			Runnable:  rng.IntN(10) != 0,
		}
		if !projects[pi].NoRsc[workfetch.NVIDIA] && rng.IntN(2) == 0 {
			jb.Rsc, jb.NGPUs, jb.NCPUs = workfetch.NVIDIA, 1, 0.5
		}
		jobs[j] = jb
	}
	var simr workfetch.SimResult
	var prio []float64
	var pol workfetch.DebtPolicy
	var sched schedule.Scheduler
	var dec schedule.Decision
	in := schedule.Input{Now: now, Host: h, Slice: time.Hour, Shares: shares}
	pass := func() {
		workfetch.Simulate(now, h, prefs, projects, jobs, prio, &simr)
		prio = pol.Priorities(projects, h, &simr, prio)
		tasks = tasks[:0]
		running = [workfetch.NumRsc]float64{}
		for i := range jobs {
			j := &jobs[i]
			if !j.Runnable {
				continue
			}
			t := schedule.Task{Project: j.Project, Rsc: j.Rsc, NCPUs: j.NCPUs, NGPUs: j.NGPUs,
				Deadline: j.Deadline, MissesDeadline: simr.MissesDeadline[i], Remaining: j.Remaining, Order: i}
			if running[j.Rsc]+j.Usage() <= h.Instances[j.Rsc] && i%37 == 0 {
				running[j.Rsc] += j.Usage()
				t.Running, t.RunStart = true, now.Add(-10*time.Minute)
			}
			tasks = append(tasks, t)
		}
		in.Priority, in.Tasks = prio, tasks
		sched.Schedule(&in, &dec)
		d := workfetch.Choose(now, h, prefs, projects, &simr, prio)
		if len(dec.Run) == 0 || len(d.NotFetching) == 0 {
			b.Fatal("empty decision")
		}
	}
	// The daemon's passes reuse the scratch the first one grew. Timing
	// that first pass too would charge each measured pass a share of its
	// growth and of the garbage collection it sets off, whose write
	// barriers and marking then run inside the next passes: at 100,000
	// jobs the first pass grows about 35 MB of scratch.
	pass()
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		pass()
	}
}
