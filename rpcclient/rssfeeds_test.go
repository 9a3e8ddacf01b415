package rpcclient

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The feed list of a real server's reply (bare '&' in the URL, as the
// reference scheduler writes it) is kept by both parsers.
func TestParseReplyRSSFeedsRealServer(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "realserver", "first_contact_no_work.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []RSSFeed{{URL: "http://127.0.0.1:33080/rstest/notices.php?userid=3&auth=3_03f8084e4253dddf5dca153ed2fd0d05", PollInterval: 86400}}
	for name, parse := range map[string]func([]byte) (*SchedulerReply, error){"fast": parseFast, "std": parseStd} {
		r, err := parse(data[findStartTag(data):])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !r.HasRSSFeeds || !reflect.DeepEqual(r.RSSFeeds, want) {
			t.Errorf("%s: feeds %+v (present %v), want %+v", name, r.RSSFeeds, r.HasRSSFeeds, want)
		}
	}
}

func TestParseReplyRSSFeeds(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    []RSSFeed
		has     bool
		wantErr string
	}{
		{"absent", "", nil, false, ""},
		{"empty list", "<rss_feeds>\n</rss_feeds>", nil, true, ""},
		{"incomplete feeds dropped, duplicates once", `<rss_feeds>
<rss_feed><url>http://a/n.php</url><poll_interval>3600</poll_interval><extra/></rss_feed>
<rss_feed><url>http://b/n.php</url></rss_feed>
<rss_feed><poll_interval>10</poll_interval></rss_feed>
<rss_feed><url>http://c/n.php</url><poll_interval>0</poll_interval></rss_feed>
<rss_feed><url>http://a/n.php</url><poll_interval>60</poll_interval></rss_feed>
</rss_feeds>`, []RSSFeed{{"http://a/n.php", 3600}}, true, ""},
		{"bad number", "<rss_feeds><rss_feed><url>x</url><poll_interval>soon</poll_interval></rss_feed></rss_feeds>", nil, false, "rss_feed #1: <poll_interval>: invalid number"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseSchedulerReply([]byte("<scheduler_reply>\n" + tc.body + "\n</scheduler_reply>\n"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.HasRSSFeeds != tc.has || !reflect.DeepEqual(r.RSSFeeds, tc.want) {
				t.Errorf("feeds %+v (present %v), want %+v (%v)", r.RSSFeeds, r.HasRSSFeeds, tc.want, tc.has)
			}
		})
	}
}
