//go:build !linux

package hostcond

import "time"

// IdleSeconds is the time since the last user input. Outside Linux it is
// unknown (-1): Windows' GetLastInputInfo only sees the caller's own
// session, which is not the user's when boincd runs as a service, and
// macOS needs IOKit through cgo.
func IdleSeconds() float64 { return -1 }

// IdleProbe is IdleSeconds for periodic calls; outside Linux it always
// answers -1.
type IdleProbe struct{}

// NewIdleProbe returns the probe.
func NewIdleProbe() *IdleProbe { return &IdleProbe{} }

// IdleSeconds is the time since the last user input: unknown (-1).
func (*IdleProbe) IdleSeconds(time.Time) float64 { return -1 }

// OnBattery reports whether the host runs on batteries. Outside Linux it
// is unknown, reported as false.
func OnBattery() bool { return false }
