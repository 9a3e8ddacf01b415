//go:build (amd64 || 386) && linux

package coproc

import (
	"os"
	"strings"
	"testing"
)

// TestX86CPUIDAgreesWithLinux runs the Windows build's identification on
// this CPU and compares it with what Linux makes of the same CPUID: the
// vendor, the brand with family/model/stepping, and the plan-class
// flags both name alike.
func TestX86CPUIDAgreesWithLinux(t *testing.T) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	text := string(b)
	ci := x86CPUID(cpuidRaw, xgetbv0)
	vendor := strings.TrimSpace(collapseWhitespace(ci.vendor))
	model := strings.TrimSpace(collapseWhitespace(ci.model))
	t.Logf("Windows build would report: vendor %q model %q cache %v features %q", vendor, model, ci.cache, ci.features)
	if want := firstValue(text, "vendor_id"); vendor != want {
		t.Errorf("vendor %q, /proc/cpuinfo %q", vendor, want)
	}
	wantModel := collapseWhitespace(firstValue(text, "model name")) + " [Family " + firstValue(text, "cpu family") +
		" Model " + firstValue(text, "model") + " Stepping " + firstValue(text, "stepping") + "]"
	if model != wantModel {
		t.Errorf("model %q, /proc/cpuinfo gives %q", model, wantModel)
	}
	linux := " " + firstValue(text, "flags") + " "
	win := " " + ci.features + " "
	for _, f := range []string{"fpu", "mmx", "sse", "sse2", "pni", "ssse3", "sse4_1", "sse4_2", "popcnt", "aes", "fma", "f16c", "avx", "avx2", "avx512f", "bmi1", "bmi2", "lm", "nx"} {
		if inL, inW := strings.Contains(linux, " "+f+" "), strings.Contains(win, " "+f+" "); inL != inW {
			t.Errorf("%s: in /proc/cpuinfo %v, in the Windows list %v", f, inL, inW)
		}
	}
}
