package study

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/boincd/boincd/sim"
)

// Weights of the four metrics in the score the default policy is judged
// by (lower is better): waste and idleness are both host capacity lost,
// so they count fully; share violation and monotony are fairness and
// feel, worth half and a quarter.
var Weights = [NumMetrics]float64{Waste: 1, Idle: 1, ShareViolation: 0.5, Monotony: 0.25}

// Margin is how much worse (absolute) any one metric may get in any case
// for a change to the default to be accepted.
const Margin = 0.01

// Score is the weighted sum of a point's mean metrics.
func Score(st *[NumMetrics]Stat) float64 {
	s := 0.0
	for m := range NumMetrics {
		s += Weights[m] * st[m].Mean
	}
	return s
}

// Variant is a client policy to compare: it edits the client's side of
// a case's policies (priority, CPU scheduling, work fetch), never the
// servers'.
type Variant struct {
	Name  string
	Apply func(*Policies)
	// Only, if set, limits the variant to the cases it accepts (the
	// others are left out of its tables).
	Only func(*Case) bool
}

// Case is one scenario of the comparison suite.
type Case struct {
	Name  string
	Build func() (*sim.Scenario, error)
	// Server is the server model every project's server follows in this
	// case (sim.WorkSend*), named in the tables; "" leaves the
	// scenario's own.
	Server string
	// Target: one of the cases the default is held to under each server
	// model (Targets), rather than one of the study's own findings.
	Target bool
	// Infeasible: no job can meet its deadline (slack 1: a 3.6-hour job
	// at 80 % availability takes 4.5 hours against a 3.6-hour bound), so
	// waste + idle ≈ 1 whatever the client does and a policy can only
	// move lost capacity between the two. Under the plain check (issue
	// 30's decision) such a case is exempt from "waste and idle each no
	// worse than the C++ rules'": it is held to waste + idle no worse
	// (LostWorse) and waste no worse (Worse), and idle may rise.
	Infeasible bool
}

// Servers are the study's three server models: no check (WS1, send
// until the request is covered), the stock BOINC server's plain check
// (delay + run time within the latency bound) and the EDF screen
// (WS2). A client policy is judged under each, since a volunteer's
// projects run any of them.
var Servers = []string{sim.WorkSendWS1, sim.WorkSendPlain, sim.WorkSendWS2}

// ServerTitle names a server model in tables.
func ServerTitle(ws string) string {
	switch ws {
	case sim.WorkSendWS1:
		return "WS1 (no check)"
	case sim.WorkSendPlain:
		return "plain check"
	case sim.WorkSendWS2:
		return "WS2 (EDF screen)"
	}
	return "scenario's servers"
}

// Targets is the suite the default is held to under server model ws:
// the slack sweep 1–10, the mix sweep 1–20, the buffer sweep (1–8.4 h
// at slack 1–5) and the connection-interval cases (2-day interval and
// buffer, 2.5- and 3-day bounds, σ 10 %). quick keeps one case of each
// kind.
func Targets(ws string, quick bool) []Case {
	var cases []Case
	add := func(name string, build func() *sim.Scenario) {
		cases = append(cases, Case{Name: name, Server: ws, Target: true, Build: func() (*sim.Scenario, error) {
			sc := build()
			sc.Policies.WorkSend = ws
			return sc, nil
		}})
	}
	// Slack 1 under the plain check: see Case.Infeasible. (Under WS1 and
	// WS2 the ordinary rule holds there: the client cannot change what a
	// blind server sends, and an EDF screen sends nothing.)
	infeasible := func(s float64) {
		cases[len(cases)-1].Infeasible = ws == sim.WorkSendPlain && s <= 1
	}
	slackX := []float64{1, 1.5, 2, 3, 4, 5, 7.5, 10}
	mixX := seq(1, 20, 1)
	bufX := []float64{1, 2, 3, 4, 5, 6, 7, 8.4}
	bufS := []float64{1, 2, 3, 4, 5}
	conn := []float64{2.5, 3}
	if quick {
		slackX, mixX, bufX, bufS, conn = []float64{2}, []float64{5}, []float64{3}, []float64{2}, []float64{2.5}
	}
	for _, s := range slackX {
		add(fmt.Sprintf("slack %g", s), func() *sim.Scenario {
			sc := Baseline(Default)
			slack(sc, s)
			return sc
		})
		infeasible(s)
	}
	for _, m := range mixX {
		add(fmt.Sprintf("mix M=%g", m), func() *sim.Scenario { return mix(Default, int(m)) })
	}
	for _, s := range bufS {
		for _, h := range bufX {
			add(fmt.Sprintf("slack %g, buffer %g h", s, h), func() *sim.Scenario { return buffer(Default, s, h) })
			infeasible(s)
		}
	}
	for _, l := range conn {
		add(fmt.Sprintf("2-day connection, %g-day bound, σ 10 %%", l), func() *sim.Scenario { return connection(Default, l, 100) })
	}
	return cases
}

// Before and After are boincd's default before and after the policy
// study: the deadline guard (workfetch.Prefs.DeadlineGuard) is the
// change.
var (
	Before = Variant{Name: "before (wf2-noguard)", Apply: func(p *Policies) { p.WorkFetch = "wf2-noguard" }}
	After  = Variant{Name: "after (default)", Apply: func(p *Policies) { p.WorkFetch = "" }}
	// REC is the C++ client's priority with the new default's fetch: the
	// other candidate the study weighed.
	REC = Variant{Name: "REC priority", Apply: func(p *Policies) { p.WorkFetch, p.Priority = "", "rec" }, Only: func(c *Case) bool { return !c.Target }}
)

// Suite is where the study found CS2-WF2-WS2-JC2 losing, plus the
// baseline and the design document's GPU examples, so a change that
// helps one case cannot hide a loss elsewhere; then the target cases
// (Targets) under each server model.
func Suite(quick bool) []Case {
	cases := []Case{
		{Name: "baseline", Build: func() (*sim.Scenario, error) { return Baseline(Default), nil }},
	}
	for _, s := range []float64{1.5, 2, 3} {
		cases = append(cases, Case{Name: fmt.Sprintf("slack %g", s), Build: func() (*sim.Scenario, error) {
			sc := Baseline(Default)
			slack(sc, s)
			return sc, nil
		}})
	}
	cases = append(cases, Case{Name: "slack 3, buffer 6 h", Build: func() (*sim.Scenario, error) {
		sc := Baseline(Default)
		slack(sc, 3)
		sc.Prefs.WorkBufMinDays, sc.Prefs.WorkBufAdditionalDays = 0.25, 0
		return sc, nil
	}})
	for _, m := range []int{5, 10, 20} {
		cases = append(cases, Case{Name: fmt.Sprintf("mix M=%d", m), Build: func() (*sim.Scenario, error) { return mix(Default, m), nil }})
	}
	cases = append(cases, Case{Name: "2-day connection, 3-day bound, σ 10 %", Build: func() (*sim.Scenario, error) {
		return connection(Default, 3, 100), nil
	}})
	cases = append(cases, Case{Name: "estimate error 30, JC2", Build: func() (*sim.Scenario, error) {
		return Experiments(false)[5].Series[1].Build(30), nil
	}})
	for _, name := range []string{"example1_gpu_cpu", "example2_long_edf", "example3_gpu_app_later", "example4_no_gpu_work", "five_projects"} {
		cases = append(cases, Case{Name: name, Build: func() (*sim.Scenario, error) { return sim.BuiltinScenario(name) }})
	}
	if quick {
		cases = []Case{cases[0], cases[2], cases[5]}
	}
	for _, ws := range Servers {
		cases = append(cases, Targets(ws, quick)...)
	}
	return cases
}

// Comparison is the suite's outcome per case and variant.
type Comparison struct {
	Variants []Variant
	Cases    []Case
	// Stats[c][v] are case c's metrics under variant v; Ran[c][v] says
	// whether it ran (Variant.Only).
	Stats [][][NumMetrics]Stat
	Ran   [][]bool
	Seeds int
}

// Compare runs every case under every variant over cfg.Seeds seeds (in
// parallel, through Run).
func Compare(ctx context.Context, cases []Case, variants []Variant, cfg Config) (*Comparison, error) {
	ex := &Experiment{ID: "default_before_after", X: []float64{0}}
	cmp := &Comparison{Variants: variants, Cases: cases, Stats: make([][][NumMetrics]Stat, len(cases)), Ran: make([][]bool, len(cases))}
	var at [][2]int
	for ci := range cases {
		cmp.Stats[ci] = make([][NumMetrics]Stat, len(variants))
		cmp.Ran[ci] = make([]bool, len(variants))
		for vi := range variants {
			c, v := cases[ci], variants[vi]
			if v.Only != nil && !v.Only(&c) {
				continue
			}
			// Build once to check; Run rebuilds per seed so runs share
			// nothing.
			if _, err := c.Build(); err != nil {
				return nil, fmt.Errorf("case %s: %w", c.Name, err)
			}
			cmp.Ran[ci][vi] = true
			at = append(at, [2]int{ci, vi})
			ex.Series = append(ex.Series, Series{Name: c.Name + " / " + v.Name, Build: func(float64) *sim.Scenario {
				sc, _ := c.Build()
				v.Apply(&sc.Policies)
				return sc
			}})
		}
	}
	res, err := Run(ctx, []*Experiment{ex}, cfg)
	if err != nil {
		return nil, err
	}
	for k, cv := range at {
		cmp.Stats[cv[0]][cv[1]] = res[0].Points[k].Stats
		cmp.Seeds = res[0].Points[k].Seeds
	}
	return cmp, nil
}

// Worse is how much metric m got worse from variant a to b in case ci,
// and whether that is beyond noise: more than Margin and more than
// twice the standard error of the difference of the seeds' means.
func (c *Comparison) Worse(ci, a, b int, m Metric) (float64, bool) {
	x, y := c.Stats[ci][a][m], c.Stats[ci][b][m]
	d := y.Mean - x.Mean
	se := 0.0
	if c.Seeds > 0 {
		se = math.Sqrt((x.SD*x.SD + y.SD*y.SD) / float64(c.Seeds))
	}
	return d, d > Margin && d > 2*se
}

// LostWorse is how much the host capacity lost (waste + idle) got worse
// from variant a to b in case ci, and whether by more than Margin: the
// rule an Infeasible case is held to in place of idle's. (The seeds' SD
// of the sum is not kept; it is far below its parts' here, as they
// move against each other, so the Margin alone is the test.)
func (c *Comparison) LostWorse(ci, a, b int) (float64, bool) {
	x, y := &c.Stats[ci][a], &c.Stats[ci][b]
	d := (y[Waste].Mean + y[Idle].Mean) - (x[Waste].Mean + x[Idle].Mean)
	return d, d > Margin
}

// Held reports whether metric m of case ci is held to "no worse": every
// metric, except idle in an Infeasible case (held through LostWorse).
func (c *Comparison) Held(ci int, m Metric) bool {
	return !(m == Idle && c.Cases[ci].Infeasible)
}

// Worst is, over the cases in (all if nil), the largest increase of
// each metric from variant a to variant b (of the metrics each case is
// Held to), and the mean score change.
func (c *Comparison) Worst(a, b int, in func(ci int) bool) (worse [NumMetrics]float64, meanScoreDelta float64) {
	n := 0
	for ci := range c.Cases {
		if !c.Ran[ci][a] || !c.Ran[ci][b] || (in != nil && !in(ci)) {
			continue
		}
		n++
		for m := range NumMetrics {
			if c.Held(ci, m) {
				worse[m] = max(worse[m], c.Stats[ci][b][m].Mean-c.Stats[ci][a][m].Mean)
			}
		}
		meanScoreDelta += Score(&c.Stats[ci][b]) - Score(&c.Stats[ci][a])
	}
	if n > 0 {
		meanScoreDelta /= float64(n)
	}
	return worse, meanScoreDelta
}

// WriteMarkdown writes a table per variant pair (0 against each other)
// and group of cases (the study's own, then the targets under each
// server model): the four metrics and the score per case, an increase
// beyond noise (Worse) in bold, then the verdict against Margin.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	metrics := []Metric{Waste, Idle, ShareViolation, Monotony}
	infeasible := false // a ‡ row in the table being written
	type group struct {
		title string
		in    func(ci int) bool
	}
	groups := []group{{"the study's cases (servers as each scenario says: WS2 in the sweeps' cases, WS1 in the examples)", func(ci int) bool { return !c.Cases[ci].Target }}}
	for _, ws := range Servers {
		groups = append(groups, group{"targets under " + ServerTitle(ws), func(ci int) bool { return c.Cases[ci].Target && c.Cases[ci].Server == ws }})
	}
	for vi := 1; vi < len(c.Variants); vi++ {
		for _, g := range groups {
			rows := 0
			for ci := range c.Cases {
				if g.in(ci) && c.Ran[ci][0] && c.Ran[ci][vi] {
					rows++
				}
			}
			if rows == 0 {
				continue
			}
			fmt.Fprintf(&b, "#### %s → %s: %s, %d seeds\n\n", c.Variants[0].Name, c.Variants[vi].Name, g.title, c.Seeds)
			b.WriteString("| case |")
			for _, m := range metrics {
				fmt.Fprintf(&b, " %s |", m.Title())
			}
			b.WriteString(" score |\n|---|")
			for range metrics {
				b.WriteString("---|")
			}
			b.WriteString("---|\n")
			for ci, cs := range c.Cases {
				if !g.in(ci) || !c.Ran[ci][0] || !c.Ran[ci][vi] {
					continue
				}
				name := cs.Name
				if cs.Infeasible {
					name += " ‡"
					infeasible = true
				}
				fmt.Fprintf(&b, "| %s |", name)
				for _, m := range metrics {
					cell := fmt.Sprintf("%.4f → %.4f", c.Stats[ci][0][m].Mean, c.Stats[ci][vi][m].Mean)
					if _, bad := c.Worse(ci, 0, vi, m); bad && c.Held(ci, m) {
						cell = "**" + cell + "**"
					}
					if m == Idle && cs.Infeasible {
						if _, bad := c.LostWorse(ci, 0, vi); bad {
							cell += " (**waste + idle worse**)"
						}
					}
					fmt.Fprintf(&b, " %s |", cell)
				}
				fmt.Fprintf(&b, " %.4f → %.4f |\n", Score(&c.Stats[ci][0]), Score(&c.Stats[ci][vi]))
			}
			if infeasible {
				b.WriteString("\n‡ No job can meet its deadline: held to waste + idle and waste no worse than the first column's, idle free (issue 30).\n")
				infeasible = false
			}
			worse, d := c.Worst(0, vi, g.in)
			fmt.Fprintf(&b, "\nMean score change %+.4f; largest increase per metric:", d)
			ok := true
			for _, m := range metrics {
				fmt.Fprintf(&b, " %s %+.4f", m.Title(), worse[m])
				if worse[m] > Margin {
					ok = false
				}
			}
			verdict := "within"
			if !ok {
				verdict = "OUTSIDE"
			}
			fmt.Fprintf(&b, " (%s the %.2f margin).\n\n", verdict, Margin)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
