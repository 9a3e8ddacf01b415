package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/workfetch"
)

// TestRequestNetStatsAndDiskUsage: a scheduler request carries the
// measured rates and the disk use and share as the C++ client computes
// them (allocated blocks; the share from the disk preferences).
func TestRequestNetStatsAndDiskUsage(t *testing.T) {
	t.Parallel()
	const a, b = "http://a.example/", "http://b.example/"
	tests := []struct {
		name      string
		prefs     func(*boinc.Prefs)
		dFree     float64
		wantShare string // of project a
	}{
		{
			// allowed = 2^30; a's disk share 100+30 of a total 400.
			name: "disk_max_used_gb", prefs: func(p *boinc.Prefs) { p.DiskMaxUsedGB = 1 }, dFree: 500e9,
			wantShare: "348966092.800000",
		},
		{
			// allowed = 20 % of 100e9 = 20e9.
			name: "disk_max_used_pct", prefs: func(p *boinc.Prefs) { p.DiskMaxUsedPct = 20; p.DiskMinFreeGB = 0 }, dFree: 50e9,
			wantShare: "6500000000.000000",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			d := &Daemon{
				opt:       Options{DataDir: dir},
				st:        newClientState(),
				sched:     map[string]*workfetch.ProjectState{},
				core:      newCore(),
				host:      boinc.Host{DTotal: 100e9, DFree: tc.dFree},
				prefs:     boinc.DefaultPrefs(),
				startTime: time.Unix(1795268000, 0),
				netStats: boinc.NetStats{
					Up:   boinc.NetInfo{MaxRate: 609761.057448, AvgRate: 52683329616.329300, AvgTime: 1795268554.997036},
					Down: boinc.NetInfo{MaxRate: 5020424.600157, AvgRate: 399759143310.366272, AvgTime: 1795268559.005331},
				},
			}
			tc.prefs(&d.prefs)
			pa := &boinc.Project{MasterURL: a, ResourceShare: 100, Authenticator: "k"}
			d.st.projects[a] = pa
			d.st.projects[b] = &boinc.Project{MasterURL: b, ResourceShare: 300, Authenticator: "k"}
			write := func(path string, n int) float64 {
				t.Helper()
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, bytes.Repeat([]byte("x"), n), 0o644); err != nil {
					t.Fatal(err)
				}
				info, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				return allocSize(info)
			}
			useA := write(filepath.Join(d.projectDir(a), "in"), 10000)
			useA += write(filepath.Join(dir, "slots", "3", "out"), 5000) // a's running task
			useB := write(filepath.Join(d.projectDir(b), "in"), 3000)
			top := write(filepath.Join(dir, "client_state.db"), 7000)
			write(filepath.Join(dir, "slots", "4", "stale"), 9000) // nobody's slot: not counted
			d.st.putResult(&boinc.Result{ProjectURL: a, Name: "r", Slot: 3, Phase: boinc.PhaseComputing})

			req, _ := d.buildRequest(pa, workfetch.Request{Project: -1}, time.Unix(1795268600, 0))
			var buf bytes.Buffer
			if _, err := req.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			xml := buf.String()
			for _, want := range []string{
				"<net_stats>\n" +
					"    <bwup>609761.057448</bwup>\n" +
					"    <avg_up>52683329616.329300</avg_up>\n" +
					"    <avg_time_up>1795268554.997036</avg_time_up>\n" +
					"    <bwdown>5020424.600157</bwdown>\n" +
					"    <avg_down>399759143310.366272</avg_down>\n" +
					"    <avg_time_down>1795268559.005331</avg_time_down>\n" +
					"</net_stats>\n",
				"    <disk_usage>\n" +
					fmt.Sprintf("        <d_boinc_used_total>%f</d_boinc_used_total>\n", useA+useB+top) +
					fmt.Sprintf("        <d_boinc_used_project>%f</d_boinc_used_project>\n", useA) +
					"        <d_project_share>" + tc.wantShare + "</d_project_share>\n" +
					"    </disk_usage>\n",
			} {
				if !strings.Contains(xml, want) {
					t.Errorf("the request lacks\n%s\nrequest:\n%s", want, xml)
				}
			}
		})
	}
}
