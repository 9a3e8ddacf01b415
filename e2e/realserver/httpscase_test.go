package realserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The https case: the project as most real projects now serve it, over
// TLS with a certificate from a CA the client must be told about. The
// project's Apache gets a second, TLS-only port whose pages and scheduler
// replies name the project's https URLs (mod_substitute rewrites the
// project's own http prefix on the master page and in scheduler replies:
// master URL, download URLs); the case's jobs name https URLs of their
// own for their input and for the upload handler (the upload file_info is
// signed, so it is written with https, never rewritten). The CA goes in
// each client's data directory as ca-bundle.crt, which the C++ client on
// Linux hands to curl (HTTP_OP::libcurl_exec) and boincd adds to the
// system roots. Everything stays on loopback; no system file is touched.

// tlsDir is where the CA and the server's certificate live, under the
// instance's Apache directory.
const tlsDir = "tls"

// httpsCase is the https feature case.
func httpsCase() featureCase {
	return featureCase{
		name: "https",
		about: "the project over TLS only (master page, scheduler, downloads, uploads), its CA in the data dir's ca-bundle.crt: " +
			"scheduler requests over TLS (front CGI's HTTPS), inputs fetched over TLS (TLS access log), the project URL the client keeps",
		setup:     func(t *testing.T, s *server) { s.installTLS(t) },
		attachURL: func(s *server) string { return s.httpsURL(s.masterURL()) },
		jobs: func(t *testing.T, s *server, r *caseRun) []string {
			return s.stagedJobs(t, r, "https", func(_ int, dir string) []string { return []string{s.httpsURL(dir)} }, s.httpsResultTemplate(t))
		},
		prepare: func(t *testing.T, s *server, r *caseRun) {
			ca, err := os.ReadFile(filepath.Join(s.root, "apache", tlsDir, "ca.pem"))
			if err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(r.dir, "ca-bundle.crt")
			if err := os.WriteFile(p, ca, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, s.uid, s.gid); err != nil {
				t.Fatal(err)
			}
		},
		check: checkHTTPS,
	}
}

// httpsURL is u (a URL of the project's http port) on the TLS port.
func (s *server) httpsURL(u string) string {
	return strings.Replace(u, fmt.Sprintf("http://127.0.0.1:%d/", s.httpPort), fmt.Sprintf("https://127.0.0.1:%d/", s.tlsPort), 1)
}

// httpsResultTemplate is rsapp's output template with the upload
// handler's https URL written in (not <UPLOAD_URL/>, the config's http
// one): the scheduler signs the file_info, upload URL included.
func (s *server) httpsResultTemplate(t *testing.T) string {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join(s.root, "projects", project, "config.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := uploadURLRE.FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no <upload_url> in the project's config.xml")
	}
	body := strings.Replace(apiOutputTemplate, "<UPLOAD_URL/>", s.httpsURL(string(m[1])), 1)
	const name = "rsapp_out_https"
	s.writeTemplate(t, name, body)
	return "templates/" + name
}

// installTLS gives the project's Apache its TLS port, once: a CA and a
// certificate for 127.0.0.1 made here, mod_ssl, and mod_substitute on
// the master page and the scheduler's replies. It puts the front CGI in
// (installBusyCGI), whose request log says which requests came over TLS.
func (s *server) installTLS(t *testing.T) {
	t.Helper()
	s.installBusyCGI(t)
	s.tlsOnce.Do(func() { s.tlsErr = s.doInstallTLS() })
	if s.tlsErr != nil {
		t.Fatalf("the project's TLS port: %v", s.tlsErr)
	}
}

func (s *server) doInstallTLS() error {
	dir := filepath.Join(s.root, "apache", tlsDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caPEM, certPEM, keyPEM, err := makeTestPKI()
	if err != nil {
		return err
	}
	for name, b := range map[string][]byte{"ca.pem": caPEM, "server.pem": certPEM, "server.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return err
		}
	}
	mods := "/usr/lib/apache2/modules/"
	for _, m := range []string{"mod_ssl.so", "mod_substitute.so"} {
		if !fileExists(mods + m) {
			return fmt.Errorf("no %s%s (Debian's apache2 ships it)", mods, m)
		}
	}
	plain := fmt.Sprintf("http://127.0.0.1:%d/", s.httpPort)
	secure := fmt.Sprintf("https://127.0.0.1:%d/", s.tlsPort)
	conf := fmt.Sprintf(`
# e2e/realserver https case: the project over TLS on a port of its own
LoadModule ssl_module %[1]smod_ssl.so
LoadModule substitute_module %[1]smod_substitute.so
Listen 127.0.0.1:%[2]d
<VirtualHost 127.0.0.1:%[2]d>
    SSLEngine on
    SSLCertificateFile %[3]s/server.pem
    SSLCertificateKeyFile %[3]s/server.key
    SSLOptions +StdEnvVars
    CustomLog %[4]s/access_tls.log rs
    <LocationMatch "^/%[5]s/(index\.php)?$">
        SetOutputFilter SUBSTITUTE
        Substitute "s|%[6]s|%[7]s|n"
    </LocationMatch>
    <Location /%[5]s_cgi/cgi>
        SetOutputFilter SUBSTITUTE
        Substitute "s|%[6]s|%[7]s|n"
    </Location>
</VirtualHost>
`, mods, s.tlsPort, dir, filepath.Join(s.root, "apache"), project, plain, secure)
	if err := s.apacheConf(conf); err != nil {
		return err
	}
	// The TLS port answers the master page, with the https scheduler URL,
	// to a client that trusts only the CA made here.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	u := s.httpsURL(s.masterURL())
	var last error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		resp, err := c.Get(u)
		if err != nil {
			last = err
			continue
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		page := string(body)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, secure+project+"_cgi/cgi") {
			return fmt.Errorf("GET %s: status %d, the scheduler link not rewritten to %s", u, resp.StatusCode, secure)
		}
		return nil
	}
	return fmt.Errorf("GET %s: %v", u, last)
}

// makeTestPKI makes a CA and a certificate for 127.0.0.1 signed by it,
// valid for a day, as PEM.
func makeTestPKI() (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "boincd realserver suite CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// checkHTTPS: every scheduler request of the account came over TLS (the
// front CGI's request log), each input was fetched over TLS and never
// over plain http (the two access logs), and the client still names the
// project by its https URL.
func checkHTTPS(t *testing.T, s *server, r *caseRun) string {
	reqs, err := os.ReadFile(filepath.Join(s.root, "projects", project, "busy", "requests"))
	if err != nil {
		t.Error(err)
		return "?"
	}
	tlsReqs, plainReqs := 0, 0
	for _, l := range strings.Split(string(reqs), "\n") {
		f := strings.Fields(l) // time, HTTPS, account
		if len(f) != 3 || f[2] != r.auth {
			continue
		}
		if f[1] == "on" {
			tlsReqs++
		} else {
			plainReqs++
		}
	}
	if tlsReqs == 0 || plainReqs > 0 {
		t.Errorf("%s: scheduler requests over TLS %d, over plain http %d; want all over TLS", r.label, tlsReqs, plainReqs)
	}
	count := func(log string) (n int) {
		b, err := os.ReadFile(filepath.Join(s.root, "apache", log))
		if err != nil && !os.IsNotExist(err) {
			t.Error(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			for _, in := range r.inputs {
				if strings.Contains(line, "GET ") && strings.Contains(line, "/"+in+" ") && strings.Contains(line, "\" 200 ") {
					n++
				}
			}
		}
		return n
	}
	inTLS, inPlain := count("access_tls.log"), count("access.log")
	if inTLS < len(r.inputs) || inPlain > 0 {
		t.Errorf("%s: inputs fetched over TLS %d times, over plain http %d times; want each over TLS only", r.label, inTLS, inPlain)
	}
	want := s.httpsURL(s.masterURL())
	ps, err := boinccmd(r.port, "--get_project_status")
	kept := err == nil && strings.Contains(ps, want)
	if !kept {
		t.Errorf("%s: the project status does not name %s (err %v):\n%s", r.label, want, err, ps)
	}
	return fmt.Sprintf("sched TLS %d/%d, inputs TLS %d/%d, URL https %v", tlsReqs, tlsReqs+plainReqs, inTLS, len(r.inputs), kept)
}
