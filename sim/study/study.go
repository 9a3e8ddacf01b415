// Package study is the policy study: the parameter sweeps of Kondo,
// Anderson and McLeod, "Performance Evaluation of Scheduling Policies
// for Volunteer Computing" (IEEE e-Science 2007), run in boincd's
// emulator (package sim) with every point averaged over several seeds.
// It writes a CSV per experiment and a plot per figure; `boincd-sim
// --sweep` runs it and docs/policy-study.md reports the numbers.
//
// The study never forks the emulator: each point is an ordinary
// sim.Scenario whose [policies] pick the alternatives (CS1/CS2,
// WF1/WF2, WS1/WS2, JC1/JC2, debt/REC), so any point can be rerun by
// hand with `boincd-sim`.
package study

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/boincd/boincd/sim"
)

// Metric is one of the emulator's scheduling-quality figures.
type Metric int

// The metrics, in sim.Metrics' order.
const (
	Waste Metric = iota
	Idle
	ShareViolation
	Monotony
	RPCsPerJob
	NumMetrics
)

var metricNames = [NumMetrics]string{"wasted_fraction", "idle_fraction", "share_violation", "monotony", "rpcs_per_job"}
var metricTitles = [NumMetrics]string{"wasted fraction", "idle fraction", "share violation", "monotony", "RPCs per job"}

// String is the metric's CSV column name.
func (m Metric) String() string { return metricNames[m] }

// Title is the metric's axis label.
func (m Metric) Title() string { return metricTitles[m] }

// Of picks the metric from a report.
func (m Metric) Of(r *sim.Metrics) float64 {
	switch m {
	case Waste:
		return r.WastedFraction
	case Idle:
		return r.IdleFraction
	case ShareViolation:
		return r.ShareViolation
	case Monotony:
		return r.Monotony
	default:
		return r.RPCsPerJob
	}
}

// Series is one curve of an experiment: a policy combination (or a
// parameter held fixed), building the scenario for a point x.
type Series struct {
	Name  string
	Build func(x float64) *sim.Scenario
}

// Experiment is one sweep: every series at every x, each over the
// configured seeds.
type Experiment struct {
	ID      string // file-name stem, e.g. "exp1_mix"
	Title   string
	XLabel  string
	LogX    bool
	X       []float64
	Series  []Series
	Metrics []Metric // the figures drawn; the CSV has every metric
}

// Stat is a metric over the seeds of one point.
type Stat struct {
	Mean, SD, Min, Max float64
}

// Point is one (series, x) of an experiment.
type Point struct {
	Series string
	X      float64
	Seeds  int
	Stats  [NumMetrics]Stat
}

// Result is an experiment's outcome, points in series then x order.
type Result struct {
	Experiment *Experiment
	Points     []Point
}

// Config sets the study's size.
type Config struct {
	// Seeds per point (default 5).
	Seeds int
	// Days overrides every scenario's duration (0: the experiment's).
	Days float64
	// Workers run scenarios in parallel (default GOMAXPROCS).
	Workers int
	// Progress, if set, is called after each finished run.
	Progress func(done, total int)
}

type job struct {
	exp, series, x int
	seed           uint64
}

type outcome struct {
	job
	m   sim.Metrics
	err error
}

// Run executes the experiments, in parallel across scenarios. The result
// is deterministic: seeds are 1..Seeds and the aggregation order is
// fixed, whatever the scheduling of the workers.
func Run(ctx context.Context, exps []*Experiment, cfg Config) ([]Result, error) {
	if cfg.Seeds <= 0 {
		cfg.Seeds = 5
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	var jobs []job
	for e, ex := range exps {
		for s := range ex.Series {
			for x := range ex.X {
				for seed := 1; seed <= cfg.Seeds; seed++ {
					jobs = append(jobs, job{e, s, x, uint64(seed)})
				}
			}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	in := make(chan job)
	out := make(chan outcome, len(jobs))
	var wg sync.WaitGroup
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range in {
				out <- runOne(ctx, exps, j, cfg)
			}
		}()
	}
	go func() {
		defer close(in)
		for _, j := range jobs {
			select {
			case in <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()

	vals := make(map[job][NumMetrics]float64, len(jobs))
	var firstErr error
	done := 0
	for o := range out {
		if o.err != nil {
			if firstErr == nil {
				firstErr = o.err
				cancel()
			}
			continue
		}
		var v [NumMetrics]float64
		for m := range NumMetrics {
			v[m] = m.Of(&o.m)
		}
		vals[o.job] = v
		done++
		if cfg.Progress != nil {
			cfg.Progress(done, len(jobs))
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("policy study: %w", err)
	}
	res := make([]Result, len(exps))
	for e, ex := range exps {
		res[e].Experiment = ex
		for s, se := range ex.Series {
			for x, xv := range ex.X {
				pt := Point{Series: se.Name, X: xv, Seeds: cfg.Seeds}
				for m := range NumMetrics {
					xs := make([]float64, 0, cfg.Seeds)
					for seed := 1; seed <= cfg.Seeds; seed++ {
						xs = append(xs, vals[job{e, s, x, uint64(seed)}][m])
					}
					pt.Stats[m] = stat(xs)
				}
				res[e].Points = append(res[e].Points, pt)
			}
		}
	}
	return res, nil
}

func runOne(ctx context.Context, exps []*Experiment, j job, cfg Config) outcome {
	ex := exps[j.exp]
	sc := ex.Series[j.series].Build(ex.X[j.x])
	sc.Seed = j.seed
	if cfg.Days > 0 {
		sc.DurationDays = cfg.Days
	}
	rep, err := sim.Run(ctx, sc, sim.Options{})
	if err != nil {
		return outcome{job: j, err: fmt.Errorf("%s, %s, x = %g, seed %d: %w", ex.ID, ex.Series[j.series].Name, ex.X[j.x], j.seed, err)}
	}
	return outcome{job: j, m: rep.Metrics}
}

// stat is the mean, sample standard deviation and range of xs.
func stat(xs []float64) Stat {
	if len(xs) == 0 {
		return Stat{}
	}
	s := Stat{Min: math.Inf(1), Max: math.Inf(-1)}
	for _, x := range xs {
		s.Mean += x
		s.Min = math.Min(s.Min, x)
		s.Max = math.Max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		ss := 0.0
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// Lookup returns the point of series name at x, if any.
func (r *Result) Lookup(name string, x float64) (Point, bool) {
	for _, p := range r.Points {
		if p.Series == name && p.X == x {
			return p, true
		}
	}
	return Point{}, false
}
