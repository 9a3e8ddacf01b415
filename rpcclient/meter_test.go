package rpcclient

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestMeterDownload: the meter counts the body bytes that arrived, not
// the file's size: a resumed part and a file already complete move less.
func TestMeterDownload(t *testing.T) {
	content := bytes.Repeat([]byte("0123456789abcdef"), 20000) // 320000 bytes, several reads
	tests := []struct {
		name      string
		partial   []byte
		wantBytes int64
	}{
		{"fresh", nil, int64(len(content))},
		{"resumed", content[:100000], int64(len(content)) - 100000},
		{"already complete", content, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := fileServer(t, content, false)
			path := filepath.Join(t.TempDir(), "f")
			if tc.partial != nil {
				if err := os.WriteFile(path, tc.partial, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var m Meter
			c := newTestClient(t, Options{})
			if _, err := c.Download(context.Background(), DownloadSpec{URLs: []string{srv.URL}, Path: path,
				NBytes: int64(len(content)), MD5: md5hex(content), Meter: &m}); err != nil {
				t.Fatal(err)
			}
			n, d := m.Measured()
			if n != tc.wantBytes {
				t.Errorf("measured %d bytes, want %d", n, tc.wantBytes)
			}
			if (d > 0) != (n > 0) {
				t.Errorf("measured %d bytes in %v", n, d)
			}
		})
	}
}

// TestMeterUpload: the meter counts the request body the handler got
// (header included, as curl counts it), and nothing when the server
// already had the file.
func TestMeterUpload(t *testing.T) {
	big := bytes.Repeat([]byte("upload data "), 2000)
	tests := []struct {
		name     string
		content  []byte
		have     []byte
		sizeResp int64 // forced size query answer (-1: none)
	}{
		{"small", []byte("small output"), nil, -1},
		{"big resumed", big, big[:10000], -1},
		{"already there", big, nil, int64(len(big))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			us := &uploadServer{stored: map[string][]byte{}, t: t, sizeResp: map[string]int64{}}
			if tc.have != nil {
				us.stored["f"] = append([]byte(nil), tc.have...)
			}
			if tc.sizeResp >= 0 {
				us.sizeResp["f"] = tc.sizeResp
			}
			srv := httptest.NewServer(us)
			t.Cleanup(srv.Close)
			path := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(path, tc.content, 0o644); err != nil {
				t.Fatal(err)
			}
			var m Meter
			c := newTestClient(t, Options{})
			if err := c.Upload(context.Background(), UploadSpec{URLs: []string{srv.URL}, Path: path, Name: "f", XMLSignature: "sig\n.",
				MaxNBytes: 1e6, NBytes: int64(len(tc.content)), MD5: md5hex(tc.content), Meter: &m}); err != nil {
				t.Fatal(err)
			}
			var want int64
			for _, b := range us.bodies {
				want += int64(len(b))
			}
			n, d := m.Measured()
			if n != want {
				t.Errorf("measured %d bytes, the handler got %d", n, want)
			}
			if (d > 0) != (n > 0) {
				t.Errorf("measured %d bytes in %v", n, d)
			}
		})
	}
}

func TestMeterNil(t *testing.T) {
	var m *Meter
	m.begin()
	m.add(10)
	m.finish()
	if n, d := m.Measured(); n != 0 || d != 0 {
		t.Errorf("a nil meter measured %d bytes in %v", n, d)
	}
}
