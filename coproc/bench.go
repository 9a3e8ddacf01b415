package coproc

import (
	"context"
	"math"
	"sync"
	"time"
)

// Benchmark measures per-core floating-point and integer speed with short
// Whetstone- and Dhrystone-like kernels run on every usable CPU at once (so
// shared caches and turbo limits count as they will under load). It takes
// about d per kernel.
func Benchmark(ctx context.Context, ncpus int, d time.Duration) (fpops, iops float64) {
	if ncpus < 1 {
		ncpus = 1
	}
	run := func(kernel func(stop <-chan struct{}) float64) float64 {
		stop := make(chan struct{})
		res := make([]float64, ncpus)
		var wg sync.WaitGroup
		for i := 0; i < ncpus; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				res[i] = kernel(stop)
			}(i)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
		close(stop)
		wg.Wait()
		sum := 0.0
		for _, r := range res {
			sum += r
		}
		return sum / float64(ncpus)
	}
	fpops = run(floatKernel)
	iops = run(intKernel)
	return fpops, iops
}

// floatKernel counts floating-point operations per second of a loop mixing
// multiply-add, division and sqrt, the operations Whetstone weights.
func floatKernel(stop <-chan struct{}) float64 {
	start := time.Now()
	x, y, z := 1.0, 0.999999, 1.000001
	var ops float64
	for {
		for i := 0; i < 100000; i++ {
			x = x*y + z
			y = y*z - x*1e-9
			z = math.Sqrt(z*z+1e-12) / 1.0000001
		}
		ops += 100000 * 9
		select {
		case <-stop:
			// Folding the state into the result keeps the loop observable.
			return ops/time.Since(start).Seconds() + 0*(x+y+z)
		default:
		}
	}
}

// intKernel counts integer operations per second (adds, shifts, xors and
// branches, as Dhrystone's mix).
func intKernel(stop <-chan struct{}) float64 {
	start := time.Now()
	a, b, c := uint64(1), uint64(7), uint64(13)
	var ops float64
	for {
		for i := 0; i < 100000; i++ {
			a += b ^ c
			b = (b << 1) | (a >> 63)
			if a&1 == 0 {
				c += a
			} else {
				c -= b
			}
		}
		ops += 100000 * 8
		select {
		case <-stop:
			return ops/time.Since(start).Seconds() + 0*float64((a+b+c)&1)
		default:
		}
	}
}
