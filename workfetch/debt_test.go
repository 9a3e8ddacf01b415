package workfetch

import "testing"

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
