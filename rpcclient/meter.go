package rpcclient

import (
	"io"
	"sync"
	"time"
)

// Meter measures one file transfer for the client's measured rates
// (<net_stats>): the body bytes that crossed the network and how long
// they took. Like the C++ client (curl's total time less its time to the
// first byte), a download counts from its response's arrival, so neither
// connecting nor the server's think time makes the link look slow; an
// upload counts from its body's first byte to the reply. Attempts add up.
// Its methods are safe from the transport's goroutines; a nil Meter
// measures nothing.
type Meter struct {
	mu         sync.Mutex
	bytes      int64
	busy       time.Duration // closed attempts
	start, end time.Time     // the current attempt
}

// begin starts an attempt, closing the one before.
func (m *Meter) begin() {
	if m == nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.busy += m.end.Sub(m.start)
	m.start, m.end = now, now
}

// add counts n bytes moved now.
func (m *Meter) add(n int) {
	if m == nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.start.IsZero() {
		m.start = now
	}
	m.bytes += int64(n)
	m.end = now
}

// finish marks the current attempt's end (an upload's reply arrived).
func (m *Meter) finish() {
	if m == nil {
		return
	}
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.start.IsZero() {
		m.end = now
	}
}

// Measured returns the bytes moved and the time they took.
func (m *Meter) Measured() (int64, time.Duration) {
	if m == nil {
		return 0, 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bytes, m.busy + m.end.Sub(m.start)
}

// meteredReader counts an upload body's bytes; its first read starts the
// attempt, as the body is rebuilt for every attempt.
type meteredReader struct {
	r       io.Reader
	m       *Meter
	started bool
}

func (r *meteredReader) Read(p []byte) (int, error) {
	if !r.started {
		r.started = true
		r.m.begin()
	}
	n, err := r.r.Read(p)
	if n > 0 {
		r.m.add(n)
	}
	return n, err
}
