// Package guirpc is boincd's BOINC GUI RPC server: the TCP protocol (port
// 31416) that boinccmd, BOINC Manager and boinctui use to watch and steer a
// BOINC client. It speaks the C++ client's dialect exactly: the same
// framing, authentication, access rules and reply layout, down to the line
// breaks that line-oriented GUI parsers depend on (PROTOCOLS.md §5).
//
// The server owns no client state. Read ops render a State snapshot the
// Backend returns; state-changing ops become an Action the Backend carries
// out. The event log is served from an eventlog.Log.
package guirpc

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/boincd/boincd/eventlog"
)

// Defaults and limits (client/gui_rpc_server.h and friends).
const (
	DefaultAddr = "127.0.0.1:31416"
	// MaxRequest is the most bytes a request may have before its \003;
	// the C++ server drops the connection past it.
	MaxRequest = 100000
	// DefaultMaxConns bounds authenticated connections (see guard.go for
	// the others).
	DefaultMaxConns = 32
	// writeTimeout bounds sending one reply to a peer that does not read.
	writeTimeout = 30 * time.Second
	// backendTimeout bounds one Snapshot or Do call.
	backendTimeout = 30 * time.Second
)

// Config configures a Server.
type Config struct {
	// Addr is the listen address, DefaultAddr when empty. With
	// AllowRemote or AllowHosts and a loopback (or empty) host, the
	// server binds all interfaces on the same port.
	Addr string
	// AllowRemote accepts connections from any host (allow_remote_gui_rpc).
	AllowRemote bool
	// AllowHosts are further hosts (names or IPs) allowed to connect
	// (remote_hosts.cfg). Names are resolved at each connection.
	AllowHosts []string
	// Password is the gui_rpc_auth.cfg password; "" means none.
	Password string
	Backend  Backend
	// Log serves get_messages and get_message_count; nil serves an empty
	// log.
	Log    *eventlog.Log
	Logger *slog.Logger
	// MaxConns bounds authenticated connections (all connections when
	// there is no password); default DefaultMaxConns. IdleTimeout, when
	// set, closes an authenticated connection that stays silent; by
	// default none is closed for idling, as in the C++ client: the
	// Manager keeps one open for as long as it runs (its Add Project
	// wizard waits on the user for minutes), and the pool's eviction of
	// the connection idle longest already keeps room for newcomers.
	MaxConns    int
	IdleTimeout time.Duration
	// MaxPending and MaxPendingPerPeer bound connections that have not
	// authenticated, in all and from one peer; RequestTimeout bounds a
	// request from its first byte to its end; AuthTimeout bounds the
	// silence of an unauthenticated connection and the time a remote one
	// has to authenticate. Defaults: DefaultMaxPending and so on.
	MaxPending        int
	MaxPendingPerPeer int
	RequestTimeout    time.Duration
	AuthTimeout       time.Duration
	// Resolver resolves AllowHosts names; net.DefaultResolver when nil.
	Resolver *net.Resolver
}

// Server is a listening GUI RPC server.
type Server struct {
	cfg Config
	ln  net.Listener
	log *slog.Logger

	// peerUID learns the uid behind a loopback connection (tests replace it).
	peerUID func(peer, local *net.TCPAddr) (uint32, error)

	mu        sync.Mutex
	conns     map[*conn]struct{}
	peers     map[string]*peerState
	notes     map[string]*logNote
	npending  int // connections in classPending
	nauthed   int // connections in classAuthed
	closed    bool
	serving   bool
	done      chan struct{} // closed by Close
	served    chan struct{} // closed when Serve returns
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// Listen validates cfg and opens the listening socket.
func Listen(cfg Config) (*Server, error) {
	if cfg.Backend == nil {
		return nil, errors.New("guirpc: Config.Backend is nil")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	cfg.IdleTimeout = max(cfg.IdleTimeout, 0)
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.MaxPendingPerPeer <= 0 {
		cfg.MaxPendingPerPeer = DefaultMaxPendingPerPeer
	}
	cfg.MaxPendingPerPeer = min(cfg.MaxPendingPerPeer, cfg.MaxPending)
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.AuthTimeout <= 0 {
		cfg.AuthTimeout = DefaultAuthTimeout
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	addr, err := listenAddr(cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("guirpc: listen on %s: %w", addr, err)
	}
	return &Server{
		cfg:     cfg,
		ln:      ln,
		log:     cfg.Logger,
		conns:   map[*conn]struct{}{},
		peers:   map[string]*peerState{},
		notes:   map[string]*logNote{},
		peerUID: localPeerUID,
		done:    make(chan struct{}),
		served:  make(chan struct{}),
	}, nil
}

// listenAddr is Addr, widened to all interfaces when remote hosts may
// connect (the C++ client binds INADDR_ANY then).
func listenAddr(cfg Config) (string, error) {
	addr := cfg.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("guirpc: listen address %q: %w", addr, err)
	}
	if cfg.AllowRemote || len(cfg.AllowHosts) > 0 {
		if ip := net.ParseIP(host); host == "" || host == "localhost" || (ip != nil && ip.IsLoopback()) {
			host = ""
		}
	}
	return net.JoinHostPort(host, port), nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until ctx is done or Close is called, then
// closes every connection and returns once their goroutines have ended.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	if s.serving {
		s.mu.Unlock()
		return errors.New("guirpc: Serve called twice")
	}
	s.serving = true
	s.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		s.shutdown()
	}()
	go func() {
		// Counted log lines (failed passwords...) are written once a
		// minute at most per peer; this writes the counts out.
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				s.flushNotes(now)
			case <-stopped:
				return
			}
		}
	}()
	defer func() {
		cancel()
		<-stopped
		s.wg.Wait()
		s.flushNotes(time.Now().Add(logEvery)) // the counts not yet logged
		close(s.served)
	}()

	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if s.isClosed() || ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors or a transient failure: wait a
				// little rather than spin.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("GUI RPC accept failed; retrying", slog.Any("err", err), slog.Duration("in", delay))
				select {
				case <-time.After(delay):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("guirpc: accept on %s: %w", s.ln.Addr(), err)
		}
		delay = 0
		cc := s.track(c)
		if cc == nil {
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer s.untrack(cc)
			s.serveConn(ctx, cc)
		}()
	}
}

// track registers c, refusing it only when the server is closing: room
// is made when the connection is admitted to a pool (guard.go).
func (s *Server) track(c net.Conn) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		_ = c.Close()
		return nil
	}
	cc := &conn{s: s, c: c, accepted: time.Now()}
	s.conns[cc] = struct{}{}
	return cc
}

func (s *Server) untrack(cc *conn) {
	_ = cc.c.Close()
	s.mu.Lock()
	s.remove(cc)
	delete(s.conns, cc)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) shutdown() {
	s.mu.Lock()
	s.closed = true
	conns := make([]net.Conn, 0, len(s.conns))
	for cc := range s.conns {
		conns = append(conns, cc.c)
	}
	s.mu.Unlock()
	_ = s.ln.Close()
	for _, c := range conns {
		_ = c.Close()
	}
}

// Close stops the server: the listener and every connection are closed
// and, if Serve is running, it returns once its connections have ended.
func (s *Server) Close() error {
	s.closeOnce.Do(func() { close(s.done) })
	s.mu.Lock()
	serving := s.serving
	s.mu.Unlock()
	if serving {
		<-s.served
	} else {
		s.shutdown()
	}
	return nil
}

// isLocal reports whether a peer counts as local: loopback.
func isLocal(addr net.Addr) bool {
	switch a := addr.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UnixAddr:
		return true
	}
	return false
}

// allowed is the C++ client's connect check: local peers, any peer with
// allow_remote_gui_rpc, or a peer listed (by IP or by a name resolving to
// its IP) in remote_hosts.cfg.
func allowed(ctx context.Context, cfg *Config, peer net.IP) bool {
	if peer.IsLoopback() || cfg.AllowRemote {
		return true
	}
	for _, h := range cfg.AllowHosts {
		if ip := net.ParseIP(h); ip != nil {
			if ip.Equal(peer) {
				return true
			}
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := cfg.Resolver.LookupIPAddr(rctx, h)
		cancel()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if a.IP.Equal(peer) {
				return true
			}
		}
	}
	return false
}

// conn is one client connection's protocol state.
type conn struct {
	s        *Server
	c        net.Conn
	accepted time.Time
	local    bool
	peer     string // the remote address
	key      string // the peer, as the guard counts it (guard.go)
	authOK   bool   // authenticated, or no password configured
	gotA1    bool
	gotA2    bool
	nonce    string
	sentUna  bool // a remote peer already got <unauthorized/>
	notices  noticeConn
	client   string // the <name> given in exchange_versions (create_account's consent)

	// w holds the reply being written, framed, and is reused for the
	// next: a Manager polls the same few requests every second, and
	// allocating each reply anew (with the copies a growing buffer makes)
	// was most of what the collector had to reclaim.
	w     xw
	bigAt time.Time // when a reply last needed more than keepReply

	// Guarded by s.mu.
	class      connClass
	lastActive time.Time
	requests   int // whole requests received
}

// errClose ends a connection after the reply (if any) is sent.
var errClose = errors.New("close connection")

func (s *Server) serveConn(ctx context.Context, cc *conn) {
	c := cc.c
	tcp, _ := c.RemoteAddr().(*net.TCPAddr)
	cc.local = isLocal(c.RemoteAddr())
	cc.peer = c.RemoteAddr().String()
	cc.authOK = s.cfg.Password == ""
	cc.key = s.peerKey(c)
	s.mu.Lock()
	s.admit(cc, time.Now())
	s.mu.Unlock()
	if !cc.local {
		if tcp == nil || !allowed(ctx, &s.cfg, tcp.IP) {
			s.note("refused", cc.key, "")
			return
		}
	}
	r := &msgReader{c: c}
	for {
		idle, whole, writeT := s.cfg.IdleTimeout, max(s.cfg.IdleTimeout, s.cfg.RequestTimeout), writeTimeout
		var hard time.Time
		if !cc.authOK {
			idle, whole, writeT = s.cfg.AuthTimeout, s.cfg.RequestTimeout, s.cfg.AuthTimeout
			if !cc.local {
				hard = cc.accepted.Add(s.cfg.AuthTimeout)
			}
		}
		msg, err := r.next(idle, whole, hard)
		if err != nil {
			var ne net.Error
			if !cc.authOK && errors.As(err, &ne) && ne.Timeout() {
				s.note("timeout", cc.key, "")
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				s.log.Debug("GUI RPC connection ended", slog.String("peer", cc.peer), slog.Any("err", err))
			}
			return
		}
		s.mu.Lock()
		cc.lastActive = time.Now()
		cc.requests++
		s.mu.Unlock()
		reply, after, err := cc.handle(ctx, msg)
		if reply != nil {
			out := cc.framed()
			_ = c.SetWriteDeadline(time.Now().Add(writeT))
			_, werr := c.Write(out)
			cc.sent(time.Now())
			if werr != nil {
				s.log.Debug("GUI RPC write failed", slog.String("peer", cc.peer), slog.Any("err", werr))
				return
			}
		}
		if after != nil {
			actx, cancel := context.WithTimeout(ctx, backendTimeout)
			after(actx)
			cancel()
		}
		if err != nil {
			return
		}
	}
}

// note counts an event for the rate-limited log (guard.go).
func (s *Server) note(kind, key, why string) {
	s.mu.Lock()
	s.noteLocked(kind, key, why)
	s.mu.Unlock()
}

// readChunk is the most one read asks for.
const readChunk = 4096

// errTooLong is a request over MaxRequest bytes without its terminator.
var errTooLong = fmt.Errorf("request longer than %d bytes without \\003", MaxRequest)

// msgReader splits a connection's byte stream into \003-terminated
// messages.
type msgReader struct {
	c     net.Conn
	buf   []byte    // received, not yet returned
	scan  int       // buf[:scan] holds no \003
	start time.Time // when buf's first byte arrived
	// store is buf's backing array. The message next returned lives in
	// it until next is called again, then its room is reused: a polling
	// Manager's requests then cost no allocation.
	store []byte
}

// next returns the next message without its \003. The connection may be
// silent for idle before a request starts; from its first byte the whole
// request must arrive within whole (a deadline, not a per-read timeout:
// a peer trickling a byte a second gains nothing); and nothing is read
// past hard when it is set. An idle of 0 waits for a request for ever
// (until the connection is closed under it). A message longer than MaxRequest is an error
// as soon as that many bytes have arrived, as in the C++ server.
func (m *msgReader) next(idle, whole time.Duration, hard time.Time) ([]byte, error) {
	// The previous message is done with: move what followed it to the
	// front, or let a big request's room go.
	if len(m.buf) == 0 && cap(m.store) > keepReply {
		m.store = nil
	}
	m.buf = m.store[:copy(m.store[:cap(m.store)], m.buf)]
	for {
		if i := bytes.IndexByte(m.buf[m.scan:], 3); i >= 0 {
			end := m.scan + i
			msg := m.buf[:end:end]
			m.buf = m.buf[end+1:]
			m.scan = 0
			m.start = time.Time{}
			if len(m.buf) > 0 {
				m.start = time.Now()
			}
			return msg, nil
		}
		m.scan = len(m.buf)
		if len(m.buf) > MaxRequest {
			return nil, errTooLong
		}
		var dl time.Time
		if len(m.buf) == 0 {
			if idle > 0 {
				dl = time.Now().Add(idle)
			}
		} else {
			dl = m.start.Add(whole)
		}
		if !hard.IsZero() && (dl.IsZero() || hard.Before(dl)) {
			dl = hard
		}
		_ = m.c.SetReadDeadline(dl)
		if cap(m.buf)-len(m.buf) < readChunk {
			m.store = slices.Grow(m.buf, readChunk)
			m.buf = m.store[:len(m.buf)]
		}
		n, err := m.c.Read(m.buf[len(m.buf) : len(m.buf)+readChunk])
		if n > 0 && len(m.buf) == 0 {
			m.start = time.Now()
		}
		m.buf = m.buf[:len(m.buf)+n]
		if err != nil && n == 0 {
			if errors.Is(err, io.EOF) && len(m.buf) > 0 {
				return nil, fmt.Errorf("connection closed inside a request: %w", io.ErrUnexpectedEOF)
			}
			return nil, err
		}
	}
}

// handle answers one message. It returns the reply body (nil for none),
// an optional function to run after the reply is sent, and errClose when
// the connection must then be closed.
func (cc *conn) handle(ctx context.Context, msg []byte) ([]byte, func(context.Context), error) {
	s := cc.s
	w := cc.replyWriter()
	req, perr := parseRequest(msg)
	if perr != nil {
		if errors.Is(perr, errNoOp) {
			w.line("<error>missing request</error>")
		} else {
			w.str("", "error", perr.Error())
		}
		return cc.body(), nil, nil
	}
	switch {
	case req.op == "auth1":
		if cc.gotA1 && !cc.authOK {
			return nil, nil, errClose
		}
		cc.gotA1 = true
		cc.nonce = strconv.FormatFloat(float64(time.Now().UnixMicro())/1e6, 'f', 6, 64)
		w.str("", "nonce", cc.nonce)
		return cc.body(), nil, nil
	case req.op == "auth2":
		if (!cc.gotA1 || cc.gotA2) && !cc.authOK {
			return nil, nil, errClose
		}
		cc.gotA2 = true
		braked := s.cfg.Password != "" && !cc.authOK
		if braked {
			// The brake (guard.go): a peer that failed often waits its
			// turn before the check, whatever the password.
			wait, ok := s.reserveCheck(cc.key, time.Now(), brakeMax)
			if !ok {
				w.line("<unauthorized/>")
				return cc.body(), nil, errClose
			}
			if wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-t.C:
				case <-ctx.Done():
					t.Stop()
					s.abandonCheck(cc.key)
					return nil, nil, errClose
				}
			}
		}
		sum := md5.Sum([]byte(cc.nonce + s.cfg.Password))
		want := hex.EncodeToString(sum[:])
		got := bytes.ToLower([]byte(req.fields["nonce_hash"]))
		good := subtle.ConstantTimeCompare(got, []byte(want)) == 1
		if braked {
			s.checked(cc.key, good, time.Now())
		}
		if !good {
			w.line("<unauthorized/>")
			return cc.body(), nil, errClose
		}
		if !cc.authOK {
			cc.authOK = true
			s.mu.Lock()
			if cc.class == classPending {
				s.addAuthed(cc)
			}
			s.mu.Unlock()
		}
		w.line("<authorized/>")
		return cc.body(), nil, nil
	case !cc.authOK && !cc.local && req.op != "get_auth_id":
		w.line("<unauthorized/>")
		if cc.sentUna {
			return cc.body(), nil, errClose
		}
		cc.sentUna = true
		return cc.body(), nil, nil
	}
	h, ok := ops[req.op]
	if !ok {
		// A tool that fails on an op boincd lacks should leave a trace;
		// debug, as a hostile peer can send any number of them.
		s.log.Debug("GUI RPC: unrecognized op", slog.String("op", clip(req.op, 64)), slog.String("peer", cc.peer))
		w.str("", "error", "unrecognized op: "+req.op)
		return cc.body(), nil, nil
	}
	if !cc.authOK && !h.noAuth {
		w.line("<unauthorized/>")
		return cc.body(), nil, nil
	}
	req.notices = &cc.notices
	if req.op == "exchange_versions" {
		cc.client = clientName(req.fields["name"])
	}
	req.client = cc.client
	bctx, cancel := context.WithTimeout(ctx, backendTimeout)
	defer cancel()
	after := h.fn(bctx, s, req, w)
	return cc.body(), after, nil
}

// The frame of every reply. handle writes the body between them in cc.w.
const (
	replyHead = "<boinc_gui_rpc_reply>\n"
	replyTail = "</boinc_gui_rpc_reply>\n\003"
)

// keepReply is the largest reply buffer a connection keeps for good: an
// idle client's replies fit many times over. A bigger one (an 11 MB
// get_state on a 10,000-task queue) is kept only while the connection
// keeps asking for replies that need it, and keepBig after the last: a
// Manager polling get_results every second would otherwise have a new
// 7 MB buffer made, faulted in and collected each second, and a client
// that looked once and went on with small requests does not pin it.
const (
	keepReply = 256 << 10
	keepBig   = 30 * time.Second
)

// replyWriter is cc.w emptied, with the reply's head written.
func (cc *conn) replyWriter() *xw {
	w := &cc.w
	w.Reset()
	w.WriteString(replyHead)
	return w
}

// body is the reply's body as handle wrote it, valid until the next
// request.
func (cc *conn) body() []byte { return cc.w.Bytes()[len(replyHead):] }

// framed closes the reply and returns it whole, ready to send.
func (cc *conn) framed() []byte {
	cc.w.WriteString(replyTail)
	return cc.w.Bytes()
}

// sent is called after each reply, at now: it notes a big reply, and
// lets a big buffer go once no reply has needed it for keepBig.
func (cc *conn) sent(now time.Time) {
	switch {
	case cc.w.Len() > keepReply:
		cc.bigAt = now
	case cc.w.Cap() > keepReply && now.Sub(cc.bigAt) > keepBig:
		cc.w.Buffer = bytes.Buffer{}
	}
}

// clip shortens s to at most n bytes for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
