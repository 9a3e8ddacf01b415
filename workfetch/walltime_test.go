package workfetch

import (
	"math"
	"testing"
	"time"
)

// wallSeconds must give what time.Time.Sub gives for wall times (a
// job's receipt and deadline as the state and the server give them), at
// whole seconds, with nanoseconds, and far apart, where the fast path
// would overflow a Duration and Sub saturates.
func TestWallSeconds(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	cases := []struct {
		name string
		a, b time.Time
	}{
		{"whole seconds", base, base.Add(7 * 24 * time.Hour)},
		{"nanoseconds", base.Add(123456789), base.Add(86400*time.Second + 987654321)},
		{"b before a", base.Add(5 * time.Second), base},
		{"b before a, nanoseconds", base.Add(5*time.Second + 7), base.Add(3)},
		{"same", base, base},
		{"far apart", time.Unix(-1<<40, 0), time.Unix(1<<40, 0)},
		{"far apart, reversed", time.Unix(1<<40, 5), time.Unix(-1<<40, 0)},
		{"at the edge", base, base.Add(time.Duration(secLim-1) * time.Second)},
		{"zero time", time.Time{}, base},
		{"other zone", base.In(time.FixedZone("x", 3600)), base.Add(time.Hour)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.b.Sub(c.a).Seconds()
			if got := wallSeconds(c.a, c.b); got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Errorf("wallSeconds = %v, Sub gives %v", got, want)
			}
		})
	}
	// With a monotonic reading (a time.Now in this process) the span is
	// the wall clock's, whatever the monotonic clock says.
	now := time.Now()
	later := now.Add(90 * time.Minute)
	if got, want := wallSeconds(now, later), later.Round(0).Sub(now.Round(0)).Seconds(); got != want {
		t.Errorf("monotonic: %v, want %v", got, want)
	}
}
