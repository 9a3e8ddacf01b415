// Package eventlog is boincd's event log: the short, human-readable list of
// what the client did that BOINC GUIs show ("Event Log" in BOINC Manager,
// boinccmd --get_messages).
//
// It is a slog.Handler wrapper. Every record still goes to the wrapped
// handler (the journal, with its message and all its attributes), and a
// rendered copy is kept in a bounded ring of Messages with increasing
// sequence numbers, the way the C++ client keeps max_event_log_lines
// messages for GUI RPC clients. Records carrying a "project" attribute
// (the master URL; the daemon adds it with logger.With) are shown under
// that project's name.
//
// Volunteers, forum advice and log scrapers know the C++ client's
// wording ("Starting task X", "Sending scheduler request: To fetch
// work."), so the records of the common events are rendered in it: a
// table keyed by the slog message (formats.go) turns a record's
// attributes into the C++ client's lines. Call sites log structured
// records as usual and know nothing of the GUI text; records not in the
// table read as their message followed by key=value attributes.
package eventlog

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// DefaultCapacity is the C++ client's default max_event_log_lines.
const DefaultCapacity = 2000

// Message priorities (lib/common_defs.h MSG_INFO, MSG_USER_ALERT,
// MSG_INTERNAL_ERROR). By level: Debug and Info are info lines, Warn a
// user alert, Error an internal error, which the C++ client (and so this
// log) shows as "[error] text"; a format may give a record another
// priority (a failed scheduler request is a Warn in the journal but an
// info line in the C++ client's event log).
const (
	PriorityInfo          = 1
	PriorityUserAlert     = 2
	PriorityInternalError = 3
)

// LevelInternal is a slog level above Error for bugs in boincd rather than
// problems the user can act on; like Error, it is an internal error
// (priority 3).
const LevelInternal = slog.LevelError + 4

// errorPrefix starts the text of an internal error, as the C++ client's
// show_message writes it.
const errorPrefix = "[error] "

// ProjectAttr is the attribute key holding a project's master URL.
const ProjectAttr = "project"

// hiddenAttrs are routing attributes that mean nothing to a user reading
// the event log; the journal still gets them.
var hiddenAttrs = map[string]bool{ProjectAttr: true, "component": true}

// Message is one event log entry.
type Message struct {
	Seqno    int64
	Time     time.Time
	Priority int
	// Project is the project's name (its URL while it has none), empty for
	// messages about the client itself.
	Project string
	// ProjectURL is the record's "project" attribute as logged.
	ProjectURL string
	// Body is the C++ client's text for the event, or else the slog
	// message followed by its attributes as key=value.
	Body string
}

// ring is the state shared by a Log and every handler derived from it.
type ring struct {
	mu sync.Mutex
	// buf grows to capacity as messages come, then wraps: a daemon that
	// logs little never pays for the whole ring (2,000 messages are
	// about 180 KB, most of an idle daemon's heap).
	buf      []Message
	capacity int
	start    int // index of the oldest message in buf
	n        int
	last     int64
	namer    ProjectNamer
}

// Log is the event log and the slog.Handler feeding it. Handlers derived
// with WithAttrs/WithGroup share the same ring.
type Log struct {
	r       *ring
	formats map[string]Format // by slog message; shared, never written after New
	next    slog.Handler
	prefix  string      // open groups, "a.b." form
	attrs   []slog.Attr // With attributes, keys already qualified by prefix
}

// New returns a Log keeping the last capacity messages (DefaultCapacity
// when capacity <= 0) and passing every record on to next.
func New(next slog.Handler, capacity int) *Log {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	if next == nil {
		next = slog.DiscardHandler
	}
	return &Log{r: &ring{capacity: capacity}, formats: cppFormats(), next: next}
}

// ProjectNamer maps a project's master URL to its name; "" means "no name
// yet", and the URL is shown instead.
type ProjectNamer func(url string) string

// SetProjectNamer sets how project URLs are turned into names. Names are
// looked up when messages are read (so a project named by its first
// scheduler reply is named in older messages too), and fn is called
// without any lock of the Log held, so it may itself log or take the
// caller's locks.
func (l *Log) SetProjectNamer(fn ProjectNamer) {
	l.r.mu.Lock()
	l.r.namer = fn
	l.r.mu.Unlock()
}

// Capacity is the most messages the log keeps.
func (l *Log) Capacity() int { return l.r.capacity }

// LastSeqno is the sequence number of the newest message, 0 when none.
func (l *Log) LastSeqno() int64 {
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	return l.r.last
}

// Since returns the kept messages with a sequence number above seqno,
// oldest first.
func (l *Log) Since(seqno int64) []Message {
	r := l.r
	r.mu.Lock()
	first := r.last - int64(r.n) + 1
	skip := int64(0)
	if seqno >= first {
		skip = seqno - first + 1
	}
	var out []Message
	if skip < int64(r.n) {
		out = make([]Message, 0, int64(r.n)-skip)
		for i := int(skip); i < r.n; i++ {
			out = append(out, r.buf[(r.start+i)%len(r.buf)])
		}
	}
	namer := r.namer
	r.mu.Unlock()

	// Names are looked up at read time, outside the lock: the namer may
	// need the daemon's state, whose owner may be logging right now.
	names := map[string]string{}
	for i := range out {
		u := out[i].ProjectURL
		if u == "" {
			continue
		}
		name, ok := names[u]
		if !ok {
			if namer != nil {
				name = namer(u)
			}
			if name == "" {
				name = u
			}
			names[u] = name
		}
		out[i].Project = name
	}
	return out
}

// add appends msgs under one lock, so the lines of one record get
// consecutive sequence numbers.
func (l *Log) add(msgs []Message) {
	r := l.r
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range msgs {
		r.last++
		m.Seqno = r.last
		if r.n < r.capacity {
			r.buf = append(r.buf, m) // start is 0 until the ring is full
			r.n++
		} else {
			r.buf[r.start] = m
			r.start = (r.start + 1) % len(r.buf)
		}
	}
}

// Enabled is true for Info and above, which always go to the event log even
// when the journal is less verbose, and for whatever the journal wants.
func (l *Log) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo || l.next.Enabled(ctx, level)
}

// Handle passes the record to the journal (when it wants that level) and
// adds its event log lines to the ring.
func (l *Log) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	nextOn := l.next.Enabled(ctx, rec.Level)
	if nextOn {
		err = l.next.Handle(ctx, rec)
	}
	if rec.Level < slog.LevelInfo && !nextOn {
		return err
	}
	t := rec.Time
	if t.IsZero() {
		t = time.Now()
	}
	var projectURL string
	attrs := Attrs{}
	var kv strings.Builder
	emit := func(key string, v slog.Value) {
		if key == ProjectAttr {
			if s := v.String(); s != "" {
				projectURL = s
			}
			return
		}
		attrs[key] = v
		if hiddenAttrs[key] {
			return
		}
		kv.WriteByte(' ')
		kv.WriteString(key)
		kv.WriteByte('=')
		kv.WriteString(renderValue(v))
	}
	for _, a := range l.attrs {
		flatten("", a, emit)
	}
	rec.Attrs(func(a slog.Attr) bool {
		flatten(l.prefix, a, emit)
		return true
	})
	pri := priority(rec.Level)
	var lines []string
	if f, ok := l.formats[rec.Message]; ok {
		lines = f.Lines(attrs)
		if f.Priority != 0 {
			pri = f.Priority
		}
	} else {
		lines = []string{capitalize(rec.Message) + kv.String()}
	}
	msgs := make([]Message, 0, len(lines))
	for _, line := range lines {
		if pri == PriorityInternalError {
			line = errorPrefix + line
		}
		msgs = append(msgs, Message{Time: t, Priority: pri, ProjectURL: projectURL, Body: line})
	}
	l.add(msgs)
	return err
}

// WithAttrs returns a handler sharing this log whose records carry attrs.
func (l *Log) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return l
	}
	nl := *l
	nl.next = l.next.WithAttrs(attrs)
	nl.attrs = make([]slog.Attr, 0, len(l.attrs)+len(attrs))
	nl.attrs = append(nl.attrs, l.attrs...)
	for _, a := range attrs {
		if l.prefix != "" {
			a.Key = l.prefix + a.Key
		}
		nl.attrs = append(nl.attrs, a)
	}
	return &nl
}

// WithGroup returns a handler sharing this log whose later attributes are
// qualified by name.
func (l *Log) WithGroup(name string) slog.Handler {
	if name == "" {
		return l
	}
	nl := *l
	nl.next = l.next.WithGroup(name)
	nl.prefix = l.prefix + name + "."
	return &nl
}

func priority(level slog.Level) int {
	switch {
	case level >= slog.LevelError:
		return PriorityInternalError
	case level >= slog.LevelWarn:
		return PriorityUserAlert
	default:
		return PriorityInfo
	}
}

// flatten calls emit for every leaf of a, with group keys joined by '.'.
func flatten(prefix string, a slog.Attr, emit func(string, slog.Value)) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
		}
		for _, g := range v.Group() {
			flatten(p, g, emit)
		}
		return
	}
	if a.Key == "" {
		return
	}
	emit(prefix+a.Key, v)
}

func renderValue(v slog.Value) string {
	var s string
	switch v.Kind() {
	case slog.KindTime:
		s = v.Time().Format(time.RFC3339)
	case slog.KindFloat64:
		s = strconv.FormatFloat(v.Float64(), 'f', -1, 64)
	default:
		s = v.String()
	}
	if needsQuote(s) {
		return strconv.Quote(s)
	}
	return s
}

func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for _, r := range s {
		if unicode.IsSpace(r) || r == '"' || r == '=' || !unicode.IsPrint(r) {
			return true
		}
	}
	return false
}

// capitalize makes "sending scheduler request" read like the C++ client's
// "Sending scheduler request".
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError || !unicode.IsLower(r) {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}
