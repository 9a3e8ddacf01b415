package rpcclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/hostilehttp"
)

// The RPC bound (Options.RPCTimeout, issue 14): the daemon makes one
// scheduler RPC or master fetch at a time, so a server trickling its reply
// must lose the slot about RPCTimeout after it began to answer, not after
// the 5-minute stall window; while a large reply over a slow but working
// link earns the time it needs, and a scheduler that thinks before it
// answers is waited for as the C++ client waits (issue 28).

// paced serves prefix, then filler bytes, then suffix, so that the whole
// body of size total goes out at rate bytes per second (in 10 chunks a
// second).
func paced(prefix, suffix string, total int, rate int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/xml")
		body := []byte(prefix + strings.Repeat(" ", total-len(prefix)-len(suffix)) + suffix)
		fl := w.(http.Flusher)
		chunk := max(1, rate/10)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for len(body) > 0 {
			n := min(chunk, len(body))
			if _, err := w.Write(body[:n]); err != nil {
				return
			}
			fl.Flush()
			body = body[n:]
			select {
			case <-r.Context().Done():
				return
			case <-t.C:
			}
		}
	})
}

// TestRPCDeadlineTrickle: a scheduler reply or master page dripping at 2 B/s
// ends with a ReplyTimeoutError about RPCTimeout after its first byte,
// even though the stall window (5 min by default) and its 10 B/s minimum
// would have let it run for 300 s.
func TestRPCDeadlineTrickle(t *testing.T) {
	t.Parallel()
	const base = time.Second
	drip := hostilehttp.Drip{Prefix: []byte("<scheduler_reply>\n"), Filler: ' ', Chunk: 1, Interval: 500 * time.Millisecond, Total: -1}
	srv := hostileServer(t, drip)
	// Production stall settings; only the RPC bound is shortened.
	c := newTestClient(t, Options{RPCTimeout: base, RPCBytesPerSec: 4096})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, call := range []struct {
		name string
		do   func() error
	}{
		{"scheduler RPC", func() error {
			_, _, err := c.SchedulerRPC(ctx, srv.URL+"/cgi", []byte("<scheduler_request/>\n"))
			return err
		}},
		{"master page", func() error {
			_, _, err := c.FetchMaster(ctx, srv.URL+"/")
			return err
		}},
	} {
		start := time.Now()
		err := call.do()
		took := time.Since(start)
		var te *ReplyTimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("%s: err %v after %s, want a ReplyTimeoutError", call.name, err, took)
		}
		if te.Base != base || !strings.Contains(err.Error(), "reply took longer than 1.0") {
			t.Errorf("%s: error %q does not name the RPC bound", call.name, err)
		}
		// 1 s plus what ~20 bytes earn (5 ms); a loaded machine adds
		// scheduling delay, but nowhere near the 300 s of the stall rule.
		if took < base || took > base+2*time.Second {
			t.Errorf("%s: cut after %s, want about %s", call.name, took, base)
		}
		t.Logf("figures: %s dripping 2 B/s cut after %s having read %d bytes: %v", call.name, took.Round(time.Millisecond), te.Read, err)
	}
}

// TestRPCDeadlineSlowLinkSucceeds: a reply much longer than RPCTimeout
// arrives whole while it keeps coming at RPCBytesPerSec or more (a big
// reply over a slow link), and one arriving at a quarter of that rate is
// cut soon after RPCTimeout has passed, having earned only a little time.
func TestRPCDeadlineSlowLinkSucceeds(t *testing.T) {
	t.Parallel()
	const (
		base = time.Second
		rate = 2000 // bytes a second earn one second
	)
	prefix, suffix := "<scheduler_reply>\n<request_delay>7</request_delay>\n", "</scheduler_reply>\n"
	// 3.5 s of reply at 1.5 × rate: allowed 1 s + 5.25 s.
	slow := hostileServer(t, paced(prefix, suffix, 3*rate*7/4, 3*rate/2))
	c := newTestClient(t, Options{RPCTimeout: base, RPCBytesPerSec: rate})
	start := time.Now()
	reply, _, err := c.SchedulerRPC(context.Background(), slow.URL+"/cgi", bytes.Repeat([]byte("x"), 100))
	took := time.Since(start)
	if err != nil {
		t.Fatalf("slow but steady reply: %v after %s", err, took)
	}
	if reply.RequestDelay != 7 || took < 3*time.Second {
		t.Fatalf("reply %+v after %s: want request_delay 7 after about 3.5 s", reply.RequestDelay, took)
	}
	t.Logf("figures: %d-byte reply at %d B/s arrived whole in %s (RPC bound %s + 1 s per %d B)", 3*rate*7/4, 3*rate/2, took.Round(time.Millisecond), base, rate)

	// A quarter of the rate: after t seconds it has earned t/4, so it runs
	// out at about 1/(1-1/4) = 1.33 s.
	crawl := hostileServer(t, paced(prefix, suffix, 10*rate, rate/4))
	start = time.Now()
	_, _, err = c.SchedulerRPC(context.Background(), crawl.URL+"/cgi", nil)
	took = time.Since(start)
	var te *ReplyTimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("reply at a quarter of the rate: err %v after %s, want a ReplyTimeoutError", err, took)
	}
	if took < 1200*time.Millisecond || took > 4*time.Second {
		t.Errorf("reply at a quarter of the rate cut after %s, want about 1.33 s", took)
	}
	t.Logf("figures: reply at %d B/s cut after %s having read %d bytes", rate/4, took.Round(time.Millisecond), te.Read)
}

// TestRPCDeadlineCappedByReplyTimeout: however fast a reply flows, an RPC
// ends at ReplyTimeout, and the error says so plainly.
func TestRPCDeadlineCappedByReplyTimeout(t *testing.T) {
	t.Parallel()
	drip := hostilehttp.Drip{Prefix: []byte("<scheduler_reply>\n"), Filler: ' ', Chunk: 1000, Interval: 10 * time.Millisecond, Total: -1}
	srv := hostileServer(t, drip)
	c := newTestClient(t, Options{RPCTimeout: 500 * time.Millisecond, RPCBytesPerSec: 1000, ReplyTimeout: 1500 * time.Millisecond})
	start := time.Now()
	_, _, err := c.SchedulerRPC(context.Background(), srv.URL+"/cgi", nil)
	took := time.Since(start)
	var te *ReplyTimeoutError
	if !errors.As(err, &te) || te.Timeout != 1500*time.Millisecond || te.Base != 0 {
		t.Fatalf("err %v after %s, want a ReplyTimeoutError at the 1.5 s cap", err, took)
	}
	if took > 4*time.Second {
		t.Errorf("cut after %s, want about 1.5 s", took)
	}
}

// TestRPCBusySchedulerWaitedFor: a scheduler that answers only after
// three times RPCTimeout (a busy project's, or Apache's queue in front of
// it) gets its reply through: before the first reply byte only the C++
// client's rules apply (the 5-minute window of its low-speed limit and
// ReplyTimeout), where boincd used to give up at RPCTimeout.
func TestRPCBusySchedulerWaitedFor(t *testing.T) {
	t.Parallel()
	const base = 500 * time.Millisecond
	busy := hostileServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
			return
		case <-time.After(3 * base):
		}
		w.Header().Set("Content-Type", "text/xml")
		_, _ = io.WriteString(w, "<scheduler_reply>\n<request_delay>9</request_delay>\n</scheduler_reply>\n")
	}))
	c := newTestClient(t, Options{RPCTimeout: base, RPCBytesPerSec: 4096})
	start := time.Now()
	reply, _, err := c.SchedulerRPC(context.Background(), busy.URL+"/cgi", []byte("<scheduler_request/>\n"))
	if err != nil {
		t.Fatalf("scheduler answering after %s: %v", 3*base, err)
	}
	if reply.RequestDelay != 9 {
		t.Fatalf("reply %+v", reply)
	}
	t.Logf("figures: a scheduler silent for %s (RPC bound %s) answered; exchange took %s", 3*base, base, time.Since(start).Round(time.Millisecond))
}
