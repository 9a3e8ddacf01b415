package webui

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net/http"
	"time"
)

// Views and their streams. A page is rendered whole once; then one
// server-sent-event stream per tab keeps current the sections that tab
// shows (sectionsFor), sending a section only when its HTML differs from
// what the page holds. What each page holds is kept here, by a view id
// the page carries, so that neither the stream's start nor a switch of
// tab (which starts the stream again for the new tab) sends again what
// the page already has.

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
	req := buildReq{csrf: ss.csrf, session: ss.id, page: pageParam(r), need: need, cards: &cards}
	tick := time.NewTicker(s.cfg.PollInterval)
	defer tick.Stop()
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
			for i, name := range names {
				sum, ok := s.hashOf(&sec, name, v)
				if !ok {
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
					ps.used = lastWrite
				}
				s.mu.Unlock()
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
