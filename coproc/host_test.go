package coproc

import (
	"context"
	"testing"
	"time"
)

func TestProbeHost(t *testing.T) {
	h, warns := ProbeHost(context.Background(), t.TempDir())
	for _, w := range warns {
		t.Log("warning:", w)
	}
	if h.PNCPUs < 1 || h.MNBytes <= 0 || h.DTotal <= 0 || h.OSName == "" {
		t.Fatalf("host = %+v", h)
	}
}

func TestBenchmarkPositive(t *testing.T) {
	f, i := Benchmark(context.Background(), 1, 50*time.Millisecond)
	if f <= 1e6 || i <= 1e6 {
		t.Fatalf("fpops=%g iops=%g", f, i)
	}
}
