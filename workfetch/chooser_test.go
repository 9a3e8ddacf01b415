package workfetch

import (
	"reflect"
	"testing"
	"time"
)

// TestChooserMatchesChoose: a Chooser kept across passes, deciding into a
// kept Decision, gives exactly Choose's decision (RequestOnly: the same
// request, no reasons), whatever the previous pass was, for states with
// and without shortfalls, guard on and off, project counts growing and
// shrinking.
func TestChooserMatchesChoose(t *testing.T) {
	var ch, chReq Chooser
	chReq.RequestOnly = true
	var d, dReq Decision
	requests := 0
	for _, n := range []int{0, 1, 3, 8, 40, 200, 5, 0, 1000} {
		for _, np := range []int{20, 3, 1} {
			for _, guard := range []float64{0, DeadlineGuardOff} {
				h, p, projects, jobs := benchSetup(n)
				projects = projects[:np]
				js := jobs[:0:0]
				for _, j := range jobs {
					if j.Project < np {
						js = append(js, j)
					}
				}
				p.DeadlineGuard = guard
				projects[0].State.Backoff[CPU] = Backoff{Interval: 600, Until: t0.Add(time.Minute)}
				var sim SimResult
				Simulate(t0, h, p, projects, js, nil, &sim)
				prio := DebtPolicy{}.Priorities(projects, h, &sim, nil)
				want := Choose(t0, h, p, projects, &sim, prio)
				ch.Choose(&d, t0, h, p, projects, &sim, prio)
				if !reflect.DeepEqual(d, want) {
					t.Fatalf("n=%d np=%d guard=%v: Chooser\n%+v\nChoose\n%+v", n, np, guard, d, want)
				}
				chReq.Choose(&dReq, t0, h, p, projects, &sim, prio)
				if dReq.Request != want.Request || len(dReq.NotFetching) != 0 {
					t.Fatalf("n=%d np=%d guard=%v: RequestOnly %+v (%d reasons), want %+v", n, np, guard, dReq.Request, len(dReq.NotFetching), want.Request)
				}
				if want.Request.Project >= 0 {
					requests++
				}
			}
		}
	}
	if requests == 0 {
		t.Fatal("no pass made a request: the test covers only refusals")
	}
}

// TestChooserNoAlloc: a kept Chooser and Decision allocate nothing per pass.
func TestChooserNoAlloc(t *testing.T) {
	h, p, projects, jobs := benchSetup(100)
	var sim SimResult
	Simulate(t0, h, p, projects, jobs, nil, &sim)
	prio := DebtPolicy{}.Priorities(projects, h, &sim, nil)
	var ch Chooser
	var d Decision
	ch.Choose(&d, t0, h, p, projects, &sim, prio)
	if a := testing.AllocsPerRun(20, func() { ch.Choose(&d, t0, h, p, projects, &sim, prio) }); a != 0 {
		t.Errorf("Chooser.Choose: %v allocations per pass, want 0", a)
	}
	used := make([][NumRsc]float64, len(projects))
	used[1][CPU] = 60
	if a := testing.AllocsPerRun(20, func() { UpdateDebts(t0, h, projects, jobs, used, 60) }); a != 0 {
		t.Errorf("UpdateDebts: %v allocations per call, want 0", a)
	}
}
