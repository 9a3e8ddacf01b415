// Package webui is boincd's local web dashboard (issue 31): one page that
// shows and controls the client, served by the daemon beside GUI RPC.
//
// It is a thin layer over the GUI RPC server's interface: every read is a
// guirpc.Backend Snapshot and every change a guirpc.Backend Do with the
// same guirpc.Action values boinccmd and BOINC Manager cause, so there is
// one implementation of each action, in the daemon.
//
// Pages are rendered on the server with html/template (which escapes every
// project-supplied string for its context) and kept current by one
// server-sent-event stream per tab that pushes a section's HTML only when
// it changed. About two hundred lines of plain JavaScript do the rest
// (tabs, confirmations, the stream); everything is embedded, nothing comes
// from a CDN, and the page works without JavaScript (forms post and the
// server redirects back), only without live updates.
package webui

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/guirpc"
)

// DefaultAddr is where the dashboard listens by default: loopback, the
// port after GUI RPC's 31416.
const DefaultAddr = "127.0.0.1:31417"

// Session and request limits.
const (
	sessionIdle  = 12 * time.Hour // a session unused this long ends
	maxSessions  = 256            // the oldest is dropped beyond this
	maxStreams   = 32             // open event streams, all sessions together
	maxFormBytes = 64 << 10
	cookieName   = "boincd_session"
	// defaultPoll is how often an open stream looks for changes. Two
	// seconds: each look wakes the daemon and the stream, and at one a
	// second an open tab cost the daemon about 1.3 CPU ticks (1/100 s) per
	// 20 s (bench/webcost); an action the page takes wakes its streams at
	// once (kick), so what the user does still shows without delay.
	defaultPoll   = 2 * time.Second
	sessionIDSize = 32 // random bytes of a session id and of a CSRF token
)

//go:embed assets
var assets embed.FS

// Config configures the dashboard server.
type Config struct {
	// Addr is the listen address, DefaultAddr when empty.
	Addr string
	// TLSCert and TLSKey are PEM files; with them the server speaks
	// HTTPS. Required for a listen address that is not loopback.
	TLSCert, TLSKey string
	// AllowRemote and AllowHosts admit remote peers by GUI RPC's rule
	// (allow_remote_gui_rpc, remote_hosts.cfg); loopback peers are
	// always admitted.
	AllowRemote bool
	AllowHosts  []string
	// Password is the GUI RPC password (gui_rpc_auth.cfg); it must not
	// be empty: the dashboard always asks for it.
	Password string
	Backend  guirpc.Backend
	// Log is the event log shown live; nil shows none.
	Log    *eventlog.Log
	Logger *slog.Logger
	// PollInterval is how often an open stream looks for changes
	// (default 1 s).
	PollInterval time.Duration
	// DataDir keeps the fleet (fleet.json: other hosts and their GUI RPC
	// passwords); "" shows no Fleet tab. FleetPollInterval is how often
	// another host is read while a dashboard is open (default 3 s).
	DataDir           string
	FleetPollInterval time.Duration
}

// Server is a listening dashboard.
type Server struct {
	cfg    Config
	ln     net.Listener
	log    *slog.Logger
	remote bool // listening beyond loopback
	tls    bool
	tmpl   *template.Template
	static http.Handler
	brake  guirpc.Brake
	// readTimeout bounds reading a request (tests shorten it).
	readTimeout time.Duration

	// The Fleet tab (fleet.go); nil without a data directory.
	fleet        *Fleet
	fleetp       *fleetPoller
	fleetProblem string
	// bg bounds what runs past a request (attach jobs); Serve ends it
	// and waits for them (wg).
	bg     context.Context
	bgStop context.CancelFunc
	wg     sync.WaitGroup
	seed   maphash.Seed // of the section hashes

	mu       sync.Mutex
	sessions map[string]*session
	streams  int
	// kicks are the open streams by session: an action wakes them.
	kicks map[string]map[chan struct{}]bool
	views map[string]*pageState  // by view id: what each page holds
	jobs  map[string]*accountJob // by session id
}

type session struct {
	id      string
	csrf    string
	created time.Time
	used    time.Time
}

// IsLoopbackAddr reports whether a listen address binds loopback only.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Listen opens the listener. A non-loopback address needs TLSCert and
// TLSKey: the password and session cookie must not cross a network in
// clear.
func Listen(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	if cfg.Password == "" {
		return nil, errors.New("webui: no GUI RPC password to log in with")
	}
	if cfg.Backend == nil {
		return nil, errors.New("webui: no backend")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = defaultPoll
	}
	s := &Server{cfg: cfg, log: cfg.Logger, remote: !IsLoopbackAddr(cfg.Addr), sessions: map[string]*session{}, readTimeout: 30 * time.Second,
		views: map[string]*pageState{}, jobs: map[string]*accountJob{}, seed: maphash.MakeSeed()}
	s.bg, s.bgStop = context.WithCancel(context.Background())
	var tlsCfg *tls.Config
	if cfg.TLSCert != "" || cfg.TLSKey != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("webui: TLS certificate %s, key %s: %w", cfg.TLSCert, cfg.TLSKey, err)
		}
		tlsCfg = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		s.tls = true
	}
	if s.remote && !s.tls {
		return nil, fmt.Errorf("webui: listen address %s is not loopback: a TLS certificate and key are required", cfg.Addr)
	}
	t, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	s.tmpl = t
	if err := s.openFleet(); err != nil {
		return nil, err
	}
	sub, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, fmt.Errorf("webui: embedded assets: %w", err)
	}
	s.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("webui: listen on %s: %w", cfg.Addr, err)
	}
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
	}
	s.ln = ln
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the dashboard's address for people: scheme, host and port.
func (s *Server) URL() string {
	scheme := "http"
	if s.tls {
		scheme = "https"
	}
	return scheme + "://" + s.ln.Addr().String() + "/"
}

// Serve serves until ctx is done, then closes the listener and every
// stream and returns.
func (s *Server) Serve(ctx context.Context) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       s.readTimeout,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	if s.fleetp != nil {
		s.fleetp.start(ctx)
		defer s.fleetp.stop()
	}
	errc := make(chan error, 1)
	defer func() { s.bgStop(); s.wg.Wait() }()
	go func() { errc <- hs.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		_ = hs.Close()
	}
	<-errc
	return ctx.Err()
}

// Handler is the dashboard's HTTP handler (Serve uses it; tests may too).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /static/", s.static)
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.withSession(s.logout))
	mux.HandleFunc("GET /{$}", s.withSession(s.dashboard))
	mux.HandleFunc("GET /events", s.withSession(s.events))
	mux.HandleFunc("POST /act", s.withSession(s.act))
	mux.HandleFunc("POST /fleet/add", s.withSession(s.fleetAdd))
	mux.HandleFunc("POST /fleet/remove", s.withSession(s.fleetRemove))
	mux.HandleFunc("POST /fleet/act", s.withSession(s.fleetAct))
	mux.HandleFunc("POST /prefs", s.withSession(s.prefs))
	mux.HandleFunc("POST /account", s.withSession(s.account))
	return s.guard(mux)
}

// guard admits peers by GUI RPC's rule, refuses host names a loopback
// dashboard has no business answering (DNS rebinding: another site's
// page must not reach it under its own name), and sets the headers that
// keep the page from running anything but its own script.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip := peerIP(r)
		if ip == nil || !guirpc.PeerAllowed(r.Context(), s.cfg.AllowRemote, s.cfg.AllowHosts, nil, ip) {
			http.Error(w, "host not allowed", http.StatusForbidden)
			return
		}
		if !s.remote && !loopbackHost(r.Host) {
			http.Error(w, "unexpected Host header", http.StatusMisdirectedRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		if s.tls {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

func peerIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return nil
	}
	return net.ParseIP(host)
}

// loopbackHost: the Host header names this machine (an IP literal on
// loopback, or localhost).
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// brakeKey names the peer whose failed logins are counted together: the
// remote IP (an IPv6 /64), all local peers as one, as GUI RPC does where
// it cannot learn a local peer's uid.
func brakeKey(r *http.Request) string {
	ip := peerIP(r)
	switch {
	case ip == nil:
		return "unknown"
	case ip.IsLoopback():
		return "local"
	case ip.To4() != nil:
		return ip.To4().String()
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func randomToken() string {
	b := make([]byte, sessionIDSize)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(r); ok {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login.html", loginData{})
}

type loginData struct{ Failed, Throttled bool }

// login checks the GUI RPC password, spaced out per peer exactly as GUI
// RPC's auth2 is (guirpc.Brake): the wait comes before the check, so a
// right password does not answer sooner than a wrong one.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	key := brakeKey(r)
	wait, ok := s.brake.Reserve(key, time.Now())
	if !ok {
		s.log.Warn("web login refused unchecked: too many failures from this peer", slog.String("peer", key))
		s.render(w, http.StatusTooManyRequests, "login.html", loginData{Throttled: true})
		return
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			s.brake.Abandon(key)
			return
		}
	}
	good := subtle.ConstantTimeCompare([]byte(r.PostForm.Get("password")), []byte(s.cfg.Password)) == 1
	s.brake.Checked(key, good, time.Now())
	if !good {
		s.log.Warn("web login failed", slog.String("peer", key))
		s.render(w, http.StatusUnauthorized, "login.html", loginData{Failed: true})
		return
	}
	id := randomToken()
	now := time.Now()
	s.mu.Lock()
	s.dropExpiredLocked(now)
	if len(s.sessions) >= maxSessions {
		var oldest string
		for k, v := range s.sessions {
			if oldest == "" || v.used.Before(s.sessions[oldest].used) {
				oldest = k
			}
		}
		delete(s.sessions, oldest)
		delete(s.jobs, oldest)
	}
	s.sessions[id] = &session{id: id, csrf: randomToken(), created: now, used: now}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: id, Path: "/", HttpOnly: true, Secure: s.tls, SameSite: http.SameSiteStrictMode})
	s.log.Info("web login", slog.String("peer", key))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *Server) dropExpiredLocked(now time.Time) {
	for k, v := range s.sessions {
		if now.Sub(v.used) > sessionIdle {
			delete(s.sessions, k)
			delete(s.jobs, k)
		}
	}
	s.dropViewsLocked(now)
}

// session returns the request's live session.
func (s *Server) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[c.Value]
	now := time.Now()
	if !ok || now.Sub(ss.used) > sessionIdle {
		delete(s.sessions, c.Value)
		return session{}, false
	}
	ss.used = now
	return *ss, true
}

type sessionHandler func(w http.ResponseWriter, r *http.Request, ss session)

// withSession runs h for a logged-in request; a POST must also carry the
// session's CSRF token (form field csrf or header X-CSRF-Token).
func (s *Server) withSession(h sessionHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ss, ok := s.session(r)
		if !ok {
			if r.Method == http.MethodGet && r.URL.Path == "/" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "not logged in", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			tok := r.Header.Get("X-CSRF-Token")
			if tok == "" {
				tok = r.PostForm.Get("csrf")
			}
			if subtle.ConstantTimeCompare([]byte(tok), []byte(ss.csrf)) != 1 {
				http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
				return
			}
		}
		h(w, r, ss)
	}
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request, _ session) {
	if c, err := r.Cookie(cookieName); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		delete(s.jobs, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.tls, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *Server) render(w http.ResponseWriter, code int, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("web page not rendered", slog.String("template", name), slog.Any("err", err))
		http.Error(w, "page not rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(b.String()))
}

// kickable registers a stream of session id for kick; the returned
// function unregisters it.
func (s *Server) kickable(id string) (chan struct{}, func()) {
	k := make(chan struct{}, 1)
	s.mu.Lock()
	if s.kicks == nil {
		s.kicks = map[string]map[chan struct{}]bool{}
	}
	if s.kicks[id] == nil {
		s.kicks[id] = map[chan struct{}]bool{}
	}
	s.kicks[id][k] = true
	s.mu.Unlock()
	return k, func() {
		s.mu.Lock()
		delete(s.kicks[id], k)
		if len(s.kicks[id]) == 0 {
			delete(s.kicks, id)
		}
		s.mu.Unlock()
	}
}

// kick wakes session id's streams now: the page shows an action's effect
// without waiting for the next poll.
func (s *Server) kick(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.kicks[id] {
		select {
		case k <- struct{}{}:
		default: // one is pending already
		}
	}
}
