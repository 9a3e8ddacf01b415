package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Views and their streams. A page is rendered whole once; then one
// server-sent-event stream per tab keeps current the sections that tab
// shows (sectionsFor), sending a section only when its HTML differs from
// what the page holds. What each page holds is kept here, by a view id
// the page carries, so that neither the stream's start nor a switch of
// tab (which starts the stream again for the new tab) sends again what
// the page already has.

// kickAgain is how soon a stream looks again after an action woke it
// (the next look after that comes at the usual interval).
const kickAgain = 300 * time.Millisecond

// Bounds of the pages remembered.
const (
	maxViews  = 4 * maxStreams
	viewIdle  = time.Hour // a page not streamed this long is forgotten
	viewIDLen = 16        // random bytes of a view id (hex: twice as long)
)

// pageState is what one page (a browser tab's copy of the dashboard)
// holds: the hash of each section as last sent or rendered.
type pageState struct {
	session string
	last    map[string]uint64
	gen     uint64 // the stream that owns it; an older one stops
	used    time.Time
	// tasks is the page's task list as last rendered or patched (nil:
	// not known; the tasks section is then sent whole).
	tasks *taskList
}

func (s *Server) dropViewsLocked(now time.Time) {
	for k, v := range s.views {
		if now.Sub(v.used) > viewIdle {
			delete(s.views, k)
		}
	}
	for len(s.views) >= maxViews {
		var oldest string
		for k, v := range s.views {
			if oldest == "" || v.used.Before(s.views[oldest].used) {
				oldest = k
			}
		}
		delete(s.views, oldest)
	}
}

// hashOf renders a section into buf and hashes it; ok false when the
// template failed (logged).
func (s *Server) hashOf(buf *bytes.Buffer, name string, v *view) (uint64, bool) {
	buf.Reset()
	if err := s.tmpl.ExecuteTemplate(buf, "sec-"+name, v); err != nil {
		s.log.Error("web section not rendered", slog.String("section", name), slog.Any("err", err))
		return 0, false
	}
	return maphash.Bytes(s.seed, buf.Bytes()), true
}

func (s *Server) dashboard(w http.ResponseWriter, r *http.Request, ss session) {
	v, err := s.build(r.Context(), buildReq{csrf: ss.csrf, session: ss.id, page: pageParam(r)})
	if err != nil {
		s.log.Warn("web dashboard: cannot read the state", slog.Any("err", err))
		http.Error(w, "cannot read the client state", http.StatusServiceUnavailable)
		return
	}
	ps := &pageState{session: ss.id, last: map[string]uint64{}, used: time.Now()}
	var buf bytes.Buffer
	for _, name := range sections {
		if h, ok := s.hashOf(&buf, name, v); ok {
			ps.last[name] = h
		}
	}
	ps.tasks = s.taskListOf(v)
	v.ViewID = randomToken()[:2*viewIDLen]
	s.mu.Lock()
	s.dropViewsLocked(time.Now())
	s.views[v.ViewID] = ps
	s.mu.Unlock()
	s.render(w, http.StatusOK, "dashboard.html", v)
}

// claimView makes the stream the owner of its page's state: the one the
// page names (when it is this session's), else a new one, which holds
// nothing, so that every section is sent.
func (s *Server) claimView(id, session string) (*pageState, uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ps := s.views[id]
	if ps == nil || ps.session != session {
		ps = &pageState{session: session, last: map[string]uint64{}}
		if id != "" && len(id) == 2*viewIDLen {
			s.dropViewsLocked(time.Now())
			s.views[id] = ps
		}
	}
	ps.gen++
	ps.used = time.Now()
	return ps, ps.gen
}

// events is the page's live stream: one per tab, for the sections of
// the view it shows (?tab=, every section without). Each PollInterval it
// builds what those sections need and sends a section's HTML when it
// differs from what the page holds: an open tab costs one snapshot (of
// the parts it shows) a second and no traffic while nothing changes. A
// heartbeat comment every 30 s lets the server notice a closed tab
// behind a silent network.
func (s *Server) events(w http.ResponseWriter, r *http.Request, ss session) {
	s.mu.Lock()
	if s.streams >= maxStreams {
		s.mu.Unlock()
		http.Error(w, "too many open dashboards", http.StatusServiceUnavailable)
		return
	}
	s.streams++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.streams--
		s.mu.Unlock()
	}()
	q := r.URL.Query()
	names := sectionsFor(q.Get("tab"))
	need := make(map[string]bool, len(names))
	for _, n := range names {
		need[n] = true
	}
	ps, gen := s.claimView(q.Get("view"), ss.id)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_ = rc.Flush()
	ctx := r.Context()
	var cards cardCache
	req := buildReq{csrf: ss.csrf, session: ss.id, page: pageParam(r), need: need, noCards: true}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
	kicked, unkick := s.kickable(ss.id)
	defer unkick()
	again := time.NewTimer(time.Hour)
	again.Stop()
	defer again.Stop()
	lastWrite := time.Now()
	var sec, out bytes.Buffer
	sums := make([]uint64, len(names))
	for {
		if !s.alive(ss.id) {
			fmt.Fprint(w, "event: logout\ndata: \n\n")
			_ = rc.Flush()
			return
		}
		v, err := s.build(ctx, req)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Debug("web stream: cannot read the state", slog.Any("err", err))
		} else {
			out.Reset()
			var sent []int
			var tasksNow *taskList
			patched := false
			for i, name := range names {
				if name == "tasks" {
					s.mu.Lock()
					prev, owner := ps.tasks, ps.gen == gen
					s.mu.Unlock()
					if !owner {
						return
					}
					tasksNow = s.taskListOf(v)
					if prev != nil && prev.frame == tasksNow.frame {
						// The same tasks in the same places: only what
						// changed in them goes.
						n := out.Len()
						if err := s.taskPatch(&out, v, prev, cards); err != nil {
							s.log.Error("web task cards not rendered", slog.Any("err", err))
							out.Truncate(n)
							tasksNow = nil
						}
						patched = out.Len() > n
						continue
					}
					next, err := s.renderCards(v, cards)
					if err != nil {
						s.log.Error("web task cards not rendered", slog.Any("err", err))
						tasksNow = nil
						continue
					}
					cards = next
				}
				sum, ok := s.hashOf(&sec, name, v)
				if !ok {
					if name == "tasks" {
						tasksNow = nil
					}
					continue
				}
				s.mu.Lock()
				same, owner := ps.last[name] == sum, ps.gen == gen
				s.mu.Unlock()
				if !owner {
					return // the page started a newer stream
				}
				if same {
					continue
				}
				sums[i] = sum
				sent = append(sent, i)
				out.WriteString("event: " + name + "\n")
				for line := range bytes.SplitSeq(sec.Bytes(), []byte("\n")) {
					out.WriteString("data: ")
					out.Write(line)
					out.WriteByte('\n')
				}
				out.WriteByte('\n')
			}
			if out.Len() == 0 && time.Since(lastWrite) > 30*time.Second {
				out.WriteString(": ping\n\n")
			}
			if out.Len() > 0 {
				_ = rc.SetWriteDeadline(time.Now().Add(30 * time.Second))
				if _, err := w.Write(out.Bytes()); err != nil {
					return
				}
				if err := rc.Flush(); err != nil {
					return
				}
				lastWrite = time.Now()
				s.mu.Lock()
				if ps.gen == gen {
					for _, i := range sent {
						ps.last[names[i]] = sums[i]
					}
					if patched {
						// The page's list is no longer any full render's.
						delete(ps.last, "tasks")
					}
					ps.used = lastWrite
				}
				s.mu.Unlock()
			}
			if tasksNow != nil {
				// Sent, patched, or the page held it already.
				s.mu.Lock()
				if ps.gen == gen {
					ps.tasks = tasksNow
				}
				s.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-kicked:
			// An action: look now, and again a moment later, as the
			// daemon may not have acted on it yet.
			again.Reset(kickAgain)
		case <-again.C:
		}
	}
}

// taskList is what a page's task list shows: its frame (which page of
// tasks; which tasks, in what order) and each task's card content, so
// that a stream sends the page only what changed in it.
type taskList struct {
	frame uint64
	shown map[string]taskView // by taskView.Key
}

func (s *Server) taskListOf(v *view) *taskList {
	var h maphash.Hash
	h.SetSeed(s.seed)
	fmt.Fprintf(&h, "%d %d %d %d %d\x00", v.From, v.To, v.TasksTotal, v.PrevPage, v.NextPage)
	tl := &taskList{shown: make(map[string]taskView, len(v.Tasks))}
	for _, t := range v.Tasks {
		h.WriteString(t.Key)
		h.WriteByte(0)
		tl.shown[t.Key] = t
	}
	tl.frame = h.Sum64()
	return tl
}

// progressOnly reports whether a and b differ in their progress and times
// alone: what changes each second of a running task.
func progressOnly(a, b taskView) bool {
	a.Fraction, a.Percent, a.Elapsed, a.Remaining = b.Fraction, b.Percent, b.Elapsed, b.Remaining
	return a == b
}

// taskPatch writes the events that bring a page showing prev to v's tasks,
// in the same frame: "progress", the running tasks' new progress and
// times as JSON ([key, fraction, percent, elapsed, remaining] each, set
// as text by the page: no markup), and "cards", the cards that changed
// otherwise, rendered (and escaped) by the template. A second of a
// running queue costs a few short strings, not the whole list again.
func (s *Server) taskPatch(out *bytes.Buffer, v *view, prev *taskList, cache cardCache) error {
	var prog [][5]any
	var cards []template.HTML
	for _, t := range v.Tasks {
		old, ok := prev.shown[t.Key]
		switch {
		case ok && old == t:
		case ok && progressOnly(old, t):
			prog = append(prog, [5]any{t.Key, t.Fraction, t.Percent, t.Elapsed, t.Remaining})
		default:
			h, err := s.renderCard(v.CSRF, t, cache)
			if err != nil {
				return err
			}
			cards = append(cards, h)
		}
	}
	if len(prog) > 0 {
		b, err := json.Marshal(prog)
		if err != nil {
			return err
		}
		out.WriteString("event: progress\ndata: ")
		out.Write(b) // JSON escapes every line break
		out.WriteString("\n\n")
	}
	if len(cards) > 0 {
		out.WriteString("event: cards\n")
		for _, c := range cards {
			for line := range strings.SplitSeq(string(c), "\n") {
				out.WriteString("data: ")
				out.WriteString(line)
				out.WriteByte('\n')
			}
		}
		out.WriteByte('\n')
	}
	return nil
}
