package workfetch

import (
	"time"

	"github.com/boincd/boincd/boinc"
)

// Per-(project, resource) fetch backoff bounds (WF_MIN/MAX_BACKOFF_INTERVAL).
const (
	BackoffMin = 600.0
	BackoffMax = 86400.0
)

// WorkFetchPeriod is how often the daemon makes a work-fetch decision when
// no event asks for one sooner (WORK_FETCH_PERIOD).
const WorkFetchPeriod = 60 * time.Second

// Active reports whether the backoff still forbids asking for work of
// its type at now.
func (b Backoff) Active(now time.Time) bool { return now.Before(b.Until) }

// AtMax reports whether the interval reached its one-day cap: the project
// has repeatedly had no work of this type.
func (b Backoff) AtMax() bool { return b.Interval >= BackoffMax }

// Back starts or lengthens the backoff after work of this type was asked
// for and none came: the interval is 600 s, then doubles up to one day,
// and the backoff lasts (0.5+jitter) × interval, so on average the
// interval itself. jitter is the caller's uniform draw in [0, 1); values
// outside are clamped to [0, 1].
func (b *Backoff) Back(now time.Time, jitter float64) {
	if b.Interval > 0 {
		b.Interval = min(2*b.Interval, BackoffMax)
	} else {
		b.Interval = BackoffMin
	}
	if !(jitter >= 0) {
		jitter = 0
	}
	jitter = min(jitter, 1)
	d := time.Duration((0.5 + jitter) * b.Interval * float64(time.Second))
	b.Until = now.Add(d)
}

// Clear ends the backoff and resets its interval.
func (b *Backoff) Clear() { *b = Backoff{} }

// ClearBackoffs clears every resource backoff of the project, as a
// user-requested update or a project reset does.
func (s *ProjectState) ClearBackoffs() {
	for r := range s.Backoff {
		s.Backoff[r].Clear()
	}
}

// HandleReply updates the resource backoffs after a successful scheduler
// reply to req, sent for reason, in which got[r] new jobs of type r
// arrived (WORK_FETCH::handle_reply; SCHEDULING §3.4): a user-requested
// RPC clears all of them (scheduler_rpc_poll clears them as it starts
// one); a resource that got jobs is cleared; a resource that was asked
// for (Secs > 0) and got none backs off with jitter[r], unless it already
// is backed off or the RPC was not one of the automatic, potentially
// frequent kinds (results due, work fetch, trickle up): a user's update,
// a project's requested RPC or the first contact must not punish the
// project.
func HandleReply(st *ProjectState, req Request, got [NumRsc]int, reason boinc.RPCReason, now time.Time, jitter [NumRsc]float64) {
	if reason == boinc.RPCUserReq {
		st.ClearBackoffs()
	}
	automatic := reason == boinc.RPCResultsDue || reason == boinc.RPCNeedWork || reason == boinc.RPCTrickleUp
	for r := range NumRsc {
		b := &st.Backoff[r]
		switch {
		case got[r] > 0:
			b.Clear()
		case req.Secs[r] > 0 && automatic && !b.Active(now):
			b.Back(now, jitter[r])
		}
	}
}
