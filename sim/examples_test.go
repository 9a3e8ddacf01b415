package sim

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/boincd/boincd/workfetch"
)

// runFile runs a shipped scenario with an hourly timeline.
func runFile(t testing.TB, name string) *Report {
	t.Helper()
	sc, err := LoadScenario(filepath.Join("scenarios", name))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), sc, Options{BucketSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// windowShare is the percentage of resource r's instance-seconds that
// project `proj` got over [fromDays, toDays).
func windowShare(rep *Report, proj int, r workfetch.Rsc, fromDays, toDays float64) float64 {
	ri := -1
	for i, name := range rep.Resources {
		if name == r.String() {
			ri = i
		}
	}
	if ri < 0 {
		return 0
	}
	var mine, all float64
	for _, b := range rep.Timeline {
		if b.StartDays < fromDays-1e-9 || b.StartDays >= toDays-1e-9 {
			continue
		}
		for p := range b.InstanceSeconds {
			all += b.InstanceSeconds[p][ri]
			if p == proj {
				mine += b.InstanceSeconds[p][ri]
			}
		}
	}
	return pct(mine, all)
}

func projectIndex(t testing.TB, rep *Report, name string) int {
	t.Helper()
	for i, p := range rep.Projects {
		if p.Name == name {
			return i
		}
	}
	t.Fatalf("no project %q in the report", name)
	return -1
}

func rscIndex(t testing.TB, rep *Report, r workfetch.Rsc) int {
	t.Helper()
	for i, name := range rep.Resources {
		if name == r.String() {
			return i
		}
	}
	t.Fatalf("no resource %s in the report", r)
	return -1
}

// The design document's examples ("Work fetch and GPUs", Examples 1-3,
// plus a GPU-less server), run through the emulator with equal shares.
// Each expectation is a project's share of one resource over a window of
// simulated days, with a tolerance in percentage points. Durations are
// scaled down (a "year" becomes 10-20 days): what matters is the debt
// dynamics, which scale with the durations.
func TestDesignExamples(t *testing.T) {
	type want struct {
		project          string
		rsc              workfetch.Rsc
		fromDays, toDays float64
		pct, tol         float64
		why              string
	}
	tests := []struct {
		file  string
		wants []want
	}{
		{
			file: "example1_gpu_cpu.toml",
			wants: []want{
				// The first days are the debts settling; measure after.
				{"B", workfetch.CPU, 5, 20, 100, 2, "only B has CPU jobs"},
				{"A", workfetch.NVIDIA, 5, 20, 75, 10, "A gets 0.75×2 = 1.5 units, as much as B's CPU (1) plus 0.25×2"},
				{"B", workfetch.NVIDIA, 5, 20, 25, 10, "B's CPU time counts toward its total, so it gets less GPU"},
			},
		},
		{
			file: "example2_long_edf.toml",
			wants: []want{
				{"A", workfetch.CPU, 1, 19, 100, 5, "A's 20-day job has no slack: EDF runs it alone"},
				// A's job ends at about day 20; B is then owed the CPU for as
				// long again. Measure the next 16 days (leaving room for the
				// job's arrival time and the last debt crossover).
				{"B", workfetch.CPU, 21, 37, 100, 10, "B is repaid A's EDF time: it gets the CPU though A has work again"},
			},
		},
		{
			file: "example2b_attach_c.toml",
			wants: []want{
				// C attaches at day 20.1, about when A's job ends. Over the
				// next days B and C alternate by debt.
				{"C", workfetch.CPU, 21, 30, 50, 10, "C starts level with B (the highest debt is 0) and shares 50/50"},
				{"B", workfetch.CPU, 21, 30, 50, 10, "B gets no catch-up over C, though A owes B"},
			},
		},
		{
			file: "example3_gpu_app_later.toml",
			wants: []want{
				{"A", workfetch.NVIDIA, 1, 10, 100, 1, "only A has GPU jobs for the first 10 days"},
				// B's GPU app appears at day 10; B is asked again when its
				// NVIDIA backoff expires (with seeds 1-8 it first ran
				// between days 10.1 and 11.1). From then on it shares
				// evenly: no catch-up burst for the days it had no GPU app.
				{"B", workfetch.NVIDIA, 10.5, 16, 50, 10, "B shares 50/50 at once: no debt piled up while it had no GPU app"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			rep := runFile(t, tc.file)
			for _, w := range tc.wants {
				got := windowShare(rep, projectIndex(t, rep, w.project), w.rsc, w.fromDays, w.toDays)
				if got < w.pct-w.tol || got > w.pct+w.tol {
					t.Errorf("%s's share of %s over days [%g, %g) = %.1f%%, want %g ± %g (%s)", w.project, w.rsc, w.fromDays, w.toDays, got, w.pct, w.tol, w.why)
				} else {
					t.Logf("%s's share of %s over days [%g, %g) = %.1f%% (want %g ± %g)", w.project, w.rsc, w.fromDays, w.toDays, got, w.pct, w.tol)
				}
			}
		})
	}
}

// A server that never has GPU work: the project is backed off for NVIDIA
// only, and its CPU work keeps flowing.
func TestExampleNoGPUWork(t *testing.T) {
	rep := runFile(t, "example4_no_gpu_work.toml")
	p := rep.Projects[projectIndex(t, rep, "cpuonly")]
	cpu, gpu := p.Rsc[rscIndex(t, rep, workfetch.CPU)], p.Rsc[rscIndex(t, rep, workfetch.NVIDIA)]
	if gpu.JobsReceived != 0 {
		t.Fatalf("NVIDIA jobs received = %d, the server has none", gpu.JobsReceived)
	}
	if gpu.Requests < 2 {
		t.Errorf("NVIDIA asked %d times, want at least 2 (the idle GPU is asked for)", gpu.Requests)
	}
	// 600 s doubled up to a day: over 10 days it must have grown well past
	// the first step.
	if gpu.MaxBackoff < 4*600 {
		t.Errorf("NVIDIA max backoff interval = %g s, want it to grow past %d s", gpu.MaxBackoff, 4*600)
	}
	if cpu.MaxBackoff != 0 || cpu.BackoffInterval != 0 {
		t.Errorf("CPU backoff interval = %g (max %g), want 0: CPU requests always bring jobs", cpu.BackoffInterval, cpu.MaxBackoff)
	}
	if cpu.JobsReceived < 100 {
		t.Errorf("CPU jobs received = %d, want the CPU queue kept full (≥ 100 over 10 days)", cpu.JobsReceived)
	}
	// CPU processing continues to the end: the last two days are busy.
	if got := windowShare(rep, 0, workfetch.CPU, 8, 10); got < 99 {
		t.Errorf("cpuonly's CPU share over days 8-10 = %.1f%%, want ~100", got)
	}
	busy := rep.PerResource[rscIndex(t, rep, workfetch.CPU)].Pct
	if busy < 95 {
		t.Errorf("CPU busy %.1f%% of the time, want ≥ 95%%", busy)
	}
	t.Logf("NVIDIA: asked %d times, max backoff %g s; CPU: %d jobs, busy %.1f%%", gpu.Requests, gpu.MaxBackoff, cpu.JobsReceived, busy)
}
