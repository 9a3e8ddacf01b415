package logjournal

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
)

type entry struct {
	msg    string
	pri    journal.Priority
	fields map[string]string
}

func TestHandler(t *testing.T) {
	var got []entry
	send := func(m string, p journal.Priority, f map[string]string) error {
		got = append(got, entry{m, p, f})
		return nil
	}
	log := slog.New(New(send, slog.LevelDebug, "boincd"))
	log.With(slog.String("project", "http://x/")).WithGroup("task").Warn("task failed",
		slog.Int("exit-status", 197), slog.Group("limits", slog.Float64("disk", 1e9)), slog.String("message", "spoof"))
	log.Debug("dbg")
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	e := got[0]
	if e.msg != "task failed" || e.pri != journal.PriWarning {
		t.Fatalf("entry %+v", e)
	}
	want := map[string]string{
		"SYSLOG_IDENTIFIER": "boincd",
		"PROJECT":           "http://x/",
		"TASK_EXIT_STATUS":  "197",
		"TASK_LIMITS_DISK":  "1e+09",
		"TASK_MESSAGE":      "spoof",
	}
	for k, v := range want {
		if e.fields[k] != v {
			t.Errorf("field %s = %q, want %q (all: %v)", k, e.fields[k], v, e.fields)
		}
	}
	if got[1].pri != journal.PriDebug {
		t.Errorf("debug priority %v", got[1].pri)
	}
}

func TestLevelAndErrors(t *testing.T) {
	n := 0
	h := New(func(string, journal.Priority, map[string]string) error { n++; return errors.New("socket gone") }, slog.LevelWarn, "")
	log := slog.New(h)
	log.Info("dropped")
	if n != 0 {
		t.Fatal("info record sent below the warn level")
	}
	if err := h.Handle(t.Context(), slog.Record{Level: slog.LevelError, Message: "x"}); err == nil {
		t.Fatal("sender error not returned")
	}
}

func TestFieldName(t *testing.T) {
	for in, want := range map[string]string{
		"project":   "PROJECT",
		"elapsed.s": "ELAPSED_S",
		"_hidden":   "HIDDEN",
		"9lives":    "F_9LIVES",
		"MESSAGE":   "ATTR_MESSAGE",
		"priority":  "ATTR_PRIORITY",
		"---":       "",
		"résultat":  "R_SULTAT",
	} {
		if got := FieldName(in); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", in, got, want)
		}
	}
}
