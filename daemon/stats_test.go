package daemon

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/statefile"
)

func TestAddDailyStats(t *testing.T) {
	t.Parallel()
	day := func(n int) time.Time { return time.Unix(int64(20000+n)*86400, 0) }
	entry := func(n int, credit float64) boinc.DailyStats {
		return boinc.DailyStats{Day: day(n), UserTotalCredit: credit}
	}
	tests := []struct {
		name string
		list []boinc.DailyStats
		add  boinc.DailyStats
		want []boinc.DailyStats
	}{
		{"first", nil, entry(0, 1), []boinc.DailyStats{entry(0, 1)}},
		{"same day replaces", []boinc.DailyStats{entry(-1, 1), entry(0, 2)}, entry(0, 3), []boinc.DailyStats{entry(-1, 1), entry(0, 3)}},
		{"next day appends", []boinc.DailyStats{entry(0, 1)}, entry(1, 2), []boinc.DailyStats{entry(0, 1), entry(1, 2)}},
		{"older than save_stats_days dropped", []boinc.DailyStats{entry(-31, 1), entry(-30, 2), entry(-1, 3)}, entry(0, 4),
			[]boinc.DailyStats{entry(-30, 2), entry(-1, 3), entry(0, 4)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := addDailyStats(append([]boinc.DailyStats(nil), tc.list...), tc.add, saveStatsDays)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Day.Equal(tc.want[i].Day) || got[i].UserTotalCredit != tc.want[i].UserTotalCredit {
					t.Errorf("entry %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestStatsDay(t *testing.T) {
	t.Parallel()
	// 1795634000 is 2026-11-25 18:33:20 UTC; the C++ client files it under
	// that day's UTC midnight whatever the local zone.
	if got := statsDay(time.Unix(1795634000, 0)).Unix(); got != 1795564800 {
		t.Errorf("statsDay = %d, want 1795564800", got)
	}
	if got := xferDay(time.Unix(1795634000, 0)); got != 20782 {
		t.Errorf("xferDay = %d, want 20782", got)
	}
}

func TestDailyXferAndQuota(t *testing.T) {
	t.Parallel()
	const day = 86400 * time.Second
	t0 := time.Unix(20782*86400+3600, 0)
	var list []boinc.DailyXfer
	list = addDailyXfer(list, true, 100e6, t0.Add(-3*day))
	list = addDailyXfer(list, false, 200e6, t0.Add(-day))
	list = addDailyXfer(list, true, 50e6, t0)
	list = addDailyXfer(list, false, 25e6, t0)
	if len(list) != 3 || list[2].Up != 50e6 || list[2].Down != 25e6 || list[2].When != 20782 {
		t.Fatalf("history %+v", list)
	}
	tests := []struct {
		days     int
		limitMB  float64
		up, down float64
		over     bool
	}{
		{1, 100, 50e6, 25e6, false},
		{2, 250, 50e6, 225e6, true},
		{3, 300, 50e6, 225e6, false},
		{4, 300, 150e6, 225e6, true},
		{4, 0, 150e6, 225e6, false}, // no limit
	}
	for _, tc := range tests {
		up, down := xferTotals(list, tc.days, t0)
		if up != tc.up || down != tc.down {
			t.Errorf("%d days: totals %g/%g, want %g/%g", tc.days, up, down, tc.up, tc.down)
		}
		d := &Daemon{dailyXfers: list}
		d.prefs.DailyXferLimitMB, d.prefs.DailyXferPeriodDays = tc.limitMB, tc.days
		if got := d.overXferQuota(t0); got != tc.over {
			t.Errorf("%d days, %g MB: over quota = %v, want %v", tc.days, tc.limitMB, got, tc.over)
		}
	}
	// A year's worth is all that is kept.
	list = addDailyXfer(list, true, 1, t0.Add(dailyXferDays*day))
	if len(list) != 1 {
		t.Errorf("after a year: %+v, want only the new day", list)
	}
}

// TestStatsPersisted: credit from a reply, job counts from reports and
// transfer volumes survive a restart, and a detach removes the project's
// statistics.
func TestStatsPersisted(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := persistDaemon(t, &logs)
	const url = "http://example.org/p/"
	p := &boinc.Project{MasterURL: url, HostID: 7, ResourceShare: 100}
	d.st = stateFromSnapshot(&statefile.Snapshot{Projects: []*boinc.Project{p}})
	d.dailyStats = map[string][]boinc.DailyStats{}
	now := time.Unix(1795634000, 0)
	d.recordCredit(p, &rpcclient.SchedulerReply{
		UserTotalCredit: 10, UserExpavgCredit: 1, HostTotalCredit: 5, HostExpavgCredit: 0.5,
		EmailHash: "abc", UserCreateTime: 1795000000, HostCreateTime: 1795100000,
	}, now)
	d.countReported(&boinc.Result{ProjectURL: url, WireState: 5, FinalElapsedTime: 30})
	d.countReported(&boinc.Result{ProjectURL: url, WireState: 3, ExitStatus: -1, FinalElapsedTime: 2})
	d.countReported(&boinc.Result{ProjectURL: url, WireState: 6, ExitStatus: -221})
	d.recordDailyXfer(false, 1000, now)
	if !d.flush() {
		t.Fatalf("flush failed:\n%s", logs.String())
	}

	snap, err := d.store.Load()
	if err != nil {
		t.Fatal(err)
	}
	d2 := &Daemon{log: d.log, st: stateFromSnapshot(snap), dailyStats: map[string][]boinc.DailyStats{}}
	d2.loadStats(snap.Meta)
	got := d2.st.projects[url]
	if got.NJobsSuccess != 1 || got.NJobsError != 2 || got.ElapsedTime != 32 {
		t.Errorf("jobs %d ok, %d failed, %g s; want 1, 2, 32", got.NJobsSuccess, got.NJobsError, got.ElapsedTime)
	}
	if got.EmailHash != "abc" || got.UserCreateTime.Unix() != 1795000000 || got.HostCreateTime.Unix() != 1795100000 ||
		got.CPIDTime.Unix() != 1795000000 {
		t.Errorf("account fields %q %v %v %v", got.EmailHash, got.UserCreateTime, got.HostCreateTime, got.CPIDTime)
	}
	if s := d2.dailyStats[url]; len(s) != 1 || s[0].Day.Unix() != 1795564800 || s[0].UserTotalCredit != 10 || s[0].HostExpavgCredit != 0.5 {
		t.Errorf("statistics after reload %+v", s)
	}
	if len(d2.dailyXfers) != 1 || d2.dailyXfers[0].Down != 1000 {
		t.Errorf("transfer history after reload %+v", d2.dailyXfers)
	}

	d.forgetStats(url)
	if !d.flush() {
		t.Fatal("flush failed")
	}
	snap, err = d.store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := snap.Meta[StatsMetaKey(url)]; ok {
		t.Error("statistics kept after detach")
	}
}

// TestJobsCountedEndToEnd: a daemon computing real tasks of the test
// project reports jobs succeeded, their elapsed time and a statistics row
// in GUI RPC's snapshot.
func TestJobsCountedEndToEnd(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", ReportImmediately: true},
		TotalJobs: 2,
	})
	h := startDaemon(t, srv)
	checkHealthy(t, srv, 2, 60*time.Second)
	testsupport.WaitFor(t, 20*time.Second, "both jobs counted", func() bool {
		st, err := rpcBackend{h.d}.Snapshot(context.Background(), guirpc.PartAll)
		if err != nil || len(st.Projects) != 1 {
			return false
		}
		p := st.Projects[0]
		return p.NJobsSuccess == 2 && p.NJobsError == 0 && p.ElapsedTime > 0 && len(p.Statistics) == 1 &&
			!p.UserCreateTime.IsZero() && p.EmailHash != "" && len(st.DailyXfers) == 1 && st.DailyXfers[0].Up > 0
	})
}
