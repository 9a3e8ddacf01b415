package daemon

import (
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// NetStatsMetaKey is the meta key of the measured transfer rates
// (boinc.NetStats); boincd import writes the C++ client's there.
const NetStatsMetaKey = "net_stats"

// recordTransfer folds a finished transfer into the measured rates, which
// every scheduler request carries (<net_stats>: the server keeps bwup and
// bwdown as the host's n_bwup and n_bwdown). A transfer that moved nothing
// (the file was already there) says nothing about the link.
func (d *Daemon) recordTransfer(upload bool, moved int64, took time.Duration, now time.Time) {
	d.recordDailyXfer(upload, moved, now)
	if moved <= 0 || took <= 0 {
		return
	}
	ni := &d.netStats.Down
	if upload {
		ni = &d.netStats.Up
	}
	ni.Update(float64(moved), took.Seconds(), float64(now.UnixNano())/1e9)
	d.batch.PutMeta(NetStatsMetaKey, &d.netStats)
}

// guiNetStats is the measured rates as GUI RPC's <net_stats> shows them.
func guiNetStats(n boinc.NetStats) guirpc.NetStats {
	at := func(secs float64) time.Time {
		if secs == 0 {
			return time.Time{}
		}
		return time.Unix(0, int64(secs*1e9))
	}
	return guirpc.NetStats{
		BWUp: n.Up.MaxRate, AvgUp: n.Up.AvgRate, AvgTimeUp: at(n.Up.AvgTime),
		BWDown: n.Down.MaxRate, AvgDown: n.Down.AvgRate, AvgTimeDown: at(n.Down.AvgTime),
	}
}
