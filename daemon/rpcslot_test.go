package daemon

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/hostilehttp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestTrickleFreesRPCSlot (issue 14): a project server that trickles every
// reply at 2 B/s holds the daemon's single RPC slot for one exchange, and
// the RPC bound (rpcclient's RPCTimeout, 60 s in production, used here
// unshortened with the production 5-minute stall timeout) takes it back
// after about a minute: the healthy project's first scheduler request,
// which waits behind the hostile exchange whichever project comes first,
// completes within 75 s of the start. Before the bound, the 10 B/s
// low-speed rule let the trickle hold the slot for 300 s.
func TestTrickleFreesRPCSlot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about a minute: the production RPC bound")
	}
	t.Parallel()
	var served hostilehttp.Counter
	trickle := httptest.NewServer(hostilehttp.Drip{Prefix: []byte("<html>\n"), Filler: ' ', Chunk: 1,
		Interval: 500 * time.Millisecond, Total: -1, Count: &served})
	t.Cleanup(func() {
		trickle.CloseClientConnections()
		trickle.Close()
	})
	hostileURL := trickle.URL + "/"
	healthy := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
	start := time.Now()
	h := startDaemonIn(t, t.TempDir()+"/data", configFor(hostileURL, healthy.URL()), nil)

	const limit = 75 * time.Second
	testsupport.WaitFor(t, limit, "the healthy project's first scheduler request to complete", func() bool {
		return len(h.logs.Find("scheduler request completed", "project", healthy.URL())) > 0
	})
	healthyDone := time.Since(start)

	fails := h.logs.Find("cannot read the project's master page", "project", hostileURL)
	if len(fails) == 0 {
		t.Fatalf("no failed master fetch of the trickling project logged (%d requests served)", served.Requests())
	}
	first := fails[0]
	if err := first.Str("err"); !strings.Contains(err, "reply took longer than") {
		t.Errorf("trickle failure logged as %q, want the RPC bound", err)
	}
	held := first.Time().Sub(start)
	if held < 55*time.Second || held > 70*time.Second {
		t.Errorf("the trickling master fetch failed %s after the start, want about 60 s", held)
	}
	// The healthy request really waited for the slot: it went out after
	// the hostile exchange gave the slot back.
	sent := h.logs.Find("sending scheduler request", "project", healthy.URL())
	if len(sent) == 0 || sent[0].Time().Before(first.Time()) {
		t.Errorf("the healthy project's request did not wait behind the trickle; the test shows nothing")
	}
	t.Logf("figures: trickle (2 B/s) held the RPC slot %s; healthy project's first RPC completed %s after the start",
		held.Round(100*time.Millisecond), healthyDone.Round(100*time.Millisecond))
}
