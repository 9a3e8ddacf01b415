package rpcclient

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

func gzipBytes(t *testing.T, members ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, m := range members {
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(m); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

// gzServer serves /f (plain) and /f.gz with Range support and records
// each request's path and Range header; a nil body answers 404.
type gzServer struct {
	mu   sync.Mutex
	reqs []string // "PATH RANGE"
}

func (g *gzServer) start(t *testing.T, plain, gz []byte) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.reqs = append(g.reqs, strings.TrimSpace(r.URL.Path+" "+r.Header.Get("Range")))
		g.mu.Unlock()
		body := plain
		if strings.HasSuffix(r.URL.Path, ".gz") {
			body = gz
		}
		if body == nil {
			http.NotFound(w, r)
			return
		}
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func (g *gzServer) requests() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.reqs...)
}

// TestDownloadGzipped: a file offered gzipped is fetched as its .gz,
// resumed with Range, inflated and checked as the uncompressed file; a .gz
// URL that fails falls back to the plain URL; a corrupt .gz, one that
// inflates to the wrong bytes and a .gz bomb are verification errors that
// leave nothing behind, the bomb inflating no further than the cap.
func TestDownloadGzipped(t *testing.T) {
	t.Parallel()
	// Half random (incompressible), half text: the .gz is a real
	// compressed stream of a few blocks.
	content := make([]byte, 40000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range content[:20000] {
		content[i] = byte(rng.UintN(256))
	}
	copy(content[20000:], bytes.Repeat([]byte("boinc gzip "), 2000))
	gz := gzipBytes(t, content)
	tests := []struct {
		name    string
		plain   []byte // nil: 404
		gz      []byte // nil: 404
		partGz  []byte // an earlier attempt's .gzt
		final   []byte // an earlier attempt's final file
		noPlain bool   // offer the .gz URL only
		nbytes  int64  // default len(content)
		// want: the requests, in order ("PATH RANGE").
		wantReqs []string
		wantIdx  int64
		// wantErr: a VerifyError with this code and message part.
		wantCode int
		wantErr  string
	}{
		{name: "gz preferred", plain: content, gz: gz, wantReqs: []string{"/f.gz"}, wantIdx: 0},
		{name: "multi-member gz", plain: content, gz: gzipBytes(t, content[:123], content[123:]), wantReqs: []string{"/f.gz"}},
		{name: "resume partial gz", plain: content, gz: gz, partGz: gz[:len(gz)/2],
			wantReqs: []string{"/f.gz bytes=" + itoa64(int64(len(gz)/2)) + "-"}},
		{name: "oversized partial gz restarts", plain: content, gz: gz, partGz: bytes.Repeat([]byte{1}, len(content)+1),
			wantReqs: []string{"/f.gz"}},
		{name: "gz 404 falls back to plain", plain: content, wantReqs: []string{"/f.gz", "/f"}, wantIdx: 1},
		{name: "complete file kept", plain: content, gz: gz, final: content, wantReqs: nil},
		{name: "corrupt gz", gz: corruptBytesForTest(gz), noPlain: true, wantReqs: []string{"/f.gz"},
			wantCode: boinc.ErrMD5Failed, wantErr: "f.gzt: corrupt gzip data"},
		{name: "truncated gz", gz: gz[:len(gz)-10], noPlain: true, wantReqs: []string{"/f.gz"},
			wantCode: boinc.ErrMD5Failed, wantErr: "corrupt gzip data: unexpected EOF"},
		{name: "gz of other bytes", gz: gzipBytes(t, bytes.Repeat([]byte{'x'}, len(content))), noPlain: true,
			wantReqs: []string{"/f.gz"}, wantCode: boinc.ErrMD5Failed, wantErr: "MD5 mismatch"},
		{name: "gz of a short file", gz: gzipBytes(t, content[:100]), noPlain: true,
			wantReqs: []string{"/f.gz"}, wantCode: boinc.ErrFileWrongSize, wantErr: "wrong size"},
		{name: "gzip bomb", gz: gzipBytes(t, make([]byte, 16<<20)), noPlain: true, wantReqs: []string{"/f.gz"},
			wantCode: boinc.ErrFileTooBig, wantErr: "inflating"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var g gzServer
			srv := g.start(t, tc.plain, tc.gz)
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tc.partGz != nil {
				if err := os.WriteFile(GzipPartPath(path), tc.partGz, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.final != nil {
				if err := os.WriteFile(path, tc.final, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			nbytes := tc.nbytes
			if nbytes == 0 {
				nbytes = int64(len(content))
			}
			d := DownloadSpec{GzippedURLs: []string{srv.URL + "/f.gz"}, Path: path, NBytes: nbytes, MD5: md5hex(content),
				GzippedNBytes: int64(len(gz)), MaxBytes: nbytes}
			if !tc.noPlain {
				d.URLs = []string{srv.URL + "/f"}
			}
			idx, err := newTestClient(t, Options{}).Download(context.Background(), d)
			if got := g.requests(); strings.Join(got, ",") != strings.Join(tc.wantReqs, ",") {
				t.Errorf("requests %q, want %q", got, tc.wantReqs)
			}
			// Nothing but the final file is ever left in the directory.
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if e.Name() != "f" {
					t.Errorf("left behind: %s", e.Name())
				}
			}
			if tc.wantCode != 0 {
				var ve *VerifyError
				if !errors.As(err, &ve) || ve.Code != tc.wantCode || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want code %d mentioning %q", err, tc.wantCode, tc.wantErr)
				}
				if !IsPermanent(err) {
					t.Errorf("a verification error is not permanent for this attempt")
				}
				if len(ents) != 0 {
					t.Errorf("files kept after a verification failure: %v", ents)
				}
				return
			}
			if err != nil || idx != tc.wantIdx {
				t.Fatalf("idx %d err %v, want idx %d", idx, err, tc.wantIdx)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, content) {
				t.Fatalf("content differs (%d bytes)", len(got))
			}
		})
	}
}

// TestDownloadGzipStartIndex: the rotation counts the gzipped URLs first;
// an attempt that starts on a plain URL (the last one tried before) wraps
// round to the .gz URL when the plain one fails.
func TestDownloadGzipStartIndex(t *testing.T) {
	t.Parallel()
	content := []byte(strings.Repeat("rotation ", 100))
	var g gzServer
	srv := g.start(t, nil, gzipBytes(t, content))
	path := filepath.Join(t.TempDir(), "f")
	d := DownloadSpec{GzippedURLs: []string{srv.URL + "/f.gz"}, URLs: []string{srv.URL + "/f"}, StartURL: 1,
		Path: path, NBytes: int64(len(content)), MD5: md5hex(content)}
	idx, err := newTestClient(t, Options{}).Download(context.Background(), d)
	if err != nil || idx != 0 {
		t.Fatalf("idx %d err %v, want the .gz (0)", idx, err)
	}
	if got := g.requests(); strings.Join(got, ",") != "/f,/f.gz" {
		t.Errorf("requests %q, want /f then /f.gz", got)
	}
}

func corruptBytesForTest(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = ^c
	}
	return out
}
