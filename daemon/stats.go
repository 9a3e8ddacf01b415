package daemon

import (
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/hostcond"
	"github.com/boincd/boincd/rpcclient"
)

// The statistics the GUIs graph and list: per-project daily credit
// (get_statistics), per-day transfer volumes (get_daily_xfer_history),
// and per-project job counts. Each is kept as the C++ client keeps it.
const (
	// StatsMetaPrefix + master URL is the meta key of a project's daily
	// statistics ([]boinc.DailyStats, oldest first); boincd import writes
	// the C++ client's statistics_<project>.xml there.
	StatsMetaPrefix = "stats:"
	// DailyXferMetaKey holds the daily transfer history
	// ([]boinc.DailyXfer, oldest first).
	DailyXferMetaKey = "daily_xfer_history"

	// saveStatsDays is cc_config's save_stats_days default: how many days
	// of credit history a project keeps.
	saveStatsDays = 30
	// dailyXferDays bounds the transfer history; the quota looks back
	// daily_xfer_period_days, which the Manager offers up to a few weeks.
	dailyXferDays = 365
	secondsPerDay = 86400
)

// StatsMetaKey is the meta key of a project's daily statistics.
func StatsMetaKey(url string) string { return StatsMetaPrefix + url }

// statsDay is dday(): the UTC midnight that starts now's day.
func statsDay(now time.Time) time.Time {
	s := float64(now.Unix())
	return time.Unix(int64(s-math.Mod(s, secondsPerDay)), 0)
}

// xferDay is DAILY_XFER_HISTORY's current_day(): days since the epoch.
func xferDay(now time.Time) int { return int(now.Unix() / secondsPerDay) }

// addDailyStats records the credit a scheduler reply reported as today's
// entry, replacing an earlier one of the same day, and drops days older
// than days (save_stats_days), as the C++ client updates
// PROJECT::statistics from each scheduler reply.
func addDailyStats(list []boinc.DailyStats, e boinc.DailyStats, days int) []boinc.DailyStats {
	if n := len(list); n > 0 && list[n-1].Day.Equal(e.Day) {
		list[n-1] = e
	} else {
		list = append(list, e)
	}
	cutoff := e.Day.Add(-time.Duration(days) * secondsPerDay * time.Second)
	i := 0
	for i < len(list) && list[i].Day.Before(cutoff) {
		i++
	}
	return slices.Delete(list, 0, i)
}

// recordCredit keeps the credit of a scheduler reply as today's statistics
// and the account fields the GUIs show.
func (d *Daemon) recordCredit(p *boinc.Project, rep *rpcclient.SchedulerReply, now time.Time) {
	if rep.EmailHash != "" {
		p.EmailHash = rep.EmailHash
	}
	if rep.ExternalCPID != "" {
		p.ExternalCPID = rep.ExternalCPID
	}
	if t, ok := replyTime(rep.UserCreateTime); ok {
		p.UserCreateTime = t
	}
	if t, ok := replyTime(rep.HostCreateTime); ok {
		p.HostCreateTime = t
	}
	if t, ok := replyTime(rep.CPIDTime); ok {
		p.CPIDTime = t
	} else if p.CPIDTime.IsZero() {
		// The C++ client dates the cross-project id by the account when
		// the server does not say.
		p.CPIDTime = p.UserCreateTime
	}
	if p.HostID == 0 {
		// No host record yet: the reply's credit is not this host's.
		return
	}
	url := p.MasterURL
	d.dailyStats[url] = addDailyStats(d.dailyStats[url], boinc.DailyStats{
		Day:              statsDay(now),
		UserTotalCredit:  rep.UserTotalCredit,
		UserExpavgCredit: rep.UserExpavgCredit,
		HostTotalCredit:  rep.HostTotalCredit,
		HostExpavgCredit: rep.HostExpavgCredit,
	}, d.statsDays())
	d.batch.PutMeta(StatsMetaKey(url), d.dailyStats[url])
}

// countReported counts a task the server acknowledged in its project's
// totals: a success is a task whose outputs were uploaded with exit
// status 0, anything else (computation error, aborted, failed transfer)
// an error; either way its elapsed time counts.
func (d *Daemon) countReported(r *boinc.Result) {
	p := d.st.projects[r.ProjectURL]
	if p == nil {
		return
	}
	const filesUploaded = 5 // RESULT_FILES_UPLOADED
	if r.ExitStatus == 0 && r.WireState == filesUploaded {
		p.NJobsSuccess++
	} else {
		p.NJobsError++
	}
	p.ElapsedTime += r.FinalElapsedTime
	d.batch.PutProject(p)
}

// forgetStats drops a detached project's statistics.
func (d *Daemon) forgetStats(url string) {
	delete(d.dailyStats, url)
	d.batch.DeleteMeta(StatsMetaKey(url))
}

// loadStats reads the statistics kept in the state file; an entry that
// does not decode is dropped with a warning (they are for people, and the
// next scheduler reply starts them again).
func (d *Daemon) loadStats(meta map[string][]byte) {
	for k, v := range meta {
		url, ok := strings.CutPrefix(k, StatsMetaPrefix)
		if !ok {
			continue
		}
		if _, attached := d.st.projects[url]; !attached {
			continue
		}
		var list []boinc.DailyStats
		if err := json.Unmarshal(v, &list); err != nil {
			d.log.Warn("daily statistics ignored", slog.String("project", url), slog.Any("err", err))
			continue
		}
		d.dailyStats[url] = list
	}
	if v, ok := meta[DailyXferMetaKey]; ok {
		if err := json.Unmarshal(v, &d.dailyXfers); err != nil {
			d.log.Warn("daily transfer history ignored", slog.Any("err", err))
			d.dailyXfers = nil
		}
	}
}

// addDailyXfer is DAILY_XFER_HISTORY::add: bytes counted in today's entry;
// days beyond dailyXferDays are dropped.
func addDailyXfer(list []boinc.DailyXfer, upload bool, n float64, now time.Time) []boinc.DailyXfer {
	day := xferDay(now)
	if k := len(list); k == 0 || list[k-1].When != day {
		list = append(list, boinc.DailyXfer{When: day})
	}
	e := &list[len(list)-1]
	if upload {
		e.Up += n
	} else {
		e.Down += n
	}
	i := 0
	for i < len(list) && list[i].When <= day-dailyXferDays {
		i++
	}
	return slices.Delete(list, 0, i)
}

// xferTotals is DAILY_XFER_HISTORY::totals: bytes moved in the last
// ndays days, today included.
func xferTotals(list []boinc.DailyXfer, ndays int, now time.Time) (up, down float64) {
	day := xferDay(now)
	for _, x := range list {
		if x.When > day-ndays {
			up += x.Up
			down += x.Down
		}
	}
	return up, down
}

// recordDailyXfer adds a transfer's bytes to today's history.
func (d *Daemon) recordDailyXfer(upload bool, moved int64, now time.Time) {
	if moved <= 0 {
		return
	}
	d.dailyXfers = addDailyXfer(d.dailyXfers, upload, float64(moved), now)
	d.batch.PutMeta(DailyXferMetaKey, d.dailyXfers)
}

// overXferQuota: the daily_xfer_limit_mb preference is used up over the
// last daily_xfer_period_days, so transfers and scheduler requests wait
// (check_suspend_network, SUSPEND_REASON_NETWORK_QUOTA_EXCEEDED).
func (d *Daemon) overXferQuota(now time.Time) bool {
	p := d.prefs
	if p.DailyXferLimitMB <= 0 || p.DailyXferPeriodDays <= 0 {
		return false
	}
	up, down := xferTotals(d.dailyXfers, p.DailyXferPeriodDays, now)
	return up+down > p.DailyXferLimitMB*1e6
}

// xferQuotaHolds: the quota stops file transfers now (network mode
// "always" overrides preferences, as it does the time window).
func (d *Daemon) xferQuotaHolds(now time.Time) bool {
	return d.modes.Network.Current(now) == ModeAuto && d.overXferQuota(now)
}

// replyTime is a time a server sent in Unix seconds; 0 (absent) and
// values no calendar needs (beyond year 5000) are not times.
func replyTime(secs float64) (time.Time, bool) {
	if !(secs > 0 && secs < 1e11) {
		return time.Time{}, false
	}
	return time.Unix(0, int64(secs*1e9)), true
}

// guiPrefs is the preferences in force as get_global_prefs_working shows
// them: the suspend conditions as hostcond applies them.
func guiPrefs(p boinc.Prefs, h hostcond.Prefs) boinc.Prefs {
	p.RunOnBatteries = h.RunOnBatteries
	p.RunIfUserActive = h.RunIfUserActive
	p.RunGPUIfUserActive = h.RunGPUIfUserActive
	p.IdleTimeToRun = h.IdleTimeToRun
	p.SuspendIfNoRecentInput = h.SuspendIfNoRecentInput
	p.SuspendCPUUsage = h.SuspendCPUUsage
	p.StartHour, p.EndHour = h.CPU.Start, h.CPU.End
	p.NetStartHour, p.NetEndHour = h.Net.Start, h.Net.End
	for i, dp := range h.Days {
		p.Days[i] = boinc.DayPrefs{
			HasCPU: dp.HasCPU, HasNet: dp.HasNet,
			StartHour: dp.CPU.Start, EndHour: dp.CPU.End,
			NetStartHour: dp.Net.Start, NetEndHour: dp.Net.End,
		}
	}
	return p
}

// guiStatistics is every project's daily statistics for get_statistics.
func (d *Daemon) guiStatistics(url string) []guirpc.DailyStats {
	list := d.dailyStats[url]
	out := make([]guirpc.DailyStats, len(list))
	for i, s := range list {
		out[i] = guirpc.DailyStats(s)
	}
	return out
}

func (d *Daemon) guiDailyXfers() []guirpc.DailyXfer {
	out := make([]guirpc.DailyXfer, len(d.dailyXfers))
	for i, x := range d.dailyXfers {
		out[i] = guirpc.DailyXfer(x)
	}
	return out
}
