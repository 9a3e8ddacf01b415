package rpcclient

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

func newTestClient(t *testing.T, o Options) *Client {
	t.Helper()
	c := New(o)
	c.rc.RetryWaitMin = time.Millisecond
	c.rc.RetryWaitMax = 5 * time.Millisecond
	return c
}

func md5hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// fileServer serves content, honouring Range unless ignoreRange is set.
func fileServer(t *testing.T, content []byte, ignoreRange bool) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	var ranges []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ua := r.Header.Get("User-Agent"); ua != "BOINC client ("+platform.This()+" 7.20.5)" {
			t.Errorf("User-Agent %q", ua)
		}
		mu.Lock()
		ranges = append(ranges, r.Header.Get("Range"))
		mu.Unlock()
		rg := r.Header.Get("Range")
		if rg == "" || ignoreRange {
			w.Write(content)
			return
		}
		from, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		if from >= len(content) {
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", from, len(content)-1, len(content)))
		w.WriteHeader(http.StatusPartialContent)
		w.Write(content[from:])
	}))
	t.Cleanup(srv.Close)
	return srv, &ranges
}

func TestDownload(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	sum := md5hex(content)
	tests := []struct {
		name        string
		partial     []byte // existing file content
		ignoreRange bool
		spec        func(d *DownloadSpec)
		wantErr     string
		wantCode    int
		permanent   bool
		wantRange   string
	}{
		{name: "ok", spec: func(d *DownloadSpec) {}},
		{name: "unknown size and md5", spec: func(d *DownloadSpec) { d.NBytes = 0; d.MD5 = "" }},
		{name: "md5 mismatch", spec: func(d *DownloadSpec) { d.MD5 = strings.Repeat("0", 32) }, wantCode: boinc.ErrMD5Failed, permanent: true},
		{name: "wrong size", spec: func(d *DownloadSpec) { d.NBytes = int64(len(content)) + 10 }, wantCode: boinc.ErrFileWrongSize, permanent: true},
		{name: "oversized body", spec: func(d *DownloadSpec) { d.NBytes = 1000; d.MD5 = "" }, wantCode: boinc.ErrFileTooBig, permanent: true},
		{name: "max bytes cap", spec: func(d *DownloadSpec) { d.NBytes = 0; d.MD5 = ""; d.MaxBytes = 100 }, wantCode: boinc.ErrFileTooBig, permanent: true},
		{name: "resume with range", partial: content[:30000], spec: func(d *DownloadSpec) {}, wantRange: "bytes=30000-"},
		{name: "server ignores range", partial: content[:30000], ignoreRange: true, spec: func(d *DownloadSpec) {}, wantRange: "bytes=30000-"},
		{name: "corrupt partial restarts", partial: append(bytes.Repeat([]byte("x"), len(content)), 'y'), spec: func(d *DownloadSpec) {}, wantRange: ""},
		{name: "complete bad file restarts", partial: bytes.Repeat([]byte("x"), len(content)), spec: func(d *DownloadSpec) {}, wantRange: ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, ranges := fileServer(t, content, tc.ignoreRange)
			path := filepath.Join(t.TempDir(), "sub", "f")
			if tc.partial != nil {
				os.MkdirAll(filepath.Dir(path), 0o755)
				if err := os.WriteFile(path, tc.partial, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var lastProgress int64
			d := DownloadSpec{URLs: []string{srv.URL + "/f"}, Path: path, NBytes: int64(len(content)), MD5: sum,
				Progress: func(n int64) { lastProgress = n }}
			tc.spec(&d)
			c := newTestClient(t, Options{})
			idx, err := c.Download(context.Background(), d)
			if tc.wantCode != 0 {
				var ve *VerifyError
				if !errors.As(err, &ve) || ve.Code != tc.wantCode {
					t.Fatalf("err %v, want code %d", err, tc.wantCode)
				}
				if IsPermanent(err) != tc.permanent {
					t.Errorf("IsPermanent = %v", !tc.permanent)
				}
				if _, serr := os.Stat(path); !os.IsNotExist(serr) {
					t.Errorf("file kept after verify failure")
				}
				return
			}
			if err != nil || idx != 0 {
				t.Fatalf("idx %d err %v", idx, err)
			}
			got, _ := os.ReadFile(path)
			if !bytes.Equal(got, content) {
				t.Fatalf("content differs (%d bytes)", len(got))
			}
			if lastProgress != int64(len(content)) {
				t.Errorf("progress %d", lastProgress)
			}
			if tc.partial != nil && (*ranges)[0] != tc.wantRange {
				t.Errorf("range %q, want %q", (*ranges)[0], tc.wantRange)
			}
		})
	}
}

func TestDownload416Restarts(t *testing.T) {
	content := []byte("short file")
	srv, ranges := fileServer(t, content, false)
	path := filepath.Join(t.TempDir(), "f")
	// A partial file longer than the server's copy provokes 416.
	os.WriteFile(path, []byte("0123456789ABCDEF"), 0o644)
	c := newTestClient(t, Options{})
	_, err := c.Download(context.Background(), DownloadSpec{URLs: []string{srv.URL}, Path: path, NBytes: 100})
	var ve *VerifyError
	if !errors.As(err, &ve) || ve.Code != boinc.ErrFileWrongSize {
		t.Fatalf("err %v", err)
	}
	if len(*ranges) != 2 || (*ranges)[0] != "bytes=16-" || (*ranges)[1] != "" {
		t.Errorf("ranges %q", *ranges)
	}
}

func TestDownloadHTTPErrorsAndFailover(t *testing.T) {
	content := []byte("hello")
	var hits500 int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/404":
			http.NotFound(w, r)
		case "/500":
			mu.Lock()
			hits500++
			mu.Unlock()
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			w.Write(content)
		}
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, Options{})
	tests := []struct {
		name      string
		urls      []string
		start     int
		wantIdx   int64
		wantErr   bool
		permanent bool
		status    int
	}{
		{"404 permanent", []string{srv.URL + "/404"}, 0, 0, true, true, 404},
		{"500 transient", []string{srv.URL + "/500"}, 0, 0, true, false, 500},
		{"failover to second", []string{srv.URL + "/404", srv.URL + "/ok"}, 0, 1, false, false, 0},
		{"start url wraps", []string{srv.URL + "/ok", srv.URL + "/404"}, 1, 0, false, false, 0},
		{"transient wins over permanent", []string{srv.URL + "/404", srv.URL + "/500"}, 0, 1, true, false, 500},
		{"connection refused transient", []string{"http://127.0.0.1:1/x"}, 0, 0, true, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f")
			idx, err := c.Download(context.Background(), DownloadSpec{URLs: tc.urls, StartURL: tc.start, Path: path, NBytes: 5, MD5: md5hex(content)})
			if (err != nil) != tc.wantErr || idx != tc.wantIdx {
				t.Fatalf("idx %d err %v", idx, err)
			}
			if err == nil {
				return
			}
			if IsPermanent(err) != tc.permanent {
				t.Errorf("IsPermanent(%v) = %v", err, !tc.permanent)
			}
			var he *HTTPError
			if tc.status != 0 && (!errors.As(err, &he) || he.StatusCode != tc.status) {
				t.Errorf("err %v, want HTTP %d", err, tc.status)
			}
		})
	}
	if hits500 < 3 {
		t.Errorf("500 was tried %d times, want transport retries", hits500)
	}
}

func TestDownloadStall(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	path := filepath.Join(t.TempDir(), "f")

	t.Run("stall timeout", func(t *testing.T) {
		c := newTestClient(t, Options{StallTimeout: 200 * time.Millisecond})
		_, err := c.Download(context.Background(), DownloadSpec{URLs: []string{srv.URL}, Path: path, NBytes: 1000})
		var se *StallError
		if !errors.As(err, &se) || IsPermanent(err) {
			t.Fatalf("err %v, want transient stall", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "partial" {
			t.Errorf("partial data %q not kept", b)
		}
	})
	t.Run("context cancel", func(t *testing.T) {
		c := newTestClient(t, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := c.Download(ctx, DownloadSpec{URLs: []string{srv.URL, srv.URL}, Path: path + "2", NBytes: 1000})
		if !errors.Is(err, context.Canceled) || IsPermanent(err) {
			t.Fatalf("err %v, want cancellation", err)
		}
	})
}

// uploadServer emulates file_upload_handler: it parses the header line by
// line up to <data>, then reads nbytes-offset bytes.
type uploadServer struct {
	mu       sync.Mutex
	stored   map[string][]byte
	replies  []string // forced replies for upload requests, consumed in order
	bodies   [][]byte
	queries  int
	ctypes   []string
	t        *testing.T
	sizeResp map[string]int64
}

func (s *uploadServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctypes = append(s.ctypes, r.Header.Get("Content-Type"))
	br := bufio.NewReader(r.Body)
	var head bytes.Buffer
	fields := map[string]string{}
	for {
		line, err := br.ReadString('\n')
		head.WriteString(line)
		if err != nil {
			break
		}
		l := strings.TrimSpace(line)
		for _, tag := range []string{"name", "nbytes", "offset", "get_file_size", "md5_cksum"} {
			if v, ok := tagValue([]byte(l), tag); ok {
				fields[tag] = v
			}
		}
		if l == "<data>" {
			break
		}
	}
	if name, ok := fields["get_file_size"]; ok {
		s.queries++
		n := int64(len(s.stored[name]))
		if v, ok := s.sizeResp[name]; ok {
			n = v
		}
		fmt.Fprintf(w, "<data_server_reply>\n    <status>0</status>\n    <file_size>%d</file_size>\n</data_server_reply>\n", n)
		return
	}
	rest, _ := io.ReadAll(br)
	s.bodies = append(s.bodies, append(head.Bytes(), rest...))
	if len(s.replies) > 0 {
		rep := s.replies[0]
		s.replies = s.replies[1:]
		io.WriteString(w, rep)
		return
	}
	nbytes, _ := strconv.Atoi(fields["nbytes"])
	offset, _ := strconv.Atoi(fields["offset"])
	if len(rest) != nbytes-offset {
		s.t.Errorf("upload body %d bytes, want %d", len(rest), nbytes-offset)
	}
	name := fields["name"]
	s.stored[name] = append(s.stored[name][:offset], rest...)
	io.WriteString(w, "<data_server_reply>\n    <status>0</status>\n</data_server_reply>\n")
}

func TestUploadMatchesCapture(t *testing.T) {
	capture := readFixture(t, "upload/upload_request_file_upload.bin")
	i := bytes.Index(capture, []byte("<data>\n"))
	data := capture[i+len("<data>\n"):]
	path := filepath.Join(t.TempDir(), "out")
	os.WriteFile(path, data, 0o644)
	us := &uploadServer{stored: map[string][]byte{}, t: t}
	srv := httptest.NewServer(us)
	t.Cleanup(srv.Close)
	c := newTestClient(t, Options{})
	err := c.Upload(context.Background(), UploadSpec{
		URLs: []string{srv.URL + "/cgi-bin/file_upload_handler"}, Path: path, Name: "refwu_1795268541_1_0_r7919_0",
		XMLSignature: "\na84dad895dd0cebc9682de1929c6fc1b3f2ff021f8edb2c05024639cca66f377\nad5516084c94f35ee0f4bd3c4323b22f32bcaffabd59609f7f6fde2ba250e11d\n00fa32c255949fab10db2cea4db7df77699eb0d44fb9ba0693ba459f6725c8b1\n8ff6de74411b884f29d7b5dc34f18776e0aa9af69add6279430fa6a652fe038f\n.\n",
		MaxNBytes:    65536, NBytes: int64(len(data)), MD5: "b351e64117fecd13f028009656b05c18",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(us.bodies) != 1 || !bytes.Equal(us.bodies[0], capture) {
		t.Fatalf("request body differs from capture:\n%q\nwant\n%q", us.bodies, capture)
	}
	if us.ctypes[0] != postContentType || us.queries != 0 {
		t.Errorf("content type %q, queries %d", us.ctypes[0], us.queries)
	}
}

func TestUpload(t *testing.T) {
	big := bytes.Repeat([]byte("upload data "), 2000) // 24000 bytes: size query used
	tests := []struct {
		name      string
		content   []byte
		have      []byte // already on the server
		sizeResp  int64  // forced size query answer (-1: none)
		replies   []string
		wantErr   bool
		permanent bool
		wantSent  int // bytes of file data in the upload request, -1 = no upload request
	}{
		{name: "small ok", content: []byte("small"), sizeResp: -1, wantSent: 5},
		{name: "big fresh", content: big, sizeResp: -1, wantSent: len(big)},
		{name: "big resume", content: big, have: big[:10000], sizeResp: -1, wantSent: len(big) - 10000},
		{name: "big already there", content: big, sizeResp: int64(len(big)), wantSent: -1},
		{name: "status -1 permanent", content: []byte("x"), sizeResp: -1, replies: []string{"<data_server_reply><status>-1</status><message>bad signature</message></data_server_reply>"},
			wantErr: true, permanent: true, wantSent: 1},
		{name: "status 1 transient", content: []byte("x"), sizeResp: -1, replies: []string{"<data_server_reply><status>1</status></data_server_reply>"},
			wantErr: true, wantSent: 1},
		{name: "no status transient", content: []byte("x"), sizeResp: -1, replies: []string{"<html>oops</html>"}, wantErr: true, wantSent: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			us := &uploadServer{stored: map[string][]byte{}, t: t, replies: tc.replies, sizeResp: map[string]int64{}}
			if tc.have != nil {
				us.stored["f"] = append([]byte(nil), tc.have...)
			}
			if tc.sizeResp >= 0 {
				us.sizeResp["f"] = tc.sizeResp
			}
			srv := httptest.NewServer(us)
			t.Cleanup(srv.Close)
			path := filepath.Join(t.TempDir(), "f")
			os.WriteFile(path, tc.content, 0o644)
			c := newTestClient(t, Options{})
			var progress int64
			err := c.Upload(context.Background(), UploadSpec{URLs: []string{srv.URL}, Path: path, Name: "f", XMLSignature: "sig\n.",
				MaxNBytes: 1e6, NBytes: int64(len(tc.content)), MD5: md5hex(tc.content), Progress: func(n int64) { progress = n }})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if err != nil {
				var ue *UploadError
				if !errors.As(err, &ue) || IsPermanent(err) != tc.permanent {
					t.Errorf("err %v, permanent %v", err, IsPermanent(err))
				}
				if tc.permanent && !strings.Contains(err.Error(), "bad signature") {
					t.Errorf("message missing from %v", err)
				}
				return
			}
			if tc.wantSent < 0 {
				if len(us.bodies) != 0 {
					t.Errorf("uploaded although server had the file")
				}
			} else {
				body := us.bodies[0]
				data := body[bytes.Index(body, []byte("<data>\n"))+7:]
				if len(data) != tc.wantSent {
					t.Errorf("sent %d bytes, want %d", len(data), tc.wantSent)
				}
				if !bytes.Equal(us.stored["f"], tc.content) {
					t.Errorf("server copy differs")
				}
			}
			if progress != int64(len(tc.content)) {
				t.Errorf("progress %d", progress)
			}
			if wantQ := len(tc.content) >= fileSizeCheckThreshold; (us.queries > 0) != wantQ {
				t.Errorf("size queries %d", us.queries)
			}
		})
	}
}

func TestUploadHTTPErrorTransient(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "f")
	os.WriteFile(path, []byte("x"), 0o644)
	c := newTestClient(t, Options{})
	err := c.Upload(context.Background(), UploadSpec{URLs: []string{srv.URL}, Path: path, Name: "f", NBytes: 1})
	var he *HTTPError
	if err == nil || IsPermanent(err) || !errors.As(err, &he) || he.StatusCode != 404 {
		t.Fatalf("err %v, want transient HTTP 404", err)
	}
	// A local size mismatch is a permanent problem.
	err = c.Upload(context.Background(), UploadSpec{URLs: []string{srv.URL}, Path: path, Name: "f", NBytes: 2})
	if !IsPermanent(err) {
		t.Errorf("size mismatch err %v not permanent", err)
	}
}

func TestSchedulerRPCAndMaster(t *testing.T) {
	reply := readFixture(t, "scheduler/04_reply_result_acks.xml")
	master := readFixture(t, "client_files/master_127.0.0.1_18080.xml")
	var gotBody []byte
	var gotCT string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Write(master)
		case "/nosched":
			w.Write([]byte("<html>no scheduler</html>"))
		case "/cgi":
			gotBody, _ = io.ReadAll(r.Body)
			gotCT = r.Header.Get("Content-Type")
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				http.Error(w, "want gzip", 400)
				return
			}
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			zw.Write([]byte("Content-type: text/xml\n\n"))
			zw.Write(reply)
			zw.Close()
		case "/big":
			w.Write([]byte("<scheduler_reply>"))
			w.Write(bytes.Repeat([]byte(" "), 4096))
			w.Write([]byte("</scheduler_reply>"))
		case "/bad":
			w.Write([]byte("<scheduler_reply><file_info><name>../x</name></file_info></scheduler_reply>"))
		}
	}))
	t.Cleanup(srv.Close)
	c := newTestClient(t, Options{MaxReplyBytes: 4000})
	ctx := context.Background()

	urls, page, err := c.FetchMaster(ctx, srv.URL+"/")
	if err != nil || len(urls) != 1 || urls[0] != "http://127.0.0.1:18080/cgi" || !bytes.Equal(page, master) {
		t.Fatalf("master %q %v", urls, err)
	}
	if _, _, err := c.FetchMaster(ctx, srv.URL+"/nosched"); err == nil {
		t.Error("master page without scheduler accepted")
	}

	body := []byte("<scheduler_request>\n</scheduler_request>\n")
	r, raw, err := c.SchedulerRPC(ctx, srv.URL+"/cgi", body)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ResultAcks) != 2 || !bytes.HasSuffix(raw, reply) || !bytes.Equal(gotBody, body) || gotCT != postContentType {
		t.Errorf("reply %+v body %q ct %q", r, gotBody, gotCT)
	}

	_, _, err = c.SchedulerRPC(ctx, srv.URL+"/big", body)
	var tl *ReplyTooLargeError
	if !errors.As(err, &tl) {
		t.Errorf("oversized reply: %v", err)
	}
	_, raw, err = c.SchedulerRPC(ctx, srv.URL+"/bad", body)
	if err == nil || raw == nil || IsPermanent(err) {
		t.Errorf("hostile reply: err %v raw %q", err, raw)
	}
}
