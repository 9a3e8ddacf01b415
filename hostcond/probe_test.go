package hostcond

import (
	"testing"
	"time"
)

// TestProbesOnThisHost runs the real probes: whatever this machine has,
// they must answer in range and never fail.
func TestProbesOnThisHost(t *testing.T) {
	idle := IdleSeconds()
	if idle < 0 && idle != -1 {
		t.Fatalf("IdleSeconds = %g: negative but not the unknown marker", idle)
	}
	t.Logf("IdleSeconds = %g, OnBattery = %v", idle, OnBattery())

	s := NewCPUSampler()
	first := s.Sample(time.Now(), 0)
	if first != -1 {
		t.Fatalf("first sample = %g, want -1 (unknown)", first)
	}
	time.Sleep(200 * time.Millisecond)
	second := s.Sample(time.Now(), 0)
	if second != -1 && (second < 0 || second > 100) {
		t.Fatalf("second sample = %g, out of 0-100", second)
	}
	t.Logf("non-BOINC CPU = %g%%", second)
}
