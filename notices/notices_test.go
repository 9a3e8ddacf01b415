package notices

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func seqnos(s *Store) string {
	var b []string
	for _, n := range s.All() {
		b = append(b, fmt.Sprintf("%d:%s", n.Seqno, n.Description))
	}
	return strings.Join(b, " ")
}

func sched(url, text string) Notice {
	return Notice{Description: text, ProjectURL: url, ProjectName: "P", Category: CategoryScheduler}
}

func TestStore(t *testing.T) {
	const pa, pb = "http://a/", "http://b/"
	feed := FeedRef{ProjectURL: pa, URL: "http://a/notices.php"}
	tests := []struct {
		name         string
		run          func(t *testing.T, s *Store)
		want         string
		wantRemovals uint64
	}{
		{"seqnos in arrival order", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pb, "two"), t0.Add(time.Second))
		}, "1:one 2:two", 0},
		{"same text from the same project is not added twice", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pa, "one"), t0.Add(time.Hour))
		}, "1:one", 0},
		{"same text from another project is", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pb, "one"), t0)
		}, "1:one 2:one", 0},
		{"a scheduler notice comes again after a week", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pa, "two"), t0)
			s.Add(sched(pa, "one"), t0.Add(SchedulerRepeat+time.Second))
		}, "2:two 3:one", 1},
		{"30 days old notices expire", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "old"), t0)
			s.Add(sched(pa, "new"), t0.Add(MaxAge+time.Second))
		}, "2:new", 1},
		{"an item created too long ago is not added", func(t *testing.T, s *Store) {
			s.Add(Notice{Description: "x", CreateTime: t0.Add(-MaxAge - time.Hour)}, t0)
		}, "", 0},
		{"detach removes the project's notices", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pb, "two"), t0)
			s.RemoveProject(pa)
			s.Add(sched(pb, "three"), t0)
		}, "2:two 3:three", 1},
		{"seqnos are not reused after removing the newest", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.RemoveProject(pa)
			s.Add(sched(pa, "two"), t0)
		}, "2:two", 1},
		{"scheduler notices of one project removed", func(t *testing.T, s *Store) {
			s.Add(sched(pa, "one"), t0)
			s.Add(sched(pb, "two"), t0)
			s.RemoveScheduler(pa)
			s.RemoveScheduler(pa)
		}, "2:two", 1},
		{"bounded", func(t *testing.T, s *Store) {
			for i := range MaxNotices + 2 {
				s.Add(sched(pa, fmt.Sprint(i)), t0)
			}
			if got := len(s.All()); got != MaxNotices {
				t.Errorf("%d notices kept, want the bound %d", got, MaxNotices)
			}
			for range 2 {
				s.RemoveProject(pa)
			}
		}, "", 3},
		{"client notices follow their conditions", func(t *testing.T, s *Store) {
			s.SyncClient([]Notice{{Key: "a", Description: "A"}, {Key: "b", Description: "B"}}, t0)
			s.SyncClient([]Notice{{Key: "a", Description: "A"}, {Key: "b", Description: "B"}}, t0.Add(time.Hour))
			s.SyncClient([]Notice{{Key: "b", Description: "B"}, {Key: "c", Description: "C"}}, t0.Add(time.Hour))
			s.SyncClient([]Notice{{Key: "b", Description: "B2"}, {Key: "c", Description: "C"}}, t0.Add(MaxAge*2))
		}, "2:B 3:C", 1},
		{"a one-off client notice outlives the conditions' syncs", func(t *testing.T, s *Store) {
			s.Add(Notice{Title: "Message from account manager", Description: "Welcome", Category: CategoryClient}, t0)
			s.SyncClient([]Notice{{Key: "a", Description: "A"}}, t0)
			s.SyncClient(nil, t0.Add(time.Hour))
		}, "1:Welcome", 1},
		{"feed items: new ones added, known ones kept, gone ones removed", func(t *testing.T, s *Store) {
			s.SetFeeds(pa, []Feed{{URL: feed.URL, PollInterval: time.Hour}})
			s.ApplyFeed(feed, "P", []Item{
				{Title: "new", Description: "N", GUID: "g2", PubDate: t0},
				{Title: "old", Description: "O", GUID: "g1", PubDate: t0.Add(-time.Hour)},
			}, t0)
			s.ApplyFeed(feed, "P", []Item{
				{Title: "newer", Description: "NN", GUID: "g3", PubDate: t0.Add(time.Hour)},
				{Title: "new", Description: "N", GUID: "g2", PubDate: t0},
			}, t0.Add(time.Hour))
		}, "2:N 3:NN", 1},
		{"items without a guid are told apart by link and title", func(t *testing.T, s *Store) {
			s.SetFeeds(pa, []Feed{{URL: feed.URL, PollInterval: time.Hour}})
			items := []Item{{Title: "a", Link: "l1", Description: "A"}, {Title: "a", Link: "l2", Description: "A2"}}
			s.ApplyFeed(feed, "P", items, t0)
			s.ApplyFeed(feed, "P", items, t0.Add(time.Hour))
		}, "1:A 2:A2", 0},
		{"a feed dropped by the project loses its items", func(t *testing.T, s *Store) {
			s.SetFeeds(pa, []Feed{{URL: feed.URL, PollInterval: time.Hour}})
			s.ApplyFeed(feed, "P", []Item{{Title: "a", GUID: "g", Description: "A"}}, t0)
			s.Add(sched(pa, "S"), t0)
			s.SetFeeds(pa, nil)
			if s.ApplyFeed(feed, "P", []Item{{Title: "b", GUID: "h", Description: "B"}}, t0) {
				t.Error("a feed the project dropped was still applied")
			}
		}, "2:S", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			tc.run(t, s)
			if got := seqnos(s); got != tc.want {
				t.Errorf("notices %q, want %q", got, tc.want)
			}
			if got := s.Removals(); got != tc.wantRemovals {
				t.Errorf("%d removals, want %d", got, tc.wantRemovals)
			}
		})
	}
}

func TestFeedSchedule(t *testing.T) {
	s := New()
	const p = "http://a/"
	s.SetFeeds(p, []Feed{{URL: "u1", PollInterval: time.Minute}, {URL: "", PollInterval: time.Hour}, {URL: "u2", PollInterval: 0}, {URL: "u3", PollInterval: 2 * time.Hour}})
	fs := s.Feeds(p)
	if len(fs) != 2 || fs[0].URL != "u1" || fs[0].PollInterval != MinPollInterval || fs[1].URL != "u3" {
		t.Fatalf("feeds %+v: want u1 (interval raised to the minimum) and u3", fs)
	}
	if due := s.DueFeeds(t0); len(due) != 2 {
		t.Fatalf("due %v, want both at once", due)
	}
	s.Polled(FeedRef{p, "u1"}, t0)
	s.Polled(FeedRef{p, "u3"}, t0)
	if due := s.DueFeeds(t0.Add(MinPollInterval)); len(due) != 1 || due[0].URL != "u1" {
		t.Fatalf("due %v, want u1 only", due)
	}
	// The same list again keeps the schedule.
	s.TakeChanges()
	s.SetFeeds(p, []Feed{{URL: "u1", PollInterval: time.Minute}, {URL: "u3", PollInterval: 2 * time.Hour}})
	if c := s.TakeChanges(); c.State {
		t.Errorf("an unchanged feed list changed the state")
	}
	if due := s.DueFeeds(t0.Add(time.Minute)); len(due) != 0 {
		t.Fatalf("due %v after an unchanged list", due)
	}
}

func TestChangesAndRestore(t *testing.T) {
	s := New()
	s.SetFeeds("p", []Feed{{URL: "u", PollInterval: time.Hour}})
	s.Add(sched("p", "one"), t0)
	s.Add(sched("p", "two"), t0)
	c := s.TakeChanges()
	if len(c.Put) != 2 || len(c.Deleted) != 0 || !c.State {
		t.Fatalf("changes %+v", c)
	}
	s.RemoveScheduler("p")
	s.Add(sched("p", "three"), t0)
	c = s.TakeChanges()
	if len(c.Put) != 1 || c.Put[0].Seqno != 3 || fmt.Sprint(c.Deleted) != "[1 2]" {
		t.Fatalf("changes %+v", c)
	}
	r := New()
	r.Restore(s.State(), s.All())
	if seqnos(r) != "3:three" || r.LastSeqno() != 3 || len(r.Feeds("p")) != 1 {
		t.Fatalf("restored %q last %d feeds %v", seqnos(r), r.LastSeqno(), r.Feeds("p"))
	}
	if c := r.TakeChanges(); len(c.Put)+len(c.Deleted) != 0 || c.State {
		t.Errorf("a restore reported changes %+v", c)
	}
	r.Add(sched("p", "four"), t0)
	if seqnos(r) != "3:three 4:four" {
		t.Errorf("after restore: %q", seqnos(r))
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", MaxTitle)
	s := New()
	s.Add(Notice{Title: long, Description: "d"}, t0)
	got := s.All()[0].Title
	if len(got) > MaxTitle || !strings.HasSuffix(got, truncatedMarker) || !strings.HasPrefix(got, "éé") {
		t.Errorf("title clipped to %d bytes: %q", len(got), got[len(got)-8:])
	}
}
