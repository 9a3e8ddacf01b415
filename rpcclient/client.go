package rpcclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
	"github.com/hashicorp/go-retryablehttp"
)

// Options configures a Client. Zero values take the defaults noted.
type Options struct {
	// MaxReplyBytes caps master pages, scheduler replies and upload-handler
	// replies (default 16 MiB); a longer reply is an error, not truncated.
	MaxReplyBytes int64
	// StallTimeout aborts a request that receives (or, for uploads, sends)
	// no byte for that long (default 5 min, the C++ client's
	// http_transfer_timeout). It is also the window of the low-speed rule
	// (MinBytesPerSec).
	StallTimeout time.Duration
	// MinBytesPerSec is the C++ client's CURLOPT_LOW_SPEED_LIMIT: a
	// request that moves fewer than MinBytesPerSec·StallTimeout bytes in
	// any StallTimeout window is aborted with a StallError, so a server
	// dripping a byte a second cannot hold a transfer forever (default 10;
	// negative disables the rule, leaving only "no byte at all").
	MinBytesPerSec int64
	// ReplyTimeout bounds the whole of a request whose reply is read into
	// memory (master page, scheduler RPC, upload-handler exchange), from
	// connecting to the last reply byte: a server sending fast enough to
	// pass the low-speed rule but never finishing is cut off (default
	// twice StallTimeout). Downloads and uploads are not bounded in total:
	// their size is, and so their time by the low-speed rule.
	ReplyTimeout time.Duration
	// RPCTimeout bounds the reply of a scheduler RPC or master-page fetch
	// much more tightly than ReplyTimeout, because the daemon makes one
	// such exchange at a time and a slow server would hold up every other
	// project's: from the first reply byte, the reply must be whole within
	// RPCTimeout plus one second for every RPCBytesPerSec bytes the
	// exchange moved (request and reply), and never later than
	// ReplyTimeout after the request began. A server that trickles (2 B/s,
	// or anything well under RPCBytesPerSec) is cut off about RPCTimeout
	// after it began to answer; a large reply over a slow link earns the
	// time it needs while it keeps arriving at RPCBytesPerSec or more.
	// Before the first reply byte only the C++ client's rules apply (the
	// StallTimeout window and ReplyTimeout): a busy project's scheduler
	// may think for minutes before it answers, and the C++ client waits
	// for it (issue 28). Default 60 s; negative: ReplyTimeout only.
	RPCTimeout time.Duration
	// RPCBytesPerSec is the rate at which an RPC earns time beyond
	// RPCTimeout (default 4096, a 32 kbit/s link).
	RPCBytesPerSec int64
	// Platform is the primary platform the User-Agent names, as the C++
	// client's "BOINC client (PLATFORM 7.20.5)" (http_curl.cpp); default
	// this build's (platform.This).
	Platform string
	// MaxRedirects bounds the redirects followed per request (default 10,
	// Go's own default). Redirects to a scheme other than http or https,
	// and from https to http, are refused whatever the count.
	MaxRedirects int
	// Proxy picks the proxy of each request (see ProxyFunc); nil uses the
	// environment's.
	Proxy func(*http.Request) (*url.URL, error)
	// RootCAs verifies https servers; nil uses the system roots. See
	// LoadCABundle for the system roots plus a private CA file. TLS 1.2 is
	// the minimum version; certificate verification cannot be turned off.
	RootCAs *x509.CertPool
	// ConnectTimeout bounds TCP connection setup (default 120 s, as the C++
	// client). Ignored when HTTPClient is set.
	ConnectTimeout time.Duration
	// Logger receives debug records about requests and retries (default:
	// discard).
	Logger *slog.Logger
	// HTTPClient replaces the default transport, e.g. in tests (RootCAs
	// and ConnectTimeout are then ignored). A copy is used, with the
	// redirect policy above unless it has its own CheckRedirect.
	HTTPClient *http.Client
}

// Client talks to BOINC project servers. It is safe for concurrent use.
type Client struct {
	rc       *retryablehttp.Client
	log      *slog.Logger
	maxReply int64
	// lim is read once by each request as it starts and replaced whole
	// by SetTransferLimits, so a change never alters a request in flight.
	lim        atomic.Pointer[xferLimits]
	replyFixed time.Duration // Options.ReplyTimeout as given (0: twice the stall timeout)
	rpcTimeout time.Duration
	rpcRate    int64
	userAgent  string
}

const (
	defaultMaxReplyBytes  = 16 << 20
	defaultStallTimeout   = 5 * time.Minute
	defaultConnectTimeout = 120 * time.Second
	defaultMinBytesPerSec = 10
	defaultMaxRedirects   = 10
	defaultRPCTimeout     = 60 * time.Second
	defaultRPCBytesPerSec = 4096
	// postContentType is what libcurl puts on the C++ client's raw POSTs
	// (http/http_requests_log.txt); servers are tested against it.
	postContentType = "application/x-www-form-urlencoded"
)

// New builds a Client.
func New(o Options) *Client {
	if o.MaxReplyBytes <= 0 {
		o.MaxReplyBytes = defaultMaxReplyBytes
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = defaultStallTimeout
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultConnectTimeout
	}
	switch {
	case o.MinBytesPerSec == 0:
		o.MinBytesPerSec = defaultMinBytesPerSec
	case o.MinBytesPerSec < 0:
		o.MinBytesPerSec = 0
	}
	replyFixed := max(o.ReplyTimeout, 0)
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = defaultMaxRedirects
	}
	switch {
	case o.RPCTimeout == 0:
		o.RPCTimeout = defaultRPCTimeout
	case o.RPCTimeout < 0:
		o.RPCTimeout = 0
	}
	if o.RPCBytesPerSec <= 0 {
		o.RPCBytesPerSec = defaultRPCBytesPerSec
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var hc *http.Client
	if o.HTTPClient != nil {
		cp := *o.HTTPClient
		hc = &cp
	} else {
		proxy := o.Proxy
		if proxy == nil {
			proxy = http.ProxyFromEnvironment
		}
		hc = &http.Client{Transport: &http.Transport{
			Proxy: proxy,
			DialContext: (&net.Dialer{
				Timeout:   o.ConnectTimeout,
				KeepAlive: 30 * time.Second,
			}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          32,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   o.ConnectTimeout,
			ExpectContinueTimeout: time.Second,
			// The C++ client verifies peers against its CA bundle and so
			// do we; there is deliberately no way to skip verification.
			TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: o.RootCAs},
		}}
	}
	if hc.CheckRedirect == nil {
		hc.CheckRedirect = redirectPolicy(o.MaxRedirects)
	}
	rc := &retryablehttp.Client{
		HTTPClient: hc,
		Logger:     slogAdapter{log},
		// Only quick transport-level retries: the daemon's own backoff
		// (minutes to hours) handles everything longer.
		RetryMax:     2,
		RetryWaitMin: 500 * time.Millisecond,
		RetryWaitMax: 2 * time.Second,
		CheckRetry:   checkRetry,
		Backoff:      retryablehttp.DefaultBackoff,
		// Hand back the last response so its status can be classified.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	c := &Client{
		rc:         rc,
		log:        log,
		maxReply:   o.MaxReplyBytes,
		replyFixed: replyFixed,
		rpcTimeout: o.RPCTimeout,
		rpcRate:    o.RPCBytesPerSec,
		userAgent:  userAgent(o.Platform),
	}
	c.lim.Store(c.limits(o.StallTimeout, o.MinBytesPerSec))
	return c
}

// userAgent is the C++ client's User-Agent (http_curl.cpp
// get_user_agent_string): the primary platform and the version.
func userAgent(primary string) string {
	if primary == "" {
		primary = platform.This()
	}
	return "BOINC client (" + primary + " " + clientVersionString() + ")"
}

// xferLimits are the low-speed rule's parameters (Options.StallTimeout,
// MinBytesPerSec) and the reply bound derived from them.
type xferLimits struct {
	stallTimeout time.Duration
	minSpeed     int64
	replyTimeout time.Duration
}

func (c *Client) limits(stall time.Duration, minBytesPerSec int64) *xferLimits {
	l := &xferLimits{stallTimeout: stall, minSpeed: max(minBytesPerSec, 0), replyTimeout: c.replyFixed}
	if l.replyTimeout <= 0 {
		l.replyTimeout = 2 * stall
	}
	return l
}

// SetTransferLimits changes StallTimeout and MinBytesPerSec (the C++
// client's http_transfer_timeout and http_transfer_timeout_bps, which a
// re-read of cc_config.xml may change) for requests started from now on;
// those in flight keep the limits they started with. Zero values take
// the defaults, as in Options.
func (c *Client) SetTransferLimits(stall time.Duration, minBytesPerSec int64) {
	if stall <= 0 {
		stall = defaultStallTimeout
	}
	switch {
	case minBytesPerSec == 0:
		minBytesPerSec = defaultMinBytesPerSec
	case minBytesPerSec < 0:
		minBytesPerSec = 0
	}
	c.lim.Store(c.limits(stall, minBytesPerSec))
}

// TransferLimits are the limits new requests get.
func (c *Client) TransferLimits() (stall time.Duration, minBytesPerSec int64) {
	l := c.lim.Load()
	return l.stallTimeout, l.minSpeed
}

// slogAdapter routes retryablehttp's logging to slog at debug level.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Error(msg string, kv ...interface{}) { a.l.Debug("http: "+msg, kv...) }
func (a slogAdapter) Info(msg string, kv ...interface{})  { a.l.Debug("http: "+msg, kv...) }
func (a slogAdapter) Debug(msg string, kv ...interface{}) { a.l.Debug("http: "+msg, kv...) }
func (a slogAdapter) Warn(msg string, kv ...interface{})  { a.l.Debug("http: "+msg, kv...) }

// HTTPError is a non-2xx answer.
type HTTPError struct {
	StatusCode int
	URL        string
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("%s: HTTP %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
}

// Permanent follows the C++ client: 5xx is transient, any other failure
// status permanent, except the statuses that explicitly ask to come back.
func (e *HTTPError) Permanent() bool {
	switch {
	case e.StatusCode >= 500:
		return false
	case e.StatusCode == http.StatusRequestTimeout, e.StatusCode == http.StatusTooManyRequests,
		e.StatusCode == http.StatusTooEarly:
		return false
	}
	return true
}

// StallError: no byte moved for the stall timeout, or (MinBytes > 0)
// fewer than MinBytes moved in one stall-timeout window.
type StallError struct {
	URL      string
	Timeout  time.Duration
	MinBytes int64
	Moved    int64
}

func (e *StallError) Error() string {
	if e.MinBytes > 0 {
		return fmt.Sprintf("%s: transfer stalled (too slow: %d bytes in %s, minimum %d)", e.URL, e.Moved, e.Timeout, e.MinBytes)
	}
	return fmt.Sprintf("%s: transfer stalled (no data for %s)", e.URL, e.Timeout)
}

// ReplyTimeoutError: a reply was still incomplete after Options.ReplyTimeout
// or, for an RPC, the time it was allowed from its first byte
// (Options.RPCTimeout plus what the bytes it moved earned).
type ReplyTimeoutError struct {
	URL     string
	Timeout time.Duration
	Read    int64
	// Base and Rate are the RPC allowance (Options.RPCTimeout and
	// RPCBytesPerSec) when that is what ran out; zero otherwise.
	Base time.Duration
	Rate int64
}

func (e *ReplyTimeoutError) Error() string {
	if e.Base > 0 {
		return fmt.Sprintf("%s: reply took longer than %s from its first byte (%d bytes read; an RPC reply may take %s plus 1 s per %d bytes moved)",
			e.URL, e.Timeout, e.Read, e.Base, e.Rate)
	}
	return fmt.Sprintf("%s: reply took longer than %s (%d bytes read)", e.URL, e.Timeout, e.Read)
}

// RedirectError: a redirect was refused (downgrade, foreign scheme) or
// there were too many. Not permanent: the project may fix its server.
type RedirectError struct {
	From, To string
	Reason   string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("redirect from %s to %s refused: %s", e.From, e.To, e.Reason)
}

// redirectPolicy follows at most max redirects, only to http or https, and
// never from https down to http: a downgrade would hand the reply (and the
// account key in the request) to anyone on the path.
func redirectPolicy(max int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		prev := via[len(via)-1].URL
		to := req.URL
		switch {
		case len(via) > max:
			return &RedirectError{From: via[0].URL.String(), To: to.String(), Reason: fmt.Sprintf("more than %d redirects", max)}
		case to.Scheme != "http" && to.Scheme != "https":
			return &RedirectError{From: prev.String(), To: to.String(), Reason: fmt.Sprintf("scheme %q is not http or https", to.Scheme)}
		case prev.Scheme == "https" && to.Scheme != "https":
			return &RedirectError{From: prev.String(), To: to.String(), Reason: "https to http downgrade"}
		}
		return nil
	}
}

// checkRetry is retryablehttp's policy, except that a refused redirect is
// not retried: the server would only send it again.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	var re *RedirectError
	if errors.As(err, &re) {
		return false, err
	}
	return retryablehttp.DefaultRetryPolicy(ctx, resp, err)
}

// LoadCABundle returns the system roots plus every certificate in the PEM
// files at paths, for Options.RootCAs; no path (or only "") returns nil
// (system roots only). A file that cannot be read or holds no certificate
// is an error naming it, so a typo in the configuration is reported at
// start-up rather than as a verification failure of every https project.
func LoadCABundle(paths ...string) (*x509.CertPool, error) {
	var pool *x509.CertPool
	for _, path := range paths {
		if path == "" {
			continue
		}
		pem, err := readCABundle(path)
		if err != nil {
			return nil, err
		}
		if pool == nil {
			if pool, err = x509.SystemCertPool(); err != nil || pool == nil {
				pool = x509.NewCertPool()
			}
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("CA bundle %s: no PEM certificate found", path)
		}
	}
	return pool, nil
}

func readCABundle(path string) ([]byte, error) {
	const maxBundle = 16 << 20
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("CA bundle: %w", err)
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, maxBundle+1))
	if err != nil {
		return nil, fmt.Errorf("CA bundle %s: %w", path, err)
	}
	if len(pem) > maxBundle {
		return nil, fmt.Errorf("CA bundle %s: larger than %d bytes", path, maxBundle)
	}
	return pem, nil
}

// ReplyTooLargeError: a reply exceeded Options.MaxReplyBytes.
type ReplyTooLargeError struct {
	URL   string
	Limit int64
}

func (e *ReplyTooLargeError) Error() string {
	return fmt.Sprintf("%s: reply larger than %d bytes", e.URL, e.Limit)
}

// IsPermanent reports whether retrying err later is pointless: HTTP 4xx
// (other than 408/425/429), verification failures, oversized files and
// permanent upload-handler refusals. Timeouts, stalls, connection errors,
// 5xx, unparsable replies and cancellations are not permanent.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	var ue *UploadError
	if errors.As(err, &ue) {
		return ue.Permanent
	}
	var ve *VerifyError
	if errors.As(err, &ve) {
		return true
	}
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Permanent()
	}
	var rt *ReplyTooLargeError
	return errors.As(err, &rt)
}

// stallWatch cancels a request's context when no byte moves for the
// timeout, when fewer than minBytes move in a timeout window (the C++
// client's low-speed rule), or when the whole exchange takes longer than
// its limit allows. It uses runtime timers, so no goroutine outlives it.
type stallWatch struct {
	url      string
	timeout  time.Duration
	minBytes int64
	limit    exchangeLimit
	began    time.Time // the request's start: ReplyTimeout counts from here
	answered time.Time // the first reply byte: RPCTimeout counts from here
	cancel   context.CancelCauseFunc
	idle     *time.Timer
	window   *time.Timer
	total    *time.Timer

	mu       sync.Mutex
	stopped  bool
	inWindow int64 // bytes moved in the current window
	moved    int64 // bytes moved in all, both ways
	read     int64 // reply bytes read
}

// exchangeLimit bounds an exchange: from its first reply byte, base plus
// one second for every rate bytes moved; from its start, max. A zero base
// means max alone; a zero max and base mean no bound.
type exchangeLimit struct {
	base time.Duration
	rate int64
	max  time.Duration
}

// paced reports whether the limit has a reply allowance (base and rate).
func (l exchangeLimit) paced() bool { return l.base > 0 && l.rate > 0 }

// allowed is how long the reply may take from its first byte, the
// exchange having moved moved bytes; 0 when only max applies.
func (l exchangeLimit) allowed(moved int64) time.Duration {
	if !l.paced() {
		return 0
	}
	return l.base + time.Duration(float64(moved)/float64(l.rate)*float64(time.Second))
}

// left is how long the exchange may still run at now, and whether the
// reply allowance (rather than max) is what binds; ok is false when
// nothing bounds it yet.
func (w *stallWatch) left(now time.Time) (d time.Duration, paced, ok bool) {
	if w.limit.max > 0 {
		d, ok = w.limit.max-now.Sub(w.began), true
	}
	if w.limit.paced() && !w.answered.IsZero() {
		if p := w.limit.allowed(w.moved) - now.Sub(w.answered); !ok || p < d {
			d, paced, ok = p, true, true
		}
	}
	return d, paced, ok
}

// rpcLimit is the bound of a scheduler RPC or master-page fetch.
func (c *Client) rpcLimit() exchangeLimit {
	return exchangeLimit{base: c.rpcTimeout, rate: c.rpcRate, max: c.lim.Load().replyTimeout}
}

func (c *Client) watch(ctx context.Context, url string) (context.Context, *stallWatch) {
	return c.watchTotal(ctx, url, exchangeLimit{})
}

// watchTotal is watch with a bound on the whole exchange.
func (c *Client) watchTotal(ctx context.Context, url string, limit exchangeLimit) (context.Context, *stallWatch) {
	ctx, cancel := context.WithCancelCause(ctx)
	lim := c.lim.Load()
	w := &stallWatch{url: url, timeout: lim.stallTimeout, cancel: cancel, limit: limit, began: time.Now()}
	if lim.minSpeed > 0 {
		w.minBytes = max(1, int64(float64(lim.minSpeed)*lim.stallTimeout.Seconds()))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.idle = time.AfterFunc(lim.stallTimeout, func() { cancel(&StallError{URL: url, Timeout: lim.stallTimeout}) })
	if w.minBytes > 0 {
		w.window = time.AfterFunc(lim.stallTimeout, w.windowEnd)
	}
	if limit.max > 0 {
		w.total = time.AfterFunc(limit.max, w.totalEnd)
	}
	return ctx, w
}

// totalEnd ends the exchange when it has used the time it was allowed, or
// sets the timer again for the time its bytes earned since.
func (w *stallWatch) totalEnd() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	left, paced, ok := w.left(time.Now())
	if !ok {
		return
	}
	if left > 0 {
		w.total.Reset(left)
		return
	}
	te := &ReplyTimeoutError{URL: w.url, Timeout: w.limit.max, Read: w.read}
	if paced {
		te.Base, te.Rate = w.limit.base, w.limit.rate
		te.Timeout = w.limit.allowed(w.moved).Round(time.Millisecond)
	}
	w.cancel(te)
}

// windowEnd applies the low-speed rule at the end of each window.
func (w *stallWatch) windowEnd() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if moved := w.inWindow; moved < w.minBytes {
		se := &StallError{URL: w.url, Timeout: w.timeout}
		if moved > 0 {
			se.MinBytes, se.Moved = w.minBytes, moved
		}
		w.cancel(se)
		return
	}
	w.inWindow = 0
	w.window.Reset(w.timeout)
}

// progress records n reply bytes read and pushes the idle deadline out.
func (w *stallWatch) progress(n int) {
	w.mu.Lock()
	if !w.stopped {
		w.idle.Reset(w.timeout)
		w.inWindow += int64(n)
		w.moved += int64(n)
		w.read += int64(n)
		if w.answered.IsZero() && w.limit.paced() {
			// The server began to answer: its reply allowance starts.
			w.answered = time.Now()
			d, _, _ := w.left(w.answered)
			if w.total == nil {
				w.total = time.AfterFunc(d, w.totalEnd)
			} else {
				w.total.Reset(d)
			}
		}
	}
	w.mu.Unlock()
}

// sent records n request-body bytes sent: they keep the idle timer from
// firing and earn an RPC time as reply bytes do, but the low-speed rule
// counts reply bytes only (a quick request must not excuse a dripping
// reply's first window).
func (w *stallWatch) sent(n int) {
	w.mu.Lock()
	if !w.stopped {
		w.idle.Reset(w.timeout)
		w.moved += int64(n)
	}
	w.mu.Unlock()
}

func (w *stallWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.idle.Stop()
	if w.window != nil {
		w.window.Stop()
	}
	if w.total != nil {
		w.total.Stop()
	}
	w.mu.Unlock()
	w.cancel(context.Canceled)
}

// explain replaces a cancellation caused by the watch with its reason. An
// error of its own (a reply too large, say) is kept even if the watch fired
// meanwhile: it is what ended the request.
func (w *stallWatch) explain(ctx context.Context, err error) error {
	if err == nil || !(errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return err
	}
	cause := context.Cause(ctx)
	var se *StallError
	if errors.As(cause, &se) && !errors.As(err, &se) {
		return fmt.Errorf("%w (%v)", se, err)
	}
	var te *ReplyTimeoutError
	if errors.As(cause, &te) && !errors.As(err, &te) {
		return fmt.Errorf("%w (%v)", te, err)
	}
	return err
}

// watchedReader reports progress on every successful read.
type watchedReader struct {
	r io.Reader
	w *stallWatch
}

func (r *watchedReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.w.progress(n)
	}
	return n, err
}

func (c *Client) newRequest(ctx context.Context, method, url string, body interface{}) (*retryablehttp.Request, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, url, err)
	}
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "*/*")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", postContentType)
	}
	return req, nil
}

// do sends req and returns a 2xx response; other statuses become HTTPError.
func (c *Client) do(req *retryablehttp.Request) (*http.Response, error) {
	url := req.URL.String()
	resp, err := c.rc.Do(req)
	if err != nil {
		var cve *tls.CertificateVerificationError
		if errors.As(err, &cve) {
			return nil, fmt.Errorf("%s %s: TLS certificate of %s not trusted (a private CA can be added with ca_bundle): %w",
				req.Method, url, hostOf(req.URL), err)
		}
		return nil, fmt.Errorf("%s %s: %w", req.Method, url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		drain(resp.Body)
		return nil, &HTTPError{StatusCode: resp.StatusCode, URL: url}
	}
	return resp, nil
}

func hostOf(u *url.URL) string {
	if u == nil {
		return "?"
	}
	return u.Host
}

// drain reads a little of a body we do not want so the connection can be
// reused, then closes it.
func drain(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	_ = body.Close()
}

// readReply reads at most maxReply bytes, failing (not truncating) beyond.
func (c *Client) readReply(r io.Reader, url string) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, c.maxReply+1))
	if err != nil {
		return nil, fmt.Errorf("read reply from %s: %w", url, err)
	}
	if int64(len(data)) > c.maxReply {
		return nil, &ReplyTooLargeError{URL: url, Limit: c.maxReply}
	}
	return data, nil
}

// fetch performs a scheduler RPC or master-page fetch, whose whole reply is
// wanted in memory, within the RPC bound (Options.RPCTimeout).
func (c *Client) fetch(ctx context.Context, method, url string, body []byte) ([]byte, error) {
	ctx, w := c.watchTotal(ctx, url, c.rpcLimit())
	defer w.stop()
	var rb interface{}
	if len(body) > 0 {
		// A request body counts as progress while it goes out (a large
		// report over a slow uplink), rebuilt for every attempt.
		rb = func() (io.Reader, error) {
			return &countingReader{r: bytes.NewReader(body), fn: w.sent}, nil
		}
	} else if body != nil {
		rb = body
	}
	req, err := c.newRequest(ctx, method, url, rb)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		req.ContentLength = int64(len(body))
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, w.explain(ctx, err)
	}
	defer resp.Body.Close()
	w.progress(0)
	data, err := c.readReply(&watchedReader{r: resp.Body, w: w}, url)
	return data, w.explain(ctx, err)
}

// FetchMaster GETs a project's master page and returns its scheduler URLs
// and the page itself (to save as master_<esc>.xml). A page without any
// scheduler URL is an error, as in the C++ client.
func (c *Client) FetchMaster(ctx context.Context, masterURL string) ([]string, []byte, error) {
	page, err := c.fetch(ctx, http.MethodGet, masterURL, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch master page: %w", err)
	}
	urls := ParseMasterPage(page)
	if len(urls) == 0 {
		return nil, page, fmt.Errorf("master page %s: no scheduler URL found (error %d)", masterURL, boinc.ErrXMLParse)
	}
	return urls, page, nil
}

// SchedulerRPC POSTs a scheduler request body and parses the reply. The raw
// reply is returned whenever it was received, even if it does not parse,
// so the caller can keep it for diagnosis.
func (c *Client) SchedulerRPC(ctx context.Context, schedulerURL string, body []byte) (*SchedulerReply, []byte, error) {
	if body == nil {
		body = []byte{}
	}
	raw, err := c.fetch(ctx, http.MethodPost, schedulerURL, body)
	if err != nil {
		return nil, nil, fmt.Errorf("scheduler RPC: %w", err)
	}
	reply, err := ParseSchedulerReply(raw)
	if err != nil {
		return nil, raw, fmt.Errorf("scheduler RPC to %s: %w", schedulerURL, err)
	}
	return reply, raw, nil
}

// PostTrickleUp posts a replicated trickle-up (TrickleUpRequest) to one of
// a project's trickle handlers (TRICKLE_UP_OP::do_rpc), within the RPC
// bound; the reply is read and dropped, as the C++ client drops it.
func (c *Client) PostTrickleUp(ctx context.Context, handlerURL string, body []byte) error {
	if _, err := c.fetch(ctx, http.MethodPost, handlerURL, body); err != nil {
		return fmt.Errorf("replicated trickle-up: %w", err)
	}
	return nil
}

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
