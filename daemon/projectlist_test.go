package daemon

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/projectlist"
)

const servedList = `<?xml version="1.0" encoding="UTF-8" ?>
<projects>
<project><name>Org Project</name><url>https://project.example.org/</url></project>
<account_manager><name>Org AM</name><url>https://am.example.org/</url></account_manager>
</projects>
`

// allProjectsList is what get_all_projects_list serves: the daemon's
// reply to the GUI RPC server's ReadConfigFile.
func allProjectsList(t *testing.T, h *harness) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []byte
	if err := (rpcBackend{h.d}).Do(ctx, guirpc.ReadConfigFile{File: guirpc.AllProjectsList, Out: &out}); err != nil {
		t.Fatal(err)
	}
	return out
}

// The list of projects and account managers: fetched from the configured
// URL on a fresh data directory, written to all_projects_list.xml and
// served; a server answering with something that is not a list keeps the
// bundled one in service and is retried a day later, not at once; with
// cc_config.xml's no_info_fetch or dont_contact_ref_site nothing is
// fetched and the bundled list serves.
func TestProjectList(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		body   string
		cc     string
		wantIn string // in the served list
		file   bool   // all_projects_list.xml written
		log    string
	}{
		{name: "fetched", body: servedList, wantIn: "Org AM", file: true, log: "list of BOINC projects and account managers updated"},
		{name: "error page", body: "<html><body>maintenance</body></html>", wantIn: "Einstein@Home",
			log: "cannot fetch the list of BOINC projects and account managers; the one in use stays, retrying in a day"},
		{name: "no_info_fetch", body: servedList, cc: "<no_info_fetch>1</no_info_fetch>", wantIn: "Einstein@Home"},
		{name: "dont_contact_ref_site", body: servedList, cc: "<dont_contact_ref_site>1</dont_contact_ref_site>", wantIn: "Science United"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var gets atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gets.Add(1)
				w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			data := filepath.Join(t.TempDir(), "data")
			if err := os.MkdirAll(data, 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.cc != "" {
				cc := "<cc_config>\n<options>\n" + tc.cc + "\n</options>\n</cc_config>\n"
				if err := os.WriteFile(filepath.Join(data, CCConfigFile), []byte(cc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg := config.Default()
			cfg.ProjectListURL = srv.URL + "/project_list.php"
			h := startDaemonIn(t, data, cfg, func(o *Options) {
				o.PollInterval = 100 * time.Millisecond
				o.ProjectListURL = "" // the config's: the test server
			})
			if tc.log != "" {
				testsupport.WaitFor(t, testLimit, tc.log, func() bool { return len(h.logs.Find(tc.log)) > 0 })
			} else {
				testsupport.WaitFor(t, testLimit, "boincd started", func() bool { return len(h.logs.Find("boincd started")) > 0 })
				time.Sleep(time.Second) // a fetch would have started by now
			}
			if got := allProjectsList(t, h); !bytes.Contains(got, []byte(tc.wantIn)) {
				t.Errorf("get_all_projects_list serves %.200q…, want it to hold %q", got, tc.wantIn)
			}
			_, err := os.Stat(filepath.Join(data, AllProjectsListFile))
			if (err == nil) != tc.file {
				t.Errorf("%s on disk: %v, want %v", AllProjectsListFile, err == nil, tc.file)
			}
			// a second fetch only after the period (or the day after a
			// failure): the daemon's loop runs every 100 ms here
			time.Sleep(500 * time.Millisecond)
			want := int32(1)
			if tc.cc != "" {
				want = 0
			}
			if n := gets.Load(); n != want {
				t.Errorf("%d fetches of the list, want %d", n, want)
			}
		})
	}
}

func TestBundledListServesTheManager(t *testing.T) {
	s, err := projectlist.Check(projectlist.Bundled)
	if err != nil || s.AccountManagers == 0 || s.Projects == 0 {
		t.Fatalf("bundled list: %+v %v; the Manager's AM wizard crashes on an empty list of managers", s, err)
	}
	if !strings.Contains(string(projectlist.Bundled), "<projects>") {
		t.Fatal("the bundled list has no <projects> for the GUI RPC reply to start at")
	}
}
