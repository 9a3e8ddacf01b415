package daemon

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/ccconfig"
)

// The effects of app_config.xml (read by localconfig.go), as the C++
// client 7.20 applies them (APP_CONFIGS::config_app_versions): the
// stored app versions are never changed, the modified one is computed
// where it is used, so a file edited and read again (read_cc_config)
// takes effect at once and a file removed leaves the project's own
// values.
//
//   - <app><gpu_versions>: every GPU version of the app uses gpu_usage
//     instances and cpu_usage CPUs.
//   - <app_version>: the versions of the app with exactly that plan class
//     (none given: the versions without one, as C++ compares them) use
//     avg_ncpus CPUs and, for GPU versions, ngpus instances; a cmdline
//     replaces the version's, so it follows the workunit's command line.
//     It is applied after <app>.
//   - max_concurrent, project_max_concurrent: limits in the schedule and
//     the round-robin simulation (core.go).
//   - report_results_immediately, per app or for the project: a finished
//     task is reported at once (resultsDue).
//   - fraction_done_exact: the remaining time comes from fraction done
//     only (estimateRemaining).

// appSettings is the <app> entry for an app of a project (nil: none).
// When the file names an app twice, the last entry counts, as in C++.
func (d *Daemon) appSettings(url, app string) *ccconfig.AppLimits {
	ac := d.appConfig(url)
	if ac == nil {
		return nil
	}
	for i := len(ac.Apps) - 1; i >= 0; i-- {
		if ac.Apps[i].Name == app {
			return &ac.Apps[i]
		}
	}
	return nil
}

// versionUsage is the CPUs and GPU instances v uses after app_config.xml;
// ngpus is 0 for a CPU version. It allocates nothing: the core calls it
// for every task on every pass.
func (d *Daemon) versionUsage(v *boinc.AppVersion) (ncpus, ngpus float64) {
	ncpus = v.AvgNCPUs
	gpu := v.Coproc != nil && v.Coproc.Count > 0
	if gpu {
		ngpus = v.Coproc.Count
	}
	ac := d.appConfig(v.ProjectURL)
	if ac == nil {
		return ncpus, ngpus
	}
	if a := d.appSettings(v.ProjectURL, v.AppName); a != nil && a.HasGPUVersions && gpu {
		ngpus, ncpus = a.GPUUsage, a.CPUUsage
	}
	for i := range ac.Versions {
		avc := &ac.Versions[i]
		if avc.AppName != v.AppName || avc.PlanClass != v.PlanClass {
			continue
		}
		if avc.AvgNCPUs > 0 {
			ncpus = avc.AvgNCPUs
		}
		if avc.NGPUs > 0 && gpu {
			ngpus = avc.NGPUs
		}
	}
	return ncpus, ngpus
}

// versionCmdline is the command line of v after app_config.xml.
func (d *Daemon) versionCmdline(v *boinc.AppVersion) string {
	cmd := v.Cmdline
	if ac := d.appConfig(v.ProjectURL); ac != nil {
		for i := range ac.Versions {
			if avc := &ac.Versions[i]; avc.AppName == v.AppName && avc.PlanClass == v.PlanClass && avc.CmdLine != "" {
				cmd = avc.CmdLine
			}
		}
	}
	return cmd
}

// effectiveVersion is v as app_config.xml modifies it: what a task is
// started with (its init_data.xml and command line), what the scheduler
// request reports and what GUI RPC shows. v itself when nothing
// changes; otherwise a copy, v is never written.
func (d *Daemon) effectiveVersion(v *boinc.AppVersion) *boinc.AppVersion {
	if v == nil || d.appConfig(v.ProjectURL) == nil {
		return v
	}
	ncpus, ngpus := d.versionUsage(v)
	cmd := d.versionCmdline(v)
	gpu := v.Coproc != nil && v.Coproc.Count > 0
	if ncpus == v.AvgNCPUs && cmd == v.Cmdline && (!gpu || ngpus == v.Coproc.Count) {
		return v
	}
	c := *v
	c.AvgNCPUs, c.Cmdline = ncpus, cmd
	if gpu {
		cp := *v.Coproc
		cp.Count = ngpus
		c.Coproc = &cp
	}
	return &c
}

// appLimit is the app's max_concurrent (0: none).
func (d *Daemon) appLimit(url, app string) int {
	if a := d.appSettings(url, app); a != nil {
		return a.MaxConcurrent
	}
	return 0
}

// projectLimit is the project's project_max_concurrent (0: none).
func (d *Daemon) projectLimit(url string) int {
	if ac := d.appConfig(url); ac != nil {
		return ac.ProjectMaxConcurrent
	}
	return 0
}

// resultApp is the name of the app a result runs ("" when its workunit
// is gone).
func (d *Daemon) resultApp(r *boinc.Result) string {
	if wu := d.st.wuOf(r); wu != nil {
		return wu.AppName
	}
	return ""
}

// reportAtOnce: app_config.xml asks that r, once finished, be reported
// at once (report_results_immediately for its app or its project).
func (d *Daemon) reportAtOnce(r *boinc.Result) bool {
	ac := d.appConfig(r.ProjectURL)
	if ac == nil {
		return false
	}
	if ac.ReportResultsImmediately {
		return true
	}
	a := d.appSettings(r.ProjectURL, d.resultApp(r))
	return a != nil && a.ReportResultsImmediately
}

// fractionDoneExact: r's app reports an exact fraction done
// (fraction_done_exact), so its remaining time follows it alone.
func (d *Daemon) fractionDoneExact(r *boinc.Result) bool {
	if d.appConfig(r.ProjectURL) == nil {
		return false
	}
	a := d.appSettings(r.ProjectURL, d.resultApp(r))
	return a != nil && a.FractionDoneExact
}

// checkAppVersionEntries says once, with the C++ client's words, which
// <app_version> entries match none of the project's app versions (a
// plan class mistyped, or given where the versions have none): they have
// no effect. Before the project has sent versions nothing is checked.
func (d *Daemon) checkAppVersionEntries(url string) {
	ac := d.appConfig(url)
	if ac == nil {
		return
	}
	apps := map[string]bool{}
	type key struct{ app, plan string }
	have := map[key]bool{}
	for _, v := range d.st.versions {
		if v.ProjectURL == url {
			apps[v.AppName] = true
			have[key{v.AppName, v.PlanClass}] = true
		}
	}
	file := filepath.Join(d.projectDir(url), AppConfigFile)
	if rel, err := filepath.Rel(d.opt.DataDir, file); err == nil {
		file = rel
	}
	for _, avc := range ac.Versions {
		// An unknown app is reported when the file is read.
		if !apps[avc.AppName] || have[key{avc.AppName, avc.PlanClass}] {
			continue
		}
		p := ccconfig.Problem{File: file, Line: avc.Line,
			Msg: fmt.Sprintf("Entry in app_config.xml for app '%s', plan class '%s' doesn't match any app versions", avc.AppName, avc.PlanClass)}
		d.tellConfig(p.Error(), slog.String("project", url))
	}
}
