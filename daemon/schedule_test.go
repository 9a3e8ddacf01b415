package daemon

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestScheduleEDF(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	cases := []struct {
		name  string
		jobs  []schedJob
		ncpus float64
		want  []string
	}{
		{name: "nothing to run", jobs: nil, ncpus: 4, want: nil},
		{
			name:  "earliest deadlines fill the CPUs",
			jobs:  []schedJob{{Key: "c", Deadline: at(3)}, {Key: "a", Deadline: at(1)}, {Key: "d", Deadline: at(4)}, {Key: "b", Deadline: at(2)}},
			ncpus: 2,
			want:  []string{"a", "b"},
		},
		{
			name:  "fewer jobs than CPUs: all run",
			jobs:  []schedJob{{Key: "b", Deadline: at(2)}, {Key: "a", Deadline: at(1)}},
			ncpus: 4,
			want:  []string{"a", "b"},
		},
		{
			name:  "running tasks keep their CPUs against earlier deadlines",
			jobs:  []schedJob{{Key: "late", Deadline: at(9), Running: true}, {Key: "urgent", Deadline: at(1)}},
			ncpus: 1,
			want:  []string{"late"},
		},
		{
			name: "running first, then EDF fills what is left",
			jobs: []schedJob{
				{Key: "r2", Deadline: at(8), Running: true}, {Key: "e3", Deadline: at(3)},
				{Key: "r1", Deadline: at(9), Running: true}, {Key: "e1", Deadline: at(1)}, {Key: "e2", Deadline: at(2)},
			},
			ncpus: 3,
			want:  []string{"r2", "r1", "e1"},
		},
		{
			name:  "equal deadlines: key order",
			jobs:  []schedJob{{Key: "z", Deadline: at(1)}, {Key: "m", Deadline: at(1)}, {Key: "a", Deadline: at(1)}},
			ncpus: 2,
			want:  []string{"a", "m"},
		},
		{
			name:  "a job wider than the host runs alone when nothing else runs",
			jobs:  []schedJob{{Key: "wide", Deadline: at(1), NCPUs: 8}, {Key: "narrow", Deadline: at(2), NCPUs: 1}},
			ncpus: 2,
			want:  []string{"wide"},
		},
		{
			name:  "a wide job does not squeeze in beside others",
			jobs:  []schedJob{{Key: "first", Deadline: at(1), NCPUs: 1}, {Key: "wide", Deadline: at(2), NCPUs: 2}, {Key: "third", Deadline: at(3), NCPUs: 1}},
			ncpus: 2,
			want:  []string{"first", "third"},
		},
		{
			name:  "a wide job that fits exactly runs",
			jobs:  []schedJob{{Key: "wide", Deadline: at(1), NCPUs: 4}, {Key: "next", Deadline: at(2), NCPUs: 1}},
			ncpus: 4,
			want:  []string{"wide"},
		},
		{
			name:  "zero or negative NCPUs count as one CPU",
			jobs:  []schedJob{{Key: "a", Deadline: at(1), NCPUs: 0}, {Key: "b", Deadline: at(2), NCPUs: -3}, {Key: "c", Deadline: at(3)}},
			ncpus: 2,
			want:  []string{"a", "b"},
		},
		{
			name:  "fractional CPUs pack",
			jobs:  []schedJob{{Key: "a", Deadline: at(1), NCPUs: 0.5}, {Key: "b", Deadline: at(2), NCPUs: 0.5}, {Key: "c", Deadline: at(3), NCPUs: 0.5}, {Key: "d", Deadline: at(4), NCPUs: 0.5}, {Key: "e", Deadline: at(5), NCPUs: 0.5}},
			ncpus: 2,
			want:  []string{"a", "b", "c", "d"},
		},
		{
			name:  "float rounding does not lose a CPU",
			jobs:  []schedJob{{Key: "a", Deadline: at(1), NCPUs: 0.1}, {Key: "b", Deadline: at(2), NCPUs: 0.2}, {Key: "c", Deadline: at(3), NCPUs: 0.7}},
			ncpus: 1,
			want:  []string{"a", "b", "c"},
		},
		{
			name: "more running tasks than CPUs (CPUs were taken away): the excess is dropped",
			jobs: []schedJob{
				{Key: "r1", Deadline: at(1), Running: true}, {Key: "r2", Deadline: at(2), Running: true}, {Key: "r3", Deadline: at(3), Running: true},
			},
			ncpus: 2,
			want:  []string{"r1", "r2"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.jobs)
			got := scheduleEDF(in, tc.ncpus)
			if !slices.Equal(got, tc.want) {
				t.Errorf("scheduleEDF = %q, want %q", got, tc.want)
			}
			if !slices.Equal(in, tc.jobs) {
				t.Errorf("scheduleEDF reordered its input")
			}
			// Determinism: any order of the same jobs gives the same run
			// set, in the same order.
			r := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 20; i++ {
				perm := slices.Clone(tc.jobs)
				r.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
				if again := scheduleEDF(perm, tc.ncpus); !slices.Equal(again, got) {
					t.Fatalf("input order %v gave %q, want %q", keys(perm), again, got)
				}
			}
		})
	}
}

// TestScheduleEDFInvariants checks, over random inputs, what must hold for
// any queue: the run set never overcommits the CPUs (except one lone wide
// job), every running task that fits keeps running, and no idle CPU is
// left while a job that fits waits.
func TestScheduleEDFInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for iter := 0; iter < 2000; iter++ {
		ncpus := float64(1 + r.IntN(8))
		var jobs []schedJob
		for i := 0; i < r.IntN(12); i++ {
			jobs = append(jobs, schedJob{
				Key:      string(rune('a' + i)),
				Deadline: t0.Add(time.Duration(r.IntN(48)) * time.Hour),
				NCPUs:    []float64{0.5, 1, 1, 1, 2, 4, 16}[r.IntN(7)],
				Running:  r.IntN(3) == 0,
			})
		}
		got := scheduleEDF(jobs, ncpus)
		chosen := map[string]bool{}
		used := 0.0
		byKey := map[string]schedJob{}
		for _, j := range jobs {
			byKey[j.Key] = j
		}
		for _, k := range got {
			if chosen[k] {
				t.Fatalf("%v on %g CPUs: %q chosen twice", jobs, ncpus, k)
			}
			chosen[k] = true
			used += byKey[k].NCPUs
		}
		if used > ncpus+1e-9 && len(got) != 1 {
			t.Fatalf("%v on %g CPUs: run set %q uses %g CPUs", jobs, ncpus, got, used)
		}
		runningWant := 0.0
		for _, j := range jobs {
			if j.Running {
				runningWant += j.NCPUs
			}
		}
		if runningWant <= ncpus {
			for _, j := range jobs {
				if j.Running && !chosen[j.Key] {
					t.Fatalf("%v on %g CPUs: running %q (all running fit) was dropped; run set %q", jobs, ncpus, j.Key, got)
				}
			}
		}
		for _, j := range jobs {
			if chosen[j.Key] || j.NCPUs+used > ncpus+1e-9 {
				continue
			}
			t.Fatalf("%v on %g CPUs: %q (%g CPUs) left out with %g CPUs free; run set %q", jobs, ncpus, j.Key, j.NCPUs, ncpus-used, got)
		}
		if len(jobs) > 0 && len(got) == 0 {
			t.Fatalf("%v on %g CPUs: nothing runs", jobs, ncpus)
		}
	}
}

func keys(jobs []schedJob) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Key)
	}
	return out
}

func TestSummarizeQueue(t *testing.T) {
	cases := []struct {
		name  string
		jobs  []queuedJob
		ncpus int
		want  cpuWork
	}{
		{name: "empty queue: every CPU idle", ncpus: 4, want: cpuWork{BusySecs: 0, IdleInstances: 4}},
		{
			name:  "one job per CPU",
			jobs:  []queuedJob{{RemainingSecs: 100, NCPUs: 1, Runnable: true}, {RemainingSecs: 300, NCPUs: 1, Runnable: true}},
			ncpus: 2,
			want:  cpuWork{BusySecs: 200},
		},
		{
			name:  "more jobs than CPUs: no idle, work spread over the CPUs",
			jobs:  []queuedJob{{RemainingSecs: 100, Runnable: true}, {RemainingSecs: 100, Runnable: true}, {RemainingSecs: 100, Runnable: true}},
			ncpus: 2,
			want:  cpuWork{BusySecs: 150},
		},
		{
			name:  "waiting (not runnable) jobs count as work but leave CPUs idle",
			jobs:  []queuedJob{{RemainingSecs: 400, NCPUs: 1, Runnable: false}, {RemainingSecs: 400, NCPUs: 1, Runnable: true}},
			ncpus: 4,
			want:  cpuWork{BusySecs: 200, IdleInstances: 3},
		},
		{
			name:  "a multi-CPU job weighs by its CPUs",
			jobs:  []queuedJob{{RemainingSecs: 100, NCPUs: 2, Runnable: true}},
			ncpus: 4,
			want:  cpuWork{BusySecs: 50, IdleInstances: 2},
		},
		{
			name:  "NCPUs 0 counts as one",
			jobs:  []queuedJob{{RemainingSecs: 60, NCPUs: 0, Runnable: true}},
			ncpus: 2,
			want:  cpuWork{BusySecs: 30, IdleInstances: 1},
		},
		{
			name:  "a job wider than the host: no negative idle",
			jobs:  []queuedJob{{RemainingSecs: 10, NCPUs: 16, Runnable: true}},
			ncpus: 4,
			want:  cpuWork{BusySecs: 40},
		},
		{
			name:  "zero CPUs: no division by zero",
			jobs:  []queuedJob{{RemainingSecs: 10, Runnable: true}},
			ncpus: 0,
			want:  cpuWork{BusySecs: 10},
		},
		{
			name:  "fractional CPUs",
			jobs:  []queuedJob{{RemainingSecs: 100, NCPUs: 0.5, Runnable: true}},
			ncpus: 1,
			want:  cpuWork{BusySecs: 50, IdleInstances: 0.5},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarizeQueue(tc.jobs, tc.ncpus); got != tc.want {
				t.Errorf("summarizeQueue = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWorkRequest(t *testing.T) {
	const day = 86400.0
	cases := []struct {
		name           string
		w              cpuWork
		ncpus          int
		minDays, add   float64
		wantSecs, inst float64
	}{
		{name: "busy for longer than min: nothing", w: cpuWork{BusySecs: 0.2 * day}, ncpus: 4, minDays: 0.1, add: 0.5, wantSecs: 0, inst: 0},
		{name: "busy exactly min: nothing (hysteresis)", w: cpuWork{BusySecs: 0.1 * day}, ncpus: 4, minDays: 0.1, add: 0.5, wantSecs: 0, inst: 0},
		{name: "below min: fill to min+additional", w: cpuWork{BusySecs: 0.05 * day}, ncpus: 4, minDays: 0.1, add: 0.5, wantSecs: (0.6 - 0.05) * day * 4},
		{name: "empty queue: the whole buffer, idle CPUs asked for", w: cpuWork{IdleInstances: 2}, ncpus: 2, minDays: 0.1, add: 0.5, wantSecs: 0.6 * day * 2, inst: 2},
		{name: "busy above min but a CPU idle: ask anyway", w: cpuWork{BusySecs: 0.3 * day, IdleInstances: 1}, ncpus: 2, minDays: 0.1, add: 0.5, wantSecs: 0.3 * day * 2, inst: 1},
		{name: "buffer over full but a CPU idle: a token request for the instance", w: cpuWork{BusySecs: 2 * day, IdleInstances: 1}, ncpus: 2, minDays: 0.1, add: 0.5, wantSecs: 1, inst: 1},
		{name: "no buffer wanted, nothing queued", w: cpuWork{}, ncpus: 1, minDays: 0, add: 0, wantSecs: 0, inst: 0},
		{name: "no buffer wanted, CPU idle", w: cpuWork{IdleInstances: 1}, ncpus: 1, minDays: 0, add: 0, wantSecs: 1, inst: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			secs, inst := workRequest(tc.w, tc.ncpus, tc.minDays, tc.add)
			if diff := secs - tc.wantSecs; diff > 1e-6 || diff < -1e-6 || inst != tc.inst {
				t.Errorf("workRequest = (%g s, %g instances), want (%g s, %g instances)", secs, inst, tc.wantSecs, tc.inst)
			}
		})
	}
}

// TestWorkRequestHysteresis runs a queue down over time: requests must
// come in bursts (none while the buffer holds more than min, then one
// that fills it to min+additional), not a trickle at every step.
func TestWorkRequestHysteresis(t *testing.T) {
	const (
		day     = 86400.0
		ncpus   = 2
		minDays = 0.1
		addDays = 0.2
		step    = 600.0 // seconds of wall time per iteration
	)
	busy := 0.0
	requests := 0
	for i := 0; i < 500; i++ {
		secs, _ := workRequest(cpuWork{BusySecs: busy}, ncpus, minDays, addDays)
		if busy >= minDays*day && secs != 0 {
			t.Fatalf("step %d: asked for %g s with %g s queued (min %g s)", i, secs, busy, minDays*day)
		}
		if secs > 0 {
			requests++
			busy += secs / ncpus // the server sends what was asked
			if busy < (minDays+addDays)*day-1e-6 || busy > (minDays+addDays)*day+1e-6 {
				t.Fatalf("step %d: the request filled the queue to %g s, want %g s", i, busy, (minDays+addDays)*day)
			}
		}
		busy = max(busy-step, 0)
	}
	// 500 steps of 600 s drain 300,000 s of queue; each burst refills
	// 0.2 days = 17,280 s above the min, so about 17 requests, not 500.
	if requests < 10 || requests > 25 {
		t.Errorf("%d requests over the run, want bursts (10–25)", requests)
	}
}
