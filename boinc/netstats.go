package boinc

import "math"

// NetRateHalfLife is the half-life of the average transfer rates
// (NET_RATE_HALF_LIFE in client/net_stats.cpp: one week).
const NetRateHalfLife = 7 * 86400.0

// NetStats are the client's measured transfer rates, <net_stats> in
// client_state.xml and in scheduler requests; the server keeps BWUp and
// BWDown as the host's n_bwup and n_bwdown.
type NetStats struct {
	Up   NetInfo `json:"up"`
	Down NetInfo `json:"down"`
}

// NetInfo is one direction (NET_INFO). MaxRate is what BOINC writes as
// bwup/bwdown: despite the name a moving average of the measured rates
// in bytes/s. AvgRate is an exponentially decaying average in bytes per
// day and AvgTime (Unix seconds) is when it was last brought up to date.
type NetInfo struct {
	MaxRate float64 `json:"max_rate"`
	AvgRate float64 `json:"avg_rate"`
	AvgTime float64 `json:"avg_time"`
}

// Update folds in one transfer of nbytes that took dt seconds and ended at
// now (Unix seconds). The arithmetic is the 7.20 client's (NET_INFO::update
// as built into HTTP_OP::handle_messages), operation for operation, so the
// values match what the C++ client would have written: the weight of a new
// rate grows with the log of the transfer's size, so one small file does
// not swing the estimate, and start = now - dt feeds UpdateAverage as the
// first average's time base.
func (n *NetInfo) Update(nbytes, dt, now float64) {
	if nbytes == 0 || !(dt > 0) {
		return
	}
	bytesSec := nbytes / dt
	if n.MaxRate == 0 {
		n.MaxRate = bytesSec
	} else if x := math.Log(nbytes); !(x > 500) {
		w := x * 0.002
		// The conversions keep Go from fusing the products into FMAs,
		// which would round differently from the C++ client.
		n.MaxRate = float64(bytesSec*w) + float64(n.MaxRate*(1-w))
	} else {
		n.MaxRate = bytesSec
	}
	UpdateAverage(now, now-dt, nbytes, NetRateHalfLife, &n.AvgRate, &n.AvgTime)
}

// UpdateAverage is BOINC's update_average (lib/util.cpp): avg is an
// estimate of work per day, decaying by half every halfLife seconds while
// no work is added, and avgTime is when it was last computed. A first
// average is just work over the time since workStart.
func UpdateAverage(now, workStart, work, halfLife float64, avg, avgTime *float64) {
	if *avgTime != 0 {
		// The new work is taken as done evenly since avgTime; when that is
		// too short for the exponential weight, its first-order expansion
		// avoids 0·(1/0).
		diff := max(now-*avgTime, 0)
		diffDays := diff / 86400
		weight := math.Exp(-diff * math.Ln2 / halfLife)
		*avg *= weight
		if 1-weight > 1e-6 {
			*avg += float64((1 - weight) * (work / diffDays))
		} else {
			*avg += math.Ln2 * work * 86400 / halfLife
		}
	} else if work != 0 {
		dd := (now - workStart) / 86400
		*avg = work / dd
	}
	*avgTime = now
}
