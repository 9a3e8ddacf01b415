package daemon

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/boincd/boincd/internal/atomicfile"
	"github.com/boincd/boincd/projectlist"
)

// The list of BOINC projects and account managers (all_projects_list.xml)
// that BOINC Manager's wizards show, kept as the C++ client keeps it
// (package projectlist). The file is fetched off the owner goroutine; the
// check time goes in the meta bucket (the C++ client's
// all_projects_list_check_time in client_state.xml).

const projectListMetaKey = "all_projects_list_check"

// projectListState is when the list was last checked and how it went.
type projectListState struct {
	Checked  time.Time `json:"checked"`
	Failed   bool      `json:"failed,omitempty"`
	fetching bool
}

// projectListFetched reports a fetch of the list to the event loop.
type projectListFetched struct {
	url  string
	data []byte
	err  error
}

// loadProjectList restores the check time; a list no longer on disk is
// fetched at once (CLIENT_STATE::init: no file, check time 0).
func (d *Daemon) loadProjectList(meta map[string][]byte) {
	decodeMeta(meta, projectListMetaKey, &d.plist)
	if _, err := os.Stat(filepath.Join(d.opt.DataDir, AllProjectsListFile)); err != nil {
		d.plist.Checked, d.plist.Failed = time.Time{}, false
	}
}

func (d *Daemon) projectListURL() string {
	if d.opt.ProjectListURL != "" {
		return d.opt.ProjectListURL
	}
	if d.cfg != nil && d.cfg.ProjectListURL != "" {
		return d.cfg.ProjectListURL
	}
	return projectlist.DefaultURL
}

// maybeFetchProjectList starts a fetch of the list when it is due
// (CLIENT_STATE::all_projects_list_check): never with cc_config.xml's
// no_info_fetch or dont_contact_ref_site, nor while network activity is
// suspended.
func (d *Daemon) maybeFetchProjectList(now time.Time) {
	if d.plist.fetching || d.ctx.Err() != nil || d.cc.eff.NoInfoFetch || d.cc.eff.DontContactRefSite {
		return
	}
	if _, _, network := d.suspendReasons(now); network != 0 {
		return
	}
	if !projectlist.Due(now, d.plist.Checked, d.plist.Failed) {
		return
	}
	d.plist.fetching = true
	url, ctx := d.projectListURL(), d.ctx
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		data, err := d.http.Get(ctx, url, projectlist.MaxBytes)
		d.send(projectListFetched{url: url, data: data, err: err})
	}()
}

// handleProjectListFetched keeps a good list (written beside, then
// renamed over the old one, as GET_PROJECT_LIST_OP::handle_reply) and
// keeps the old one, or the bundled one, after a failure, to try again in
// a day.
func (d *Daemon) handleProjectListFetched(ev projectListFetched, now time.Time) {
	d.plist.fetching = false
	err := ev.err
	var s projectlist.Summary
	if err == nil {
		if s, err = projectlist.Check(ev.data); err != nil {
			err = fmt.Errorf("not a list of projects: %w", err)
		}
	}
	if err == nil {
		path := filepath.Join(d.opt.DataDir, AllProjectsListFile)
		err = atomicfile.WriteFile(path, ev.data, 0o644)
	}
	d.plist.Checked, d.plist.Failed = now, err != nil
	d.batch.PutMeta(projectListMetaKey, &d.plist)
	if err != nil {
		// Info, not a user alert: the C++ client is silent here, and a
		// host that never reaches the internet would get one a day.
		d.log.Info("cannot fetch the list of BOINC projects and account managers; the one in use stays, retrying in a day",
			slog.String("url", ev.url), slog.Any("err", err))
		return
	}
	d.log.Info("list of BOINC projects and account managers updated", slog.String("url", ev.url),
		slog.Int("projects", s.Projects), slog.Int("account_managers", s.AccountManagers))
}
