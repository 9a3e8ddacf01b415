package importer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/importer/importtest"
)

// TestImportStatistics brings the real client's statistics_<project>.xml
// and daily_xfer_history.xml over, and skips a damaged statistics file
// without failing the import.
func TestImportStatistics(t *testing.T) {
	fx := importtest.FixtureDir(t)
	tests := []struct {
		name      string
		statsFile string // contents; "" copies the capture
		xferFile  string
		wantDays  []int64
		wantXfers []boinc.DailyXfer
	}{
		{name: "captures", wantDays: []int64{1795219200}, wantXfers: []boinc.DailyXfer{{When: 20778, Up: 21619, Down: 11327}}},
		{
			name: "sloppy but readable",
			statsFile: "<project_statistics>\n<master_url>HTTP://127.0.0.1:18080</master_url>\n<extra>x</extra>\n" +
				"<daily_statistics><day>1795305600</day><user_total_credit>2</user_total_credit></daily_statistics>\n" +
				"<daily_statistics><day>1795219200.5</day></daily_statistics>\n<daily_statistics><day>0</day></daily_statistics>\n" +
				"<daily_statistics><day>1795305600</day><user_total_credit>3</user_total_credit></daily_statistics>\n</project_statistics>\n",
			xferFile:  "<daily_xfers>\n<dx><when>20778</when><up>1</up><down>2</down></dx>\n<dx><when>20778</when><up>1</up></dx>\n<dx><when>-3</when></dx>\n</daily_xfers>",
			wantDays:  []int64{1795219200, 1795305600},
			wantXfers: []boinc.DailyXfer{{When: 20778, Up: 2, Down: 2}},
		},
		{name: "damaged statistics skipped", statsFile: "<project_statistics><master_url>http://127.0.0.1:18080/</master_url><daily_statistics><day>soon</day>",
			xferFile: "<something_else/>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
			write := func(name, contents string) {
				if contents == "" {
					b, err := os.ReadFile(filepath.Join(fx, "client_files", name))
					if err != nil {
						t.Fatal(err)
					}
					contents = string(b)
				}
				if err := os.WriteFile(filepath.Join(src.Path, name), []byte(contents), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("statistics_127.0.0.1_18080.xml", tc.statsFile)
			write("daily_xfer_history.xml", tc.xferFile)
			dst := filepath.Join(t.TempDir(), "boincd")
			if _, err := runImport(t, src.Path, dst, false); err != nil {
				t.Fatalf("Import: %v", err)
			}
			snap := loadState(t, dst)
			var stats []boinc.DailyStats
			if raw, ok := snap.Meta[daemon.StatsMetaKey(importtest.FixtureURL)]; ok {
				if err := json.Unmarshal(raw, &stats); err != nil {
					t.Fatal(err)
				}
			}
			if len(stats) != len(tc.wantDays) {
				t.Fatalf("statistics %+v, want days %v", stats, tc.wantDays)
			}
			for i, s := range stats {
				if s.Day.Unix() != tc.wantDays[i] {
					t.Errorf("day %d = %d, want %d", i, s.Day.Unix(), tc.wantDays[i])
				}
			}
			if tc.name == "sloppy but readable" && stats[1].UserTotalCredit != 3 {
				t.Errorf("the last entry of a day should win: %+v", stats[1])
			}
			var xfers []boinc.DailyXfer
			if raw, ok := snap.Meta[daemon.DailyXferMetaKey]; ok {
				if err := json.Unmarshal(raw, &xfers); err != nil {
					t.Fatal(err)
				}
			}
			if len(xfers) != len(tc.wantXfers) {
				t.Fatalf("transfer history %+v, want %+v", xfers, tc.wantXfers)
			}
			for i := range xfers {
				if xfers[i] != tc.wantXfers[i] {
					t.Errorf("day %d = %+v, want %+v", i, xfers[i], tc.wantXfers[i])
				}
			}
		})
	}
}
