package coproc

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"
)

// Benchmark measures per-CPU floating-point and integer speed, the
// p_fpops and p_iops of <host_info>, in the units the C++ client reports:
//
//   - fpops is Whetstone instructions per second (Curnow and Wichmann's
//     double-precision Whetstone, the modules of BOINC's whetstone.cpp:
//     array arithmetic, conditional jumps, integer arithmetic,
//     trigonometry, procedure calls, array references and
//     sqrt/exp/log; one pass of ten iterations is one million
//     Whetstone instructions);
//   - iops is VAX MIPS from Dhrystone 2.1 (Weicker's record, string,
//     enumeration and array procedures; Dhrystones per second / 1757),
//     as BOINC's dhrystone.cpp converts it.
//
// Both kernels run on ncpus goroutines at once, each locked to its own OS
// thread, so shared caches, memory bandwidth and turbo limits count as they
// will when every CPU runs a task. Each kernel takes about d. Within that,
// every thread times many short slices and keeps its fastest: other
// processes and interrupts only ever slow a slice down, so the best slice
// is the stable measure of what the CPU can do (the spread over repeated
// runs is a few percent where a plain average swings with the load). The
// result is the mean over threads of those figures, per CPU. A cancelled
// ctx ends the measurement early with what was measured so far.
func Benchmark(ctx context.Context, ncpus int, d time.Duration) (fpops, iops float64) {
	if ncpus < 1 {
		ncpus = 1
	}
	// The daemon runs with fewer Ps than CPUs (it mostly waits); locked
	// threads do not add Ps, so without this the workers would take
	// turns and each would measure a fraction of its CPU.
	if p := runtime.GOMAXPROCS(0); p < ncpus {
		runtime.GOMAXPROCS(ncpus)
		defer runtime.GOMAXPROCS(p)
	}
	fpops = runKernel(ctx, ncpus, d, func() kernel { return newWhetstone() })
	iops = runKernel(ctx, ncpus, d, func() kernel { return newDhrystone() })
	return fpops, iops
}

// ScaleDCF is the factor to multiply every project's duration correction
// factor by when the benchmarks change from oldFpops to newFpops, as the
// C++ client's cpu_benchmarks_poll does
// (scale_duration_correction_factors(p_fpops/old_p_fpops)): runtime
// estimates divide by the benchmark, so the DCF moves the same way to keep
// them where experience put them. It is 1 when either figure is unusable
// (first benchmark, skipped benchmarks, non-finite values). Projects that
// were told <dont_use_dcf/> keep theirs.
func ScaleDCF(oldFpops, newFpops float64) float64 {
	if !(oldFpops > 0) || !(newFpops > 0) || math.IsInf(oldFpops, 0) || math.IsInf(newFpops, 0) {
		return 1
	}
	return newFpops / oldFpops
}

// kernel is one benchmark's per-thread state. run does n units of work and
// returns how many operations (in the benchmark's unit) that was.
type kernel interface {
	run(n int) float64
	// unit is how many units take roughly 10-100 µs, the granularity of
	// time checks.
	unit() int
}

// benchSlices is how many timed slices each thread cuts its share of d
// into, each at most maxSlice long.
const (
	benchSlices = 20
	maxSlice    = 100 * time.Millisecond
)

func runKernel(ctx context.Context, ncpus int, d time.Duration, mk func() kernel) float64 {
	deadline := time.Now().Add(d)
	slice := min(max(d/benchSlices, time.Millisecond), maxSlice)
	res := make([]float64, ncpus)
	var wg sync.WaitGroup
	for i := range ncpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// One OS thread per worker, so the scheduler cannot fold
			// two workers onto one CPU.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			res[i] = bestRate(ctx, mk(), slice, deadline)
		}()
	}
	wg.Wait()
	sum := 0.0
	for _, r := range res {
		sum += r
	}
	return sum / float64(ncpus)
}

// bestRate times slices of about the given length until deadline (at least
// one slice) and returns the fastest slice's operations per second.
func bestRate(ctx context.Context, k kernel, slice time.Duration, deadline time.Time) float64 {
	n := k.unit()
	k.run(n) // warm caches and branch predictors outside the timing
	best := 0.0
	done := ctx.Done()
	for {
		start := time.Now()
		ops := 0.0
		var el time.Duration
		for el < slice {
			ops += k.run(n)
			el = time.Since(start)
			select {
			case <-done:
				return max(best, ops/el.Seconds())
			default:
			}
		}
		best = max(best, ops/el.Seconds())
		if !time.Now().Before(deadline) {
			return best
		}
	}
}

// whetstone is the double-precision Whetstone of Curnow and Wichmann
// (1976), as in BOINC's client/whetstone.cpp. Module 1, 5 and 10 have zero
// loop counts in the standard weights and are left out.
type whetstone struct {
	e1   [5]float64
	sink float64
}

func newWhetstone() *whetstone { return &whetstone{} }

// whetIterations scales the module loop counts; ten iterations are one
// million Whetstone instructions.
const whetIterations = 10

func (w *whetstone) unit() int { return 1 }

const (
	whetT  = 0.499975
	whetT1 = 0.50025
	whetT2 = 2.0
)

func (w *whetstone) run(passes int) float64 {
	const (
		n2  = 12 * whetIterations
		n3  = 14 * whetIterations
		n4  = 345 * whetIterations
		n6  = 210 * whetIterations
		n7  = 32 * whetIterations
		n8  = 899 * whetIterations
		n9  = 616 * whetIterations
		n11 = 93 * whetIterations
	)
	e := &w.e1
	var acc float64
	for range passes {
		// Module 2: array elements.
		e[1], e[2], e[3], e[4] = 1, -1, -1, -1
		for range n2 {
			e[1] = (e[1] + e[2] + e[3] - e[4]) * whetT
			e[2] = (e[1] + e[2] - e[3] + e[4]) * whetT
			e[3] = (e[1] - e[2] + e[3] + e[4]) * whetT
			e[4] = (-e[1] + e[2] + e[3] + e[4]) * whetT
		}
		// Module 3: array as parameter.
		for range n3 {
			whetPA(e)
		}
		// Module 4: conditional jumps.
		j := 1
		for range n4 {
			if j == 1 {
				j = 2
			} else {
				j = 3
			}
			if j > 2 {
				j = 0
			} else {
				j = 1
			}
			if j < 1 {
				j = 1
			} else {
				j = 0
			}
		}
		// Module 6: integer arithmetic.
		j, k, l := 1, 2, 3
		for range n6 {
			j = j * (k - j) * (l - k)
			k = l*k - (l-j)*k
			l = (l - k) * (k + j)
			e[l-1] = float64(j + k + l)
			e[k-1] = float64(j * k * l)
		}
		// Module 7: trigonometric functions.
		x, y := 0.5, 0.5
		for range n7 {
			x = whetT * math.Atan(whetT2*math.Sin(x)*math.Cos(x)/(math.Cos(x+y)+math.Cos(x-y)-1))
			y = whetT * math.Atan(whetT2*math.Sin(y)*math.Cos(y)/(math.Cos(x+y)+math.Cos(x-y)-1))
		}
		// Module 8: procedure calls.
		x, y, z := 1.0, 1.0, 1.0
		for range n8 {
			z = whetP3(x, y)
		}
		// Module 9: array references.
		j, k, l = 1, 2, 3
		e[1], e[2], e[3] = 1, 2, 3
		for range n9 {
			whetP0(e, j, k, l)
		}
		// Module 11: standard functions.
		x = 0.75
		for range n11 {
			x = math.Sqrt(math.Exp(math.Log(x) / whetT1))
		}
		acc += x + y + z + float64(j)
	}
	// Kept so the compiler cannot drop the work.
	w.sink += acc
	return float64(passes) * whetIterations * 100_000
}

func whetPA(e *[5]float64) {
	for range 6 {
		e[1] = (e[1] + e[2] + e[3] - e[4]) * whetT
		e[2] = (e[1] + e[2] - e[3] + e[4]) * whetT
		e[3] = (e[1] - e[2] + e[3] + e[4]) * whetT
		e[4] = (-e[1] + e[2] + e[3] + e[4]) / whetT2
	}
}

//go:noinline
func whetP3(x, y float64) float64 {
	x = whetT * (x + y)
	y = whetT * (x + y)
	return (x + y) / whetT2
}

//go:noinline
func whetP0(e *[5]float64, j, k, l int) {
	e[j] = e[k]
	e[k] = e[l]
	e[l] = e[j]
}

// Dhrystone 2.1 (Weicker 1988), with the benchmark's globals as fields so
// that each thread has its own.
type dhrystone struct {
	ptrGlob, nextPtrGlob *dhryRecord
	intGlob              int
	boolGlob             bool
	ch1Glob, ch2Glob     byte
	arr1Glob             [50]int
	arr2Glob             [50][50]int
	runIndex             int
	// Locals of the main loop after the last run, for checking the port
	// against the published final values.
	int1Loc, int2Loc, int3Loc int
	enumLoc                   dhryEnum
	str1Loc, str2Loc          dhryStr
}

type dhryEnum int

const (
	ident1 dhryEnum = iota
	ident2
	ident3
	ident4
	ident5
)

type dhryStr [31]byte

func dstr(s string) (d dhryStr) {
	copy(d[:], s)
	return d
}

type dhryRecord struct {
	ptrComp  *dhryRecord
	discr    dhryEnum
	enumComp dhryEnum
	intComp  int
	strComp  dhryStr
}

var (
	dhrySomeString = dstr("DHRYSTONE PROGRAM, SOME STRING")
	dhry1stString  = dstr("DHRYSTONE PROGRAM, 1'ST STRING")
	dhry2ndString  = dstr("DHRYSTONE PROGRAM, 2'ND STRING")
	dhry3rdString  = dstr("DHRYSTONE PROGRAM, 3'RD STRING")
)

// dhrystonesPerVAXMIPS is the VAX 11/780's Dhrystone score, the unit of
// "Dhrystone MIPS".
const dhrystonesPerVAXMIPS = 1757

func newDhrystone() *dhrystone {
	d := &dhrystone{nextPtrGlob: &dhryRecord{}}
	d.ptrGlob = &dhryRecord{
		ptrComp:  d.nextPtrGlob,
		discr:    ident1,
		enumComp: ident3,
		intComp:  40,
		strComp:  dhrySomeString,
	}
	d.str1Loc = dhry1stString
	d.arr2Glob[8][7] = 10
	return d
}

func (d *dhrystone) unit() int { return 1000 }

// run does n Dhrystone runs and returns the VAX instructions they count
// for (n/1757 million).
func (d *dhrystone) run(n int) float64 {
	var int1, int2, int3 int
	var enumLoc dhryEnum
	for range n {
		d.runIndex++
		d.proc5()
		d.proc4()
		int1 = 2
		int2 = 3
		d.str2Loc = dhry2ndString
		enumLoc = ident2
		d.boolGlob = !d.func2(&d.str1Loc, &d.str2Loc)
		for int1 < int2 {
			int3 = 5*int1 - int2
			proc7(int1, int2, &int3)
			int1++
		}
		d.proc8(&d.arr1Glob, &d.arr2Glob, int1, int3)
		d.proc1(d.ptrGlob)
		for ch := byte('A'); ch <= d.ch2Glob; ch++ {
			if enumLoc == d.func1(ch, 'C') {
				d.proc6(ident1, &enumLoc)
				d.str2Loc = dhry3rdString
				int2 = d.runIndex
				d.intGlob = d.runIndex
			}
		}
		int2 *= int1
		int1 = int2 / int3
		int2 = 7*(int2-int3) - int1
		d.proc2(&int1)
	}
	d.int1Loc, d.int2Loc, d.int3Loc, d.enumLoc = int1, int2, int3, enumLoc
	return float64(n) / dhrystonesPerVAXMIPS * 1e6
}

//go:noinline
func (d *dhrystone) proc1(p *dhryRecord) {
	next := p.ptrComp
	*p.ptrComp = *d.ptrGlob
	p.intComp = 5
	next.intComp = p.intComp
	next.ptrComp = p.ptrComp
	d.proc3(&next.ptrComp)
	if next.discr == ident1 {
		next.intComp = 6
		d.proc6(p.enumComp, &next.enumComp)
		next.ptrComp = d.ptrGlob.ptrComp
		proc7(next.intComp, 10, &next.intComp)
	} else {
		*p = *p.ptrComp
	}
}

//go:noinline
func (d *dhrystone) proc2(intPar *int) {
	intLoc := *intPar + 10
	enumLoc := ident2
	for {
		if d.ch1Glob == 'A' {
			intLoc--
			*intPar = intLoc - d.intGlob
			enumLoc = ident1
		}
		if enumLoc == ident1 {
			return
		}
	}
}

//go:noinline
func (d *dhrystone) proc3(ptrPar **dhryRecord) {
	if d.ptrGlob != nil {
		*ptrPar = d.ptrGlob.ptrComp
	}
	proc7(10, d.intGlob, &d.ptrGlob.intComp)
}

//go:noinline
func (d *dhrystone) proc4() {
	boolLoc := d.ch1Glob == 'A'
	d.boolGlob = boolLoc || d.boolGlob
	d.ch2Glob = 'B'
}

//go:noinline
func (d *dhrystone) proc5() {
	d.ch1Glob = 'A'
	d.boolGlob = false
}

//go:noinline
func (d *dhrystone) proc6(enumVal dhryEnum, enumRef *dhryEnum) {
	*enumRef = enumVal
	if !func3(enumVal) {
		*enumRef = ident4
	}
	switch enumVal {
	case ident1:
		*enumRef = ident1
	case ident2:
		if d.intGlob > 100 {
			*enumRef = ident1
		} else {
			*enumRef = ident4
		}
	case ident3:
		*enumRef = ident2
	case ident4:
	case ident5:
		*enumRef = ident3
	}
}

//go:noinline
func proc7(int1, int2 int, intRef *int) {
	intLoc := int1 + 2
	*intRef = int2 + intLoc
}

//go:noinline
func (d *dhrystone) proc8(arr1 *[50]int, arr2 *[50][50]int, int1, int2 int) {
	intLoc := int1 + 5
	arr1[intLoc] = int2
	arr1[intLoc+1] = arr1[intLoc]
	arr1[intLoc+30] = intLoc
	for i := intLoc; i <= intLoc+1; i++ {
		arr2[intLoc][i] = intLoc
	}
	arr2[intLoc][intLoc-1]++
	arr2[intLoc+20][intLoc] = arr1[intLoc]
	d.intGlob = 5
}

//go:noinline
func (d *dhrystone) func1(ch1, ch2 byte) dhryEnum {
	ch1Loc := ch1
	ch2Loc := ch1Loc
	if ch2Loc != ch2 {
		return ident1
	}
	d.ch1Glob = ch1Loc
	return ident2
}

//go:noinline
func (d *dhrystone) func2(s1, s2 *dhryStr) bool {
	intLoc := 2
	var chLoc byte
	for intLoc <= 2 {
		if d.func1(s1[intLoc], s2[intLoc+1]) == ident1 {
			chLoc = 'A'
			intLoc++
		}
	}
	if chLoc >= 'W' && chLoc < 'Z' {
		intLoc = 7
	}
	if chLoc == 'R' {
		return true
	}
	if strcmp(s1, s2) > 0 {
		intLoc += 7
		d.intGlob = intLoc
		return true
	}
	return false
}

//go:noinline
func func3(enumPar dhryEnum) bool {
	return enumPar == ident3
}

// strcmp compares NUL-terminated strings as C's strcmp, byte by byte.
func strcmp(a, b *dhryStr) int {
	for i := range a {
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
		if a[i] == 0 {
			return 0
		}
	}
	return 0
}
