package study

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/sim"
)

// The quick subset of the study: every experiment at two points, two
// seeds, 25 days. It checks the files and the results the study's
// conclusions rest on.
func TestQuickStudy(t *testing.T) {
	exps := Experiments(true)
	if len(exps) != 6 {
		t.Fatalf("%d experiments, want 6", len(exps))
	}
	res, err := Run(context.Background(), exps, Config{Seeds: 2, Days: 25})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i := range res {
		files, err := res[i].Write(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := 1 + len(exps[i].Metrics); len(files) != want {
			t.Fatalf("%s: %d files, want %d", exps[i].ID, len(files), want)
		}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil || st.Size() == 0 {
				t.Fatalf("%s: %v (size %d)", f, err, st.Size())
			}
		}
		data, _ := os.ReadFile(filepath.Join(dir, exps[i].ID+".csv"))
		rows, err := csv.NewReader(bytes.NewReader(data)).ReadAll()
		if err != nil {
			t.Fatalf("%s.csv: %v", exps[i].ID, err)
		}
		if want := 1 + len(exps[i].Series)*len(exps[i].X); len(rows) != want {
			t.Fatalf("%s.csv: %d rows, want %d", exps[i].ID, len(rows), want)
		}
	}
	get := func(exp int, series string, x float64, m Metric) float64 {
		t.Helper()
		p, ok := res[exp].Lookup(series, x)
		if !ok {
			t.Fatalf("%s: no point %s at %g", exps[exp].ID, series, x)
		}
		return p.Stats[m].Mean
	}
	// Slack 1 under WS2: the server can send nothing, the host idles.
	if idle := get(1, "CS2-WF2-WS2-JC2", 1, Idle); idle < 0.99 {
		t.Errorf("slack 1: idle %.3f, want ~1", idle)
	}
	// WS2 keeps the 3-day bound far less wasteful than WS1.
	if ws1, ws2 := get(4, "WS1, 3-day bound", 1, Waste), get(4, "WS2, 3-day bound", 1, Waste); !(ws2 < ws1) {
		t.Errorf("3-day bound: WS2 waste %.3f not below WS1's %.3f", ws2, ws1)
	}
	// Estimates 10× too small: DCF (JC2) brings the RPC rate back.
	if jc1, jc2 := get(5, "JC1", 10, RPCsPerJob), get(5, "JC2", 10, RPCsPerJob); !(jc2 > jc1) {
		t.Errorf("f = 10: JC2 RPCs per job %.3f not above JC1's %.3f", jc2, jc1)
	}
}

// The guard that became boincd's default wastes less at low slack and
// is no worse at the baseline.
func TestCompareQuick(t *testing.T) {
	cmp, err := Compare(context.Background(), Suite(true), []Variant{Before, After}, Config{Seeds: 2, Days: 25})
	if err != nil {
		t.Fatal(err)
	}
	for ci, c := range cmp.Cases {
		b, a := cmp.Stats[ci][0], cmp.Stats[ci][1]
		// The target cases, two-day connection windows among them,
		// see few events in 25 days: held within noise there.
		if _, bad := cmp.Worse(ci, 0, 1, Waste); a[Waste].Mean > b[Waste].Mean+Margin && (!c.Target || bad) {
			t.Errorf("%s %s: waste %.4f → %.4f", c.Server, c.Name, b[Waste].Mean, a[Waste].Mean)
		}
		if c.Name == "slack 2" && !(a[Waste].Mean < b[Waste].Mean) {
			t.Errorf("slack 2: waste %.4f → %.4f, want lower", b[Waste].Mean, a[Waste].Mean)
		}
	}
	var md strings.Builder
	if err := cmp.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| slack 2 |") || !strings.Contains(md.String(), "within the 0.01 margin") {
		t.Errorf("markdown:\n%s", md.String())
	}
}

// The deadline guard's targets under the stock BOINC server's plain
// check (delay + run time within the bound, so it fills whatever is
// asked): against the C++ client's rules (wf2-noguard), no metric worse
// beyond noise (Comparison.Worse) and the score lower, waste cut where the C++
// rules waste. Slack 1 is exempt from idle's rule (issue 30, Case.Infeasible):
// no job can finish in time (a 3.6-hour job at 80 % availability against a
// 3.6-hour bound), so waste + idle ≈ 1 for any policy, and the guard turns
// half of the waste into idleness; what holds there is waste + idle no
// worse (Comparison.LostWorse) and waste no worse. The 2-day connection
// case holds less than it did while the client's <estimated_delay>
// counted every queued job: counting only the jobs the simulation sees
// late, as the C++ client does, the server's check admits the 1.5-day
// jobs behind on-time work, and the guard halves the waste rather than
// removing it (0.16 → 0.09). Two seeds, 60 days: deterministic, and
// short enough for -race.
func TestGuardTargetsPlainCheck(t *testing.T) {
	want := map[string]struct {
		maxWaste   float64 // the guard's waste at most
		minBefore  float64 // the C++ rules' waste at least (the effect exists)
		infeasible bool    // no job can meet its deadline (slack 1)
	}{
		"slack 1": {maxWaste: 0.6, minBefore: 0.7, infeasible: true},
		"slack 2": {maxWaste: 0.01, minBefore: 0.1},
		"slack 3": {maxWaste: 0.01, minBefore: 0.1},
		"2-day connection, 2.5-day bound, σ 10 %": {maxWaste: 0.12, minBefore: 0.14},
	}
	var cases []Case
	for _, c := range Targets(sim.WorkSendPlain, false) {
		if _, ok := want[c.Name]; ok {
			cases = append(cases, c)
		}
	}
	if len(cases) != len(want) {
		t.Fatalf("%d of the %d cases found", len(cases), len(want))
	}
	cmp, err := Compare(context.Background(), cases, []Variant{Before, After}, Config{Seeds: 2, Days: 60})
	if err != nil {
		t.Fatal(err)
	}
	for ci, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			w := want[c.Name]
			before, after := &cmp.Stats[ci][0], &cmp.Stats[ci][1]
			t.Logf("waste %.4f → %.4f, idle %.4f → %.4f, share violation %.4f → %.4f, monotony %.4f → %.4f, score %.4f → %.4f",
				before[Waste].Mean, after[Waste].Mean, before[Idle].Mean, after[Idle].Mean, before[ShareViolation].Mean, after[ShareViolation].Mean,
				before[Monotony].Mean, after[Monotony].Mean, Score(before), Score(after))
			if after[Waste].Mean > w.maxWaste || before[Waste].Mean < w.minBefore {
				t.Errorf("waste %.4f → %.4f: want at least %.2f before, at most %.2f with the guard", before[Waste].Mean, after[Waste].Mean, w.minBefore, w.maxWaste)
			}
			if c.Infeasible != w.infeasible {
				t.Errorf("Infeasible = %v, want %v", c.Infeasible, w.infeasible)
			}
			if d, bad := cmp.LostWorse(ci, 0, 1); bad {
				t.Errorf("waste + idle %.4f → %.4f (%+.4f): worse by more than %.2f", before[Waste].Mean+before[Idle].Mean, after[Waste].Mean+after[Idle].Mean, d, Margin)
			}
			for _, m := range []Metric{Waste, Idle, ShareViolation, Monotony} {
				if !cmp.Held(ci, m) {
					continue
				}
				if _, bad := cmp.Worse(ci, 0, 1, m); bad {
					t.Errorf("%s %.4f → %.4f: worse beyond noise (more than %.2f and 2 standard errors)", m.Title(), before[m].Mean, after[m].Mean, Margin)
				}
			}
			if !(Score(after) < Score(before)) {
				t.Errorf("score %.4f → %.4f: want lower", Score(before), Score(after))
			}
		})
	}
}

// The trade issue 30 accepted: a 2-day connection interval and a
// 2.5-day bound under WS1 (a server that fills whatever is asked). The
// C++ rules fetch the whole 2 days and run late work (waste about 0.44,
// idle 0.036 over 5 seeds and 100 days); the guard fetches what can end
// by the bound and leaves gaps the next connection cannot refill (waste
// 0.05, idle 0.050). Neither can have both without knowing the host's
// availability over the next 2 days. Held here: waste cut by at least
// three quarters, idle up by at most 0.025, the weighted score lower.
func TestConnectionTradeWS1(t *testing.T) {
	var cases []Case
	for _, c := range Targets(sim.WorkSendWS1, false) {
		if c.Name == "2-day connection, 2.5-day bound, σ 10 %" {
			cases = append(cases, c)
		}
	}
	if len(cases) != 1 {
		t.Fatalf("%d cases found", len(cases))
	}
	cmp, err := Compare(context.Background(), cases, []Variant{Before, After}, Config{Seeds: 2, Days: 60})
	if err != nil {
		t.Fatal(err)
	}
	before, after := &cmp.Stats[0][0], &cmp.Stats[0][1]
	t.Logf("waste %.4f → %.4f, idle %.4f → %.4f, share violation %.4f → %.4f, monotony %.4f → %.4f, score %.4f → %.4f",
		before[Waste].Mean, after[Waste].Mean, before[Idle].Mean, after[Idle].Mean, before[ShareViolation].Mean, after[ShareViolation].Mean,
		before[Monotony].Mean, after[Monotony].Mean, Score(before), Score(after))
	if !(after[Waste].Mean <= before[Waste].Mean/4) || before[Waste].Mean < 0.2 {
		t.Errorf("waste %.4f → %.4f: want the C++ rules' at least 0.2 and the guard's a quarter of it at most", before[Waste].Mean, after[Waste].Mean)
	}
	if d := after[Idle].Mean - before[Idle].Mean; d > 0.025 {
		t.Errorf("idle %.4f → %.4f: up %.4f, want at most 0.025", before[Idle].Mean, after[Idle].Mean, d)
	}
	if !(Score(after) < Score(before)) {
		t.Errorf("score %.4f → %.4f: want lower", Score(before), Score(after))
	}
}
