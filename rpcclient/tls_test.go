package rpcclient

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// caBundleFor writes srv's self-signed certificate as a PEM file.
func caBundleFor(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ca.pem")
	b := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const masterPage = `<html><scheduler>https://127.0.0.1/cgi</scheduler></html>`

func tlsServer(t *testing.T, cfg *tls.Config) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, masterPage)
	}))
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestTLSVerification(t *testing.T) {
	t.Parallel()
	srv := tlsServer(t, nil)
	old := tlsServer(t, &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11})
	bundle := caBundleFor(t, srv)
	pool, err := LoadCABundle(bundle)
	if err != nil {
		t.Fatalf("LoadCABundle: %v", err)
	}
	oldPool, err := LoadCABundle(caBundleFor(t, old))
	if err != nil {
		t.Fatalf("LoadCABundle: %v", err)
	}
	host := strings.TrimPrefix(srv.URL, "https://")
	tests := []struct {
		name string
		url  string
		o    Options
		// want: "" success, else texts the error must contain.
		want []string
	}{
		{name: "self-signed, system roots", url: srv.URL, want: []string{host, "certificate", "ca_bundle"}},
		{name: "self-signed, in the CA bundle", url: srv.URL, o: Options{RootCAs: pool}},
		{name: "TLS 1.1 only server", url: old.URL, o: Options{RootCAs: oldPool}, want: []string{"protocol version"}},
		{name: "hostname mismatch", url: strings.Replace(srv.URL, "127.0.0.1", "localhost", 1), o: Options{RootCAs: pool},
			want: []string{"localhost", "certificate"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newTestClient(t, tc.o)
			urls, _, err := c.FetchMaster(context.Background(), tc.url+"/")
			if tc.want == nil {
				if err != nil || len(urls) != 1 {
					t.Fatalf("urls %q err %v", urls, err)
				}
				return
			}
			if err == nil {
				t.Fatal("connection accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			t.Logf("error: %v", err)
		})
	}
}

// TestHTTPSDowngradeRefused: an https server redirecting to http is not
// followed, while https to https is.
func TestHTTPSDowngradeRefused(t *testing.T) {
	t.Parallel()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("downgraded request reached the http server: %s", r.URL)
		io.WriteString(w, masterPage)
	}))
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/down":
			http.Redirect(w, r, plain.URL+"/", http.StatusMovedPermanently)
		case "/same":
			http.Redirect(w, r, "/final", http.StatusFound)
		default:
			io.WriteString(w, masterPage)
		}
	}))
	t.Cleanup(secure.Close)
	pool, err := LoadCABundle(caBundleFor(t, secure))
	if err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, Options{RootCAs: pool})
	_, _, err = c.FetchMaster(context.Background(), secure.URL+"/down")
	var re *RedirectError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "https to http downgrade") {
		t.Fatalf("err %v, want a refused downgrade", err)
	}
	if _, _, err := c.FetchMaster(context.Background(), secure.URL+"/same"); err != nil {
		t.Errorf("https to https redirect: %v", err)
	}
}

func TestLoadCABundleErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.pem")
	os.WriteFile(empty, []byte("not a certificate\n"), 0o644)
	tests := []struct {
		name, path, want string
	}{
		{name: "missing", path: filepath.Join(dir, "nope.pem"), want: "nope.pem"},
		{name: "no certificate", path: empty, want: "no PEM certificate found"},
		{name: "directory", path: dir, want: dir},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pool, err := LoadCABundle(tc.path)
			if err == nil || pool != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("pool %v err %v, want an error naming %q", pool, err, tc.want)
			}
		})
	}
	if pool, err := LoadCABundle(""); pool != nil || err != nil {
		t.Errorf(`LoadCABundle("") = %v, %v; want nil, nil`, pool, err)
	}
}

// TestVerificationNeverSkipped: nothing in the module turns certificate
// verification off.
func TestVerificationNeverSkipped(t *testing.T) {
	t.Parallel()
	needle := "Insecure" + "SkipVerify"
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if e.IsDir() && (e.Name() == ".git" || e.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		if strings.Contains(string(b), needle) {
			t.Errorf("%s mentions %s", path, needle)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
