package boinc

import (
	"strconv"
	"strings"
)

// SuspendReason says why tasks, GPUs or the network are suspended
// (lib/common_defs.h SUSPEND_REASON_*). Values below 4096 are single bits
// and are decoded as a mask; 4096 and up are plain values (OS requests,
// Android and container states). 0 means not suspended.
type SuspendReason int

// Suspend reasons, with the values of lib/common_defs.h. The captures
// confirm two of them: 4 for "user request" (run mode never) and 1024 for
// "CPU is busy" (suspend_cpu_usage).
const (
	SuspendBatteries            SuspendReason = 1
	SuspendUserActive           SuspendReason = 2
	SuspendUserRequest          SuspendReason = 4
	SuspendTimeOfDay            SuspendReason = 8
	SuspendBenchmarks           SuspendReason = 16
	SuspendDiskSize             SuspendReason = 32
	SuspendCPUThrottle          SuspendReason = 64
	SuspendNoRecentInput        SuspendReason = 128
	SuspendInitialDelay         SuspendReason = 256
	SuspendExclusiveAppRunning  SuspendReason = 512
	SuspendCPUUsage             SuspendReason = 1024
	SuspendNetworkQuotaExceeded SuspendReason = 2048
	SuspendOS                   SuspendReason = 4096
	SuspendWiFiState            SuspendReason = 4097
	SuspendBatteryCharging      SuspendReason = 4098
	SuspendBatteryOverheated    SuspendReason = 4099
	SuspendNoGUIKeepalive       SuspendReason = 4100
	SuspendPodmanInit           SuspendReason = 4101
)

// suspendWords are lib/str_util.cpp suspend_reason_string's texts.
var suspendWords = map[SuspendReason]string{
	SuspendBatteries:            "on batteries",
	SuspendUserActive:           "computer is in use",
	SuspendUserRequest:          "user request",
	SuspendTimeOfDay:            "time of day",
	SuspendBenchmarks:           "CPU benchmarks in progress",
	SuspendDiskSize:             "need disk space - check preferences",
	SuspendCPUThrottle:          "CPU throttled",
	SuspendNoRecentInput:        "no recent user activity",
	SuspendInitialDelay:         "initial delay",
	SuspendExclusiveAppRunning:  "an exclusive app is running",
	SuspendCPUUsage:             "CPU is busy",
	SuspendNetworkQuotaExceeded: "network transfer limit exceeded",
	SuspendOS:                   "requested by operating system",
	SuspendWiFiState:            "not connected to WiFi network",
	SuspendBatteryCharging:      "battery low",
	SuspendBatteryOverheated:    "battery thermal protection",
	SuspendNoGUIKeepalive:       "GUI not active",
	SuspendPodmanInit:           "Podman is initializing",
}

// Words lists the reasons in r, lowest bit first; nil when r is 0.
func (r SuspendReason) Words() []string {
	if r == 0 {
		return nil
	}
	if r >= SuspendOS {
		if w, ok := suspendWords[r]; ok {
			return []string{w}
		}
		return []string{"reason " + strconv.Itoa(int(r))}
	}
	var out []string
	for bit := SuspendReason(1); bit < SuspendOS; bit <<= 1 {
		if r&bit != 0 {
			out = append(out, suspendWords[bit])
		}
	}
	return out
}

// String joins Words with ", "; "not suspended" for 0.
func (r SuspendReason) String() string {
	if r == 0 {
		return "not suspended"
	}
	return strings.Join(r.Words(), ", ")
}
