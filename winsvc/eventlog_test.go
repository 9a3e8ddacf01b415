package winsvc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

type event struct {
	kind string
	id   uint32
	msg  string
}

// fakeEventLog records events the way the Windows event log would get them.
type fakeEventLog struct {
	mu     sync.Mutex
	events []event
	err    error
}

func (f *fakeEventLog) add(kind string, id uint32, msg string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.events = append(f.events, event{kind, id, msg})
	return nil
}

func (f *fakeEventLog) Info(id uint32, msg string) error    { return f.add("info", id, msg) }
func (f *fakeEventLog) Warning(id uint32, msg string) error { return f.add("warning", id, msg) }
func (f *fakeEventLog) Error(id uint32, msg string) error   { return f.add("error", id, msg) }

func TestEventHandler(t *testing.T) {
	when := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name string
		log  func(*slog.Logger)
		want []event
	}{
		{"debug filtered at info", func(l *slog.Logger) { l.Debug("noise") }, nil},
		{"info", func(l *slog.Logger) { l.Info("task started", "task", "wu_1_0", "slot", 3) },
			[]event{{"info", EventIDInfo, "task started task=wu_1_0 slot=3"}}},
		{"warn", func(l *slog.Logger) { l.Warn("backing off", slog.Duration("for", 90*time.Second)) },
			[]event{{"warning", EventIDWarning, "backing off for=1m30s"}}},
		{"error with error value", func(l *slog.Logger) { l.Error("rpc failed", slog.Any("err", errors.New("connection refused"))) },
			[]event{{"error", EventIDError, `rpc failed err="connection refused"`}}},
		{"above error", func(l *slog.Logger) { l.Log(context.Background(), slog.LevelError+4, "fatal") },
			[]event{{"error", EventIDError, "fatal"}}},
		{"quoting and time", func(l *slog.Logger) {
			l.Info("attach", "url", "https://example.org/p/", "name", "My Project", "empty", "", "eq", "a=b", "nl", "x\ny", slog.Time("at", when))
		}, []event{{"info", EventIDInfo, `attach url=https://example.org/p/ name="My Project" empty="" eq="a=b" nl="x\ny" at=2024-05-06T07:08:09Z`}}},
		{"secrets are not special-cased", func(l *slog.Logger) { l.Info("account", "authenticator", "abc123") },
			[]event{{"info", EventIDInfo, "account authenticator=abc123"}}},
		{"With and groups", func(l *slog.Logger) {
			l.With("component", "client").WithGroup("xfer").With("file", "in.dat").Info("done", "bytes", 42, slog.Group("http", "status", 200))
		}, []event{{"info", EventIDInfo, "done component=client xfer.file=in.dat xfer.bytes=42 xfer.http.status=200"}}},
		{"empty group and empty attr dropped", func(l *slog.Logger) { l.Info("m", slog.Group("g"), slog.Attr{}) },
			[]event{{"info", EventIDInfo, "m"}}},
		{"inline group", func(l *slog.Logger) { l.Info("m", slog.Group("", "a", 1)) },
			[]event{{"info", EventIDInfo, "m a=1"}}},
		{"LogValuer resolved", func(l *slog.Logger) { l.Info("m", "v", valuer{}) },
			[]event{{"info", EventIDInfo, "m v=resolved"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w fakeEventLog
			tt.log(slog.New(NewEventHandler(&w, nil)))
			if len(w.events) != len(tt.want) {
				t.Fatalf("events %+v, want %+v", w.events, tt.want)
			}
			for i := range tt.want {
				if w.events[i] != tt.want[i] {
					t.Errorf("event %d = %+v\nwant       %+v", i, w.events[i], tt.want[i])
				}
			}
		})
	}
}

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved") }

func TestEventHandlerLevel(t *testing.T) {
	var w fakeEventLog
	var lv slog.LevelVar
	lv.Set(slog.LevelWarn)
	l := slog.New(NewEventHandler(&w, &lv))
	l.Info("dropped")
	l.Warn("kept")
	lv.Set(slog.LevelDebug)
	l.Debug("now kept")
	if len(w.events) != 2 || w.events[0].msg != "kept" || w.events[1].msg != "now kept" {
		t.Fatalf("events %+v", w.events)
	}
}

func TestEventHandlerWriterError(t *testing.T) {
	w := fakeEventLog{err: errors.New("event log is full")}
	h := NewEventHandler(&w, nil)
	err := h.Handle(context.Background(), slog.NewRecord(time.Now(), slog.LevelInfo, "m", 0))
	if err == nil || !strings.Contains(err.Error(), "windows event log: event log is full") {
		t.Fatalf("Handle error = %v", err)
	}
}

func TestEventHandlerTruncates(t *testing.T) {
	var w fakeEventLog
	// Multi-byte runes so the cut has to find a rune boundary.
	slog.New(NewEventHandler(&w, nil)).Info(strings.Repeat("é", MaxEventMessage))
	if len(w.events) != 1 {
		t.Fatalf("events %d", len(w.events))
	}
	msg := w.events[0].msg
	if len(msg) > MaxEventMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "(truncated)") {
		t.Fatalf("message of %d bytes, valid UTF-8 %v, suffix %q", len(msg), utf8.ValidString(msg), msg[len(msg)-20:])
	}
}

func TestEventHandlerConcurrent(t *testing.T) {
	var w fakeEventLog
	l := slog.New(NewEventHandler(&w, nil)).With("component", "x")
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				l.Info("m", "i", i)
			}
		}()
	}
	wg.Wait()
	if len(w.events) != 400 {
		t.Fatalf("%d events, want 400", len(w.events))
	}
}
