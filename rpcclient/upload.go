package rpcclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/hashicorp/go-retryablehttp"
)

// UploadSpec describes one output file upload.
type UploadSpec struct {
	// URLs are the file's upload handler URLs, tried in order.
	URLs []string
	Path string
	// Name is the file's physical name as the server knows it.
	Name string
	// XMLSignature is the server's signature of the file description,
	// echoed back unchanged (surrounding whitespace aside).
	XMLSignature string
	MaxNBytes    float64
	NBytes       int64
	MD5          string
	// Progress, if set, is called with the number of file bytes sent
	// (counting any part the server already had).
	Progress func(bytes int64)
	// Meter, if set, measures the request bodies sent (header included,
	// as curl counts them) and their time.
	Meter *Meter
}

// UploadError is a refusal reported by file_upload_handler, or an HTTP
// failure of an upload, which the C++ client always treats as transient.
type UploadError struct {
	Permanent bool
	Message   string
	URL       string
	Err       error
}

func (e *UploadError) Error() string {
	kind := "transient"
	if e.Permanent {
		kind = "permanent"
	}
	msg := e.Message
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	return fmt.Sprintf("%s: %s upload error: %s", e.URL, kind, msg)
}

func (e *UploadError) Unwrap() error { return e.Err }

// Code is the BOINC error number the failure maps to.
func (e *UploadError) Code() int {
	if e.Permanent {
		return boinc.ErrUploadPermanent
	}
	return boinc.ErrUploadTransient
}

// fileSizeCheckThreshold: from this size on the server is asked how much it
// already has (FILE_SIZE_CHECK_THRESHOLD in client/file_xfer.cpp).
const fileSizeCheckThreshold = 8192

// Upload sends u.Path with the file_upload_handler protocol. The error is
// classified by IsPermanent: permanent only if every URL refused the file
// permanently.
func (c *Client) Upload(ctx context.Context, u UploadSpec) error {
	if len(u.URLs) == 0 {
		return fmt.Errorf("upload %s: no URL", u.Name)
	}
	st, err := os.Stat(u.Path)
	if err != nil {
		return fmt.Errorf("upload %s: %w", u.Name, err)
	}
	if st.Size() != u.NBytes {
		return fmt.Errorf("upload %s: %w", u.Name, &VerifyError{Code: boinc.ErrFileWrongSize, Path: u.Path,
			Want: itoa64(u.NBytes), Got: itoa64(st.Size())})
	}
	var lastErr, transientErr error
	for _, url := range u.URLs {
		err := c.uploadTo(ctx, u, url)
		if err == nil {
			return nil
		}
		c.log.Debug("upload attempt failed", "file", u.Name, "url", url, "err", err)
		if ctx.Err() != nil {
			return fmt.Errorf("upload %s: %w", u.Name, err)
		}
		lastErr = err
		if !IsPermanent(err) {
			transientErr = err
		}
	}
	if transientErr != nil {
		lastErr = transientErr
	}
	return fmt.Errorf("upload %s: %w", u.Name, lastErr)
}

func (c *Client) uploadTo(ctx context.Context, u UploadSpec, url string) error {
	var offset int64
	if u.NBytes >= fileSizeCheckThreshold {
		n, err := c.queryFileSize(ctx, u, url)
		if err != nil {
			return err
		}
		switch {
		case n == u.NBytes:
			// The server has the whole file (an earlier upload whose
			// reply was lost), as the C++ client accepts.
			if u.Progress != nil {
				u.Progress(u.NBytes)
			}
			return nil
		case n > u.NBytes:
			// More than the file holds: whatever the server has is not
			// this file, so it gets all of it; its final <status> decides.
			c.log.Warn("upload handler claims more bytes than the file has; sending it all",
				"file", u.Name, "url", url, "claimed", n, "nbytes", u.NBytes)
		case n > 0:
			offset = n
		}
	}
	header := uploadHeader(u, offset)
	ctx, w := c.watch(ctx, url)
	defer w.stop()
	body := func() (io.Reader, error) {
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", u.Path, err)
		}
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			_ = f.Close()
			return nil, fmt.Errorf("seek %s: %w", u.Path, err)
		}
		sent := offset
		data := &countingReader{r: io.LimitReader(f, u.NBytes-offset), fn: func(n int) {
			w.progress(n)
			sent += int64(n)
			if u.Progress != nil {
				u.Progress(sent)
			}
		}}
		return &readCloser{Reader: &meteredReader{r: io.MultiReader(bytes.NewReader(header), data), m: u.Meter}, c: f}, nil
	}
	req, err := c.newRequest(ctx, http.MethodPost, url, body)
	if err != nil {
		return err
	}
	// Streaming body: the upload handler (a CGI) needs the length up front.
	req.ContentLength = int64(len(header)) + u.NBytes - offset
	err = c.handlerExchange(ctx, w, req, url, nil)
	u.Meter.finish()
	return err
}

// uploadHeader builds the request header exactly as the C++ client does
// (client/file_xfer.cpp FILE_XFER::init_upload).
func uploadHeader(u UploadSpec, offset int64) []byte {
	b := make([]byte, 0, 512+len(u.XMLSignature))
	b = appendDSRHead(b)
	b = append(b, "<file_upload>\n<file_info>\n<name>"...)
	b = appendEsc(b, u.Name)
	b = append(b, "</name>\n<xml_signature>\n"...)
	b = append(b, strings.TrimSpace(u.XMLSignature)...)
	b = append(b, "</xml_signature>\n<max_nbytes>"...)
	b = fmt0(b, u.MaxNBytes)
	b = append(b, "</max_nbytes>\n</file_info>\n<nbytes>"...)
	b = strconv.AppendInt(b, u.NBytes, 10)
	b = append(b, "</nbytes>\n<md5_cksum>"...)
	b = appendEsc(b, u.MD5)
	b = append(b, "</md5_cksum>\n<offset>"...)
	b = strconv.AppendInt(b, offset, 10)
	b = append(b, "</offset>\n<data>\n"...)
	return b
}

func appendDSRHead(b []byte) []byte {
	b = append(b, "<data_server_request>\n    <core_client_major_version>"...)
	b = strconv.AppendInt(b, boinc.ClientMajor, 10)
	b = append(b, "</core_client_major_version>\n    <core_client_minor_version>"...)
	b = strconv.AppendInt(b, boinc.ClientMinor, 10)
	b = append(b, "</core_client_minor_version>\n    <core_client_release>"...)
	b = strconv.AppendInt(b, boinc.ClientRelease, 10)
	return append(b, "</core_client_release>\n"...)
}

func appendEsc(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '&':
			b = append(b, "&amp;"...)
		case '<':
			b = append(b, "&lt;"...)
		case '>':
			b = append(b, "&gt;"...)
		default:
			b = append(b, s[i])
		}
	}
	return b
}

// queryFileSize asks the handler how many bytes of the file it has.
func (c *Client) queryFileSize(ctx context.Context, u UploadSpec, url string) (int64, error) {
	b := appendDSRHead(nil)
	b = append(b, "    <get_file_size>"...)
	b = appendEsc(b, u.Name)
	b = append(b, "</get_file_size>\n</data_server_request>\n"...)
	ctx, w := c.watchTotal(ctx, url, exchangeLimit{max: c.lim.Load().replyTimeout})
	defer w.stop()
	req, err := c.newRequest(ctx, http.MethodPost, url, b)
	if err != nil {
		return 0, err
	}
	var size int64 = -1
	err = c.handlerExchange(ctx, w, req, url, &size)
	if err != nil {
		return 0, err
	}
	if size < 0 {
		// Missing, negative or not a number: nothing usable is there, so
		// the whole file goes; the final <status> decides.
		c.log.Warn("upload handler sent no usable <file_size>; sending the whole file", "file", u.Name, "url", url)
		return 0, nil
	}
	return size, nil
}

// handlerExchange sends a request to file_upload_handler and interprets its
// <data_server_reply>. If size is non-nil it receives <file_size>.
func (c *Client) handlerExchange(ctx context.Context, w *stallWatch, req *retryablehttp.Request, url string, size *int64) error {
	resp, err := c.do(req)
	if err != nil {
		err = w.explain(ctx, err)
		var he *HTTPError
		if errors.As(err, &he) {
			// HTTP failures of uploads are transient in the C++ client
			// (PERS_FILE_XFER::poll), a 404 included.
			return &UploadError{URL: url, Err: err}
		}
		return err
	}
	defer resp.Body.Close()
	w.progress(0)
	data, err := c.readReply(&watchedReader{r: resp.Body, w: w}, url)
	if err != nil {
		return w.explain(ctx, err)
	}
	return parseUploadReply(data, url, size)
}

// parseUploadReply maps <data_server_reply> to an error: status 0 is
// success, -1 permanent, anything else (1 or none) transient.
func parseUploadReply(data []byte, url string, size *int64) error {
	status, hasStatus := tagValue(data, "status")
	msg, _ := tagValue(data, "message")
	if size != nil {
		if s, ok := tagValue(data, "file_size"); ok {
			if n, err := strconv.ParseFloat(s, 64); err == nil && n >= 0 && n < 1<<62 {
				*size = int64(n)
			}
		}
	}
	if !hasStatus {
		return &UploadError{URL: url, Message: "reply has no <status>"}
	}
	n, err := strconv.Atoi(status)
	if err != nil {
		return &UploadError{URL: url, Message: fmt.Sprintf("reply status %q", status)}
	}
	switch {
	case n == 0:
		return nil
	case n < 0:
		return &UploadError{Permanent: true, URL: url, Message: msg}
	default:
		return &UploadError{URL: url, Message: msg}
	}
}

// tagValue returns the trimmed text of the first <tag>…</tag>. The reply is
// tiny and often preceded by CGI junk, so a substring scan (as the C++
// client's parse_int/parse_str) is more forgiving than an XML decoder.
func tagValue(data []byte, tag string) (string, bool) {
	open := []byte("<" + tag + ">")
	i := bytes.Index(data, open)
	if i < 0 {
		return "", false
	}
	rest := data[i+len(open):]
	j := bytes.Index(rest, []byte("</"+tag+">"))
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(string(rest[:j])), true
}

type countingReader struct {
	r  io.Reader
	fn func(int)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		c.fn(n)
	}
	return n, err
}

type readCloser struct {
	io.Reader
	c io.Closer
}

func (r *readCloser) Close() error { return r.c.Close() }
