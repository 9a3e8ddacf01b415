package guirpc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// fuzzCaptures returns the boinccmd → client request streams of the
// BOINC 7.20 captures, found upwards from the package directory in
// testdata/ at the module root.
func fuzzCaptures() [][]byte {
	dir, _ := os.Getwd()
	for range 6 {
		names, _ := filepath.Glob(filepath.Join(dir, "testdata", "boinc-7.20", "guirpc", "*.c2s.bin"))
		if len(names) > 0 {
			var out [][]byte
			for _, n := range names {
				if b, err := os.ReadFile(n); err == nil {
					out = append(out, b)
				}
			}
			return out
		}
		dir = filepath.Dir(dir)
	}
	return nil
}

var fuzzRequestSeeds = []string{
	"<boinc_gui_rpc_request>\n<auth1/>\n</boinc_gui_rpc_request>\n\x03<boinc_gui_rpc_request>\n<auth2>\n<nonce_hash>00</nonce_hash>\n</auth2>\n</boinc_gui_rpc_request>\n\x03",
	"<boinc_gui_rpc_request><get_results><active_only>1</active_only></get_results></boinc_gui_rpc_request>\x03",
	"<get_messages><seqno>-5</seqno><translatable/></get_messages>\x03<get_message_count/>\x03",
	"<project_attach><project_url>http://a/</project_url><authenticator>k&amp;</authenticator><project_name><![CDATA[x]]></project_name></project_attach>\x03",
	"<set_global_prefs_override><global_preferences><a>1</a></global_preferences></set_global_prefs_override>\x03",
	"<set_run_mode><always/><duration>1e300</duration></set_run_mode>\x03<set_network_mode><never/><duration>nan</duration></set_network_mode>\x03",
	"<abort_result><project_url>http://127.0.0.1:18080/</project_url><name>r</name></abort_result>\x03",
	"<retry_file_transfer><project_url>x</project_url><filename>../f</filename></retry_file_transfer>\x03",
	"<a><b><c></c></b>\x03", "<!DOCTYPE x [<!ENTITY e \"e\">]><get_state/>\x03", "\x03\x03\x03", "<quit/>\x03", "<get_state",
}

// FuzzParseRequest: the request decoder returns a request with an op or
// an error naming where the message broke, whatever the bytes; the raw
// inner XML of an op is a part of the message.
func FuzzParseRequest(f *testing.F) {
	for _, b := range fuzzCaptures() {
		for _, m := range bytes.Split(b, []byte{3}) {
			f.Add(m)
		}
	}
	for _, s := range fuzzRequestSeeds {
		f.Add([]byte(strings.Split(s, "\x03")[0]))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		req, err := parseRequest(msg)
		if err != nil {
			if req != nil {
				t.Fatal("request and error both returned")
			}
			if !errors.Is(err, errNoOp) && !strings.HasPrefix(err.Error(), "malformed request") {
				t.Fatalf("error %q does not say what is wrong", err)
			}
			return
		}
		if req.op == "" || req.op == "boinc_gui_rpc_request" {
			t.Fatalf("op %q accepted from %q", req.op, msg)
		}
		if inner, ok := req.innerXML(); ok && !bytes.Contains(msg, []byte(inner)) {
			t.Fatalf("inner XML %q is not part of %q", inner, msg)
		}
	})
}

// fuzzConn is a net.Conn whose reads come from a byte string in chunks of
// a fuzzed size, standing for a peer that sends anything in any pieces.
type fuzzConn struct {
	net.Conn // nil: only Read and SetReadDeadline are used
	data     []byte
	chunk    int
}

func (c *fuzzConn) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.chunk, len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *fuzzConn) SetReadDeadline(time.Time) error { return nil }

// FuzzServeMessages runs a whole byte stream through the server side of a
// connection: the \003 framing reader (fed in arbitrary pieces), the
// request decoder, the auth1/auth2 state machine and every op handler,
// against a fixed state. Each reply must be well-formed XML, an
// unauthenticated remote peer must never get past <unauthorized/>, and
// framing must give back exactly the bytes sent.
func FuzzServeMessages(f *testing.F) {
	for _, b := range fuzzCaptures() {
		f.Add(b, uint16(4096), true, false)
		f.Add(b, uint16(7), false, true)
	}
	for _, s := range fuzzRequestSeeds {
		f.Add([]byte(s), uint16(3), true, true)
		f.Add([]byte(s), uint16(4096), false, false)
	}
	be := &fuzzBackend{st: richState()}
	srv, err := Listen(Config{Addr: "127.0.0.1:0", Backend: be, Password: "refguipass",
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint16, local, authed bool) {
		be.bad = ""
		defer func() {
			if be.bad != "" {
				t.Fatal(be.bad)
			}
		}()
		fc := &fuzzConn{data: stream, chunk: int(chunk)%8192 + 1}
		mr := &msgReader{c: fc}
		cc := &conn{s: srv, c: fc, local: local, peer: "fuzz", key: "fuzz", authOK: authed}
		srv.mu.Lock()
		clear(srv.peers) // no password brake carried between inputs
		srv.mu.Unlock()
		var framed []byte
		for {
			msg, err := mr.next(time.Second, time.Second, time.Time{})
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, errTooLong) {
					t.Fatalf("framing error %v", err)
				}
				break
			}
			framed = append(append(framed, msg...), 3)
			reply, after, herr := cc.handle(ctx, msg)
			if reply != nil {
				wellFormed(t, reply)
			}
			if !local && !cc.authOK && reply != nil && !bytes.HasPrefix(reply, []byte("<unauthorized/>")) &&
				!bytes.HasPrefix(reply, []byte("<nonce>")) && !bytes.HasPrefix(reply, []byte("<error>")) {
				t.Fatalf("unauthenticated remote peer got %q for %q", reply, msg)
			}
			if after != nil {
				after(ctx)
			}
			if herr != nil {
				break
			}
		}
		if !bytes.HasPrefix(stream, framed) {
			t.Fatalf("framing returned %q, not a prefix of the stream", framed)
		}
	})
}

// fuzzBackend serves a fixed state and checks the actions the server
// passes on: what reaches the daemon must be usable as it is.
type fuzzBackend struct {
	st  *State
	bad string // the first unusable action of the current input
}

func (b *fuzzBackend) Snapshot(context.Context, Parts) (*State, error) { cp := *b.st; return &cp, nil }

func (b *fuzzBackend) Do(_ context.Context, a Action) error {
	if m, ok := a.(SetMode); ok {
		// The daemon turns the duration into a time.Duration.
		if !(m.Duration >= 0) || math.IsInf(m.Duration, 0) || time.Duration(m.Duration*float64(time.Second)) < 0 {
			b.bad = fmt.Sprintf("SetMode duration %v passed to the backend", m.Duration)
		}
	}
	return nil
}

// controlRef is a character reference to a control character: escape
// writes them as BOINC's xml_escape does, and BOINC's parsers turn them
// back into the byte, though XML 1.0 does not allow them.
var controlRef = regexp.MustCompile(`&#(?:[0-8]|1[0-9]|2[0-9]|3[01]|127);`)

// wellFormed checks a reply is UTF-8 XML, control references aside.
func wellFormed(t *testing.T, reply []byte) {
	t.Helper()
	if !utf8.Valid(reply) {
		t.Fatalf("reply is not UTF-8: %q", reply)
	}
	d := xml.NewDecoder(bytes.NewReader(controlRef.ReplaceAll(reply, []byte(" "))))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("reply is not well-formed XML: %v\n%s", err, reply)
		}
	}
}
