package boinc

import (
	"math"
	"time"
)

// Backoff constants (client/scheduler_op.h, client/pers_file_xfer.cpp).
const (
	RPCBackoffMin     = 60 * time.Second
	RPCBackoffMax     = 4 * time.Hour
	RPCRetryCap       = 10
	MasterFetchPeriod = 10 // RPC failures before the master page is re-read
	XferBackoffMin    = 120 * time.Second
	XferBackoffMax    = 6 * time.Hour
	XferGiveUp        = 90 * 24 * time.Hour
)

// ExponentialBackoff returns min(base·2^n, max)·u with u in [0.5, 1): u is
// the caller's random draw so the function stays deterministic in tests.
func ExponentialBackoff(n int, base, max time.Duration, u float64) time.Duration {
	if n < 0 {
		n = 0
	}
	if n > 30 {
		n = 30
	}
	d := math.Min(float64(base)*math.Pow(2, float64(n)), float64(max))
	if u < 0 {
		u = 0
	}
	if u >= 1 {
		u = 0.999999
	}
	return time.Duration(d * (0.5 + u/2))
}
