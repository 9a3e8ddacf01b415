package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/atomicfile"
	"github.com/boincd/boincd/projectlist"
	"github.com/boincd/boincd/rpcclient"
)

// Client set-up a GUI changes: the proxy, host info, the configuration
// files it edits, its language.

const (
	proxyMetaKey = "proxy_info"
	// CCConfigFile and AppConfigFile are the C++ client's file names.
	CCConfigFile  = "cc_config.xml"
	AppConfigFile = "app_config.xml"
	// AllProjectsListFile is the BOINC project list the Manager's Add
	// Project wizard shows.
	AllProjectsListFile = "all_projects_list.xml"
	// CABundleFile holds certificate authorities the C++ client trusts
	// for https (see dataDirCABundle).
	CABundleFile = "ca-bundle.crt"
)

// settingsAction carries out the set-up actions of guirpc/settings.go.
func (d *Daemon) settingsAction(a guirpc.Action, now time.Time) error {
	switch a := a.(type) {
	case guirpc.SetProxy:
		d.setProxy(a.Info)
		return nil
	case guirpc.SetHostInfo:
		if a.ProductName != "" && a.ProductName != d.host.ProductName {
			d.host.ProductName = a.ProductName
			d.batch.PutMeta("host", &d.host)
			d.log.Info("product name set by GUI", slog.String("product_name", a.ProductName))
		}
		return nil
	case guirpc.ResetHostInfo:
		d.reprobeHost()
		d.redetectContainers()
		return nil
	case guirpc.ReadConfigFile:
		path, err := d.configFilePath(a.File, a.URL)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && a.File == guirpc.AllProjectsList:
			// until a fetch succeeds (projectlist.Bundled)
			*a.Out = projectlist.Bundled
		case errors.Is(err, fs.ErrNotExist):
			*a.Out = nil
		case err != nil:
			return fmt.Errorf("reading %s: %w", path, err)
		default:
			*a.Out = b
		}
		return nil
	case guirpc.WriteConfigFile:
		if a.File == guirpc.AllProjectsList {
			return fmt.Errorf("all_projects_list.xml is not written over GUI RPC")
		}
		path, err := d.configFilePath(a.File, a.URL)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		if err := atomicfile.WriteFile(path, []byte(a.XML+"\n"), 0o644); err != nil {
			return err
		}
		d.log.Info("configuration file written by GUI (applied on the next read_cc_config)", slog.String("path", path), slog.Int("bytes", len(a.XML)+1))
		return nil
	case guirpc.SetLanguage:
		// Kept for the C++ client's one use of it, the language of
		// notices a GUI asks for; boincd's own texts are English.
		if a.Language != d.language {
			d.language = a.Language
			d.log.Debug("GUI language", slog.String("language", a.Language))
		}
		return nil
	case guirpc.ReportDeviceStatus:
		// Battery-powered GUIs (Android) report power and user activity
		// here. As in the C++ client off Android, the host's own probes
		// (hostcond) decide on Linux and Windows: the report is noted only.
		d.log.Debug("device status reported by GUI",
			slog.Bool("on_ac_power", a.Status.OnACPower), slog.Float64("battery_charge_pct", a.Status.BatteryChargePct),
			slog.Bool("user_active", a.Status.UserActive))
		return nil
	}
	return fmt.Errorf("unsupported operation %T", a)
}

// configFilePath is where a GUI-edited configuration file lives.
func (d *Daemon) configFilePath(f guirpc.ConfigFile, url string) (string, error) {
	switch f {
	case guirpc.CCConfig:
		return filepath.Join(d.opt.DataDir, CCConfigFile), nil
	case guirpc.AllProjectsList:
		return filepath.Join(d.opt.DataDir, AllProjectsListFile), nil
	case guirpc.AppConfig:
		if d.st.projects[url] == nil {
			return "", guirpc.ErrNoSuchProject
		}
		return filepath.Join(d.projectDir(url), AppConfigFile), nil
	}
	return "", fmt.Errorf("unknown configuration file %d", f)
}

// setProxy applies and keeps new proxy settings. The HTTP transport reads
// them at each request (rpcclient.ProxyFunc), so scheduler requests,
// transfers and web RPCs started from now on use them.
func (d *Daemon) setProxy(p boinc.ProxyInfo) {
	cp := p
	d.proxy.Store(&cp)
	d.batch.PutMeta(proxyMetaKey, &cp)
	if d.ccProxy.Load() != nil {
		// As the C++ client: cc_config.xml's proxy_info wins over the
		// GUI's, which is kept for when the file drops it.
		d.log.Info("Using proxy info from cc_config.xml; the GUI's proxy settings are kept for when it has none")
		return
	}
	d.logProxy(&cp)
}

// loadProxy restores the saved proxy settings at start.
func (d *Daemon) loadProxy(meta map[string][]byte) {
	p := boinc.DefaultProxyInfo()
	decodeMeta(meta, proxyMetaKey, &p)
	d.proxy.Store(&p)
	if p.Active() {
		d.logProxy(&p)
	}
}

// dataDirCABundle is the data directory's ca-bundle.crt when it holds a
// usable one, else "". The C++ client on Linux hands that file to curl
// as CURLOPT_CAINFO (HTTP_OP::libcurl_exec), so a volunteer's private CA,
// or Debian's link to the system store, is trusted there; boincd trusts
// it too, on top of the system roots rather than instead of them: an old
// bundle shipped with a client must not turn away a project whose CA is
// newer than it. A broken file is reported and skipped (the volunteer
// did not name it in boincd's configuration, and the system roots still
// serve), where ca_bundle in boincd.toml stops the start.
func (d *Daemon) dataDirCABundle() string {
	path := filepath.Join(d.opt.DataDir, CABundleFile)
	if _, err := os.Stat(path); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Warn("CA bundle in the data directory not used", slog.String("file", path), slog.Any("err", err))
		}
		return ""
	}
	if _, err := rpcclient.LoadCABundle(path); err != nil {
		d.log.Warn("CA bundle in the data directory not used", slog.String("file", path), slog.Any("err", err))
		return ""
	}
	d.log.Info("Trusting the certificate authorities in "+path+" as well as the system's", slog.String("file", path))
	return path
}

// logProxy is the C++ client's show_proxy_info.
func (d *Daemon) logProxy(p *boinc.ProxyInfo) {
	switch {
	case p.UseHTTPProxy && p.HTTPServerName != "":
		d.log.Info("Using HTTP proxy "+p.HTTPServerName+":"+strconv.Itoa(p.HTTPServerPort),
			slog.String("no_proxy", p.NoProxy), slog.Bool("auth", p.UseHTTPAuth))
	case p.UseSOCKSProxy && p.SOCKSServerName != "":
		d.log.Info("Using SOCKS proxy "+p.SOCKSServerName+":"+strconv.Itoa(p.SOCKSServerPort),
			slog.String("no_proxy", p.NoProxy))
	default:
		d.log.Info("Not using a proxy")
	}
}

// currentProxy is what the HTTP transport asks, from any goroutine:
// cc_config.xml's proxy_info, else the GUI's.
func (d *Daemon) currentProxy() *boinc.ProxyInfo {
	if p := d.ccProxy.Load(); p != nil {
		return p
	}
	return d.proxy.Load()
}

type hostReprobed struct {
	h     boinc.Host
	warns []error
}

// reprobeHost probes CPUs, memory, disk and OS again off the owner
// goroutine (reset_host_info); identity, benchmarks and product name are
// kept.
func (d *Daemon) reprobeHost() {
	if d.hostProbing {
		return
	}
	d.hostProbing = true
	d.wg.Add(1)
	go func(ctx context.Context, dir string) {
		defer d.wg.Done()
		h, warns := coproc.ProbeHost(ctx, dir)
		d.send(hostReprobed{h, warns})
	}(d.ctx, d.opt.DataDir)
}

func (d *Daemon) handleHostReprobed(ev hostReprobed) {
	d.hostProbing = false
	for _, w := range ev.warns {
		d.log.Warn("host probe", slog.Any("err", w))
	}
	h := ev.h
	old := d.host
	h.HostCPID = old.HostCPID
	if old.ProductName != "" { // a GUI's name, or the first probe's
		h.ProductName = old.ProductName
	}
	h.PFpops, h.PIops, h.PMembw, h.PCalculated = old.PFpops, old.PIops, old.PMembw, old.PCalculated
	h.NUsableCoprocs = old.NUsableCoprocs // the GPU probe's (gpu.go)
	d.host = h
	d.batch.PutMeta("host", &d.host)
	d.log.Info("host info probed again", slog.Int("cpus", h.PNCPUs), slog.Float64("memory_bytes", h.MNBytes),
		slog.Float64("disk_free_bytes", h.DFree))
}
