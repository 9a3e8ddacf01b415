package client

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultPort is BOINC's GUI RPC port (GUI_RPC_PORT).
	DefaultPort = 31416
	// DefaultAddr is where boinccmd looks by default.
	DefaultAddr = "127.0.0.1:31416"
	// ReplyTimeout is how long a reply may take, as in the C++ client
	// library (RPC_CLIENT's 30 s receive timeout).
	ReplyTimeout = 30 * time.Second
	// MaxReplySize bounds one reply. A get_state of a host with thousands
	// of tasks is a few MiB; anything far beyond that is not a BOINC client.
	MaxReplySize = 64 << 20

	terminator = '\003'
	replyOpen  = "<boinc_gui_rpc_reply>"
	replyClose = "</boinc_gui_rpc_reply>"
)

// ErrUnauthorized is returned when the client answers <unauthorized/>: a
// wrong password, or an op that needs authorization on an unauthorized
// connection.
var ErrUnauthorized = errors.New("unauthorized")

// ErrBroken is returned by calls on a connection whose previous exchange
// failed half-way: the stream position is unknown, so the connection
// cannot be reused. Dial again.
var ErrBroken = errors.New("connection unusable after an earlier failure")

// RPCError is an <error>TEXT</error> reply.
type RPCError struct {
	Op  string // the request's op, e.g. "project_update"
	Msg string // the client's text, e.g. "No such project"
}

func (e *RPCError) Error() string { return "guirpc: " + e.Op + ": " + e.Msg }

// Client is one GUI RPC connection. It is safe for concurrent use; calls
// are serialised because the protocol has no request ids.
type Client struct {
	addr string

	mu     sync.Mutex
	conn   net.Conn
	r      *bufio.Reader
	broken error
	// lastSize is the size of the last reply: the next one (a poller asks
	// the same again) is read into room for it at once rather than into a
	// slice doubled a dozen times (11 MB for a 10,000-task get_state).
	lastSize int
}

// Dial connects to a GUI RPC server. addr is "host", "host:port", "[v6]"
// or "[v6]:port"; the port defaults to 31416.
func Dial(ctx context.Context, addr string) (*Client, error) {
	full := NormalizeAddr(addr)
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", full)
	if err != nil {
		return nil, fmt.Errorf("guirpc: connect to %s: %w", full, err)
	}
	return &Client{addr: full, conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}, nil
}

// NormalizeAddr adds the default port to addr when it has none, and turns
// an empty addr into DefaultAddr.
func NormalizeAddr(addr string) string {
	addr = strings.TrimSpace(addr)
	if addr == "" {
		return DefaultAddr
	}
	if _, _, err := net.SplitHostPort(addr); err == nil {
		return addr
	}
	host := strings.TrimSuffix(strings.TrimPrefix(addr, "["), "]")
	return net.JoinHostPort(host, strconv.Itoa(DefaultPort))
}

// Addr is the address the client is connected to.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection. It does not wait for a call in progress:
// that call fails at once, and later calls fail too.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("guirpc: close %s: %w", c.addr, err)
	}
	return nil
}

// Call sends one request (the op element, e.g. "<get_state/>") and returns
// the reply body: what lies between <boinc_gui_rpc_reply> and
// </boinc_gui_rpc_reply>, with surrounding whitespace trimmed. A reply that
// is only <unauthorized/> gives ErrUnauthorized, one that is only
// <error>…</error> gives an *RPCError; the body is returned with both.
func (c *Client) Call(ctx context.Context, request string) ([]byte, error) {
	op := opName(request)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return nil, fmt.Errorf("guirpc: %s on %s: %w", op, c.addr, c.broken)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("guirpc: %s on %s: %w", op, c.addr, err)
	}
	raw, err := c.exchange(ctx, request)
	if err != nil {
		c.broken = ErrBroken
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return nil, fmt.Errorf("guirpc: %s on %s: %w", op, c.addr, err)
	}
	body, err := unwrapReply(raw)
	if err != nil {
		return nil, fmt.Errorf("guirpc: %s on %s: %w", op, c.addr, err)
	}
	if err := replyError(op, body); err != nil {
		if errors.Is(err, ErrUnauthorized) {
			return body, fmt.Errorf("guirpc: %s on %s: %w", op, c.addr, ErrUnauthorized)
		}
		return body, err
	}
	return body, nil
}

// exchange writes the framed request and reads up to the terminator. The
// deadline is the earlier of the reply timeout and ctx's deadline;
// cancelling ctx moves it to the past so a blocked read returns at once.
func (c *Client) exchange(ctx context.Context, request string) ([]byte, error) {
	deadline := time.Now().Add(ReplyTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.conn.SetDeadline(deadline); err != nil {
		return nil, fmt.Errorf("set deadline: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { _ = c.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	msg := make([]byte, 0, len(request)+64)
	msg = append(msg, "<boinc_gui_rpc_request>\n"...)
	msg = append(msg, request...)
	msg = append(msg, "\n</boinc_gui_rpc_request>\n\003"...)
	if _, err := c.conn.Write(msg); err != nil {
		return nil, fmt.Errorf("send request: %w", err)
	}
	reply := make([]byte, 0, min(c.lastSize+c.lastSize/8, MaxReplySize))
	for {
		chunk, err := c.r.ReadSlice(terminator)
		if len(reply)+len(chunk) > MaxReplySize {
			return nil, fmt.Errorf("reply larger than %d bytes", MaxReplySize)
		}
		reply = append(reply, chunk...)
		switch {
		case err == nil:
			c.lastSize = len(reply)
			return reply[:len(reply)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, fmt.Errorf("read reply (%d bytes so far): %w", len(reply), err)
		}
	}
}

// unwrapReply strips the reply envelope. The C++ client writes no XML
// declaration, the HTTP variant does; both are accepted.
func unwrapReply(raw []byte) ([]byte, error) {
	s := bytes.TrimSpace(raw)
	if bytes.HasPrefix(s, []byte("<?xml")) {
		if i := bytes.Index(s, []byte("?>")); i >= 0 {
			s = bytes.TrimSpace(s[i+2:])
		}
	}
	if !bytes.HasPrefix(s, []byte(replyOpen)) {
		return nil, fmt.Errorf("reply does not start with %s: %q", replyOpen, snippet(s))
	}
	s = s[len(replyOpen):]
	end := bytes.LastIndex(s, []byte(replyClose))
	if end < 0 {
		return nil, fmt.Errorf("reply has no %s (%d bytes)", replyClose, len(raw))
	}
	return bytes.TrimSpace(s[:end]), nil
}

// replyError recognises replies that are only an error. Checking the start
// of the body (not a substring search) keeps an "<error>" inside a message
// text or a result's stderr from being taken for one.
func replyError(op string, body []byte) error {
	switch {
	case bytes.HasPrefix(body, []byte("<unauthorized/>")), bytes.HasPrefix(body, []byte("<unauthorized>")):
		return ErrUnauthorized
	case bytes.HasPrefix(body, []byte("<error>")), bytes.HasPrefix(body, []byte("<error/>")):
		msg := string(body)
		msg = strings.TrimPrefix(msg, "<error/>")
		msg = strings.TrimPrefix(msg, "<error>")
		if i := strings.Index(msg, "</error>"); i >= 0 {
			msg = msg[:i]
		}
		return &RPCError{Op: op, Msg: unescape(strings.TrimSpace(msg))}
	}
	return nil
}

// Authorize runs the auth1/auth2 handshake: the client sends a nonce and
// expects md5(nonce + password) back. A wrong password gives
// ErrUnauthorized (and the server closes the connection).
func (c *Client) Authorize(ctx context.Context, password string) error {
	body, err := c.Call(ctx, "<auth1/>")
	if err != nil {
		return err
	}
	nonce, ok := elementText(body, "nonce")
	if !ok {
		return fmt.Errorf("guirpc: authorize on %s: auth1 reply has no <nonce>: %q", c.addr, snippet(body))
	}
	sum := md5.Sum([]byte(nonce + password))
	body, err = c.Call(ctx, "<auth2>\n<nonce_hash>"+hex.EncodeToString(sum[:])+"</nonce_hash>\n</auth2>")
	if err != nil {
		return err
	}
	if !bytes.Contains(body, []byte("<authorized/>")) {
		return fmt.Errorf("guirpc: authorize on %s: unexpected auth2 reply %q", c.addr, snippet(body))
	}
	return nil
}

// opName is the first element name of a request, for error messages.
func opName(request string) string {
	s := strings.TrimSpace(request)
	if !strings.HasPrefix(s, "<") {
		return "request"
	}
	s = s[1:]
	end := strings.IndexAny(s, " />\n\t\r")
	if end <= 0 {
		return "request"
	}
	return s[:end]
}

// elementText returns the trimmed text of the first <name>…</name> in b.
func elementText(b []byte, name string) (string, bool) {
	openTag, closeTag := []byte("<"+name+">"), []byte("</"+name+">")
	i := bytes.Index(b, openTag)
	if i < 0 {
		return "", false
	}
	rest := b[i+len(openTag):]
	j := bytes.Index(rest, closeTag)
	if j < 0 {
		return "", false
	}
	return string(bytes.TrimSpace(rest[:j])), true
}

func snippet(b []byte) string {
	const max = 120
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&apos;", "'", "&#39;", "'", "&amp;", "&")

func unescape(s string) string { return unescaper.Replace(s) }
