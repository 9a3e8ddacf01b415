package sim

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// TestRECPolicyClock feeds RECPolicy a fake clock: each case is a series
// of steps (when, instance-seconds per project) and the RECs and
// priorities it must end with.
func TestRECPolicyClock(t *testing.T) {
	type step struct {
		at   time.Duration // after epoch
		used [][workfetch.NumRsc]float64
		dt   float64
	}
	min1 := func(cpu ...float64) [][workfetch.NumRsc]float64 {
		u := make([][workfetch.NumRsc]float64, len(cpu))
		for i, x := range cpu {
			u[i][workfetch.CPU] = x
		}
		return u
	}
	w60 := math.Exp(-60 * math.Ln2 / RECHalfLife)
	perDay := func(secs, d float64) float64 { return secs / (d / 86400) }
	hl := time.Duration(RECHalfLife * 1e9)
	tests := []struct {
		name   string
		shares []float64
		steps  []step
		rec    []float64
		prio   []float64
	}{
		{
			name:   "nothing ran: every project at 0",
			shares: []float64{100, 100},
			steps:  []step{{time.Minute, min1(0, 0), 60}},
			rec:    []float64{0, 0},
			prio:   []float64{0, 0},
		},
		{
			name:   "one minute on one CPU",
			shares: []float64{100, 100},
			steps:  []step{{time.Minute, min1(60, 0), 60}},
			rec:    []float64{(1 - w60) * perDay(60, 60), 0},
			prio:   []float64{-2, 0},
		},
		{
			name:   "a half-life later it has halved",
			shares: []float64{100, 100},
			steps:  []step{{time.Minute, min1(60, 0), 60}, {time.Minute + hl, min1(0, 0), RECHalfLife}},
			rec:    []float64{(1 - w60) * perDay(60, 60) / 2, 0},
			prio:   []float64{-2, 0},
		},
		{
			name:   "equal use, shares 1:3",
			shares: []float64{100, 300},
			steps:  []step{{time.Minute, min1(60, 60), 60}},
			rec:    []float64{(1 - w60) * perDay(60, 60), (1 - w60) * perDay(60, 60)},
			// rec_frac 1/2 each; rs_frac 1/4 and 3/4.
			prio: []float64{-2, -2.0 / 3},
		},
		{
			name:   "use in proportion to the shares: both at -1",
			shares: []float64{100, 300},
			steps:  []step{{time.Minute, min1(30, 90), 60}, {2 * time.Minute, min1(30, 90), 60}},
			rec:    []float64{(1 - w60*w60) * perDay(30, 60), (1 - w60*w60) * perDay(90, 60)},
			prio:   []float64{-1, -1},
		},
		{
			name:   "backup project last",
			shares: []float64{100, 0},
			steps:  []step{{time.Minute, min1(60, 60), 60}},
			rec:    []float64{(1 - w60) * perDay(60, 60), (1 - w60) * perDay(60, 60)},
			// rec_frac 1/2; the backup's share is out of rs_sum.
			prio: []float64{-0.5, -1000.5},
		},
	}
	h := workfetch.Host{Instances: [workfetch.NumRsc]float64{workfetch.CPU: 2}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			projects := make([]workfetch.Project, len(tc.shares))
			for i := range projects {
				projects[i].Share = tc.shares[i]
			}
			r := NewRECPolicy()
			for _, s := range tc.steps {
				r.Observe(epoch.Add(s.at), h, projects, s.used, s.dt)
			}
			for i, want := range tc.rec {
				if got := r.REC(i); math.Abs(got-want) > 1e-9*math.Max(1, want) {
					t.Errorf("REC(%d) = %.12g, want %.12g", i, got, want)
				}
			}
			prio := r.Priorities(projects, h, nil, nil)
			for i, want := range tc.prio {
				if math.Abs(prio[i]-want) > 1e-9 {
					t.Errorf("priorities %v, want %v", prio, tc.prio)
					break
				}
			}
			if got, want := r.Charge(h), 1.0/48; math.Abs(got-want) > 1e-15 {
				t.Errorf("Charge %g, want %g (1/24 of one CPU of two)", got, want)
			}
		})
	}
}

// TestRECFetcher: the C++ client's REC-era request, case by case.
func TestRECFetcher(t *testing.T) {
	h := workfetch.Host{Instances: [workfetch.NumRsc]float64{workfetch.CPU: 2}}
	prefs := workfetch.Prefs{BufMin: 0.1 * 86400, BufAdditional: 0.25 * 86400}
	now := epoch
	type proj struct {
		share, rec, queue float64
		noFetch           string
		backedOff         bool
	}
	tests := []struct {
		name      string
		projs     []proj
		saturated float64 // CPU saturated time
		idle      float64
		want      int     // project asked, -1 none
		secs      float64 // its CPU request
		inst      float64
	}{
		{
			name:  "buffer above the low mark: nobody (hysteresis)",
			projs: []proj{{share: 100}, {share: 100}}, saturated: 0.2 * 86400,
			want: -1,
		},
		{
			name:  "least recent credit asked for the whole shortfall",
			projs: []proj{{share: 100, rec: 2}, {share: 100, rec: 1}}, saturated: 3600,
			want: 1, secs: 10000, inst: 1,
		},
		{
			name:  "queued work lowers the fetch priority",
			projs: []proj{{share: 100, rec: 2}, {share: 100, rec: 1, queue: 2 * 30240}}, saturated: 3600,
			want: 0, secs: 10000, inst: 1,
		},
		{
			name:  "a backed-off or unreachable project is passed over",
			projs: []proj{{share: 100, rec: 9, noFetch: "project RPC backoff"}, {share: 100, rec: 9, backedOff: true}, {share: 100, rec: 10}}, saturated: 0,
			// The only project that may fetch: its fetchable share is 1.
			idle: 1, want: 2, secs: 10000, inst: 2,
		},
		{
			name:  "a backup project only for an idle instance",
			projs: []proj{{share: 0}}, saturated: 0, idle: 2,
			want: 0, secs: 1, inst: 1,
		},
		{
			name:  "a backup project never to top up",
			projs: []proj{{share: 0}}, saturated: 3600,
			want: -1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			projects := make([]workfetch.Project, len(tc.projs))
			r := NewRECPolicy()
			res := &workfetch.SimResult{Projects: make([]workfetch.ProjSim, len(tc.projs))}
			res.Rsc[workfetch.CPU] = workfetch.RscSim{Shortfall: 10000, SaturatedTime: tc.saturated, NIdleNow: tc.idle}
			for i, p := range tc.projs {
				projects[i].Name = fmt.Sprint("p", i)
				projects[i].Share = p.share
				projects[i].NoFetch = p.noFetch
				if p.backedOff {
					projects[i].State.Backoff[workfetch.CPU].Until = now.Add(time.Hour)
				}
				r.rec = append(r.rec, p.rec)
				res.Projects[i].Queue[workfetch.CPU] = p.queue
			}
			prio := r.Priorities(projects, h, res, nil)
			d := r.Fetcher().Choose(now, h, prefs, projects, res, prio)
			if d.Request.Project != tc.want {
				t.Fatalf("asked project %d (%s), want %d", d.Request.Project, d.Request.Reason, tc.want)
			}
			if tc.want >= 0 && (d.Request.Secs[workfetch.CPU] != tc.secs || d.Request.Instances[workfetch.CPU] != tc.inst) {
				t.Errorf("request %v s, %v instances; want %v s, %v", d.Request.Secs[workfetch.CPU], d.Request.Instances[workfetch.CPU], tc.secs, tc.inst)
			}
		})
	}
}

// recMix is the policy study's project mix (sim/study mix) at m
// projects: project i has i× the base job size, latency bound and share.
func recMix(m int, priority, fetch string) *Scenario {
	sc := &Scenario{
		DurationDays: 100,
		StepSeconds:  60,
		Seed:         1,
		Host: HostSpec{
			CPUs: 2, CPUFlops: 1e9,
			Availability: &AvailabilitySpec{OnMeanS: 1000, OffMeanS: 250},
		},
		Prefs:    PrefsSpec{WorkBufMinDays: 0.1, WorkBufAdditionalDays: 0.25, CPUSchedulingPeriodMinutes: 60},
		Policies: PoliciesSpec{Priority: priority, CPUSched: "cs2", WorkFetch: fetch, WorkSend: WorkSendWS2, Estimate: EstimateJC2},
	}
	for i := 1; i <= m; i++ {
		f := float64(i)
		sc.Projects = append(sc.Projects, ProjectSpec{
			Name: fmt.Sprint("p", i), Share: 100 * f, LatencyBoundDays: 9 * f,
			Apps: []AppSpec{{Resource: "CPU", FlopsMean: 1.3e13 * f}},
		})
	}
	return sc
}

// TestRECMonotonyMatchesBOINC: on the study's 5-project mix (100 days,
// seed 1), priority "rec" — REC priority with the C++ client's fetch —
// mixes projects as BOINC's own emulator does (monotony 0.58 there,
// issue 19; boincd's debts 0.56), not as REC priority under boincd's
// share-of-shortfall fetch does (0.18).
func TestRECMonotonyMatchesBOINC(t *testing.T) {
	if testing.Short() {
		t.Skip("100 simulated days")
	}
	rep, err := Run(context.Background(), recMix(5, "rec", ""), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Fetcher != "rec" {
		t.Errorf("fetch %q, want the REC policy's own (rec)", rep.Fetcher)
	}
	m := rep.Metrics
	if m.Monotony < 0.50 || m.Monotony > 0.65 {
		t.Errorf("monotony %.4f, want 0.50..0.65 (BOINC's emulator: 0.58)", m.Monotony)
	}
	if m.ShareViolation > 0.02 || m.IdleFraction > 0.005 || m.WastedFraction > 0 {
		t.Errorf("share violation %.4f, idle %.4f, waste %.4f: want ≤ 0.02, ≤ 0.005, 0", m.ShareViolation, m.IdleFraction, m.WastedFraction)
	}
}
