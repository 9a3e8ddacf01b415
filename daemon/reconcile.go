package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc"
)

// reloadConfig re-reads the config file (SIGHUP). A bad file is refused
// and the running config kept, so a typo never detaches anything.
func (d *Daemon) reloadConfig(now time.Time) {
	d.readCCConfig()
	defer d.readAppConfigs() // after reconcile: for the projects attached now
	if d.opt.Config != nil {
		d.log.Info("config reload ignored: this daemon runs on a built-in config")
		return
	}
	cfg, err := config.Load(d.opt.ConfigPath, true, d.opt.Getenv)
	if err != nil {
		d.log.Error("config reload refused; keeping the running config", slog.Any("err", err))
		return
	}
	d.log.Info("config reloaded", slog.String("file", d.opt.ConfigPath), slog.Int("projects", len(cfg.Projects)))
	d.reconcile(cfg, now)
}

// Project origins.
const (
	originConfig = "config"
	originGUIRPC = "gui_rpc"
)

// reconcile makes the attached projects match the config. The rule that
// keeps the config file and GUI RPC one truth:
//
//   - A project in the config is attached (origin "config"). Its settings
//     (account key, resource share, no_new_tasks, suspended) are applied
//     when the entry is new or changed since it was last applied, so a
//     reload of an unchanged file does not undo what the volunteer set
//     with boinccmd or BOINC Manager.
//   - A project removed from the config is detached; a project attached
//     over GUI RPC (origin "gui_rpc") is not in the file and stays.
//   - A config project detached over GUI RPC stays detached while its
//     entry is unchanged (the reload says so in the log); editing or
//     re-adding the entry attaches it again.
func (d *Daemon) reconcile(cfg *config.Config, now time.Time) {
	d.cfg = cfg
	d.applySettings(now)
	d.prefs = d.effectivePrefs()
	d.refreshHostPrefs()
	d.runner.SetThrottle(d.prefs.CPUUsageLimit)
	want := map[string]config.Project{}
	for _, cp := range cfg.Projects {
		want[cp.URL] = cp
	}
	for _, cp := range cfg.Projects {
		digest := configDigest(cp)
		p := d.st.projects[cp.URL]
		if p == nil {
			if d.rpcDetached[cp.URL] == digest {
				d.log.Warn("project is in the config but was detached with GUI RPC; edit its entry to attach it again",
					slog.String("project", cp.URL))
				continue
			}
			p = d.attach(cp.URL, cp.Authenticator, originConfig)
		}
		if p.DetachPending {
			p.DetachPending = false
			d.projectLog(p).Info("project is in the config again; detach cancelled")
		}
		p.Origin = originConfig
		if p.ConfigDigest != digest {
			if p.Authenticator != cp.Authenticator {
				p.Authenticator = cp.Authenticator
				p.SchedRPCPending = boinc.RPCUserReq
				d.projectLog(p).Info("account key changed; contacting the project")
			}
			p.ResourceShare = cp.ResourceShare
			p.NoNewTasks = cp.NoNewTasks
			p.Suspended = cp.Suspended
			p.ConfigDigest = digest
		}
		if d.rpcDetached[cp.URL] != "" {
			delete(d.rpcDetached, cp.URL)
			d.batch.DeleteMeta(rpcDetachedKey(cp.URL))
		}
		d.batch.PutProject(p)
	}
	for _, p := range d.st.sortedProjects() {
		if _, ok := want[p.MasterURL]; !ok && !p.DetachPending && p.Origin != originGUIRPC && p.Origin != originAcctMgr {
			if d.am.info.URL != "" && slices.Contains(d.am.info.Listed, p.MasterURL) {
				// The account manager wants it too: it manages it now.
				p.Origin, p.ConfigDigest = originAcctMgr, ""
				d.batch.PutProject(p)
				d.projectLog(p).Info("project left boincd.toml; the account manager, which lists it, manages it now")
				continue
			}
			d.startDetach(p, now)
		}
	}
	d.reconcileAcctMgr(cfg, now)
	d.fetchSoon(now)
}

// attach adds a project; the first contact follows the master page fetch.
func (d *Daemon) attach(url, key, origin string) *boinc.Project {
	p := &boinc.Project{
		MasterURL:          url,
		Authenticator:      key,
		ResourceShare:      100,
		MasterFetchPending: true,
		SchedRPCPending:    boinc.RPCInit,
		Origin:             origin,
	}
	d.st.projects[url] = p
	d.names.set(url, "")
	if err := os.MkdirAll(d.projectDir(url), 0o755); err != nil {
		d.projectLog(p).Error("cannot create project directory", slog.Any("err", err))
	}
	// A volunteer may put app_info.xml in place before attaching, so the
	// project's own apps are never fetched (CLIENT_STATE::add_project).
	d.loadAppInfo(p)
	d.batch.PutProject(p)
	d.projectLog(p).Info("attached to project", slog.String("via", origin))
	return p
}

// attachViaRPC is project_attach from boinccmd or BOINC Manager.
func (d *Daemon) attachViaRPC(url, key string, now time.Time) error {
	if strings.TrimSpace(url) == "" {
		return guirpc.ErrMissingURL
	}
	canon, err := boinc.CanonicalMasterURL(url)
	if err != nil {
		return err
	}
	if key == "" {
		return guirpc.ErrMissingAuthenticator
	}
	if _, ok := d.st.projects[canon]; ok {
		return ErrAlreadyAttached
	}
	d.attach(canon, key, originGUIRPC)
	d.fetchSoon(now)
	return nil
}

// noteRPCDetach remembers that a config project was detached over GUI
// RPC, so an unchanged config does not attach it again behind the
// volunteer's back.
func (d *Daemon) noteRPCDetach(p *boinc.Project) {
	if p.Origin == originGUIRPC || p.ConfigDigest == "" {
		return
	}
	d.rpcDetached[p.MasterURL] = p.ConfigDigest
	d.batch.PutMeta(rpcDetachedKey(p.MasterURL), p.ConfigDigest)
}

func rpcDetachedKey(url string) string { return "rpc_detached:" + url }

func configDigest(cp config.Project) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%g\x00%v\x00%v", cp.URL, cp.Authenticator, cp.ResourceShare, cp.NoNewTasks, cp.Suspended)))
	return hex.EncodeToString(h[:8])
}

// startDetach begins detaching a project that left the config. Unfinished
// tasks are aborted (and reported, so the server can reissue them at once);
// finished ones are uploaded and reported first, unless the config says to
// drop them, in which case the project goes at once.
func (d *Daemon) startDetach(p *boinc.Project, now time.Time) {
	d.startDetachFor(p, "project removed from config", now)
}

// startDetachFor is startDetach for a reason (the config, the account
// manager).
func (d *Daemon) startDetachFor(p *boinc.Project, why string, now time.Time) {
	p.DetachPending = true
	p.NoNewTasks = true
	d.batch.PutProject(p)
	if d.cfg.DropResultsOnDetach {
		d.projectLog(p).Info(why + ": detaching and dropping its tasks")
		d.removeProject(p)
		return
	}
	n := 0
	for _, r := range d.st.projectResults(p.MasterURL) {
		if r.Phase.Unfinished() {
			d.abortTask(r, boinc.ExitAbortedByClient, "project detached", now)
		}
		n++
	}
	d.projectLog(p).Info(why+": reporting its tasks, then detaching", slog.Int("tasks", n))
}

// finishDetaches removes detaching projects once nothing is left to report.
func (d *Daemon) finishDetaches(time.Time) {
	for _, p := range d.st.sortedProjects() {
		if !p.DetachPending {
			continue
		}
		if len(d.st.projectResults(p.MasterURL)) == 0 || d.cfg.DropResultsOnDetach {
			d.removeProject(p)
		}
	}
	for _, p := range d.st.sortedProjects() {
		if p.DetachWhenDone && !p.DetachPending && len(d.st.projectResults(p.MasterURL)) == 0 {
			d.noteRPCDetach(p)
			d.removeProject(p)
		}
	}
}

// removeProject deletes everything of a project: processes, transfers,
// state, files and slots.
func (d *Daemon) removeProject(p *boinc.Project) {
	url := p.MasterURL
	d.dropProjectWork(url)
	if d.rpc != nil && d.rpc.project == url {
		d.rpc.cancel()
		d.rpc.orphan = true
	}
	delete(d.st.projects, url)
	delete(d.sched, url)
	delete(d.anon, url)
	d.dropProjectNotices(url)
	d.batch.DeleteMeta(schedMetaKey(url))
	d.forgetStats(url)
	d.batch.DeleteProjectAll(url)
	if !d.flush() {
		return
	}
	if err := os.RemoveAll(d.projectDir(url)); err != nil {
		d.projectLog(p).Warn("cannot remove project directory", slog.Any("err", err))
	}
	d.projectLog(p).Info("detached from project")
}

// dropProjectWork kills a project's tasks, cancels its transfers and
// forgets its apps, versions, workunits, results and files (detach and
// reset share it); the caller commits and removes the files.
func (d *Daemon) dropProjectWork(url string) {
	for _, r := range d.st.projectResults(url) {
		if _, ok := d.active[r.Key()]; ok {
			_ = d.runner.Kill(r.Key())
			delete(d.active, r.Key())
		} else if r.Slot >= 0 {
			d.cleanSlot(r.Slot)
		}
	}
	for k, x := range d.xfers {
		if x.project == url {
			x.cancel()
			delete(d.xfers, k)
		}
	}
	deleteProjectKeys(d.st.results, url)
	deleteProjectKeys(d.st.wus, url)
	deleteProjectKeys(d.st.files, url)
	deleteProjectKeys(d.st.versions, url)
	deleteProjectKeys(d.st.apps, url)
	// The project's images and containers are no task's any more.
	d.containerCleanupSoon()
}

// deleteProjectKeys drops a project's entities from one state map; keys
// are "url\x00name", so one project's URL never matches another's.
func deleteProjectKeys[T any](m map[string]T, url string) {
	for k := range m {
		if hasPrefixKey(k, url) {
			delete(m, k)
		}
	}
}

func (d *Daemon) handleEvent(ev any, now time.Time) {
	switch ev := ev.(type) {
	case xferDone:
		d.handleXferDone(ev, now)
	case rpcDone:
		d.handleRPCDone(ev, now)
	case masterDone:
		d.handleMasterDone(ev, now)
	case hostReprobed:
		d.handleHostReprobed(ev)
	case benchDone:
		d.handleBenchDone(ev, now)
	case gpuProbed:
		d.handleGPUProbed(ev)
	case exclusiveScanned:
		d.handleExclusiveScanned(ev)
	case diskMeasured:
		d.handleDiskMeasured(ev)
	case feedFetched:
		d.handleFeedFetched(ev, now)
	case projectListFetched:
		d.handleProjectListFetched(ev, now)
	case acctMgrDone:
		d.handleAcctMgrDone(ev, now)
	case uploadChecked:
		d.handleUploadChecked(ev)
	default:
		d.handleContainerEvent(ev)
	}
}

func decodeMeta(meta map[string][]byte, key string, v any) {
	if b, ok := meta[key]; ok {
		_ = json.Unmarshal(b, v)
	}
}

func randomHex(r *rand.Rand, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return hex.EncodeToString(b)
}

func removeQuiet(path string) {
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		slog.Debug("remove", slog.String("path", path), slog.Any("err", err))
	}
}
