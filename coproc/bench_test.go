package coproc

import (
	"context"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
)

func TestBenchmarkPositive(t *testing.T) {
	tests := []struct {
		name  string
		ncpus int
	}{
		{"one CPU", 1},
		{"zero means one", 0},
		{"all CPUs", runtime.NumCPU()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, i := Benchmark(context.Background(), tt.ncpus, 30*time.Millisecond)
			if !(f > 1e6) || !(i > 1e6) || math.IsInf(f, 0) || math.IsInf(i, 0) {
				t.Fatalf("fpops=%g iops=%g", f, i)
			}
		})
	}
}

func TestBenchmarkCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	f, i := Benchmark(ctx, 1, time.Hour)
	if time.Since(start) > time.Minute || f <= 0 || i <= 0 {
		t.Fatalf("fpops=%g iops=%g after %v", f, i, time.Since(start))
	}
}

// TestBenchmarkSpread runs the benchmark five times and logs the spread
// ((max-min)/mean); it asserts nothing about speed, which depends on the
// machine and its load. BOINCD_BENCH_SECONDS sets the per-kernel duration
// (default 0.2 s; the daemon uses 1 s).
func TestBenchmarkSpread(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	d := 200 * time.Millisecond
	if s, err := strconv.ParseFloat(os.Getenv("BOINCD_BENCH_SECONDS"), 64); err == nil && s > 0 {
		d = time.Duration(s * float64(time.Second))
	}
	var fs, is []float64
	for range 5 {
		f, i := Benchmark(context.Background(), runtime.NumCPU(), d)
		fs, is = append(fs, f), append(is, i)
	}
	t.Logf("%d CPUs, %v per kernel", runtime.NumCPU(), d)
	t.Logf("Whetstone: %.0f MIPS per CPU, spread %.1f%% %v", mean(fs)/1e6, spread(fs)*100, fs)
	t.Logf("Dhrystone: %.0f MIPS per CPU, spread %.1f%% %v", mean(is)/1e6, spread(is)*100, is)
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

func spread(v []float64) float64 {
	return (slices.Max(v) - slices.Min(v)) / mean(v)
}

// TestDhrystoneFinalValues checks the port against the final values
// Weicker's Dhrystone 2.1 prints (dhry_1.c "should be" lines).
func TestDhrystoneFinalValues(t *testing.T) {
	const runs = 1000
	d := newDhrystone()
	ops := d.run(runs)
	if want := runs / 1757.0 * 1e6; math.Abs(ops-want) > 1e-6 {
		t.Fatalf("ops = %g, want %g", ops, want)
	}
	checks := []struct {
		name      string
		got, want int
	}{
		{"Int_Glob", d.intGlob, 5},
		{"Bool_Glob", b2int(d.boolGlob), 1},
		{"Ch_1_Glob", int(d.ch1Glob), 'A'},
		{"Ch_2_Glob", int(d.ch2Glob), 'B'},
		{"Arr_1_Glob[8]", d.arr1Glob[8], 7},
		{"Arr_2_Glob[8][7]", d.arr2Glob[8][7], runs + 10},
		{"Ptr_Glob->Discr", int(d.ptrGlob.discr), 0},
		{"Ptr_Glob->Enum_Comp", int(d.ptrGlob.enumComp), 2},
		{"Ptr_Glob->Int_Comp", d.ptrGlob.intComp, 17},
		{"Next_Ptr_Glob->Discr", int(d.nextPtrGlob.discr), 0},
		{"Next_Ptr_Glob->Enum_Comp", int(d.nextPtrGlob.enumComp), 1},
		{"Next_Ptr_Glob->Int_Comp", d.nextPtrGlob.intComp, 18},
		{"Int_1_Loc", d.int1Loc, 5},
		{"Int_2_Loc", d.int2Loc, 13},
		{"Int_3_Loc", d.int3Loc, 7},
		{"Enum_Loc", int(d.enumLoc), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for _, s := range []struct {
		name      string
		got, want dhryStr
	}{
		{"Ptr_Glob->Str_Comp", d.ptrGlob.strComp, dhrySomeString},
		{"Next_Ptr_Glob->Str_Comp", d.nextPtrGlob.strComp, dhrySomeString},
		{"Str_1_Loc", d.str1Loc, dhry1stString},
		{"Str_2_Loc", d.str2Loc, dhry2ndString},
	} {
		if s.got != s.want {
			t.Errorf("%s = %q, want %q", s.name, s.got[:], s.want[:])
		}
	}
}

func b2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestWhetstoneDeterministic: the kernel's state after a pass does not
// depend on earlier passes (each module reinitialises), and the
// module-11 value converges to 1 as in the original.
func TestWhetstoneDeterministic(t *testing.T) {
	a, b := newWhetstone(), newWhetstone()
	if got := a.run(1); got != 1e6 {
		t.Fatalf("one pass = %g instructions, want 1e6", got)
	}
	a.run(1)
	b.run(1)
	if a.e1 != b.e1 {
		t.Fatalf("state differs: %v vs %v", a.e1, b.e1)
	}
	if a.sink != 2*b.sink || math.IsNaN(a.sink) {
		t.Fatalf("sinks %g, %g", a.sink, b.sink)
	}
}

func TestScaleDCF(t *testing.T) {
	tests := []struct {
		old, new, want float64
	}{
		{2e9, 3e9, 1.5},
		{3e9, 1.5e9, 0.5},
		{0, 3e9, 1},
		{3e9, 0, 1},
		{-1, 3e9, 1},
		{math.NaN(), 3e9, 1},
		{math.Inf(1), 3e9, 1},
		{3e9, math.Inf(1), 1},
	}
	for _, tt := range tests {
		if got := ScaleDCF(tt.old, tt.new); got != tt.want {
			t.Errorf("ScaleDCF(%g, %g) = %g, want %g", tt.old, tt.new, got, tt.want)
		}
	}
}

func BenchmarkWhetstonePass(b *testing.B) {
	w := newWhetstone()
	for b.Loop() {
		w.run(1)
	}
	b.ReportMetric(1e6*float64(b.N)/b.Elapsed().Seconds()/1e6, "MWIPS")
}

func BenchmarkDhrystone1000(b *testing.B) {
	d := newDhrystone()
	for b.Loop() {
		d.run(1000)
	}
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds()/1757/1e6, "DMIPS")
}

// A daemon running with fewer Ps than CPUs gets them back after the
// benchmark (which raises GOMAXPROCS to give each worker its CPU).
func TestBenchmarkRestoresGOMAXPROCS(t *testing.T) {
	prev := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(prev)
	if f, i := Benchmark(context.Background(), 2, 20*time.Millisecond); !(f > 0) || !(i > 0) {
		t.Fatalf("fpops=%g iops=%g", f, i)
	}
	if p := runtime.GOMAXPROCS(0); p != 1 {
		t.Errorf("GOMAXPROCS %d after the benchmark, want 1", p)
	}
}
