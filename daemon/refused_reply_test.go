package daemon

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// A reply the daemon refuses still cost the server a host record and the
// jobs in it. The next request must carry the host id from it, or a real
// server matches the host by CPID and marks its jobs as client errors.
func TestRefusedReplyKeepsHostID(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		TotalJobs: 3,
		Faults: testproject.Faults{RewriteReply: func(rpc int, reply []byte) []byte {
			if rpc != 1 {
				return reply
			}
			return bytes.Replace(reply, []byte("</scheduler_reply>"), []byte("<unclosed></scheduler_reply>"), 1)
		}},
	})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, 20*time.Second, "a second scheduler request", func() bool { return srv.Stats().RPCs >= 2 })
	st := srv.Stats()
	if len(st.HostIDs) != 1 {
		t.Fatalf("server created hosts %v: the refused reply's host id was not kept", st.HostIDs)
	}
	if !strings.Contains(string(st.LastRequest), "<hostid>1</hostid>") {
		t.Errorf("second request lacks the host id:\n%s", st.LastRequest)
	}
	if len(h.logs.Find("kept the host id from the refused reply, so the project still knows this computer and its tasks")) != 1 {
		t.Errorf("no log line for the salvaged host id")
	}
	if len(h.logs.Find("scheduler request failed")) == 0 {
		t.Errorf("the refused reply was not reported as a failure")
	}
}

// The web links of the stock gui_urls.xml (with its bare '&') reach the
// GUI RPC state the Manager reads, and survive a restart.
func TestProjectWebLinksFromReply(t *testing.T) {
	t.Parallel()
	links := "<gui_urls>\n<gui_url><name>Your account</name><description>View your account</description><url>URL/home.php</url></gui_url>\n</gui_urls>\n" +
		"<rss_feeds><rss_feed><url>URL/notices.php?userid=1&auth=1_abc</url><poll_interval>86400</poll_interval></rss_feed></rss_feeds>\n"
	var srv *testproject.Server
	srv = testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Faults: testproject.Faults{RewriteReply: func(_ int, reply []byte) []byte {
		return bytes.Replace(reply, []byte("</scheduler_reply>"), []byte(strings.ReplaceAll(links, "URL/", srv.URL())+"</scheduler_reply>"), 1)
	}}})
	dataDir := filepath.Join(t.TempDir(), "data")
	h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	want := boinc.GUIURL{Name: "Your account", Description: "View your account", URL: srv.URL() + "home.php"}
	webLinks := func(h *harness) []boinc.GUIURL {
		var got []boinc.GUIURL
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = h.d.query(ctx, func() {
			for _, p := range h.d.guiState(time.Now(), 0).Projects {
				got = p.GUIURLs
			}
		})
		return got
	}
	testsupport.WaitFor(t, 20*time.Second, "the project's web links", func() bool { return len(webLinks(h)) == 1 })
	if got := webLinks(h); got[0] != want {
		t.Errorf("web link %+v, want %+v", got[0], want)
	}
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	srv.SetFaults(testproject.Faults{})
	h2 := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	if got := webLinks(h2); len(got) != 1 || got[0] != want {
		t.Errorf("after a restart: %+v", got)
	}
}
