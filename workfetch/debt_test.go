package workfetch

import (
	"math"
	"testing"
	"time"
)

func TestDebtEligible(t *testing.T) {
	backed := Backoff{Interval: 600, Until: at(100)}
	atMax := Backoff{Interval: BackoffMax, Until: at(-1)}
	tests := []struct {
		name     string
		p        Project
		runnable bool
		want     bool
	}{
		{"plain", Project{Share: 1}, false, true},
		{"suspended, even with jobs", Project{Suspended: true}, true, false},
		{"runnable jobs override no new tasks", Project{NoNewTasks: true}, true, true},
		{"runnable jobs override backoff", Project{State: ProjectState{Backoff: [NumRsc]Backoff{CPU: backed}}}, true, true},
		{"no new tasks", Project{NoNewTasks: true}, false, false},
		{"no apps for it", Project{NoRsc: [NumRsc]bool{CPU: true}}, false, false},
		{"backed off", Project{State: ProjectState{Backoff: [NumRsc]Backoff{CPU: backed}}}, false, false},
		{"max backoff near zero debt", Project{State: ProjectState{Backoff: [NumRsc]Backoff{CPU: atMax}, Debt: [NumRsc]float64{CPU: -10}}}, false, false},
		{"max backoff with real debt", Project{State: ProjectState{Backoff: [NumRsc]Backoff{CPU: atMax}, Debt: [NumRsc]float64{CPU: -100}}}, false, true},
		{"RPC backoff", Project{InRPCBackoff: true}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := debtEligible(&tc.p, CPU, tc.runnable, t0); got != tc.want {
				t.Errorf("eligible = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUpdateDebts(t *testing.T) {
	h := cpuHost(4)
	tests := []struct {
		name     string
		projects []Project
		jobs     []Job
		used     [][NumRsc]float64
		want     []float64
	}{
		{
			// A ran on all 4 CPUs for 60 s: each was owed 120 instance-s;
			// per instance A loses 30, B gains 30; the max becomes 0.
			name:     "equal shares, A used everything",
			projects: []Project{{Share: 1}, {Share: 1}},
			jobs:     []Job{cpuJob(0, 100), cpuJob(1, 100)},
			used:     [][NumRsc]float64{{CPU: 240}, {}},
			want:     []float64{-60, 0},
		},
		{
			// Deltas −10, +15, −5 sum to zero; then +10 brings the max to 0.
			name:     "net change zero over eligible, then max 0",
			projects: []Project{{Share: 1}, {Share: 1, State: ProjectState{Debt: [NumRsc]float64{CPU: -50}}}, {Share: 2, State: ProjectState{Debt: [NumRsc]float64{CPU: -80}}}},
			jobs:     []Job{cpuJob(0, 1), cpuJob(1, 1), cpuJob(2, 1)},
			used:     [][NumRsc]float64{{CPU: 100}, {}, {CPU: 140}},
			want:     []float64{0, -25, -75},
		},
		{
			// C is suspended: a negative offset does not touch it.
			name: "ineligible project keeps its debt",
			projects: []Project{{Share: 1}, {Share: 1},
				{Share: 1, Suspended: true, State: ProjectState{Debt: [NumRsc]float64{CPU: -100}}}},
			jobs: []Job{cpuJob(0, 1), cpuJob(1, 1)},
			used: [][NumRsc]float64{{CPU: 240}, {}},
			want: []float64{-60, 0, -100},
		},
		{
			// Everyone below zero (the top project left): all rise to max 0.
			name: "positive offset raises ineligible too",
			projects: []Project{{Share: 1, State: ProjectState{Debt: [NumRsc]float64{CPU: -40}}},
				{Share: 1, Suspended: true, State: ProjectState{Debt: [NumRsc]float64{CPU: -100}}}},
			jobs: []Job{cpuJob(0, 1)},
			used: [][NumRsc]float64{{CPU: 240}},
			want: []float64{0, -60},
		},
		{
			// B has no jobs but may fetch: eligible, so it accrues.
			name:     "idle eligible project accrues",
			projects: []Project{{Share: 1}, {Share: 1}},
			jobs:     []Job{cpuJob(0, 1)},
			used:     [][NumRsc]float64{{CPU: 240}},
			want:     []float64{-60, 0},
		},
		{
			// B has no jobs and no new tasks: not eligible; A alone owes nothing.
			name:     "ineligible idle project does not accrue",
			projects: []Project{{Share: 1}, {Share: 1, NoNewTasks: true}},
			jobs:     []Job{cpuJob(0, 1)},
			used:     [][NumRsc]float64{{CPU: 240}},
			want:     []float64{0, 0},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			UpdateDebts(t0, h, tc.projects, tc.jobs, tc.used, 60)
			for i, w := range tc.want {
				if got := tc.projects[i].State.Debt[CPU]; !near(got, w) {
					t.Errorf("debt[%d] = %v, want %v", i, got, w)
				}
			}
		})
	}
}

func TestDebtPolicy(t *testing.T) {
	h := Host{Instances: [NumRsc]float64{CPU: 4, NVIDIA: 2}, RelSpeed: [NumRsc]float64{CPU: 1, NVIDIA: 10}}
	projects := []Project{
		{State: ProjectState{Debt: [NumRsc]float64{CPU: -100, NVIDIA: -10, AMD: -1e9}}},
		{},
	}
	sim := &SimResult{Projects: []ProjSim{{Queue: [NumRsc]float64{CPU: 400, NVIDIA: 40}}, {}}}
	var pol Policy = DebtPolicy{}
	got := pol.Priorities(projects, h, sim, nil)
	// CPU: −100 − 400/4 = −200; NVIDIA: 10 × (−10 − 40/2) = −300; AMD absent.
	if len(got) != 2 || !near(got[0], -500) || got[1] != 0 {
		t.Errorf("priorities %v", got)
	}
	if pol.Name() != "debt" {
		t.Errorf("name %q", pol.Name())
	}
}

// The design's Example 1 at its target split: A can use only the GPU, B
// the CPU and the GPU, the GPU is twice as fast. With A on 75 % of the GPU
// and B on the CPU and 25 % of the GPU, both got 1.5 CPU-equivalents per
// second, so no debt moves; any other split moves debt towards it.
func TestCrossResourceDebtExample1(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	var h Host
	h.Instances[CPU], h.Instances[NVIDIA] = 1, 1
	h.RelSpeed[CPU], h.RelSpeed[NVIDIA] = 1, 2
	mk := func() []Project {
		a := Project{Name: "A", Share: 100}
		a.NoRsc[CPU] = true
		return []Project{a, {Name: "B", Share: 100}}
	}
	jobs := []Job{
		{Project: 0, Rsc: NVIDIA, NGPUs: 1, Runnable: true},
		{Project: 1, Rsc: CPU, NCPUs: 1, Runnable: true},
		{Project: 1, Rsc: NVIDIA, NGPUs: 1, Runnable: true},
	}
	tests := []struct {
		gpuA    float64
		wantDir float64 // sign of A's GPU debt change
	}{{0.75, 0}, {0.5, 1}, {0.9, -1}}
	for _, tt := range tests {
		ps := mk()
		used := [][NumRsc]float64{{NVIDIA: 60 * tt.gpuA}, {CPU: 60, NVIDIA: 60 * (1 - tt.gpuA)}}
		UpdateDebts(now, h, ps, jobs, used, 60)
		gap := ps[0].State.Debt[NVIDIA] - ps[1].State.Debt[NVIDIA]
		switch {
		case tt.wantDir == 0 && math.Abs(gap) > 1e-9:
			t.Errorf("A on %.0f%% of the GPU: debts moved apart by %g", 100*tt.gpuA, gap)
		case tt.wantDir > 0 && gap <= 0, tt.wantDir < 0 && gap >= 0:
			t.Errorf("A on %.0f%% of the GPU: A-B GPU debt gap %g has the wrong sign", 100*tt.gpuA, gap)
		}
		if ps[1].State.Debt[CPU] != 0 {
			t.Errorf("B alone on the CPU accrued CPU debt %g", ps[1].State.Debt[CPU])
		}
	}
}
