package study

import (
	"context"
	"fmt"
	"io"
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
}

// Case is one scenario of the comparison suite.
type Case struct {
	Name  string
	Build func() (*sim.Scenario, error)
}

// Before and After are boincd's default before and after the policy
// study: the deadline guard (workfetch.Prefs.DeadlineGuard) is the
// change.
var (
	Before = Variant{Name: "before (wf2-noguard)", Apply: func(p *Policies) { p.WorkFetch = "wf2-noguard" }}
	After  = Variant{Name: "after (default)", Apply: func(p *Policies) { p.WorkFetch = "" }}
	// REC is the C++ client's priority with the new default's fetch: the
	// other candidate the study weighed.
	REC = Variant{Name: "REC priority", Apply: func(p *Policies) { p.WorkFetch, p.Priority = "", "rec" }}
)

// Suite is where the study found CS2-WF2-WS2-JC2 losing, plus the
// baseline and the design document's GPU examples, so a change that
// helps one case cannot hide a loss elsewhere.
func Suite(quick bool) []Case {
	cases := []Case{
		{"baseline", func() (*sim.Scenario, error) { return Baseline(Default), nil }},
	}
	for _, s := range []float64{1.5, 2, 3} {
		cases = append(cases, Case{fmt.Sprintf("slack %g", s), func() (*sim.Scenario, error) {
			sc := Baseline(Default)
			slack(sc, s)
			return sc, nil
		}})
	}
	cases = append(cases, Case{"slack 3, buffer 6 h", func() (*sim.Scenario, error) {
		sc := Baseline(Default)
		slack(sc, 3)
		sc.Prefs.WorkBufMinDays, sc.Prefs.WorkBufAdditionalDays = 0.25, 0
		return sc, nil
	}})
	for _, m := range []int{5, 10, 20} {
		cases = append(cases, Case{fmt.Sprintf("mix M=%d", m), func() (*sim.Scenario, error) { return mix(Default, m), nil }})
	}
	cases = append(cases, Case{"2-day connection, 3-day bound, σ 10 %", func() (*sim.Scenario, error) {
		return Experiments(false)[4].Series[3].Build(100), nil
	}})
	cases = append(cases, Case{"estimate error 30, JC2", func() (*sim.Scenario, error) {
		return Experiments(false)[5].Series[1].Build(30), nil
	}})
	for _, name := range []string{"example1_gpu_cpu", "example2_long_edf", "example3_gpu_app_later", "example4_no_gpu_work", "five_projects"} {
		cases = append(cases, Case{name, func() (*sim.Scenario, error) { return sim.BuiltinScenario(name) }})
	}
	if quick {
		return []Case{cases[0], cases[2], cases[5]}
	}
	return cases
}

// Comparison is the suite's outcome per case and variant.
type Comparison struct {
	Variants []Variant
	Cases    []Case
	// Stats[c][v] are case c's metrics under variant v.
	Stats [][][NumMetrics]Stat
}

// Compare runs every case under every variant over cfg.Seeds seeds (in
// parallel, through Run).
func Compare(ctx context.Context, cases []Case, variants []Variant, cfg Config) (*Comparison, error) {
	ex := &Experiment{ID: "default_before_after", X: []float64{0}}
	for ci := range cases {
		for vi := range variants {
			c, v := cases[ci], variants[vi]
			// Build once to check; Run rebuilds per seed so runs share
			// nothing.
			if _, err := c.Build(); err != nil {
				return nil, fmt.Errorf("case %s: %w", c.Name, err)
			}
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
	cmp := &Comparison{Variants: variants, Cases: cases, Stats: make([][][NumMetrics]Stat, len(cases))}
	for ci := range cases {
		cmp.Stats[ci] = make([][NumMetrics]Stat, len(variants))
		for vi := range variants {
			cmp.Stats[ci][vi] = res[0].Points[ci*len(variants)+vi].Stats
		}
	}
	return cmp, nil
}

// Worst is, over all cases, the largest increase of each metric from
// variant a to variant b, and the mean score change.
func (c *Comparison) Worst(a, b int) (worse [NumMetrics]float64, meanScoreDelta float64) {
	for ci := range c.Cases {
		for m := range NumMetrics {
			worse[m] = max(worse[m], c.Stats[ci][b][m].Mean-c.Stats[ci][a][m].Mean)
		}
		meanScoreDelta += Score(&c.Stats[ci][b]) - Score(&c.Stats[ci][a])
	}
	if n := len(c.Cases); n > 0 {
		meanScoreDelta /= float64(n)
	}
	return worse, meanScoreDelta
}

// WriteMarkdown writes a table per variant pair (0 against each other):
// the four metrics and the score per case, then the verdict against
// Margin.
func (c *Comparison) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	metrics := []Metric{Waste, Idle, ShareViolation, Monotony}
	for vi := 1; vi < len(c.Variants); vi++ {
		fmt.Fprintf(&b, "#### %s → %s\n\n", c.Variants[0].Name, c.Variants[vi].Name)
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
			fmt.Fprintf(&b, "| %s |", cs.Name)
			for _, m := range metrics {
				fmt.Fprintf(&b, " %.4f → %.4f |", c.Stats[ci][0][m].Mean, c.Stats[ci][vi][m].Mean)
			}
			fmt.Fprintf(&b, " %.4f → %.4f |\n", Score(&c.Stats[ci][0]), Score(&c.Stats[ci][vi]))
		}
		worse, d := c.Worst(0, vi)
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
	_, err := io.WriteString(w, b.String())
	return err
}
