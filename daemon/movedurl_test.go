package daemon

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// A project whose replies name another master URL (it moved): the C++
// client's alert (handle_scheduler_reply), once however many replies say
// so; an http → https move of the same URL gets its own words; the same
// URL spelt otherwise (upper case, no trailing slash) is no move.
func TestReplyNamesAnotherMasterURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		other func(url string) string
		alert string // "" for none
	}{
		{name: "moved", other: func(string) string { return "http://moved.example.org/project" },
			alert: "This project seems to have changed its URL.  When convenient, remove the project, then add http://moved.example.org/project/"},
		{name: "to https", other: func(u string) string { return "https://" + strings.TrimPrefix(u, "http://") },
			alert: "This project now uses https"},
		{name: "same URL", other: func(u string) string { return strings.ToUpper(strings.TrimSuffix(u, "/")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 3, MaxJobsPerRPC: 1, RequestDelay: -1})
			own := []byte("<master_url>" + srv.URL() + "</master_url>")
			other := []byte("<master_url>" + tc.other(srv.URL()) + "</master_url>")
			srv.SetFaults(testproject.Faults{RewriteReply: func(_ int, reply []byte) []byte {
				return bytes.Replace(reply, own, other, 1)
			}})
			h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) { o.PollInterval = 100 * time.Millisecond })
			testsupport.WaitFor(t, testLimit, "three scheduler requests", func() bool { return srv.Stats().RPCs >= 3 })
			var got []string
			for _, r := range h.logs.Records() {
				if m := r.Str("msg"); strings.Contains(m, "changed its URL") || strings.Contains(m, "now uses https") {
					got = append(got, m)
					if r.Str("level") != "WARN" || r.Str("project") != srv.URL() {
						t.Errorf("alert %q: level %s project %s, want a user alert (WARN) for %s", m, r.Str("level"), r.Str("project"), srv.URL())
					}
				}
			}
			switch {
			case tc.alert == "" && len(got) > 0:
				t.Errorf("alerts %q for the same URL spelt otherwise", got)
			case tc.alert != "" && (len(got) != 1 || !strings.HasPrefix(got[0], tc.alert)):
				t.Errorf("alerts %q over %d replies, want one starting %q", got, srv.Stats().RPCs, tc.alert)
			}
		})
	}
}
