package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Path is where Server serves the metrics.
const Path = "/metrics"

// maxInFlight is how many scrapes may run at once. A couple of scrapers
// (Prometheus and a person with curl) is all one host needs; more would
// only queue requests on the daemon's owner loop, so they get 503 instead.
const maxInFlight = 2

// shutdownGrace bounds how long Serve waits for scrapes in flight when its
// context is cancelled; a scrape is bounded by the scrape timeout anyway.
const shutdownGrace = 10 * time.Second

// Option configures a Server.
type Option func(*serverConfig)

type serverConfig struct {
	allowRemote   bool
	scrapeTimeout time.Duration
}

// AllowRemote lets the server listen on an address other than loopback.
// Metrics reveal the host's hardware, its projects and when it is idle, so
// exposing them beyond the host must be asked for explicitly.
func AllowRemote(allow bool) Option {
	return func(c *serverConfig) { c.allowRemote = allow }
}

// ScrapeTimeout bounds how long a scrape waits for the Source; 0 or less
// means DefaultScrapeTimeout.
func ScrapeTimeout(d time.Duration) Option {
	return func(c *serverConfig) { c.scrapeTimeout = d }
}

// Server serves /metrics over HTTP: the boincd Collector's metrics, the Go
// runtime series and, on Linux, the process series.
type Server struct {
	addr    string
	log     *slog.Logger
	handler http.Handler
	cfg     serverConfig

	mu      sync.Mutex
	started bool
	bound   string
	ready   chan struct{}
}

// NewServer checks addr and prepares a Server for it; Serve listens. addr
// is host:port; unless AllowRemote(true) is given the host must be a
// loopback IP or "localhost" (an empty host, meaning every interface, is
// refused). A nil logger discards.
func NewServer(addr string, src Source, logger *slog.Logger, opts ...Option) (*Server, error) {
	if src == nil {
		return nil, errors.New("metrics: NewServer: nil Source")
	}
	var cfg serverConfig
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.scrapeTimeout <= 0 {
		cfg.scrapeTimeout = DefaultScrapeTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return nil, fmt.Errorf("metrics: listen address %q: %w", addr, err)
	}
	if !cfg.allowRemote && !loopbackHost(addr) {
		return nil, fmt.Errorf("metrics: listen address %q is not a loopback address; set the remote-access option to expose metrics beyond this host", addr)
	}

	h := &handler{
		c:   NewCollector(src, cfg.scrapeTimeout, logger),
		log: logger,
		sem: make(chan struct{}, maxInFlight),
	}
	timeout := cfg.scrapeTimeout + 5*time.Second
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, http.TimeoutHandler(h, timeout, fmt.Sprintf("Exceeded configured timeout of %v.\n", timeout)))
	return &Server{addr: addr, log: logger, handler: mux, cfg: cfg, ready: make(chan struct{})}, nil
}

// handler serves one scrape.
type handler struct {
	c   *Collector
	log *slog.Logger
	sem chan struct{}
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case h.sem <- struct{}{}:
		defer func() { <-h.sem }()
	default:
		http.Error(w, fmt.Sprintf("Limit of concurrent requests reached (%d), try again later.", maxInFlight), http.StatusServiceUnavailable)
		return
	}
	var b batch
	h.c.collect(r.Context(), &b)
	collectGo(&b)
	collectProcess(&b)
	var buf bytes.Buffer
	for _, err := range b.write(&buf) {
		h.log.Warn("metrics scrape: series left out", slog.Any("err", err))
	}
	hdr := w.Header()
	hdr.Set("Content-Type", ContentType)
	hdr.Set("Content-Length", strconv.Itoa(buf.Len()))
	// A write error means the scraper went away; there is no one to tell.
	_, _ = w.Write(buf.Bytes())
}

// loopbackHost reports whether addr's host is a loopback IP or localhost.
func loopbackHost(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr is the address the server listens on once Ready is closed (with the
// real port when the configured port was 0), or the configured address
// before that.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound != "" {
		return s.bound
	}
	return s.addr
}

// Ready is closed once Serve is listening. It stays open if Serve fails
// to listen, so wait on it together with Serve's result.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Serve listens and serves until ctx is cancelled, then shuts down
// gracefully, letting scrapes in flight finish. It returns nil after a
// shutdown caused by ctx, or the error that stopped it. Call it once.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	again := s.started
	s.started = true
	s.mu.Unlock()
	if again {
		return fmt.Errorf("metrics: Serve on %s called twice", s.addr)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", s.addr, err)
	}
	// "localhost" could resolve to anything; check where we really are.
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !s.cfg.allowRemote && !tcp.IP.IsLoopback() {
		ln.Close()
		return fmt.Errorf("metrics: listen address %q resolved to non-loopback %s", s.addr, tcp)
	}
	s.mu.Lock()
	s.bound = ln.Addr().String()
	s.mu.Unlock()
	close(s.ready)

	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      s.cfg.scrapeTimeout + 10*time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.log.Info("metrics endpoint listening", slog.String("addr", ln.Addr().String()), slog.String("path", Path))

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics: serving on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	shutdownErr := hs.Shutdown(sctx)
	if shutdownErr != nil {
		hs.Close()
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("metrics: serving on %s: %w", ln.Addr(), err)
	}
	if shutdownErr != nil {
		return fmt.Errorf("metrics: shutting down %s: %w", ln.Addr(), shutdownErr)
	}
	s.log.Info("metrics endpoint stopped", slog.String("addr", ln.Addr().String()))
	return nil
}
