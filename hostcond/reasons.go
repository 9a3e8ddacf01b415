// Package hostcond decides when boincd must suspend computing, GPU work
// and network activity because of the host's state and the user's global
// preferences (client/cs_prefs.cpp check_suspend_processing and
// check_suspend_network in the C++ client): the user is at the computer,
// the user has left it (suspend_if_no_recent_input), other programs keep
// the CPUs busy, the computer runs on batteries, or the clock is outside
// the allowed time-of-day window.
//
// The package has two halves. The decision core (Evaluator, Prefs,
// Inputs, Decision) is pure apart from its hysteresis state, so it is
// tested with a fake clock. The probes (IdleSeconds, OnBattery,
// CPUSampler) read the host; each reports "unknown" rather than failing,
// and an unknown input never causes a suspension.
//
// Run modes (always / auto / never, set from BOINC Manager) are not
// handled here: the caller applies them on top, as the C++ client does:
// mode "always" ignores every condition below, "never" suspends with
// ReasonUserReq, "auto" uses the Decision.
package hostcond

import (
	"fmt"
	"slices"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// Suspend reasons (lib/common_defs.h SUSPEND_REASON_*, declared once as
// boinc.SuspendReason). They are bits, so a Decision can carry every
// condition in force at once; cc_status reports a single one, which
// Primary picks.
const (
	ReasonBatteries     = uint32(boinc.SuspendBatteries)
	ReasonUserActive    = uint32(boinc.SuspendUserActive)
	ReasonUserReq       = uint32(boinc.SuspendUserRequest)
	ReasonTimeOfDay     = uint32(boinc.SuspendTimeOfDay)
	ReasonBenchmarks    = uint32(boinc.SuspendBenchmarks)
	ReasonDiskSize      = uint32(boinc.SuspendDiskSize)
	ReasonCPUThrottle   = uint32(boinc.SuspendCPUThrottle)
	ReasonNoRecentInput = uint32(boinc.SuspendNoRecentInput)
	ReasonInitialDelay  = uint32(boinc.SuspendInitialDelay)
	ReasonExclusiveApp  = uint32(boinc.SuspendExclusiveAppRunning)
	ReasonCPUUsage      = uint32(boinc.SuspendCPUUsage)
	ReasonNetworkQuota  = uint32(boinc.SuspendNetworkQuotaExceeded)
)

// precedence is the order in which the C++ client tests the conditions
// (check_suspend_processing returns the first that holds), so Primary
// reports what BOINC would report for the same situation.
var precedence = [...]uint32{
	ReasonBenchmarks,
	ReasonInitialDelay,
	ReasonUserReq,
	ReasonBatteries,
	ReasonUserActive,
	ReasonTimeOfDay,
	ReasonNoRecentInput,
	ReasonExclusiveApp,
	ReasonCPUUsage,
	ReasonDiskSize,
	ReasonCPUThrottle,
	ReasonNetworkQuota,
}

// Primary is the one reason of mask that the C++ client would report in
// cc_status (task_suspend_reason and friends hold a single value, and
// BOINC Manager and boinccmd only name single values). 0 stays 0; bits
// that are not SUSPEND_REASON_* values are returned as the lowest such bit.
func Primary(mask uint32) uint32 {
	if mask == 0 {
		return 0
	}
	for _, r := range precedence {
		if mask&r != 0 {
			return r
		}
	}
	return mask & -mask
}

// ReasonString is lib/str_util.cpp suspend_reason_string for a single
// reason; a mask with several bits gives the names joined by ", ".
func ReasonString(r uint32) string {
	if r == 0 {
		return ""
	}
	if r&(r-1) == 0 && slices.Contains(precedence[:], r) {
		return boinc.SuspendReason(r).String()
	}
	var names []string
	rest := r
	for _, b := range precedence {
		if rest&b != 0 {
			names = append(names, ReasonString(b))
			rest &^= b
		}
	}
	if rest != 0 {
		names = append(names, fmt.Sprintf("unknown reason %d", rest))
	}
	return strings.Join(names, ", ")
}
