package daemon

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

func TestDiskAllowed(t *testing.T) {
	t.Parallel()
	const gb = 1 << 30 // the C++ client's GIGA
	// The reference client's own numbers (fixtures/boinc-7.20 scheduler
	// request 01): d_total, d_free, BOINC's usage and the default prefs.
	const refTotal, refFree, refUsed = 270553174016.0, 84384870400.0, 49152.0
	tests := []struct {
		name              string
		total, free, used float64
		p                 prefsView
		want              float64
	}{
		{"no limits: what the disk has", 100 * gb, 50 * gb, 1 * gb, prefsView{}, 51 * gb},
		{"max used gb", 100 * gb, 50 * gb, 1 * gb, prefsView{DiskMaxUsedGB: 10}, 10 * gb},
		{"pct of the disk", 100 * gb, 50 * gb, 1 * gb, prefsView{DiskMaxUsedPct: 5}, 5 * gb},
		{"min free", 100 * gb, 3 * gb, 1 * gb, prefsView{DiskMinFreeGB: 2}, 2 * gb},
		{"least of all", 100 * gb, 3 * gb, 1 * gb, prefsView{DiskMaxUsedGB: 10, DiskMaxUsedPct: 90, DiskMinFreeGB: 2.5}, 1.5 * gb},
		{"never negative", 100 * gb, 1 * gb, 0, prefsView{DiskMinFreeGB: 5}, 0},
		// (84384870400 + 49152) - 0.1·2^30, below 90 % of the disk.
		{"reference client, default prefs", refTotal, refFree, refUsed, prefsView{DiskMaxUsedPct: 90, DiskMinFreeGB: 0.1}, 84277545369.6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := diskAllowed(tc.total, tc.free, tc.used, tc.p); got != tc.want {
				t.Fatalf("allowed %f, want %f", got, tc.want)
			}
		})
	}
}

func TestClockJump(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mono, wall time.Duration
		jump       bool
	}{
		{10 * time.Second, 10 * time.Second, false},
		{10 * time.Second, 10*time.Second + 4*time.Minute, false},
		{10 * time.Second, time.Hour, true},
		{10 * time.Second, -time.Hour, true},
	} {
		if got := clockJump(tc.mono, tc.wall) != 0; got != tc.jump {
			t.Errorf("mono %v wall %v: jump %v, want %v", tc.mono, tc.wall, got, tc.jump)
		}
	}
}

// A disk limit reached shows as a named warning over GUI RPC and stops
// work fetch: the project gets no request for work.
func TestHealthDiskLimitStopsFetch(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 60", InputSize: 1000},
		TotalJobs: 2,
	})
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	override := "<global_preferences>\n<disk_max_used_gb>0.000001</disk_max_used_gb>\n</global_preferences>\n"
	if err := os.WriteFile(filepath.Join(data, PrefsOverrideFile), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startDaemonIn(t, data, projectsConfig(srv), nil)
	var warn guirpc.HealthWarning
	testsupport.WaitFor(t, 30*time.Second, "the disk_limit_reached warning", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := rpcBackend{h.d}.Snapshot(ctx, guirpc.PartAll)
		if err != nil {
			return false
		}
		for _, w := range st.CCStatus.Health {
			if w.Name == HealthDiskLimit {
				warn = w
				return true
			}
		}
		return false
	})
	if warn.Message == "" || warn.Since.IsZero() {
		t.Fatalf("warning %+v", warn)
	}
	time.Sleep(3 * time.Second)
	if sent := srv.Stats().Sent; len(sent) != 0 {
		t.Fatalf("work fetched despite the disk limit: %v", sent)
	}
}
