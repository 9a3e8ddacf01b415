package testproject

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
	"testing"
)

// getRaw GETs url and returns the status, the body as far as it came and
// the error that ended it (nil for a complete body).
func getRaw(t *testing.T, url, rng string) (int, []byte, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not gzip: %v", err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gunzip: %v", err)
	}
	return out
}

// TestGzipInput: with GzipInput the input's file_info carries
// <gzipped_url> and <gzipped_nbytes> beside <url> (not with GzipOnly),
// NAME.gz is served with Range and counted apart from NAME; CutDownloads
// breaks a download half-way and GzipBombDownloads serves a small .gz
// that inflates far past the input.
func TestGzipInput(t *testing.T) {
	const size = 5000
	t.Run("offered beside the plain url", func(t *testing.T) {
		s := startServer(t, Config{Job: JobTemplate{InputSize: size, GzipInput: true}, Faults: Faults{CutDownloads: 1}})
		r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
		in := r.Workunits[0].FileRefs[0].FileName
		i, ok := r.fileInfo(in)
		if !ok {
			t.Fatalf("no file_info for %s", in)
		}
		fi := r.FileInfos[i]
		want := JobInput(1, size)
		sum := md5.Sum(want)
		if fi.URL == "" || fi.GzippedURL != fi.URL+".gz" || fi.NBytes != size || fi.MD5 != hex.EncodeToString(sum[:]) {
			t.Fatalf("file_info %+v: want <url>, <gzipped_url> = <url>.gz and the uncompressed size and md5", fi)
		}

		// 1: cut half-way (a read error, half the body).
		code, got, err := getRaw(t, fi.GzippedURL, "")
		if code != 200 || err == nil || len(got) != int(fi.GzippedNBytes)/2 {
			t.Errorf("cut download: HTTP %d, %d bytes of %d, err %v; want half and an error", code, len(got), fi.GzippedNBytes, err)
		}
		// 2: the bomb.
		s.SetFaults(Faults{GzipBombDownloads: 1})
		_, got, err = getRaw(t, fi.GzippedURL, "")
		if err != nil || len(got) > 64<<10 {
			t.Fatalf("bomb: %d bytes, err %v", len(got), err)
		}
		if n := len(gunzip(t, got)); n != 16<<20 {
			t.Errorf("bomb inflates to %d bytes, want 16 MiB", n)
		}
		// 3: the real .gz, whole and resumed.
		_, got, err = getRaw(t, fi.GzippedURL, "")
		if err != nil || int64(len(got)) != fi.GzippedNBytes || !bytes.Equal(gunzip(t, got), want) {
			t.Errorf(".gz: %d bytes (gzipped_nbytes %d), err %v, or does not inflate to the input", len(got), fi.GzippedNBytes, err)
		}
		code, rest, err := getRaw(t, fi.GzippedURL, "bytes=10-")
		if code != http.StatusPartialContent || err != nil || !bytes.Equal(rest, got[10:]) {
			t.Errorf("ranged .gz: HTTP %d err %v, %d bytes", code, err, len(rest))
		}
		// The plain file is still there.
		if _, plain, err := getRaw(t, fi.URL, ""); err != nil || !bytes.Equal(plain, want) {
			t.Errorf("plain: %d bytes, err %v", len(plain), err)
		}
		st := s.Stats()
		if st.Downloads[in+".gz"] != 4 || st.RangeDownloads[in+".gz"] != 1 || st.Downloads[in] != 1 {
			t.Errorf("downloads %v ranged %v: want 4 of the .gz (1 ranged), 1 plain", st.Downloads, st.RangeDownloads)
		}
		if j := st.Jobs[r.Results[0].Name]; j.InputGzipFile != in+".gz" || int64(j.InputGzipSize) != fi.GzippedNBytes {
			t.Errorf("job %+v does not name the .gz", j)
		}
	})
	t.Run("gzip only", func(t *testing.T) {
		s := startServer(t, Config{Job: JobTemplate{InputSize: size, GzipInput: true, GzipOnly: true}})
		body := rpc(t, s, makeRequest(reqOpts{reqSecs: 1}))
		r := parseReply(t, body)
		in := r.Workunits[0].FileRefs[0].FileName
		i, _ := r.fileInfo(in)
		if fi := r.FileInfos[i]; fi.URL != "" || !strings.HasSuffix(fi.GzippedURL, "/download/"+in+".gz") {
			t.Errorf("file_info %+v: want only a <gzipped_url>", fi)
		}
	})
	t.Run("plain input cut", func(t *testing.T) {
		s := startServer(t, Config{Job: JobTemplate{InputSize: size}, Faults: Faults{CutDownloads: 1}})
		r := parseReply(t, rpc(t, s, makeRequest(reqOpts{reqSecs: 1})))
		i, _ := r.fileInfo(r.Workunits[0].FileRefs[0].FileName)
		fi := r.FileInfos[i]
		if fi.GzippedURL != "" {
			t.Errorf("gzipped_url %q without GzipInput", fi.GzippedURL)
		}
		if _, got, err := getRaw(t, fi.URL, ""); err == nil || len(got) != size/2 {
			t.Errorf("cut: %d bytes, err %v", len(got), err)
		}
		if _, got, err := getRaw(t, fi.URL, "bytes=2500-"); err != nil || !bytes.Equal(got, JobInput(1, size)[2500:]) {
			t.Errorf("resume: %d bytes, err %v", len(got), err)
		}
	})
}
