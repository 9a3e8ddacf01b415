package taskrunner

import (
	"strings"
	"testing"
	"time"
)

func TestSplitCommandLine(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"", nil, false},
		{"   ", nil, false},
		{"--seconds 30", []string{"--seconds", "30"}, false},
		{"  a\tb\n c ", []string{"a", "b", "c"}, false},
		{`--name "two words" x`, []string{"--name", "two words", "x"}, false},
		{`'single $quoted' "dq \"esc\" \\ \n"`, []string{"single $quoted", `dq "esc" \ \n`}, false},
		{`a\ b c`, []string{"a b", "c"}, false},
		{`""`, []string{""}, false},
		{`pre"mid"post`, []string{"premidpost"}, false},
		{`'open`, nil, true},
		{`"open`, nil, true},
		{strings.Repeat("x", maxCommandLine+1), nil, true},
	}
	for _, tc := range tests {
		got, err := splitCommandLine(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") || len(got) != len(tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestParseTemporaryExit(t *testing.T) {
	tests := []struct {
		in     string
		delay  time.Duration
		reason string
	}{
		{"120\nwaiting\n", 120 * time.Second, "waiting"},
		{"0\n", 0, "temporary exit"},
		{"86400\nmax\n", 86400 * time.Second, "max"},
		{"86401\ntoo long\n", 300 * time.Second, "too long"},
		{"-5\nneg\n", 300 * time.Second, "neg"},
		{"garbage", 300 * time.Second, "temporary exit"},
		{"1.5\nfrac\nnotice\n", 1500 * time.Millisecond, "frac"},
	}
	for _, tc := range tests {
		d, r := parseTemporaryExit(tc.in)
		if d != tc.delay || r != tc.reason {
			t.Errorf("%q: %v %q, want %v %q", tc.in, d, r, tc.delay, tc.reason)
		}
	}
}

func TestTaskEnv(t *testing.T) {
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"A=1"}, "LD_LIBRARY_PATH=../../projects/p:.:../.."},
		{[]string{"LD_LIBRARY_PATH=/opt/lib"}, "LD_LIBRARY_PATH=../../projects/p:.:../..:/opt/lib"},
		{[]string{"LD_LIBRARY_PATH="}, "LD_LIBRARY_PATH=../../projects/p:.:../.."},
	}
	for _, tc := range tests {
		out := taskEnv(tc.env, "p")
		found := 0
		for _, kv := range out {
			if strings.HasPrefix(kv, "LD_LIBRARY_PATH=") {
				found++
				if kv != tc.want {
					t.Errorf("%v: %q, want %q", tc.env, kv, tc.want)
				}
			}
		}
		if found != 1 {
			t.Errorf("%v: %d LD_LIBRARY_PATH entries", tc.env, found)
		}
	}
}

func TestProjectSpecific(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"<project_preferences><resource_share>100</resource_share></project_preferences>", ""},
		{"<project_preferences>\n<project_specific>\n<color>red</color>\n</project_specific>\n</project_preferences>", "<color>red</color>\n"},
		{"<project_specific><a/></project_specific>", "<a/>\n"},
		{"<project_specific><a/>", ""},
	}
	for _, tc := range tests {
		if got := projectSpecific(tc.in); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestNewRunnerValidates(t *testing.T) {
	ev := make(chan Event)
	if _, err := NewRunner(Config{DataDir: "relative", Events: ev}); err == nil {
		t.Error("relative data dir accepted")
	}
	if _, err := NewRunner(Config{DataDir: t.TempDir()}); err == nil {
		t.Error("missing events channel accepted")
	}
	r, err := NewRunner(Config{DataDir: t.TempDir(), Events: ev})
	if err != nil {
		t.Fatal(err)
	}
	if r.cfg.QuitGrace != DefaultQuitGrace || r.cfg.ClientPID == 0 {
		t.Errorf("defaults not applied: %+v", r.cfg)
	}
}
