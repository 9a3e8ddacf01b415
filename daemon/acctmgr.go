package daemon

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/notices"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

// Account managers (client/acct_mgr.cpp): the host joins an AM (from
// boincd.toml's [account_manager] or over GUI RPC), sends it an
// <acct_mgr_request> describing itself and its projects, and applies the
// reply: the projects the volunteer chose on the AM's web site are
// attached (origin "acct_mgr"), changed or detached through the same
// paths as the config's, and the AM's preferences, messages and feeds
// take effect. The RPC runs off the owner goroutine through the daemon's
// HTTP client (so proxies and the CA bundle apply); its reply comes back
// as an acctMgrDone event.

const (
	originAcctMgr = "acct_mgr"

	acctMgrMetaKey     = "acct_mgr"
	acctMgrLeftMetaKey = "acct_mgr_left"

	// acctMgrDefaultRepeat is the sync period when the AM names none
	// (repeat_sec).
	acctMgrDefaultRepeat = 24 * time.Hour
	// The failure backoff (ACCT_MGR_MIN_BACKOFF, ACCT_MGR_MAX_BACKOFF).
	acctMgrMinBackoff = 600 * time.Second
	acctMgrMaxBackoff = 86400 * time.Second
	// acctMgrMaxReply bounds an AM reply; real ones are a few KiB.
	acctMgrMaxReply = 1 << 20
	// acctMgrMinRepeat keeps a sloppy repeat_sec from making every
	// host of a fleet hammer the AM.
	acctMgrMinRepeat = time.Hour
)

// Error numbers an AM RPC ends with (lib/error_numbers.h).
const (
	errNumXMLParse   = guirpc.ErrNumXMLParse
	errNumInvalidURL = guirpc.ErrNumInvalidURL
	errNumBadKey     = -153 // ERR_RSA_FAILED: the AM's signing key is missing or changed
)

// acctMgrInfo is the persisted account manager membership: the C++
// client's acct_mgr_url.xml and acct_mgr_login.xml, plus what boincd
// keeps of the AM's last reply. The password is only ever its hash.
type acctMgrInfo struct {
	URL              string `json:"url"`
	Name             string `json:"name,omitempty"`
	SigningKey       string `json:"signing_key,omitempty"`
	SendGUIRPCInfo   bool   `json:"send_gui_rpc_info,omitempty"`
	LoginName        string `json:"login_name,omitempty"`
	PasswordHash     string `json:"password_hash,omitempty"`
	Authenticator    string `json:"authenticator,omitempty"`
	PreviousHostCPID string `json:"previous_host_cpid,omitempty"`
	// Opaque is the AM's <opaque>, echoed raw in every request.
	Opaque           string    `json:"opaque,omitempty"`
	NextRPCTime      time.Time `json:"next_rpc_time"`
	Failures         int       `json:"failures,omitempty"`
	NoProjectNotices bool      `json:"no_project_notices,omitempty"`
	Dynamic          bool      `json:"dynamic,omitempty"`
	SendTasksActive  bool      `json:"send_tasks_active,omitempty"`
	SendTasksAll     bool      `json:"send_tasks_all,omitempty"`
	UserName         string    `json:"user_name,omitempty"`
	TeamName         string    `json:"team_name,omitempty"`
	// GlobalPrefs is the AM's <global_preferences>; HostVenue picks one
	// of its venues.
	GlobalPrefs string `json:"global_prefs,omitempty"`
	HostVenue   string `json:"host_venue,omitempty"`
	// Origin: "config" (boincd.toml) or "gui_rpc" (boinccmd, Manager);
	// ConfigDigest the [account_manager] table last applied.
	Origin       string `json:"origin,omitempty"`
	ConfigDigest string `json:"config_digest,omitempty"`
	// Listed are the projects the AM's last reply wants attached.
	Listed []string `json:"listed,omitempty"`
}

// AcctMgrMetaKey is the state record of the account manager membership.
const AcctMgrMetaKey = acctMgrMetaKey

// ImportedAcctMgr is an account manager membership the C++ client kept
// (acct_mgr_url.xml, acct_mgr_login.xml), for boincd import.
type ImportedAcctMgr struct {
	URL, Name, SigningKey                  string
	SendGUIRPCInfo                         bool
	LoginName, PasswordHash, Authenticator string
	PreviousHostCPID, Opaque               string
	NextRPCTime                            time.Time
	NoProjectNotices, Dynamic              bool
	UserName, TeamName                     string
}

// AcctMgrRecord is the AcctMgrMetaKey record of an imported membership:
// the host stays in the AM, projects marked attached via it are its.
func AcctMgrRecord(a ImportedAcctMgr) any {
	return &acctMgrInfo{
		URL: a.URL, Name: a.Name, SigningKey: a.SigningKey, SendGUIRPCInfo: a.SendGUIRPCInfo,
		LoginName: a.LoginName, PasswordHash: a.PasswordHash, Authenticator: a.Authenticator,
		PreviousHostCPID: a.PreviousHostCPID, Opaque: a.Opaque, NextRPCTime: a.NextRPCTime,
		NoProjectNotices: a.NoProjectNotices, Dynamic: a.Dynamic, UserName: a.UserName, TeamName: a.TeamName,
		Origin: originGUIRPC,
	}
}

// OriginAcctMgr is the Origin of projects the account manager attached.
const OriginAcctMgr = originAcctMgr

func (a *acctMgrInfo) haveCredentials() bool { return a.LoginName != "" || a.Authenticator != "" }

// acctMgrOp is the AM RPC in flight or last done; the owner's alone.
type acctMgrOp struct {
	started  bool
	inFlight bool
	seq      uint64
	cancel   context.CancelFunc
	errNum   int
	message  string
	// creds are what this RPC was sent with: on success they become the
	// membership (a join), otherwise nothing of them is kept.
	creds acctMgrInfo
	via   string
}

// acctMgrState is the daemon's account manager state.
type acctMgrState struct {
	info acctMgrInfo
	op   acctMgrOp
	// left is the digest of a config [account_manager] the volunteer
	// left over GUI RPC: the unchanged config does not join it again.
	left string
	// A join from boincd.toml that failed (the AM down when the fleet
	// boots, a wrong password being fixed on the AM) is tried again
	// with the failure backoff: joinRetry is when, joinFailures how
	// many in a row. Zero when no join is pending.
	joinRetry    time.Time
	joinFailures int
}

type acctMgrDone struct {
	seq  uint64
	raw  []byte
	err  error
	sent int64
}

// loadAcctMgr reads the membership at start.
func (d *Daemon) loadAcctMgr(meta map[string][]byte) {
	decodeMeta(meta, acctMgrMetaKey, &d.am.info)
	decodeMeta(meta, acctMgrLeftMetaKey, &d.am.left)
	if d.am.info.URL != "" {
		d.log.Info("Using account manager "+d.am.info.Name, slog.String("url", d.am.info.URL))
	}
}

func (d *Daemon) saveAcctMgr() {
	if d.am.info.URL == "" {
		d.batch.DeleteMeta(acctMgrMetaKey)
		return
	}
	d.batch.PutMeta(acctMgrMetaKey, &d.am.info)
}

// acctMgrLog is the logger for AM records.
func (d *Daemon) acctMgrLog(url string) *slog.Logger {
	return d.log.With(slog.String("account_manager", url))
}

// acctMgrAction serves the GUI RPC ops.
func (d *Daemon) acctMgrAction(a guirpc.Action, now time.Time) error {
	switch a := a.(type) {
	case guirpc.AcctMgrInfo:
		if a.Out != nil {
			*a.Out = guirpc.AcctMgrInfoOut{URL: d.am.info.URL, Name: d.am.info.Name, HaveCredentials: d.am.info.URL != "" && d.am.info.haveCredentials()}
		}
		return nil
	case guirpc.AcctMgrPoll:
		if a.Out != nil {
			*a.Out = d.acctMgrPollStatus()
		}
		return nil
	case guirpc.AcctMgrRPC:
		return d.acctMgrRPCFromGUI(a, now)
	}
	return fmt.Errorf("unsupported account manager operation %T", a)
}

func (d *Daemon) acctMgrPollStatus() guirpc.AcctMgrStatus {
	op := &d.am.op
	if op.inFlight {
		return guirpc.AcctMgrStatus{ErrorNum: guirpc.ErrNumInProgress}
	}
	return guirpc.AcctMgrStatus{ErrorNum: op.errNum, Message: op.message}
}

var errBadArg = errors.New("bad arg")

// acctMgrRPCFromGUI is handle_acct_mgr_rpc: join, sync or leave.
func (d *Daemon) acctMgrRPCFromGUI(a guirpc.AcctMgrRPC, now time.Time) error {
	info := &d.am.info
	switch {
	case a.UseCurrent:
		if info.URL == "" {
			d.log.Warn("account manager sync requested, but this host is not in an account manager")
			return errBadArg
		}
		d.startAcctMgrRPC(*info, "gui", now)
		return nil
	case strings.TrimSpace(a.URL) == "":
		if info.URL == "" {
			// Not in an AM: a join in flight is dropped, and the poll says
			// what the C++ client's does (an empty URL is not valid).
			d.cancelAcctMgrRPC()
			d.am.op = acctMgrOp{started: true, errNum: errNumInvalidURL, seq: d.am.op.seq}
			return nil
		}
		if info.Origin == originConfig {
			d.am.left = info.ConfigDigest
			d.batch.PutMeta(acctMgrLeftMetaKey, d.am.left)
			d.log.Warn("left the account manager named in boincd.toml; it stays left until its [account_manager] table changes")
		}
		d.leaveAcctMgr(now)
		d.am.op.started, d.am.op.errNum, d.am.op.message = true, 0, ""
		return nil
	}
	canon, err := boinc.CanonicalMasterURL(strings.TrimSpace(a.URL))
	if err != nil || strings.ContainsAny(canon, "?#") {
		d.cancelAcctMgrRPC()
		d.am.op = acctMgrOp{started: true, errNum: errNumInvalidURL, seq: d.am.op.seq}
		return nil
	}
	if info.URL != "" && info.URL != canon {
		return guirpc.ErrDifferentAM
	}
	creds := acctMgrInfo{URL: canon, LoginName: a.Name, PasswordHash: a.PasswordHash, Origin: originGUIRPC}
	if info.URL == canon {
		// A new login for the AM the host is in: keep the membership.
		creds = *info
		creds.LoginName, creds.PasswordHash, creds.Authenticator = a.Name, a.PasswordHash, ""
	}
	d.startAcctMgrRPC(creds, "gui", now)
	return nil
}

// reconcileAcctMgr makes the membership follow boincd.toml's
// [account_manager]: join it, update the login, leave an AM the config
// joined and no longer names. An AM joined over GUI RPC is left alone by
// a config without the table.
func (d *Daemon) reconcileAcctMgr(cfg *config.Config, now time.Time) {
	c := cfg.AccountManager
	info := &d.am.info
	if !c.Enabled() {
		if info.URL != "" && info.Origin == originConfig {
			d.acctMgrLog(info.URL).Info("account manager removed from boincd.toml; leaving it (its projects stay attached)")
			d.leaveAcctMgr(now)
		}
		if d.am.left != "" {
			d.am.left = ""
			d.batch.DeleteMeta(acctMgrLeftMetaKey)
		}
		return
	}
	canon, err := boinc.CanonicalMasterURL(c.URL)
	if err != nil {
		d.log.Error("boincd.toml [account_manager] url is not usable", slog.String("url", c.URL), slog.Any("err", err))
		return
	}
	digest := acctMgrConfigDigest(canon, c)
	if info.URL == canon {
		if info.ConfigDigest != digest {
			// A sync in flight carries the old login: the next one the new.
			d.cancelAcctMgrRPC()
			info.LoginName, info.PasswordHash, info.Authenticator = c.User, c.PasswordHash, c.Authenticator
			info.Origin, info.ConfigDigest = originConfig, digest
			info.NextRPCTime = now
			d.saveAcctMgr()
			d.acctMgrLog(canon).Info("account manager login from boincd.toml applied; syncing")
		}
		return
	}
	if d.am.left == digest {
		d.acctMgrLog(canon).Warn("boincd.toml names an account manager that was left over GUI RPC; edit its [account_manager] table to join it again")
		return
	}
	if op := &d.am.op; op.inFlight && op.creds.URL == canon && op.creds.ConfigDigest == digest {
		return
	}
	if info.URL != "" {
		d.acctMgrLog(info.URL).Warn("boincd.toml names another account manager; leaving this one", slog.String("new", canon))
		d.leaveAcctMgr(now)
	}
	d.acctMgrLog(canon).Info("joining the account manager named in boincd.toml", slog.String("user", c.User))
	d.startAcctMgrRPC(acctMgrInfo{
		URL: canon, LoginName: c.User, PasswordHash: c.PasswordHash, Authenticator: c.Authenticator,
		Origin: originConfig, ConfigDigest: digest,
	}, "config", now)
}

func acctMgrConfigDigest(url string, c config.AccountManager) string {
	h := sha256.Sum256([]byte(url + "\x00" + c.User + "\x00" + c.PasswordHash + "\x00" + c.Authenticator))
	return hex.EncodeToString(h[:8])
}

// maybeAcctMgrRPC is ACCT_MGR_INFO::poll: a sync when the AM's period
// (or the failure backoff) has passed and the network may be used.
func (d *Daemon) maybeAcctMgrRPC(now time.Time) {
	info := &d.am.info
	if info.URL == "" && !d.am.op.inFlight && !d.am.joinRetry.IsZero() && !now.Before(d.am.joinRetry) &&
		d.cfg != nil && d.cfg.AccountManager.Enabled() && !d.networkSuspended(now) {
		d.am.joinRetry = time.Time{}
		d.reconcileAcctMgr(d.cfg, now)
		return
	}
	if info.URL == "" || d.am.op.inFlight || now.Before(info.NextRPCTime) || d.ctx.Err() != nil {
		return
	}
	if d.networkSuspended(now) {
		return
	}
	d.startAcctMgrRPC(*info, "periodic", now)
}

func (d *Daemon) cancelAcctMgrRPC() {
	if op := &d.am.op; op.inFlight {
		op.cancel()
		op.inFlight = false
	}
}

// startAcctMgrRPC sends the request with creds, replacing one in flight.
func (d *Daemon) startAcctMgrRPC(creds acctMgrInfo, via string, now time.Time) {
	d.cancelAcctMgrRPC()
	req := d.buildAcctMgrRequest(creds, now)
	var buf bytes.Buffer
	if _, err := req.WriteTo(&buf); err != nil {
		d.acctMgrLog(creds.URL).Error("cannot build account manager request", slog.Any("err", err))
		return
	}
	op := &d.am.op
	op.seq++
	ctx, cancel := context.WithTimeout(d.ctx, webRPCTimeout)
	*op = acctMgrOp{started: true, inFlight: true, seq: op.seq, cancel: cancel, creds: creds, via: via, errNum: guirpc.ErrNumInProgress}
	seq, body, url := op.seq, buf.Bytes(), creds.URL+"rpc.php"
	d.acctMgrLog(creds.URL).Info("Contacting account manager at "+creds.URL, slog.String("via", via), slog.Int("projects", len(req.Projects)))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		raw, err := d.http.AcctMgrRPC(ctx, url, body, acctMgrMaxReply)
		if err != nil && errors.Is(context.Cause(ctx), context.Canceled) {
			return // replaced, or the daemon is stopping
		}
		d.send(acctMgrDone{seq: seq, raw: raw, err: err, sent: int64(len(body))})
	}()
}

// runModeName is run_mode_name[]: the permanent computing mode.
func runModeName(perm int) string {
	switch perm {
	case ModeAlways:
		return "always"
	case ModeNever:
		return "never"
	}
	return "auto"
}

// buildAcctMgrRequest is ACCT_MGR_OP::do_rpc's request.
func (d *Daemon) buildAcctMgrRequest(creds acctMgrInfo, now time.Time) *rpcclient.AcctMgrRequest {
	host := d.reportedHost()
	req := &rpcclient.AcctMgrRequest{
		Authenticator:    creds.Authenticator,
		Name:             creds.LoginName,
		PasswordHash:     creds.PasswordHash,
		HostCPID:         host.HostCPID,
		DomainName:       host.DomainName,
		RunMode:          runModeName(d.modes.Run.Perm),
		Platform:         d.primaryPlatform(),
		AltPlatforms:     d.altPlatforms(),
		PreviousHostCPID: creds.PreviousHostCPID,
		Dynamic:          creds.Dynamic,
		Prefs:            d.prefs,
		GlobalPrefsXML:   creds.GlobalPrefs,
		Host:             host,
		CoprocsXML:       d.coprocsXML(workfetch.Request{Project: -1}),
		Opaque:           creds.Opaque,
	}
	if creds.SendGUIRPCInfo && d.guiAddr != "" {
		if _, port, err := net.SplitHostPort(d.guiAddr); err == nil {
			req.GUIRPCPort, _ = strconv.Atoi(port)
		}
		if pass, err := guirpc.OpenPassword(d.opt.DataDir, d.log); err == nil {
			req.GUIRPCPassword = pass
		}
	}
	for _, p := range d.st.sortedProjects() {
		notStarted, inProgress := d.taskDurs(p.MasterURL)
		via := p.Origin == originAcctMgr
		ap := rpcclient.AcctMgrProject{
			URL: p.MasterURL, Name: p.ProjectName, Suspended: p.Suspended, HostID: p.HostID,
			NotStartedDur: notStarted, InProgressDur: inProgress, AttachedViaAcctMgr: via,
			DontRequestMoreWork: p.NoNewTasks, DetachWhenDone: p.DetachWhenDone || p.DetachPending, Ended: p.Ended,
			ResourceShare: p.ResourceShare, DiskUsage: dirSize(d.projectDir(p.MasterURL)),
			DiskShare:    d.requestDiskUsage(p.MasterURL).Share,
			NRPCFailures: p.RPCFailures, NJobsSuccess: p.NJobsSuccess, NJobsError: p.NJobsError,
		}
		if via {
			ap.AccountKey = p.Authenticator
		}
		if creds.Dynamic {
			// sched_req_no_work: the project's last answer for the
			// resource was "no work", which its work-fetch backoff stands
			// for.
			st := d.schedState(p.MasterURL)
			for r := range st.Backoff {
				if st.Backoff[r].Active(now) {
					ap.SchedReqNoWork = append(ap.SchedReqNoWork, workfetch.Rsc(r).String())
				}
			}
		}
		req.Projects = append(req.Projects, ap)
	}
	if creds.SendTasksActive || creds.SendTasksAll {
		req.ResultsXML = guirpc.ResultsXML(d.guiState(now, guirpc.PartResults), !creds.SendTasksAll)
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
	return req
}

// taskDurs is PROJECT::get_task_durs: the estimated remaining run time
// of the project's tasks not started and in progress.
func (d *Daemon) taskDurs(url string) (notStarted, inProgress float64) {
	for _, r := range d.st.projectResults(url) {
		if !r.Phase.Unfinished() {
			continue
		}
		rem := d.estimateRemaining(r)
		if math.IsNaN(rem) || rem < 0 {
			continue
		}
		if notStartedTask(r) {
			notStarted += rem
		} else {
			inProgress += rem
		}
	}
	return notStarted, inProgress
}

func notStartedTask(r *boinc.Result) bool {
	return r.Phase.Unfinished() && r.Phase != boinc.PhaseComputing && r.ElapsedTime == 0
}

// acctMgrBackoff is the delay before the next try after n failures in a
// row: 600 s doubling to a day, spread over its upper half by r in [0,1)
// so that a fleet does not retry in step.
func acctMgrBackoff(n int, r float64) time.Duration {
	if n < 1 {
		n = 1
	}
	x := acctMgrMinBackoff.Seconds() * math.Pow(2, float64(n-1))
	x = min(x, acctMgrMaxBackoff.Seconds())
	x *= 0.5 + 0.5*r
	return time.Duration(max(x, acctMgrMinBackoff.Seconds()) * float64(time.Second))
}

// handleAcctMgrDone is ACCT_MGR_OP::handle_reply.
func (d *Daemon) handleAcctMgrDone(ev acctMgrDone, now time.Time) {
	op := &d.am.op
	if ev.seq != op.seq || !op.inFlight {
		return
	}
	op.inFlight = false
	d.recordDailyXfer(true, ev.sent, now)
	d.recordDailyXfer(false, int64(len(ev.raw)), now)
	creds := op.creds
	log := d.acctMgrLog(creds.URL)
	fail := func(num int, msg string) {
		op.errNum, op.message = num, msg
		if d.am.info.URL == "" && creds.Origin == originConfig {
			d.am.joinFailures++
			d.am.joinRetry = now.Add(acctMgrBackoff(d.am.joinFailures, d.rand.Float64()))
			log.Warn("could not join the account manager named in boincd.toml; trying again later",
				slog.Time("at", d.am.joinRetry), slog.Int("failures", d.am.joinFailures))
		}
		if d.am.info.URL != "" && d.am.info.URL == creds.URL {
			d.am.info.Failures++
			d.am.info.NextRPCTime = now.Add(acctMgrBackoff(d.am.info.Failures, d.rand.Float64()))
			d.saveAcctMgr()
			log.Info("next account manager contact after backoff", slog.Time("at", d.am.info.NextRPCTime), slog.Int("failures", d.am.info.Failures))
		}
	}
	if ev.err != nil {
		log.Warn("account manager RPC failed", slog.Any("err", ev.err))
		fail(webErrNum(ev.err), "")
		return
	}
	rep, err := rpcclient.ParseAcctMgrReply(ev.raw)
	if err != nil {
		log.Error("account manager reply refused; nothing of it applied", slog.Any("err", err))
		fail(errNumXMLParse, err.Error())
		return
	}
	name := rep.Name
	if name == "" {
		name = creds.Name
	}
	if rep.ErrorNum != 0 || rep.Error != "" {
		num := rep.ErrorNum
		if num == 0 {
			num = errNumXMLParse
		}
		// ACCT_MGR_OP::handle_reply: a user alert under the AM's name,
		// "Message from account manager: " and its error_msg, else the
		// words boincerror gives its error_num.
		text := "Message from account manager: " + cmpOr(rep.Error, boincErrorText(num))
		d.names.set(creds.URL, cmpOr(name, creds.URL))
		// No other attributes: the event log would add them to the
		// text the C++ client prints bare.
		d.log.Warn(text, slog.String(eventlog.ProjectAttr, creds.URL))
		d.acctMgrAlert(name, creds.URL, text, now)
		fail(num, rep.Error)
		return
	}
	key, err := acctMgrSigningKey(creds.SigningKey, rep.SigningKey)
	if err != nil {
		// The C++ client's words start with a capital.
		msg := err.Error()
		log.Error(strings.ToUpper(msg[:1]) + msg[1:])
		fail(errNumBadKey, err.Error())
		return
	}
	joining := d.am.info.URL != creds.URL
	info := creds
	info.SigningKey = key
	if rep.Name != "" {
		info.Name = rep.Name
	}
	if rep.Authenticator != "" && rep.Authenticator != info.Authenticator {
		log.Info("Received new authenticator from account manager")
		info.Authenticator = rep.Authenticator
	}
	if rep.HasOpaque {
		info.Opaque = rep.Opaque
	}
	if rep.UserName != "" {
		info.UserName = rep.UserName
	}
	if rep.TeamName != "" {
		info.TeamName = rep.TeamName
	}
	info.Dynamic, info.SendGUIRPCInfo, info.NoProjectNotices = rep.Dynamic, rep.SendGUIRPC, rep.NoProjectNotices
	info.SendTasksActive, info.SendTasksAll = rep.SendTasksActive, rep.SendTasksAll
	repeat := acctMgrDefaultRepeat
	if rep.RepeatSec > 0 {
		repeat = max(time.Duration(rep.RepeatSec*float64(time.Second)), acctMgrMinRepeat)
	}
	info.Failures, info.NextRPCTime = 0, now.Add(repeat)
	// As the C++ client: the next request names this host's CPID as
	// the previous one, so the AM can follow a host whose CPID changes.
	info.PreviousHostCPID = d.reportedHost().HostCPID
	if rep.GlobalPrefs != "" {
		var probe boinc.Prefs
		if err := applyPrefsXML(&probe, []byte(rep.GlobalPrefs)); err != nil {
			log.Error("Can't parse global prefs in account manager reply: the host keeps its preferences", slog.Any("err", err))
		} else {
			info.GlobalPrefs = rep.GlobalPrefs
		}
	}
	if rep.HostVenue != "" {
		info.HostVenue = rep.HostVenue
	}
	d.am.info = info
	d.am.joinRetry, d.am.joinFailures = time.Time{}, 0
	op.errNum, op.message = 0, ""
	if joining {
		log.Info("joined account manager "+info.Name, slog.String("user", cmpOr(info.LoginName, "(account key)")))
	}
	log.Info("Account manager contact succeeded", slog.Int("accounts", len(rep.Accounts)), slog.Duration("next_in", repeat))
	for _, m := range rep.Messages {
		log.Info("Message from account manager: " + m)
		d.acctMgrNotice(info.Name, info.URL, m, now)
	}
	plan := planAcctMgrReply(info.SigningKey, rep.Accounts, d.acctMgrProjectView())
	for _, p := range plan.problems {
		log.Error(p)
	}
	d.applyAcctMgrPlan(plan, now)
	d.am.info.Listed = plan.listed
	if rep.HasRSSFeeds {
		feeds := make([]notices.Feed, 0, len(rep.RSSFeeds))
		for _, f := range rep.RSSFeeds {
			feeds = append(feeds, notices.Feed{URL: f.URL, PollInterval: time.Duration(f.PollInterval * float64(time.Second))})
		}
		d.nt.store.SetFeeds(info.URL, feeds)
		d.saveNotices()
	}
	d.saveAcctMgr()
	d.rereadPrefs()
	if rep.GlobalPrefs != "" && d.am.info.GlobalPrefs == rep.GlobalPrefs {
		d.logAcctMgrPrefsSource(log)
	}
	d.fetchSoon(now)
}

var prefsModTimeRE = regexp.MustCompile(`<mod_time>\s*([0-9.]+)\s*</mod_time>`)

// logAcctMgrPrefsSource says where the preferences in force came from, as
// CLIENT_STATE::show_global_prefs_source does after the account manager's
// reply stored them (save_global_prefs with the AM's URL as source): the
// source and its modification time, then the venue rule applied.
func (d *Daemon) logAcctMgrPrefsSource(log *slog.Logger) {
	info := d.am.info
	mod := "unknown"
	if m := prefsModTimeRE.FindStringSubmatch(info.GlobalPrefs); m != nil {
		if secs, err := strconv.ParseFloat(m[1], 64); err == nil && secs > 0 {
			mod = time.Unix(int64(secs), 0).Format("02-Jan-2006 15:04:05")
		}
	}
	log.Info(fmt.Sprintf("General prefs: from %s (last modified %s)", info.URL, mod))
	if info.HostVenue == "" {
		log.Info("Host location: none")
		log.Info("General prefs: using your defaults")
		return
	}
	log.Info("Computer location: " + info.HostVenue)
	for _, m := range venueRE.FindAllStringSubmatch(info.GlobalPrefs, -1) {
		if m[1] == info.HostVenue {
			log.Info("General prefs: using separate prefs for " + info.HostVenue)
			return
		}
	}
	log.Info("General prefs: no separate prefs for " + info.HostVenue + "; using your defaults")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// acctMgrSigningKey is the key to keep: the AM must send one the first
// time, and may never change it (a changed key would let whoever took
// over the AM's site attach hosts to projects of their choosing).
func acctMgrSigningKey(stored, sent string) (string, error) {
	switch {
	case stored == "" && sent == "":
		return "", errors.New("no signing key from account manager")
	case stored != "" && sent != "" && !sameKey(stored, sent):
		return "", errors.New("inconsistent signing key from account manager: it differs from the one it sent when the host joined; nothing of the reply applied")
	case stored != "":
		return stored, nil
	}
	if _, err := codesign.ParsePublicKey(sent); err != nil {
		return "", fmt.Errorf("account manager signing key is not usable: %w", err)
	}
	return strings.TrimSpace(sent) + "\n", nil
}

// verifyURLSignature is check_string_signature2: url_signature is the
// AM's RSA signature of the MD5 of the URL as sent.
func verifyURLSignature(keyText, url, sig string) error {
	if strings.TrimSpace(sig) == "" {
		return errors.New("no url_signature")
	}
	pub, err := codesign.ParsePublicKey(keyText)
	if err != nil {
		return err
	}
	sum := md5.Sum([]byte(url))
	return codesign.VerifyMD5Hex(pub, hex.EncodeToString(sum[:]), sig)
}

// acctMgrProject is what planning needs of an attached project.
type acctMgrProject struct {
	origin        string
	authenticator string
	detachPending bool
}

func (d *Daemon) acctMgrProjectView() map[string]acctMgrProject {
	m := make(map[string]acctMgrProject, len(d.st.projects))
	for url, p := range d.st.projects {
		m[url] = acctMgrProject{origin: p.Origin, authenticator: p.Authenticator, detachPending: p.DetachPending}
	}
	return m
}

// Kinds of amAction.
const (
	amAttach = "attach"
	amDetach = "detach"
	amSet    = "set"
)

type amAction struct {
	kind string
	url  string // canonical
	acct rpcclient.AcctMgrAccount
}

type amPlan struct {
	actions  []amAction
	problems []string
	// notes are informational (a config project the AM also names).
	notes  []string
	listed []string
}

// planAcctMgrReply decides what the reply's accounts do to the attached
// projects (handle_reply's loop), without touching them: every URL's
// signature is checked first, and a bad one is refused with the C++
// client's words, naming the project. A project in boincd.toml is the
// config's: the AM's settings for it are not applied.
func planAcctMgrReply(signingKey string, accts []rpcclient.AcctMgrAccount, have map[string]acctMgrProject) amPlan {
	var pl amPlan
	seen := map[string]bool{}
	for _, a := range accts {
		if err := verifyURLSignature(signingKey, a.URL, a.URLSignature); err != nil {
			pl.problems = append(pl.problems, fmt.Sprintf("Bad signature for URL %s: the account manager's url_signature does not verify under its signing key (%v); project not attached or changed", a.URL, err))
			continue
		}
		url, err := boinc.CanonicalMasterURL(a.URL)
		if err != nil || strings.ContainsAny(url, "?#") {
			pl.problems = append(pl.problems, fmt.Sprintf("account manager names an invalid project URL %q; skipped", a.URL))
			continue
		}
		if seen[url] {
			pl.problems = append(pl.problems, fmt.Sprintf("account manager names project %s twice; the second entry is ignored", url))
			continue
		}
		seen[url] = true
		wantDetach := a.Detach
		if !wantDetach {
			pl.listed = append(pl.listed, url)
		}
		p, ok := have[url]
		switch {
		case ok && p.origin == originConfig:
			pl.notes = append(pl.notes, fmt.Sprintf("project %s is in boincd.toml, which wins: the account manager's settings for it are not applied", url))
		case ok && wantDetach:
			if p.origin == originAcctMgr && !p.detachPending {
				pl.actions = append(pl.actions, amAction{kind: amDetach, url: url, acct: a})
			}
		case ok:
			// BAM! leaves the key out when the request showed it.
			if a.Authenticator != "" && a.Authenticator != p.authenticator {
				pl.problems = append(pl.problems, fmt.Sprintf("Already attached to a different account: %s (the account manager's account key differs); project left as it is", url))
				continue
			}
			pl.actions = append(pl.actions, amAction{kind: amSet, url: url, acct: a})
		case wantDetach || (a.DetachWhenDone != nil && *a.DetachWhenDone):
		case a.Authenticator == "":
			pl.problems = append(pl.problems, "Account manager reply missing authenticator for "+url)
		default:
			pl.actions = append(pl.actions, amAction{kind: amAttach, url: url, acct: a})
		}
	}
	slices.Sort(pl.listed)
	return pl
}

// applyAcctMgrPlan carries a plan out through the same paths a config
// reload and GUI RPC use.
func (d *Daemon) applyAcctMgrPlan(pl amPlan, now time.Time) {
	for _, n := range pl.notes {
		d.log.Info(n)
	}
	for _, a := range pl.actions {
		p := d.st.projects[a.url]
		switch a.kind {
		case amAttach:
			d.log.Info("Attaching to "+a.url, slog.String("via", originAcctMgr))
			p = d.attach(a.url, a.acct.Authenticator, originAcctMgr)
		case amDetach:
			if p != nil {
				d.startDetachFor(p, "detached by the account manager", now)
			}
			continue
		}
		if p == nil {
			continue
		}
		if p.DetachPending {
			p.DetachPending, p.NoNewTasks = false, false
			d.projectLog(p).Info("the account manager wants the project; detach cancelled")
		}
		if p.Origin != originAcctMgr {
			d.projectLog(p).Info("project now managed by the account manager", slog.String("was", p.Origin))
			p.Origin, p.ConfigDigest = originAcctMgr, ""
		}
		d.applyAcctSettings(p, a.acct, now)
	}
}

// applyAcctSettings applies one <account>'s settings to its project.
func (d *Daemon) applyAcctSettings(p *boinc.Project, a rpcclient.AcctMgrAccount, now time.Time) {
	log := d.projectLog(p)
	if a.DontRequestMoreWork != nil && p.NoNewTasks != *a.DontRequestMoreWork {
		p.NoNewTasks = *a.DontRequestMoreWork
		log.Info("no new tasks set by the account manager", slog.Bool("no_new_tasks", p.NoNewTasks))
	}
	if a.DetachWhenDone != nil {
		p.DetachWhenDone = *a.DetachWhenDone
		if p.DetachWhenDone {
			p.NoNewTasks = true
		}
	}
	if a.Update {
		p.SchedRPCPending = boinc.RPCAcctMgrReq
		p.MinRPCTime = time.Time{}
	}
	switch {
	case a.ResourceShare != nil:
		if p.ResourceShare != *a.ResourceShare {
			log.Info("resource share set by the account manager", slog.Float64("resource_share", *a.ResourceShare))
		}
		p.ResourceShare, p.AMShare = *a.ResourceShare, true
	case p.AMShare:
		// No host-specific share any more: back to the default.
		p.ResourceShare, p.AMShare = 100, false
	}
	if a.Suspend != nil && p.Suspended != *a.Suspend {
		p.Suspended = *a.Suspend
		log.Info("project suspended by the account manager", slog.Bool("suspended", p.Suspended))
	}
	if a.AbortNotStarted {
		for _, r := range d.st.projectResults(p.MasterURL) {
			if notStartedTask(r) {
				d.abortTask(r, boinc.ExitAbortedByClient, "aborted by the account manager (abort_not_started)", now)
			}
		}
	}
	p.AMNoRsc = slices.Clone(a.NoRsc)
	d.batch.PutProject(p)
}

// leaveAcctMgr is acct_mgr_rpc with an empty URL ("Removing account
// manager info"): the membership is forgotten and the AM's projects stay
// attached, as attached over GUI RPC, without their AM flags.
func (d *Daemon) leaveAcctMgr(now time.Time) {
	d.cancelAcctMgrRPC()
	url := d.am.info.URL
	d.acctMgrLog(url).Info("Removing account manager info")
	for _, p := range d.st.sortedProjects() {
		if p.Origin == originAcctMgr || p.AMShare || len(p.AMNoRsc) > 0 {
			if p.Origin == originAcctMgr {
				p.Origin = originGUIRPC
			}
			p.AMShare, p.AMNoRsc = false, nil
			d.batch.PutProject(p)
		}
	}
	if url != "" {
		d.nt.store.SetFeeds(url, nil)
		d.nt.store.RemoveProject(url)
		d.saveNotices()
	}
	d.am.info = acctMgrInfo{}
	d.saveAcctMgr()
	d.rereadPrefs()
	d.fetchSoon(now)
}

// acctMgrAlert is the notice a C++ user alert about the AM makes
// (msg_printf with MSG_USER_ALERT: the text, under the AM's name, no
// title).
func (d *Daemon) acctMgrAlert(name, url, text string, now time.Time) {
	d.nt.store.Add(notices.Notice{
		Description: text, ProjectURL: url, ProjectName: cmpOr(name, url), Category: notices.CategoryClient,
	}, now)
	d.saveNotices()
}

// boincErrorText is lib/str_util.cpp boincerror for the numbers an
// account manager sends.
func boincErrorText(num int) string {
	switch num {
	case guirpc.ErrNumBadPasswd:
		return "bad password"
	case -205: // ERR_BAD_EMAIL_ADDR
		return "bad email address"
	case -207: // ERR_NONUNIQUE_EMAIL
		return "email already registered"
	case -208: // ERR_ACCT_CREATION_DISABLED
		return "account creation disabled"
	case guirpc.ErrNumXMLParse:
		return "unexpected XML tag or syntax"
	case guirpc.ErrNumDBNotFound:
		return "no database rows found in lookup/enumerate"
	case guirpc.ErrNumProjectDown:
		return "project down"
	}
	return "Error " + strconv.Itoa(num)
}

// acctMgrNotice shows an AM message in the Notices tab.
func (d *Daemon) acctMgrNotice(name, url, text string, now time.Time) {
	d.nt.store.Add(notices.Notice{
		Title: "Message from account manager", Description: text, ProjectURL: url, ProjectName: cmpOr(name, url),
		Category: notices.CategoryClient,
	}, now)
	d.saveNotices()
}

var venueRE = regexp.MustCompile(`(?s)<venue\s+name="([^"]*)"\s*>(.*?)</venue>`)

// acctMgrPrefs applies the AM's preferences to p: the top level, then
// the host's venue when the AM named one and it is there
// (GLOBAL_PREFS::parse_override's venue rule).
func (d *Daemon) acctMgrPrefs(p *boinc.Prefs) {
	raw := d.am.info.GlobalPrefs
	if d.am.info.URL == "" || raw == "" {
		return
	}
	top := venueRE.ReplaceAllString(raw, "")
	if err := applyPrefsXML(p, []byte(top)); err != nil {
		d.log.Error("account manager preferences ignored", slog.Any("err", err))
		return
	}
	if v := d.am.info.HostVenue; v != "" {
		for _, m := range venueRE.FindAllStringSubmatch(raw, -1) {
			if m[1] == v {
				if err := applyPrefsXML(p, []byte("<global_preferences>"+m[2]+"</global_preferences>")); err != nil {
					d.log.Error("account manager preferences for venue ignored", slog.String("venue", v), slog.Any("err", err))
				}
			}
		}
	}
}
