package daemon

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/rpcclient"
)

type rpcInFlight struct {
	project string
	master  bool
	cancel  context.CancelFunc
}

type masterDone struct {
	project string
	urls    []string
	err     error
}

type rpcDone struct {
	project   string
	reason    boinc.RPCReason
	reply     *rpcclient.SchedulerReply
	err       error
	reported  []string // result keys sent in the request
	askedSecs float64
}

// Reporting rules (SCHEDULING.md §4.4).
const (
	reportDeadlineCushion = 24 * time.Hour
	reportIfAtLeastN      = 64
	uploadBusyWindow      = 300 * time.Second
)

// maybeRPC starts at most one project-server exchange at a time, in the
// C++ client's order of priority: master page fetches, user or first-contact
// requests, project-requested RPCs, overdue reports, then work fetch.
func (d *Daemon) maybeRPC(now time.Time) {
	if d.rpc != nil || d.flushFailing {
		return
	}
	projects := d.st.sortedProjects()
	for _, p := range projects {
		if (p.MasterFetchPending || len(p.SchedulerURLs) == 0) && !now.Before(p.MinRPCTime) && !p.DetachPending {
			d.startMasterFetch(p)
			return
		}
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) == 0 || p.SchedRPCPending == boinc.RPCNone {
			continue
		}
		// A user's request skips the backoff once; if it failed, it waits
		// like any other retry instead of looping.
		if (p.SchedRPCPending == boinc.RPCUserReq && p.RPCFailures == 0) || !now.Before(p.MinRPCTime) {
			d.startSchedulerRPC(p, p.SchedRPCPending, now)
			return
		}
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) > 0 && !p.NextRPCTime.IsZero() && !now.Before(p.NextRPCTime) && !now.Before(p.MinRPCTime) && !p.Suspended {
			d.startSchedulerRPC(p, boinc.RPCProjectReq, now)
			return
		}
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) > 0 && !now.Before(p.MinRPCTime) && (!p.Suspended || p.DetachPending) && d.resultsDue(p, now) {
			d.startSchedulerRPC(p, boinc.RPCResultsDue, now)
			return
		}
	}
	if now.Before(d.nextFetchCheck) {
		return
	}
	d.nextFetchCheck = now.Add(d.opt.WorkFetchInterval)
	if p := d.chooseWorkProject(now); p != nil {
		d.startSchedulerRPC(p, boinc.RPCNeedWork, now)
	}
}

// fetchSoon brings the next work-fetch check forward: after events that
// change the queue (a task ended, an RPC finished, prefs changed).
func (d *Daemon) fetchSoon(now time.Time) { d.nextFetchCheck = now }

func (d *Daemon) resultsDue(p *boinc.Project, now time.Time) bool {
	for _, x := range d.xfers {
		if x.project == p.MasterURL && x.upload && now.Sub(x.started) < uploadBusyWindow {
			return false
		}
	}
	cushion := max(reportDeadlineCushion, time.Duration(d.prefs.WorkBufMinDays*86400)*time.Second)
	n := 0
	due := false
	for _, r := range d.st.results {
		if r.ProjectURL != p.MasterURL || !r.Phase.ReadyToReport() {
			continue
		}
		n++
		switch {
		case p.NoNewTasks, p.DetachPending, r.ReportImmediately:
			due = true
		case now.After(r.ReportDeadline.Add(-cushion)):
			due = true
		case !r.CompletedTime.IsZero() && now.After(r.CompletedTime.Add(d.opt.MaxReportDelay)):
			due = true
		}
	}
	return due || n >= reportIfAtLeastN
}

// estimateRemaining is the expected seconds left for a task: the static
// estimate from FLOPs, blended towards the dynamic one (elapsed/fraction)
// as the task progresses.
func (d *Daemon) estimateRemaining(r *boinc.Result) float64 {
	est := d.estimateDuration(r)
	f := r.FractionDone
	if f <= 0 || r.ElapsedTime <= 0 {
		return math.Max(est-r.ElapsedTime, 0)
	}
	if f >= 1 {
		return 0
	}
	dynamic := r.ElapsedTime/f - r.ElapsedTime
	static := math.Max(est*(1-f), 0)
	return f*dynamic + (1-f)*static
}

func (d *Daemon) estimateDuration(r *boinc.Result) float64 {
	wu, v := d.st.wuOf(r), d.st.versionOf(r)
	if wu == nil {
		return 3600
	}
	flops := 0.0
	if v != nil {
		flops = v.Flops
		if flops <= 0 {
			flops = d.host.PFpops * math.Max(v.AvgNCPUs, 1)
		}
	}
	if flops <= 0 {
		flops = 1e9
	}
	return wu.RscFpopsEst / flops
}

func (d *Daemon) resultNCPUs(r *boinc.Result) float64 {
	if v := d.st.versionOf(r); v != nil && v.AvgNCPUs > 0 {
		return v.AvgNCPUs
	}
	return 1
}

// cpuWorkRequest is the host-wide CPU shortfall.
func (d *Daemon) cpuWorkRequest(now time.Time) (secs, instances float64) {
	var jobs []queuedJob
	for _, r := range d.st.results {
		if !r.Phase.Unfinished() {
			continue
		}
		ok, _ := d.runnable(r, now)
		jobs = append(jobs, queuedJob{
			RemainingSecs: d.estimateRemaining(r),
			NCPUs:         d.resultNCPUs(r),
			Runnable:      ok || r.Phase == boinc.PhaseNew || r.Phase == boinc.PhaseDownloading,
		})
	}
	w := summarizeQueue(jobs, d.usableCPUs())
	return workRequest(w, d.usableCPUs(), d.prefs.WorkBufMinDays, d.prefs.WorkBufAdditionalDays)
}

// canFetch says whether we may ask p for CPU work now, and if not why.
func (d *Daemon) canFetch(p *boinc.Project, now time.Time) (bool, string) {
	switch {
	case p.Suspended:
		return false, "project is suspended"
	case p.DetachPending:
		return false, "project is being detached"
	case p.NoNewTasks:
		return false, "no new tasks (set by the volunteer)"
	case p.Ended:
		return false, "project has ended"
	case len(p.SchedulerURLs) == 0:
		return false, "scheduler URL not known yet"
	case now.Before(p.MinRPCTime):
		return false, "scheduler backoff until " + p.MinRPCTime.Format(time.RFC3339)
	case now.Before(p.TaskBackoffUntil):
		return false, "recent tasks failed; backoff until " + p.TaskBackoffUntil.Format(time.RFC3339)
	case now.Before(p.WorkFetchBackoffUntil):
		return false, "no work at the last request; backoff until " + p.WorkFetchBackoffUntil.Format(time.RFC3339)
	}
	for _, rsc := range p.NoRscApps {
		if rsc == "CPU" {
			return false, "project has no CPU apps for this host"
		}
	}
	return true, ""
}

// chooseWorkProject picks the project to ask for work, or nil. Among the
// projects we may ask, the one with the least queued work per unit of
// resource share goes first, so shares are honoured over time.
func (d *Daemon) chooseWorkProject(now time.Time) *boinc.Project {
	secs, _ := d.cpuWorkRequest(now)
	var best *boinc.Project
	bestLoad := math.Inf(1)
	for _, p := range d.st.sortedProjects() {
		if secs == 0 {
			d.noteFetch(p, "work buffer is full")
			continue
		}
		ok, why := d.canFetch(p, now)
		if !ok {
			d.noteFetch(p, why)
			continue
		}
		queued := 0.0
		for _, r := range d.st.results {
			if r.ProjectURL == p.MasterURL && r.Phase.Unfinished() {
				queued += d.estimateRemaining(r) * d.resultNCPUs(r)
			}
		}
		load := queued / math.Max(p.ResourceShare, 1e-6)
		if load < bestLoad {
			best, bestLoad = p, load
		}
	}
	if best != nil {
		d.noteFetch(best, "")
	}
	return best
}

// noteFetch logs why a project is not asked for work, once per change of
// reason, so "why isn't it fetching?" always has an answer in the log.
func (d *Daemon) noteFetch(p *boinc.Project, reason string) {
	if d.fetchReasons[p.MasterURL] == reason {
		return
	}
	d.fetchReasons[p.MasterURL] = reason
	if reason != "" {
		d.projectLog(p).Info("not requesting work", slog.String("reason", reason))
	}
}

func (d *Daemon) startMasterFetch(p *boinc.Project) {
	ctx, cancel := context.WithCancel(d.ctx)
	d.rpc = &rpcInFlight{project: p.MasterURL, master: true, cancel: cancel}
	url := p.MasterURL
	d.projectLog(p).Info("fetching master page to find the scheduler")
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		urls, _, err := d.http.FetchMaster(ctx, url)
		d.send(masterDone{project: url, urls: urls, err: err})
	}()
}

func (d *Daemon) handleMasterDone(ev masterDone, now time.Time) {
	d.rpc = nil
	p := d.st.projects[ev.project]
	if p == nil {
		return
	}
	log := d.projectLog(p)
	if ev.err != nil {
		if d.ctx.Err() != nil {
			return
		}
		p.MasterFailures++
		delay := boinc.ExponentialBackoff(p.MasterFailures-1, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
		p.MinRPCTime = now.Add(delay)
		log.Error("cannot read the project's master page", slog.Any("err", ev.err), slog.Duration("retry_in", delay.Round(time.Second)))
		d.batch.PutProject(p)
		return
	}
	isNew := false
	for _, u := range ev.urls {
		if !contains(p.SchedulerURLs, u) {
			isNew = true
		}
	}
	p.SchedulerURLs = ev.urls
	p.MasterFetchPending = false
	p.MasterFailures = 0
	if isNew {
		p.MinRPCTime = time.Time{}
		p.RPCFailures = 0
	}
	if p.HostID == 0 && p.SchedRPCPending == boinc.RPCNone {
		p.SchedRPCPending = boinc.RPCInit
	}
	log.Info("found scheduler", slog.String("url", strings.Join(ev.urls, " ")))
	d.batch.PutProject(p)
}

func (d *Daemon) startSchedulerRPC(p *boinc.Project, reason boinc.RPCReason, now time.Time) {
	log := d.projectLog(p)
	var secs, inst float64
	if ok, _ := d.canFetch(p, now); ok || reason == boinc.RPCUserReq && !p.NoNewTasks && !p.DetachPending && !p.Suspended {
		secs, inst = d.cpuWorkRequest(now)
	}
	req, reported := d.buildRequest(p, secs, inst, now)
	var buf bytes.Buffer
	if _, err := req.WriteTo(&buf); err != nil {
		log.Error("cannot build scheduler request", slog.Any("err", err))
		return
	}
	url := p.SchedulerURLs[p.RPCFailures%len(p.SchedulerURLs)]
	if p.HostID != 0 {
		p.RPCSeqno++
	}
	d.batch.PutProject(p)
	ctx, cancel := context.WithCancel(d.ctx)
	d.rpc = &rpcInFlight{project: p.MasterURL, cancel: cancel}
	d.stats.RPCs++
	log.Info("sending scheduler request", slog.String("reason", reason.String()),
		slog.Float64("cpu_req_secs", math.Round(secs)), slog.Int("reporting", len(reported)))
	body := buf.Bytes()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		reply, _, err := d.http.SchedulerRPC(ctx, url, body)
		d.send(rpcDone{project: p.MasterURL, reason: reason, reply: reply, err: err, reported: reported, askedSecs: secs})
	}()
}

func (d *Daemon) shareFraction(p *boinc.Project) float64 {
	total := 0.0
	for _, q := range d.st.projects {
		if !q.DetachPending {
			total += q.ResourceShare
		}
	}
	if total <= 0 {
		return 1
	}
	return p.ResourceShare / total
}

func (d *Daemon) buildRequest(p *boinc.Project, secs, inst float64, now time.Time) (*rpcclient.SchedulerRequest, []string) {
	frac := d.shareFraction(p)
	req := &rpcclient.SchedulerRequest{
		Authenticator:         p.Authenticator,
		HostID:                p.HostID,
		ResourceShareFraction: frac,
		RRSFraction:           frac,
		PRRSFraction:          frac,
		DCF:                   1,
		DontSendWork:          p.NoNewTasks || p.DetachPending,
		WorkReqSeconds:        secs,
		CPUReqSecs:            secs,
		CPUReqInstances:       inst,
		Platform:              boinc.PlatformName,
		CodeSignKey:           p.CodeSignKey,
		Prefs:                 d.prefs,
		CrossProjectID:        p.CrossProjectID,
		Host:                  d.host,
	}
	if p.HostID != 0 {
		req.RPCSeqno = p.RPCSeqno
	}
	if secs > 0 {
		w := d.queueSummary(now)
		req.EstimatedDelay = w.BusySecs
	}
	start := float64(d.startTime.UnixNano()) / 1e9
	up := now.Sub(d.startTime).Seconds()
	req.TimeStats = rpcclient.TimeStats{
		OnFrac: 1, ConnectedFrac: -1, CPUAndNetworkAvailableFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1,
		ClientStartTime: start, TotalStartTime: start, TotalDuration: up, TotalActiveDuration: up,
		TotalGPUActiveDuration: up, Now: float64(now.UnixNano()) / 1e9, SessionActiveDuration: up, SessionGPUActiveDuration: up,
	}
	req.DiskUsage = rpcclient.DiskUsage{
		Total:   dirSize(d.opt.DataDir),
		Project: dirSize(d.projectDir(p.MasterURL)),
		Share:   d.host.DFree * frac,
	}

	var versions []*boinc.AppVersion
	for _, v := range d.st.versions {
		if v.ProjectURL == p.MasterURL {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i].Key() < versions[j].Key() })
	index := map[string]int{}
	for i, v := range versions {
		index[v.Key()] = i
	}
	req.AppVersions = versions

	var reported []string
	for _, r := range d.st.projectResults(p.MasterURL) {
		if r.Phase.ReadyToReport() {
			rr := rpcclient.ReportedResult{Result: r, AppVersionNum: r.VersionNum}
			if wu := d.st.wuOf(r); wu != nil && wu.VersionNum != 0 {
				rr.AppVersionNum = wu.VersionNum
			}
			for _, f := range d.st.outputFiles(r) {
				if f.Uploaded {
					rr.OutputFiles = append(rr.OutputFiles, f)
				}
			}
			req.Results = append(req.Results, rr)
			reported = append(reported, r.Key())
			continue
		}
		idx := 0
		if v := d.st.versionOf(r); v != nil {
			idx = index[v.Key()]
		}
		req.OtherResults = append(req.OtherResults, rpcclient.OtherResult{Name: r.Name, AppVersion: idx, PlanClass: r.PlanClass})
	}
	return req, reported
}

func (d *Daemon) queueSummary(now time.Time) cpuWork {
	var jobs []queuedJob
	for _, r := range d.st.results {
		if r.Phase.Unfinished() {
			ok, _ := d.runnable(r, now)
			jobs = append(jobs, queuedJob{RemainingSecs: d.estimateRemaining(r), NCPUs: d.resultNCPUs(r), Runnable: ok})
		}
	}
	return summarizeQueue(jobs, d.usableCPUs())
}

func (d *Daemon) handleRPCDone(ev rpcDone, now time.Time) {
	d.rpc = nil
	p := d.st.projects[ev.project]
	if p == nil {
		return
	}
	log := d.projectLog(p)
	d.fetchSoon(now)
	if ev.err != nil {
		if d.ctx.Err() != nil {
			return
		}
		d.rpcFailed(p, ev.err, now)
		return
	}
	rep := ev.reply
	for _, m := range rep.Messages {
		lvl := slog.LevelInfo
		if m.Priority == "high" || m.Priority == "notice" {
			lvl = slog.LevelWarn
		}
		log.Log(d.ctx, lvl, "message from server", slog.String("text", strings.TrimSpace(m.Text)))
	}
	// The pending request is done only when it succeeded: a failed first
	// contact or user request is retried after the backoff.
	if p.SchedRPCPending == ev.reason {
		p.SchedRPCPending = boinc.RPCNone
	}
	p.RPCFailures = 0
	p.LastRPCTime = now
	p.MinRPCTime = time.Time{}
	if rep.RequestDelay > 0 {
		p.MinRPCTime = now.Add(time.Duration(rep.RequestDelay * float64(time.Second)))
	}
	if rep.ProjectIsDown {
		delay := boinc.ExponentialBackoff(0, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
		if t := now.Add(delay); t.After(p.MinRPCTime) {
			p.MinRPCTime = t
		}
		log.Warn("project is down; will retry later", slog.Time("retry_at", p.MinRPCTime))
		d.batch.PutProject(p)
		return
	}
	d.applyProjectInfo(p, rep)
	newResults := d.applyWork(p, rep, now)

	acked := map[string]bool{}
	for _, name := range rep.ResultAcks {
		acked[entityKey(p.MasterURL, name)] = true
	}
	for _, key := range ev.reported {
		r := d.st.results[key]
		if r == nil {
			continue
		}
		if acked[key] {
			d.stats.Acked++
			d.ackResult(r)
		} else if r.Phase != boinc.PhaseReported {
			_ = r.SetPhase(boinc.PhaseReported)
			d.batch.PutResult(r)
		}
	}
	d.stats.ResultsReported += len(ev.reported)
	for _, name := range rep.ResultAborts {
		if r := d.st.results[entityKey(p.MasterURL, name)]; r != nil && !r.Phase.ReadyToReport() {
			d.abortTask(r, boinc.ExitAbortedByProject, "aborted by project", now)
		}
	}
	for _, name := range rep.ResultAbortsIfNotStarted {
		if r := d.st.results[entityKey(p.MasterURL, name)]; r != nil && r.Phase < boinc.PhaseComputing {
			d.abortTask(r, boinc.ExitAbortedByProject, "aborted by project (not started)", now)
		}
	}
	if rep.NextRPCDelay != nil {
		if *rep.NextRPCDelay > 0 {
			p.NextRPCTime = now.Add(time.Duration(*rep.NextRPCDelay * float64(time.Second)))
		} else {
			p.NextRPCTime = time.Time{}
		}
	} else if !p.NextRPCTime.IsZero() && !now.Before(p.NextRPCTime) {
		p.NextRPCTime = time.Time{}
	}
	switch {
	case newResults > 0:
		p.WorkFetchBackoff, p.WorkFetchBackoffUntil = 0, time.Time{}
		log.Info("scheduler request completed", slog.Int("new_tasks", newResults), slog.Int("acked", len(rep.ResultAcks)))
	case ev.askedSecs > 0:
		delay := boinc.ExponentialBackoff(p.WorkFetchBackoff, d.opt.FetchBackoffMin, 24*time.Hour, d.uniform())
		p.WorkFetchBackoff++
		p.WorkFetchBackoffUntil = now.Add(delay)
		log.Info("scheduler request completed: no work sent", slog.Int("acked", len(rep.ResultAcks)),
			slog.Duration("work_fetch_backoff", delay.Round(time.Second)))
	default:
		log.Info("scheduler request completed", slog.Int("acked", len(rep.ResultAcks)))
	}
	d.batch.PutProject(p)
}

// rpcFailed backs the project off: min(60 s·2^n, 4 h)·U[0.5,1), and
// re-reads the master page every 10 consecutive failures in case the
// scheduler moved.
func (d *Daemon) rpcFailed(p *boinc.Project, err error, now time.Time) {
	p.RPCFailures++
	d.stats.RPCFailures++
	n := min(p.RPCFailures-1, boinc.RPCRetryCap)
	delay := boinc.ExponentialBackoff(n, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
	p.MinRPCTime = now.Add(delay)
	if p.RPCFailures%boinc.MasterFetchPeriod == 0 {
		p.MasterFetchPending = true
	}
	d.projectLog(p).Warn("scheduler request failed", slog.Any("err", err),
		slog.Int("consecutive_failures", p.RPCFailures), slog.Duration("retry_in", delay.Round(time.Second)))
	d.batch.PutProject(p)
}

func (d *Daemon) applyProjectInfo(p *boinc.Project, rep *rpcclient.SchedulerReply) {
	if rep.ProjectName != "" {
		p.ProjectName = rep.ProjectName
	}
	if rep.UserName != "" {
		p.UserName = rep.UserName
	}
	p.TeamName = rep.TeamName
	if rep.UserID != 0 {
		p.UserID = rep.UserID
	}
	p.TeamID = rep.TeamID
	p.UserTotalCredit, p.UserExpavgCredit = rep.UserTotalCredit, rep.UserExpavgCredit
	p.HostTotalCredit, p.HostExpavgCredit = rep.HostTotalCredit, rep.HostExpavgCredit
	if rep.CrossProjectID != "" {
		p.CrossProjectID = rep.CrossProjectID
	}
	if rep.ProjectPrefs != "" {
		p.ProjectPrefs = rep.ProjectPrefs
	}
	if rep.HostID != 0 && rep.HostID != p.HostID {
		p.HostID = rep.HostID
		p.RPCSeqno = 0
	}
	if rep.CodeSignKey != "" && p.CodeSignKey == "" {
		p.CodeSignKey = rep.CodeSignKey
	}
	p.DontUseDCF = rep.DontUseDCF
	p.NoRscApps = rep.NoRscApps
	if rep.Ended && !p.Ended {
		p.Ended = true
		d.projectLog(p).Warn("the project has ended; no more work will be requested")
	}
}

// applyWork merges apps, files, versions, workunits and results from a
// reply; it returns how many new results were added.
func (d *Daemon) applyWork(p *boinc.Project, rep *rpcclient.SchedulerReply, now time.Time) int {
	url := p.MasterURL
	for i := range rep.Apps {
		a := rep.Apps[i]
		a.ProjectURL = url
		d.st.apps[a.Key()] = &a
		d.batch.PutApp(&a)
	}
	for i := range rep.FileInfos {
		f := rep.FileInfos[i]
		f.ProjectURL = url
		if old := d.st.files[f.Key()]; old != nil {
			// Keep what we know locally; take the server's new URLs.
			if len(f.DownloadURLs) > 0 {
				old.DownloadURLs = f.DownloadURLs
			}
			if len(f.UploadURLs) > 0 {
				old.UploadURLs = f.UploadURLs
			}
			d.batch.PutFile(old)
			continue
		}
		f.Status = boinc.FileNotPresent
		d.st.files[f.Key()] = &f
		d.batch.PutFile(&f)
	}
	for i := range rep.AppVersions {
		v := rep.AppVersions[i]
		v.ProjectURL = url
		if _, ok := d.st.versions[v.Key()]; ok {
			continue
		}
		d.st.versions[v.Key()] = &v
		d.batch.PutAppVersion(&v)
	}
	// Every file of an app version is executable code: unless the
	// volunteer opted out, it must carry the project's signature
	// (client_state.cpp link_app_version does the same).
	if !d.cfg.UnsignedAppsOK {
		for i := range rep.AppVersions {
			for _, ref := range rep.AppVersions[i].FileRefs {
				if f := d.st.file(url, ref.FileName); f != nil && !f.SignatureRequired && f.Status != boinc.FilePresent {
					f.SignatureRequired = true
					d.batch.PutFile(f)
				}
			}
		}
	}
	for i := range rep.Workunits {
		w := rep.Workunits[i]
		w.ProjectURL = url
		if _, ok := d.st.wus[w.Key()]; ok {
			continue
		}
		d.st.wus[w.Key()] = &w
		d.batch.PutWorkunit(&w)
	}
	added := 0
	for i := range rep.Results {
		r := rep.Results[i]
		r.ProjectURL = url
		if old := d.st.results[r.Key()]; old != nil {
			if !r.ReportDeadline.IsZero() && !old.ReportDeadline.Equal(r.ReportDeadline) {
				old.ReportDeadline = r.ReportDeadline
				d.batch.PutResult(old)
			}
			continue
		}
		if d.st.wuOf(&r) == nil || d.st.versionOf(&r) == nil {
			d.projectLog(p).Warn("dropping task: the reply lacks its workunit or app version", slog.String("task", r.Name))
			continue
		}
		r.Phase = boinc.PhaseNew
		r.Slot = -1
		r.ReceivedTime = now
		d.st.results[r.Key()] = &r
		d.batch.PutResult(&r)
		added++
	}
	return added
}

// ackResult forgets a result the server acknowledged, with its workunit
// and files once nothing else uses them.
func (d *Daemon) ackResult(r *boinc.Result) {
	_ = r.SetPhase(boinc.PhaseAcked)
	delete(d.st.results, r.Key())
	d.batch.DeleteResult(r.Key())
	d.taskLog(r).Info("result acknowledged by the server")
	d.gcFiles(r.ProjectURL)
}

func (d *Daemon) gcFiles(projectURL string) {
	usedWU := map[string]bool{}
	for _, r := range d.st.results {
		usedWU[entityKey(r.ProjectURL, r.WUName)] = true
	}
	for k, w := range d.st.wus {
		if w.ProjectURL == projectURL && !usedWU[k] {
			delete(d.st.wus, k)
			d.batch.DeleteWorkunit(k)
		}
	}
	for k, f := range d.st.files {
		if f.ProjectURL != projectURL || f.Sticky || d.st.fileInUse(f) {
			continue
		}
		if _, busy := d.xfers[k]; busy {
			continue
		}
		delete(d.st.files, k)
		d.batch.DeleteFile(k)
		removeQuiet(d.filePath(f))
	}
}

func dirSize(root string) float64 {
	var n int64
	_ = filepath.WalkDir(root, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := e.Info(); err == nil && !e.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return float64(n)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
