package schedule

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// t0 is the fake clock: every time in these tests is an offset from it.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const slice = time.Hour

func at(d time.Duration) time.Time { return t0.Add(d) }

func host(ncpu, ngpu float64) workfetch.Host {
	var h workfetch.Host
	h.Instances[workfetch.CPU] = ncpu
	h.Instances[workfetch.NVIDIA] = ngpu
	h.RelSpeed[workfetch.CPU] = 1
	h.RelSpeed[workfetch.NVIDIA] = 1
	h.CPUAvail, h.GPUAvail = 1, 1
	return h
}

// cpu is a new single-thread CPU task of project p, deadline d from now.
func cpu(p int, d time.Duration) Task {
	return Task{Project: p, Rsc: workfetch.CPU, NCPUs: 1, Deadline: at(d), Remaining: 3600}
}

// gpu is a new NVIDIA task using u instances and 0.1 CPU.
func gpu(p int, u float64) Task {
	return Task{Project: p, Rsc: workfetch.NVIDIA, NCPUs: 0.1, NGPUs: u, Deadline: at(48 * time.Hour), Remaining: 3600}
}

// running marks t running since now−ran, last checkpoint at now−ckptAgo
// (negative ckptAgo: never checkpointed), on the given instances.
func running(t Task, ran, ckptAgo time.Duration, gpus ...int) Task {
	t.Running, t.Started = true, true
	t.RunStart = at(-ran)
	if ckptAgo >= 0 {
		t.LastCheckpoint = at(-ckptAgo)
	}
	t.GPUs = gpus
	return t
}

func misses(t Task) Task { t.MissesDeadline = true; return t }

// named gives tasks arrival orders matching their positions, so test
// expectations can name tasks by index.
func named(ts ...Task) []Task {
	for i := range ts {
		ts[i].Order = i
	}
	return ts
}

// summary renders a decision as "task[gpus](E)" items sorted by task
// index, e.g. "0 2[1] 3E".
func summary(d *Decision) string {
	items := make([]string, 0, len(d.Run))
	runs := slices.Clone(d.Run)
	slices.SortFunc(runs, func(a, b Assignment) int { return a.Task - b.Task })
	for _, a := range runs {
		s := fmt.Sprint(a.Task)
		if len(a.GPUs) > 0 {
			s += fmt.Sprint(a.GPUs)
		}
		if a.EDF {
			s += "E"
		}
		items = append(items, s)
	}
	return strings.Join(items, " ")
}

type tcase struct {
	name string
	in   Input
	want string
}

func runCases(t *testing.T, cases []tcase) {
	t.Helper()
	var s Scheduler // shared across cases: scratch reuse must not leak state
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			if in.Now.IsZero() {
				in.Now = t0
			}
			if in.Slice == 0 {
				in.Slice = slice
			}
			var out Decision
			s.Schedule(&in, &out)
			if got := summary(&out); got != c.want {
				t.Errorf("ran %q, want %q", got, c.want)
			}
			var fresh Decision
			Schedule(&in, &fresh)
			if got, want := summary(&fresh), summary(&out); got != want {
				t.Errorf("package Schedule ran %q, reused Scheduler ran %q", got, want)
			}
		})
	}
}

func TestEDF(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "deadline miss runs ahead of higher priority project",
			in: Input{Host: host(2, 0), Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(cpu(0, 48*time.Hour), cpu(0, 48*time.Hour), misses(cpu(1, 5*time.Hour)))},
			want: "0 2E",
		},
		{
			name: "earliest deadlines first",
			in: Input{Host: host(2, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(misses(cpu(0, 9*time.Hour)), misses(cpu(0, 3*time.Hour)), misses(cpu(0, 5*time.Hour)))},
			want: "1E 2E",
		},
		{
			name: "equal deadlines: started beats unstarted even with more left",
			in: Input{Host: host(1, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(
					misses(Task{Project: 0, NCPUs: 1, Deadline: at(time.Hour), Remaining: 10}),
					misses(Task{Project: 0, NCPUs: 1, Deadline: at(time.Hour), Remaining: 500, Started: true}))},
			want: "1E",
		},
		{
			name: "equal deadlines: smaller remaining first",
			in: Input{Host: host(1, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(
					misses(Task{Project: 0, NCPUs: 1, Deadline: at(time.Hour), Remaining: 500}),
					misses(Task{Project: 0, NCPUs: 1, Deadline: at(time.Hour), Remaining: 10}))},
			want: "1E",
		},
		{
			name: "EDF preempts a task in mid slice",
			in: Input{Host: host(1, 0), Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(running(cpu(0, 48*time.Hour), 10*time.Minute, -1), misses(cpu(1, 2*time.Hour)))},
			want: "1E",
		},
		{
			name: "once ran EDF stays EDF while its project still misses",
			in: Input{Host: host(1, 0), Priority: []float64{0, 10}, Shares: []float64{1, 1},
				Tasks: named(
					func() Task {
						t := running(cpu(0, 30*time.Hour), 2*time.Hour, time.Minute)
						t.OnceRanEDF = true
						return t
					}(),
					cpu(1, 40*time.Hour),
					misses(cpu(0, 40*time.Hour)))},
			want: "0E",
		},
		{
			name: "once ran EDF is plain once its project has no miss",
			in: Input{Host: host(1, 0), Priority: []float64{0, 10}, Shares: []float64{1, 1},
				Tasks: named(
					func() Task {
						t := running(cpu(0, 30*time.Hour), 2*time.Hour, time.Minute)
						t.OnceRanEDF = true
						return t
					}(),
					cpu(1, 40*time.Hour))},
			want: "1",
		},
		{
			name: "GPU EDF before GPU round robin",
			in: Input{Host: host(4, 1), Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(gpu(0, 1), misses(gpu(1, 1)))},
			want: "1[0]E",
		},
		{
			name: "EDF fills the CPUs, then round robin stops",
			in: Input{Host: host(2, 0), Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(misses(cpu(1, time.Hour)), misses(cpu(1, 2*time.Hour)), misses(cpu(1, 3*time.Hour)), cpu(0, time.Hour))},
			want: "0E 1E",
		},
	})
}

// projectCounts counts the running tasks per project.
func projectCounts(in *Input, d *Decision) []int {
	n := make([]int, len(in.Priority))
	for _, a := range d.Run {
		n[in.Tasks[a.Task].Project]++
	}
	return n
}

func TestWeightedRoundRobin(t *testing.T) {
	many := func(p, n int) []Task {
		ts := make([]Task, n)
		for i := range ts {
			ts[i] = cpu(p, 48*time.Hour)
		}
		return ts
	}
	cases := []struct {
		name   string
		ncpu   float64
		prio   []float64
		shares []float64
		per    []int // tasks per project
		want   []int // running per project
		charge float64
	}{
		{"shares 3:1 on 4 CPUs", 4, []float64{0, 0}, []float64{3, 1}, []int{10, 10}, []int{3, 1}, 0},
		{"shares 3:1 on 8 CPUs", 8, []float64{0, 0}, []float64{3, 1}, []int{10, 10}, []int{6, 2}, 0},
		{"shares 1:3 on 8 CPUs, order does not matter", 8, []float64{0, 0}, []float64{1, 3}, []int{10, 10}, []int{2, 6}, 0},
		{"equal shares interleave", 4, []float64{0, 0}, []float64{1, 1}, []int{10, 10}, []int{2, 2}, 0},
		{"far higher priority takes all", 4, []float64{1e9, 0}, []float64{1, 1}, []int{10, 10}, []int{4, 0}, 0},
		{"priority lead worth one slice of CPU at share 1/2", 4, []float64{7200, 0}, []float64{1, 1}, []int{10, 10}, []int{3, 1}, 0},
		{"short project leaves the rest to others", 4, []float64{5, 0}, []float64{1, 1}, []int{1, 10}, []int{1, 3}, 0},
		{"backup project only when nobody else has work", 4, []float64{0, 1e9}, []float64{1, 0}, []int{2, 10}, []int{2, 2}, 0},
		{"nil shares are equal", 4, []float64{0, 0, 0, 0}, nil, []int{5, 5, 5, 5}, []int{1, 1, 1, 1}, 0},
		{"a small lead is nothing in debt seconds", 4, []float64{1, 0}, []float64{1, 1}, []int{10, 10}, []int{2, 2}, 0},
		{"a small lead is a lot in REC units", 4, []float64{1, 0}, []float64{1, 1}, []int{10, 10}, []int{4, 0}, 1.0 / (24 * 4)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tasks []Task
			for p, n := range c.per {
				tasks = append(tasks, many(p, n)...)
			}
			in := Input{Now: t0, Slice: slice, Host: host(c.ncpu, 0), Priority: c.prio, Shares: c.shares, Tasks: named(tasks...), Charge: c.charge}
			var out Decision
			Schedule(&in, &out)
			if got := projectCounts(&in, &out); !slices.Equal(got, c.want) {
				t.Errorf("running per project %v, want %v", got, c.want)
			}
		})
	}
}

func TestRoundRobinTaskChoice(t *testing.T) {
	runCases(t, []tcase{
		{
			name: "running (slice over, checkpointed) beats preempted beats new",
			in: Input{Host: host(2, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(cpu(0, time.Hour),
					func() Task { t := cpu(0, 50*time.Hour); t.Started = true; return t }(),
					running(cpu(0, 60*time.Hour), 2*time.Hour, time.Minute))},
			want: "1 2",
		},
		{
			name: "among new tasks the earliest deadline",
			in: Input{Host: host(1, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(cpu(0, 9*time.Hour), cpu(0, 3*time.Hour), cpu(0, 5*time.Hour))},
			want: "1",
		},
		{
			name: "GPU picks lower the project's priority for the CPU phase",
			in: Input{Host: host(1, 1), Priority: []float64{3000, 0}, Shares: []float64{1, 1},
				Tasks: named(gpu(0, 1), cpu(0, time.Hour), cpu(1, time.Hour))},
			want: "0[0] 2",
		},
	})
}

func TestTimeSlice(t *testing.T) {
	hi := func() Task { return cpu(0, time.Hour) } // project 0 has far higher priority
	lo := cpu(1, 48*time.Hour)
	in := func(tasks ...Task) Input {
		return Input{Host: host(1, 0), Priority: []float64{1e9, 0}, Shares: []float64{1, 1}, Tasks: named(tasks...)}
	}
	runCases(t, []tcase{
		{"mid slice keeps its CPU against a higher priority project",
			in(hi(), running(lo, 10*time.Minute, time.Minute)), "1"},
		{"mid slice, never checkpointed, keeps its CPU",
			in(hi(), running(lo, 10*time.Minute, -1)), "1"},
		{"slice over, last checkpoint before the slice ended: keeps running",
			in(hi(), running(lo, 90*time.Minute, 40*time.Minute)), "1"},
		{"slice over, never checkpointed: keeps running",
			in(hi(), running(lo, 5*time.Hour, -1)), "1"},
		{"slice over and checkpointed since: preempted",
			in(hi(), running(lo, 90*time.Minute, 10*time.Minute)), "0"},
		{"checkpoint exactly at slice end does not count",
			in(hi(), running(lo, 90*time.Minute, 30*time.Minute)), "1"},
		{"exactly at slice end is still in the slice",
			in(hi(), running(lo, time.Hour, 0)), "1"},
		{"a longer slice keeps it",
			func() Input {
				x := in(hi(), running(lo, 90*time.Minute, 10*time.Minute))
				x.Slice = 2 * time.Hour
				return x
			}(), "1"},
		{"zero slice means one hour",
			func() Input { x := in(hi(), running(lo, 50*time.Minute, time.Minute)); x.Slice = -1; return x }(), "1"},
		{"slice over: the running task of the top project stays over its new tasks",
			func() Input {
				x := in(hi(), running(cpu(0, 99*time.Hour), 2*time.Hour, time.Minute))
				return x
			}(), "1"},
	})
}

func TestGPUAssignment(t *testing.T) {
	h2 := host(8, 2)
	p1 := []float64{0}
	s1 := []float64{1}
	runCases(t, []tcase{
		{"four half-GPU tasks pack two per instance",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, .5), gpu(0, .5), gpu(0, .5), gpu(0, .5))},
			"0[0] 1[0] 2[1] 3[1]"},
		{"a fifth half-GPU task does not fit",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, .5), gpu(0, .5), gpu(0, .5), gpu(0, .5), gpu(0, .5))},
			"0[0] 1[0] 2[1] 3[1]"},
		{"thirds fill an instance exactly",
			Input{Host: host(8, 1), Priority: p1, Shares: s1, Tasks: named(gpu(0, 1.0/3), gpu(0, 1.0/3), gpu(0, 1.0/3))},
			"0[0] 1[0] 2[0]"},
		{"running tasks keep their instances",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, 1), running(gpu(0, 1), time.Minute, -1, 0), running(gpu(0, .5), time.Minute, -1, 1))},
			"1[0] 2[1]"},
		{"a new fractional task packs next to a running one",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, .5), running(gpu(0, .5), time.Minute, -1, 1))},
			"0[1] 1[1]"},
		{"a new integral task avoids instances running tasks keep",
			Input{Host: h2, Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(gpu(0, 1), running(gpu(1, 1), time.Minute, -1, 0))},
			"0[1] 1[0]"},
		{"a new EDF task avoids instances running tasks keep",
			Input{Host: h2, Priority: []float64{0, 10}, Shares: []float64{1, 1},
				Tasks: named(misses(gpu(0, 1)), running(gpu(1, 1), time.Minute, -1, 0))},
			"0[1]E 1[0]"},
		{"an integral task needs whole free instances",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, 2), running(gpu(0, .5), time.Minute, -1, 1))},
			"1[1]"},
		{"a two-GPU task gets both",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, 2))},
			"0[0 1]"},
		{"a task wanting more GPUs than the host has never runs",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(gpu(0, 3), gpu(0, 1))},
			"1[0]"},
		{"EDF takes a running task's instance: it is preempted",
			Input{Host: host(8, 1), Priority: []float64{10, 0}, Shares: []float64{1, 1},
				Tasks: named(running(gpu(0, 1), time.Minute, -1, 0), misses(gpu(1, 1)))},
			"1[0]E"},
		{"running task with a bad instance list is placed afresh",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(running(gpu(0, 1), time.Minute, -1, 7))},
			"0[0]"},
		{"GPU type the host lacks never runs",
			Input{Host: h2, Priority: p1, Shares: s1, Tasks: named(func() Task { t := gpu(0, 1); t.Rsc = workfetch.AMD; return t }())},
			""},
		{"GPU tasks may overcommit the CPUs by one",
			Input{Host: host(2, 2), Priority: []float64{0, 0}, Shares: []float64{1, 1},
				Tasks: named(running(cpu(0, time.Hour), time.Minute, -1), running(cpu(0, time.Hour), time.Minute, -1),
					func() Task { t := gpu(1, 1); t.NCPUs = 1; return t }(),
					func() Task { t := gpu(1, 1); t.NCPUs = 1; return t }())},
			"0 1 2[0]"},
	})
}

func TestCPUAccounting(t *testing.T) {
	mt := func(p, n int) Task { t := cpu(p, 48*time.Hour); t.NCPUs = float64(n); return t }
	keep := func(t Task) Task { return running(t, time.Minute, -1) }
	runCases(t, []tcase{
		{"multi-thread task overcommits when CPUs are free before it",
			Input{Host: host(4, 0), Priority: []float64{0, 10}, Shares: []float64{1, 1},
				Tasks: named(keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), mt(1, 4))},
			"0 1 2 3"},
		{"multi-thread task does not run when the CPUs are full",
			Input{Host: host(4, 0), Priority: []float64{0, 10}, Shares: []float64{1, 1},
				Tasks: named(keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), mt(1, 4))},
			"0 1 2 3"},
		{"no overcommit when the user capped the CPUs",
			Input{Host: host(4, 0), Priority: []float64{0, 10}, Shares: []float64{1, 1}, NoOvercommit: true,
				Tasks: named(keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), keep(cpu(0, time.Hour)), mt(1, 4), cpu(1, time.Hour))},
			"0 1 2 4"},
		{"selected multi-thread task goes before single-thread ones",
			Input{Host: host(4, 0), Priority: []float64{7200, 0}, Shares: []float64{1, 1},
				Tasks: named(cpu(0, time.Hour), cpu(0, time.Hour), cpu(0, time.Hour), cpu(0, time.Hour), mt(1, 4))},
			"4"},
		{"fractional CPU tasks share CPUs",
			Input{Host: host(1, 0), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(func() Task { t := cpu(0, time.Hour); t.NCPUs = .5; return t }(), func() Task { t := cpu(0, time.Hour); t.NCPUs = .5; return t }())},
			"0 1"},
		{"GPU tasks count their CPUs",
			Input{Host: host(1, 1), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(func() Task { t := gpu(0, 1); t.NCPUs = 1; return t }(), cpu(0, time.Hour))},
			"0[0]"},
		{"no CPUs: GPU task within one CPU still runs",
			Input{Host: host(0, 1), Priority: []float64{0}, Shares: []float64{1},
				Tasks: named(gpu(0, 1), cpu(0, time.Hour))},
			"0[0]"},
	})
}

func TestBadInput(t *testing.T) {
	nan := math.NaN()
	runCases(t, []tcase{
		{"project out of range", Input{Host: host(2, 0), Priority: []float64{0},
			Tasks: named(cpu(5, time.Hour), cpu(-1, time.Hour), cpu(0, time.Hour))}, "2"},
		{"no projects", Input{Host: host(2, 0), Tasks: named(cpu(0, time.Hour))}, ""},
		{"bad resource", Input{Host: host(2, 0), Priority: []float64{0},
			Tasks: named(func() Task { t := cpu(0, time.Hour); t.Rsc = 9; return t }(), func() Task { t := cpu(0, time.Hour); t.Rsc = -1; return t }())}, ""},
		{"zero, negative, NaN GPU usage", Input{Host: host(2, 2), Priority: []float64{0},
			Tasks: named(gpu(0, 0), gpu(0, -1), gpu(0, nan), gpu(0, math.Inf(1)))}, ""},
		{"NaN and zero CPU usage count as one", Input{Host: host(2, 0), Priority: []float64{0},
			Tasks: named(func() Task { t := cpu(0, time.Hour); t.NCPUs = nan; return t }(), func() Task { t := cpu(0, time.Hour); t.NCPUs = 0; return t }(), cpu(0, time.Hour))}, "0 1"},
		{"NaN priorities and shares", Input{Host: host(2, 0), Priority: []float64{nan, 0}, Shares: []float64{nan, nan},
			Tasks: named(cpu(0, time.Hour), cpu(1, time.Hour), cpu(1, time.Hour))}, "1 2"},
		{"NaN and infinite host", Input{Host: func() workfetch.Host {
			h := host(nan, math.Inf(1))
			h.RelSpeed[workfetch.NVIDIA] = nan
			return h
		}(), Priority: []float64{0}, Tasks: named(cpu(0, time.Hour), gpu(0, 1))}, "1[0]"},
		{"huge GPU count is clamped", Input{Host: host(1, 1e12), Priority: []float64{0},
			Tasks: named(gpu(0, 70), gpu(0, 64))}, "1" + fmt.Sprint(seq(64))},
		{"duplicate held instances", Input{Host: host(2, 2), Priority: []float64{0},
			Tasks: named(running(gpu(0, 2), time.Minute, -1, 1, 1))}, "0[0 1]"},
		{"zero and NaN times", Input{Host: host(1, 0), Priority: []float64{0, 1},
			Tasks: named(Task{Project: 0, NCPUs: 1, Running: true, Remaining: nan}, Task{Project: 1, NCPUs: 1})}, "0"},
	})
}

func seq(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// randomInput builds a plausible queue: nproj projects, n tasks, a few
// running, some missing deadlines, CPU, multi-thread and GPU tasks.
func randomInput(r *rand.Rand, nproj, n, ncpu, ngpu int) Input {
	in := Input{Now: t0, Slice: slice, Host: host(float64(ncpu), float64(ngpu))}
	in.Priority = make([]float64, nproj)
	in.Shares = make([]float64, nproj)
	for p := range nproj {
		in.Priority[p] = float64(r.IntN(20000) - 10000)
		in.Shares[p] = float64(1 + r.IntN(100))
	}
	in.Tasks = make([]Task, n)
	cpuRun, gpuRun := 0, 0
	for i := range in.Tasks {
		t := cpu(r.IntN(nproj), time.Duration(1+r.IntN(400))*time.Hour)
		switch x := r.IntN(100); {
		case x < 15:
			t = gpu(t.Project, []float64{1, .5, .25}[r.IntN(3)])
			t.Deadline = at(time.Duration(1+r.IntN(400)) * time.Hour)
		case x < 20:
			t.NCPUs = float64(2 + r.IntN(4))
		}
		t.Remaining = float64(r.IntN(100000))
		t.MissesDeadline = r.IntN(100) == 0
		t.Started = r.IntN(10) == 0
		t.Order = i
		if t.Rsc == workfetch.CPU && cpuRun < ncpu && r.IntN(n/ncpu+1) == 0 {
			cpuRun++
			t = running(t, time.Duration(r.IntN(7200))*time.Second, time.Duration(r.IntN(600))*time.Second)
		}
		if t.Rsc.IsGPU() && gpuRun < ngpu && t.NGPUs == 1 && r.IntN(n/ngpu+1) == 0 {
			t = running(t, time.Duration(r.IntN(7200))*time.Second, time.Duration(r.IntN(600))*time.Second, gpuRun)
			gpuRun++
		}
		t.OnceRanEDF = t.Running && r.IntN(3) == 0
		in.Tasks[i] = t
	}
	return in
}

// canonical is a decision keyed by the tasks' arrival orders.
func canonical(in *Input, d *Decision) string {
	items := make([]string, len(d.Run))
	for i, a := range d.Run {
		items[i] = fmt.Sprintf("%d%v%v", in.Tasks[a.Task].Order, a.GPUs, a.EDF)
	}
	slices.Sort(items)
	return strings.Join(items, " ")
}

func TestDeterministic(t *testing.T) {
	var s Scheduler
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 1))
		in := randomInput(r, 1+r.IntN(8), 1+r.IntN(300), 1+r.IntN(16), r.IntN(4))
		var want Decision
		Schedule(&in, &want)
		ref := canonical(&in, &want)
		checkInvariants(t, &in, &want)
		for k := range 5 {
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

// checkInvariants verifies what every decision must satisfy: no task
// twice, GPU instances within range and not overused, CPU usage within
// the overcommit rules.
func checkInvariants(t *testing.T, in *Input, d *Decision) {
	t.Helper()
	seen := map[int]bool{}
	var use [workfetch.NumRsc][MaxGPUInstances]float64
	ncpu := in.Host.Instances[workfetch.CPU]
	var used, before float64
	for _, a := range d.Run {
		if seen[a.Task] {
			t.Fatalf("task %d listed twice", a.Task)
		}
		seen[a.Task] = true
		tk := &in.Tasks[a.Task]
		before = used
		used += tk.NCPUs
		if tk.Rsc.IsGPU() {
			if len(a.GPUs) != need(tk.NGPUs) {
				t.Fatalf("task %d: %v instances for %v GPUs", a.Task, a.GPUs, tk.NGPUs)
			}
			for _, j := range a.GPUs {
				if j < 0 || float64(j) >= in.Host.Instances[tk.Rsc] {
					t.Fatalf("task %d: instance %d out of range", a.Task, j)
				}
				use[tk.Rsc][j] += min(tk.NGPUs, 1)
				if use[tk.Rsc][j] > 1+eps {
					t.Fatalf("instance %d of %v overused", j, tk.Rsc)
				}
			}
			if before >= ncpu && used > ncpu+1+eps {
				t.Fatalf("GPU task %d overcommits the CPUs by more than one", a.Task)
			}
		} else if before >= ncpu-eps {
			t.Fatalf("CPU task %d started with the CPUs full", a.Task)
		}
	}
}

// TestReuse checks that a Scheduler and a Decision reused across inputs
// of different sizes give the same results as fresh ones.
func TestReuse(t *testing.T) {
	var s Scheduler
	var out Decision
	for seed := range uint64(30) {
		r := rand.New(rand.NewPCG(seed, 2))
		in := randomInput(r, 1+r.IntN(20), 1+r.IntN(500), 1+r.IntN(32), r.IntN(5))
		s.Schedule(&in, &out)
		var fresh Decision
		Schedule(&in, &fresh)
		if a, b := canonical(&in, &out), canonical(&in, &fresh); a != b {
			t.Fatalf("seed %d: reused %s, fresh %s", seed, a, b)
		}
	}
}

// benchInput is the benchmark's host: 16 CPUs, 4 GPUs, 20 projects, n
// queued tasks of which 16 CPU and 4 GPU tasks are running (half of
// them past their slice and checkpointed), about 1% missing deadlines.
func benchInput(n int) Input {
	r := rand.New(rand.NewPCG(42, 42))
	in := randomInput(r, 20, n, 16, 4)
	ncpu, ngpu := 0, 0
	for i := range in.Tasks {
		t := &in.Tasks[i]
		t.Running, t.GPUs, t.OnceRanEDF = false, nil, false
		ago := time.Duration(r.IntN(7200)) * time.Second
		switch {
		case t.Rsc == workfetch.CPU && t.NCPUs == 1 && ncpu < 16:
			*t = running(*t, ago, time.Duration(r.IntN(600))*time.Second)
			ncpu++
		case t.Rsc.IsGPU() && t.NGPUs == 1 && ngpu < 4:
			*t = running(*t, ago, time.Duration(r.IntN(600))*time.Second, ngpu)
			ngpu++
		}
	}
	return in
}

func benchSchedule(b *testing.B, in Input) {
	nrun := 0
	for i := range in.Tasks {
		if in.Tasks[i].Running {
			nrun++
		}
	}
	var s Scheduler
	var out Decision
	s.Schedule(&in, &out) // warm the scratch
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		s.Schedule(&in, &out)
	}
	b.ReportMetric(float64(nrun), "running")
	b.ReportMetric(float64(len(out.Run)), "chosen")
}

func BenchmarkSchedule1000(b *testing.B)  { benchSchedule(b, benchInput(1000)) }
func BenchmarkSchedule10000(b *testing.B) { benchSchedule(b, benchInput(10000)) }

// BenchmarkScheduleAllEDF10000 is the overloaded host: every task misses
// its deadline, so the EDF heaps hold everything.
func BenchmarkScheduleAllEDF10000(b *testing.B) {
	in := benchInput(10000)
	for i := range in.Tasks {
		in.Tasks[i].MissesDeadline = true
	}
	benchSchedule(b, in)
}

// BenchmarkScheduleFresh10000 is the package function, which allocates
// its scratch every call.
func BenchmarkScheduleFresh10000(b *testing.B) {
	in := benchInput(10000)
	var out Decision
	b.ReportAllocs()
	for b.Loop() {
		Schedule(&in, &out)
	}
}

// TestRunOrder checks that Run is in claim order: EDF GPU, EDF CPU,
// mid-slice tasks, then the round robin (GPU first).
func TestRunOrder(t *testing.T) {
	in := Input{Now: t0, Slice: slice, Host: host(4, 2), Priority: []float64{0, 10}, Shares: []float64{1, 1},
		Tasks: named(
			cpu(1, time.Hour), // 0: round robin CPU
			gpu(1, 1),         // 1: round robin GPU
			running(cpu(0, 9*time.Hour), time.Minute, -1), // 2: mid slice
			misses(cpu(0, 2*time.Hour)),                   // 3: EDF CPU
			misses(gpu(0, 1)),                             // 4: EDF GPU
		)}
	var out Decision
	Schedule(&in, &out)
	var got []int
	for _, a := range out.Run {
		got = append(got, a.Task)
	}
	if want := []int{4, 3, 2, 1, 0}; !slices.Equal(got, want) {
		t.Errorf("run order %v, want %v", got, want)
	}
}

// TestScheduleRecorded compares decisions on random inputs, many of
// them with most tasks EDF and with equal deadlines, with what the
// scheduler gave before its EDF phase stopped heapifying every EDF task:
// the digest of every decision, in run order, must not change.
func TestScheduleRecorded(t *testing.T) {
	var s Scheduler
	var d Decision
	var b strings.Builder
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 5))
		n := 1 + r.IntN(300)
		if seed%10 == 0 {
			n = 1000 + r.IntN(2000)
		}
		in := randomInput(r, 1+r.IntN(8), n, 1+r.IntN(16), r.IntN(4))
		pm := r.IntN(100)
		for i := range in.Tasks {
			tk := &in.Tasks[i]
			tk.MissesDeadline = r.IntN(100) < pm
			if r.IntN(3) == 0 {
				tk.Deadline = at(time.Duration(r.IntN(20)) * time.Hour)
				tk.Remaining = float64(r.IntN(3))
			}
		}
		s.Schedule(&in, &d)
		fmt.Fprintf(&b, "%d:", seed)
		for _, a := range d.Run {
			fmt.Fprintf(&b, " %d%v%v", a.Task, a.GPUs, a.EDF)
		}
		b.WriteByte('\n')
	}
	h := fnv.New64a()
	h.Write([]byte(b.String()))
	const want uint64 = 0x893b90b354a69950
	if got := h.Sum64(); got != want {
		t.Errorf("digest %#x, want %#x", got, want)
	}
}
