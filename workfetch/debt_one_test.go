package workfetch

import (
	"math"
	"math/rand/v2"
	"testing"
)

// owedSharesOne must give owedSharesAll's results to the bit whenever it
// takes the case, and leave the scratch untouched when it declines.
func TestOwedSharesOneMatchesAll(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shares := []float64{0, 1, 100, 250, 1e-9, math.Inf(1), -5, math.NaN()}
	taken, declined := 0, 0
	for c := range 20000 {
		np := 1 + rng.IntN(24)
		projects := make([]Project, np)
		elig := make([]bool, np)
		for i := range projects {
			projects[i].Share = shares[rng.IntN(len(shares))]
			if rng.IntN(3) > 0 {
				projects[i].Share = 1 + rng.Float64()*500
			}
			elig[i] = rng.IntN(4) > 0
		}
		r := rng.IntN(NumRsc)
		var h Host
		h.RelSpeed[r] = []float64{0, 1, 3.7, 12.5}[rng.IntN(4)]
		var all [NumRsc][]bool
		all[r] = elig
		var T [NumRsc]float64
		T[r] = rng.Float64() * 120

		mk := func() debtScratch {
			return debtScratch{owed: make([][NumRsc]float64, np), capOf: make([]float64, np), ent: make([]float64, np), share: make([]float64, np), active: make([]bool, np), fixed: make([]bool, np)}
		}
		one, ref := mk(), mk()
		owedSharesAll(projects, &h, &all, &T, &ref)
		if !owedSharesOne(projects, &h, elig, T[r], r, &one) {
			declined++
			for i := range np {
				if one.ent[i] != 0 || one.owed[i] != ([NumRsc]float64{}) {
					t.Fatalf("case %d: declined but wrote project %d", c, i)
				}
			}
			continue
		}
		taken++
		for i := range np {
			for k := range NumRsc {
				if math.Float64bits(one.owed[i][k]) != math.Float64bits(ref.owed[i][k]) {
					t.Fatalf("case %d project %d rsc %d: one %v, all %v", c, i, k, one.owed[i][k], ref.owed[i][k])
				}
			}
		}
	}
	if taken == 0 || declined == 0 {
		t.Fatalf("taken %d, declined %d: both paths must be exercised", taken, declined)
	}
}
