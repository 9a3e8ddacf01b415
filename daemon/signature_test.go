package daemon

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

var fileSigRE = regexp.MustCompile(`(?s)<file_signature>\s*([0-9a-f]{2})`)

// tamperSignatures serves h but flips the first byte of every
// <file_signature> in scheduler replies: the signature of a valid key over
// the wrong bytes, what a compromised download mirror or a man in the
// middle with no access to the project's private key can send.
func tamperSignatures(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := fileSigRE.ReplaceAllFunc(rec.Body.Bytes(), func(m []byte) []byte {
			b, _ := strconv.ParseUint(string(m[len(m)-2:]), 16, 8)
			return append(bytes.Clone(m[:len(m)-2]), []byte(strconv.FormatUint(0x100|(b^0xff), 16)[1:])...)
		})
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = io.Copy(w, bytes.NewReader(body))
	})
}

// An app file whose signature is missing or wrong is never run: it is
// deleted, the task fails with the C++ client's download error and is
// reported (so the server can reissue it), and nothing is retried.
func TestAppSignatureRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		unsigned bool
		tamper   bool
		logText  string
	}{
		{"missing signature", true, false, "code signature check failed"},
		{"bad signature", false, true, "code signature check failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := testproject.New(testproject.Config{
				Apps:         []testproject.App{testproject.DefaultApp()},
				RequestDelay: -1,
				Unsigned:     tc.unsigned,
				Job:          testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
				TotalJobs:    1,
			})
			if err != nil {
				t.Fatal(err)
			}
			var h http.Handler = srv.Handler()
			if tc.tamper {
				h = tamperSignatures(h)
			}
			ts := httptest.NewServer(h)
			t.Cleanup(ts.Close)
			cfg := config.Default()
			cfg.Projects = []config.Project{{URL: ts.URL + "/", Authenticator: "k", ResourceShare: 100}}
			hs := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), cfg, nil)
			testsupport.WaitFor(t, 60*time.Second, "the failed task to be reported", func() bool {
				for _, rr := range srv.Stats().ReportedResults {
					return rr.ExitStatus == boinc.ErrResultDownload
				}
				return false
			})
			found := false
			for _, r := range hs.logs.Records() {
				if s := r.Str("err") + r.Str("error") + r.Str("msg"); bytes.Contains([]byte(s), []byte(tc.logText)) {
					found = true
				}
			}
			if !found {
				t.Errorf("no log record mentions %q", tc.logText)
			}
			// The app file is gone: nothing with that signature can run.
			matches, _ := filepath.Glob(filepath.Join(hs.dataDir, "projects", "*", "refapp_[0-9]*"))
			if len(matches) != 0 {
				t.Errorf("refused app files left on disk: %v", matches)
			}
			for _, s := range srv.Stats().Downloads {
				if s > 1 {
					t.Errorf("a refused file was downloaded %d times; a signature failure is not retried", s)
				}
			}
		})
	}
}
