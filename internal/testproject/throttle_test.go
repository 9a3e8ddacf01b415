package testproject

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
)

func TestSlowDownloads(t *testing.T) {
	const size = 4000
	// 20 kB/s in 50 ms ticks: 1000-byte chunks, the whole file in ~0.2 s.
	s := startServer(t, Config{Job: JobTemplate{InputSize: size}, Faults: Faults{DownloadBytesPerSec: 20000}})
	r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
	in := r.Workunits[0].FileRefs[0].FileName
	i, _ := r.fileInfo(in)
	url := r.FileInfos[i].URL
	want := JobInput(1, size)

	tests := []struct {
		name string
		rng  string
		code int
		want []byte
	}{
		{"whole", "", http.StatusOK, want},
		{"resumed", "bytes=1500-", http.StatusPartialContent, want[1500:]},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hdr := map[string]string{}
			if tc.rng != "" {
				hdr["Range"] = tc.rng
			}
			code, got := get(t, url, hdr)
			if code != tc.code || !bytes.Equal(got, tc.want) {
				t.Errorf("HTTP %d with %d bytes, want HTTP %d with %d bytes", code, len(got), tc.code, len(tc.want))
			}
		})
	}

	// A client that reads the first chunk and goes away: the bytes sent so
	// far are flushed (so they can be stored and resumed from), and the
	// handler stops instead of writing into the void.
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	first := make([]byte, 1000)
	if _, err := io.ReadFull(resp.Body, first); err != nil {
		t.Fatalf("reading the first chunk: %v", err)
	}
	cancel()
	resp.Body.Close()
	if !bytes.Equal(first, want[:1000]) {
		t.Error("first chunk differs from the input")
	}

	st := s.Stats()
	if st.Downloads[in] != 3 || st.RangeDownloads[in] != 1 {
		t.Errorf("downloads %d (ranged %d), want 3 (ranged 1)", st.Downloads[in], st.RangeDownloads[in])
	}
	// The throttle can be lifted.
	s.SetFaults(Faults{})
	if code, got := get(t, url, nil); code != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("after lifting the throttle: HTTP %d with %d bytes", code, len(got))
	}

	// Close does not wait for a crawling body: it wakes the writer, and the
	// client sees a short body.
	s.SetFaults(Faults{DownloadBytesPerSec: 100})
	resp, err = testClient.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 5)); err != nil {
		t.Fatalf("reading the first chunk: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if rest, _ := io.ReadAll(resp.Body); 5+len(rest) >= size {
		t.Errorf("the whole body arrived (%d bytes) although the server closed", 5+len(rest))
	}
}
