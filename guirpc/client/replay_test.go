package client

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// replayServer answers each request with the next canned reply, the way
// the captured C++ client answered boinccmd. It records what it received
// and hangs up when it runs out of replies.
type replayServer struct {
	ln     net.Listener
	frames [][]byte
	// gotRequest, when set, receives each request as it arrives (the
	// server then waits for release before answering).
	gotRequest chan string
	release    chan struct{}

	mu       sync.Mutex
	requests []string
	next     int
	wg       sync.WaitGroup
}

// fixtureFrames splits testdata/NAME.s2c.bin (or .c2s.bin) into messages,
// each with its \003 terminator.
func fixtureFrames(t *testing.T, file string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, terminator)
		if i < 0 {
			t.Fatalf("%s: trailing bytes without terminator", file)
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}

func startReplay(t *testing.T, frames [][]byte) *replayServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replayServer{ln: ln, frames: frames}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() {
		_ = ln.Close()
		s.wg.Wait()
	})
	return s
}

func (s *replayServer) addr() string { return s.ln.Addr().String() }

func (s *replayServer) serve() {
	defer s.wg.Done()
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for {
		conn, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, conn)
		s.wg.Add(1)
		go s.handle(conn)
	}
}

func (s *replayServer) handle(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	r := bufio.NewReader(conn)
	for {
		req, err := r.ReadBytes(terminator)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, string(req))
		var reply []byte
		if s.next < len(s.frames) {
			reply = s.frames[s.next]
			s.next++
		}
		s.mu.Unlock()
		if s.gotRequest != nil {
			s.gotRequest <- string(req)
			<-s.release
		}
		if reply == nil {
			return
		}
		if _, err := conn.Write(reply); err != nil {
			return
		}
		// A frame without its terminator simulates a server dying
		// mid-reply.
		if reply[len(reply)-1] != terminator {
			return
		}
	}
}

func (s *replayServer) received() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func TestFixtureFramesSplit(t *testing.T) {
	frames := fixtureFrames(t, "get_cc_status.s2c.bin")
	if len(frames) != 3 {
		t.Fatalf("got %d frames, want 3 (nonce, authorized, cc_status)", len(frames))
	}
}
