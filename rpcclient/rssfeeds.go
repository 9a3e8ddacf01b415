package rpcclient

import (
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// MaxReplyRSSFeeds bounds the news feeds taken from one reply; real
// projects name one.
const MaxReplyRSSFeeds = 10

// RSSFeed is a news feed a scheduler reply names (<rss_feeds><rss_feed>):
// the client fetches URL every PollInterval seconds and shows its items
// in the Notices tab.
type RSSFeed struct {
	URL          string
	PollInterval float64
}

// rssFeeds reads <rss_feeds> as client/cs_notice.cpp
// parse_rss_feed_descs does: a feed without a URL or a positive poll
// interval is dropped (the C++ client logs and skips it); malformed XML
// or a bad number fails the reply like anywhere else.
func (p *rparser) rssFeeds(t xml.StartElement) ([]RSSFeed, error) {
	var feeds []RSSFeed
	n := 0
	err := p.children(t.Name, func(c xml.StartElement) error {
		if c.Name.Local != "rss_feed" {
			return p.skip(c.Name)
		}
		n++
		var f RSSFeed
		err := p.children(c.Name, func(e xml.StartElement) error {
			var err error
			switch e.Name.Local {
			case "url":
				f.URL, err = p.trimmed(e)
			case "poll_interval":
				f.PollInterval, err = p.float(e)
			default:
				err = p.skip(e.Name)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("rss_feed #%d: %w", n, err)
		}
		if f.URL == "" || f.PollInterval <= 0 || math.IsInf(f.PollInterval, 0) || len(feeds) >= MaxReplyRSSFeeds {
			return nil
		}
		for _, x := range feeds {
			if strings.EqualFold(x.URL, f.URL) {
				return nil
			}
		}
		feeds = append(feeds, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("rss_feeds: %w", err)
	}
	return feeds, nil
}
