package boinc

import (
	"fmt"
	"math"
	"testing"
)

// The expected values are what the C++ client 7.20.5 wrote in the
// scheduler requests and client_state.xml of the reference runs
// (fixtures/boinc-7.20): each case is one transfer between two of them,
// with the byte count the average implies and the transfer time (curl's
// total less its time to the first byte, whole microseconds) that the
// rate implies. Printed with %f, as the client writes them. (The first
// download, the 246-byte master page in 53 µs, is left out: over so short
// a time its first average hangs on digits of the clock that %f drops.)
func TestNetInfoUpdate(t *testing.T) {
	tests := []struct {
		name        string
		before      NetInfo
		nbytes, dt  float64
		now         float64
		wantMax     string
		wantAvg     string
		wantAvgTime string
	}{
		{
			name:   "first upload: a scheduler request",
			nbytes: 5997, dt: 0.009835, now: 1795268554.997036,
			wantMax: "609761.057448", wantAvg: "52683329616.329300", wantAvgTime: "1795268554.997036",
		},
		{
			name:   "second upload",
			before: NetInfo{MaxRate: 609761.057448, AvgRate: 52683329616.329300, AvgTime: 1795268554.997036},
			nbytes: 6963, dt: 0.009829, now: 1795268562.022646,
			wantMax: "611506.889902", wantAvg: "52682906107.258644", wantAvgTime: "1795268562.022646",
		},
		{
			name:   "a small fast download",
			before: NetInfo{MaxRate: 5020424.600157, AvgRate: 399759143310.366272, AvgTime: 1795268559.005331},
			nbytes: 1035, dt: 0.000073, now: 1795268565.054938,
			wantMax: "5147572.388273", wantAvg: "399756371766.958008", wantAvgTime: "1795268565.054938",
		},
		{
			name:   "a fast upload pulls the rate up",
			before: NetInfo{MaxRate: 634321.348975, AvgRate: 52680246493.466339, AvgTime: 1795268606.086870},
			nbytes: 8870, dt: 0.001331, now: 1795268611.101300,
			wantMax: "743949.043745", wantAvg: "52679944623.415550", wantAvgTime: "1795268611.101300",
		},
		{
			name:   "zero bytes change nothing",
			before: NetInfo{MaxRate: 1000, AvgRate: 2000, AvgTime: 1e9},
			nbytes: 0, dt: 1, now: 1e9 + 100,
			wantMax: "1000.000000", wantAvg: "2000.000000", wantAvgTime: "1000000000.000000",
		},
		{
			name:   "zero time changes nothing",
			before: NetInfo{MaxRate: 1000, AvgRate: 2000, AvgTime: 1e9},
			nbytes: 5000, dt: 0, now: 1e9 + 100,
			wantMax: "1000.000000", wantAvg: "2000.000000", wantAvgTime: "1000000000.000000",
		},
		{
			// ln(1e300) > 500: the C++ client takes such a rate as it is.
			name:   "an absurd size replaces the rate",
			before: NetInfo{MaxRate: 1000, AvgRate: 0, AvgTime: 0},
			nbytes: 1e300, dt: 1e290, now: 2e9,
			wantMax: "10000000000.000000", wantAvg: "864000000000000.000000", wantAvgTime: "2000000000.000000",
		},
		{
			// Two transfers at the same instant: the first-order branch.
			name:   "no time since the last average",
			before: NetInfo{MaxRate: 1e6, AvgRate: 8.64e10, AvgTime: 2e9},
			nbytes: 1e6, dt: 0.5, now: 2e9,
			wantMax: "1027631.021116", wantAvg: "86400099021.025787", wantAvgTime: "2000000000.000000",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := tc.before
			n.Update(tc.nbytes, tc.dt, tc.now)
			got := fmt.Sprintf("%f %f %f", n.MaxRate, n.AvgRate, n.AvgTime)
			want := tc.wantMax + " " + tc.wantAvg + " " + tc.wantAvgTime
			if got != want {
				t.Errorf("after Update(%g, %g, %f):\n got %s\nwant %s", tc.nbytes, tc.dt, tc.now, got, want)
			}
		})
	}
}

func TestUpdateAverage(t *testing.T) {
	const day = 86400.0
	tests := []struct {
		name                 string
		avg, avgTime         float64
		now, start, work, hl float64
		want                 float64
	}{
		{"first work: work over its duration", 0, 0, 10 * day, 8 * day, 100, day, 50},
		{"nothing yet, nothing done", 0, 0, 10 * day, 8 * day, 0, day, 0},
		{"one half-life without work halves it", 80, 9 * day, 10 * day, 0, 0, day, 40},
		{"a steady rate stays", 50, 9 * day, 10 * day, 9 * day, 50, day, 50},
		{"a clock that went back counts as no time", 80, 11 * day, 10 * day, 0, 0, day, 80},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			avg, at := tc.avg, tc.avgTime
			UpdateAverage(tc.now, tc.start, tc.work, tc.hl, &avg, &at)
			if math.Abs(avg-tc.want) > 1e-9*math.Max(1, tc.want) {
				t.Errorf("avg = %.12g, want %.12g", avg, tc.want)
			}
			if at != tc.now {
				t.Errorf("avg time = %f, want %f", at, tc.now)
			}
		})
	}
}
