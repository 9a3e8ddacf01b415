package sim

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/taskrunner/schedule"
	"github.com/boincd/boincd/workfetch"
)

func TestVariantsByName(t *testing.T) {
	for _, tc := range []struct {
		policy, sched, fetch string
	}{
		{"rec", "core", "core"},
		{"debt", "cs1", "core"},
		{"debt", "core", "wf1"},
		{"rec", "cs1", "wf1"},
	} {
		t.Run(tc.policy+"/"+tc.sched+"/"+tc.fetch, func(t *testing.T) {
			run := func() (*Report, []byte) {
				pol, err := PolicyByName(tc.policy)
				if err != nil {
					t.Fatal(err)
				}
				sch, err := SchedulerByName(tc.sched)
				if err != nil {
					t.Fatal(err)
				}
				fet, err := FetcherByName(tc.fetch)
				if err != nil {
					t.Fatal(err)
				}
				sc, err := LoadScenario(filepath.Join("scenarios", "five_projects.toml"))
				if err != nil {
					t.Fatal(err)
				}
				sc.DurationDays = 3
				rep, err := Run(context.Background(), sc, Options{Policy: pol, Scheduler: sch, Fetcher: fet, BucketSeconds: 86400})
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				if err := rep.WriteJSON(&b); err != nil {
					t.Fatal(err)
				}
				return rep, b.Bytes()
			}
			rep, a := run()
			if _, b := run(); !bytes.Equal(a, b) {
				t.Fatal("two runs with the same seed gave different reports")
			}
			if rep.Policy != tc.policy || rep.Scheduler != tc.sched || rep.Fetcher != tc.fetch {
				t.Fatalf("report names %s/%s/%s, want %s/%s/%s", rep.Policy, rep.Scheduler, rep.Fetcher, tc.policy, tc.sched, tc.fetch)
			}
			if rep.Metrics.Jobs == 0 || rep.Metrics.FlopsUsed <= 0 {
				t.Fatalf("nothing ran: %+v", rep.Metrics)
			}
		})
	}
	for _, bad := range []func() error{
		func() error { _, err := PolicyByName("nope"); return err },
		func() error { _, err := SchedulerByName("nope"); return err },
		func() error { _, err := FetcherByName("nope"); return err },
	} {
		if bad() == nil {
			t.Error("an unknown variant name was accepted")
		}
	}
}

func TestRECPriorityOrder(t *testing.T) {
	tests := []struct {
		name   string
		shares []float64
		rec    []float64
		susp   []bool
		want   []float64
	}{
		{
			// rec_sum 5, rs_sum 500: A −0.2/0.2, B −0.4/0.6, C 0, D zero share.
			name:   "shares and zero share",
			shares: []float64{100, 300, 100, 0},
			rec:    []float64{1, 2, 0, 2},
			want:   []float64{-1, -2.0 / 3, 0, -1000 - 0.4},
		},
		{
			name:   "no recent credit: rec_sum counts as 1",
			shares: []float64{1, 3},
			rec:    []float64{0, 0},
			want:   []float64{0, 0},
		},
		{
			// The suspended project is out of both sums.
			name:   "suspended project excluded from sums",
			shares: []float64{100, 100, 100},
			rec:    []float64{1, 1, 6},
			susp:   []bool{false, false, true},
			want:   []float64{-1, -1, -6},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			projects := make([]workfetch.Project, len(tc.shares))
			for i := range projects {
				projects[i].Share = tc.shares[i]
				if tc.susp != nil {
					projects[i].Suspended = tc.susp[i]
					if tc.susp[i] {
						projects[i].NoFetch = "suspended"
					}
				}
			}
			r := NewRECPolicy()
			r.rec = append([]float64(nil), tc.rec...)
			got := r.Priorities(projects, workfetch.Host{Instances: [workfetch.NumRsc]float64{2}}, nil, nil)
			for i := range tc.want {
				if math.Abs(got[i]-tc.want[i]) > 1e-12 {
					t.Fatalf("priorities %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestRECObserveAndCharge(t *testing.T) {
	h := workfetch.Host{
		Instances: [workfetch.NumRsc]float64{2, 1},
		RelSpeed:  [workfetch.NumRsc]float64{1, 5},
	}
	projects := make([]workfetch.Project, 2)
	projects[0].Share, projects[1].Share = 1, 1
	r := NewRECPolicy()
	now := epoch
	// One minute: project 0 uses both CPUs, project 1 the GPU (5 CPUs' worth).
	now = now.Add(time.Minute)
	r.Observe(now, h, projects, [][workfetch.NumRsc]float64{{120}, {0, 60}}, 60)
	if got := r.REC(1) / r.REC(0); math.Abs(got-2.5) > 1e-9 {
		t.Fatalf("REC ratio %v, want 2.5 (speed-weighted)", got)
	}
	prio := r.Priorities(projects, h, nil, nil)
	if !(prio[0] > prio[1]) {
		t.Fatalf("priorities %v: the project with less recent credit must come first", prio)
	}
	// A half-life later with no use, REC has halved.
	before := r.REC(0)
	now = now.Add(time.Duration(RECHalfLife * 1e9))
	r.Observe(now, h, projects, [][workfetch.NumRsc]float64{{}, {}}, RECHalfLife)
	if got := r.REC(0) / before; math.Abs(got-0.5) > 1e-9 {
		t.Fatalf("REC decayed to %v of its value after one half-life, want 0.5", got)
	}
	if got, want := r.Charge(h), 1/(24*7.0); math.Abs(got-want) > 1e-15 {
		t.Fatalf("Charge %v, want %v", got, want)
	}
}

func TestCS1IgnoresDeadlines(t *testing.T) {
	now := epoch
	in := schedule.Input{
		Now:      now,
		Host:     workfetch.Host{Instances: [workfetch.NumRsc]float64{1}},
		Priority: []float64{10, 0},
		Shares:   []float64{1, 1},
		Tasks: []schedule.Task{
			{Project: 0, Rsc: workfetch.CPU, NCPUs: 1, Deadline: now.Add(48 * time.Hour), Order: 0},
			{Project: 1, Rsc: workfetch.CPU, NCPUs: 1, Deadline: now.Add(time.Hour), MissesDeadline: true, Order: 1},
		},
	}
	var core, cs1 schedule.Decision
	in2 := in
	in2.Tasks = append([]schedule.Task(nil), in.Tasks...)
	(&CoreScheduler{}).Schedule(&in, &core)
	(&CS1Scheduler{}).Schedule(&in2, &cs1)
	if len(core.Run) != 1 || core.Run[0].Task != 1 {
		t.Fatalf("core ran %+v, want the deadline-missing task 1", core.Run)
	}
	if len(cs1.Run) != 1 || cs1.Run[0].Task != 0 || cs1.Run[0].EDF {
		t.Fatalf("cs1 ran %+v, want the higher-priority task 0, not EDF", cs1.Run)
	}
}

func TestWF1Choose(t *testing.T) {
	h := workfetch.Host{Instances: [workfetch.NumRsc]float64{2}}
	p := workfetch.Prefs{BufMin: 1000, BufAdditional: 4000} // buffer 10000 CPU-s
	tests := []struct {
		name    string
		shares  []float64
		queues  []float64
		noFetch []string
		want    int
		secs    float64
	}{
		{"furthest below its part", []float64{100, 300}, []float64{2000, 3000}, nil, 1, 7500 - 3000},
		{"every part full", []float64{100, 100}, []float64{6000, 5000}, nil, -1, 0},
		{"an empty small project still fetches", []float64{100, 900}, []float64{0, 20000}, nil, 0, 1000},
		{"tie: larger deficit", []float64{100, 300}, []float64{0, 0}, nil, 1, 7500},
		{"NoFetch skipped", []float64{100, 100}, []float64{0, 1000}, []string{"suspended", ""}, 1, 4000},
		{"zero share never asked", []float64{0, 100}, []float64{0, 1000}, nil, 1, 9000},
		{"starved project not fetchable", []float64{100, 100}, []float64{0, 6000}, []string{"backoff", ""}, -1, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			projects := make([]workfetch.Project, len(tc.shares))
			res := &workfetch.SimResult{Projects: make([]workfetch.ProjSim, len(tc.shares))}
			for i := range projects {
				projects[i].Share = tc.shares[i]
				if tc.noFetch != nil {
					projects[i].NoFetch = tc.noFetch[i]
				}
				res.Projects[i].Queue[workfetch.CPU] = tc.queues[i]
			}
			d := WF1Fetcher{}.Choose(epoch, h, p, projects, res, nil)
			if d.Request.Project != tc.want || math.Abs(d.Request.Secs[workfetch.CPU]-tc.secs) > 1e-9 {
				t.Fatalf("asked project %d for %v s, want %d for %v s", d.Request.Project, d.Request.Secs[workfetch.CPU], tc.want, tc.secs)
			}
			wantNF := len(projects)
			if tc.want >= 0 {
				wantNF--
			}
			if len(d.NotFetching) != wantNF {
				t.Fatalf("%d not-fetching reasons, want %d: %+v", len(d.NotFetching), wantNF, d.NotFetching)
			}
		})
	}
}
