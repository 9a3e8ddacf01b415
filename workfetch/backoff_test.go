package workfetch

import (
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

func TestBackoffDoubling(t *testing.T) {
	var b Backoff
	want := []float64{600, 1200, 2400, 4800, 9600, 19200, 38400, 76800, 86400, 86400}
	for i, w := range want {
		b.Back(t0, 0.5)
		if b.Interval != w {
			t.Fatalf("step %d: interval %v, want %v", i, b.Interval, w)
		}
		if got := b.Until.Sub(t0); got != time.Duration(w)*time.Second {
			t.Fatalf("step %d: until now+%v, want +%vs", i, got, w)
		}
	}
	if !b.AtMax() || !b.Active(t0) || b.Active(t0.Add(86400*time.Second)) {
		t.Error("at max / active")
	}
	b.Clear()
	if b.Interval != 0 || b.Active(t0) {
		t.Error("clear")
	}
}

func TestBackoffJitter(t *testing.T) {
	tests := []struct {
		jitter   float64
		min, max time.Duration // bounds of Until − now for the 600 s step
	}{
		{0, 300 * time.Second, 300 * time.Second},
		{0.999999, 899 * time.Second, 900 * time.Second},
		{-3, 300 * time.Second, 300 * time.Second},
		{7, 899 * time.Second, 900 * time.Second},
	}
	for _, tc := range tests {
		var b Backoff
		b.Back(t0, tc.jitter)
		if d := b.Until.Sub(t0); d < tc.min || d > tc.max {
			t.Errorf("jitter %v: delay %v not in [%v, %v]", tc.jitter, d, tc.min, tc.max)
		}
	}
}

func TestHandleReply(t *testing.T) {
	active := Backoff{Interval: 1200, Until: at(500)}
	expired := Backoff{Interval: 1200, Until: at(-5)}
	tests := []struct {
		name   string
		before [NumRsc]Backoff
		secs   [NumRsc]float64
		got    [NumRsc]int
		reason boinc.RPCReason
		want   [NumRsc]float64 // intervals after
	}{
		{"asked, got none: back off", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCNeedWork, [NumRsc]float64{CPU: 600}},
		{"asked, got work: no backoff", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{CPU: 2}, boinc.RPCNeedWork, [NumRsc]float64{}},
		{"not asked: untouched", [NumRsc]Backoff{NVIDIA: active}, [NumRsc]float64{CPU: 100}, [NumRsc]int{CPU: 1}, boinc.RPCNeedWork, [NumRsc]float64{NVIDIA: 1200}},
		{"job of a type clears it even unasked", [NumRsc]Backoff{NVIDIA: active}, [NumRsc]float64{}, [NumRsc]int{NVIDIA: 1}, boinc.RPCNeedWork, [NumRsc]float64{}},
		{"already backed off: not doubled", [NumRsc]Backoff{CPU: active}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCNeedWork, [NumRsc]float64{CPU: 1200}},
		{"expired: doubled", [NumRsc]Backoff{CPU: expired}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCNeedWork, [NumRsc]float64{CPU: 2400}},
		{"user request clears all, no new backoff", [NumRsc]Backoff{CPU: active, NVIDIA: active}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCUserReq, [NumRsc]float64{}},
		{"results due, got none: back off", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCResultsDue, [NumRsc]float64{CPU: 600}},
		{"trickle up, got none: back off", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCTrickleUp, [NumRsc]float64{CPU: 600}},
		{"project asked for the RPC: no backoff", [NumRsc]Backoff{CPU: expired}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCProjectReq, [NumRsc]float64{CPU: 1200}},
		{"first contact: no backoff", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCInit, [NumRsc]float64{}},
		{"account manager's: no backoff", [NumRsc]Backoff{}, [NumRsc]float64{CPU: 100}, [NumRsc]int{}, boinc.RPCAcctMgrReq, [NumRsc]float64{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := ProjectState{Backoff: tc.before}
			HandleReply(&st, Request{Project: 0, Secs: tc.secs}, tc.got, tc.reason, t0, [NumRsc]float64{0.5, 0.5, 0.5, 0.5})
			for r := range NumRsc {
				if st.Backoff[r].Interval != tc.want[r] {
					t.Errorf("%v interval %v, want %v", Rsc(r), st.Backoff[r].Interval, tc.want[r])
				}
			}
		})
	}
}
