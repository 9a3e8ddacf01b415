package daemon

import (
	"context"
	"log/slog"
	"slices"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

// detectPlatforms sets the platforms this host asks work for, primary
// first: Options.Platforms when given, else what platform detects for
// this build, shaped by cc_config.xml's <no_alt_platform> and
// <alt_platform>. As the C++ client (CLIENT_STATE::detect_platforms, run
// once at start after cc_config.xml is read) the list holds for the whole
// run: a re-read cc_config.xml changes it at the next start.
func (d *Daemon) detectPlatforms(ctx context.Context) {
	if len(d.opt.Platforms) > 0 {
		d.platforms = slices.Clone(d.opt.Platforms)
	} else {
		names, probe := platform.Host(ctx)
		for _, n := range probe.Notes {
			d.log.Debug("platform check", slog.String("found", n))
		}
		d.platforms = platform.Configure(names, d.cc.eff.NoAltPlatform, d.cc.eff.AltPlatforms)
	}
	d.log.Info("platforms", slog.String("primary", d.platforms[0]), slog.Any("alternates", d.platforms[1:]))
}

// primaryPlatform is the platform named in <platform_name>
// (CLIENT_STATE::get_primary_platform).
func (d *Daemon) primaryPlatform() string {
	if len(d.platforms) == 0 {
		return platform.This()
	}
	return d.platforms[0]
}

// altPlatforms are the <alt_platform>s, in order of preference.
func (d *Daemon) altPlatforms() []string {
	if len(d.platforms) < 2 {
		return nil
	}
	return slices.Clone(d.platforms[1:])
}

// supportedPlatform: CLIENT_STATE::is_supported_platform.
func (d *Daemon) supportedPlatform(name string) bool {
	if len(d.platforms) == 0 {
		return name == platform.This()
	}
	return platform.Supported(d.platforms, name)
}

// latestVersion is the highest version_num of app among the project's
// versions for plat, 0 when there is none (CLIENT_STATE::latest_version).
func (d *Daemon) latestVersion(projectURL, app, plat string) int {
	best := 0
	for _, v := range d.st.versions {
		if v.ProjectURL == projectURL && v.AppName == app && v.Platform == plat && v.VersionNum > best {
			best = v.VersionNum
		}
	}
	return best
}

// defaultResultPlatform gives a result that names no platform the primary
// one and the app's latest version for it, as handle_scheduler_reply does
// for servers that do not say.
func (d *Daemon) defaultResultPlatform(r *boinc.Result) {
	if r.Platform != "" {
		return
	}
	r.Platform = d.primaryPlatform()
	if wu := d.st.wuOf(r); wu != nil {
		r.VersionNum = d.latestVersion(r.ProjectURL, wu.AppName, r.Platform)
	}
}

// buildPlatform is the platform this binary is built for, which the
// start-up record names as the C++ client's "Starting BOINC client
// version … for HOSTTYPE" does; the detected list comes later.
func buildPlatform() string { return platform.This() }
