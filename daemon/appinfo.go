package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/ccconfig"
	"github.com/boincd/boincd/workfetch"
)

// The anonymous platform, as the C++ client 7.20 has it: a volunteer who
// puts app_info.xml in a project's directory runs the apps, versions and
// files it lists (optimised or self-built) instead of the project's own.
//
//   - It is read at start (CLIENT_STATE::check_anonymous, parse_app_info)
//     and when the project is attached with the file already there
//     (add_project); the project is then "anonymous platform".
//   - The scheduler request says <platform_name>anonymous</platform_name>
//     and lists the file's versions in <app_versions> (write_platforms,
//     make_scheduler_request), so the server sends jobs for them.
//   - App versions in replies are ignored ("App version returned from
//     anonymous platform project; ignoring", handle_scheduler_reply); so
//     are file_infos for the file's files.
//   - The file's files are never downloaded, verified, garbage-collected
//     or deleted (anonymous_platform_file; verify_app_version_files skips
//     them); they are not written to the state file, and neither are the
//     file's apps and versions: the file is the truth at every start, and
//     apps or versions of the project stored before are dropped
//     (parse_state_file ignores them).
//   - Work fetch asks only for the processor types its versions use
//     (PROJECT::check_no_apps); the project's no_rsc_apps is not used.
//   - A project reset keeps the file's apps, versions and files and does
//     not clear the project directory (CLIENT_STATE::reset_project).

// AppInfoFile is the anonymous platform file in a project's directory.
const AppInfoFile = "app_info.xml"

// anonymousPlatformName is <platform_name> of an anonymous platform
// project's requests (CLIENT_STATE::write_platforms).
const anonymousPlatformName = "anonymous"

// anonProject is what a project's app_info.xml gave.
type anonProject struct {
	apps     []*boinc.App
	versions []*boinc.AppVersion
	files    []*boinc.FileInfo
	// rsc: the processor types its versions use; work fetch asks for no
	// other (PROJECT::check_no_apps).
	rsc [workfetch.NumRsc]bool
}

// anonymous reports whether the project runs on the anonymous platform.
func (d *Daemon) anonymous(url string) bool { return d.anon[url] != nil }

// loadAppInfos reads every attached project's app_info.xml
// (check_anonymous). It runs at start, after the state is loaded.
func (d *Daemon) loadAppInfos() {
	for _, p := range d.st.sortedProjects() {
		d.loadAppInfo(p)
	}
	// Records of app_info.xml files written by mistake, or of a file no
	// longer listed, are forgotten (never the files on disk).
	for k, f := range d.st.files {
		if f.AnonymousPlatform && !d.anonymousFile(f) {
			delete(d.st.files, k)
			d.batch.DeleteFile(k)
		}
	}
}

// anonymousFile reports whether f is one of its project's app_info.xml
// files as read now.
func (d *Daemon) anonymousFile(f *boinc.FileInfo) bool {
	ap := d.anon[f.ProjectURL]
	if ap == nil {
		return false
	}
	for _, af := range ap.files {
		if af == f {
			return true
		}
	}
	return false
}

// loadAppInfo reads p's app_info.xml, if it has one, and installs what it
// lists. Entries that cannot be used are logged with the file and line;
// the others are used.
func (d *Daemon) loadAppInfo(p *boinc.Project) {
	url := p.MasterURL
	dir := d.projectDir(url)
	path := filepath.Join(dir, AppInfoFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	log := d.projectLog(p)
	if err != nil {
		log.Error("cannot read app_info.xml; the project's own apps are used", slog.String("file", path), slog.Any("err", err))
		return
	}
	log.Info("Found app_info.xml; using anonymous platform", slog.String("file", path))
	rel, err := filepath.Rel(d.opt.DataDir, path)
	if err != nil {
		rel = path
	}
	stat := func(name string) (int64, error) {
		st, err := os.Stat(filepath.Join(dir, name))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return 0, errors.New("no such file in " + dir)
		case err != nil:
			return 0, err
		case !st.Mode().IsRegular():
			return 0, fmt.Errorf("%s is not a regular file", filepath.Join(dir, name))
		}
		return st.Size(), nil
	}
	ai, probs := ccconfig.ParseAppInfo(rel, data, stat)
	ap := &anonProject{}
	for i := range ai.Apps {
		a := ai.Apps[i]
		a.ProjectURL = url
		ap.apps = append(ap.apps, &a)
	}
	for _, f := range ai.Files {
		ap.files = append(ap.files, &boinc.FileInfo{
			ProjectURL: url, Name: f.Name, NBytes: float64(f.NBytes), Executable: f.Executable,
			Status: boinc.FilePresent, Sticky: true, AnonymousPlatform: true,
		})
	}
	for i := range ai.Versions {
		v := ai.Versions[i].AppVersion
		v.ProjectURL = url
		if v.Platform == "" {
			v.Platform = d.primaryPlatform() // parse_app_info
		}
		rsc := workfetch.CPU
		if v.Coproc != nil {
			r, ok := workfetch.RscByName(v.Coproc.Type)
			if !ok || !r.IsGPU() {
				probs = append(probs, ccconfig.Problem{File: rel, Line: ai.Versions[i].Line,
					Msg: fmt.Sprintf("<app_version>: unknown GPU type %q in <coproc>; entry ignored", v.Coproc.Type)})
				continue
			}
			rsc = r
		}
		d.fillAnonFlops(&v, rsc)
		ap.rsc[rsc] = true
		ap.versions = append(ap.versions, &v)
	}
	for _, pr := range probs {
		log.Warn(pr.Error())
	}
	d.anon[url] = ap
	d.installAppInfo(url)
	log.Info("app_info.xml read"+suffixIf(len(probs) > 0, " (with problems, see above)"), slog.String("file", path),
		slog.Int("apps", len(ap.apps)), slog.Int("app_versions", len(ap.versions)), slog.Int("files", len(ap.files)))
	for _, v := range ap.versions {
		attrs := []any{slog.String("app", v.AppName), slog.Int("version_num", v.VersionNum),
			slog.String("platform", v.Platform), slog.String("plan_class", v.PlanClass),
			slog.Float64("avg_ncpus", v.AvgNCPUs), slog.String("api_version", v.APIVersion)}
		if v.Coproc != nil {
			attrs = append(attrs, slog.String("coproc", v.Coproc.Type), slog.Float64("coproc_count", v.Coproc.Count))
		}
		log.Info("anonymous platform app version", attrs...)
	}
	if len(ap.versions) == 0 {
		log.Warn("app_info.xml lists no usable app version: the project will send no work")
	}
}

// fillAnonFlops gives a version without <flops> the speed the C++ client
// assumes (CLIENT_STATE::init): its CPUs at the benchmarked speed, and a
// GPU at 10 times a CPU.
func (d *Daemon) fillAnonFlops(v *boinc.AppVersion, rsc workfetch.Rsc) {
	if v.Flops > 0 {
		return
	}
	fpops := d.host.PFpops
	if fpops <= 0 {
		fpops = 1e9 // cpu_benchmarks_set_defaults
	}
	v.Flops = max(v.AvgNCPUs, 0) * fpops
	if rsc.IsGPU() {
		v.Flops += v.Coproc.Count * 10 * fpops
	}
	if v.Flops <= 0 {
		v.Flops = fpops
	}
}

// installAppInfo puts the project's app_info.xml apps, versions and files
// in the client state, in place of any the state held for the project
// (their records are deleted; files on disk are kept). Nothing of it is
// written to the state file.
func (d *Daemon) installAppInfo(url string) {
	ap := d.anon[url]
	if ap == nil {
		return
	}
	for k, a := range d.st.apps {
		if a.ProjectURL == url {
			delete(d.st.apps, k)
			d.batch.DeleteApp(k)
		}
	}
	for k, v := range d.st.versions {
		if v.ProjectURL == url {
			delete(d.st.versions, k)
			d.batch.DeleteAppVersion(k)
		}
	}
	for _, f := range ap.files {
		if old := d.st.files[f.Key()]; old != nil && old != f {
			d.batch.DeleteFile(f.Key())
		}
		d.st.files[f.Key()] = f
	}
	for _, a := range ap.apps {
		d.st.apps[a.Key()] = a
	}
	for _, v := range ap.versions {
		d.st.versions[v.Key()] = v
	}
}

// anonAppFromReply applies a reply's <app> to an app app_info.xml lists,
// as handle_scheduler_reply updates an app it has: the names the project
// gives it, in memory only. It reports whether a was such an app.
func (d *Daemon) anonAppFromReply(a *boinc.App) bool {
	if !d.anonymous(a.ProjectURL) {
		return false
	}
	old := d.st.apps[a.Key()]
	if old == nil {
		return false
	}
	for _, own := range d.anon[a.ProjectURL].apps {
		if own == old {
			if a.UserFriendlyName != "" {
				old.UserFriendlyName = a.UserFriendlyName
			}
			old.NonCPUIntensive = a.NonCPUIntensive
			return true
		}
	}
	return false
}
