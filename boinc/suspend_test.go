package boinc

import "testing"

func TestSuspendReasonWords(t *testing.T) {
	tests := []struct {
		r    SuspendReason
		want string
	}{
		{0, "not suspended"},
		{SuspendUserRequest, "user request"},
		{SuspendCPUUsage, "CPU is busy"},
		{SuspendUserActive | SuspendTimeOfDay, "computer is in use, time of day"},
		{SuspendWiFiState, "not connected to WiFi network"},
		{9999, "reason 9999"},
	}
	for _, tt := range tests {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%d: %q, want %q", int(tt.r), got, tt.want)
		}
	}
}

// A phase's wire state reads back as that phase, except what the wire
// cannot tell apart (a failed download shows as downloading).
func TestPhaseWireStateRoundTrip(t *testing.T) {
	for p := PhaseNew; p <= PhaseAcked; p++ {
		st, ok := p.WireState()
		if !ok {
			if p != PhaseReported && p != PhaseAcked {
				t.Errorf("%v has no wire state", p)
			}
			continue
		}
		want := p
		if p == PhaseDownloadFailed {
			want = PhaseDownloading
		}
		if got := PhaseOf(st, p == PhaseComputing, false); got != want {
			t.Errorf("%v -> %v -> %v, want %v", p, st, got, want)
		}
	}
	if got := PhaseOf(ResultFilesUploaded, false, true); got != PhaseAcked {
		t.Errorf("uploaded and acked: %v", got)
	}
}
