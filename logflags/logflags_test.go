package logflags

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags map[string]bool
		log   func(l *slog.Logger)
		want  string // "" nothing shown
	}{
		{"debug off by default", nil,
			func(l *slog.Logger) { l.With("component", "client").Debug("not requesting work") }, ""},
		{"work_fetch_debug by message", map[string]bool{"work_fetch_debug": true},
			func(l *slog.Logger) { l.With("component", "client").Debug("not requesting work", "reason", "x") },
			"level=INFO msg=\"[work_fetch] not requesting work\" component=client reason=x"},
		{"http_debug by component", map[string]bool{"http_debug": true},
			func(l *slog.Logger) { l.With("component", "http").Debug("http: performing request") },
			"[http] http: performing request"},
		{"explicit category", map[string]bool{"cpu_sched_debug": true},
			func(l *slog.Logger) { l.Debug("slice", CategoryAttr, "cpu_sched_debug") },
			"[cpu_sched] slice"},
		{"another flag does not bring it in", map[string]bool{"http_debug": true},
			func(l *slog.Logger) { l.With("component", "client").Debug("not requesting work") }, ""},
		{"task lines on by default", nil,
			func(l *slog.Logger) { l.Info("task started", "task", "t1") }, "msg=\"task started\""},
		{"task off leaves the event log", map[string]bool{"task": false},
			func(l *slog.Logger) { l.Info("task started", "task", "t1") }, ""},
		{"file_xfer off", map[string]bool{"file_xfer": false},
			func(l *slog.Logger) { l.Info("started download", "file", "f") }, ""},
		{"file_xfer off keeps errors", map[string]bool{"file_xfer": false},
			func(l *slog.Logger) { l.Warn("download failed; will retry", "file", "f") }, "download failed"},
		{"info of no category", map[string]bool{"task": false},
			func(l *slog.Logger) { l.Info("boincd started") }, "boincd started"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
			h.Set(tc.flags)
			tc.log(slog.New(h))
			got := buf.String()
			if tc.want == "" && got != "" {
				t.Fatalf("shown: %s", got)
			}
			if tc.want != "" && !strings.Contains(got, tc.want) {
				t.Fatalf("got %q, want %q in it", got, tc.want)
			}
		})
	}
}

// A journal at debug level keeps what the event log loses.
func TestFlagOffGoesToDebug(t *testing.T) {
	var buf bytes.Buffer
	h := New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h.Set(map[string]bool{"task": false})
	slog.New(h).Info("task started")
	if !strings.Contains(buf.String(), "level=DEBUG msg=\"task started\"") {
		t.Fatalf("got %q", buf.String())
	}
	if !h.Enabled(context.Background(), slog.LevelDebug) {
		t.Fatal("not enabled at the inner level")
	}
}

func TestSetIsShared(t *testing.T) {
	var buf bytes.Buffer
	h := New(slog.NewTextHandler(&buf, nil))
	l := slog.New(h).With("component", "http")
	h.Set(map[string]bool{"http_debug": true})
	l.Debug("x")
	if !strings.Contains(buf.String(), "[http] x") || !h.On("http_debug") || !h.On("task") {
		t.Fatalf("derived logger missed the flags: %q", buf.String())
	}
}
