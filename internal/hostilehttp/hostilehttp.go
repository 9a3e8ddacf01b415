// Package hostilehttp provides HTTP handlers that misbehave the way a
// broken or malicious BOINC project server could: replies that never end,
// that drip a byte at a time, that hang after the headers, that lie in
// Content-Length, gzip bombs, redirect loops and downgrades, and upload
// handlers that lie about what they hold. Tests put them in front of a real
// client (rpcclient, the daemon) on 127.0.0.1 to check that every such
// server costs bounded time, memory and disk.
//
// Every handler returns when the request's context ends (the client went
// away or the server closed), so httptest.Server.Close never waits on one.
// Handlers count what they did in a Counter, which tests read to state
// figures (bytes sent, requests served).
package hostilehttp

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"time"
)

// Counter records what a handler did; safe for concurrent use.
type Counter struct {
	requests atomic.Int64
	bytes    atomic.Int64
}

// Requests is how many requests the handler served.
func (c *Counter) Requests() int64 { return c.requests.Load() }

// Bytes is how many body bytes the handler wrote to the network (before
// any client-side decompression).
func (c *Counter) Bytes() int64 { return c.bytes.Load() }

func (c *Counter) request() {
	if c != nil {
		c.requests.Add(1)
	}
}

func (c *Counter) add(n int) {
	if c != nil && n > 0 {
		c.bytes.Add(int64(n))
	}
}

// Drip sends a 200 reply whose body is Prefix at once, then Rest followed
// by Filler bytes, Chunk bytes every Interval, until Total body bytes were
// sent (Total < 0: never stops). Without a Content-Length the reply is chunked, so the
// client cannot know when it would end.
type Drip struct {
	Prefix   []byte
	Rest     []byte
	Filler   byte
	Chunk    int
	Interval time.Duration
	Total    int64
	// ContentLength, when positive, is declared in the header.
	ContentLength int64
	Count         *Counter
}

func (d Drip) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.Count.request()
	drain(r)
	if d.ContentLength > 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(d.ContentLength, 10))
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	var sent int64
	write := func(p []byte) bool {
		if d.Total >= 0 && sent+int64(len(p)) > d.Total {
			p = p[:d.Total-sent]
		}
		n, err := w.Write(p)
		d.Count.add(n)
		sent += int64(n)
		if fl != nil {
			fl.Flush()
		}
		return err == nil && (d.Total < 0 || sent < d.Total)
	}
	if len(d.Prefix) > 0 && !write(d.Prefix) {
		return
	}
	size := max(d.Chunk, 1)
	filler := bytes.Repeat([]byte{d.Filler}, size)
	rest := d.Rest
	t := time.NewTicker(max(d.Interval, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			chunk := filler
			if len(rest) > 0 {
				chunk = rest[:min(size, len(rest))]
				rest = rest[len(chunk):]
			}
			if !write(chunk) {
				return
			}
		}
	}
}

// Hang holds the request until the client gives up. With Headers set it
// first sends a 200 status and headers (and Prefix), so the client is past
// connecting and waits on the body; otherwise nothing at all is sent.
type Hang struct {
	Headers bool
	Prefix  []byte
	Count   *Counter
}

func (h Hang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.Count.request()
	drain(r)
	if h.Headers {
		w.WriteHeader(http.StatusOK)
		n, _ := w.Write(h.Prefix)
		h.Count.add(n)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	<-r.Context().Done()
}

// WrongLength answers with Body but declares ContentLength, which may be
// shorter or longer than Body. net/http refuses to send such a reply, so it
// is written by hand on the hijacked connection, which is then closed.
type WrongLength struct {
	Body          []byte
	ContentLength int64
	Count         *Counter
}

func (wl WrongLength) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	wl.Count.request()
	drain(r)
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "hostilehttp: connection cannot be hijacked (HTTP/2?)", http.StatusInternalServerError)
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n", wl.ContentLength)
	n, _ := buf.Write(wl.Body)
	wl.Count.add(n)
	_ = buf.Flush()
}

// GzipBomb answers with Content-Encoding: gzip and a body that inflates to
// Inflated bytes of zeros (rounded up to whole MiB). The stream is a
// sequence of identical gzip members, each 1 MiB of zeros compressed to
// about 1 KiB, so the server spends almost nothing: 1 GiB costs about
// 1 MiB on the wire.
type GzipBomb struct {
	Inflated int64
	Count    *Counter
}

// bombMember is one gzip member inflating to 1 MiB of zeros; compressing
// it takes a few milliseconds, so it is simply rebuilt per request.
func bombMember() []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(make([]byte, 1<<20))
	_ = zw.Close()
	return b.Bytes()
}

// BombMemberSize is the compressed size of one 1 MiB member of GzipBomb.
func BombMemberSize() int { return len(bombMember()) }

func (g GzipBomb) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.Count.request()
	drain(r)
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	member := bombMember()
	bw := bufio.NewWriterSize(w, 64<<10)
	for left := g.Inflated; left > 0; left -= 1 << 20 {
		if r.Context().Err() != nil {
			return
		}
		n, err := bw.Write(member)
		g.Count.add(n)
		if err != nil {
			return
		}
	}
	_ = bw.Flush()
}

// Redirect answers every request with Code (default 302) to To. With Loop
// set, To is ignored and each answer points to the same path with a
// counter query appended, so a client following it never arrives.
type Redirect struct {
	To    string
	Code  int
	Loop  bool
	Count *Counter
}

func (rd Redirect) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rd.Count.request()
	drain(r)
	code := rd.Code
	if code == 0 {
		code = http.StatusFound
	}
	to := rd.To
	if rd.Loop {
		n, _ := strconv.Atoi(r.URL.Query().Get("hop"))
		to = r.URL.Path + "?hop=" + strconv.Itoa(n+1)
	}
	w.Header().Set("Location", to)
	w.WriteHeader(code)
}

// FirstN serves the first N requests with Bad and every later one with
// Good: a server that misbehaves, then recovers.
type FirstN struct {
	N    int64
	Bad  http.Handler
	Good http.Handler
	seen atomic.Int64
}

func (f *FirstN) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.seen.Add(1) <= f.N {
		f.Bad.ServeHTTP(w, r)
		return
	}
	f.Good.ServeHTTP(w, r)
}

// LyingUploadHandler sits in front of a real file_upload_handler (Next)
// and answers every <get_file_size> query itself: <file_size> is
// FileSize(k) for the k-th query (from 1), any text at all. Data uploads
// pass through to Next, or get NextReply when Next is nil.
type LyingUploadHandler struct {
	FileSize func(call int) string
	Next     http.Handler
	// NextReply answers data uploads when Next is nil.
	NextReply string
	Count     *Counter
	queries   atomic.Int64
}

// Queries is how many size queries were answered with a lie.
func (l *LyingUploadHandler) Queries() int64 { return l.queries.Load() }

func (l *LyingUploadHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.Count.request()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "read request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if bytes.Contains(body, []byte("<get_file_size>")) && !bytes.Contains(body, []byte("<data>")) {
		n := l.queries.Add(1)
		reply := "<data_server_reply>\n    <status>0</status>\n    <file_size>" + l.FileSize(int(n)) + "</file_size>\n</data_server_reply>\n"
		k, _ := io.WriteString(w, reply)
		l.Count.add(k)
		return
	}
	if l.Next == nil {
		k, _ := io.WriteString(w, l.NextReply)
		l.Count.add(k)
		return
	}
	// Hand the request on with the bytes already read put back; the
	// prefix read is at most 1 MiB and the rest is still on the wire.
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	l.Next.ServeHTTP(w, r2)
}

// drain reads (a bounded part of) the request body so that a client
// sending one is not stuck before it reads the reply.
func drain(r *http.Request) {
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
}

// Mangle serves a hostile version of what Next would serve: Next's full
// body (any Range request header removed) is handed to Bad, which returns
// the handler that serves it, e.g. a WrongLength or Drip over the real
// file, so a client can be checked to resume or reject the real bytes.
type Mangle struct {
	Next http.Handler
	Bad  func(body []byte) http.Handler
}

func (m Mangle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	full := r.Clone(r.Context())
	full.Header.Del("Range")
	m.Next.ServeHTTP(rec, full)
	if rec.Code != http.StatusOK {
		w.WriteHeader(rec.Code)
		return
	}
	m.Bad(rec.Body.Bytes()).ServeHTTP(w, r)
}

// Toggle serves with Bad until Heal is called, then with Good: a server
// that misbehaves until its operator fixes it.
type Toggle struct {
	Bad    http.Handler
	Good   http.Handler
	healed atomic.Bool
}

// Heal switches every later request to Good.
func (t *Toggle) Heal() { t.healed.Store(true) }

func (t *Toggle) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if t.healed.Load() {
		t.Good.ServeHTTP(w, r)
		return
	}
	t.Bad.ServeHTTP(w, r)
}
