// Package notices keeps what BOINC Manager's Notices tab shows: messages
// a project's scheduler sends with priority "notice", the items of the
// projects' news feeds, and the client's own notices about things the
// user must act on. It follows the C++ client's NOTICES (client/
// cs_notice.cpp): every notice gets a sequence number on arrival, GUIs
// ask for the notices newer than the last one they saw, and a removal
// makes them reload everything (the refresh marker, see Removals).
//
// The store is pure and deterministic: it does no I/O and reads no clock,
// every method that depends on time is handed now. The daemon owns it on
// its event loop, persists the changes it reports (Changes) and fetches
// the feeds it says are due (DueFeeds).
package notices

import (
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Categories, as the C++ client writes them and the Manager tells them
// apart ("client": "Notice from BOINC"; "scheduler": from the project).
// A news-feed item has none: the C++ client 7.20.5 writes an empty
// <category> for them (seen in its get_notices reply), and the Manager
// then shows the item's own title.
const (
	CategoryClient    = "client"
	CategoryScheduler = "scheduler"
	CategoryNews      = ""
)

// Bounds. The C++ client drops notices 30 days after their creation or
// arrival (NOTICES::remove_dups) and shows a scheduler notice again only
// after a week; it has no count limit, but a project's feed is read
// whole, so boincd caps what one feed and the whole store may hold.
const (
	MaxAge          = 30 * 24 * time.Hour
	SchedulerRepeat = 7 * 24 * time.Hour
	MaxNotices      = 300
	MaxFeedItems    = 100
	MaxFeedsPerProj = 10
	MaxTitle        = 255  // NOTICE::title is char[256]
	MaxLink         = 1023 // a URL; the C++ client's is char[256]
	MaxDescription  = 64 << 10
	MinPollInterval = 10 * time.Minute
	maxPollInterval = 30 * 24 * time.Hour
	truncatedMarker = "…"
)

// Notice is one entry of the Notices tab (lib/notice.cpp NOTICE).
type Notice struct {
	Seqno       int64     `json:"seqno"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description"`
	CreateTime  time.Time `json:"create_time"`
	ArrivalTime time.Time `json:"arrival_time"`
	Private     bool      `json:"is_private,omitempty"`
	// ProjectURL ties the notice to a project, so that a detach removes
	// it; ProjectName is what the GUI shows.
	ProjectURL  string `json:"project_url,omitempty"`
	ProjectName string `json:"project_name,omitempty"`
	Category    string `json:"category"`
	Link        string `json:"link,omitempty"`
	// GUID identifies a feed item across fetches; FeedURL is its feed.
	GUID    string `json:"guid,omitempty"`
	FeedURL string `json:"feed_url,omitempty"`
	// Key names the condition a client notice stands for (SyncClient).
	Key string `json:"key,omitempty"`
}

// Feed is one news feed of a project, as its scheduler named it.
type Feed struct {
	URL          string        `json:"url"`
	PollInterval time.Duration `json:"poll_interval"`
	// NextPoll is when the feed is due; zero: at once.
	NextPoll time.Time `json:"next_poll,omitempty"`
}

// FeedRef names a due feed and its project.
type FeedRef struct{ ProjectURL, URL string }

// State is what the store keeps besides the notices themselves; with the
// notices it is all a restart needs (Restore).
type State struct {
	// LastSeqno is the last sequence number given out: numbers are never
	// reused, so a GUI that kept its last one across a restart of the
	// daemon is not shown old notices as new.
	LastSeqno int64             `json:"last_seqno"`
	Feeds     map[string][]Feed `json:"feeds,omitempty"`
}

// Store holds the notices, oldest (lowest seqno) first. The zero value
// is not ready: use New.
type Store struct {
	list     []Notice
	last     int64
	removals uint64
	feeds    map[string][]Feed

	dirty      map[int64]struct{}
	stateDirty bool
}

// New returns an empty store.
func New() *Store {
	return &Store{feeds: map[string][]Feed{}, dirty: map[int64]struct{}{}}
}

// Restore replaces the store's content with what was persisted. Notices
// are put in seqno order; a duplicate seqno keeps the first. Nothing is
// reported as changed.
func (s *Store) Restore(st State, list []Notice) {
	s.list = slices.Clone(list)
	slices.SortStableFunc(s.list, func(a, b Notice) int { return cmpInt(a.Seqno, b.Seqno) })
	s.list = slices.CompactFunc(s.list, func(a, b Notice) bool { return a.Seqno == b.Seqno })
	s.last = st.LastSeqno
	if n := len(s.list); n > 0 && s.list[n-1].Seqno > s.last {
		s.last = s.list[n-1].Seqno
	}
	s.feeds = map[string][]Feed{}
	for url, fs := range st.Feeds {
		s.feeds[url] = slices.Clone(fs)
	}
	clear(s.dirty)
	s.stateDirty = false
}

// State returns the persistent state besides the notices.
func (s *Store) State() State {
	st := State{LastSeqno: s.last}
	if len(s.feeds) > 0 {
		st.Feeds = make(map[string][]Feed, len(s.feeds))
		for url, fs := range s.feeds {
			st.Feeds[url] = slices.Clone(fs)
		}
	}
	return st
}

// Changes reports what changed since the last call: the notices added or
// replaced (Put), the seqnos removed (Deleted), and whether State
// changed. The caller persists them.
type Changes struct {
	Put     []Notice
	Deleted []int64
	State   bool
}

// TakeChanges returns and forgets the changes since the last call.
func (s *Store) TakeChanges() Changes {
	var c Changes
	for seq := range s.dirty {
		if i, ok := s.index(seq); ok {
			c.Put = append(c.Put, s.list[i])
		} else {
			c.Deleted = append(c.Deleted, seq)
		}
	}
	slices.SortFunc(c.Put, func(a, b Notice) int { return cmpInt(a.Seqno, b.Seqno) })
	slices.Sort(c.Deleted)
	c.State = s.stateDirty
	clear(s.dirty)
	s.stateDirty = false
	return c
}

// All returns every notice, oldest first.
func (s *Store) All() []Notice { return slices.Clone(s.list) }

// Removals counts the removals since the store was made: a GUI that read
// the notices before the count changed may show some that are gone, and
// is told to reload them all (the seqno -1 marker).
func (s *Store) Removals() uint64 { return s.removals }

// LastSeqno is the last sequence number given out.
func (s *Store) LastSeqno() int64 { return s.last }

func (s *Store) index(seq int64) (int, bool) {
	return slices.BinarySearchFunc(s.list, seq, func(n Notice, seq int64) int { return cmpInt(n.Seqno, seq) })
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// removeWhere drops the notices for which drop says so and returns how
// many it dropped.
func (s *Store) removeWhere(drop func(*Notice) bool) int {
	n := 0
	s.list = slices.DeleteFunc(s.list, func(x Notice) bool {
		if drop(&x) {
			s.dirty[x.Seqno] = struct{}{}
			n++
			return true
		}
		return false
	})
	if n > 0 {
		s.removals++
	}
	return n
}

// expired: the C++ client's 30-day rule, on arrival and (when known)
// creation. Client notices stay while their condition holds.
func expired(n *Notice, now time.Time) bool {
	if n.Category == CategoryClient {
		return false
	}
	min := now.Add(-MaxAge)
	return n.ArrivalTime.Before(min) || !n.CreateTime.IsZero() && n.CreateTime.Before(min)
}

// Expire drops the notices older than MaxAge.
func (s *Store) Expire(now time.Time) int {
	return s.removeWhere(func(n *Notice) bool { return expired(n, now) })
}

func clip(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	cut := n - len(truncatedMarker)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + truncatedMarker
}

func sameText(a, b *Notice) bool {
	return a.Title == b.Title && a.Description == b.Description && a.ProjectURL == b.ProjectURL
}

// sameItem: the same feed item, by GUID, or by link and title when the
// feed gives none.
func sameItem(a, b *Notice) bool {
	if a.GUID != "" || b.GUID != "" {
		return a.GUID == b.GUID && a.FeedURL == b.FeedURL
	}
	return a.FeedURL != "" && a.FeedURL == b.FeedURL && a.Link == b.Link && a.Title == b.Title
}

// Add adds a scheduler or feed notice unless it is already there, with
// NOTICES::append's rules: the same item (GUID) is never added twice;
// the same text from the same project replaces the older notice only if
// the new one is newer (for a scheduler notice, by more than a week:
// SchedulerRepeat), otherwise it is not added. Expired notices go first.
// It reports whether n was added (with the next seqno).
func (s *Store) Add(n Notice, now time.Time) bool {
	n.Title = clip(n.Title, MaxTitle)
	n.Description = clip(n.Description, MaxDescription)
	n.Link = clip(n.Link, MaxLink)
	if n.ArrivalTime.IsZero() {
		n.ArrivalTime = now
	}
	if n.CreateTime.IsZero() {
		n.CreateTime = n.ArrivalTime
	}
	if expired(&n, now) {
		return false
	}
	s.Expire(now)
	for i := range s.list {
		old := &s.list[i]
		if old.Category == CategoryClient {
			continue
		}
		if sameItem(&n, old) {
			return false
		}
		if sameText(&n, old) {
			minDiff := time.Duration(0)
			if n.Category == CategoryScheduler {
				minDiff = SchedulerRepeat
			}
			if !n.CreateTime.After(old.CreateTime.Add(minDiff)) {
				return false
			}
			seq := old.Seqno
			s.removeWhere(func(x *Notice) bool { return x.Seqno == seq })
			break
		}
	}
	s.push(n)
	return true
}

// push gives n the next seqno and appends it, dropping the oldest
// notices beyond MaxNotices.
func (s *Store) push(n Notice) {
	s.last++
	n.Seqno = s.last
	s.list = append(s.list, n)
	s.dirty[n.Seqno] = struct{}{}
	s.stateDirty = true
	if over := len(s.list) - MaxNotices; over > 0 {
		cut := s.list[over-1].Seqno
		s.removeWhere(func(x *Notice) bool { return x.Seqno <= cut })
	}
}

// RemoveProject drops everything of a project: its notices and its
// feeds (detach).
func (s *Store) RemoveProject(url string) int {
	if _, ok := s.feeds[url]; ok {
		delete(s.feeds, url)
		s.stateDirty = true
	}
	return s.removeWhere(func(n *Notice) bool { return n.ProjectURL == url })
}

// RemoveScheduler drops a project's scheduler notices: the C++ client
// does so when a reply to a request for work carries none, so that a
// notice such as "no work for your platform" goes once the project
// sends work.
func (s *Store) RemoveScheduler(url string) int {
	return s.removeWhere(func(n *Notice) bool {
		return n.ProjectURL == url && n.Category == CategoryScheduler
	})
}

// SyncClient makes the client notices those of want, by Key: a key no
// longer wanted is withdrawn and a new one added with the next seqno. A
// notice whose key still holds stays as it is, seqno and text, so a GUI
// does not see it again: a figure in the text that moves while the
// condition lasts (disk use, a count of transfers) does not make a new
// notice each time. Client notices without a key (one-off messages, such
// as an account manager's) are not conditions: they stay until they age
// out.
func (s *Store) SyncClient(want []Notice, now time.Time) {
	byKey := make(map[string]*Notice, len(want))
	for i := range want {
		byKey[want[i].Key] = &want[i]
	}
	kept := map[string]bool{}
	s.removeWhere(func(n *Notice) bool {
		if n.Category != CategoryClient || n.Key == "" {
			return false
		}
		if _, ok := byKey[n.Key]; !ok || kept[n.Key] {
			return true
		}
		kept[n.Key] = true
		return false
	})
	for _, w := range want {
		if kept[w.Key] {
			continue
		}
		kept[w.Key] = true
		w.Category = CategoryClient
		w.Title = clip(w.Title, MaxTitle)
		w.Description = clip(w.Description, MaxDescription)
		w.Link = clip(w.Link, MaxLink)
		w.ArrivalTime, w.CreateTime = now, now
		s.push(w)
	}
}

// SetFeeds takes the feed list of a scheduler reply that had one
// (handle_sr_feeds): feeds not named any more are dropped with their
// items, new ones are due at once, kept ones keep their schedule.
// Feeds without a URL or poll interval are ignored, as the C++ client's
// RSS_FEED::parse_desc refuses them.
func (s *Store) SetFeeds(projectURL string, feeds []Feed) {
	old := s.feeds[projectURL]
	var next []Feed
	for _, f := range feeds {
		f.URL = strings.TrimSpace(f.URL)
		if f.URL == "" || f.PollInterval <= 0 || len(next) >= MaxFeedsPerProj ||
			slices.ContainsFunc(next, func(x Feed) bool { return x.URL == f.URL }) {
			continue
		}
		f.PollInterval = min(max(f.PollInterval, MinPollInterval), maxPollInterval)
		f.NextPoll = time.Time{}
		if i := slices.IndexFunc(old, func(x Feed) bool { return x.URL == f.URL }); i >= 0 {
			f.NextPoll = old[i].NextPoll
		}
		next = append(next, f)
	}
	if slices.Equal(old, next) {
		return
	}
	for _, f := range old {
		if !slices.ContainsFunc(next, func(x Feed) bool { return x.URL == f.URL }) {
			url := f.URL
			s.removeWhere(func(n *Notice) bool { return n.ProjectURL == projectURL && n.FeedURL == url })
		}
	}
	if len(next) == 0 {
		delete(s.feeds, projectURL)
	} else {
		s.feeds[projectURL] = next
	}
	s.stateDirty = true
}

// Feeds returns a project's feeds.
func (s *Store) Feeds(projectURL string) []Feed { return slices.Clone(s.feeds[projectURL]) }

// DueFeeds lists the feeds due at now, by project URL then feed order.
func (s *Store) DueFeeds(now time.Time) []FeedRef {
	var out []FeedRef
	for url, fs := range s.feeds {
		for _, f := range fs {
			if !f.NextPoll.After(now) {
				out = append(out, FeedRef{ProjectURL: url, URL: f.URL})
			}
		}
	}
	// Stable: a project's feeds stay in the order its scheduler gave.
	slices.SortStableFunc(out, func(a, b FeedRef) int { return strings.Compare(a.ProjectURL, b.ProjectURL) })
	return out
}

// Polled schedules a feed's next fetch a poll interval after now. It is
// called when a fetch starts, so a failing feed is retried at its
// interval and never more often than MinPollInterval.
func (s *Store) Polled(ref FeedRef, now time.Time) {
	fs := s.feeds[ref.ProjectURL]
	for i := range fs {
		if fs[i].URL == ref.URL {
			fs[i].NextPoll = now.Add(fs[i].PollInterval)
			s.stateDirty = true
		}
	}
}

// ApplyFeed takes a fetched feed's items (RSS_FEED::parse_items, then
// NOTICES::unkeep): new items are added, items already there keep their
// seqno, and the feed's notices that are no longer in it are removed. A
// feed the project no longer names is ignored (false).
func (s *Store) ApplyFeed(ref FeedRef, projectName string, items []Item, now time.Time) bool {
	if !slices.ContainsFunc(s.feeds[ref.ProjectURL], func(f Feed) bool { return f.URL == ref.URL }) {
		return false
	}
	if len(items) > MaxFeedItems {
		items = items[:MaxFeedItems]
	}
	fresh := make([]Notice, 0, len(items))
	for _, it := range items {
		fresh = append(fresh, Notice{
			Title:       clip(strings.TrimSpace(it.Title), MaxTitle),
			Description: clip(strings.TrimSpace(it.Description), MaxDescription),
			CreateTime:  it.PubDate,
			ArrivalTime: now,
			ProjectURL:  ref.ProjectURL,
			ProjectName: projectName,
			Category:    CategoryNews,
			Link:        clip(strings.TrimSpace(it.Link), MaxLink),
			GUID:        strings.TrimSpace(it.GUID),
			FeedURL:     ref.URL,
		})
	}
	s.removeWhere(func(n *Notice) bool {
		return n.FeedURL == ref.URL && n.ProjectURL == ref.ProjectURL &&
			!slices.ContainsFunc(fresh, func(f Notice) bool { return sameItem(&f, n) })
	})
	// Oldest first, so that seqnos follow the items' own order.
	slices.SortStableFunc(fresh, func(a, b Notice) int { return a.CreateTime.Compare(b.CreateTime) })
	for _, n := range fresh {
		s.Add(n, now)
	}
	return true
}
