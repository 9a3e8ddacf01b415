// Package logjournal is a log/slog handler that writes to the systemd
// journal natively, so every slog attribute becomes a journal field
// (`journalctl -u boincd PROJECT=...` filters on it) instead of text
// inside MESSAGE. It is used only when stderr is the journal stream
// (systemd's JOURNAL_STREAM); elsewhere boincd logs text or JSON.
package logjournal

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
)

// Sender delivers one entry; journal.Send in production.
type Sender func(message string, priority journal.Priority, fields map[string]string) error

// Handler is the slog.Handler. Attributes become fields named like
// journald wants them: upper case, [A-Z0-9_], groups joined by "_".
type Handler struct {
	send  Sender
	level slog.Leveler
	attrs []slog.Attr // pre-resolved, with group prefixes applied to keys
	group string
	ident string
}

// Usable tells whether stderr is connected to the journal, the case in
// which a unit's output should go to it natively.
func Usable() bool {
	ok, err := journal.StderrIsJournalStream()
	return err == nil && ok && journal.Enabled()
}

// New returns a handler that sends with send (nil: journal.Send),
// dropping records below level, tagging each with SYSLOG_IDENTIFIER=ident.
func New(send Sender, level slog.Leveler, ident string) *Handler {
	if send == nil {
		send = journal.Send
	}
	if level == nil {
		level = slog.LevelInfo
	}
	return &Handler{send: send, level: level, ident: ident}
}

// Enabled implements slog.Handler.
func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

// WithAttrs implements slog.Handler.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.attrs = append([]slog.Attr(nil), h.attrs...)
	for _, a := range as {
		h2.attrs = append(h2.attrs, slog.Attr{Key: h.prefix(a.Key), Value: a.Value})
	}
	return &h2
}

// WithGroup implements slog.Handler.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group = h.prefix(name)
	return &h2
}

func (h *Handler) prefix(key string) string {
	if h.group == "" {
		return key
	}
	return h.group + "_" + key
}

// Handle implements slog.Handler.
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	fields := make(map[string]string, len(h.attrs)+r.NumAttrs()+2)
	if h.ident != "" {
		fields["SYSLOG_IDENTIFIER"] = h.ident
	}
	for _, a := range h.attrs {
		addField(fields, a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		addField(fields, h.prefix(a.Key), a.Value)
		return true
	})
	if err := h.send(r.Message, priority(r.Level), fields); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

func addField(fields map[string]string, key string, v slog.Value) {
	v = v.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, a := range v.Group() {
			addField(fields, key+"_"+a.Key, a.Value)
		}
		return
	}
	name := FieldName(key)
	if name == "" {
		return
	}
	var s string
	switch v.Kind() {
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339Nano)
	default:
		s = v.String()
	}
	fields[name] = s
}

// FieldName maps an slog key to a journal field name: upper case,
// anything outside [A-Z0-9] becomes "_", no leading "_" (reserved for
// trusted fields) or digit, at most 64 bytes. Names journald itself
// owns (MESSAGE, PRIORITY) get an "ATTR_" prefix so an attribute cannot
// overwrite them.
func FieldName(key string) string {
	var b strings.Builder
	for _, c := range strings.ToUpper(key) {
		switch {
		case c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('_')
		}
	}
	n := strings.TrimLeft(b.String(), "_")
	if n == "" {
		return ""
	}
	if n[0] >= '0' && n[0] <= '9' {
		n = "F_" + n
	}
	switch n {
	case "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "MESSAGE_ID":
		n = "ATTR_" + n
	}
	if len(n) > 64 {
		n = n[:64]
	}
	return n
}

func priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	}
	return journal.PriDebug
}
