package schedule

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// app puts t in limit group g with at most m running (max_concurrent).
func app(t Task, g, m int) Task { t.App, t.AppMax = g, m; return t }

func TestConcurrencyLimits(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "max_concurrent 1 runs one task of the app on 4 CPUs",
			in: Input{Host: host(4, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(cpu(0, 9*time.Hour), 1, 1), app(cpu(0, 3*time.Hour), 1, 1), app(cpu(0, 5*time.Hour), 1, 1), app(cpu(0, 7*time.Hour), 1, 1))},
			want: "1",
		},
		{
			name: "the project's other app fills the CPUs the limit leaves",
			in: Input{Host: host(4, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(cpu(0, time.Hour), 1, 1), app(cpu(0, 2*time.Hour), 1, 1), app(cpu(0, 3*time.Hour), 1, 1),
					cpu(0, 4*time.Hour), cpu(0, 5*time.Hour), cpu(0, 6*time.Hour), cpu(0, 7*time.Hour))},
			want: "0 3 4 5",
		},
		{
			name: "max_concurrent 2 of 4",
			in: Input{Host: host(4, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(cpu(0, time.Hour), 1, 2), app(cpu(0, 2*time.Hour), 1, 2), app(cpu(0, 3*time.Hour), 1, 2), app(cpu(0, 4*time.Hour), 1, 2))},
			want: "0 1",
		},
		{
			name: "project_max_concurrent leaves the rest to the other project",
			in: Input{Host: host(4, 0), Priority: []float64{1e9, 0}, Shares: []float64{1, 1}, ProjectMax: []int{2},
				Tasks: named(cpu(0, time.Hour), cpu(0, 2*time.Hour), cpu(0, 3*time.Hour), cpu(0, 4*time.Hour),
					cpu(1, time.Hour), cpu(1, 2*time.Hour), cpu(1, 3*time.Hour))},
			want: "0 1 4 5",
		},
		{
			name: "project_max_concurrent counts GPU and CPU tasks together",
			in: Input{Host: host(4, 1), Priority: []float64{0}, Shares: []float64{1}, ProjectMax: []int{2},
				Tasks: named(gpu(0, 1), cpu(0, time.Hour), cpu(0, 2*time.Hour), cpu(0, 3*time.Hour))},
			want: "0[0] 1",
		},
		{
			name: "an app's GPU and CPU versions share its limit; the GPU goes first",
			in: Input{Host: host(4, 1), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(gpu(0, 1), 1, 1), app(cpu(0, time.Hour), 1, 1), cpu(0, 2*time.Hour))},
			want: "0[0] 2",
		},
		{
			name: "limits of two apps are separate",
			in: Input{Host: host(4, 0), Priority: []float64{0, 0}, Shares: []float64{1, 1},
				Tasks: named(app(cpu(0, time.Hour), 1, 1), app(cpu(0, 2*time.Hour), 1, 1),
					app(cpu(1, time.Hour), 2, 1), app(cpu(1, 2*time.Hour), 2, 1))},
			want: "0 2",
		},
		{
			name: "a limit lowered below the running tasks preempts the excess, mid slice or not",
			in: Input{Host: host(4, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(running(cpu(0, 3*time.Hour), time.Minute, -1), 1, 1), app(running(cpu(0, time.Hour), time.Minute, -1), 1, 1),
					app(running(cpu(0, 2*time.Hour), time.Minute, -1), 1, 1))},
			want: "1",
		},
		{
			name: "EDF tasks count toward the limit first",
			in: Input{Host: host(4, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(app(running(cpu(0, 30*time.Hour), time.Minute, -1), 1, 1), app(misses(cpu(0, 2*time.Hour)), 1, 1))},
			want: "1E",
		},
		{
			name: "the CPU selection skips limited tasks, so a lower priority project still gets the idle CPU",
			in: Input{Host: host(2, 0), Priority: []float64{1e9, 0}, Shares: []float64{1, 1},
				Tasks: named(app(cpu(0, time.Hour), 1, 1), app(cpu(0, 2*time.Hour), 1, 1), app(cpu(0, 3*time.Hour), 1, 1),
					app(cpu(0, 4*time.Hour), 1, 1), app(cpu(0, 5*time.Hour), 1, 1), cpu(1, time.Hour), cpu(1, 2*time.Hour))},
			want: "0 5",
		},
		{
			name: "two 0.5 GPU tasks share one GPU; a third waits",
			in: Input{Host: host(4, 1), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(gpu(0, .5), gpu(0, .5), gpu(0, .5))},
			want: "0[0] 1[0]",
		},
		{
			name: "out-of-range App numbers, AppMax 0 and ProjectMax 0 are no limits",
			in: Input{Host: host(3, 0), Priority: []float64{0}, Shares: []float64{1}, ProjectMax: []int{0},
				Tasks: named(app(cpu(0, time.Hour), 99, 1), app(cpu(0, 2*time.Hour), 99, 1), app(cpu(0, 3*time.Hour), 1, 0))},
			want: "0 1 2",
		},
	})
}

// TestLimitsRandom checks on random queues with random limits that no
// limit is ever exceeded, that the decision does not depend on the
// tasks' order, and that no CPU stays idle while a task that the limits
// allow could use it.
func TestLimitsRandom(t *testing.T) {
	var s Scheduler
	for seed := range uint64(40) {
		r := rand.New(rand.NewPCG(seed, 7))
		nproj := 1 + r.IntN(5)
		in := randomInput(r, nproj, 1+r.IntN(200), 1+r.IntN(16), r.IntN(3))
		in.ProjectMax = make([]int, nproj)
		for p := range in.ProjectMax {
			if r.IntN(3) == 0 {
				in.ProjectMax[p] = 1 + r.IntN(4)
			}
		}
		for i := range in.Tasks {
			if g := r.IntN(6); g > 0 && g < 4 {
				in.Tasks[i].App, in.Tasks[i].AppMax = g, g
			}
		}
		var want Decision
		s.Schedule(&in, &want)
		checkInvariants(t, &in, &want)
		app := map[int]int{}
		proj := make([]int, nproj)
		var used float64
		for _, a := range want.Run {
			tk := &in.Tasks[a.Task]
			proj[tk.Project]++
			used += tk.NCPUs
			if tk.App > 0 {
				app[tk.App]++
				if app[tk.App] > tk.AppMax {
					t.Fatalf("seed %d: app %d runs %d tasks, limit %d", seed, tk.App, app[tk.App], tk.AppMax)
				}
			}
		}
		for p, n := range proj {
			if m := in.ProjectMax[p]; m > 0 && n > m {
				t.Fatalf("seed %d: project %d runs %d tasks, limit %d", seed, p, n, m)
			}
		}
		if used < in.Host.Instances[workfetch.CPU]-1 {
			chosen := map[int]bool{}
			for _, a := range want.Run {
				chosen[a.Task] = true
			}
			for i := range in.Tasks {
				tk := &in.Tasks[i]
				if chosen[i] || tk.Rsc != workfetch.CPU || tk.NCPUs != 1 {
					continue
				}
				if m := in.ProjectMax[tk.Project]; m > 0 && proj[tk.Project] >= m {
					continue
				}
				if tk.App > 0 && app[tk.App] >= tk.AppMax {
					continue
				}
				t.Fatalf("seed %d: %.1f of %v CPUs used, yet task %d could run", seed, used, in.Host.Instances[workfetch.CPU], i)
			}
		}
		ref := canonical(&in, &want)
		for k := range 3 {
			sh := in
			sh.Tasks = slices.Clone(in.Tasks)
			r.Shuffle(len(sh.Tasks), func(i, j int) { sh.Tasks[i], sh.Tasks[j] = sh.Tasks[j], sh.Tasks[i] })
			var got Decision
			s.Schedule(&sh, &got)
			if c := canonical(&sh, &got); c != ref {
				t.Fatalf("seed %d shuffle %d: got %s, want %s", seed, k, c, ref)
			}
		}
	}
}

// BenchmarkScheduleLimits10000 is the benchmark queue with every
// project's apps limited: the counting must stay allocation-free.
func BenchmarkScheduleLimits10000(b *testing.B) {
	in := benchInput(10000)
	in.ProjectMax = make([]int, len(in.Priority))
	for p := range in.ProjectMax {
		in.ProjectMax[p] = 3
	}
	for i := range in.Tasks {
		in.Tasks[i].App, in.Tasks[i].AppMax = 1+in.Tasks[i].Project, 2
	}
	benchSchedule(b, in)
}
