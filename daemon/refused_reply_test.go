package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// A reply the daemon refuses still cost the server a host record and the
// jobs in it. The next request must carry the host id from it, or a real
// server matches the host by CPID and marks its jobs as client errors.
func TestRefusedReplyKeepsHostID(t *testing.T) {
	srv := startProject(t, testproject.Config{
		TotalJobs: 3,
		Faults: testproject.Faults{RewriteReply: func(rpc int, reply []byte) []byte {
			if rpc != 1 {
				return reply
			}
			return bytes.Replace(reply, []byte("</scheduler_reply>"), []byte("<unclosed></scheduler_reply>"), 1)
		}},
	})
	h := startDaemon(t, srv)
	waitFor(t, 20*time.Second, "a second scheduler request", func() bool { return srv.Stats().RPCs >= 2 })
	st := srv.Stats()
	if len(st.HostIDs) != 1 {
		t.Fatalf("server created hosts %v: the refused reply's host id was not kept", st.HostIDs)
	}
	if !strings.Contains(string(st.LastRequest), "<hostid>1</hostid>") {
		t.Errorf("second request lacks the host id:\n%s", st.LastRequest)
	}
	if len(h.logs.find("kept the host id from the refused reply, so the project still knows this computer and its tasks")) != 1 {
		t.Errorf("no log line for the salvaged host id")
	}
	if len(h.logs.find("scheduler request failed")) == 0 {
		t.Errorf("the refused reply was not reported as a failure")
	}
}
