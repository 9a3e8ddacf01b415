package daemon

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/boincd/boincd/ccconfig"
)

// The C++ client's own tuning files, cc_config.xml in the data directory
// and app_config.xml in each project's directory (ccconfig parses them),
// read at start and on read_cc_config (boinccmd --read_cc_config, the
// Manager's "Read config files", SIGHUP), as the C++ client reads them.

// localConfig is what the files said at the last read.
type localConfig struct {
	cc   ccconfig.CC
	apps map[string]*ccconfig.App // project URL → its app_config.xml
	// told holds the problems already logged, so a file read again with
	// the same mistake is not logged again.
	told map[string]bool
}

func newLocalConfig() localConfig {
	return localConfig{
		cc:   ccconfig.CC{Options: ccconfig.DefaultOptions(), Set: map[string]bool{}, LogFlags: map[string]bool{}},
		apps: map[string]*ccconfig.App{},
		told: map[string]bool{},
	}
}

// readCCConfig reads cc_config.xml. A missing file is no file; a bad one
// is logged with its file and line and what could be read still applies.
func (d *Daemon) readCCConfig() {
	path := filepath.Join(d.opt.DataDir, CCConfigFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.local.cc = newLocalConfig().cc
	case err != nil:
		d.tellConfig("cannot read cc_config.xml; keeping the settings read before", slog.String("file", path), slog.Any("err", err))
	default:
		cc, probs := ccconfig.ParseCC(CCConfigFile, data)
		d.local.cc = cc
		for _, p := range probs {
			d.tellConfig(p.Error())
		}
		for _, name := range cc.Unsupported {
			d.tellConfig("cc_config.xml option <"+name+"> is not supported by boincd; ignored", slog.String("file", path))
		}
		d.log.Info("cc_config.xml read"+suffixIf(len(probs) > 0, " (with problems, see above)"),
			slog.String("file", path), slog.Int("options", len(cc.Set)), slog.Int("log_flags", len(cc.LogFlags)))
	}
	d.applySettings(time.Now())
}

// readAppConfigs reads every attached project's app_config.xml.
func (d *Daemon) readAppConfigs() {
	for url := range d.local.apps {
		if d.st.projects[url] == nil {
			delete(d.local.apps, url)
		}
	}
	for url := range d.st.projects {
		d.readAppConfig(url)
	}
}

// readAppConfig reads one project's app_config.xml.
func (d *Daemon) readAppConfig(url string) {
	path := filepath.Join(d.projectDir(url), AppConfigFile)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		delete(d.local.apps, url)
		return
	case err != nil:
		d.tellConfig("cannot read app_config.xml; keeping the settings read before", slog.String("project", url), slog.String("file", path), slog.Any("err", err))
		return
	}
	rel, err := filepath.Rel(d.opt.DataDir, path)
	if err != nil {
		rel = path
	}
	ac, probs := ccconfig.ParseApp(rel, data)
	var known []string
	for _, a := range d.st.apps {
		if a.ProjectURL == url {
			known = append(known, a.Name)
		}
	}
	// Before the project has sent its apps nothing can be checked; the
	// next read (each read_cc_config) checks again.
	if len(known) > 0 {
		slices.Sort(known)
		probs = append(probs, ac.CheckAppNames(rel, func(n string) bool { return slices.Contains(known, n) })...)
	}
	for _, p := range probs {
		msg := p.Error()
		if strings.Contains(msg, "the project has no app named") {
			msg += " (its apps: " + strings.Join(known, ", ") + ")"
		}
		d.tellConfig(msg, slog.String("project", url))
	}
	d.local.apps[url] = &ac
	d.checkAppVersionEntries(url)
	d.log.Info("app_config.xml read", slog.String("project", url), slog.String("file", path),
		slog.Int("apps", len(ac.Apps)), slog.Int("app_versions", len(ac.Versions)), slog.Int("project_max_concurrent", ac.ProjectMaxConcurrent))
}

// tellConfig logs a configuration problem once per text.
func (d *Daemon) tellConfig(msg string, attrs ...any) {
	if d.local.told[msg] {
		return
	}
	d.local.told[msg] = true
	d.log.Warn(msg, attrs...)
}

// appConfig is the project's app_config.xml as last read (nil: none).
func (d *Daemon) appConfig(url string) *ccconfig.App { return d.local.apps[url] }

func suffixIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}
