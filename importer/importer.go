package importer

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/statefile"
	"github.com/boincd/boincd/workfetch"
)

// ErrBOINCRunning is wrapped when a BOINC client holds the directory.
var ErrBOINCRunning = errors.New("a BOINC client is running on this directory")

// ErrAlreadyImported is wrapped when the boincd directory already has
// state for a project being imported.
var ErrAlreadyImported = errors.New("boincd already has this project")

// Names of the BOINC client's files (client/file_names.h).
const (
	stateFileName = "client_state.xml"
	lockFileName  = "lockfile"
)

// Options say what to import where.
type Options struct {
	// BOINCDir is the C++ client's data directory (read only).
	BOINCDir string
	// DataDir is boincd's data directory; created if missing.
	DataDir string
	// ConfigPath is the boincd config to add the projects to (default
	// DataDir/boincd.toml).
	ConfigPath string
	// DryRun checks and reports without writing anything.
	DryRun bool
	Logger *slog.Logger
	// Now is the clock (for tests); nil means time.Now.
	Now func() time.Time
	// Platforms are the platforms this host runs, primary first; nil
	// detects them as the daemon does (package platform). App versions
	// of all of them are kept.
	Platforms []string
}

// importOrigin is the Origin of imported projects. GUI-RPC origin keeps a
// project attached whatever config the daemon runs with; the config entry
// written next to it turns it into a config project on the daemon's first
// reconcile (reconcile sets Origin "config" for every listed project), so
// from then on the config file is the one truth, as for any project.
const importOrigin = "gui_rpc"

// Import copies the BOINC client's projects, tasks and files into boincd's
// data directory. See the package documentation for the guarantees.
func Import(ctx context.Context, opt Options) (*Summary, error) {
	if opt.BOINCDir == "" || opt.DataDir == "" {
		return nil, errors.New("import: both the BOINC directory and the boincd data directory are needed")
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := time.Now
	if opt.Now != nil {
		now = opt.Now
	}
	src, err := filepath.Abs(opt.BOINCDir)
	if err != nil {
		return nil, fmt.Errorf("import: BOINC directory %s: %w", opt.BOINCDir, err)
	}
	dst, err := filepath.Abs(opt.DataDir)
	if err != nil {
		return nil, fmt.Errorf("import: data directory %s: %w", opt.DataDir, err)
	}
	if fi, err := os.Stat(src); err != nil {
		return nil, fmt.Errorf("import: BOINC directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("import: BOINC directory %s is not a directory", src)
	}
	if same, err := sameDir(src, dst); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	} else if same {
		return nil, fmt.Errorf("import: %s is both the BOINC and the boincd directory; boincd needs its own directory (the BOINC one is copied, not converted in place)", src)
	}
	cfgPath := opt.ConfigPath
	if cfgPath == "" {
		cfgPath = filepath.Join(dst, config.FileName)
	}

	release, err := lockBOINCDir(filepath.Join(src, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	defer release()

	cs, err := parseClientState(filepath.Join(src, stateFileName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("import: %s has no %s: is it a BOINC client's data directory?", src, stateFileName)
		}
		return nil, fmt.Errorf("import: %w", err)
	}
	accounts, err := readAccounts(src)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	am, err := readAcctMgr(src)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}

	platforms := opt.Platforms
	if len(platforms) == 0 {
		platforms, _ = platform.Host(ctx)
	}
	im := &importer{
		ctx: ctx, log: log, now: now(), src: src, dst: dst, cs: cs, platforms: platforms,
		sum:   &Summary{BOINCDir: src, DataDir: dst, ConfigPath: cfgPath, DryRun: opt.DryRun},
		stats: readStatistics(src, log),
		xfers: readDailyXfers(src, log),
		am:    am,
	}
	if err := im.loadTarget(); err != nil {
		return nil, err
	}
	defer im.closeStore()

	if err := im.plan(accounts); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	var projects []*boinc.Project
	for _, pp := range im.plans {
		// The account manager's projects stay its own, not the config's.
		if pp.p.Origin != daemon.OriginAcctMgr {
			projects = append(projects, pp.p)
		}
	}
	im.cfg, err = planConfig(cfgPath, projects, src, im.now)
	if err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	for _, pp := range im.plans {
		if pp.p.Origin == daemon.OriginAcctMgr {
			pp.sum.Config = "managed by the account manager " + am.URL
		} else if im.cfg.listed[pp.p.MasterURL] {
			pp.sum.Config = "already listed in " + cfgPath
		} else {
			pp.sum.Config = "added to " + cfgPath
		}
	}
	if err := im.build(); err != nil {
		im.undo()
		return nil, fmt.Errorf("import: %w", err)
	}
	im.planTuningFiles()
	im.noteAcctMgr()
	if opt.DryRun {
		return im.summary(), nil
	}
	if err := im.commit(); err != nil {
		im.undo()
		return nil, fmt.Errorf("import: %w", err)
	}
	if err := im.cfg.install(); err != nil {
		return im.summary(), fmt.Errorf("import: the state was imported, but the config could not be updated (the projects stay attached regardless): %w", err)
	}
	if err := im.carryTuningFiles(); err != nil {
		return im.summary(), fmt.Errorf("import: the state was imported, but cc_config.xml or app_config.xml could not be copied (copy them by hand): %w", err)
	}
	log.Info("import finished", slog.String("from", src), slog.String("to", dst), slog.Int("projects", len(im.plans)))
	return im.summary(), nil
}

func sameDir(a, b string) (bool, error) {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true, nil
	}
	fa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Stat(b)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// readAccounts parses every account_*.xml, keyed by canonical master URL.
func readAccounts(dir string) (map[string]*account, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "account_*.xml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	out := map[string]*account{}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		a, err := parseAccountFile(p)
		if err != nil {
			return nil, err
		}
		if prev, dup := out[a.masterURL]; dup {
			return nil, fmt.Errorf("%s and %s are both accounts for %s", prev.path, a.path, a.masterURL)
		}
		out[a.masterURL] = a
	}
	return out, nil
}

// importer carries one import from plan to commit.
type importer struct {
	ctx context.Context
	log *slog.Logger
	now time.Time
	src string
	dst string
	cs  *clientState
	sum *Summary
	// tuning are the cc_config.xml and app_config.xml copies to make
	// (ccfiles.go).
	tuning []tuningCopy
	// stats and xfers are the client's statistics files (stats.go).
	stats map[string][]boinc.DailyStats
	xfers []boinc.DailyXfer
	am    *daemon.ImportedAcctMgr // nil outside an account manager
	cfg   *configPlan
	// platforms are this host's, primary first.
	platforms []string

	store     *statefile.Store
	snap      *statefile.Snapshot
	usedSlots map[int]bool
	plans     []*projectPlan
	// undoPaths are removed, last first, if the import fails.
	undoPaths []string
}

// projectPlan is one project's records and copies.
type projectPlan struct {
	src    *csProject // nil for an account without state
	acct   *account
	p      *boinc.Project
	sched  *workfetch.ProjectState
	srcDir string
	dstDir string
	stage  string

	apps     []*boinc.App
	versions []*boinc.AppVersion
	wus      []*boinc.Workunit
	results  []*boinc.Result
	files    []*boinc.FileInfo
	slots    []slotCopy
	sum      *ProjectSummary
}

type slotCopy struct {
	src   string
	slot  int
	stage string
	dst   string
}

func (im *importer) statePath() string { return filepath.Join(im.dst, daemon.StateFileName) }

// loadTarget opens boincd's state (creating the directory unless this is
// a dry run) and records which projects and slots it has.
func (im *importer) loadTarget() error {
	im.usedSlots = map[int]bool{}
	im.snap = &statefile.Snapshot{Meta: map[string][]byte{}}
	path := im.statePath()
	if im.sum.DryRun {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	} else {
		for _, sub := range []string{"", "projects", "slots"} {
			if err := os.MkdirAll(filepath.Join(im.dst, sub), 0o755); err != nil {
				return fmt.Errorf("import: data directory: %w", err)
			}
		}
	}
	st, err := statefile.Open(path, statefile.Options{Logger: im.log})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	im.store = st
	snap, err := st.Load()
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	im.snap = snap
	for _, r := range snap.Results {
		if r.Slot >= 0 {
			im.usedSlots[r.Slot] = true
		}
	}
	return nil
}

func (im *importer) closeStore() {
	if im.store != nil {
		_ = im.store.Close()
	}
}

// plan decides which projects are imported and refuses projects boincd
// already has.
func (im *importer) plan(accounts map[string]*account) error {
	have := map[string]bool{}
	for _, p := range im.snap.Projects {
		have[p.MasterURL] = true
	}
	seen := map[string]bool{}
	for _, cp := range im.cs.projects {
		url := cp.p.MasterURL
		if seen[url] {
			return &ParseError{File: im.cs.path, Line: cp.line, Element: "<project> " + url, Err: errors.New("the project appears twice")}
		}
		seen[url] = true
		a := accounts[url]
		if a == nil {
			im.sum.Skipped = append(im.sum.Skipped, url)
			continue
		}
		if have[url] {
			return fmt.Errorf("%w: %s already has state for %s (imported before?); detach it in boincd first or import into another directory", ErrAlreadyImported, im.statePath(), url)
		}
		im.plans = append(im.plans, im.newPlan(cp, a))
	}
	urls := make([]string, 0, len(accounts))
	for u := range accounts {
		urls = append(urls, u)
	}
	sort.Strings(urls)
	for _, u := range urls {
		if seen[u] {
			continue
		}
		if have[u] {
			return fmt.Errorf("%w: %s already has state for %s (imported before?); detach it in boincd first or import into another directory", ErrAlreadyImported, im.statePath(), u)
		}
		im.plans = append(im.plans, im.newPlan(nil, accounts[u]))
	}
	if len(im.plans) == 0 {
		return fmt.Errorf("%s has no attached project (no account_*.xml file matches a project)", im.src)
	}
	return nil
}

func (im *importer) newPlan(cp *csProject, a *account) *projectPlan {
	pp := &projectPlan{src: cp, acct: a}
	if cp != nil {
		p := cp.p
		pp.p = &p
		pp.srcDir = filepath.Join(im.src, "projects", boinc.EscapeProjectURL(cp.rawURL))
		if _, err := os.Stat(pp.srcDir); err != nil {
			// A URL written in a non-canonical form by an older client.
			if alt := filepath.Join(im.src, "projects", boinc.EscapeProjectURL(p.MasterURL)); alt != pp.srcDir {
				if _, err := os.Stat(alt); err == nil {
					pp.srcDir = alt
				}
			}
		}
	} else {
		// Attached, never contacted: exactly what the daemon's attach
		// creates.
		pp.p = &boinc.Project{
			MasterURL:          a.masterURL,
			ResourceShare:      100,
			MasterFetchPending: true,
			SchedRPCPending:    boinc.RPCInit,
		}
		if a.resourceShare > 0 {
			pp.p.ResourceShare = a.resourceShare
		}
	}
	p := pp.p
	p.Authenticator = a.authenticator
	p.Origin = importOrigin
	if cp != nil && cp.viaAM && im.am != nil {
		p.Origin = daemon.OriginAcctMgr
	}
	p.ConfigDigest = ""
	if p.ProjectName == "" {
		p.ProjectName = a.projectName
	}
	if a.prefs != "" {
		p.ProjectPrefs = a.prefs
	}
	esc := p.Dir()
	pp.dstDir = filepath.Join(im.dst, "projects", esc)
	// '~' never occurs in an escaped project URL, so the staging name
	// cannot be another project's directory.
	pp.stage = filepath.Join(im.dst, "projects", esc+"~import")
	pp.sum = &ProjectSummary{URL: p.MasterURL, Name: p.ProjectName, HostID: p.HostID, AttachOnly: cp == nil, Results: map[boinc.Phase]int{}}
	return pp
}

// build creates every record, and (unless dry run) copies and verifies
// every file into staging directories and moves them into place.
func (im *importer) build() error {
	for _, pp := range im.plans {
		if err := im.buildProject(pp); err != nil {
			return err
		}
	}
	if im.sum.DryRun {
		return nil
	}
	for _, pp := range im.plans {
		if err := im.install(pp); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) buildProject(pp *projectPlan) error {
	cp := pp.src
	p := pp.p
	url := p.MasterURL
	if cp == nil {
		return nil
	}
	if len(p.SchedulerURLs) == 0 {
		p.MasterFetchPending = true
	}
	dcf := cp.dcf
	if dcf <= 0 {
		dcf = 1
	}
	p.DCF = dcf
	pp.sched = &workfetch.ProjectState{DCF: dcf, REC: cp.rec, RECTime: cp.recTime}
	for name, until := range cp.rscBackoff {
		if rsc, ok := workfetch.RscByName(name); ok && until.After(im.now) {
			pp.sched.Backoff[rsc] = workfetch.Backoff{Interval: cp.rscIntvl[name], Until: until}
		}
	}

	for _, a := range cp.apps {
		a.ProjectURL = url
		pp.apps = append(pp.apps, a)
	}
	versions := map[string]*boinc.AppVersion{}
	primary := im.platforms[0]
	for _, v := range cp.versions {
		v.ProjectURL = url
		// CLIENT_STATE::parse_state_file: a version of any platform
		// this host runs is kept as it is; one without a platform is
		// the primary one's, and one of a platform this host does not
		// run becomes the primary one's, so that its tasks are not
		// thrown away (the C++ client's case: a 64-bit client
		// replaced by a 32-bit one).
		switch {
		case v.Platform == "":
			v.Platform = primary
		case !platform.Supported(im.platforms, v.Platform):
			pp.sum.Notes = append(pp.sum.Notes, fmt.Sprintf("app version %s %d has platform %s, which this host does not run; changed to %s",
				v.AppName, v.VersionNum, v.Platform, primary))
			v.Platform = primary
		}
		if _, dup := versions[v.Key()]; dup {
			continue // the C++ client keeps the first one too
		}
		versions[v.Key()] = v
		pp.versions = append(pp.versions, v)
	}
	wus := map[string]*boinc.Workunit{}
	for _, w := range cp.wus {
		w.ProjectURL = url
		wus[w.Name] = w
	}
	files := map[string]*csFile{}
	for _, f := range cp.files {
		if _, dup := files[f.f.Name]; dup {
			return &ParseError{File: im.cs.path, Line: f.line, Element: "<file> " + f.f.Name, Err: errors.New("the file is listed twice")}
		}
		f.f.ProjectURL = url
		files[f.f.Name] = f
	}
	active := map[string]*csActiveTask{}
	for _, at := range im.cs.active {
		if at.projectURL == url {
			active[at.resultName] = at
		}
	}

	// Which results are kept, and what they need.
	var kept []*csResult
	seenResult := map[string]bool{}
	for _, cr := range cp.results {
		if seenResult[cr.r.Name] {
			return &ParseError{File: im.cs.path, Line: cr.line, Element: "<result> " + cr.r.Name, Err: errors.New("the result is listed twice")}
		}
		seenResult[cr.r.Name] = true
		if cr.gotServerAck {
			pp.sum.Dropped++
			continue
		}
		cr.r.ProjectURL = url
		// parse_state_file: a result of no platform, or of one this
		// host does not run, is the primary platform's latest version.
		if r := &cr.r; r.Platform == "" || !platform.Supported(im.platforms, r.Platform) {
			r.Platform = primary
			if w := wus[r.WUName]; w != nil {
				r.VersionNum = latestVersion(pp.versions, w.AppName, primary)
			}
		}
		kept = append(kept, cr)
	}
	needed := map[string]bool{}
	appFiles := map[string]bool{}
	for _, v := range pp.versions {
		for _, ref := range v.FileRefs {
			needed[ref.FileName] = true
			appFiles[ref.FileName] = true
		}
	}
	usedWU := map[string]bool{}
	for _, cr := range kept {
		usedWU[cr.r.WUName] = true
		for _, ref := range cr.r.OutputFiles {
			needed[ref.FileName] = true
		}
	}
	for _, w := range cp.wus {
		if !usedWU[w.Name] {
			continue
		}
		pp.wus = append(pp.wus, w)
		for _, ref := range w.InputFiles {
			needed[ref.FileName] = true
		}
	}
	for _, f := range cp.files {
		if f.f.Sticky {
			needed[f.f.Name] = true
		}
	}
	// Mirror the daemon: every app file is code and must carry the
	// project's signature unless the volunteer opted out.
	if !im.cfg.unsigned {
		for name := range appFiles {
			if f := files[name]; f != nil {
				f.f.SignatureRequired = true
			}
		}
	}

	if !im.sum.DryRun {
		if err := os.RemoveAll(pp.stage); err != nil {
			return fmt.Errorf("staging directory %s: %w", pp.stage, err)
		}
		if err := os.MkdirAll(pp.stage, 0o755); err != nil {
			return fmt.Errorf("staging directory %s: %w", pp.stage, err)
		}
		im.undoPaths = append(im.undoPaths, pp.stage)
	}

	// Files, in state order so the summary is stable.
	for _, cf := range cp.files {
		if !needed[cf.f.Name] {
			continue
		}
		if err := im.ctx.Err(); err != nil {
			return err
		}
		if err := im.importFile(pp, cf); err != nil {
			return err
		}
		pp.files = append(pp.files, &cf.f)
	}
	present := func(name string) bool {
		f := files[name]
		return f != nil && f.f.Status == boinc.FilePresent
	}

	for _, cr := range kept {
		r := &cr.r
		r.Slot = -1
		wu := wus[r.WUName]
		var v *boinc.AppVersion
		if wu != nil {
			v = versions[boinc.AppVersionKey(url, wu.AppName, r.Platform, r.PlanClass, r.VersionNum)]
		}
		finished := cr.readyToReport || cr.state == stateComputeError || cr.state == stateFilesUploading ||
			cr.state == stateFilesUploaded || cr.state == stateAborted || cr.state == stateUploadFailed
		if finished {
			im.finishedResult(pp, cr, files)
		} else {
			inputs := v != nil && wu != nil
			if inputs {
				for _, ref := range append(append([]boinc.FileRef(nil), v.FileRefs...), wu.InputFiles...) {
					if !present(ref.FileName) {
						inputs = false
						break
					}
				}
			}
			r.Phase = boinc.PhaseDownloading
			if inputs {
				r.Phase = boinc.PhaseDownloaded
			}
			if at := active[r.Name]; at != nil {
				if err := im.resume(pp, cr, at, inputs); err != nil {
					return err
				}
			}
		}
		pp.results = append(pp.results, r)
		pp.sum.Results[r.Phase]++
	}
	if p.SchedRPCPending == boinc.RPCNone && len(pp.sum.PendingReport) > 0 {
		// Credit waits on these: contact the project as soon as its
		// backoff allows, not only at the next work fetch.
		p.SchedRPCPending = boinc.RPCResultsDue
	}
	if p.ResourceShare == 0 {
		pp.sum.Notes = append(pp.sum.Notes, "resource share 0 (a backup project) cannot be expressed in boincd.toml; it becomes 100")
	}
	return nil
}

// latestVersion is the highest version_num of app for plat among
// versions, 0 if none (CLIENT_STATE::latest_version).
func latestVersion(versions []*boinc.AppVersion, app, plat string) int {
	best := 0
	for _, v := range versions {
		if v.AppName == app && v.Platform == plat && v.VersionNum > best {
			best = v.VersionNum
		}
	}
	return best
}

// finishedResult sets up a result the C++ client had finished computing.
// Its wire state is BOINC's own state number, so the report carries what
// the C++ client would have sent.
func (im *importer) finishedResult(pp *projectPlan, cr *csResult, files map[string]*csFile) {
	r := &cr.r
	r.WireState = cr.state
	r.FractionDone = 1
	r.CurrentCPUTime = r.FinalCPUTime
	r.ElapsedTime = r.FinalElapsedTime
	switch {
	case cr.state == stateFilesUploading && !cr.readyToReport:
		r.Phase = boinc.PhaseUploading
		// The wire state is fixed when uploads finish, as the daemon does.
		r.WireState = 0
		lost := false
		for _, ref := range r.OutputFiles {
			if f := files[ref.FileName]; f != nil && f.f.Status < 0 && f.f.IsUpload() && !f.f.Uploaded {
				lost = true
			}
		}
		if !lost {
			pp.sum.ToUpload = append(pp.sum.ToUpload, r.Name)
		}
	case cr.state == stateFilesUploaded:
		r.Phase = boinc.PhaseUploaded
		if r.ExitStatus == 0 {
			pp.sum.PendingReport = append(pp.sum.PendingReport, r.Name)
		}
	case cr.state == stateComputeError:
		r.Phase = boinc.PhaseComputeError
	case cr.state == stateAborted:
		r.Phase = boinc.PhaseAborted
	case cr.state == stateUploadFailed, cr.state == stateFilesUploading:
		r.Phase = boinc.PhaseUploadFailed
	default: // ready to report before computing: a download failed
		r.Phase = boinc.PhaseDownloadFailed
	}
}

// resume decides whether a task the C++ client had started continues
// from its checkpoint. boincd's slots are laid out as the C++ client's
// (slots/N, link files pointing at ../../projects/<dir>/), so the slot's
// contents are copied into a free boincd slot and the task is put in the
// computing phase with its checkpoint times; the task runner then sets
// up the link files and init_data.xml again and starts the app, which
// finds its checkpoint files where it left them.
func (im *importer) resume(pp *projectPlan, cr *csResult, at *csActiveTask, inputs bool) error {
	r := &cr.r
	restart := func(reason string) {
		pp.sum.Restarted = append(pp.sum.Restarted, TaskNote{Name: r.Name, Reason: reason})
	}
	if cr.state != stateFilesDownloaded {
		return nil
	}
	if !inputs {
		restart("its files must be downloaded again")
		return nil
	}
	slotSrc := filepath.Join(im.src, "slots", strconv.Itoa(at.slot))
	fi, err := os.Lstat(slotSrc)
	if err != nil || !fi.IsDir() {
		restart(fmt.Sprintf("slot %d is missing", at.slot))
		return nil
	}
	if owner, err := slotResultName(slotSrc); err != nil {
		restart(fmt.Sprintf("slot %d: %v", at.slot, err))
		return nil
	} else if owner != "" && owner != r.Name {
		restart(fmt.Sprintf("slot %d belongs to %s", at.slot, owner))
		return nil
	}
	n := im.freeSlot()
	im.usedSlots[n] = true
	sc := slotCopy{
		src:   slotSrc,
		slot:  n,
		stage: filepath.Join(im.dst, "slots", strconv.Itoa(n)+"~import"),
		dst:   filepath.Join(im.dst, "slots", strconv.Itoa(n)),
	}
	if !im.sum.DryRun {
		if err := os.RemoveAll(sc.stage); err != nil {
			return fmt.Errorf("staging slot %s: %w", sc.stage, err)
		}
		im.undoPaths = append(im.undoPaths, sc.stage)
		if err := copySlot(im.ctx, sc.src, sc.stage); err != nil {
			return fmt.Errorf("copy slot of task %s: %w", r.Name, err)
		}
		// Outputs that are not copy_file are written by the app straight
		// into the project directory (through its link file): the
		// partial output belongs to the checkpoint.
		for _, ref := range r.OutputFiles {
			if ref.CopyFile {
				continue
			}
			from := filepath.Join(pp.srcDir, ref.FileName)
			if fi, err := os.Lstat(from); err == nil && fi.Mode().IsRegular() {
				if _, _, err := copyAndHash(from, filepath.Join(pp.stage, ref.FileName), 0o644); err != nil {
					return fmt.Errorf("copy partial output %s of task %s: %w", ref.FileName, r.Name, err)
				}
			}
		}
	}
	pp.slots = append(pp.slots, sc)
	r.Phase = boinc.PhaseComputing
	r.Slot = n
	r.CheckpointCPUTime = at.ckptCPU
	r.CheckpointElapsedTime = at.ckptElapsed
	r.CurrentCPUTime = at.ckptCPU
	r.ElapsedTime = at.ckptElapsed
	r.FractionDone = at.ckptFractionDone
	pp.sum.Resumed = append(pp.sum.Resumed, fmt.Sprintf("%s (BOINC slot %d → slot %d, checkpoint at %.0f s CPU)", r.Name, at.slot, n, at.ckptCPU))
	return nil
}

func (im *importer) freeSlot() int {
	for n := 0; ; n++ {
		if im.usedSlots[n] {
			continue
		}
		empty, err := dirMissingOrEmpty(filepath.Join(im.dst, "slots", strconv.Itoa(n)))
		if err == nil && empty {
			return n
		}
	}
}

// importFile decides a file's status: present (copied and verified),
// to download again, or, for an output that was never uploaded, missing.
func (im *importer) importFile(pp *projectPlan, cf *csFile) error {
	f := &cf.f
	f.Xfer = boinc.FileXfer{}
	switch {
	case cf.status < 0:
		f.Status = cf.status // a permanent failure the task still reports
		return nil
	case cf.status != boinc.FilePresent:
		// Partial downloads start over; outputs not computed yet stay so.
		f.Status = boinc.FileNotPresent
		return nil
	case f.Uploaded && !f.Sticky:
		// The server has it; the daemon deletes such files too.
		f.Status = boinc.FilePresent
		return nil
	}
	reason, err := im.copyVerified(pp, f)
	if err != nil {
		return err
	}
	if reason == "" {
		f.Status = boinc.FilePresent
		return nil
	}
	f.ErrorMsg = ""
	if f.IsUpload() && !f.Uploaded {
		f.Status = boinc.ErrFileMissing
		f.ErrorMsg = "output file " + reason + " when the BOINC client's data was imported"
		pp.sum.OutputsLost = append(pp.sum.OutputsLost, FileNote{Name: f.Name, Reason: reason})
		return nil
	}
	f.Status = boinc.FileNotPresent
	pp.sum.ToDownload = append(pp.sum.ToDownload, FileNote{Name: f.Name, Reason: reason})
	return nil
}

// copyVerified copies one file into the staging directory (or, in a dry
// run, only reads it) and checks size, MD5 and code signature. A
// non-empty reason says why the file cannot be used; the error is for
// failures of the target directory, which stop the import.
func (im *importer) copyVerified(pp *projectPlan, f *boinc.FileInfo) (reason string, err error) {
	from := filepath.Join(pp.srcDir, f.Name)
	fi, err := os.Lstat(from)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing", nil
	case err != nil:
		return "unreadable: " + err.Error(), nil
	case !fi.Mode().IsRegular():
		// A link could point anywhere on the system; never follow it.
		return "not a regular file", nil
	case f.NBytes > 0 && float64(fi.Size()) != f.NBytes:
		return fmt.Sprintf("wrong size: %d bytes, want %.0f", fi.Size(), f.NBytes), nil
	}
	mode := fs.FileMode(0o644)
	if f.Executable {
		mode = 0o755
	}
	to := ""
	if !im.sum.DryRun {
		to = filepath.Join(pp.stage, f.Name)
	}
	n, sum, err := copyAndHash(from, to, mode)
	if err != nil {
		var re *readError
		if errors.As(err, &re) {
			return "unreadable: " + re.err.Error(), nil
		}
		return "", fmt.Errorf("copy %s: %w", f.Name, err)
	}
	bad := func(why string) (string, error) {
		if to != "" {
			_ = os.Remove(to)
		}
		return why, nil
	}
	if f.NBytes > 0 && float64(n) != f.NBytes {
		return bad(fmt.Sprintf("wrong size: %d bytes, want %.0f", n, f.NBytes))
	}
	if f.MD5 != "" && sum != f.MD5 {
		return bad("MD5 mismatch: " + sum + ", want " + f.MD5)
	}
	if f.SignatureRequired {
		if why := checkSignature(pp.p.CodeSignKey, f.FileSignature, sum); why != "" {
			return bad(why)
		}
	}
	pp.sum.FilesCopied++
	pp.sum.BytesCopied += n
	return "", nil
}

// checkSignature verifies an app file's code signature over its MD5, as
// the daemon does after a download; "" means it checks out.
func checkSignature(keyText, sigText, md5hex string) string {
	if sigText == "" {
		return "no code signature"
	}
	if keyText == "" {
		return "the project has no code-signing key"
	}
	pub, err := codesign.ParsePublicKey(keyText)
	if err != nil {
		return "bad code-signing key: " + err.Error()
	}
	if err := codesign.VerifyMD5Hex(pub, md5hex, sigText); err != nil {
		return "code signature check failed: " + err.Error()
	}
	return ""
}

// readError marks a failure reading the BOINC side: that file is unusable,
// but the import goes on.
type readError struct{ err error }

func (e *readError) Error() string { return e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// copyAndHash copies from to to (to "" only hashes), synced, returning
// the size and lower-case hex MD5 of what was read.
func copyAndHash(from, to string, mode fs.FileMode) (int64, string, error) {
	in, err := os.Open(from)
	if err != nil {
		return 0, "", &readError{err}
	}
	defer in.Close()
	h := md5.New()
	if to == "" {
		n, err := io.Copy(h, in)
		if err != nil {
			return 0, "", &readError{err}
		}
		return n, hex.EncodeToString(h.Sum(nil)), nil
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
	if err != nil {
		return 0, "", err
	}
	n, err := io.Copy(io.MultiWriter(out, h), readerOnly{in})
	if err != nil {
		out.Close()
		_ = os.Remove(to)
		return 0, "", err
	}
	if err := out.Chmod(mode); err != nil {
		out.Close()
		return 0, "", err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return 0, "", err
	}
	if err := out.Close(); err != nil {
		return 0, "", err
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

// readerOnly hides File.WriteTo so io.Copy reads through Read, where
// errors are the source's.
type readerOnly struct{ r io.Reader }

func (r readerOnly) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = &readError{err}
	}
	return n, err
}

// install moves a project's staged files and slots into place.
func (im *importer) install(pp *projectPlan) error {
	_, dstErr := os.Lstat(pp.dstDir)
	if _, err := os.Lstat(pp.stage); errors.Is(err, fs.ErrNotExist) {
		// Nothing staged (a project attached but never contacted): the
		// directory the daemon's attach would create.
		if errors.Is(dstErr, fs.ErrNotExist) {
			if err := os.MkdirAll(pp.dstDir, 0o755); err != nil {
				return fmt.Errorf("project directory: %w", err)
			}
			im.undoPaths = append(im.undoPaths, pp.dstDir)
		}
		return nil
	}
	if errors.Is(dstErr, fs.ErrNotExist) {
		if err := os.Rename(pp.stage, pp.dstDir); err != nil {
			return fmt.Errorf("move %s into place: %w", pp.stage, err)
		}
		im.undoPaths = append(im.undoPaths, pp.dstDir)
	} else {
		// A leftover directory without state (say, from a detach that
		// could not remove it): the verified copies replace what is there.
		entries, err := os.ReadDir(pp.stage)
		if err != nil {
			return fmt.Errorf("staging directory %s: %w", pp.stage, err)
		}
		for _, e := range entries {
			to := filepath.Join(pp.dstDir, e.Name())
			if err := os.Rename(filepath.Join(pp.stage, e.Name()), to); err != nil {
				return fmt.Errorf("move %s into place: %w", e.Name(), err)
			}
			im.undoPaths = append(im.undoPaths, to)
		}
		if err := os.Remove(pp.stage); err != nil {
			return fmt.Errorf("staging directory %s: %w", pp.stage, err)
		}
	}
	syncDir(filepath.Dir(pp.dstDir))
	for _, sc := range pp.slots {
		// freeSlot chose a missing or empty directory.
		_ = os.Remove(sc.dst)
		if err := os.Rename(sc.stage, sc.dst); err != nil {
			return fmt.Errorf("move slot %d into place: %w", sc.slot, err)
		}
		im.undoPaths = append(im.undoPaths, sc.dst)
	}
	syncDir(filepath.Join(im.dst, "slots"))
	return nil
}

// commit writes the whole imported state in one transaction, after the
// config was staged (so a config that cannot be written stops the import
// before any state exists).
func (im *importer) commit() error {
	if err := im.cfg.stage(); err != nil {
		return err
	}
	var b statefile.Batch
	for _, pp := range im.plans {
		b.PutProject(pp.p)
		for _, a := range pp.apps {
			b.PutApp(a)
		}
		for _, v := range pp.versions {
			b.PutAppVersion(v)
		}
		for _, w := range pp.wus {
			b.PutWorkunit(w)
		}
		for _, f := range pp.files {
			b.PutFile(f)
		}
		for _, r := range pp.results {
			b.PutResult(r)
		}
		if pp.sched != nil {
			b.PutMeta("sched:"+pp.p.MasterURL, pp.sched)
		}
		key := daemon.StatsMetaKey(pp.p.MasterURL)
		if _, ok := im.snap.Meta[key]; !ok && len(im.stats[pp.p.MasterURL]) > 0 {
			b.PutMeta(key, im.stats[pp.p.MasterURL])
		}
	}
	if _, ok := im.snap.Meta[daemon.DailyXferMetaKey]; !ok && len(im.xfers) > 0 {
		b.PutMeta(daemon.DailyXferMetaKey, im.xfers)
	}
	// The host keeps the C++ client's host CPID and benchmarks, unless
	// boincd already has a host record of its own.
	if _, ok := im.snap.Meta["host"]; !ok && im.cs.host != nil {
		b.PutMeta("host", im.cs.host)
	}
	// The measured transfer rates likewise, so the server's n_bwup and
	// n_bwdown do not restart from nothing.
	if _, ok := im.snap.Meta[daemon.NetStatsMetaKey]; !ok && im.cs.net != nil {
		b.PutMeta(daemon.NetStatsMetaKey, im.cs.net)
	}
	// The account manager membership, unless boincd has one already.
	if _, ok := im.snap.Meta[daemon.AcctMgrMetaKey]; !ok && im.am != nil {
		b.PutMeta(daemon.AcctMgrMetaKey, daemon.AcctMgrRecord(*im.am))
	}
	if err := im.store.Commit(&b); err != nil {
		return err
	}
	im.undoPaths = nil
	return nil
}

// undo removes what a failed import copied, last first.
func (im *importer) undo() {
	if im.cfg != nil {
		im.cfg.discard()
	}
	for i := len(im.undoPaths) - 1; i >= 0; i-- {
		if err := os.RemoveAll(im.undoPaths[i]); err != nil {
			im.log.Warn("cannot remove a partial import", slog.String("path", im.undoPaths[i]), slog.Any("err", err))
		}
	}
	im.undoPaths = nil
}

func (im *importer) summary() *Summary {
	for _, pp := range im.plans {
		im.sum.Projects = append(im.sum.Projects, *pp.sum)
	}
	return im.sum
}

// syncDir makes renames in dir durable; failures only cost durability.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func dirMissingOrEmpty(dir string) (bool, error) {
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return len(names) == 0, nil
}
