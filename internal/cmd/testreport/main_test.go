package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func stream(events ...event) []event {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	for i := range events {
		events[i].Time = t0.Add(time.Duration(i) * time.Second)
	}
	return events
}

func TestReport(t *testing.T) {
	const m = "github.com/boincd/boincd"
	cases := []struct {
		name     string
		events   []event
		ok       bool
		want     []string // in this order
		wantNone []string
	}{
		{
			name: "passing package: its ok line only, and the summary",
			events: stream(
				event{Action: "start", Package: m + "/a"},
				event{Action: "run", Package: m + "/a", Test: "TestSlow"},
				event{Action: "output", Package: m + "/a", Test: "TestSlow", Output: "    a_test.go:9: chatter\n"},
				event{Action: "pass", Package: m + "/a", Test: "TestSlow", Elapsed: 12.5},
				event{Action: "run", Package: m + "/a", Test: "TestFast"},
				event{Action: "pass", Package: m + "/a", Test: "TestFast", Elapsed: 0.5},
				event{Action: "run", Package: m + "/a", Test: "TestFast/sub"},
				event{Action: "pass", Package: m + "/a", Test: "TestFast/sub", Elapsed: 99},
				event{Action: "output", Package: m + "/a", Output: "PASS\n"},
				event{Action: "output", Package: m + "/a", Output: "ok  \t" + m + "/a\t13.0s\n"},
				event{Action: "pass", Package: m + "/a", Elapsed: 13},
			),
			ok:       true,
			want:     []string{"ok  \t" + m + "/a\t13.0s", "slowest packages", "13.0  a", "slowest tests", "12.5  a TestSlow", "0.5  a TestFast"},
			wantNone: []string{"chatter", "TestFast/sub", "failed:"},
		},
		{
			name: "failing test: its output, and the package's lines",
			events: stream(
				event{Action: "start", Package: m + "/b"},
				event{Action: "run", Package: m + "/b", Test: "TestBad"},
				event{Action: "output", Package: m + "/b", Test: "TestBad", Output: "    b_test.go:3: boom\n"},
				event{Action: "output", Package: m + "/b", Test: "TestBad", Output: "    harness_test.go:40: daemon log:\n"},
				event{Action: "output", Package: m + "/b", Test: "TestBad", Output: "        {\"msg\":\"noise\"}\n"},
				event{Action: "fail", Package: m + "/b", Test: "TestBad", Elapsed: 1},
				event{Action: "output", Package: m + "/b", Output: "FAIL\n"},
				event{Action: "fail", Package: m + "/b", Elapsed: 1.2},
			),
			want: []string{"b_test.go:3: boom", "noise", "FAIL", "failed: b TestBad, package b",
				"== why b TestBad failed", "    b_test.go:3: boom\n    harness_test.go:40: daemon log:\n"},
		},
		{
			name: "stream cut in the middle of a test",
			events: stream(
				event{Action: "start", Package: m + "/c"},
				event{Action: "run", Package: m + "/c", Test: "TestHang"},
				event{Action: "output", Package: m + "/c", Test: "TestHang", Output: "    waiting\n"},
			),
			want: []string{"c never ended", "--- TestHang (running)", "waiting"},
		},
		{
			name: "build failure",
			events: stream(
				event{Action: "build-output", ImportPath: m + "/d [" + m + "/d.test]", Output: "d/x.go:1: syntax error\n"},
				event{Action: "build-fail", ImportPath: m + "/d [" + m + "/d.test]"},
			),
			want: []string{"syntax error", "failed: build of"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			r := newReport(&out, m)
			for _, e := range c.events {
				// through JSON, as go test writes it
				b, _ := json.Marshal(e)
				var back event
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatal(err)
				}
				r.add(back)
			}
			if ok := r.finish(10); ok != c.ok {
				t.Errorf("finish = %v, want %v", ok, c.ok)
			}
			got := out.String()
			at := 0
			for _, w := range c.want {
				i := strings.Index(got[at:], w)
				if i < 0 {
					t.Fatalf("want %q (after byte %d) in:\n%s", w, at, got)
				}
				at += i + len(w)
			}
			for _, w := range c.wantNone {
				if strings.Contains(got, w) {
					t.Errorf("%q in:\n%s", w, got)
				}
			}
		})
	}
}
