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
	"github.com/boincd/boincd/workfetch"
)

type rpcInFlight struct {
	project string
	master  bool
	cancel  context.CancelFunc
	// orphan: the project was removed (detached) while the exchange was
	// on the wire; its end applies to nothing, even to a project attached
	// again at the same URL meanwhile.
	orphan bool
}

type masterDone struct {
	project string
	urls    []string
	err     error
}

type rpcDone struct {
	project  string
	reason   boinc.RPCReason
	reply    *rpcclient.SchedulerReply
	err      error
	reported []string // result keys sent in the request
	// trickles is how many trickle-up messages the request carried;
	// moreTrickles says some were left for the next one.
	trickles     int
	moreTrickles bool
	req          workfetch.Request
	// salvagedHostID is the host id found in a reply that was refused.
	salvagedHostID int64
	// sent and got are the request and reply bytes of an exchange that
	// took place, for the daily transfer history (the C++ client counts
	// scheduler traffic there too, and so against the network quota).
	sent, got int64
}

// Reporting rules (SCHEDULING.md §4.4).
const (
	reportDeadlineCushion = 24 * time.Hour
	reportIfAtLeastN      = 64
	uploadBusyWindow      = 300 * time.Second
	suspendSoonWindow     = 30 * time.Minute
)

// maybeRPC starts at most one project-server exchange at a time, in the
// C++ client's order of priority: master page fetches, user or first-contact
// requests, project-requested RPCs, overdue reports, then work fetch.
func (d *Daemon) maybeRPC(now time.Time) {
	if d.rpc != nil || d.stateAtRisk() || d.networkSuspended(now) {
		return
	}
	projects := d.st.sortedProjects()
	for _, p := range projects {
		if (p.MasterFetchPending || len(p.SchedulerURLs) == 0) && !now.Before(p.MinRPCTime) && !p.DetachPending {
			d.startMasterFetch(p)
			return
		}
	}
	if d.host.PCalculated == 0 {
		// As the C++ client (scheduler_rpc_poll): no scheduler RPC
		// before the first benchmarks, since every estimate the
		// request carries and the server plans with divides by them.
		return
	}
	if d.awaitingContainers(now) {
		return
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) == 0 || p.SchedRPCPending == boinc.RPCNone {
			continue
		}
		// A user's request skips the backoff once; if it failed, it waits
		// like any other retry instead of looping.
		if (p.SchedRPCPending == boinc.RPCUserReq && p.RPCFailures == 0) || !now.Before(p.MinRPCTime) {
			d.startSchedulerRPC(p, p.SchedRPCPending, d.updateRequest(p, p.SchedRPCPending, now), now)
			return
		}
	}
	for _, p := range projects {
		// CLIENT_STATE::next_project_trickle_up_pending: after the
		// pending requests, before anything else; not while backing off
		// or suspended by the user.
		if len(p.SchedulerURLs) > 0 && p.TrickleUpPending && !now.Before(p.MinRPCTime) && !p.Suspended {
			d.startSchedulerRPC(p, boinc.RPCTrickleUp, d.updateRequest(p, boinc.RPCTrickleUp, now), now)
			return
		}
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) > 0 && !p.NextRPCTime.IsZero() && !now.Before(p.NextRPCTime) && !now.Before(p.MinRPCTime) && !p.Suspended {
			d.startSchedulerRPC(p, boinc.RPCProjectReq, d.updateRequest(p, boinc.RPCProjectReq, now), now)
			return
		}
	}
	for _, p := range projects {
		if len(p.SchedulerURLs) > 0 && !now.Before(p.MinRPCTime) && (!p.Suspended || p.DetachPending) && d.resultsDue(p, now) {
			d.startSchedulerRPC(p, boinc.RPCResultsDue, d.updateRequest(p, boinc.RPCResultsDue, now), now)
			return
		}
	}
	if now.Before(d.nextFetchCheck) && !d.backoffEnded(now) {
		return
	}
	d.lastFetchCheck = now
	d.nextFetchCheck = now.Add(d.opt.WorkFetchInterval)
	if p, req := d.chooseWork(now); p != nil && d.minimalWork(req).Project >= 0 {
		if d.activelyUploading(p, now) {
			// The upload's end brings the check back (handleXferDone).
			d.projectLog(p).Debug("deferring work fetch; upload active")
			return
		}
		req = d.minimalWork(req)
		d.projectLog(p).Info("requesting work", slog.String("why", req.Reason))
		d.startSchedulerRPC(p, boinc.RPCNeedWork, req, now)
	}
}

// fetchSoon brings the next work-fetch check forward: after events that
// change the queue (a task ended, a transfer finished, an RPC finished,
// prefs or config changed).
func (d *Daemon) fetchSoon(now time.Time) { d.nextFetchCheck = now }

// backoffEnded reports whether a project's RPC backoff (request_delay
// included) or a per-resource fetch backoff ran out since the last
// work-fetch check, as the C++ client's check_project_timeout does: a
// project that said "not before 7 s" is asked again after 7 s, not at the
// next minute's check.
func (d *Daemon) backoffEnded(now time.Time) bool {
	ended := func(t time.Time) bool { return t.After(d.lastFetchCheck) && !now.Before(t) }
	for _, p := range d.st.projects {
		if ended(p.MinRPCTime) {
			return true
		}
		for _, b := range d.schedState(p.MasterURL).Backoff {
			if ended(b.Until) {
				return true
			}
		}
	}
	return false
}

// activelyUploading: an upload of p's started less than uploadBusyWindow
// ago is still running. As the C++ client (actively_uploading), neither
// a report nor a work request goes to p meanwhile: the request that
// follows the upload carries the result, instead of one request for the
// work and another for the report seconds later.
func (d *Daemon) activelyUploading(p *boinc.Project, now time.Time) bool {
	for _, x := range d.xfers {
		if x.project == p.MasterURL && x.upload && now.Sub(x.started) < uploadBusyWindow {
			return true
		}
	}
	return false
}

// clearBackoffForJobsFinishedDuringRPC: a job whose upload ended while a
// request was on the wire cleared its resource's backoff (clearJobBackoff)
// before the reply set a new one for "no work", and would then wait for
// that backoff or its report deadline (days) to be reported. The C++
// client has this race (update_results clears, the later handle_reply
// backs off): against the real server it left its last result unreported
// for minutes. Here the job's finish counts as after the reply.
func (d *Daemon) clearBackoffForJobsFinishedDuringRPC(p *boinc.Project, reported []string) {
	sent := make(map[string]bool, len(reported))
	for _, k := range reported {
		sent[k] = true
	}
	for key, r := range d.st.results {
		if r.ProjectURL == p.MasterURL && r.Phase.ReadyToReport() && !sent[key] {
			d.clearJobBackoff(r)
		}
	}
}

// resultsDue is CLIENT_STATE::find_project_with_overdue_results for one
// project: a finished result is reported at once when the project gets no
// new tasks (or is being detached), when the result, the project or its
// app (app_config.xml) or cc_config asks for immediate reports, when the
// computing or network window closes within 30 minutes
// (scheduler_rpc_poll's suspend_soon), when its deadline is within the
// larger of a day and the minimum buffer (REPORT_DEADLINE_CUSHION), an
// hour after it completed (MAX_REPORT_DELAY), or when 64 wait
// (RESULT_REPORT_IF_AT_LEAST_N); and, boincd's own rule, a failed result
// while the project's work fetch is held for failing tasks; never while
// an upload of the project's
// runs (actively_uploading). The caller has checked min_rpc_time and
// suspension, the rest of dont_contact.
func (d *Daemon) resultsDue(p *boinc.Project, now time.Time) bool {
	if d.activelyUploading(p, now) {
		return false
	}
	cushion := max(reportDeadlineCushion, time.Duration(d.prefs.WorkBufMinDays*86400)*time.Second)
	suspendSoon := d.hostc.prefs.TimeWindowsClose(now.Add(suspendSoonWindow))
	n := 0
	due := false
	for _, r := range d.st.results {
		if r.ProjectURL != p.MasterURL || !r.Phase.ReadyToReport() {
			continue
		}
		n++
		switch {
		case p.NoNewTasks, p.DetachPending, r.ReportImmediately, d.cc.eff.ReportResultsImmediately, d.reportAtOnce(r), suspendSoon:
			due = true
		case r.Phase != boinc.PhaseUploaded && now.Before(p.TaskBackoffUntil):
			// Not in the C++ client: a failed task is reported at once
			// while boincd holds work fetch from the project because its
			// tasks keep failing. The report would otherwise ride on the
			// work request that hold delays (up to 4 h, or the report
			// delay's hour); the project learns now, resends the job to
			// another host, and can lower this host's quota. The C++
			// client held such results until a user's update (the
			// real-server suite's time_limit case).
			due = true
		case now.After(r.ReportDeadline.Add(-cushion)):
			due = true
		case !r.CompletedTime.IsZero() && now.After(r.CompletedTime.Add(d.opt.MaxReportDelay)):
			due = true
		}
	}
	return due || n >= reportIfAtLeastN
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
	orphan := d.rpc != nil && d.rpc.orphan
	d.rpc = nil
	if orphan {
		return
	}
	d.attachMasterDone(ev)
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
	// A master page is as untrusted as a reply: a scheduler URL must be
	// a web address, never file:// or another scheme the HTTP stack
	// might learn to follow.
	urls := make([]string, 0, len(ev.urls))
	for _, u := range ev.urls {
		if err := rpcclient.CheckSchedulerURL(u); err != nil {
			log.Error("refusing a scheduler URL from the master page", slog.String("url", u), slog.Any("err", err))
			continue
		}
		urls = append(urls, u)
	}
	if len(urls) == 0 {
		p.MasterFailures++
		delay := boinc.ExponentialBackoff(p.MasterFailures-1, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
		p.MinRPCTime = now.Add(delay)
		log.Error("the project's master page names no usable scheduler URL", slog.Int("refused", len(ev.urls)), slog.Duration("retry_in", delay.Round(time.Second)))
		d.batch.PutProject(p)
		return
	}
	ev.urls = urls
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

func (d *Daemon) startSchedulerRPC(p *boinc.Project, reason boinc.RPCReason, work workfetch.Request, now time.Time) {
	log := d.projectLog(p)
	if p.NoNewTasks || p.DetachPending || p.Suspended {
		work = workfetch.Request{Project: -1}
	}
	d.notedWork(work)
	req, reported := d.buildRequest(p, work, now)
	trickles, moreTrickles := d.readTrickleFiles(p)
	req.MsgsFromHost = trickles
	d.replicateTrickles(p, req.Platform, trickles)
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
	if len(req.MsgsFromHost) > 0 && reason != boinc.RPCTrickleUp {
		log.Info("sending trickle-up message", slog.Int("messages", len(req.MsgsFromHost)))
	}
	log.Info("sending scheduler request", append([]any{slog.String("reason", reason.String()),
		slog.Float64("cpu_req_secs", math.Round(work.Secs[workfetch.CPU])), slog.Int("reporting", len(reported))},
		requestAttrs(p, work)...)...)
	body := buf.Bytes()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		reply, raw, err := d.http.SchedulerRPC(ctx, url, body)
		ev := rpcDone{project: p.MasterURL, reason: reason, reply: reply, err: err, reported: reported, req: work,
			trickles: len(req.MsgsFromHost), moreTrickles: moreTrickles}
		if raw != nil {
			ev.sent, ev.got = int64(len(body)), int64(len(raw))
		}
		if err != nil && raw != nil {
			ev.salvagedHostID = rpcclient.SalvageHostID(raw)
		}
		d.send(ev)
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

func (d *Daemon) buildRequest(p *boinc.Project, work workfetch.Request, now time.Time) (*rpcclient.SchedulerRequest, []string) {
	secs, inst := work.Secs[workfetch.CPU], work.Instances[workfetch.CPU]
	frac := d.shareFraction(p)
	req := &rpcclient.SchedulerRequest{
		Authenticator:         p.Authenticator,
		HostID:                p.HostID,
		ResourceShareFraction: frac,
		RRSFraction:           frac,
		PRRSFraction:          frac,
		DCF:                   d.schedState(p.MasterURL).DCF,
		DontSendWork:          p.NoNewTasks || p.DetachPending,
		DontUseDocker:         d.dontUseDocker(),
		WorkReqSeconds:        work.WorkReqSeconds(),
		CPUReqSecs:            secs,
		CPUReqInstances:       inst,
		Platform:              d.primaryPlatform(),
		AltPlatforms:          d.altPlatforms(),
		CodeSignKey:           p.CodeSignKey,
		Prefs:                 d.prefs,
		CrossProjectID:        p.CrossProjectID,
		Host:                  d.reportedHost(),
		CoprocsXML:            d.coprocsXML(work),
	}
	if p.HostID != 0 {
		req.RPCSeqno = p.RPCSeqno
	}
	if d.anonymous(p.MasterURL) {
		// CLIENT_STATE::write_platforms: the server then sends jobs only
		// for the <app_versions> below, which are app_info.xml's.
		req.Platform, req.AltPlatforms = anonymousPlatformName, nil
	}
	if secs > 0 {
		req.EstimatedDelay = d.core.sim.Rsc[workfetch.CPU].BusyTime
	}
	start := float64(d.startTime.UnixNano()) / 1e9
	up := now.Sub(d.startTime).Seconds()
	req.TimeStats = rpcclient.TimeStats{
		OnFrac: 1, ConnectedFrac: -1, CPUAndNetworkAvailableFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1,
		ClientStartTime: start, TotalStartTime: start, TotalDuration: up, TotalActiveDuration: up,
		TotalGPUActiveDuration: up, Now: float64(now.UnixNano()) / 1e9, SessionActiveDuration: up, SessionGPUActiveDuration: up,
	}
	req.NetStats = rpcclient.NetStats{
		BWUp: d.netStats.Up.MaxRate, AvgUp: d.netStats.Up.AvgRate, AvgTimeUp: d.netStats.Up.AvgTime,
		BWDown: d.netStats.Down.MaxRate, AvgDown: d.netStats.Down.AvgRate, AvgTimeDown: d.netStats.Down.AvgTime,
	}
	req.DiskUsage = d.requestDiskUsage(p.MasterURL)

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
	// Reported with app_config.xml's usage and cmdline, as the C++ client
	// reports its versions as modified.
	req.AppVersions = make([]*boinc.AppVersion, len(versions))
	for i, v := range versions {
		req.AppVersions[i] = d.effectiveVersion(v)
	}

	var reported []string
	for _, r := range d.st.projectResults(p.MasterURL) {
		if r.Phase.ReadyToReport() && (d.cc.eff.MaxTasksReported <= 0 || len(reported) < d.cc.eff.MaxTasksReported) {
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

func (d *Daemon) handleRPCDone(ev rpcDone, now time.Time) {
	orphan := d.rpc != nil && d.rpc.orphan
	d.rpc = nil
	d.recordDailyXfer(true, ev.sent, now)
	d.recordDailyXfer(false, ev.got, now)
	if orphan {
		d.fetchSoon(now)
		return
	}
	d.attachRPCDone(ev)
	// Whatever the reply holds (new tasks, acks, a host id) is saved at
	// once, even while state writes are failing and backing off; the
	// reserve kept for it makes room on a full disk (persist.go).
	d.commitNow()
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
		d.counters(p.MasterURL).rpcs[rpcOutcome(ev.err)]++
		if p.HostID == 0 && ev.salvagedHostID > 0 {
			p.HostID = ev.salvagedHostID
			p.RPCSeqno = 0
			log.Warn("kept the host id from the refused reply, so the project still knows this computer and its tasks",
				slog.Int64("hostid", p.HostID))
		}
		d.rpcFailed(p, ev.err, now)
		return
	}
	rep := ev.reply
	// The server's messages follow "Scheduler request completed", as in
	// the C++ client's event log.
	defer func() {
		for _, m := range rep.Messages {
			lvl := slog.LevelInfo
			if m.Priority == "high" || m.Priority == "notice" {
				lvl = slog.LevelWarn
			}
			log.Log(d.ctx, lvl, "message from server", slog.String("text", strings.TrimSpace(m.Text)))
		}
	}()
	d.noticesFromReply(p, ev.req, rep, now)
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
		d.counters(p.MasterURL).rpcs[RPCProjectDown]++
		delay := boinc.ExponentialBackoff(0, d.opt.RPCBackoffMin, boinc.RPCBackoffMax, d.uniform())
		if t := now.Add(delay); t.After(p.MinRPCTime) {
			p.MinRPCTime = t
		}
		log.Warn("project is down; will retry later", slog.Time("retry_at", p.MinRPCTime))
		d.batch.PutProject(p)
		return
	}
	d.counters(p.MasterURL).rpcs[RPCOK]++
	// As handle_scheduler_reply: acknowledged trickle-ups go; the flag
	// clears with any completed request (what was not acknowledged is
	// sent again with the next one).
	if rep.MessageAck {
		d.removeTrickleFiles(p)
	} else if ev.trickles > 0 {
		log.Warn("the server did not acknowledge the trickle-up messages; they go with the next request", slog.Int("messages", ev.trickles))
	}
	p.TrickleUpPending = ev.moreTrickles
	d.handleTrickleDowns(p, rep)
	for _, why := range rep.RefusedTrickleUpURLs {
		log.Warn("trickle handler URL ignored", slog.String("why", why))
	}
	d.setTrickleUpURLs(p, rep.TrickleUpURLs)
	d.applyProjectInfo(p, rep)
	d.recordCredit(p, rep, now)
	newResults, got := d.applyWork(p, rep, now)
	d.handleWorkReply(p, ev.req, got, ev.reason, now)
	d.clearBackoffForJobsFinishedDuringRPC(p, ev.reported)

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
	log.Info("scheduler request completed", slog.Int("new_tasks", newResults), slog.Int("acked", len(rep.ResultAcks)),
		slog.Float64("request_delay_s", rep.RequestDelay))
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
	d.checkReplyMasterURL(p, rep.MasterURL)
	if rep.ProjectName != "" && rep.ProjectName != p.ProjectName {
		p.ProjectName = rep.ProjectName
		d.names.set(p.MasterURL, p.ProjectName)
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
	if rep.HasGUIURLs {
		p.GUIURLs = rep.GUIURLs
	}
	if rep.HostID != 0 && rep.HostID != p.HostID {
		p.HostID = rep.HostID
		p.RPCSeqno = 0
	}
	d.applyCodeSignKey(p, rep)
	p.DontUseDCF = rep.DontUseDCF
	p.NoRscApps = rep.NoRscApps
	if rep.Ended && !p.Ended {
		p.Ended = true
		d.projectLog(p).Warn("the project has ended; no more work will be requested")
	}
}

// Limits on what the daemon takes from one project, whatever its replies
// say (docs/security.md).
const (
	// maxQueuedJobs is the C++ client's WF_MAX_RUNNABLE_JOBS: unfinished
	// tasks held per project. Jobs beyond it are refused with a log line.
	maxQueuedJobs = 1000
	// maxTaskEstimate (seconds, about 31 years) bounds a job's estimated
	// run time; a job whose estimate is not a finite positive number
	// below it is refused, so the round-robin simulation only ever sees
	// finite numbers.
	maxTaskEstimate = 1e9
	// maxDeadlineAhead is how far in the future a report deadline may
	// lie; a later one is clamped to it.
	maxDeadlineAhead = 2 * 365 * 24 * time.Hour
)

// applyWork merges apps, files, versions, workunits and results from a
// reply; it returns how many new results were added. The parser already
// refused unsafe names and absurd numbers; what is checked here needs the
// client state: references to files the project never described, files
// redefined with other contents, deadlines relative to now, the queue
// limit, and estimates derived from workunit and version together. What
// fails a check is refused on its own, with an error naming the project,
// the element and the value; everything else in the reply is applied.
func (d *Daemon) applyWork(p *boinc.Project, rep *rpcclient.SchedulerReply, now time.Time) (int, [workfetch.NumRsc]int) {
	var got [workfetch.NumRsc]int
	url := p.MasterURL
	log := d.projectLog(p)
	for i := range rep.Apps {
		a := rep.Apps[i]
		a.ProjectURL = url
		if d.anonAppFromReply(&a) {
			continue
		}
		d.st.apps[a.Key()] = &a
		d.batch.PutApp(&a)
	}
	for i := range rep.FileInfos {
		f := rep.FileInfos[i]
		f.ProjectURL = url
		if old := d.st.files[f.Key()]; old != nil && old.AnonymousPlatform {
			// The volunteer's own file (app_info.xml): the project
			// describes its own build, which is not used here.
			log.Debug("ignoring file_info for a file of app_info.xml", slog.String("file", f.Name))
			continue
		} else if old != nil {
			if (f.MD5 != "" && f.MD5 != old.MD5) || (f.NBytes > 0 && f.NBytes != old.NBytes) {
				// A file's name is its identity: a project may not
				// swap the contents of a file the client holds or has
				// already checked jobs against.
				log.Error("refusing file_info: it redefines a file the client holds",
					slog.String("file", f.Name), slog.String("held_md5", old.MD5), slog.String("new_md5", f.MD5),
					slog.Float64("held_nbytes", old.NBytes), slog.Float64("new_nbytes", f.NBytes))
				continue
			}
			// Keep what we know locally; take the server's new URLs.
			if len(f.DownloadURLs) > 0 {
				old.DownloadURLs = f.DownloadURLs
			}
			if len(f.UploadURLs) > 0 {
				old.UploadURLs = f.UploadURLs
			}
			if len(f.DownloadURLs) > 0 || len(f.GzippedURLs) > 0 {
				// FILE_INFO::merge_info takes download_gzipped from
				// the new file_info: a reply without <gzipped_url>
				// turns the compressed download off.
				old.GzippedURLs, old.GzippedNBytes = f.GzippedURLs, f.GzippedNBytes
			}
			d.batch.PutFile(old)
			continue
		}
		f.Status = boinc.FileNotPresent
		d.st.files[f.Key()] = &f
		d.batch.PutFile(&f)
	}
	versions := rep.AppVersions
	if d.anonymous(url) && len(versions) > 0 {
		// handle_scheduler_reply: the versions are app_info.xml's.
		log.Error("App version returned from anonymous platform project; ignoring",
			slog.Int("app_versions", len(versions)))
		versions = nil
	}
	for i := range versions {
		v := versions[i]
		v.ProjectURL = url
		// handle_scheduler_reply: no platform means the primary one;
		// a platform this host did not ask for is refused (its
		// programs would not run here).
		if v.Platform == "" {
			v.Platform = d.primaryPlatform()
		} else if !d.supportedPlatform(v.Platform) {
			log.Error("App version has unsupported platform; refused",
				slog.String("app", v.AppName), slog.Int("version", v.VersionNum), slog.String("platform", v.Platform),
				slog.Any("platforms", d.platforms))
			continue
		}
		if _, ok := d.st.versions[v.Key()]; ok {
			continue
		}
		if missing := d.st.missingFile(url, v.FileRefs); missing != "" {
			log.Error("refusing app_version: it refers to a file the project never described",
				slog.String("app", v.AppName), slog.Int("version", v.VersionNum), slog.String("file", missing))
			continue
		}
		if _, ok := v.MainProgram(); !ok {
			log.Error("refusing app_version: no file_ref is its main program",
				slog.String("app", v.AppName), slog.Int("version", v.VersionNum))
			continue
		}
		d.st.versions[v.Key()] = &v
		d.batch.PutAppVersion(&v)
	}
	// Every file of an app version is executable code: unless the
	// volunteer opted out, it must carry the project's signature
	// (client_state.cpp link_app_version does the same).
	if !d.cc.eff.UnsignedAppsOK { // boincd.toml, else cc_config.xml (ccopts.go)
		for i := range versions {
			for _, ref := range versions[i].FileRefs {
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
		if missing := d.st.missingFile(url, w.InputFiles); missing != "" {
			log.Error("refusing workunit: it refers to an input file the project never described",
				slog.String("workunit", w.Name), slog.String("file", missing))
			continue
		}
		d.st.wus[w.Key()] = &w
		d.batch.PutWorkunit(&w)
	}
	queued := 0
	for _, r := range d.st.results {
		if r.ProjectURL == url && r.Phase.Unfinished() {
			queued++
		}
	}
	added, overQueue := 0, 0
	for i := range rep.Results {
		r := rep.Results[i]
		r.ProjectURL = url
		deadline, why := checkDeadline(r.ReportDeadline, now)
		if old := d.st.results[r.Key()]; old != nil {
			if why == "" && !old.ReportDeadline.Equal(deadline) {
				d.st.setDeadline(old, deadline)
				d.batch.PutResult(old)
			}
			continue
		}
		d.defaultResultPlatform(&r)
		if d.st.wuOf(&r) == nil || d.st.versionOf(&r) == nil {
			log.Warn("dropping task: the reply lacks its workunit or app version", slog.String("task", r.Name))
			continue
		}
		if missing := d.st.missingFile(url, r.OutputFiles); missing != "" {
			log.Error("refusing task: it refers to an output file the project never described",
				slog.String("task", r.Name), slog.String("file", missing))
			continue
		}
		if why != "" {
			log.Error("refusing task: "+why, slog.String("task", r.Name), slog.Time("report_deadline", r.ReportDeadline))
			continue
		}
		if !deadline.Equal(r.ReportDeadline) {
			log.Warn("task's report deadline is implausibly far ahead; clamped",
				slog.String("task", r.Name), slog.Time("report_deadline", r.ReportDeadline), slog.Time("clamped_to", deadline))
			r.ReportDeadline = deadline
		}
		if est := d.estimateDuration(&r); !(est > 0 && est <= maxTaskEstimate) {
			log.Error("refusing task: its estimated run time is not a sane number",
				slog.String("task", r.Name), slog.Float64("estimate_secs", est), slog.Float64("limit_secs", maxTaskEstimate))
			continue
		}
		if queued >= maxQueuedJobs {
			overQueue++
			continue
		}
		r.Phase = boinc.PhaseNew
		r.Slot = -1
		r.ReceivedTime = now
		d.st.putResult(&r)
		d.batch.PutResult(&r)
		added++
		queued++
		rsc, _, _ := d.resultRsc(&r)
		got[rsc]++
	}
	if overQueue > 0 {
		log.Warn("refusing tasks: the project already has the most unfinished tasks the client holds",
			slog.Int("refused", overQueue), slog.Int("limit", maxQueuedJobs))
	}
	d.applyDeletes(p, rep.DeleteFileInfos)
	return added, got
}

// checkDeadline returns the deadline to store for a new task, or why the
// task is refused: a deadline missing or already past cannot be met.
func checkDeadline(deadline, now time.Time) (time.Time, string) {
	switch {
	case deadline.IsZero():
		return deadline, "it has no report deadline"
	case !deadline.After(now):
		return deadline, "its report deadline has already passed"
	case deadline.After(now.Add(maxDeadlineAhead)):
		return now.Add(maxDeadlineAhead), ""
	}
	return deadline, ""
}

// applyDeletes handles <delete_file_info>: the project no longer needs a
// sticky file, so it may go once nothing uses it (the parser checked the
// names; only files of this project are looked up).
func (d *Daemon) applyDeletes(p *boinc.Project, names []string) {
	changed := false
	for _, name := range names {
		f := d.st.file(p.MasterURL, name)
		if f == nil || !f.Sticky || f.AnonymousPlatform {
			continue
		}
		f.Sticky = false
		d.batch.PutFile(f)
		changed = true
	}
	if changed {
		d.gcFiles(p.MasterURL)
	}
}

// ackResult forgets a result the server acknowledged, with its workunit
// and files once nothing else uses them.
func (d *Daemon) ackResult(r *boinc.Result) {
	d.dropPendingTrickleDowns(r)
	d.rememberOldResult(r, time.Now())
	d.countReported(r)
	_ = r.SetPhase(boinc.PhaseAcked)
	d.st.deleteResult(r.Key())
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
		if f.ProjectURL != projectURL || f.Sticky || f.AnonymousPlatform || d.st.fileInUse(f) {
			continue
		}
		if _, busy := d.xfers[k]; busy {
			continue
		}
		delete(d.st.files, k)
		d.batch.DeleteFile(k)
		d.removeAfterCommit(d.filePath(f))
		if len(f.GzippedURLs) > 0 {
			// A compressed download cut off and never resumed leaves
			// its .gzt (FILE_INFO::delete_file removes NAME.gzt too).
			d.removeAfterCommit(rpcclient.GzipPartPath(d.filePath(f)))
		}
	}
}

// dirSize is the disk space the files under root take: allocated blocks,
// as the C++ client's dir_size_alloc counts them for the scheduler and the
// disk preferences, not their lengths.
func dirSize(root string) float64 {
	n := 0.0
	_ = filepath.WalkDir(root, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if info, err := e.Info(); err == nil && !e.IsDir() {
			n += allocSize(info)
		}
		return nil
	})
	return n
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkReplyMasterURL compares the master URL a reply names with the one
// the project is attached by (handle_scheduler_reply): a project that
// moved tells each request. The C++ client then alerts "This project
// seems to have changed its URL…", or, for the same URL moved from
// http:// to https:// (is_https_transition), takes the new one over.
// boincd alerts in both cases, once per run and URL: taking a URL over
// means re-keying the project's state, which it does not do (yet), and
// the old URL keeps working for as long as the project answers it.
func (d *Daemon) checkReplyMasterURL(p *boinc.Project, sent string) {
	if sent == "" {
		return
	}
	canon, err := boinc.CanonicalMasterURL(sent)
	if err != nil || strings.EqualFold(canon, p.MasterURL) || d.movedURLs[p.MasterURL] == canon {
		return
	}
	if d.movedURLs == nil {
		d.movedURLs = map[string]string{}
	}
	d.movedURLs[p.MasterURL] = canon
	old, now := strings.ToLower(p.MasterURL), strings.ToLower(canon)
	if strings.HasPrefix(old, "http://") && strings.HasPrefix(now, "https://") && old[len("http://"):] == now[len("https://"):] {
		d.projectLog(p).Warn("This project now uses https (" + canon + "). When convenient, remove the project, then add " + canon)
		return
	}
	d.projectLog(p).Warn("This project seems to have changed its URL.  When convenient, remove the project, then add " + canon)
}
