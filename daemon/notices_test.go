package daemon

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/notices"
)

func (h *harness) notices(t *testing.T) []notices.Notice {
	t.Helper()
	var out []notices.Notice
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.d.query(ctx, func() { out = h.d.nt.store.All() }); err != nil {
		t.Fatal(err)
	}
	return out
}

func hasNotice(ns []notices.Notice, desc string) bool {
	for _, n := range ns {
		if n.Description == desc {
			return true
		}
	}
	return false
}

// A feed that cannot be fetched is logged once, with its URL (the user's
// key hidden) and the error; the notices already there stay, and the
// feed is not fetched while network activity is suspended.
func TestNewsFeedFailure(t *testing.T) {
	t.Parallel()
	const notice = "a scheduler notice"
	var srv *testproject.Server
	srv = testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Notices: []string{notice}, Faults: testproject.Faults{RewriteReply: func(_ int, reply []byte) []byte {
		feed := "<rss_feeds><rss_feed><url>" + srv.URL() + "missing.php?userid=1&auth=1_secret</url><poll_interval>1</poll_interval></rss_feed></rss_feeds>\n"
		return bytes.Replace(reply, []byte("</scheduler_reply>"), []byte(feed+"</scheduler_reply>"), 1)
	}}})
	h := startDaemon(t, srv)
	testsupport.WaitFor(t, 20*time.Second, "the feed failure logged", func() bool {
		return len(h.logs.Find("cannot fetch the project's news feed; the notices already shown stay, retrying at its poll interval")) > 0
	})
	if !hasNotice(h.notices(t), notice) {
		t.Errorf("the scheduler notice is missing: %+v", h.notices(t))
	}
	recs := h.logs.Find("cannot fetch the project's news feed; the notices already shown stay, retrying at its poll interval")
	if len(recs) != 1 {
		t.Fatalf("failure logged %d times", len(recs))
	}
	r := recs[0]
	if feed := r.Str("feed"); !strings.Contains(feed, "missing.php") || strings.Contains(feed, "secret") {
		t.Errorf("feed attribute %q: want the URL without the key", feed)
	}
	if e := r.Str("err"); !strings.Contains(e, "404") || strings.Contains(e, "secret") {
		t.Errorf("err attribute %q: want the HTTP status, without the key", e)
	}
	// The poll interval is raised to the minimum: no second fetch soon.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var next time.Time
	if err := h.d.query(ctx, func() {
		for _, f := range h.d.nt.store.Feeds(srv.URL()) {
			next = f.NextPoll
		}
	}); err != nil {
		t.Fatal(err)
	}
	if until := time.Until(next); until < notices.MinPollInterval-time.Minute {
		t.Errorf("next poll in %v, want about %v", until, notices.MinPollInterval)
	}
}

// Network mode "never": no feed is fetched.
func TestNewsFeedNotFetchedWithoutNetwork(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
	h := startDaemon(t, srv)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.d.query(ctx, func() {
		_ = h.d.setMode("network", ModeNever, 0, time.Now())
		// The feed as a reply would name it, due at once.
		h.d.nt.store.SetFeeds(srv.URL(), []notices.Feed{{URL: srv.URL() + "notices.php", PollInterval: time.Hour}})
	}); err != nil {
		t.Fatal(err)
	}
	srv.SetNews(&testproject.NewsFeed{Items: []testproject.NewsItem{{Title: "t", Description: "d"}}})
	time.Sleep(2 * time.Second)
	if n := srv.NewsFetches(); n != 0 {
		t.Errorf("feed fetched %d times with network mode never", n)
	}
	if err := h.d.query(ctx, func() { _ = h.d.setMode("network", ModeAlways, 0, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	testsupport.WaitFor(t, 20*time.Second, "the news item", func() bool { return hasNotice(h.notices(t), "d") })
}

// Client notices follow the health warnings.
func TestClientNoticesFollowHealth(t *testing.T) {
	t.Parallel()
	h := startDaemon(t)
	testsupport.WaitFor(t, 20*time.Second, "the no_projects notice", func() bool {
		for _, n := range h.notices(t) {
			if n.Category == notices.CategoryClient && n.Key == "health:"+HealthNoProjects {
				return true
			}
		}
		return false
	})
	var list *guirpc.NoticeList
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := rpcBackend{h.d}.Notices(ctx)
	if err != nil || len(list.Notices) == 0 || list.Notices[0].Category != "client" || list.Notices[0].ProjectName != "" {
		t.Fatalf("GUI notices %+v, %v", list, err)
	}
}
