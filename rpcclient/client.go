package rpcclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/hashicorp/go-retryablehttp"
)

// Options configures a Client. Zero values take the defaults noted.
type Options struct {
	// MaxReplyBytes caps master pages, scheduler replies and upload-handler
	// replies (default 16 MiB); a longer reply is an error, not truncated.
	MaxReplyBytes int64
	// StallTimeout aborts a request that receives (or, for uploads, sends)
	// no byte for that long (default 5 min, the C++ client's low-speed
	// limit).
	StallTimeout time.Duration
	// ConnectTimeout bounds TCP connection setup (default 120 s, as the C++
	// client). Ignored when HTTPClient is set.
	ConnectTimeout time.Duration
	// Logger receives debug records about requests and retries (default:
	// discard).
	Logger *slog.Logger
	// HTTPClient replaces the default transport, e.g. in tests.
	HTTPClient *http.Client
}

// Client talks to BOINC project servers. It is safe for concurrent use.
type Client struct {
	rc           *retryablehttp.Client
	log          *slog.Logger
	maxReply     int64
	stallTimeout time.Duration
	userAgent    string
}

const (
	defaultMaxReplyBytes  = 16 << 20
	defaultStallTimeout   = 5 * time.Minute
	defaultConnectTimeout = 120 * time.Second
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
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy: http.ProxyFromEnvironment,
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
		}}
	}
	rc := &retryablehttp.Client{
		HTTPClient: hc,
		Logger:     slogAdapter{log},
		// Only quick transport-level retries: the daemon's own backoff
		// (minutes to hours) handles everything longer.
		RetryMax:     2,
		RetryWaitMin: 500 * time.Millisecond,
		RetryWaitMax: 2 * time.Second,
		CheckRetry:   retryablehttp.DefaultRetryPolicy,
		Backoff:      retryablehttp.DefaultBackoff,
		// Hand back the last response so its status can be classified.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	return &Client{
		rc:           rc,
		log:          log,
		maxReply:     o.MaxReplyBytes,
		stallTimeout: o.StallTimeout,
		userAgent:    "BOINC client (" + boinc.PlatformName + " " + clientVersionString() + ")",
	}
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

// StallError: no byte moved for the stall timeout.
type StallError struct {
	URL     string
	Timeout time.Duration
}

func (e *StallError) Error() string {
	return fmt.Sprintf("%s: transfer stalled (no data for %s)", e.URL, e.Timeout)
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

// stallWatch cancels a request's context when no progress is reported for
// the timeout. It uses a runtime timer, so no goroutine outlives it.
type stallWatch struct {
	timer   *time.Timer
	timeout time.Duration
	cancel  context.CancelCauseFunc
	err     *StallError
	mu      sync.Mutex
	stopped bool
}

func (c *Client) watch(ctx context.Context, url string) (context.Context, *stallWatch) {
	ctx, cancel := context.WithCancelCause(ctx)
	w := &stallWatch{timeout: c.stallTimeout, cancel: cancel, err: &StallError{URL: url, Timeout: c.stallTimeout}}
	w.timer = time.AfterFunc(c.stallTimeout, func() { cancel(w.err) })
	return ctx, w
}

// progress pushes the deadline out.
func (w *stallWatch) progress() {
	w.mu.Lock()
	if !w.stopped {
		w.timer.Reset(w.timeout)
	}
	w.mu.Unlock()
}

func (w *stallWatch) stop() {
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel(context.Canceled)
}

// explain replaces a cancellation caused by the watch with the StallError.
func (w *stallWatch) explain(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var se *StallError
	if cause := context.Cause(ctx); errors.As(cause, &se) && !errors.As(err, &se) {
		return fmt.Errorf("%w (%v)", se, err)
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
		r.w.progress()
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
		return nil, fmt.Errorf("%s %s: %w", req.Method, url, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		drain(resp.Body)
		return nil, &HTTPError{StatusCode: resp.StatusCode, URL: url}
	}
	return resp, nil
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

// fetch performs a request whose whole reply is wanted in memory.
func (c *Client) fetch(ctx context.Context, method, url string, body []byte) ([]byte, error) {
	ctx, w := c.watch(ctx, url)
	defer w.stop()
	var rb interface{}
	if body != nil {
		rb = body
	}
	req, err := c.newRequest(ctx, method, url, rb)
	if err != nil {
		return nil, err
	}
	resp, err := c.do(req)
	if err != nil {
		return nil, w.explain(ctx, err)
	}
	defer resp.Body.Close()
	w.progress()
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

func itoa64(n int64) string { return strconv.FormatInt(n, 10) }
