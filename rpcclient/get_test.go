package rpcclient

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	var gotUA, gotQuery string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotUA, gotQuery = r.UserAgent(), r.URL.RawQuery
		switch r.URL.Path {
		case "/lookup_account.php":
			_, _ = w.Write([]byte("<account_out>\n<authenticator>k</authenticator>\n</account_out>\n"))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 2000)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	var logs bytes.Buffer
	c := newTestClient(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	ctx := context.Background()

	body, err := c.Get(ctx, srv.URL+"/lookup_account.php?email_addr=a%40b&passwd_hash=h", 1000)
	if err != nil || !strings.Contains(string(body), "<authenticator>k</authenticator>") {
		t.Fatalf("Get: %q, %v", body, err)
	}
	if gotQuery != "email_addr=a%40b&passwd_hash=h" || !strings.HasPrefix(gotUA, "BOINC client (") {
		t.Errorf("server saw query %q, user agent %q", gotQuery, gotUA)
	}

	if strings.Contains(logs.String(), "passwd_hash") {
		t.Errorf("the query was logged:\n%s", logs.String())
	}

	var tl *ReplyTooLargeError
	if _, err := c.Get(ctx, srv.URL+"/big", 1000); !errors.As(err, &tl) || tl.Limit != 1000 {
		t.Errorf("a reply over the cap: %v", err)
	}
	var he *HTTPError
	if _, err := c.Get(ctx, srv.URL+"/missing", 0); !errors.As(err, &he) || he.StatusCode != 404 || !he.Permanent() {
		t.Errorf("404: %v", err)
	}
	for _, u := range []string{"file:///etc/passwd", "ftp://example.org/x", "http:///nohost"} {
		if _, err := c.Get(ctx, u, 0); err == nil {
			t.Errorf("Get(%q) was not refused", u)
		}
	}
}
