package testproject

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// What a project says to its volunteers, as a real BOINC project does:
// scheduler-reply messages of priority "notice", and a news feed
// (html/user/notices.php) that every reply names in <rss_feeds>.

// NewsFeed is the project's RSS feed.
type NewsFeed struct {
	Items []NewsItem
	// PollInterval is the <poll_interval> sent with the feed; 0 means
	// one day, what the reference server sends.
	PollInterval time.Duration
}

// NewsItem is one <item> of the feed. Description is HTML, sent as
// CDATA as notices.php does.
type NewsItem struct {
	Title       string
	Description string
	Link        string
	GUID        string
	PubDate     time.Time
}

// SetNotices replaces the messages sent with priority "notice" in every
// processed scheduler reply.
func (s *Server) SetNotices(msgs []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg.Notices = append([]string(nil), msgs...)
}

// SetNews replaces the news feed; nil stops naming one in replies (and
// GET /notices.php then answers 404).
func (s *Server) SetNews(f *NewsFeed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		s.cfg.News = nil
		return
	}
	cp := *f
	cp.Items = append([]NewsItem(nil), f.Items...)
	s.cfg.News = &cp
}

// NewsFetches is how many times the news feed was fetched.
func (s *Server) NewsFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newsFetches
}

// writeNoticesLocked adds the notice messages and the feed list to a
// processed reply. The feed URL has the reference server's form, a bare
// '&' included (sched_types.cpp substitutes it into rss_feeds.xml raw).
func (s *Server) writeNoticesLocked(b *replyBuilder, base string, hostID int64) {
	for _, m := range s.cfg.Notices {
		b.linef(`<message priority="notice">%s</message>`, xmlEscape(m))
	}
	if s.cfg.News == nil {
		return
	}
	poll := s.cfg.News.PollInterval
	if poll <= 0 {
		poll = 24 * time.Hour
	}
	b.line("<rss_feeds>")
	b.line("    <rss_feed>")
	b.linef("        <url>%snotices.php?userid=%d&auth=%d_%s</url>", base, hostID, hostID, md5Hex([]byte(s.cfg.Name)))
	b.linef("        <poll_interval>%d</poll_interval>", int64(poll.Seconds()))
	b.line("    </rss_feed>")
	b.line("</rss_feeds>")
}

// handleNews serves the feed as notices.php does: RSS 2.0, newest first,
// each item's title and description in CDATA.
func (s *Server) handleNews(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	feed := s.cfg.News
	var items []NewsItem
	if feed != nil {
		items = append(items, feed.Items...)
		s.newsFetches++
	}
	s.mu.Unlock()
	if feed == nil {
		http.NotFound(w, r)
		return
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n<rss version=\"2.0\">\n<channel>\n")
	fmt.Fprintf(&b, "<title>%s notices</title>\n<link>%s</link>\n<description>Notices</description>\n", xmlEscape(s.cfg.Name), xmlEscape(s.URL()))
	for _, it := range items {
		b.WriteString("<item>\n")
		fmt.Fprintf(&b, "    <title><![CDATA[%s]]></title>\n", cdata(it.Title))
		fmt.Fprintf(&b, "    <link>%s</link>\n", xmlEscape(it.Link))
		if it.GUID != "" {
			fmt.Fprintf(&b, "    <guid isPermaLink=\"false\">%s</guid>\n", xmlEscape(it.GUID))
		}
		fmt.Fprintf(&b, "    <description><![CDATA[\n%s\n]]></description>\n", cdata(it.Description))
		if !it.PubDate.IsZero() {
			fmt.Fprintf(&b, "    <pubDate>%s</pubDate>\n", it.PubDate.UTC().Format("Mon, 02 Jan 2006 15:04:05")+" GMT")
		}
		b.WriteString("</item>\n")
	}
	b.WriteString("</channel>\n</rss>\n")
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	_, _ = w.Write([]byte(b.String()))
}

// cdata keeps "]]>" in a text from ending the section early.
func cdata(s string) string { return strings.ReplaceAll(s, "]]>", "]]]]><![CDATA[>") }
