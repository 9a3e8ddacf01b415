package rpcclient

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// DownloadSpec describes one file download.
type DownloadSpec struct {
	// URLs are tried in order, starting at StartURL and wrapping around.
	URLs     []string
	StartURL int
	// Path is the final location. Partial data stays in the same file
	// between attempts (like the C++ client) and is resumed with Range.
	Path string
	// NBytes is the expected size (0 = unknown).
	NBytes int64
	// MD5 is the expected lower-case hex checksum ("" = not checked).
	MD5 string
	// MaxBytes caps the bytes written even when NBytes is unknown (0 = no
	// cap beyond NBytes).
	MaxBytes int64
	// Progress, if set, is called with the file's current size as data
	// arrives.
	Progress func(bytes int64)
	// Meter, if set, measures the bytes that arrive and their time.
	Meter *Meter
}

// VerifyError: a downloaded or local file does not match its description.
// Code is boinc.ErrMD5Failed, boinc.ErrFileWrongSize or boinc.ErrFileTooBig.
// The file has been deleted.
type VerifyError struct {
	Code int
	Path string
	Want string
	Got  string
}

func (e *VerifyError) Error() string {
	what := "verification failed"
	switch e.Code {
	case boinc.ErrMD5Failed:
		what = "MD5 mismatch"
	case boinc.ErrFileWrongSize:
		what = "wrong size"
	case boinc.ErrFileTooBig:
		what = "file too big"
	}
	return fmt.Sprintf("%s: %s (want %s, got %s; error %d)", e.Path, what, e.Want, e.Got, e.Code)
}

// Download fetches d.Path from d.URLs. It returns the index of the URL that
// served the file, or on failure the index of the last URL tried and an
// error classified by IsPermanent: it is permanent only if every URL
// failed permanently.
func (c *Client) Download(ctx context.Context, d DownloadSpec) (int64, error) {
	if len(d.URLs) == 0 {
		return 0, fmt.Errorf("download %s: no URL", d.Path)
	}
	if d.Path == "" {
		return 0, errors.New("download: no target path")
	}
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
		return 0, fmt.Errorf("download %s: %w", d.Path, err)
	}
	start := d.StartURL
	if start < 0 || start >= len(d.URLs) {
		start = 0
	}
	var lastErr, transientErr error
	idx := start
	for k := range d.URLs {
		idx = (start + k) % len(d.URLs)
		err := c.downloadFrom(ctx, d, d.URLs[idx])
		if err == nil {
			return int64(idx), nil
		}
		c.log.Debug("download attempt failed", "path", d.Path, "url", d.URLs[idx], "err", err)
		if ctx.Err() != nil {
			return int64(idx), fmt.Errorf("download %s: %w", d.Path, err)
		}
		lastErr = err
		if !IsPermanent(err) {
			transientErr = err
		}
	}
	if transientErr != nil {
		lastErr = transientErr
	}
	return int64(idx), fmt.Errorf("download %s: %w", d.Path, lastErr)
}

// byteCap is the most the file may hold.
func (d *DownloadSpec) byteCap() int64 {
	limit := d.NBytes
	if d.MaxBytes > 0 && (limit <= 0 || d.MaxBytes < limit) {
		limit = d.MaxBytes
	}
	return limit
}

func (c *Client) downloadFrom(ctx context.Context, d DownloadSpec, url string) error {
	f, err := os.OpenFile(d.Path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", d.Path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", d.Path, err)
	}
	offset := st.Size()
	if d.NBytes > 0 && offset == d.NBytes {
		// A complete file from an earlier attempt: keep it if it verifies.
		if verifyFile(f, d) == nil {
			c.progress(d, offset)
			return nil
		}
	}
	if d.NBytes <= 0 || offset >= d.NBytes {
		offset = 0
	}
	if err := f.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s: %w", d.Path, err)
	}
	// At most two requests: a Range request the server refuses with 416 is
	// repeated from byte 0.
	for attempt := 0; ; attempt++ {
		err := c.getInto(ctx, f, d, url, &offset)
		var he *HTTPError
		if attempt == 0 && offset > 0 && errors.As(err, &he) && he.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			offset = 0
			if err := f.Truncate(0); err != nil {
				return fmt.Errorf("truncate %s: %w", d.Path, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", d.Path, err)
	}
	if err := verifyFile(f, d); err != nil {
		_ = f.Close()
		_ = os.Remove(d.Path)
		return err
	}
	return nil
}

func (c *Client) progress(d DownloadSpec, n int64) {
	if d.Progress != nil {
		d.Progress(n)
	}
}

// getInto GETs url and writes the body into f at *offset, updating *offset.
func (c *Client) getInto(ctx context.Context, f *os.File, d DownloadSpec, url string, offset *int64) error {
	ctx, w := c.watch(ctx, url)
	defer w.stop()
	req, err := c.newRequest(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if *offset > 0 {
		req.Header.Set("Range", "bytes="+itoa64(*offset)+"-")
	}
	// A transparently decompressed body would make Range offsets and .gz
	// checksums meaningless, so downloads ask for the bytes as stored.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := c.do(req)
	if err != nil {
		return w.explain(ctx, err)
	}
	defer resp.Body.Close()
	w.progress(0)
	d.Meter.begin()
	if resp.StatusCode == http.StatusPartialContent {
		if start, ok := contentRangeStart(resp.Header.Get("Content-Range")); !ok || start != *offset {
			// Not the part we asked for: start over on the next attempt.
			err := fmt.Errorf("%s: server sent range %q for offset %d", url, resp.Header.Get("Content-Range"), *offset)
			_ = f.Truncate(0)
			*offset = 0
			return err
		}
	} else if *offset > 0 {
		// The server ignored Range and sends the whole file.
		if err := f.Truncate(0); err != nil {
			return fmt.Errorf("truncate %s: %w", d.Path, err)
		}
		*offset = 0
	}
	if _, err := f.Seek(*offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", d.Path, err)
	}
	limit := d.byteCap()
	tooBig := func(got string) error {
		_ = f.Truncate(0)
		_ = os.Remove(d.Path)
		return &VerifyError{Code: boinc.ErrFileTooBig, Path: d.Path,
			Want: "at most " + itoa64(limit) + " bytes", Got: got}
	}
	body := io.Reader(&watchedReader{r: resp.Body, w: w})
	if limit > 0 {
		// A body announced larger than the file is refused unread; one
		// that is not announced is read to one byte past the cap at most.
		if resp.ContentLength > 0 && *offset+resp.ContentLength > limit {
			return tooBig(itoa64(*offset+resp.ContentLength) + " announced by " + url)
		}
		body = io.LimitReader(body, limit-*offset+1)
	}
	buf := make([]byte, 64<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if limit > 0 && *offset+int64(n) > limit {
				return tooBig("more from " + url)
			}
			if _, err := f.Write(buf[:n]); err != nil {
				return fmt.Errorf("write %s: %w", d.Path, err)
			}
			d.Meter.add(n)
			*offset += int64(n)
			c.progress(d, *offset)
		}
		if rerr == io.EOF {
			// A body that ends cleanly but short (a Content-Length
			// shorter than the file) fails verification as a wrong
			// size: HTTP framing cannot tell a lying header from a short
			// file, and a short file must not be retried for 90 days.
			// A body cut before its Content-Length is a read error
			// below, and that partial is kept for a Range resume.
			return nil
		}
		if rerr != nil {
			return w.explain(ctx, fmt.Errorf("read %s: %w", url, rerr))
		}
	}
}

// contentRangeStart parses the first byte of "bytes START-END/TOTAL".
func contentRangeStart(h string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes ")
	if !ok {
		return 0, false
	}
	startStr, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(startStr), 10, 64)
	return n, err == nil
}

// verifyFile checks size then MD5, in the C++ client's order.
func verifyFile(f *os.File, d DownloadSpec) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", d.Path, err)
	}
	if d.NBytes > 0 && st.Size() != d.NBytes {
		return &VerifyError{Code: boinc.ErrFileWrongSize, Path: d.Path, Want: itoa64(d.NBytes), Got: itoa64(st.Size())}
	}
	if d.MD5 == "" {
		return nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", d.Path, err)
	}
	h := md5.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("read %s: %w", d.Path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, d.MD5) {
		return &VerifyError{Code: boinc.ErrMD5Failed, Path: d.Path, Want: d.MD5, Got: got}
	}
	return nil
}
