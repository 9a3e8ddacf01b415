package guirpc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// Ops that set up the client rather than act on work: proxy, host info,
// the configuration files a GUI edits, the GUI's language and device
// status, and the ops that have no meaning in a headless daemon.

// SetProxy replaces the proxy settings of the Manager's "Network" page.
type SetProxy struct{ Info boinc.ProxyInfo }

// SetHostInfo takes the host fields a GUI may set (8.x: product_name).
type SetHostInfo struct{ ProductName string }

// ResetHostInfo probes the host again (CPUs, memory, disk, OS), as after a
// hardware or container change.
type ResetHostInfo struct{}

// ConfigFile is a configuration file a GUI reads or writes raw.
type ConfigFile int

const (
	// CCConfig is cc_config.xml in the data directory.
	CCConfig ConfigFile = iota + 1
	// AppConfig is app_config.xml in a project's directory.
	AppConfig
	// AllProjectsList is all_projects_list.xml in the data directory
	// (read only).
	AllProjectsList
)

// ReadConfigFile reads a configuration file; the backend stores its
// contents (nil when there is no such file) in *Out. URL names the project
// of an AppConfig.
type ReadConfigFile struct {
	File ConfigFile
	URL  string
	Out  *[]byte
}

// WriteConfigFile replaces a configuration file with XML (one well-formed
// root element, checked). As with the C++ client it takes effect on the
// next read_cc_config.
type WriteConfigFile struct {
	File ConfigFile
	URL  string
	XML  string
}

// SetLanguage records the GUI's language (the Manager sends it on every
// connect).
type SetLanguage struct{ Language string }

// DeviceStatus is what a GUI on a battery-powered device reports
// (report_device_status; DEVICE_STATUS in the C++ client).
type DeviceStatus struct {
	OnACPower, OnUSBPower bool
	BatteryChargePct      float64
	BatteryState          int
	BatteryTemperatureC   float64
	WiFiOnline            bool
	UserActive            bool
	DeviceName            string
}

// ReportDeviceStatus passes a DeviceStatus on.
type ReportDeviceStatus struct{ Status DeviceStatus }

func (SetProxy) action()           {}
func (SetHostInfo) action()        {}
func (ResetHostInfo) action()      {}
func (ReadConfigFile) action()     {}
func (WriteConfigFile) action()    {}
func (SetLanguage) action()        {}
func (ReportDeviceStatus) action() {}

// element returns the first <name>…</name> (or <name/>) of the request
// as raw XML.
func (r *request) element(name string) (string, bool) {
	for at := 0; ; {
		i := bytes.Index(r.raw[at:], []byte("<"+name))
		if i < 0 {
			return "", false
		}
		i += at
		rest := r.raw[i+1+len(name):]
		if len(rest) == 0 {
			return "", false
		}
		switch rest[0] {
		case '/':
			return "<" + name + "/>", true
		case '>', ' ', '\t', '\r', '\n':
			end := bytes.Index(rest, []byte("</"+name+">"))
			if end < 0 {
				return "", false
			}
			return string(r.raw[i : i+1+len(name)+end+len("</"+name+">")]), true
		}
		at = i + 1 // a longer name with the same prefix
	}
}

// oneElement checks that doc is one XML element named root, whole.
func oneElement(doc, root string) error {
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	depth, seen := 0, false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err // a SyntaxError names its line
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if seen || t.Name.Local != root {
					return fmt.Errorf("line %d: <%s> where the document should be one <%s>", lineOf(doc, d.InputOffset()), t.Name.Local, root)
				}
				seen = true
			}
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return fmt.Errorf("line %d: text outside <%s>", lineOf(doc, d.InputOffset()), root)
			}
		}
	}
	if !seen {
		return fmt.Errorf("no <%s> element", root)
	}
	return nil
}

func lineOf(doc string, off int64) int {
	return 1 + strings.Count(doc[:min(int(off), len(doc))], "\n")
}

func opGetProxySettings(_ *Server, st *State, _ *request, w *xw) {
	writeProxyInfo(w, &st.Proxy)
}

func opSetProxySettings(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	raw, ok := req.element("proxy_info")
	if !ok {
		w.line("<error>Missing proxy_info</error>")
		return nil
	}
	info, err := boinc.ParseProxyInfo([]byte(raw))
	if err != nil {
		w.str("", "error", err.Error())
		return nil
	}
	do(ctx, s, req, w, SetProxy{Info: info})
	return nil
}

func opSetHostInfo(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	raw, ok := req.element("host_info")
	if !ok {
		w.line("<error>Missing host_info</error>")
		return nil
	}
	var hi struct {
		ProductName string `xml:"product_name"`
	}
	d := xml.NewDecoder(strings.NewReader(raw))
	d.Strict = false
	if err := d.Decode(&hi); err != nil {
		w.line("<error>host_info parse error</error>")
		return nil
	}
	do(ctx, s, req, w, SetHostInfo{ProductName: strings.TrimSpace(hi.ProductName)})
	return nil
}

func opGetCCConfig(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	var out []byte
	if err := s.cfg.Backend.Do(ctx, ReadConfigFile{File: CCConfig, Out: &out}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return nil
	}
	// No file: an empty reply, as from the C++ client.
	if s := rawReplyText(out); s != "" {
		w.line(s)
	}
	return nil
}

func opSetCCConfig(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	raw, ok := req.element("cc_config")
	if !ok {
		w.line("<error>No cc_config.xml data is present</error>")
		return nil
	}
	if err := oneElement(raw, "cc_config"); err != nil {
		w.str("", "error", "cc_config: "+err.Error())
		return nil
	}
	do(ctx, s, req, w, WriteConfigFile{File: CCConfig, XML: raw})
	return nil
}

func opGetAppConfig(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	url := req.fields["url"]
	if url == "" {
		w.line("<error>no such project</error>")
		return nil
	}
	var out []byte
	if err := s.cfg.Backend.Do(ctx, ReadConfigFile{File: AppConfig, URL: canonicalURL(url), Out: &out}); err != nil {
		if errors.Is(err, ErrNoSuchProject) {
			w.line("<error>no such project</error>")
			return nil
		}
		w.str("", "error", errorText(err))
		return nil
	}
	if out == nil {
		w.line("<error>app_config.xml not found</error>")
		return nil
	}
	w.line(rawReplyText(out))
	return nil
}

func opSetAppConfig(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	url := req.fields["url"]
	raw, ok := req.element("app_config")
	if url == "" || !ok {
		w.line("<error>bad URL or app_config</error>")
		return nil
	}
	if err := oneElement(raw, "app_config"); err != nil {
		w.str("", "error", "app_config: "+err.Error())
		return nil
	}
	do(ctx, s, req, w, WriteConfigFile{File: AppConfig, URL: canonicalURL(url), XML: raw})
	return nil
}

// rawReplyText is a file's contents as a reply body: trimmed, and without
// the \003 that would end the reply early.
func rawReplyText(b []byte) string {
	return strings.TrimSpace(string(bytes.ReplaceAll(b, []byte{3}, nil)))
}

func opSetLanguage(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	do(ctx, s, req, w, SetLanguage{Language: req.fields["language"]})
	return nil
}

func opReportDeviceStatus(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	raw, ok := req.element("device_status")
	if !ok {
		w.line("<error>Missing device_status</error>")
		return nil
	}
	var ds struct {
		OnACPower   string `xml:"on_ac_power"`
		OnUSBPower  string `xml:"on_usb_power"`
		Charge      string `xml:"battery_charge_pct"`
		State       string `xml:"battery_state"`
		Temperature string `xml:"battery_temperature_celsius"`
		WiFi        string `xml:"wifi_online"`
		UserActive  string `xml:"user_active"`
		DeviceName  string `xml:"device_name"`
	}
	d := xml.NewDecoder(strings.NewReader(raw))
	d.Strict = false
	if err := d.Decode(&ds); err != nil {
		w.str("", "error", "device_status: "+err.Error())
		return nil
	}
	num := func(v string) float64 { f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64); return f }
	do(ctx, s, req, w, ReportDeviceStatus{Status: DeviceStatus{
		OnACPower: num(ds.OnACPower) != 0, OnUSBPower: num(ds.OnUSBPower) != 0,
		BatteryChargePct: num(ds.Charge), BatteryState: int(num(ds.State)), BatteryTemperatureC: num(ds.Temperature),
		WiFiOnline: num(ds.WiFi) != 0, UserActive: num(ds.UserActive) != 0, DeviceName: strings.TrimSpace(ds.DeviceName),
	}})
	return nil
}

// opScreensaverTasks is handle_get_screensaver_tasks: the suspend reason
// and the tasks scheduled to run now.
func opScreensaverTasks(_ *Server, st *State, _ *request, w *xw) {
	w.line("<handle_get_screensaver_tasks>")
	w.int("    ", "suspend_reason", int64(st.CCStatus.TaskSuspendReason))
	for i := range st.Results {
		if a := st.Results[i].Active; a != nil && a.SchedulerState == 2 {
			writeResult(w, st, &st.Results[i])
		}
	}
	w.line("</handle_get_screensaver_tasks>")
}

func opRunGraphicsApp(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<error>boincd runs as a headless service and starts no graphics apps; use the project's web graphics if it has any</error>")
	return nil
}
