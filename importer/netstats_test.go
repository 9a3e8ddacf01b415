package importer

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/importer/importtest"
)

// TestImportNetStats: the C++ client's measured transfer rates
// (<net_stats> of client_state.xml) become boincd's, so the next
// scheduler request sends the same bwup and bwdown.
func TestImportNetStats(t *testing.T) {
	tests := []struct {
		name  string
		state string
		edit  func(string) string
		want  *boinc.NetStats // nil: no net_stats meta
	}{
		{
			name:  "task running",
			state: "client_state_task_running.xml",
			want: &boinc.NetStats{
				Up:   boinc.NetInfo{MaxRate: 609761.057448, AvgRate: 52683329616.329300, AvgTime: 1795268554.997036},
				Down: boinc.NetInfo{MaxRate: 5020424.600157, AvgRate: 399759143310.366272, AvgTime: 1795268559.005331},
			},
		},
		{
			name:  "after report",
			state: "client_state_after_report.xml",
			want: &boinc.NetStats{
				Up:   boinc.NetInfo{MaxRate: 743949.043745, AvgRate: 52679944623.415550, AvgTime: 1795268611.101300},
				Down: boinc.NetInfo{MaxRate: 5147572.388273, AvgRate: 399756371766.958008, AvgTime: 1795268565.054938},
			},
		},
		{
			name:  "no net_stats element",
			state: "client_state_task_running.xml",
			edit: func(s string) string {
				return regexp.MustCompile(`(?s)<net_stats>.*?</net_stats>\n`).ReplaceAllString(s, "")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: tc.state, Edit: tc.edit})
			dst := filepath.Join(t.TempDir(), "boincd")
			if _, err := runImport(t, src.Path, dst, false); err != nil {
				t.Fatalf("Import: %v", err)
			}
			raw, ok := loadState(t, dst).Meta[daemon.NetStatsMetaKey]
			if tc.want == nil {
				if ok {
					t.Fatalf("net_stats meta %s written from a state without <net_stats>", raw)
				}
				return
			}
			var got boinc.NetStats
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatalf("net_stats meta %q: %v", raw, err)
			}
			if got != *tc.want {
				t.Errorf("imported %+v\nwant     %+v", got, *tc.want)
			}
		})
	}
}
