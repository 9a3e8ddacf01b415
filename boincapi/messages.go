package boincapi

import (
	"fmt"
	"strconv"
	"strings"
)

// Process-control requests (client → app, PROTOCOLS §6.4).
const (
	MsgSuspend       = "<suspend/>"
	MsgResume        = "<resume/>"
	MsgQuit          = "<quit/>"
	MsgAbort         = "<abort/>"
	MsgRereadAppInfo = "<reread_app_info/>"
)

// Status is the content of an app_status message.
type Status struct {
	CurrentCPUTime    float64
	CheckpointCPUTime float64
	FractionDone      float64
	WantNetwork       bool
}

// FormatAppStatus renders s as the API writes it
// (api/boinc_api.cpp update_app_progress). Both CPU times are always
// present because the client resets them before parsing each message.
func FormatAppStatus(s Status) string {
	want := 0
	if s.WantNetwork {
		want = 1
	}
	return fmt.Sprintf("<current_cpu_time>%e</current_cpu_time>\n"+
		"<checkpoint_cpu_time>%e</checkpoint_cpu_time>\n"+
		"<want_network>%d</want_network>\n"+
		"<fraction_done>%e</fraction_done>\n",
		s.CurrentCPUTime, s.CheckpointCPUTime, want, s.FractionDone)
}

// ParseAppStatus reads an app_status message the way the client does
// (ACTIVE_TASK::get_app_status_msg): missing values are 0, so a fraction
// done of 0 means "not reported".
func ParseAppStatus(msg string) Status {
	var s Status
	s.CurrentCPUTime, _ = ParseDouble(msg, "current_cpu_time")
	s.CheckpointCPUTime, _ = ParseDouble(msg, "checkpoint_cpu_time")
	s.FractionDone, _ = ParseDouble(msg, "fraction_done")
	if v, ok := ParseDouble(msg, "want_network"); ok && v != 0 {
		s.WantNetwork = true
	}
	return s
}

// FormatHeartbeat renders the client's heartbeat: the task's working set
// and the RAM available to BOINC, in bytes.
func FormatHeartbeat(wss, maxWSS float64) string {
	return fmt.Sprintf("<heartbeat/><wss>%e</wss><max_wss>%e</max_wss>", wss, maxWSS)
}

// ParseDouble finds <tag>value</tag> in msg and parses the value. NaN and
// infinities are refused: they would poison the accounting.
func ParseDouble(msg, tag string) (float64, bool) {
	open := "<" + tag + ">"
	i := strings.Index(msg, open)
	if i < 0 {
		return 0, false
	}
	rest := msg[i+len(open):]
	j := strings.Index(rest, "</"+tag+">")
	if j < 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(rest[:j]), 64)
	if err != nil || v != v || v > 1e300 || v < -1e300 {
		return 0, false
	}
	return v, true
}

// HasTag reports whether msg contains the bare element tag (e.g.
// "<suspend/>"), as BOINC's match_tag does.
func HasTag(msg, tag string) bool { return strings.Contains(msg, tag) }
