package winsvc

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// EventWriter is the Windows event log as the handler needs it;
// *golang.org/x/sys/windows/svc/eventlog.Log implements it.
type EventWriter interface {
	Info(eventID uint32, msg string) error
	Warning(eventID uint32, msg string) error
	Error(eventID uint32, msg string) error
}

// Event IDs, one per level. The source is registered with
// EventCreate.exe as its message file (Install), which only knows IDs
// 1 to 1000 and shows the message text as is.
const (
	EventIDInfo    uint32 = 1
	EventIDWarning uint32 = 2
	EventIDError   uint32 = 3
)

// MaxEventMessage bounds one event's text: ReportEvent refuses strings
// longer than 31,839 characters, so longer messages are cut (at a UTF-8
// boundary) and marked.
const MaxEventMessage = 31000

// EventHandler is a slog.Handler writing each record as one event: the
// message, then the attributes as key=value (groups as dotted key
// prefixes, values quoted when they contain spaces or quotes). Levels map
// to event types: Error and above to Error, Warn to Warning, the rest to
// Information. It adds no time or level: the event log records both.
type EventHandler struct {
	w      EventWriter
	level  slog.Leveler
	prefix string // group prefix for attrs added later, "a.b."
	pre    string // formatted attrs from WithAttrs, each with a leading space
}

// NewEventHandler returns a handler writing to w; a nil level means Info.
func NewEventHandler(w EventWriter, level slog.Leveler) *EventHandler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &EventHandler{w: w, level: level}
}

// Enabled reports whether records at l are written.
func (h *EventHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

// Handle writes r as one event.
func (h *EventHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.pre)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.prefix, a)
		return true
	})
	msg := truncateMessage(b.String())
	var err error
	switch {
	case r.Level >= slog.LevelError:
		err = h.w.Error(EventIDError, msg)
	case r.Level >= slog.LevelWarn:
		err = h.w.Warning(EventIDWarning, msg)
	default:
		err = h.w.Info(EventIDInfo, msg)
	}
	if err != nil {
		return fmt.Errorf("windows event log: %w", err)
	}
	return nil
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *EventHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	var b strings.Builder
	b.WriteString(h.pre)
	for _, a := range attrs {
		appendAttr(&b, h.prefix, a)
	}
	h2 := *h
	h2.pre = b.String()
	return &h2
}

// WithGroup returns a handler that prefixes later attributes' keys.
func (h *EventHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + name + "."
	return &h2
}

func appendAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return
		}
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		for _, ga := range attrs {
			appendAttr(b, p, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(quoteIfNeeded(prefix + a.Key))
	b.WriteByte('=')
	b.WriteString(quoteIfNeeded(valueString(a.Value)))
}

func valueString(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return err.Error()
		}
	}
	return v.String()
}

// quoteIfNeeded quotes like slog's text handler: empty strings and ones
// with spaces, quotes, '=' or non-printing characters.
func quoteIfNeeded(s string) string {
	if s == "" {
		return `""`
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '=' || r == 0x7f || r == utf8.RuneError || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

func truncateMessage(s string) string {
	if len(s) <= MaxEventMessage {
		return s
	}
	const mark = " …(truncated)"
	cut := MaxEventMessage - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
