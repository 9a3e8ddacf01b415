package guirpc

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sort"
	"sync"
	"time"
)

// What keeps the owner in (issue 14): a local program without the
// password must not be able to hold every connection slot, and nobody
// may guess the password at full speed.
//
//   - Connections that have not authenticated are "pending". They live in
//     their own pool (MaxPending, MaxPendingPerPeer a peer), must send each
//     request whole within RequestTimeout of its first byte, and may idle at
//     most AuthTimeout; a remote one must authenticate within AuthTimeout.
//     A new connection is never turned away for lack of room: the oldest
//     pending connection of its own peer (when that peer is at its cap) or
//     of the peer holding the most (when the pool is full) is closed,
//     sparing those that had a request answered while others had none.
//   - Authenticated connections (or all, with no password) have a pool of
//     their own (MaxConns); when full, the one idle longest is closed, so
//     whoever knows the password always gets in.
//   - A peer is a remote IP (an IPv6 /64), or on loopback the uid of the
//     process at the other end (the kernel tells; all local peers share
//     one IP). Where the uid cannot be learned all local peers are one.
//   - Password checks of a peer are spaced out once it has failed a few
//     times (brakeFree), by a delay that doubles with every failure up to
//     brakeMax; the delay comes before the check, so a right password does
//     not answer sooner than a wrong one and the spacing bounds the guesses.
//     Failures are logged as counts, one line per peer per minute.

// Defaults of the connection guard.
const (
	// DefaultMaxPending bounds connections that have not authenticated.
	DefaultMaxPending = 1024
	// DefaultMaxPendingPerPeer bounds one peer's pending connections.
	DefaultMaxPendingPerPeer = 256
	// DefaultRequestTimeout is the time from a request's first byte to
	// its \003.
	DefaultRequestTimeout = 10 * time.Second
	// DefaultAuthTimeout is how long an unauthenticated connection may
	// stay silent, and how long a remote one has to authenticate.
	DefaultAuthTimeout = 10 * time.Second

	brakeFree   = 3                      // failures before checks are spaced
	brakeFirst  = 250 * time.Millisecond // the first spacing
	brakeMax    = 8 * time.Second        // the largest spacing
	brakeForget = 15 * time.Minute       // failures are forgotten after this quiet
	logEvery    = time.Minute            // one summary line per peer and kind
)

// connClass is where a tracked connection stands.
type connClass int

const (
	classNew     connClass = iota // accepted, peer not known yet
	classPending                  // not authenticated
	classAuthed                   // authenticated, or no password
	classGone                     // closed to make room, or ended
)

// peerState is what the server knows of one peer.
type peerState struct {
	pending []*conn // in arrival order
	authed  int
	brake
}

// brake is one peer's password-check spacing: the rule of the GUI RPC
// server, shared with the web dashboard's login through Brake.
type brake struct {
	failures  int       // password failures not yet forgotten
	inflight  int       // checks booked, outcome not known yet
	lastFail  time.Time // the latest
	nextCheck time.Time // the earliest time the next password check may run
}

// reserve books the next check: how long to wait before running it, or
// ok false when checks are booked further ahead than maxWait (the attempt
// is then refused unchecked).
func (b *brake) reserve(now time.Time, maxWait time.Duration) (wait time.Duration, ok bool) {
	if b.failures > 0 && now.Sub(b.lastFail) > brakeForget {
		b.failures = 0
	}
	at := now
	if b.nextCheck.After(at) {
		at = b.nextCheck
	}
	if at.Sub(now) > maxWait {
		return 0, false
	}
	// A booked check counts as a failure until it is known: otherwise
	// many connections at once would all pass before the first fails.
	b.nextCheck = at.Add(brakeDelay(b.failures + b.inflight))
	b.inflight++
	return at.Sub(now), true
}

// checked records the outcome of a booked check.
func (b *brake) checked(ok bool, now time.Time) {
	b.inflight = max(b.inflight-1, 0)
	if ok {
		b.failures, b.nextCheck = 0, time.Time{}
		return
	}
	b.failures++
	b.lastFail = now
	if next := now.Add(brakeDelay(b.failures)); next.After(b.nextCheck) {
		b.nextCheck = next
	}
}

// quiet: nothing booked, nothing to remember.
func (b *brake) quiet(now time.Time) bool {
	return b.inflight == 0 && (b.failures == 0 || now.Sub(b.lastFail) > brakeForget) && !now.Before(b.nextCheck)
}

// brakeDelay is the spacing between password checks of a peer that
// failed n times.
func brakeDelay(n int) time.Duration {
	if n < brakeFree {
		return 0
	}
	d := brakeFirst
	for i := brakeFree; i < n && d < brakeMax; i++ {
		d *= 2
	}
	return min(d, brakeMax)
}

// peerKey names the peer behind a connection (see the comment above).
func (s *Server) peerKey(c net.Conn) string {
	ra, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return "local"
	}
	if ra.IP.IsLoopback() {
		la, ok := c.LocalAddr().(*net.TCPAddr)
		if ok {
			if uid, err := s.peerUID(ra, la); err == nil {
				return fmt.Sprintf("local uid %d", uid)
			}
		}
		return "local"
	}
	if ip4 := ra.IP.To4(); ip4 != nil {
		return ip4.String()
	}
	return (&net.IPNet{IP: ra.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

func (s *Server) peer(key string) *peerState {
	p := s.peers[key]
	if p == nil {
		p = &peerState{}
		s.peers[key] = p
	}
	return p
}

// dropPeer forgets a peer that holds nothing and has nothing to remember.
func (s *Server) dropPeer(key string, p *peerState, now time.Time) {
	if len(p.pending) == 0 && p.authed == 0 && p.brake.quiet(now) {
		delete(s.peers, key)
	}
}

// admit places a new connection in its pool, closing others to make
// room; it never refuses. Called with s.mu held.
func (s *Server) admit(cc *conn, now time.Time) {
	cc.lastActive = now
	if cc.authOK {
		s.addAuthed(cc)
		return
	}
	p := s.peer(cc.key)
	if len(p.pending) >= s.cfg.MaxPendingPerPeer {
		s.evict(victim(p), "pending connections of one peer at the limit")
	} else if s.npending >= s.cfg.MaxPending {
		// Make room at the expense of the peer holding the most.
		var big *peerState
		for _, q := range s.peers {
			if len(q.pending) > 0 && (big == nil || len(q.pending) > len(big.pending)) {
				big = q
			}
		}
		if big != nil {
			s.evict(victim(big), "pending connections at the limit")
		}
	}
	cc.class = classPending
	p.pending = append(p.pending, cc)
	s.npending++
}

// victim is the pending connection of p to close for room: the oldest
// that has not sent one whole request yet (idle, trickling), else the
// oldest. A client that has its first request answered (boinccmd's auth1)
// so outlives any number of silent or trickling connections of the same
// peer. Called with s.mu held.
func victim(p *peerState) *conn {
	for _, c := range p.pending {
		if c.requests == 0 {
			return c
		}
	}
	return p.pending[0]
}

// addAuthed moves cc to the authenticated pool, closing the connection
// idle longest when it is full. Called with s.mu held.
func (s *Server) addAuthed(cc *conn) {
	s.remove(cc)
	if s.nauthed >= s.cfg.MaxConns {
		var lru *conn
		for o := range s.conns {
			if o.class == classAuthed && (lru == nil || o.lastActive.Before(lru.lastActive)) {
				lru = o
			}
		}
		if lru != nil {
			s.evict(lru, "authenticated connections at the limit")
		}
	}
	cc.class = classAuthed
	s.peer(cc.key).authed++
	s.nauthed++
}

// remove takes cc out of its pool. Called with s.mu held.
func (s *Server) remove(cc *conn) {
	p := s.peers[cc.key]
	switch cc.class {
	case classPending:
		for i, o := range p.pending {
			if o == cc {
				p.pending = append(p.pending[:i], p.pending[i+1:]...)
				break
			}
		}
		s.npending--
	case classAuthed:
		p.authed--
		s.nauthed--
	}
	cc.class = classGone
	if p != nil {
		s.dropPeer(cc.key, p, time.Now())
	}
}

// evict closes cc to make room. Called with s.mu held.
func (s *Server) evict(cc *conn, why string) {
	s.remove(cc)
	_ = cc.c.Close()
	s.noteLocked("evicted", cc.key, why)
}

// reserveCheck books the next password check of a peer (brake.reserve).
func (s *Server) reserveCheck(key string, now time.Time, maxWait time.Duration) (wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	wait, ok = s.peer(key).reserve(now, maxWait)
	if !ok {
		s.noteLocked("throttled", key, "")
	}
	return wait, ok
}

// checked records the outcome of a password check.
func (s *Server) checked(key string, ok bool, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peer(key).brake.checked(ok, now)
	if !ok {
		s.noteLocked("auth_failed", key, "")
	}
}

// abandonCheck releases a booked check that never ran.
func (s *Server) abandonCheck(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.peer(key)
	p.inflight = max(p.inflight-1, 0)
}

// Brake spaces out password checks by peer exactly as the GUI RPC
// server does (the rule above: free for brakeFree failures, then a
// doubling spacing up to brakeMax, forgotten after brakeForget of quiet).
// The web dashboard's login uses it, so that its password is no easier
// to guess than GUI RPC's. Safe for concurrent use.
type Brake struct {
	mu    sync.Mutex
	peers map[string]*brake
}

// Reserve books the next check for peer key: wait that long, then check
// and call Checked (or Abandon). ok false: the peer's checks are booked
// too far ahead; refuse the attempt unchecked.
func (b *Brake) Reserve(key string, now time.Time) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.peers == nil {
		b.peers = map[string]*brake{}
	}
	if len(b.peers) > 4096 {
		for k, p := range b.peers {
			if p.quiet(now) {
				delete(b.peers, k)
			}
		}
	}
	p := b.peers[key]
	if p == nil {
		p = &brake{}
		b.peers[key] = p
	}
	return p.reserve(now, brakeMax)
}

// Checked records the outcome of a check booked with Reserve.
func (b *Brake) Checked(key string, ok bool, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[key]; p != nil {
		p.checked(ok, now)
		if p.quiet(now) {
			delete(b.peers, key)
		}
	}
}

// Abandon releases a check booked with Reserve that never ran.
func (b *Brake) Abandon(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.peers[key]; p != nil {
		p.inflight = max(p.inflight-1, 0)
	}
}

// PeerAllowed is the GUI RPC server's connect check (allowed): local
// peers, any peer when allowRemote, or one listed in hosts (IPs, or names
// resolved now with resolver, nil for the default). The web dashboard
// admits remote peers by the same rule.
func PeerAllowed(ctx context.Context, allowRemote bool, hosts []string, resolver *net.Resolver, peer net.IP) bool {
	if resolver == nil {
		resolver = net.DefaultResolver
	}
	return allowed(ctx, &Config{AllowRemote: allowRemote, AllowHosts: hosts, Resolver: resolver}, peer)
}

// A logNote counts events of one kind from one peer between log lines.
type logNote struct {
	count  int
	logged time.Time // the last line
	why    string
}

// noteLocked counts an event and logs it at once when this peer and kind
// had no line in the last minute; otherwise flushNotes reports the count.
// Called with s.mu held.
func (s *Server) noteLocked(kind, key, why string) {
	k := kind + "\x00" + key
	n := s.notes[k]
	if n == nil {
		n = &logNote{}
		s.notes[k] = n
	}
	n.count++
	if why != "" {
		n.why = why
	}
	now := time.Now()
	if now.Sub(n.logged) >= logEvery {
		s.logNote(kind, key, n)
		n.logged, n.count = now, 0
	}
}

func (s *Server) logNote(kind, key string, n *logNote) {
	attrs := []any{slog.String("peer", key), slog.Int("count", n.count)}
	if !n.logged.IsZero() {
		attrs = append(attrs, slog.Duration("since_last_report", time.Since(n.logged).Round(time.Second)))
	}
	switch kind {
	case "auth_failed":
		if p := s.peers[key]; p != nil {
			attrs = append(attrs, slog.Int("recent_failures", p.failures), slog.Duration("check_spacing", brakeDelay(p.failures)))
		}
		s.log.Warn("GUI RPC authentication failed", attrs...)
	case "throttled":
		s.log.Warn("GUI RPC password attempts refused unchecked: too many failures from this peer", attrs...)
	case "evicted":
		s.log.Warn("GUI RPC connections closed to make room", append(attrs, slog.String("reason", n.why))...)
	case "refused":
		s.log.Warn("GUI RPC connection refused: host not allowed", attrs...)
	case "timeout":
		s.log.Info("GUI RPC unauthenticated connections closed: too slow", attrs...)
	}
}

// flushNotes logs the counts gathered since each note's last line and
// forgets notes that stayed quiet.
func (s *Server) flushNotes(now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.notes))
	for k := range s.notes {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n := s.notes[k]
		if now.Sub(n.logged) < logEvery {
			continue
		}
		if n.count == 0 {
			delete(s.notes, k)
			continue
		}
		kind, key, _ := cut0(k)
		s.logNote(kind, key, n)
		n.logged, n.count = now, 0
	}
	for key, p := range s.peers {
		s.dropPeer(key, p, now)
	}
}

func cut0(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
