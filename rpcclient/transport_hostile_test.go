package rpcclient

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/hostilehttp"
)

// Each test here points the client at a server from internal/hostilehttp
// and checks that the damage is bounded: the request ends with an error
// that says why, within the stall/reply timeouts, having read no more than
// the byte caps allow, and (for downloads) with nothing wrong left on disk.
// Figures (time, bytes) are logged for docs/security.md.

// hostileServer serves h on 127.0.0.1; Close drops open connections first
// so a handler still writing ends at once.
func hostileServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv
}

// bodyCounter wraps a transport and counts the response-body bytes the
// client actually read, i.e. after any transparent decompression.
type bodyCounter struct {
	base http.RoundTripper
	read atomic.Int64
}

func (b *bodyCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if resp != nil {
		resp.Body = &countedBody{ReadCloser: resp.Body, n: &b.read}
	}
	return resp, err
}

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c *countedBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func countingClient() (*http.Client, *bodyCounter) {
	bc := &bodyCounter{base: http.DefaultTransport.(*http.Transport).Clone()}
	return &http.Client{Transport: bc}, bc
}

func TestHostileSchedulerReplies(t *testing.T) {
	t.Parallel()
	reply := readFixture(t, "scheduler/04_reply_result_acks.xml")
	const stall = 400 * time.Millisecond // low-speed minimum: 4 bytes per window
	tests := []struct {
		name    string
		handler http.Handler
		// check inspects the error; it returns "" when it is the expected one.
		check func(err error) string
		// maxWire bounds the bytes the client may read from the body.
		maxWire int64
		// replyTimeout overrides the default (2×stall) where the work
		// of reaching the cap could take longer under -race.
		replyTimeout time.Duration
	}{
		{
			name: "reply never ends (100 B every 10 ms)",
			handler: hostilehttp.Drip{Prefix: []byte("<scheduler_reply>\n"), Filler: ' ', Chunk: 100,
				Interval: 10 * time.Millisecond, Total: -1},
			check:   wantAs[*ReplyTimeoutError]("reply took longer than"),
			maxWire: 16 << 20,
		},
		{
			name: "slow drip (1 byte every 150 ms)",
			handler: hostilehttp.Drip{Filler: ' ', Chunk: 1,
				Interval: 150 * time.Millisecond, Total: -1},
			check:   wantAs[*StallError]("too slow"),
			maxWire: 1 << 10,
		},
		{
			name:    "hang after headers",
			handler: hostilehttp.Hang{Headers: true, Prefix: []byte("<scheduler_reply>\n")},
			check:   wantAs[*StallError]("no data for"),
			maxWire: 1 << 10,
		},
		{
			name:    "hang before headers",
			handler: hostilehttp.Hang{},
			check:   wantAs[*StallError]("no data for"),
			maxWire: 0,
		},
		{
			name:    "gzip bomb (1 GiB inflated)",
			handler: hostilehttp.GzipBomb{Inflated: 1 << 30},
			check:   wantAs[*ReplyTooLargeError]("reply larger than"),
			// Counted after decompression: the cap plus at most one read.
			maxWire:      defaultMaxReplyBytes + 1<<20,
			replyTimeout: time.Minute,
		},
		{
			name:    "redirect loop",
			handler: hostilehttp.Redirect{Loop: true},
			check:   wantAs[*RedirectError]("more than 10 redirects"),
		},
		{
			name:    "redirect to file://",
			handler: hostilehttp.Redirect{To: "file:///etc/passwd"},
			check:   wantAs[*RedirectError](`scheme "file"`),
		},
		{
			name:    "redirect to ftp://",
			handler: hostilehttp.Redirect{To: "ftp://127.0.0.1/x", Code: http.StatusMovedPermanently},
			check:   wantAs[*RedirectError](`scheme "ftp"`),
		},
		{
			name:    "content-length longer than body",
			handler: hostilehttp.WrongLength{Body: reply, ContentLength: int64(len(reply)) + 1000},
			check:   wantText("unexpected EOF"),
			maxWire: int64(len(reply)),
		},
		{
			name:    "content-length shorter than body",
			handler: hostilehttp.WrongLength{Body: reply, ContentLength: int64(len(reply)) / 2},
			// Half a reply does not parse; the rest is never read.
			check:   wantText("scheduler RPC to"),
			maxWire: int64(len(reply)) / 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var served hostilehttp.Counter
			srv := hostileServer(t, counted(&served, tc.handler))
			hc, bc := countingClient()
			c := newTestClient(t, Options{StallTimeout: stall, ReplyTimeout: tc.replyTimeout, HTTPClient: hc})
			start := time.Now()
			_, _, err := c.SchedulerRPC(context.Background(), srv.URL+"/cgi", []byte("<scheduler_request/>"))
			took := time.Since(start)
			if err == nil {
				t.Fatal("hostile reply accepted")
			}
			if msg := tc.check(err); msg != "" {
				t.Fatalf("err %v: %s", err, msg)
			}
			if !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %q does not name the URL", err)
			}
			if IsPermanent(err) && !errors.As(err, new(*ReplyTooLargeError)) {
				t.Errorf("error %v classified permanent", err)
			}
			if got := bc.read.Load(); got > tc.maxWire {
				t.Errorf("client read %d body bytes, want at most %d", got, tc.maxWire)
			}
			// Generous: the bound is 2×stall (reply timeout) or 2×stall
			// (low-speed window), plus transport retries.
			if took > 10*time.Second {
				t.Errorf("took %s", took)
			}
			t.Logf("figures: %s after %s, %d requests, client read %d body bytes, server wrote %d",
				tc.name, took.Round(time.Millisecond), served.Requests(), bc.read.Load(), served.Bytes())
		})
	}
}

// counted counts requests to h for handlers that keep no count.
func counted(c *hostilehttp.Counter, h http.Handler) http.Handler {
	switch v := h.(type) {
	case hostilehttp.Drip:
		v.Count = c
		return v
	case hostilehttp.Hang:
		v.Count = c
		return v
	case hostilehttp.GzipBomb:
		v.Count = c
		return v
	case hostilehttp.Redirect:
		v.Count = c
		return v
	case hostilehttp.WrongLength:
		v.Count = c
		return v
	}
	return h
}

func wantAs[E error](text string) func(error) string {
	return func(err error) string {
		var e E
		if !errors.As(err, &e) {
			return "wrong error type"
		}
		if !strings.Contains(err.Error(), text) {
			return "error does not say " + strconv.Quote(text)
		}
		return ""
	}
}

func wantText(text string) func(error) string {
	return func(err error) string {
		if !strings.Contains(err.Error(), text) {
			return "error does not say " + strconv.Quote(text)
		}
		return ""
	}
}

// TestRedirectLoopCount: the loop is followed exactly MaxRedirects times
// and not retried.
func TestRedirectLoopCount(t *testing.T) {
	t.Parallel()
	var served hostilehttp.Counter
	srv := hostileServer(t, hostilehttp.Redirect{Loop: true, Count: &served})
	c := newTestClient(t, Options{})
	_, _, err := c.FetchMaster(context.Background(), srv.URL+"/")
	var re *RedirectError
	if !errors.As(err, &re) {
		t.Fatalf("err %v, want RedirectError", err)
	}
	if got := served.Requests(); got != defaultMaxRedirects+1 {
		t.Errorf("server saw %d requests, want %d (the first and %d redirects, no retries)", got, defaultMaxRedirects+1, defaultMaxRedirects)
	}
	// A short chain still works.
	good := hostileServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("hop"))
		if n < 3 {
			http.Redirect(w, r, "/?hop="+strconv.Itoa(n+1), http.StatusFound)
			return
		}
		io.WriteString(w, `<scheduler>http://127.0.0.1/cgi</scheduler>`)
	}))
	if urls, _, err := c.FetchMaster(context.Background(), good.URL+"/"); err != nil || len(urls) != 1 {
		t.Errorf("3 redirects: %q %v", urls, err)
	}
}

func TestHostileDownloads(t *testing.T) {
	t.Parallel()
	content := bytes.Repeat([]byte("boinc input "), 10000) // 120000 bytes
	sum := md5hex(content)
	nbytes := int64(len(content))
	const stall = 400 * time.Millisecond
	tests := []struct {
		name    string
		handler http.Handler
		// wantCode is the VerifyError code, or 0 for a transient error.
		wantCode int
		wantText string
		// keep is the partial data that must be left for a resume (it
		// may have grown by what dripped in meanwhile).
		keep    []byte
		maxRead int64
	}{
		{
			name:     "endless body past nbytes",
			handler:  hostilehttp.Drip{Prefix: content, Filler: 'x', Chunk: 64 << 10, Interval: time.Millisecond, Total: -1},
			wantCode: boinc.ErrFileTooBig,
			maxRead:  nbytes + 1,
		},
		{
			name:     "content-length announces more than nbytes",
			handler:  hostilehttp.Drip{Prefix: content, Total: nbytes + 1, ContentLength: nbytes + 1, Chunk: 1, Interval: time.Millisecond},
			wantCode: boinc.ErrFileTooBig,
			wantText: "announced",
			maxRead:  0,
		},
		{
			name:     "gzip bomb",
			handler:  hostilehttp.GzipBomb{Inflated: 1 << 30},
			wantCode: boinc.ErrFileTooBig,
			maxRead:  nbytes + 1,
		},
		{
			name:     "slow drip",
			handler:  hostilehttp.Drip{Prefix: content[:1000], Rest: content[1000:], Chunk: 1, Interval: 150 * time.Millisecond, Total: -1},
			wantText: "too slow",
			keep:     content[:1000],
			maxRead:  1100,
		},
		{
			name:     "content-length shorter than body",
			handler:  hostilehttp.WrongLength{Body: content, ContentLength: nbytes / 2},
			wantCode: boinc.ErrFileWrongSize,
			maxRead:  nbytes / 2,
		},
		{
			name:     "content-length longer than body",
			handler:  hostilehttp.WrongLength{Body: content[:nbytes/2], ContentLength: nbytes},
			wantText: "unexpected EOF",
			keep:     content[:nbytes/2],
			maxRead:  nbytes / 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := hostileServer(t, tc.handler)
			hc, bc := countingClient()
			c := newTestClient(t, Options{StallTimeout: stall, HTTPClient: hc})
			path := filepath.Join(t.TempDir(), "f")
			var maxProgress atomic.Int64
			spec := DownloadSpec{URLs: []string{srv.URL + "/f"}, Path: path, NBytes: nbytes, MD5: sum, MaxBytes: nbytes,
				Progress: func(n int64) {
					if n > maxProgress.Load() {
						maxProgress.Store(n)
					}
				}}
			start := time.Now()
			_, err := c.Download(context.Background(), spec)
			took := time.Since(start)
			if err == nil {
				t.Fatal("hostile download accepted")
			}
			var ve *VerifyError
			switch {
			case tc.wantCode != 0 && (!errors.As(err, &ve) || ve.Code != tc.wantCode):
				t.Fatalf("err %v, want VerifyError %d", err, tc.wantCode)
			case tc.wantCode == 0 && IsPermanent(err):
				t.Fatalf("err %v is permanent, want transient", err)
			case tc.wantText != "" && !strings.Contains(err.Error(), tc.wantText):
				t.Fatalf("err %v does not say %q", err, tc.wantText)
			}
			if maxProgress.Load() > nbytes {
				t.Errorf("file grew to %d bytes, past nbytes %d", maxProgress.Load(), nbytes)
			}
			if got := bc.read.Load(); got > tc.maxRead {
				t.Errorf("client read %d body bytes, want at most %d", got, tc.maxRead)
			}
			got, rerr := os.ReadFile(path)
			if tc.keep == nil && !os.IsNotExist(rerr) {
				t.Errorf("bad file left behind (%d bytes, %v)", len(got), rerr)
			}
			if tc.keep != nil && (len(got) < len(tc.keep) || !bytes.HasPrefix(content, got)) {
				t.Errorf("partial file %d bytes, want the %d good bytes (or more) kept", len(got), len(tc.keep))
			}
			t.Logf("figures: %s: %v after %s, client read %d body bytes, file at most %d bytes",
				tc.name, err, took.Round(time.Millisecond), bc.read.Load(), maxProgress.Load())

			// The same file from a good server completes, resuming the
			// kept part with Range.
			good, ranges := fileServer(t, content, false)
			spec.URLs = []string{good.URL + "/f"}
			spec.Progress = nil
			if _, err := c.Download(context.Background(), spec); err != nil {
				t.Fatalf("download from the good server after %s: %v", tc.name, err)
			}
			if b, _ := os.ReadFile(path); !bytes.Equal(b, content) {
				t.Fatalf("file differs after the good download")
			}
			wantRange := ""
			if tc.keep != nil {
				wantRange = "bytes=" + strconv.Itoa(len(got)) + "-"
			}
			if (*ranges)[0] != wantRange {
				t.Errorf("good server got Range %q, want %q", (*ranges)[0], wantRange)
			}
		})
	}
}

// TestUploadHandlerLies: the size query answers nonsense; the client must
// neither loop nor send a corrupt file, and must classify the outcome.
func TestUploadHandlerLies(t *testing.T) {
	t.Parallel()
	content := bytes.Repeat([]byte("result data "), 2000) // 24000 bytes: size query used
	n := len(content)
	tests := []struct {
		name     string
		fileSize func(call int) string
		// nextReply, if set, replaces the real handler for data uploads.
		nextReply string
		attempts  int
		// wantErr: "" success; otherwise text of the error.
		wantErr   string
		permanent bool
		// wantStored: the bytes the real handler must end up with.
		wantStored []byte
		// wantUploads is how many data POSTs reach the real handler.
		wantUploads int
	}{
		{name: "claims more than the file", fileSize: func(int) string { return strconv.Itoa(n + 5000) },
			attempts: 1, wantStored: content, wantUploads: 1},
		{name: "negative", fileSize: func(int) string { return "-5" }, attempts: 1, wantStored: content, wantUploads: 1},
		{name: "not a number", fileSize: func(int) string { return "lots" }, attempts: 1, wantStored: content, wantUploads: 1},
		{name: "huge", fileSize: func(int) string { return "1e300" }, attempts: 1, wantStored: content, wantUploads: 1},
		{name: "exactly nbytes: already there", fileSize: func(int) string { return strconv.Itoa(n) }, attempts: 1, wantUploads: 0},
		{name: "says 0 after partial, upload keeps failing", fileSize: func(int) string { return "0" },
			nextReply: "<data_server_reply><status>1</status><message>disk full</message></data_server_reply>",
			attempts:  3, wantErr: "transient upload error: disk full", wantUploads: 3},
		{name: "says 0, then refuses for good", fileSize: func(int) string { return "0" },
			nextReply: "<data_server_reply><status>-1</status><message>bad signature</message></data_server_reply>",
			attempts:  1, wantErr: "permanent upload error: bad signature", permanent: true, wantUploads: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			us := &uploadServer{stored: map[string][]byte{}, t: t}
			var mu sync.Mutex
			uploads := 0
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				uploads++
				mu.Unlock()
				if tc.nextReply != "" {
					io.Copy(io.Discard, r.Body)
					io.WriteString(w, tc.nextReply)
					return
				}
				us.ServeHTTP(w, r)
			})
			liar := &hostilehttp.LyingUploadHandler{FileSize: tc.fileSize, Next: next}
			srv := hostileServer(t, liar)
			path := filepath.Join(t.TempDir(), "out")
			os.WriteFile(path, content, 0o644)
			c := newTestClient(t, Options{})
			spec := UploadSpec{URLs: []string{srv.URL + "/cgi-bin/file_upload_handler"}, Path: path, Name: "res_0",
				MaxNBytes: 1e6, NBytes: int64(n), MD5: md5hex(content)}
			var err error
			for range tc.attempts {
				err = c.Upload(context.Background(), spec)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("err %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("err %v, want %q", err, tc.wantErr)
			case err != nil && IsPermanent(err) != tc.permanent:
				t.Errorf("IsPermanent(%v) = %v", err, !tc.permanent)
			}
			mu.Lock()
			defer mu.Unlock()
			if uploads != tc.wantUploads {
				t.Errorf("%d data uploads, want %d", uploads, tc.wantUploads)
			}
			if q := liar.Queries(); q != int64(tc.attempts) {
				t.Errorf("%d size queries for %d attempts: not bounded", q, tc.attempts)
			}
			if tc.wantStored != nil && !bytes.Equal(us.stored["res_0"], tc.wantStored) {
				t.Errorf("server holds %d bytes, want the whole %d-byte file", len(us.stored["res_0"]), len(tc.wantStored))
			}
		})
	}
}

// TestLowSpeedRuleOff: with MinBytesPerSec < 0 only "no byte at all"
// counts, so a drip is bounded by ReplyTimeout alone.
func TestLowSpeedRuleOff(t *testing.T) {
	t.Parallel()
	srv := hostileServer(t, hostilehttp.Drip{Prefix: []byte("<"), Chunk: 1, Filler: ' ', Interval: 100 * time.Millisecond, Total: -1})
	c := newTestClient(t, Options{StallTimeout: 300 * time.Millisecond, MinBytesPerSec: -1, ReplyTimeout: time.Second})
	_, _, err := c.SchedulerRPC(context.Background(), srv.URL, nil)
	var te *ReplyTimeoutError
	if !errors.As(err, &te) || te.Timeout != time.Second {
		t.Fatalf("err %v, want ReplyTimeoutError after 1s", err)
	}
}
