package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDiskShares(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		allowed  float64
		projects []diskProject
		want     []string // %f, as the request writes them
	}{
		{
			// Reference request 01: one project, resource share 100.
			name: "one project gets 1.1 × allowed", allowed: 84277545369.6,
			projects: []diskProject{{100, 0}},
			want:     []string{"92705299906.560013"},
		},
		{
			name: "two equal projects", allowed: 1000,
			projects: []diskProject{{100, 10}, {100, 0}},
			want:     []string{"550.000000", "550.000000"},
		},
		{
			name: "shares follow resource shares plus a tenth of the largest", allowed: 1000,
			projects: []diskProject{{300, 0}, {100, 0}},
			want:     []string{"825.000000", "325.000000"},
		},
		{
			name: "a backup project (share 0) still gets room", allowed: 1000,
			projects: []diskProject{{0, 0}, {100, 0}},
			want:     []string{"100.000000", "1100.000000"},
		},
		{
			// Quotas 550 each: the first uses 800, so it gets what the
			// second (using 100) leaves: 1000 - 100.
			name: "a greedy project gets what the others leave", allowed: 1000,
			projects: []diskProject{{100, 800}, {100, 100}},
			want:     []string{"900.000000", "550.000000"},
		},
		{
			// Disk shares 130, 330, 130 of a total resource share of 500:
			// quotas 260, 660, 260. The first two are over theirs and
			// split all 1000 (the third uses nothing) as 130 : 330.
			name: "two greedy projects split it by disk share", allowed: 1000,
			projects: []diskProject{{100, 900}, {300, 2000}, {100, 0}},
			want:     []string{"282.608696", "717.391304", "260.000000"},
		},
		{
			name: "no resource share at all", allowed: 1000,
			projects: []diskProject{{0, 10}, {0, 0}},
			want:     []string{"0.000000", "0.000000"},
		},
		{
			name: "nothing allowed", allowed: 0,
			projects: []diskProject{{100, 10}, {100, 0}},
			want:     []string{"0.000000", "0.000000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, s := range diskShares(tc.allowed, tc.projects) {
				got = append(got, fmt.Sprintf("%f", s))
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("shares %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReferenceDiskShare: allowed use and share together give the
// d_project_share of each of the reference client's scheduler requests
// (fixtures/boinc-7.20/scheduler: one project, default disk prefs).
func TestReferenceDiskShare(t *testing.T) {
	t.Parallel()
	const dTotal = 270553174016.0
	prefs := prefsView{DiskMaxUsedGB: 0, DiskMaxUsedPct: 90, DiskMinFreeGB: 0.1}
	tests := []struct {
		request    string
		free, used float64
		wantShare  string
	}{
		{"01_request_first_contact", 84384870400, 49152, "92705299906.560013"},
		{"02_request_work_fetch_task_running", 84249436160, 94208, "92556371804.160019"},
		{"03_request_work_fetch_upload_pending", 83550621696, 114688, "91787698421.760010"},
		{"04_request_report_two_results", 82881982464, 81920, "91052159221.760010"},
		{"x_request_report_aborted_result", 84733042688, 135168, "93088384040.960007"},
	}
	for _, tc := range tests {
		t.Run(tc.request, func(t *testing.T) {
			allowed := diskAllowed(dTotal, tc.free, tc.used, prefs)
			got := fmt.Sprintf("%f", diskShares(allowed, []diskProject{{100, 0}})[0])
			if got != tc.wantShare {
				t.Errorf("d_project_share %s, want %s", got, tc.wantShare)
			}
		})
	}
}

// TestDirSizeAllocated: disk use counts allocated blocks, as the C++
// client's dir_size_alloc: a one-byte file takes a block, a sparse file
// only what it holds.
func TestDirSizeAllocated(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no block counts on Windows")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sub", "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	all, top := dirSize(dir), topFilesSize(dir)
	if top < 512 || int64(top)%512 != 0 {
		t.Errorf("a one-byte file takes %g bytes, want a whole number of blocks", top)
	}
	if all >= 64<<20 {
		t.Errorf("a 64 MiB hole counted as %g bytes", all)
	}
	if all < top {
		t.Errorf("the tree (%g) counts less than its top files (%g)", all, top)
	}
}
