package workfetch

import "testing"

// The deadline guard: one CPU, a job received 10,000 s ago with a
// 20,000 s latency bound and a 12,000 s estimate, buffer 0.35 day. A
// second job of 12,000 s queued behind it ends at remaining + 12,000 s;
// the guard allows that only up to 0.8 × 20,000 = 16,000 s.
func TestDeadlineGuard(t *testing.T) {
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	tests := []struct {
		name      string
		remaining float64
		guard     float64
		received  bool
		wantAsk   bool
		why       string
	}{
		{"room for another job", 3000, 0, true, true, ""},
		{"another job would end too late", 5000, 0, true, false, WhyDeadlineTight},
		{"guard off: the C++ client's rule", 5000, DeadlineGuardOff, true, true, ""},
		{"looser guard", 5000, 0.95, true, true, ""},
		{"latency unknown (no received time)", 5000, 0, false, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := p
			p.DeadlineGuard = tc.guard
			h := cpuHost(1)
			projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
			j := Job{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: tc.remaining, Deadline: at(10000), Runnable: true, Estimate: 12000}
			if tc.received {
				j.Received = at(-10000)
			}
			var sim SimResult
			Simulate(t0, h, p, projects, []Job{j}, nil, &sim)
			if got := sim.Projects[0].Latency[CPU]; tc.received && got != 20000 {
				t.Fatalf("latency %v, want 20000", got)
			}
			if got := sim.Projects[0].JobWall[CPU]; got != 12000 {
				t.Fatalf("job wall %v, want 12000", got)
			}
			d := Choose(t0, h, p, projects, &sim, []float64{0})
			if asked := d.Request.Project == 0; asked != tc.wantAsk {
				t.Fatalf("asked = %v (%+v), want %v", asked, d.Request, tc.wantAsk)
			}
			if tc.why != "" {
				if got := whyOf(d, 0, CPU); got != tc.why {
					t.Fatalf("why = %q, want %q", got, tc.why)
				}
			}
		})
	}
}

// An idle instance is never held back: the guard only stops buffering.
func TestDeadlineGuardIdleInstance(t *testing.T) {
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	h := cpuHost(2)
	projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
	// One CPU busy far past the guard, the other idle.
	j := Job{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: 19000, Deadline: at(10000), Received: at(-10000), Runnable: true, Estimate: 19000}
	var sim SimResult
	Simulate(t0, h, p, projects, []Job{j}, nil, &sim)
	d := Choose(t0, h, p, projects, &sim, []float64{0})
	if d.Request.Project != 0 || d.Request.Instances[CPU] <= 0 {
		t.Fatalf("request %+v, want project 0 asked for the idle CPU", d.Request)
	}
}

// serverFill is a server that sends whatever is asked (a stock BOINC
// server's plain check passes each job that could start at the
// request's delay): jobs of wall time w until the request's seconds and
// instances are covered. It returns the jobs' ends when each goes to the
// instance that frees first (list scheduling), given when each instance
// frees.
func serverFill(req Request, r Rsc, w float64, free []float64) []float64 {
	secs, inst := req.Secs[r], req.Instances[r]
	free = append([]float64(nil), free...)
	var ends []float64
	for (secs > 0 || inst > 0) && len(ends) < 1000 {
		k := 0
		for i := range free {
			if free[i] < free[k] {
				k = i
			}
		}
		free[k] += w
		ends = append(ends, free[k])
		secs -= w
		inst--
	}
	return ends
}

// The request-size rule: whatever a server that fills the request
// sends, each job is expected to end by its deadline. One project,
// jobs of 13,000 s at 80 % availability (16,250 s of wall time), two
// CPUs, one running a job of the project, the other idle or busy; the
// latency bound as a multiple of the 13,000 s ("slack", as in the
// policy study). The guard off, the request is the C++ client's:
// the whole shortfall.
func TestRequestSizeRule(t *testing.T) {
	const est, avail = 13000.0, 0.8
	w := est / avail
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	tests := []struct {
		name    string
		slack   float64
		left    []float64 // computing seconds left of the jobs queued, one per CPU in turn
		guard   float64
		buf     float64 // work_buf_min in days (0: 0.1 day + 0.25 day additional)
		jobs    int     // jobs the server sends for the request (-1: any)
		why     string  // reason when nothing is asked
		overrun bool    // some job ends after its deadline
	}{
		{name: "slack 3, a CPU idle: what fits, not the shortfall", slack: 3, left: []float64{10000}, jobs: 3},
		{name: "slack 2, C++ rules: the shortfall, the last jobs late", slack: 2, left: []float64{5000}, guard: DeadlineGuardOff, jobs: 4, overrun: true},
		{name: "slack 2, a CPU idle: one job for it and one behind", slack: 2, left: []float64{5000}, jobs: 2},
		{name: "slack 2, both busy, room behind one", slack: 2, left: []float64{3000, 12000}, jobs: 1},
		{name: "slack 2, both busy too long: nothing", slack: 2, left: []float64{6000, 12000}, why: WhyDeadlineTight},
		{name: "slack 1: no job can finish even started now", slack: 1, left: []float64{5000}, why: WhyCannotFinish},
		{name: "2.5-day bound, 2-day buffer: the whole shortfall fits", slack: 216000 / est, buf: 2, left: []float64{10000}, jobs: 21},
		{name: "2.5-day bound, 3-day buffer: what fits", slack: 216000 / est, buf: 3, left: []float64{10000}, jobs: 23},
		{name: "2.5-day bound, 3-day buffer, C++ rules: the shortfall, late", slack: 216000 / est, buf: 3, left: []float64{10000}, guard: DeadlineGuardOff, jobs: 32, overrun: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := p
			p.DeadlineGuard = tc.guard
			if tc.buf > 0 {
				p.BufMin, p.BufAdditional = tc.buf*86400, 0
			}
			L := tc.slack * est
			h := cpuHost(2)
			h.CPUAvail = avail
			projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
			var jobs []Job
			free := make([]float64, 2)
			for i, left := range tc.left {
				jobs = append(jobs, Job{Project: 0, Rsc: CPU, NCPUs: 1, Remaining: left, Received: at(-(est - left) / avail), Deadline: at(L - (est-left)/avail), Estimate: est, Runnable: true})
				free[i%2] += left / avail
			}
			var sim SimResult
			Simulate(t0, h, p, projects, jobs, nil, &sim)
			d := Choose(t0, h, p, projects, &sim, []float64{0})
			if tc.why != "" {
				if d.Request.Project >= 0 {
					t.Fatalf("asked %+v, want nothing (%s)", d.Request, tc.why)
				}
				if got := whyOf(d, 0, CPU); got != tc.why {
					t.Fatalf("why = %q, want %q", got, tc.why)
				}
				return
			}
			if d.Request.Project != 0 {
				t.Fatalf("request %+v (%+v), want project 0 asked", d.Request, d.NotFetching)
			}
			ends := serverFill(d.Request, CPU, w, free)
			if tc.jobs >= 0 && len(ends) != tc.jobs {
				t.Errorf("the server sends %d jobs for %+v, want %d", len(ends), d.Request, tc.jobs)
			}
			late := false
			for _, e := range ends {
				late = late || e > L
			}
			if late != tc.overrun {
				t.Errorf("jobs end at %v with deadline %v: late = %v, want %v", ends, L, late, tc.overrun)
			}
		})
	}
}

// A project of which nothing is queued for a resource is asked for one
// job (1 s and the instances) while the guard is on: its bound and job
// length are unknown, so no more can be shown to finish.
func TestRequestSizeUnknown(t *testing.T) {
	p := Prefs{BufMin: 8640, BufAdditional: 21600}
	h := cpuHost(2)
	projects := []Project{{Name: "a", Share: 100, State: ProjectState{DCF: 1}}}
	var sim SimResult
	Simulate(t0, h, p, projects, nil, nil, &sim)
	d := Choose(t0, h, p, projects, &sim, []float64{0})
	if d.Request.Project != 0 || d.Request.Secs[CPU] != 1 || d.Request.Instances[CPU] != 2 {
		t.Fatalf("request %+v, want 1 s and 2 instances", d.Request)
	}
	p.DeadlineGuard = DeadlineGuardOff
	Simulate(t0, h, p, projects, nil, nil, &sim)
	if d := Choose(t0, h, p, projects, &sim, []float64{0}); d.Request.Secs[CPU] != 2*(8640+21600) {
		t.Fatalf("guard off: request %+v, want the whole shortfall", d.Request)
	}
}
