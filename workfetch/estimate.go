package workfetch

import "math"

// Duration-correction bounds (SCHEDULING §5, §7).
const (
	DCFMin = 0.01
	DCFMax = 100.0
	// Outside [DCFWackyLow, DCFWackyHigh] a project's estimates are not
	// trusted: it is asked for 1 s of work at most.
	DCFWackyLow  = 0.02
	DCFWackyHigh = 80.0
)

// UpdateDCF returns the project's duration correction factor after a job
// whose uncorrected estimate was estUncorrected seconds took elapsed
// seconds (PROJECT::update_duration_correction_factor): with
// raw = elapsed/estUncorrected and adj = raw/dcf, an underestimate
// (adj > 1.1) jumps to raw at once; a job much faster than expected
// (adj < 0.1) moves the factor 1 % of the way; otherwise 10 %. The result
// is clamped to [0.01, 100]. A non-positive dcf counts as 1; nonsensical
// inputs (non-positive or non-finite times) leave it unchanged.
func UpdateDCF(dcf, elapsed, estUncorrected float64) float64 {
	if !(dcf > 0) || math.IsInf(dcf, 0) {
		dcf = 1
	}
	if !(elapsed > 0) || !(estUncorrected > 0) || math.IsInf(elapsed, 0) || math.IsInf(estUncorrected, 0) {
		return dcf
	}
	raw := elapsed / estUncorrected
	adj := raw / dcf
	switch {
	case adj > 1.1:
		dcf = raw
	case adj < 0.1:
		dcf = 0.99*dcf + 0.01*raw
	default:
		dcf = 0.9*dcf + 0.1*raw
	}
	return min(DCFMax, max(DCFMin, dcf))
}

// wackyDCF reports whether a project's DCF is too far off to trust its
// estimates (0 means "not used" and is fine).
func wackyDCF(dcf float64) bool {
	return dcf != 0 && (dcf < DCFWackyLow || dcf > DCFWackyHigh)
}

// Remaining returns the estimated computing seconds left of a job
// (ACTIVE_TASK::est_dur − elapsed, SCHEDULING §5). staticEst is the
// static estimate with DCF applied, elapsed the job's elapsed time,
// fractionDone the app's last report and fdElapsed the elapsed time when
// it reported it (≤ 0 means unknown: elapsed is used).
//
//   - fd ≥ 1: done, 0 left.
//   - fd ≤ 0 (nothing reported): the duration is staticEst before the job
//     started, and elapsed/(1 − e^(−elapsed/staticEst)) once it runs, so
//     a job overrunning its estimate is never "almost done".
//   - otherwise, with F = fdElapsed/fd the duration the progress rate
//     implies: F if exact (the app's fraction done is trustworthy) or if
//     elapsed already exceeds staticEst; else the blend
//     fd·F + (1 − fd)·staticEst, trusting progress more as it grows.
//
// The result is never negative; bad inputs (NaN, negative) yield 0 rather
// than poison the simulation.
func Remaining(staticEst, elapsed, fractionDone, fdElapsed float64, exact bool) float64 {
	if !(elapsed > 0) {
		elapsed = 0
	}
	if !(staticEst > 0) {
		staticEst = 0
	}
	if fractionDone >= 1 {
		return 0
	}
	var est float64
	switch {
	case !(fractionDone > 0):
		if elapsed == 0 {
			est = staticEst
		} else if staticEst == 0 {
			est = elapsed
		} else {
			est = elapsed / -math.Expm1(-elapsed/staticEst)
		}
	default:
		W := staticEst
		exceeded := elapsed > W
		if exceeded {
			W = elapsed
		}
		if !(fdElapsed > 0) {
			fdElapsed = elapsed
		}
		F := fdElapsed / fractionDone
		if exact || exceeded {
			est = F
		} else {
			est = fractionDone*F + (1-fractionDone)*W
		}
	}
	r := est - elapsed
	if !(r > 0) {
		return 0
	}
	return min(r, maxSimSeconds)
}
