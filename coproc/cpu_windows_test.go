//go:build windows

package coproc

import (
	"context"
	"runtime"
	"testing"
)

// TestWindowsProbe: under Windows (or Wine) the probe names the CPU and
// counts its cores without WMI.
func TestWindowsProbe(t *testing.T) {
	ci, err := probeCPU(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("p_vendor %q p_model %q m_cache %v p_features %q", ci.vendor, ci.model, ci.cache, ci.features)
	if ci.vendor == "" || ci.model == "" {
		t.Fatalf("vendor %q model %q", ci.vendor, ci.model)
	}
	if (runtime.GOARCH == "amd64" || runtime.GOARCH == "386") && !HasFeature(ci.features, "sse2") {
		t.Fatalf("x86 without sse2: %q", ci.features)
	}
	if n, err := glpiCores(); err != nil || n < 1 {
		t.Errorf("GetLogicalProcessorInformationEx: %d cores, %v", n, err)
	}
	n, err := physicalCores(context.Background())
	if err != nil || n < 1 || n > runtime.NumCPU() {
		t.Fatalf("physical cores %d, %v (logical %d)", n, err, runtime.NumCPU())
	}
}
