package metrics

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer runs srv until the test ends and returns its base URL.
func startServer(t *testing.T, srv *Server) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve after cancel: %v", err)
		}
	})
	select {
	case <-srv.Ready():
	case err := <-errc:
		t.Fatalf("Serve: %v", err)
	}
	return "http://" + srv.Addr()
}

func TestServerScrape(t *testing.T) {
	srv, err := NewServer("127.0.0.1:0", fixed(fullSnapshot()), nil)
	if err != nil {
		t.Fatal(err)
	}
	base := startServer(t, srv)
	if strings.HasSuffix(srv.Addr(), ":0") {
		t.Fatalf("Addr() = %s, want the bound port", srv.Addr())
	}

	tests := []struct {
		method, path string
		wantStatus   int
		wantBody     []string
	}{
		{"GET", "/metrics", http.StatusOK, []string{
			`boincd_tasks{resource="CPU",state="running"} 5`,
			"boincd_scrape_error 0",
			"go_goroutines",
			"process_start_time_seconds",
		}},
		{"GET", "/", http.StatusNotFound, nil},
		{"POST", "/metrics", http.StatusMethodNotAllowed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, base+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d; body:\n%s", resp.StatusCode, tc.wantStatus, body)
			}
			if tc.wantStatus != http.StatusOK {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
				t.Errorf("Content-Type %q", ct)
			}
			// Prometheus' parser and linter accept all of it.
			parse(t, string(body))
			problems, err := lint(string(body))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range problems {
				t.Errorf("lint: %s: %s", p.Metric, p.Text)
			}
			for _, w := range tc.wantBody {
				if !strings.Contains(string(body), w) {
					t.Errorf("body lacks %q", w)
				}
			}
		})
	}
}

func TestServerScrapeError(t *testing.T) {
	src := SourceFunc(func(context.Context) (*Snapshot, error) { return nil, errors.New("owner loop gone") })
	srv, err := NewServer("127.0.0.1:0", src, nil, ScrapeTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(startServer(t, srv) + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "boincd_scrape_error 1") || strings.Contains(string(body), "boincd_tasks") {
		t.Fatalf("status %d, body:\n%s", resp.StatusCode, body)
	}
}

// TestServerInFlightLimit: two scrapes may wait on the daemon at once; a
// third gets 503 at once, and scraping works again once they are done.
func TestServerInFlightLimit(t *testing.T) {
	entered := make(chan struct{}, 3)
	release := make(chan struct{})
	src := SourceFunc(func(ctx context.Context) (*Snapshot, error) {
		entered <- struct{}{}
		select {
		case <-release:
			return fullSnapshot(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv, err := NewServer("127.0.0.1:0", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := startServer(t, srv) + Path
	get := func() (int, string) {
		resp, err := http.Get(url)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	held := make(chan int, 2)
	for range 2 {
		go func() { code, _ := get(); held <- code }()
	}
	<-entered
	<-entered
	if code, body := get(); code != http.StatusServiceUnavailable {
		t.Errorf("third scrape: status %d, want 503; body:\n%s", code, body)
	}
	close(release)
	for range 2 {
		if code := <-held; code != http.StatusOK {
			t.Errorf("held scrape: status %d", code)
		}
	}
	if code, body := get(); code != http.StatusOK || !strings.Contains(body, "boincd_scrape_error 0") {
		t.Errorf("scrape after: status %d, body:\n%s", code, body)
	}
}

func TestNewServerAddress(t *testing.T) {
	src := fixed(&Snapshot{})
	tests := []struct {
		addr        string
		allowRemote bool
		wantErr     bool
	}{
		{"127.0.0.1:9100", false, false},
		{"127.0.0.2:9100", false, false},
		{"[::1]:9100", false, false},
		{"localhost:9100", false, false},
		{"LocalHost:9100", false, false},
		{":9100", false, true},
		{"0.0.0.0:9100", false, true},
		{"[::]:9100", false, true},
		{"192.168.1.5:9100", false, true},
		{"example.org:9100", false, true},
		{"0.0.0.0:9100", true, false},
		{":9100", true, false},
		{"127.0.0.1", false, true}, // no port
		{"", false, true},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			_, err := NewServer(tc.addr, src, nil, AllowRemote(tc.allowRemote))
			if (err != nil) != tc.wantErr {
				t.Fatalf("NewServer(%q, AllowRemote(%v)) error = %v, want error %v", tc.addr, tc.allowRemote, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tc.addr) {
				t.Errorf("error %q does not name the address", err)
			}
		})
	}
	if _, err := NewServer("127.0.0.1:0", nil, nil); err == nil {
		t.Error("NewServer with nil Source succeeded")
	}
}

func TestServeErrors(t *testing.T) {
	// Port already taken: Serve reports it and Ready stays open.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv, err := NewServer(ln.Addr().String(), fixed(&Snapshot{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Serve(t.Context())
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("Serve on a taken port: %v, want an error naming %s", err, ln.Addr())
	}
	select {
	case <-srv.Ready():
		t.Fatal("Ready closed although Serve never listened")
	default:
	}
	// Serve is once only.
	if err := srv.Serve(t.Context()); err == nil {
		t.Fatal("second Serve succeeded")
	}
}

// TestServeShutdownWaitsForScrape: cancelling Serve's context lets a scrape
// in flight finish before Serve returns.
func TestServeShutdownWaitsForScrape(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	src := SourceFunc(func(ctx context.Context) (*Snapshot, error) {
		close(entered)
		select {
		case <-release:
			return fullSnapshot(), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	srv, err := NewServer("127.0.0.1:0", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ctx) }()
	<-srv.Ready()

	type result struct {
		status int
		body   string
		err    error
	}
	scrape := make(chan result, 1)
	go func() {
		resp, err := http.Get("http://" + srv.Addr() + Path)
		if err != nil {
			scrape <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		scrape <- result{resp.StatusCode, string(b), err}
	}()
	<-entered
	cancel()
	// Serve must not return while the scrape is held.
	select {
	case err := <-serveErr:
		t.Fatalf("Serve returned (%v) with a scrape in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	r := <-scrape
	if r.err != nil || r.status != http.StatusOK || !strings.Contains(r.body, "boincd_scrape_error 0") {
		t.Fatalf("in-flight scrape: status %d err %v body:\n%s", r.status, r.err, r.body)
	}
	if err := <-serveErr; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		t.Fatal("still listening after Serve returned")
	}
}
