// Package bce writes the inputs of BOINC's own client emulator (BCE,
// client/sim.cpp and client/sim_util.cpp driving the C++ client's
// scheduling code) from a boincd-sim scenario, so that the two emulators
// run the same host, projects, apps and preferences from one definition
// and can be measured side by side (bench/emulator). It also reads BCE's
// results.dat.
//
// BCE's input format is what its parsers accept (BOINC master c5c6cb79,
// the same as 7.20.5 in these parts):
//
//   - client_state.xml: <host_info> (p_ncpus, p_fpops, <coprocs>; parsed by
//     HOST_INFO::parse), <time_stats> (on_frac and the emulator-only
//     on_lambda, the mean "on" period: CLIENT_TIME_STATS::parse starts an
//     on/off RANDOM_PROCESS from them), then each <project> followed by its
//     <app> and <app_version> elements (CLIENT_STATE::parse_state_file_aux
//     links an app to the project before it). Emulator-only app tags:
//     <latency_bound>, <fpops_est>, <fpops><mean/><std_dev/></fpops>,
//     <weight> (APP::parse under SIM).
//   - global_prefs.xml: GLOBAL_PREFS::parse.
//   - cc_config.xml: read_config_file; optional, written empty here so the
//     client's defaults are explicit.
//
// What BCE cannot express is refused with the reason (Unexpressible):
// events at fixed times (a project attaching, an app's jobs appearing or
// ending, a cap on an app's jobs, a periodic connection window), since
// BCE has only random on/off processes. GPU hosts and GPU apps are
// expressible (<coprocs> and <coproc> in an app version). Differences
// that remain in an expressible scenario are listed in Input.Notes.
package bce

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boincd/boincd/sim"
	"github.com/boincd/boincd/workfetch"
)

// gpuEfficiency is the factor WORK_FETCH::init (work_fetch.cpp) applies
// to a coprocessor's peak_flops to get its speed relative to a CPU:
// relative_speed = count × 0.2 × peak_flops / p_fpops.
const gpuEfficiency = 0.2

// Input is one BCE input directory and the flags it needs.
type Input struct {
	ClientState []byte // client_state.xml
	GlobalPrefs []byte // global_prefs.xml
	CCConfig    []byte // cc_config.xml
	// Args are the policy flags for BCE's command line
	// (--server_uses_workload, --cpu_sched_rr_only), to add to
	// --infile_prefix, --outfile_prefix, --duration and --delta.
	Args []string
	// Delta is the step in seconds (--delta), the scenario's step.
	Delta float64
	// Notes are the differences that remain: what BCE runs differently
	// from boincd-sim on this scenario, beyond each client's own policies.
	Notes []string
}

// Unexpressible says why a scenario has no BCE equivalent.
type Unexpressible struct {
	Reasons []string
}

func (e *Unexpressible) Error() string {
	return "BCE cannot express it: " + strings.Join(e.Reasons, "; ")
}

// Files are the file names Input writes.
var Files = []string{"client_state.xml", "global_prefs.xml", "cc_config.xml"}

// WriteDir writes the input files into dir (created if missing).
func (in *Input) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("bce: %w", err)
	}
	for i, b := range [][]byte{in.ClientState, in.GlobalPrefs, in.CCConfig} {
		if err := os.WriteFile(filepath.Join(dir, Files[i]), b, 0o644); err != nil {
			return fmt.Errorf("bce: %w", err)
		}
	}
	return nil
}

// The XML that BCE reads. Field order is the order written.

type clientState struct {
	XMLName   xml.Name `xml:"client_state"`
	HostInfo  hostInfo
	TimeStats timeStats
	Projects  []any // project, then its apps and app versions, in order
}

type hostInfo struct {
	XMLName xml.Name `xml:"host_info"`
	NCPUs   int      `xml:"p_ncpus"`
	FPOPS   float64  `xml:"p_fpops"`
	Coprocs *coprocs `xml:"coprocs,omitempty"`
}

type coprocs struct {
	CUDA  *coproc `xml:"coproc_cuda,omitempty"`
	ATI   *coproc `xml:"coproc_ati,omitempty"`
	Intel *coproc `xml:"coproc_intel_gpu,omitempty"`
}

type coproc struct {
	Count     int     `xml:"count"`
	PeakFlops float64 `xml:"peak_flops"`
}

type timeStats struct {
	XMLName         xml.Name `xml:"time_stats"`
	OnFrac          float64  `xml:"on_frac"`
	ConnectedFrac   float64  `xml:"connected_frac"`
	ActiveFrac      float64  `xml:"active_frac"`
	GPUActiveFrac   float64  `xml:"gpu_active_frac"`
	OnLambda        float64  `xml:"on_lambda"`
	ConnectedLambda float64  `xml:"connected_lambda"`
	ActiveLambda    float64  `xml:"active_lambda"`
	GPUActiveLambda float64  `xml:"gpu_active_lambda"`
}

type project struct {
	XMLName       xml.Name  `xml:"project"`
	MasterURL     string    `xml:"master_url"`
	ProjectName   string    `xml:"project_name"`
	ResourceShare float64   `xml:"resource_share"`
	DontUseDCF    *struct{} `xml:"dont_use_dcf,omitempty"`
}

type app struct {
	XMLName      xml.Name `xml:"app"`
	Name         string   `xml:"name"`
	LatencyBound float64  `xml:"latency_bound"`
	FpopsEst     float64  `xml:"fpops_est"`
	Fpops        normal   `xml:"fpops"`
	Weight       float64  `xml:"weight"`
}

type normal struct {
	Mean   float64 `xml:"mean"`
	StdDev float64 `xml:"std_dev"`
}

type appVersion struct {
	XMLName    xml.Name `xml:"app_version"`
	AppName    string   `xml:"app_name"`
	VersionNum int      `xml:"version_num"`
	AvgNCPUs   float64  `xml:"avg_ncpus"`
	Flops      float64  `xml:"flops"`
	Coproc     *coprocReq
}

type coprocReq struct {
	XMLName xml.Name `xml:"coproc"`
	Type    string   `xml:"type"`
	Count   float64  `xml:"count"`
}

type globalPrefs struct {
	XMLName                    xml.Name `xml:"global_preferences"`
	WorkBufMinDays             float64  `xml:"work_buf_min_days"`
	WorkBufAdditionalDays      float64  `xml:"work_buf_additional_days"`
	CPUSchedulingPeriodMinutes float64  `xml:"cpu_scheduling_period_minutes"`
	// All CPUs, all the time, whether or not the (emulated) user is
	// active: boincd-sim has no such limits.
	MaxNCPUsPct         float64 `xml:"max_ncpus_pct"`
	CPUUsageLimit       float64 `xml:"cpu_usage_limit"`
	NIUMaxNCPUsPct      float64 `xml:"niu_max_ncpus_pct"`
	NIUCPUUsageLimit    float64 `xml:"niu_cpu_usage_limit"`
	SuspendCPUUsage     float64 `xml:"suspend_cpu_usage"`
	NIUSuspendCPUUsage  float64 `xml:"niu_suspend_cpu_usage"`
	RunIfUserActive     int     `xml:"run_if_user_active"`
	RunGPUIfUserActive  int     `xml:"run_gpu_if_user_active"`
	RunOnBatteries      int     `xml:"run_on_batteries"`
	SuspendIfNoRecentIn float64 `xml:"suspend_if_no_recent_input"`
}

// alwaysLambda is the mean "up" period written for processes that are
// always up (frac 1): RANDOM_PROCESS::sample returns true at once when
// frac is 1, so the value only has to be positive.
const alwaysLambda = 3600

// FromScenario builds the BCE input for a validated scenario (sim's
// LoadScenario, ParseScenario or BuiltinScenario), or says why BCE cannot
// run it (*Unexpressible).
func FromScenario(sc *sim.Scenario) (*Input, error) {
	var why, notes []string
	h := sc.Host
	if h.ConnectionIntervalDays > 0 {
		why = append(why, fmt.Sprintf("a connection window at fixed times (connection_interval_days = %g); BCE's connection is a random on/off process", h.ConnectionIntervalDays))
	}
	for _, p := range sc.Projects {
		if p.AttachAtDays > 0 {
			why = append(why, fmt.Sprintf("project %q attaches at day %g; BCE has every project from the start", p.Name, p.AttachAtDays))
		}
		for j, a := range p.Apps {
			if a.AvailableFromDays > 0 || a.AvailableToDays > 0 {
				why = append(why, fmt.Sprintf("project %q app %d has jobs only from day %g to %s; BCE's apps have jobs throughout", p.Name, j, a.AvailableFromDays, dayOrEnd(a.AvailableToDays)))
			}
			if a.MaxJobs > 0 {
				why = append(why, fmt.Sprintf("project %q app %d is capped at %d jobs; BCE's servers send an endless stream", p.Name, j, a.MaxJobs))
			}
		}
	}
	if len(why) > 0 {
		return nil, &Unexpressible{Reasons: why}
	}

	cs := clientState{
		HostInfo: hostInfo{NCPUs: h.CPUs, FPOPS: h.CPUFlops},
		TimeStats: timeStats{
			OnFrac: 1, ConnectedFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1,
			OnLambda: alwaysLambda, ConnectedLambda: alwaysLambda, ActiveLambda: alwaysLambda, GPUActiveLambda: alwaysLambda,
		},
	}
	if a := h.Availability; a != nil && a.OffMeanS > 0 {
		// RANDOM_PROCESS::init: the "on" periods are exponential with mean
		// lambda, the "off" ones with mean lambda/frac − lambda; with
		// frac = on/(on+off) that is off_mean_s exactly.
		cs.TimeStats.OnFrac = a.OnFrac()
		cs.TimeStats.OnLambda = a.OnMeanS
	}
	var gpuRsc [workfetch.NumRsc]bool
	if len(h.GPUs) > 0 {
		cs.HostInfo.Coprocs = &coprocs{}
		for _, g := range h.GPUs {
			r, _ := workfetch.RscByName(g.Type)
			gpuRsc[r] = true
			// BCE's relative speed of the resource is count × 0.2 ×
			// peak_flops / p_fpops (WORK_FETCH::init), and it books a job's
			// peak FLOPs as coproc_usage × that × p_fpops (app_peak_flops):
			// a peak_flops of relative_speed × cpu_flops / (0.2 × count)
			// makes both per instance what boincd-sim uses.
			c := &coproc{Count: g.Count, PeakFlops: g.RelativeSpeed * h.CPUFlops / (gpuEfficiency * float64(g.Count))}
			switch r {
			case workfetch.NVIDIA:
				cs.HostInfo.Coprocs.CUDA = c
			case workfetch.AMD:
				cs.HostInfo.Coprocs.ATI = c
			case workfetch.Intel:
				cs.HostInfo.Coprocs.Intel = c
			}
		}
	}

	pol := sc.Policies
	in := &Input{Delta: sc.StepSeconds}
	switch pol.WorkSend {
	case sim.WorkSendWS2:
		// simulate_rpc with server_uses_workload: each job is checked with
		// an EDF simulation of the host's queue (sched/edf_sim.cpp).
		in.Args = append(in.Args, "--server_uses_workload")
	case sim.WorkSendPlain:
		// BCE's server's default: est_delay + run time within the bound.
	default: // ws1: only projects with deadline_check screen jobs
		if !allDeadlineCheck(sc) {
			notes = append(notes, "BCE's servers always screen jobs by deadline (simulate_rpc: estimated delay + run time within the latency bound); this scenario's send unscreened (ws1)")
		}
	}
	if pol.CPUSched == "cs1" {
		in.Args = append(in.Args, "--cpu_sched_rr_only")
	}
	allNoDCF := pol.Estimate == sim.EstimateJC1

	for _, p := range sc.Projects {
		pr := project{
			MasterURL:     "https://" + urlHost(p.Name) + ".bce.invalid/",
			ProjectName:   p.Name,
			ResourceShare: p.Share,
		}
		if p.DontUseDCF || allNoDCF {
			pr.DontUseDCF = &struct{}{}
		}
		cs.Projects = append(cs.Projects, pr)
		for j, a := range p.Apps {
			name := fmt.Sprintf("%s_%d", urlHost(p.Name), j)
			// make_job (sim.cpp) runs a job for app.fpops_est FLOPs and
			// gives the client app.fpops.sample() as its estimate: the
			// size is fixed and the spread is in the estimate. So the true
			// mean size goes to fpops_est, the server's estimate
			// (flops_mean / estimate_factor) to fpops.mean.
			ap := app{
				Name:         name,
				LatencyBound: a.LatencyBoundDays * 86400,
				FpopsEst:     a.FlopsMean,
				Fpops:        normal{Mean: a.FlopsMean / a.EstimateFactor, StdDev: a.FlopsStddev / a.EstimateFactor},
				Weight:       1,
			}
			if a.FlopsStddev > 0 {
				notes = appendOnce(notes, "job sizes: BCE runs every job of an app at its mean size and puts the spread in the estimate (make_job)")
			}
			av := appVersion{AppName: name, VersionNum: 1, AvgNCPUs: a.NCPUs, Flops: a.NCPUs * h.CPUFlops}
			r, _ := workfetch.RscByName(a.Resource)
			if r.IsGPU() {
				if !gpuRsc[r] {
					// BCE drops an app whose versions all need a missing
					// GPU (get_app_params), as boincd-sim never asks for it.
					notes = appendOnce(notes, fmt.Sprintf("apps for a GPU the host lacks (%s) are dropped by BCE, never asked for by boincd-sim", r))
				}
				av.Coproc = &coprocReq{Type: r.String(), Count: a.NGPUs}
				// boincd-sim runs a GPU job at ngpus × relative_speed ×
				// cpu_flops (its CPU part does not add speed).
				av.Flops = a.NGPUs * relSpeed(h, r) * h.CPUFlops
				if av.Flops == 0 {
					av.Flops = a.NGPUs * h.CPUFlops
				}
			}
			cs.Projects = append(cs.Projects, ap, av)
		}
		if len(p.Outages) > 0 {
			var spans []string
			for _, o := range p.Outages {
				spans = append(spans, fmt.Sprintf("days %g–%g", o.FromDays, o.ToDays))
			}
			notes = append(notes, fmt.Sprintf("without %q's server outage (%s): BCE's server availability is only a random on/off process", p.Name, strings.Join(spans, ", ")))
		}
	}
	if sc.EventDriven {
		notes = append(notes, "BCE steps at a fixed --delta; this scenario is event-driven")
	}
	if sc.RPCDelaySeconds > 0 {
		notes = append(notes, fmt.Sprintf("BCE's scheduler replies at once; this scenario's take %g s", sc.RPCDelaySeconds))
	}

	var err error
	if in.ClientState, err = marshal(cs); err != nil {
		return nil, err
	}
	gp := globalPrefs{
		WorkBufMinDays:             sc.Prefs.WorkBufMinDays,
		WorkBufAdditionalDays:      sc.Prefs.WorkBufAdditionalDays,
		CPUSchedulingPeriodMinutes: sc.Prefs.CPUSchedulingPeriodMinutes,
		MaxNCPUsPct:                100, CPUUsageLimit: 100, NIUMaxNCPUsPct: 100, NIUCPUUsageLimit: 100,
		RunIfUserActive: 1, RunGPUIfUserActive: 1, RunOnBatteries: 1,
	}
	if in.GlobalPrefs, err = marshal(gp); err != nil {
		return nil, err
	}
	in.CCConfig = []byte("<cc_config>\n  <options>\n  </options>\n</cc_config>\n")
	in.Notes = notes
	return in, nil
}

func allDeadlineCheck(sc *sim.Scenario) bool {
	for _, p := range sc.Projects {
		if !p.DeadlineCheck {
			return false
		}
	}
	return true
}

func relSpeed(h sim.HostSpec, r workfetch.Rsc) float64 {
	for _, g := range h.GPUs {
		if gr, _ := workfetch.RscByName(g.Type); gr == r {
			return g.RelativeSpeed
		}
	}
	return 0
}

func dayOrEnd(d float64) string {
	if d == 0 {
		return "the end"
	}
	return "day " + strconv.FormatFloat(d, 'g', -1, 64)
}

func appendOnce(xs []string, s string) []string {
	for _, x := range xs {
		if x == s {
			return xs
		}
	}
	return append(xs, s)
}

// urlHost keeps a project name's letters, digits and dashes for the
// master URL and app names (BCE derives directory names from the URL);
// the project_name element keeps the name as it is.
func urlHost(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return b.String()
}

func marshal(v any) ([]byte, error) {
	b, err := xml.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("bce: %w", err)
	}
	return append(b, '\n'), nil
}

// Results are BCE's figures of merit (results.dat, written by
// SIM_RESULTS::print: "wf %f if %f sv %f m %f r %f").
type Results struct {
	WastedFrac, IdleFrac, ShareViolation, Monotony, RPCsPerJob float64
}

// ParseResults reads results.dat's one line.
func ParseResults(data []byte) (Results, error) {
	f := strings.Fields(string(data))
	var r Results
	want := []struct {
		key string
		dst *float64
	}{{"wf", &r.WastedFrac}, {"if", &r.IdleFrac}, {"sv", &r.ShareViolation}, {"m", &r.Monotony}, {"r", &r.RPCsPerJob}}
	if len(f) != 2*len(want) {
		return r, fmt.Errorf("bce: results.dat: %q: want \"wf X if X sv X m X r X\"", bytes.TrimSpace(data))
	}
	for i, w := range want {
		if f[2*i] != w.key {
			return r, fmt.Errorf("bce: results.dat: field %d is %q, want %q", i+1, f[2*i], w.key)
		}
		s := f[2*i+1]
		if strings.EqualFold(strings.TrimPrefix(s, "-"), "nan") {
			// printf's %f of 0/0 (share violation when nothing ran).
			*w.dst = math.NaN()
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(v, 0) {
			return r, fmt.Errorf("bce: results.dat: %s = %q: want a number", w.key, s)
		}
		*w.dst = v
	}
	return r, nil
}
