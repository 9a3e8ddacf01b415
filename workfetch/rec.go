package workfetch

import (
	"math"

	"github.com/boincd/boincd/boinc"
)

// REC is the C++ client's "recent estimated credit" (SCHEDULING §1.2):
// boincd schedules by debt, but the GUIs show REC and the priority the
// C++ client derives from it, so it is kept the same way.
const (
	// RECHalfLife is cc_config's rec_half_life default (10 days), in
	// seconds.
	RECHalfLife = 10 * 86400.0
	// CobblestoneScale is credit per FLOP (COBBLESTONE_SCALE): 200 per
	// day of a 1 GFLOPS computer.
	CobblestoneScale = 200 / 86400e9
)

// UpdateREC is update_rec: the instance-seconds used[r] a project got in
// [start, now] (Unix seconds) become credit, estimated from the CPU
// benchmark pFpops and each resource's speed relative to a CPU, and are
// folded into its exponentially decaying average, in credit per day.
func UpdateREC(st *ProjectState, h Host, pFpops float64, used [NumRsc]float64, start, now float64) {
	UpdateRECHalfLife(st, h, pFpops, used, start, now, RECHalfLife)
}

// UpdateRECHalfLife is UpdateREC with cc_config's rec_half_life (seconds)
// in place of the default.
func UpdateRECHalfLife(st *ProjectState, h Host, pFpops float64, used [NumRsc]float64, start, now, halfLife float64) {
	x := 0.0
	for r := range NumRsc {
		x += used[r] * pFpops * relSpeed(&h, Rsc(r))
	}
	x *= CobblestoneScale
	if st.RECTime == 0 {
		// The C++ client starts a project's REC clock when it attaches, so
		// its first credit is averaged over the half-life like any other,
		// not taken as a whole day's rate.
		st.RECTime = start
	}
	boinc.UpdateAverage(now, start, x, halfLife, &st.REC, &st.RECTime)
}

// RECPriority is the C++ client's PROJECT::sched_priority as the GUIs
// show it: -(rec/Σrec)/(share/Σshare) over the eligible projects, 0 for
// a project with no recent credit and -1 for one that got exactly its
// share; zero-share (backup) projects rank below all others. Ineligible
// projects (eligible[i] false) get 0 and are left out of the sums.
func RECPriority(rec, share []float64, eligible []bool, out []float64) []float64 {
	out = grow(out, len(rec))
	recSum, shareSum := 0.0, 0.0
	for i := range rec {
		if eligible[i] {
			recSum += rec[i]
			shareSum += share[i]
		}
	}
	if recSum == 0 {
		recSum = 1
	}
	for i := range rec {
		out[i] = 0
		if !eligible[i] {
			continue
		}
		recFrac := rec[i] / recSum
		if share[i] <= 0 || shareSum <= 0 {
			out[i] = -1000 - recFrac
			continue
		}
		out[i] = -recFrac / (share[i] / shareSum)
	}
	return out
}

// RECPeakSpeed is the C++ client's total_peak_flops over p_fpops: the
// host's peak speed in CPU equivalents, Σ Instances[r] × RelSpeed[r]
// over the resources it has (the CPU counts 1 per instance).
func RECPeakSpeed(h Host) float64 {
	total := 0.0
	for r := range NumRsc {
		n := h.Instances[r]
		if !(n > 0) || math.IsInf(n, 0) {
			continue
		}
		s := 1.0
		if Rsc(r) != CPU {
			s = relSpeed(&h, Rsc(r))
		}
		total += n * s
	}
	return total
}

// RECSchedBump is adjust_rec_sched (SCHEDULING §1.2): each job the
// scheduler (or the round-robin simulation) tentatively selects raises
// its project's rec_frac by peak_flops(job)/total_peak_flops/24, about an
// hour of the host's credit, so one pass interleaves projects. This is
// the rise per CPU equivalent of the job's use, 1/(24 × RECPeakSpeed);
// the priority −rec_frac/rs_frac then falls by it over rs_frac. 0 for a
// host with nothing to compute on.
func RECSchedBump(h Host) float64 {
	t := RECPeakSpeed(h)
	if !(t > 0) {
		return 0
	}
	return 1 / (24 * t)
}

// RECFetchPenalty is the adjustment WORK_FETCH::setup makes to the REC
// priority before choosing whom to ask for work (work_fetch.cpp, §3.3
// step 6): every queued job lowers its project's priority by its
// est_flops_remaining / (wbtot × total_peak_flops). queue is the
// project's queued instance-seconds per resource (ProjSim.Queue), wbtot
// the buffer's high-water mark in seconds (Prefs.Total).
func RECFetchPenalty(queue [NumRsc]float64, h Host, wbtot float64) float64 {
	t := RECPeakSpeed(h)
	if !(t > 0) || !(wbtot > 0) {
		return 0
	}
	q := 0.0
	for r := range NumRsc {
		if !(h.Instances[r] > 0) || !(queue[r] > 0) {
			continue
		}
		s := 1.0
		if Rsc(r) != CPU {
			s = relSpeed(&h, Rsc(r))
		}
		q += queue[r] * s
	}
	return q / (wbtot * t)
}
