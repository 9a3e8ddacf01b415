package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/notices"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

// Notices (the Manager's Notices tab): the store is owned by the event
// loop like the rest of the state and persisted in the meta bucket, one
// record per notice, so that a restart shows the same notices under the
// same seqnos and a GUI is not shown them again as new.
const (
	noticesMetaKey  = "notices"
	noticeKeyPrefix = "notice:"
	// maxFeedBytes bounds a news feed: 30 days of a project's news.
	maxFeedBytes = 4 << 20
)

func noticeMetaKey(seq int64) string { return fmt.Sprintf("%s%020d", noticeKeyPrefix, seq) }

type noticeState struct {
	store *notices.Store
	// fetching: a feed fetch is in flight (one at a time, as the C++
	// client's single RSS_FEED_OP).
	fetching bool
	// failing holds the feeds whose last fetch failed: the failure is
	// logged once, and the recovery.
	failing map[string]bool
}

// feedFetched reports a news-feed fetch to the event loop.
type feedFetched struct {
	ref   notices.FeedRef
	items []notices.Item
	err   error
}

// Notices serves get_notices.
func (b rpcBackend) Notices(ctx context.Context) (*guirpc.NoticeList, error) {
	var out *guirpc.NoticeList
	err := b.d.peek(ctx, func() { out = b.d.noticeList() })
	return out, err
}

var _ guirpc.NoticeSource = rpcBackend{}

func (d *Daemon) noticeList() *guirpc.NoticeList {
	all := d.nt.store.All()
	out := &guirpc.NoticeList{Notices: make([]guirpc.Notice, len(all)), Removals: d.nt.store.Removals()}
	for i, n := range all {
		out.Notices[i] = guirpc.Notice{
			Seqno: n.Seqno, Title: n.Title, Description: n.Description,
			CreateTime: n.CreateTime, ArrivalTime: n.ArrivalTime, Private: n.Private,
			ProjectName: n.ProjectName, Category: n.Category, Link: n.Link,
		}
	}
	return out
}

// loadNotices restores the notices and feeds; those of projects no
// longer attached (left by a detach that did not finish) are dropped.
func (d *Daemon) loadNotices(meta map[string][]byte) {
	d.nt.store = notices.New()
	d.nt.failing = map[string]bool{}
	var st notices.State
	decodeMeta(meta, noticesMetaKey, &st)
	var list []notices.Notice
	for k, v := range meta {
		if !strings.HasPrefix(k, noticeKeyPrefix) {
			continue
		}
		var n notices.Notice
		if err := json.Unmarshal(v, &n); err != nil {
			d.log.Warn("dropping an unreadable notice from the state file", slog.String("key", k), slog.Any("err", err))
			d.batch.DeleteMeta(k)
			continue
		}
		list = append(list, n)
	}
	d.nt.store.Restore(st, list)
	gone := map[string]bool{}
	for _, n := range list {
		if n.ProjectURL != "" && d.st.projects[n.ProjectURL] == nil {
			gone[n.ProjectURL] = true
		}
	}
	for u := range st.Feeds {
		if d.st.projects[u] == nil {
			gone[u] = true
		}
	}
	for u := range gone {
		d.nt.store.RemoveProject(u)
	}
	d.saveNotices()
}

// saveNotices batches what changed in the store.
func (d *Daemon) saveNotices() {
	c := d.nt.store.TakeChanges()
	for _, n := range c.Put {
		d.batch.PutMeta(noticeMetaKey(n.Seqno), n)
	}
	for _, seq := range c.Deleted {
		d.batch.DeleteMeta(noticeMetaKey(seq))
	}
	if c.State {
		d.batch.PutMeta(noticesMetaKey, d.nt.store.State())
	}
}

// noticesFromReply takes a scheduler reply's notices and feed list
// (client/cs_scheduler.cpp handle_scheduler_reply): each message of
// priority "notice" becomes a scheduler notice; a reply to a request for
// work that carries none withdraws the project's earlier ones; a feed
// list, when the reply has one, replaces the project's.
func (d *Daemon) noticesFromReply(p *boinc.Project, req workfetch.Request, rep *rpcclient.SchedulerReply, now time.Time) {
	name := p.DisplayName()
	if rep.ProjectName != "" {
		name = rep.ProjectName
	}
	got := false
	for _, m := range rep.Messages {
		if m.Priority != "notice" || m.Text == "" {
			continue
		}
		got = true
		d.nt.store.Add(notices.Notice{
			Description: m.Text, ProjectURL: p.MasterURL, ProjectName: name, Category: notices.CategoryScheduler,
		}, now)
	}
	if !got && requestedWork(req) {
		d.nt.store.RemoveScheduler(p.MasterURL)
	}
	// An account manager with no_project_notices keeps its projects'
	// news feeds out of the Notices tab (the C++ client's rule).
	if rep.HasRSSFeeds && !(p.Origin == originAcctMgr && d.am.info.NoProjectNotices) {
		feeds := make([]notices.Feed, 0, len(rep.RSSFeeds))
		for _, f := range rep.RSSFeeds {
			feeds = append(feeds, notices.Feed{URL: f.URL, PollInterval: time.Duration(f.PollInterval * float64(time.Second))})
		}
		d.nt.store.SetFeeds(p.MasterURL, feeds)
	}
	d.saveNotices()
}

func requestedWork(req workfetch.Request) bool {
	for r := range req.Secs {
		if req.Secs[r] > 0 || req.Instances[r] > 0 {
			return true
		}
	}
	return false
}

// dropProjectNotices forgets a detached project's notices and feeds.
func (d *Daemon) dropProjectNotices(url string) {
	d.nt.store.RemoveProject(url)
	d.saveNotices()
}

// syncClientNotices keeps one client notice per condition the user must
// act on, for as long as it holds: each health warning, and each project
// that has no application this computer can run. It also expires old
// notices.
func (d *Daemon) syncClientNotices(now time.Time) {
	var want []notices.Notice
	for _, w := range d.healthWarnings() {
		want = append(want, notices.Notice{Key: "health:" + w.Name, Description: w.Message})
	}
	for _, p := range d.st.sortedProjects() {
		if d.noAppsHere(p) {
			want = append(want, notices.Notice{
				Key: "no_apps:" + p.MasterURL, ProjectURL: p.MasterURL, ProjectName: p.DisplayName(),
				Description: fmt.Sprintf("%s has no applications for this computer (%s, %s): it cannot send it any work. Detach from it, or wait until the project supports this computer.",
					p.DisplayName(), strings.Join(append([]string{d.primaryPlatform()}, d.altPlatforms()...), ", "), strings.Join(d.hostRscNames(), ", ")),
			})
		}
	}
	if n, ok := d.containerNotice(); ok {
		want = append(want, n)
	}
	d.nt.store.SyncClient(want, now)
	d.nt.store.Expire(now)
	d.saveNotices()
}

// hostRscNames are the processor types of this host that tasks may use.
func (d *Daemon) hostRscNames() []string {
	out := []string{workfetch.CPU.String()}
	if len(d.gpu.usable) > 0 && !d.gpusDisabled() {
		out = append(out, workfetch.NVIDIA.String())
	}
	return out
}

// noAppsHere: the project's last reply said it has apps for none of the
// processor types this host can use (<no_rsc_apps>).
func (d *Daemon) noAppsHere(p *boinc.Project) bool {
	if len(p.NoRscApps) == 0 {
		return false
	}
	var none [workfetch.NumRsc]bool
	for _, name := range p.NoRscApps {
		if r, ok := workfetch.RscByName(name); ok {
			none[r] = true
		}
	}
	if !none[workfetch.CPU] {
		return false
	}
	gpuUsable := len(d.gpu.usable) > 0 && !d.gpusDisabled() && !d.gpuExcludedFor(p.MasterURL)
	return !gpuUsable || none[workfetch.NVIDIA]
}

// pollFeeds starts the fetch of the next due news feed, off the owner
// goroutine, unless network activity is suspended (run mode "never", the
// network time preferences).
func (d *Daemon) pollFeeds(now time.Time) {
	if d.nt.fetching || d.ctx.Err() != nil || d.cc.eff.NoInfoFetch {
		// no_info_fetch: the C++ client fetches no RSS feeds.
		return
	}
	if _, _, network := d.suspendReasons(now); network != 0 {
		return
	}
	due := d.nt.store.DueFeeds(now)
	if len(due) == 0 || d.st.projects[due[0].ProjectURL] == nil && due[0].ProjectURL != d.am.info.URL {
		return
	}
	ref := due[0]
	// Scheduled before the fetch: a failure is retried at the feed's
	// poll interval, not at once.
	d.nt.store.Polled(ref, now)
	d.saveNotices()
	d.nt.fetching = true
	ctx := d.ctx
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		data, err := d.http.Get(ctx, ref.URL, maxFeedBytes)
		var items []notices.Item
		if err == nil {
			items, err = notices.ParseRSS(data)
		}
		d.send(feedFetched{ref: ref, items: items, err: err})
	}()
}

func (d *Daemon) handleFeedFetched(ev feedFetched, now time.Time) {
	d.nt.fetching = false
	p := d.st.projects[ev.ref.ProjectURL]
	if p == nil {
		if ev.ref.ProjectURL == "" || ev.ref.ProjectURL != d.am.info.URL {
			return
		}
		// The account manager's own feed (its <rss_feeds>).
		p = &boinc.Project{MasterURL: d.am.info.URL, ProjectName: d.am.info.Name}
	}
	log := d.projectLog(p).With(slog.String("feed", redactFeedURL(ev.ref.URL)))
	if ev.err != nil {
		if !d.nt.failing[ev.ref.URL] {
			d.nt.failing[ev.ref.URL] = true
			next := now
			for _, f := range d.nt.store.Feeds(p.MasterURL) {
				if f.URL == ev.ref.URL {
					next = f.NextPoll
				}
			}
			log.Warn("cannot fetch the project's news feed; the notices already shown stay, retrying at its poll interval",
				slog.String("err", strings.ReplaceAll(ev.err.Error(), ev.ref.URL, redactFeedURL(ev.ref.URL))),
				slog.Time("retry_at", next))
		}
		return
	}
	if d.nt.failing[ev.ref.URL] {
		delete(d.nt.failing, ev.ref.URL)
		log.Info("the project's news feed can be fetched again")
	}
	before := d.nt.store.LastSeqno()
	if d.nt.store.ApplyFeed(ev.ref, p.DisplayName(), ev.items, now) {
		if added := d.nt.store.LastSeqno() - before; added > 0 {
			log.Info("news from the project", slog.Int64("new_notices", added))
		}
	}
	d.saveNotices()
}

// redactFeedURL hides the per-user key of a feed URL (notices.php's
// auth, which lets anyone read the user's private messages) in logs.
func redactFeedURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.RawQuery == "" {
		return raw
	}
	q := u.Query()
	changed := false
	for k := range q {
		if strings.EqualFold(k, "auth") || strings.EqualFold(k, "authenticator") {
			q.Set(k, "…")
			changed = true
		}
	}
	if !changed {
		return raw
	}
	u.RawQuery = q.Encode()
	return u.String()
}
