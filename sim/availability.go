package sim

import "math/rand/v2"

// availability is the host's on/off alternating renewal process (BCE's
// RANDOM_PROCESS): on periods exponential with mean onMean, off periods
// exponential with mean offMean, starting on with probability
// onMean/(onMean+offMean). Unlike BCE, which samples one state per step,
// it integrates the exact on time inside each step, so short periods are
// not lost to the step size.
type availability struct {
	always          bool
	on              bool
	until           float64 // simulated second at which the current period ends
	onMean, offMean float64
	rng             *rand.Rand
}

func newAvailability(spec *AvailabilitySpec, rng *rand.Rand) *availability {
	a := &availability{always: spec == nil || spec.OffMeanS == 0, on: true, rng: rng}
	if a.always {
		return a
	}
	a.onMean, a.offMean = spec.OnMeanS, spec.OffMeanS
	a.on = rng.Float64() < spec.OnFrac()
	a.until = a.period()
	return a
}

func (a *availability) period() float64 {
	if a.on {
		return a.rng.ExpFloat64() * a.onMean
	}
	return a.rng.ExpFloat64() * a.offMean
}

// advance moves the process over [t, t+dt) and returns how many of
// those seconds the host was on. a.on is then the state at t+dt.
func (a *availability) advance(t, dt float64) float64 {
	if a.always {
		return dt
	}
	end, on := t+dt, 0.0
	for a.until < end {
		if a.on {
			on += a.until - t
		}
		t = a.until
		a.on = !a.on
		a.until += a.period()
	}
	if a.on {
		on += end - t
	}
	return on
}
