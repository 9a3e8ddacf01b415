package study

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		if a[Waste].Mean > b[Waste].Mean+Margin {
			t.Errorf("%s: waste %.4f → %.4f", c.Name, b[Waste].Mean, a[Waste].Mean)
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
