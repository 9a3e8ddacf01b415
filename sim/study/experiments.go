package study

import (
	"fmt"
	"strings"

	"github.com/boincd/boincd/sim"
)

// The baseline of the study's tables (the "Baseline scenario",
// after the paper's): 100 days in 60 s steps; 2 CPUs of 1e9 FLOPS,
// available 80 % of the time (exponential on periods of mean 1000 s,
// off periods of mean 250 s), always connected; scheduling period 60
// min, work_buf_min 0.1 day, work_buf_additional 0.25 day; one project,
// share 100, latency bound 9 days, jobs of 1.3e13 FLOPs estimated and
// true, std-dev 0.
const (
	BaseDays      = 100
	BaseJobFlops  = 1.3e13
	BaseCPUFlops  = 1e9
	BaseLatency   = 9.0 // days
	BaseJobSecs   = BaseJobFlops / BaseCPUFlops
	baseOnMeanS   = 1000
	baseOffMeanS  = 250 // 1000/(1000+250) = 80 % on
	baseBufMin    = 0.1
	baseBufAdd    = 0.25
	baseSchedMins = 60
)

// Policies is one combination of the four axes (plus priority).
type Policies = sim.PoliciesSpec

// Default is the combination the study's sweeps hold fixed when they
// vary another axis: CS2-WF2-WS2-JC2 with debt priorities.
var Default = Policies{Priority: "debt", CPUSched: "cs2", WorkFetch: "wf2", WorkSend: sim.WorkSendWS2, Estimate: sim.EstimateJC2}

// Baseline returns the baseline scenario with policies pol and one
// project (callers replace Projects as their sweep needs).
func Baseline(pol Policies) *sim.Scenario {
	return &sim.Scenario{
		DurationDays: BaseDays,
		StepSeconds:  60,
		Host: sim.HostSpec{
			CPUs:         2,
			CPUFlops:     BaseCPUFlops,
			Availability: &sim.AvailabilitySpec{OnMeanS: baseOnMeanS, OffMeanS: baseOffMeanS},
		},
		Prefs: sim.PrefsSpec{
			WorkBufMinDays:             baseBufMin,
			WorkBufAdditionalDays:      baseBufAdd,
			CPUSchedulingPeriodMinutes: baseSchedMins,
		},
		Policies: pol,
		Projects: []sim.ProjectSpec{project("p1", 100, BaseLatency, BaseJobFlops, 0)},
	}
}

func project(name string, share, latencyDays, flops, sd float64) sim.ProjectSpec {
	return sim.ProjectSpec{
		Name:             name,
		Share:            share,
		LatencyBoundDays: latencyDays,
		Apps:             []sim.AppSpec{{Resource: "CPU", FlopsMean: flops, FlopsStddev: sd}},
	}
}

// mix is the paper's project mix: project i of m has i× the base job
// size, latency bound and share.
func mix(pol Policies, m int) *sim.Scenario {
	sc := Baseline(pol)
	sc.Projects = sc.Projects[:0]
	for i := 1; i <= m; i++ {
		f := float64(i)
		sc.Projects = append(sc.Projects, project(fmt.Sprintf("p%d", i), 100*f, BaseLatency*f, BaseJobFlops*f, 0))
	}
	return sc
}

// slack sets the one project's latency bound to s × the job's run time
// on the host (both CPUs' speed, full availability).
func slack(sc *sim.Scenario, s float64) {
	for i := range sc.Projects {
		sc.Projects[i].LatencyBoundDays = s * BaseJobSecs / 86400
	}
}

// buffer is experiment 3's point: one project at slack s, the buffer
// work_buf_min alone at h hours (the work the client keeps queued at
// least, what the paper varies).
func buffer(pol Policies, s, h float64) *sim.Scenario {
	sc := Baseline(pol)
	slack(sc, s)
	sc.Prefs.WorkBufMinDays = h / 24
	sc.Prefs.WorkBufAdditionalDays = 0
	return sc
}

// connection is experiment 5's point: a host online the first hour of
// every 2 days, buffer 2 days, two projects of equal share whose jobs
// differ 10× in size, latency bound latency days, job-size std-dev
// f × mean / 1000.
func connection(pol Policies, latency, f float64) *sim.Scenario {
	sc := Baseline(pol)
	sc.Host.ConnectionIntervalDays = 2
	sc.Prefs.WorkBufMinDays = 2
	sc.Prefs.WorkBufAdditionalDays = 0
	small, big := BaseJobFlops, 10*BaseJobFlops
	sc.Projects = []sim.ProjectSpec{
		project("small", 100, latency, small, f*small/1000),
		project("big", 100, latency, big, f*big/1000),
	}
	return sc
}

func with(pol Policies, f func(*Policies)) Policies {
	f(&pol)
	return pol
}

func seq(from, to, step float64) []float64 {
	var xs []float64
	for x := from; x <= to+1e-9; x += step {
		xs = append(xs, x)
	}
	return xs
}

// Experiments returns the six sweeps. quick trims them to a few points
// each, for the test suite.
func Experiments(quick bool) []*Experiment {
	mixX := seq(1, 20, 1)
	slackX := []float64{1, 1.5, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 40, 60}
	bufX := []float64{1, 2, 3, 4, 5, 6, 7, 8.4}
	sdX := []float64{1, 3, 10, 30, 100, 300, 1000}
	// 1..10 as in the paper; beyond 10 the uncorrected queue outgrows
	// the 9-day bound and JC1 starts to waste.
	errX := append(seq(1, 10, 1), 15, 20, 30, 50)
	slackSeries := []float64{1, 2, 3, 4, 5}
	if quick {
		mixX = []float64{1, 4}
		slackX = []float64{1, 10}
		bufX = []float64{1, 8.4}
		sdX = []float64{1, 1000}
		errX = []float64{1, 10}
		slackSeries = []float64{1, 5}
	}
	var exps []*Experiment

	// 1. CS1 vs CS2 over the project mix.
	e1 := &Experiment{ID: "exp1_mix_cs", Title: "CPU scheduling over the project mix (WF2, WS2, JC2)",
		XLabel: "number of projects M", X: mixX, Metrics: []Metric{Waste, Idle, ShareViolation, Monotony}}
	for _, cs := range []string{"cs1", "cs2"} {
		pol := with(Default, func(p *Policies) { p.CPUSched = cs })
		e1.Series = append(e1.Series, Series{Name: strings.ToUpper(cs), Build: func(x float64) *sim.Scenario { return mix(pol, int(x)) }})
	}
	exps = append(exps, e1)

	// 2. Deadline slack, one project, CS2-WF2-WS2-JC2.
	exps = append(exps, &Experiment{ID: "exp2_slack", Title: "Deadline slack, one project (CS2-WF2-WS2-JC2)",
		XLabel: "slack (latency bound / job run time)", LogX: true, X: slackX, Metrics: []Metric{Waste, Idle},
		Series: []Series{{Name: "CS2-WF2-WS2-JC2", Build: func(x float64) *sim.Scenario {
			sc := Baseline(Default)
			slack(sc, x)
			return sc
		}}}})

	// 3. Waste over the buffer size, one curve per slack.
	e3 := &Experiment{ID: "exp3_buffer", Title: "Waste over the buffer size, per deadline slack (CS2-WF2-WS2-JC2)",
		XLabel: "work buffer (hours)", X: bufX, Metrics: []Metric{Waste, Idle}}
	for _, s := range slackSeries {
		e3.Series = append(e3.Series, Series{Name: fmt.Sprintf("slack %g", s), Build: func(x float64) *sim.Scenario {
			return buffer(Default, s, x)
		}})
	}
	exps = append(exps, e3)

	// 4. WF1 vs WF2 over the project mix.
	e4 := &Experiment{ID: "exp4_mix_wf", Title: "Work fetch over the project mix (CS2, WS2, JC2)",
		XLabel: "number of projects M", X: mixX, Metrics: []Metric{Waste, ShareViolation, Monotony, RPCsPerJob}}
	for _, wf := range []string{"wf1", "wf2"} {
		pol := with(Default, func(p *Policies) { p.WorkFetch = wf })
		e4.Series = append(e4.Series, Series{Name: strings.ToUpper(wf), Build: func(x float64) *sim.Scenario { return mix(pol, int(x)) }})
	}
	exps = append(exps, e4)

	// 5. WS1 vs WS2 with a 2-day connection interval and buffer, two
	// projects of equal share whose jobs differ 10× in size, job-size
	// std-dev σ = f × mean / 1000 (0.1 % to 100 % of the mean).
	e5 := &Experiment{ID: "exp5_send", Title: "Work send over job-size variability (CS2, WF2, JC2; connected every 2 days)",
		XLabel: "std-dev factor f (σ = f × mean / 1000)", LogX: true, X: sdX, Metrics: []Metric{Waste, Idle}}
	// The baseline's 9-day bound leaves a 2-day buffer far from any
	// deadline; the 3-day pair shows the policies where the bound binds.
	for _, c := range []struct {
		ws      string
		latency float64
	}{{sim.WorkSendWS1, BaseLatency}, {sim.WorkSendWS2, BaseLatency}, {sim.WorkSendWS1, 3}, {sim.WorkSendWS2, 3}} {
		ws, latency := c.ws, c.latency
		pol := with(Default, func(p *Policies) { p.WorkSend = ws })
		e5.Series = append(e5.Series, Series{Name: fmt.Sprintf("%s, %g-day bound", strings.ToUpper(ws), latency), Build: func(f float64) *sim.Scenario {
			return connection(pol, latency, f)
		}})
	}
	exps = append(exps, e5)

	// 6. JC1 vs JC2 over the estimate error: true work = f × estimate.
	e6 := &Experiment{ID: "exp6_estimate", Title: "Completion estimate over the estimate error (CS2, WF2, WS2)",
		XLabel: "estimate error f (true work / estimate)", X: errX, Metrics: []Metric{Waste, Idle}}
	for _, jc := range []string{sim.EstimateJC1, sim.EstimateJC2} {
		pol := with(Default, func(p *Policies) { p.Estimate = jc })
		e6.Series = append(e6.Series, Series{Name: strings.ToUpper(jc), Build: func(f float64) *sim.Scenario {
			sc := Baseline(pol)
			sc.Projects[0].Apps[0].EstimateFactor = f
			return sc
		}})
	}
	exps = append(exps, e6)
	return exps
}
