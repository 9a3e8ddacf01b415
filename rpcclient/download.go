package rpcclient

import (
	"bufio"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	URLs []string
	// GzippedURLs serve the same file gzip-compressed (<gzipped_url>,
	// written by a project's stage_file --gzip). They come first in the
	// rotation: StartURL and the index Download returns count GzippedURLs
	// then URLs, so the plain URLs are the fallback when every gzipped
	// one fails. A gzipped URL is fetched to GzipPartPath(Path), resumed
	// with Range like a plain download, then inflated to Path with at
	// most byteCap bytes out; Path is then checked like a plain download.
	GzippedURLs []string
	StartURL    int
	// GzippedNBytes is the compressed size (<gzipped_nbytes>; 0 =
	// unknown). It is not checked (the C++ client only shows it): a .gz
	// is bounded by a cap derived from NBytes/MaxBytes, and what counts
	// is the inflated file's size and MD5.
	GzippedNBytes int64
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
	// Detail, when set, says what was wrong instead of Want/Got (a .gz
	// that does not inflate).
	Detail string
}

func (e *VerifyError) Error() string {
	if e.Detail != "" {
		return fmt.Sprintf("%s: %s (error %d)", e.Path, e.Detail, e.Code)
	}
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

// Download fetches d.Path from d.GzippedURLs and d.URLs. It returns the
// index (in GzippedURLs then URLs) of the URL that served the file, or on
// failure the index of the last URL tried and an error classified by
// IsPermanent: it is permanent only if every URL failed permanently.
func (c *Client) Download(ctx context.Context, d DownloadSpec) (int64, error) {
	urls := make([]string, 0, len(d.GzippedURLs)+len(d.URLs))
	urls = append(append(urls, d.GzippedURLs...), d.URLs...)
	if len(urls) == 0 {
		return 0, fmt.Errorf("download %s: no URL", d.Path)
	}
	if d.Path == "" {
		return 0, errors.New("download: no target path")
	}
	if err := os.MkdirAll(filepath.Dir(d.Path), 0o755); err != nil {
		return 0, fmt.Errorf("download %s: %w", d.Path, err)
	}
	start := d.StartURL
	if start < 0 || start >= len(urls) {
		start = 0
	}
	var lastErr, transientErr error
	idx := start
	for k := range urls {
		idx = (start + k) % len(urls)
		var err error
		if idx < len(d.GzippedURLs) {
			err = c.downloadGzipped(ctx, d, urls[idx])
		} else {
			err = c.downloadFrom(ctx, d, urls[idx])
		}
		if err == nil {
			// A .gz part left by an earlier attempt has no further use
			// once the file is here, whichever URL brought it.
			RemoveGzipParts(d.Path)
			return int64(idx), nil
		}
		c.log.Debug("download attempt failed", "path", d.Path, "url", urls[idx], "err", err)
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

// gzipCap is the most a .gz of the file may hold: deflate can grow
// incompressible data, by 5 bytes per 16 KiB stored block plus the gzip
// header and trailer, so 1/64 more and 64 KiB cover any honest .gz. It is
// 0 (no cap) only when the file itself has none.
func (d *DownloadSpec) gzipCap() int64 {
	limit := d.byteCap()
	if limit <= 0 {
		return 0
	}
	return limit + limit/64 + 64<<10
}

// GzipPartPath is where a gzipped download of path is stored while it
// arrives: the C++ client's name (FILE_XFER::init_download appends
// ".gzt"), so a partial .gz is resumed from the same file.
func GzipPartPath(path string) string { return path + ".gzt" }

// gunzipTempPath is where the inflated bytes go before they replace path.
// '%' is refused in project file names (boinc.ValidateFileName), so no
// project file can have this name.
func gunzipTempPath(path string) string { return path + "%gunzip" }

// RemoveGzipParts removes what a gzipped download of path leaves while it
// is under way (the .gzt part and the inflation temp); a missing file is
// not an error. Callers that remove a download's file remove these too,
// as FILE_INFO::delete_file removes NAME.gz and NAME.gzt.
func RemoveGzipParts(path string) {
	_ = os.Remove(GzipPartPath(path))
	_ = os.Remove(gunzipTempPath(path))
}

// target is one file a URL fills: the final file, or the .gzt part of a
// gzipped URL.
type target struct {
	path string
	// resumeBelow is the complete file's size, as far as known: a
	// partial file at least this large is fetched again from byte 0, and
	// with 0 nothing is resumed (FILE_XFER::init_download: "if file is
	// already as large or larger than it's supposed to be, something's
	// screwy"; for a .gzt it compares with the uncompressed nbytes).
	resumeBelow int64
	// limit is the most bytes the file may hold (0 = no cap).
	limit int64
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
	if d.NBytes > 0 && st.Size() == d.NBytes {
		// A complete file from an earlier attempt: keep it if it verifies.
		if verifyFile(f, d) == nil {
			c.progress(d, st.Size())
			return nil
		}
	}
	if err := c.fetchInto(ctx, f, d, target{path: d.Path, resumeBelow: d.NBytes, limit: d.byteCap()}, url); err != nil {
		return err
	}
	if err := verifyFile(f, d); err != nil {
		_ = f.Close()
		_ = os.Remove(d.Path)
		return err
	}
	return nil
}

// downloadGzipped fetches url, a .gz of the file, into its .gzt part,
// inflates that to d.Path and verifies d.Path as downloadFrom does. It
// follows the C++ client's compressed download: FILE_INFO::parse (the
// <gzipped_url>s replace the download URLs and set download_gzipped),
// FILE_XFER::init_download (NAME.gzt, resumed from its size),
// CLIENT_STATE::handle_pers_file_xfers (the finished .gzt becomes NAME.gz
// and FILE_INFO::verify_file runs) and FILE_INFO::gunzip (inflate to a
// temp, rename over NAME, delete the .gz), then the size and MD5 checks of
// verify_file on NAME. Unlike gunzip it caps the inflated bytes, so a
// .gz bomb cannot fill the disk, and a .gz that does not inflate is a
// verification error (gzread's error merely ended the C++ loop, leaving a
// short file that failed its MD5).
func (c *Client) downloadGzipped(ctx context.Context, d DownloadSpec, url string) error {
	if d.NBytes > 0 {
		// The file itself from an earlier attempt (inflated, then the
		// process stopped before recording it): verify_file looks at
		// NAME before any .gz.
		if f, err := os.Open(d.Path); err == nil {
			st, serr := f.Stat()
			ok := serr == nil && st.Size() == d.NBytes && verifyFile(f, d) == nil
			_ = f.Close()
			if ok {
				c.progress(d, d.NBytes)
				return nil
			}
		}
	}
	gzResumeBelow := d.GzippedNBytes
	if gzResumeBelow <= 0 {
		gzResumeBelow = d.NBytes
	}
	part := GzipPartPath(d.Path)
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", part, err)
	}
	defer f.Close()
	if err := c.fetchInto(ctx, f, d, target{path: part, resumeBelow: gzResumeBelow, limit: d.gzipCap()}, url); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", part, err)
	}
	if err := gunzipTo(f, part, d.Path, d.byteCap()); err != nil {
		// A .gz that does not inflate, or inflates too far, is fetched
		// whole next time.
		_ = f.Close()
		_ = os.Remove(part)
		return err
	}
	_ = f.Close()
	_ = os.Remove(part)
	out, err := os.Open(d.Path)
	if err != nil {
		return fmt.Errorf("open %s: %w", d.Path, err)
	}
	defer out.Close()
	if err := verifyFile(out, d); err != nil {
		_ = out.Close()
		_ = os.Remove(d.Path)
		return err
	}
	return nil
}

// gunzipTo inflates the gzip stream in src (the file at srcPath) into
// path, through a temp file renamed over path once complete, writing at
// most limit bytes (0 = no cap). A stream that is not gzip, is cut short
// or fails its CRC is a VerifyError naming srcPath; one that inflates
// past limit is a VerifyError (ErrFileTooBig) naming path. Multi-member
// streams are read whole, as zlib's gzread does.
func gunzipTo(src io.Reader, srcPath, path string, limit int64) error {
	corrupt := func(err error) error {
		return &VerifyError{Code: boinc.ErrMD5Failed, Path: srcPath, Detail: "corrupt gzip data: " + err.Error()}
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(src, 64<<10))
	if err != nil {
		return corrupt(err)
	}
	defer zr.Close()
	tmp := gunzipTempPath(path)
	out, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s: %w", tmp, err)
	}
	fail := func(err error) error {
		_ = out.Close()
		_ = os.Remove(tmp)
		return err
	}
	body := io.Reader(zr)
	if limit > 0 {
		// One byte past the cap tells an over-size stream from an exact one.
		body = io.LimitReader(zr, limit+1)
	}
	n, err := io.Copy(&tagWriter{w: out}, body)
	var werr *writeError
	var rerr *fs.PathError
	switch {
	case errors.As(err, &werr):
		return fail(fmt.Errorf("write %s: %w", tmp, werr.err))
	case errors.As(err, &rerr):
		return fail(fmt.Errorf("read %s: %w", srcPath, err)) // the disk, not the data
	case err != nil:
		return fail(corrupt(err))
	}
	if limit > 0 && n > limit {
		return fail(&VerifyError{Code: boinc.ErrFileTooBig, Path: path,
			Want: "at most " + itoa64(limit) + " bytes", Got: "more, inflating " + srcPath})
	}
	if err := out.Sync(); err != nil {
		return fail(fmt.Errorf("sync %s: %w", tmp, err))
	}
	if err := out.Close(); err != nil {
		return fail(fmt.Errorf("close %s: %w", tmp, err))
	}
	if err := os.Rename(tmp, path); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("rename %s: %w", tmp, err)
	}
	return nil
}

// writeError marks an error of the output side of a copy, so the input's
// errors (corrupt data) are told from the disk's.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }

type tagWriter struct{ w io.Writer }

func (t *tagWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	if err != nil {
		err = &writeError{err: err}
	}
	return n, err
}

// fetchInto fills f (the file at t.path) from url, resuming what an
// earlier attempt left with a Range request, and syncs it.
func (c *Client) fetchInto(ctx context.Context, f *os.File, d DownloadSpec, t target, url string) error {
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", t.path, err)
	}
	offset := st.Size()
	if t.resumeBelow <= 0 || offset >= t.resumeBelow || (t.limit > 0 && offset >= t.limit) {
		offset = 0
	}
	if err := f.Truncate(offset); err != nil {
		return fmt.Errorf("truncate %s: %w", t.path, err)
	}
	// At most two requests: a Range request the server refuses with 416 is
	// repeated from byte 0.
	for attempt := 0; ; attempt++ {
		err := c.getInto(ctx, f, d, t, url, &offset)
		var he *HTTPError
		if attempt == 0 && offset > 0 && errors.As(err, &he) && he.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			offset = 0
			if err := f.Truncate(0); err != nil {
				return fmt.Errorf("truncate %s: %w", t.path, err)
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", t.path, err)
	}
	return nil
}

func (c *Client) progress(d DownloadSpec, n int64) {
	if d.Progress != nil {
		d.Progress(n)
	}
}

// getInto GETs url and writes the body into f at *offset, updating *offset.
func (c *Client) getInto(ctx context.Context, f *os.File, d DownloadSpec, t target, url string, offset *int64) error {
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
			return fmt.Errorf("truncate %s: %w", t.path, err)
		}
		*offset = 0
	}
	if _, err := f.Seek(*offset, io.SeekStart); err != nil {
		return fmt.Errorf("seek %s: %w", t.path, err)
	}
	limit := t.limit
	tooBig := func(got string) error {
		_ = f.Truncate(0)
		_ = os.Remove(t.path)
		return &VerifyError{Code: boinc.ErrFileTooBig, Path: t.path,
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
				return fmt.Errorf("write %s: %w", t.path, err)
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
			// (A short .gz fails to inflate, the same verification
			// error.) A body cut before its Content-Length is a read
			// error below, and that partial is kept for a Range resume.
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
