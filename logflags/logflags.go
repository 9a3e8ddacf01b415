// Package logflags applies the C++ client's <log_flags> (cc_config.xml)
// to boincd's slog records: a debug flag (work_fetch_debug, task_debug,
// http_debug, …) brings its category's debug records into the event log
// and the journal, tagged "[work_fetch]" and so on as the C++ client tags
// them, whatever the configured log level; turning off one of the flags
// that are on by default (task, file_xfer, sched_ops) takes its
// everyday lines out of the event log.
//
// A record's category is its "category" attribute when it has one, else
// the one its logger's "component" implies (http, runner, gpu, guirpc),
// else the one its message is known to belong to (Categories).
package logflags

import (
	"context"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
)

// CategoryAttr is the attribute that names a record's category, a
// <log_flags> name ("work_fetch_debug").
const CategoryAttr = "category"

// Flags that are on unless cc_config.xml turns them off (LOG_FLAGS::init).
var defaultOn = map[string]bool{"task": true, "file_xfer": true, "sched_ops": true}

// byComponent: every debug record of these loggers belongs to one flag.
var byComponent = map[string]string{
	"http":   "http_debug",
	"runner": "task_debug",
	"gpu":    "coproc_debug",
	"guirpc": "gui_rpc_debug",
}

// byMessage is the category of records the daemon logs without one, by
// slog message: the C++ client's everyday lines under task, file_xfer and
// sched_ops, and debug records that belong to one flag.
var byMessage = map[string]string{
	"task started":         "task",
	"task restarted":       "task",
	"computation finished": "task",
	"computation error":    "task",

	"started download":  "file_xfer",
	"finished download": "file_xfer",
	"started upload":    "file_xfer",
	"finished upload":   "file_xfer",

	"fetching master page to find the scheduler": "sched_ops",
	"found scheduler":             "sched_ops",
	"requesting work":             "sched_ops",
	"sending scheduler request":   "sched_ops",
	"scheduler request completed": "sched_ops",

	"not requesting work": "work_fetch_debug",
	"no work of this type at the last request; backing off": "work_fetch_debug",
	"download attempt failed":                               "file_xfer_debug",
	"upload attempt failed":                                 "file_xfer_debug",
	"task files verified":                                   "task_debug",
	"measure slot":                                          "slot_debug",
	"GUI language":                                          "gui_rpc_debug",
	"device status reported by GUI":                         "gui_rpc_debug",
}

// Category is the flag a record with this message, component and
// explicit category ("" when none) belongs to; "" when none.
func Category(msg, component, explicit string) string {
	if explicit != "" {
		return explicit
	}
	if c, ok := byMessage[msg]; ok {
		return c
	}
	return byComponent[component]
}

// shared is the flag set every handler derived from one New sees.
type shared struct {
	flags atomic.Pointer[map[string]bool]
}

// Handler filters and tags records by the flags in force, passing them
// on to next.
type Handler struct {
	s         *shared
	next      slog.Handler
	component string
	category  string
}

// New wraps next with the default flags (task, file_xfer, sched_ops on).
func New(next slog.Handler) *Handler {
	h := &Handler{s: &shared{}, next: next}
	h.Set(nil)
	return h
}

// Set replaces the flags in force for this handler and every handler
// derived from it; flags names those cc_config.xml wrote, on or off, and
// the others take their defaults. Safe from any goroutine.
func (h *Handler) Set(flags map[string]bool) {
	m := maps.Clone(defaultOn)
	maps.Copy(m, flags)
	h.s.flags.Store(&m)
}

// On reports whether a flag is in force.
func (h *Handler) On(flag string) bool { return (*h.s.flags.Load())[flag] }

func (h *Handler) anyDebug() bool {
	for k, v := range *h.s.flags.Load() {
		if v && !defaultOn[k] {
			return true
		}
	}
	return false
}

// Enabled lets debug records through while any debug flag is on; Handle
// then keeps those of the flags that are.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level) || (level < slog.LevelInfo && h.anyDebug())
}

// Handle passes rec on, raised to info and tagged when its debug flag is
// on, lowered to debug when its everyday flag is off.
func (h *Handler) Handle(ctx context.Context, rec slog.Record) error {
	cat := h.category
	if cat == "" {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == CategoryAttr {
				cat = a.Value.String()
				return false
			}
			return true
		})
	}
	cat = Category(rec.Message, h.component, cat)
	flags := *h.s.flags.Load()
	switch {
	case rec.Level < slog.LevelInfo && cat != "" && flags[cat]:
		// As the C++ client's "[work_fetch] …" lines: in the event log
		// at info priority, tagged with the flag.
		r := slog.NewRecord(rec.Time, slog.LevelInfo, "["+strings.TrimSuffix(cat, "_debug")+"] "+rec.Message, rec.PC)
		rec.Attrs(func(a slog.Attr) bool { r.AddAttrs(a); return true })
		return h.next.Handle(ctx, r)
	case rec.Level == slog.LevelInfo && defaultOn[cat] && !flags[cat]:
		if !h.next.Enabled(ctx, slog.LevelDebug) {
			return nil
		}
		r := rec.Clone()
		r.Level = slog.LevelDebug
		return h.next.Handle(ctx, r)
	case !h.next.Enabled(ctx, rec.Level):
		return nil
	}
	return h.next.Handle(ctx, rec)
}

// WithAttrs notes the component and category the attributes name.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	nh := *h
	for _, a := range attrs {
		switch a.Key {
		case "component":
			nh.component = a.Value.String()
		case CategoryAttr:
			nh.category = a.Value.String()
		}
	}
	nh.next = h.next.WithAttrs(attrs)
	return &nh
}

// WithGroup qualifies later attributes; the category stays.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	nh := *h
	nh.next = h.next.WithGroup(name)
	return &nh
}
