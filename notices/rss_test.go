package notices

import (
	"strings"
	"testing"
	"time"
)

func TestParseRSS(t *testing.T) {
	tests := []struct {
		name    string
		feed    string
		want    []Item
		wantErr string
	}{
		{"notices.php", `<?xml version="1.0" encoding="ISO-8859-1" ?>
<rss version="2.0">
<channel>
<title>P notices</title>
<item>
    <title><![CDATA[News & one]]></title>
    <link>http://x/forum_thread.php?id=1&amp;b=2</link>
    <guid isPermaLink="true">http://x/forum_thread.php?id=1</guid>
    <description><![CDATA[
<b>Über</b> ]]></description>
    <pubDate>Wed, 25 Nov 2026 18:17:43 GMT</pubDate>
</item>
<item><title>Plain</title><description>a &nbsp; b</description><pubDate>Tue, 3 Mar 2026 01:02:03 +0100</pubDate></item>
</channel>
</rss>`, []Item{
			{Title: "News & one", Link: "http://x/forum_thread.php?id=1&b=2", GUID: "http://x/forum_thread.php?id=1",
				Description: "\n<b>Über</b> ", PubDate: time.Date(2026, 11, 25, 18, 17, 43, 0, time.UTC)},
			{Title: "Plain", Description: "a \u00a0 b", PubDate: time.Date(2026, 3, 3, 0, 2, 3, 0, time.UTC)},
		}, ""},
		{"unreadable date, bare ampersand", `<rss><channel><item><title>a & b</title><pubDate>soon</pubDate></item></channel></rss>`,
			[]Item{{Title: "a & b"}}, ""},
		{"truncated after an item", `<rss><channel><item><title>a</title></item><item><title>b`, nil, "malformed XML"},
		{"html in a description without CDATA", `<rss><channel><item><description>a<br>b<p>c</p></description><link>L</link></item></channel></rss>`,
			[]Item{{Description: "a<br>b<p>c</p>", Link: "L"}}, ""},
		{"project error", `<error><error_num>-155</error_num><error_msg>Invalid authenticator</error_msg></error>`, nil, "error -155"},
		{"html page", `<html><body>Not found</body></html>`, nil, "not a feed"},
		{"garbage", "\x00\x01", nil, "RSS feed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseRSS([]byte(tc.feed))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("items %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if !got[i].PubDate.Equal(tc.want[i].PubDate) {
					t.Errorf("item %d date %v, want %v", i, got[i].PubDate, tc.want[i].PubDate)
				}
				got[i].PubDate, tc.want[i].PubDate = time.Time{}, time.Time{}
				if got[i] != tc.want[i] {
					t.Errorf("item %d %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseRSSBounded(t *testing.T) {
	feed := "<rss><channel>" + strings.Repeat("<item><title>x</title></item>", MaxFeedItems+5) + "</channel></rss>"
	got, err := ParseRSS([]byte(feed))
	if err != nil || len(got) != MaxFeedItems {
		t.Fatalf("%d items, %v; want %d", len(got), err, MaxFeedItems)
	}
}
