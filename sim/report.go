package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/boincd/boincd/workfetch"
)

// Report is the outcome of one emulation.
type Report struct {
	Scenario    string  `json:"scenario"`
	Seed        uint64  `json:"seed"`
	Days        float64 `json:"days"`
	StepSeconds float64 `json:"step_seconds"`
	EventDriven bool    `json:"event_driven"`
	Policy      string  `json:"policy"`
	Scheduler   string  `json:"scheduler"`
	Fetcher     string  `json:"fetcher"`
	Accounter   string  `json:"accounter"`
	// Resources lists the host's resource types, in the order of every
	// per-resource slice below.
	Resources []string `json:"resources"`
	Metrics   Metrics  `json:"metrics"`
	// PerResource is the total processing per resource.
	PerResource []Usage         `json:"per_resource"`
	Projects    []ProjectReport `json:"projects"`
	Timeline    []Bucket        `json:"timeline,omitempty"`
}

// Metrics are the scheduling-quality figures (formulas in the package
// doc and sim/README.md).
type Metrics struct {
	IdleFraction   float64 `json:"idle_fraction"`
	WastedFraction float64 `json:"wasted_fraction"`
	ShareViolation float64 `json:"share_violation"`
	Monotony       float64 `json:"monotony"`
	RPCsPerJob     float64 `json:"rpcs_per_job"`

	OnFraction  float64 `json:"on_fraction"` // of simulated time the host was on
	FlopsTotal  float64 `json:"flops_total"` // peak FLOPs available while on
	FlopsUsed   float64 `json:"flops_used"`
	FlopsWasted float64 `json:"flops_wasted"`
	RPCs        int     `json:"rpcs"`
	FailedRPCs  int     `json:"failed_rpcs"` // to servers that were down; not in RPCs
	Jobs        int     `json:"jobs"`
	JobsMet     int     `json:"jobs_met"`
	JobsMissed  int     `json:"jobs_missed"`
}

// Usage is processing received on one resource.
type Usage struct {
	Rsc             string  `json:"rsc"`
	InstanceSeconds float64 `json:"instance_seconds"`
	Flops           float64 `json:"flops"`
	// Pct is the percentage of that resource's processing (for a
	// project) or of the host's peak while on (for a resource total).
	Pct float64 `json:"pct"`
}

// ProjectRsc is a project's state for one resource at the end.
type ProjectRsc struct {
	Usage
	Debt            float64 `json:"debt"`
	BackoffInterval float64 `json:"backoff_interval"`
	MaxBackoff      float64 `json:"max_backoff_interval"`
	Requests        int     `json:"requests"` // RPCs that asked for this resource
	JobsReceived    int     `json:"jobs_received"`
}

// ProjectReport is one project's outcome.
type ProjectReport struct {
	Name     string       `json:"name"`
	Share    float64      `json:"share"`
	Attached bool         `json:"attached"`
	Rsc      []ProjectRsc `json:"rsc"`
	Flops    float64      `json:"flops"`
	// FlopsPct is the project's part of all FLOPs used; SharePct its
	// resource share's part of all shares.
	FlopsPct    float64 `json:"flops_pct"`
	SharePct    float64 `json:"share_pct"`
	Jobs        int     `json:"jobs"`
	Met         int     `json:"met"`
	Missed      int     `json:"missed"`
	InQueue     int     `json:"in_queue"` // unfinished at the end
	RPCs        int     `json:"rpcs"`
	FailedRPCs  int     `json:"failed_rpcs"`
	FlopsWasted float64 `json:"flops_wasted"`
	DCF         float64 `json:"dcf"`
}

// Bucket is one timeline slot: instance-seconds per project (scenario
// order) and resource (Report.Resources order).
type Bucket struct {
	StartDays       float64     `json:"start_days"`
	InstanceSeconds [][]float64 `json:"instance_seconds"`
}

// hostRsc lists the resource types the host has.
func (e *engine) hostRsc() []workfetch.Rsc {
	var out []workfetch.Rsc
	for r := range workfetch.NumRsc {
		if e.host.Instances[r] > 0 {
			out = append(out, workfetch.Rsc(r))
		}
	}
	return out
}

func pct(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return 100 * a / b
}

func (e *engine) report() *Report {
	rs := e.hostRsc()
	rep := &Report{
		Scenario:    e.sc.Path,
		Seed:        e.sc.Seed,
		Days:        e.sc.DurationDays,
		StepSeconds: e.step,
		EventDriven: e.sc.EventDriven,
		Policy:      e.opt.Policy.Name(),
		Scheduler:   e.opt.Scheduler.Name(),
		Fetcher:     e.opt.Fetcher.Name(),
		Accounter:   e.opt.Accounter.Name(),
	}
	for i, row := range e.timeline {
		b := Bucket{StartDays: float64(i) * e.opt.BucketSeconds / 86400, InstanceSeconds: make([][]float64, len(row))}
		for p := range row {
			for _, r := range rs {
				b.InstanceSeconds[p] = append(b.InstanceSeconds[p], row[p][r])
			}
		}
		rep.Timeline = append(rep.Timeline, b)
	}
	for _, r := range rs {
		rep.Resources = append(rep.Resources, r.String())
	}
	inQueue := make([]int, len(e.projs))
	for i := range e.jobs {
		inQueue[e.jobs[i].proj]++
	}
	var rscInst, rscFlops [workfetch.NumRsc]float64
	var used, wasted, shareSum float64
	m := &rep.Metrics
	for i := range e.projs {
		p := &e.projs[i]
		for r := range workfetch.NumRsc {
			rscInst[r] += p.inst[r]
			rscFlops[r] += p.flops[r]
			used += p.flops[r]
		}
		wasted += p.wasted
		shareSum += p.spec.Share
		m.JobsMet += p.met
		m.JobsMissed += p.missed
	}
	peak := 0.0
	for _, r := range rs {
		peakR := e.host.Instances[r] * e.host.RelSpeed[r] * e.flops * e.tOn
		peak += peakR
		rep.PerResource = append(rep.PerResource, Usage{Rsc: r.String(), InstanceSeconds: rscInst[r], Flops: rscFlops[r], Pct: pct(rscFlops[r], peakR)})
	}
	m.OnFraction = e.tOn / math.Max(e.tTotal, 1e-9)
	m.FlopsTotal = peak
	m.FlopsUsed = used
	m.FlopsWasted = wasted
	m.RPCs, m.FailedRPCs, m.Jobs = e.rpcs, e.failedRPCs, e.njobs
	if peak > 0 {
		m.IdleFraction = math.Max(0, peak-used) / peak
		m.WastedFraction = wasted / peak
	}
	monoSum := 0.0
	for i := range e.projs {
		p := &e.projs[i]
		pr := ProjectReport{
			Name:        p.spec.Name,
			Share:       p.spec.Share,
			Attached:    p.core >= 0,
			SharePct:    pct(p.spec.Share, shareSum),
			Jobs:        p.jobs,
			Met:         p.met,
			Missed:      p.missed,
			InQueue:     inQueue[i],
			RPCs:        p.rpcs,
			FailedRPCs:  p.failed,
			FlopsWasted: p.wasted,
			DCF:         1,
		}
		for _, r := range rs {
			pr.Flops += p.flops[r]
			u := ProjectRsc{
				Usage:        Usage{Rsc: r.String(), InstanceSeconds: p.inst[r], Flops: p.flops[r], Pct: pct(p.inst[r], rscInst[r])},
				MaxBackoff:   p.maxBackoff[r],
				Requests:     p.requests[r],
				JobsReceived: p.gotRsc[r],
			}
			if p.core >= 0 {
				st := &e.core[p.core].State
				u.Debt = st.Debt[r]
				u.BackoffInterval = st.Backoff[r].Interval
			}
			pr.Rsc = append(pr.Rsc, u)
		}
		if p.core >= 0 {
			pr.DCF = e.core[p.core].State.DCF
		}
		pr.FlopsPct = pct(pr.Flops, used)
		if used > 0 && shareSum > 0 {
			m.ShareViolation += math.Abs(pr.Flops-used*p.spec.Share/shareSum) / used
		}
		if e.tOn > 0 {
			monoSum += math.Sqrt(p.idleSS / e.tOn)
		}
		rep.Projects = append(rep.Projects, pr)
	}
	if n := float64(len(e.projs)); n > 0 {
		x := monoSum / n / (e.slice.Seconds() * n)
		m.Monotony = x / (1 + x)
	}
	if e.njobs > 0 {
		m.RPCsPerJob = float64(e.rpcs) / (2 * float64(e.njobs))
	}
	return rep
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}

// WriteText writes the report as readable tables.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	clock := fmt.Sprintf("step %g s", r.StepSeconds)
	if r.EventDriven {
		clock = fmt.Sprintf("event-driven, steps of at most %g s", r.StepSeconds)
	}
	fmt.Fprintf(&b, "scenario %s: %g days, %s, seed %d\n", r.Scenario, r.Days, clock, r.Seed)
	fmt.Fprintf(&b, "policy %s, scheduler %s, fetch %s, accounting %s\n\n", r.Policy, r.Scheduler, r.Fetcher, r.Accounter)
	m := r.Metrics
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "idle fraction\t%.4f\n", m.IdleFraction)
	fmt.Fprintf(tw, "wasted fraction\t%.4f\n", m.WastedFraction)
	fmt.Fprintf(tw, "share violation\t%.4f\n", m.ShareViolation)
	fmt.Fprintf(tw, "monotony\t%.4f\n", m.Monotony)
	fmt.Fprintf(tw, "RPCs per job\t%.4f\t(%d RPCs, %d jobs; %d RPCs to servers that were down)\n", m.RPCsPerJob, m.RPCs, m.Jobs, m.FailedRPCs)
	fmt.Fprintf(tw, "host on\t%.1f%%\n", 100*m.OnFraction)
	fmt.Fprintf(tw, "jobs finished\t%d met, %d missed their deadline\n", m.JobsMet, m.JobsMissed)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	b.WriteString("\nper resource (busy = % of peak while on)\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "rsc\tinstance-hours\tFLOPs\tbusy %\t\n")
	for _, u := range r.PerResource {
		fmt.Fprintf(tw, "%s\t%.1f\t%.4g\t%.1f\t\n", u.Rsc, u.InstanceSeconds/3600, u.Flops, u.Pct)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	b.WriteString("\nper project (rsc columns: % of that resource's processing)\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "project\tshare %\tFLOPs %\t")
	for _, name := range r.Resources {
		fmt.Fprintf(tw, "%s %%\t%s h\t", name, name)
	}
	fmt.Fprint(tw, "jobs\tmet\tmissed\tqueued\tRPCs\tDCF\t\n")
	for _, p := range r.Projects {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t", p.Name, p.SharePct, p.FlopsPct)
		for _, u := range p.Rsc {
			fmt.Fprintf(tw, "%.1f\t%.1f\t", u.Pct, u.InstanceSeconds/3600)
		}
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%.3f\t\n", p.Jobs, p.Met, p.Missed, p.InQueue, p.RPCs, p.DCF)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	b.WriteString("\nper project and resource at the end\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "project\trsc\tdebt s\tbackoff s\tmax backoff s\tasked\tjobs got\t\n")
	for _, p := range r.Projects {
		for _, u := range p.Rsc {
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.0f\t%d\t%d\t\n", p.Name, u.Rsc, u.Debt, u.BackoffInterval, u.MaxBackoff, u.Requests, u.JobsReceived)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
