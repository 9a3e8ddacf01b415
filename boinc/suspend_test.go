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
