// Package config reads boincd's declarative configuration file (TOML) and
// the environment overrides meant for containers, and validates them.
//
// A config names the projects the host is attached to and the preferences
// it runs under. It is the volunteer's statement of intent: the daemon
// reconciles its state to it at start and on reload (SIGHUP). Every error
// names the file and line so a wrong line is found at once; a bad file on
// reload is refused and the running config kept.
//
// TOML was chosen over YAML and JSON because it has comments, no
// indentation traps, and BurntSushi/toml reports positions for syntax and
// type errors.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/hostcond"
)

// FileName is the config file's default name inside the data directory.
const FileName = "boincd.toml"

// Config is the whole file after defaults, env overrides and validation.
type Config struct {
	// Path is where the config came from ("" when there was no file).
	Path string `toml:"-"`
	raw  []byte
	// set holds the keys the file or the environment gave ("no_gpus",
	// "gui_rpc.allow_remote"): where boincd.toml and cc_config.xml both
	// speak, only a key set here overrides cc_config.xml.
	set map[string]bool

	DataDir string `toml:"data_dir"`
	// DropResultsOnDetach discards a removed project's finished but
	// unreported results instead of reporting them first.
	DropResultsOnDetach bool `toml:"drop_results_on_detach"`
	// ExitWhenIdle stops the daemon once no task is left to run,
	// transfer or report (the C++ client's --exit_when_idle).
	ExitWhenIdle bool `toml:"exit_when_idle"`
	NoGPUs       bool `toml:"no_gpus"`
	// UnsignedAppsOK accepts app files without a valid code signature
	// (the C++ client's cc_config unsigned_apps_ok). Off by default:
	// a project's executables must be signed with its code-signing key.
	UnsignedAppsOK bool `toml:"unsigned_apps_ok"`
	// CABundle is a PEM file of extra certificate authorities trusted for
	// https projects, on top of the system roots (a private CA). Certificates
	// are always verified; there is no switch to skip that.
	CABundle string `toml:"ca_bundle"`
	// ProjectListURL is where the list of BOINC projects and account
	// managers (all_projects_list.xml, shown by BOINC Manager's wizards)
	// is fetched from; "" is BOINC's own (projectlist.DefaultURL). An
	// organisation points it at a list of its own projects and manager.
	ProjectListURL string `toml:"project_list_url"`
	// UseAllGPUs uses every NVIDIA GPU, not only those as capable as the
	// best one (the C++ client's use_all_gpus).
	UseAllGPUs bool `toml:"use_all_gpus"`
	// GPUExclude keeps devices away from all projects or one project.
	GPUExclude []GPUExclude `toml:"gpu_exclude"`
	// AppUser names the account science apps run as (Unix only); its
	// primary group becomes theirs. "" runs them as the daemon's user.
	// Switching needs root or CAP_SETUID, CAP_SETGID, CAP_CHOWN,
	// CAP_DAC_OVERRIDE and CAP_KILL; the daemon checks at start.
	AppUser string `toml:"app_user"`
	// AllowRootApps lets apps run as root when the daemon is root and no
	// AppUser is set. Off by default: such a daemon refuses to start apps.
	AllowRootApps bool `toml:"allow_root_apps"`
	// DontUseDocker keeps container apps (Docker/podman jobs, BOINC's
	// BUDA apps) off this host: no engine is looked for and projects are
	// told not to send such jobs (the C++ client's cc_config
	// dont_use_docker; this key wins over cc_config.xml's).
	DontUseDocker bool `toml:"dont_use_docker"`

	GUIRPC   GUIRPC    `toml:"gui_rpc"`
	Web      Web       `toml:"web"`
	Metrics  Metrics   `toml:"metrics"`
	Log      Log       `toml:"log"`
	Prefs    Prefs     `toml:"prefs"`
	Projects []Project `toml:"project"`
	// AccountManager is [account_manager] (acctmgr.go).
	AccountManager AccountManager `toml:"account_manager"`
}

// GPUExclude names a GPU (UUID "GPU-…" or NVML index) to leave alone,
// for every project or only for Project (a master URL).
type GPUExclude struct {
	Device  string `toml:"device"`
	Project string `toml:"project"`
}

// GUIRPC configures the GUI RPC listener that boinccmd and BOINC Manager use.
type GUIRPC struct {
	Address     string   `toml:"address"`
	AllowRemote bool     `toml:"allow_remote"`
	AllowHosts  []string `toml:"allow_hosts"`
}

// Web configures the web dashboard (package webui), on by default on
// loopback. Listen "" is GUI RPC's port + 1 on loopback (127.0.0.1:31417
// by default); a listen address that is not loopback needs TLSCert and
// TLSKey, and admits the hosts GUI RPC admits (gui_rpc.allow_remote,
// allow_hosts, remote_hosts.cfg).
type Web struct {
	Enabled bool   `toml:"enabled"`
	Listen  string `toml:"listen"`
	TLSCert string `toml:"tls_cert"`
	TLSKey  string `toml:"tls_key"`
}

// WebListen is the dashboard's listen address for a GUI RPC address:
// Listen when set, else loopback on the port after GUI RPC's (port 0
// stays 0: any free port), 127.0.0.1:31417 when GUI RPC's is off or
// unparsable.
func (w Web) WebListen(guiAddr string) string {
	if w.Listen != "" {
		return w.Listen
	}
	const def = "127.0.0.1:31417"
	host, port, err := net.SplitHostPort(guiAddr)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 0 || n >= 65535 {
		return def
	}
	if n > 0 {
		n++
	}
	if ip := net.ParseIP(host); host == "" || ip == nil || !ip.IsLoopback() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, strconv.Itoa(n))
}

// Metrics configures the optional Prometheus endpoint (GET /metrics).
// Off by default; on loopback unless AllowRemote.
type Metrics struct {
	Enabled     bool   `toml:"enabled"`
	Address     string `toml:"address"`
	AllowRemote bool   `toml:"allow_remote"`
}

// DefaultMetricsAddress is where /metrics listens when enabled.
const DefaultMetricsAddress = "127.0.0.1:9464"

// Log configures logging.
type Log struct {
	Level  string `toml:"level"`  // debug, info, warn, error
	Format string `toml:"format"` // auto, text, json
}

// Prefs are the computing preferences; zero means "default".
type Prefs struct {
	WorkBufMinDays             *float64 `toml:"work_buf_min_days"`
	WorkBufAdditionalDays      *float64 `toml:"work_buf_additional_days"`
	MaxNCPUsPct                *float64 `toml:"max_ncpus_pct"`
	CPUUsageLimit              *float64 `toml:"cpu_usage_limit"`
	CPUSchedulingPeriodMinutes *float64 `toml:"cpu_scheduling_period_minutes"`
	DiskInterval               *float64 `toml:"disk_interval"`
	LeaveAppsInMemory          *bool    `toml:"leave_apps_in_memory"`

	// When computing is suspended (BOINC's global preferences).
	SuspendCPUUsage    *float64 `toml:"suspend_cpu_usage"`  // % non-BOINC CPU load; 0 = never
	RunIfUserActive    *bool    `toml:"run_if_user_active"` // compute while the user is active
	RunGPUIfUserActive *bool    `toml:"run_gpu_if_user_active"`
	IdleTimeToRun      *float64 `toml:"idle_time_to_run"` // minutes without input = not in use
	RunOnBatteries     *bool    `toml:"run_on_batteries"`
	StartHour          *float64 `toml:"start_hour"` // computing window, local hours
	EndHour            *float64 `toml:"end_hour"`
	NetStartHour       *float64 `toml:"net_start_hour"` // network window
	NetEndHour         *float64 `toml:"net_end_hour"`
}

// Project is one attachment.
type Project struct {
	URL               string  `toml:"url"`
	Authenticator     string  `toml:"authenticator"`
	AuthenticatorFile string  `toml:"authenticator_file"`
	ResourceShare     float64 `toml:"resource_share"`
	NoNewTasks        bool    `toml:"no_new_tasks"`
	Suspended         bool    `toml:"suspended"`
	// Line is where the [[project]] table starts, for error messages.
	Line int `toml:"-"`
}

// Default returns the configuration used when there is no file.
func Default() *Config {
	return &Config{
		GUIRPC:  GUIRPC{Address: "127.0.0.1:31416"},
		Web:     Web{Enabled: true},
		Metrics: Metrics{Address: DefaultMetricsAddress},
		Log:     Log{Level: "info", Format: "auto"},
	}
}

// Load reads path. A missing file is not an error when mayBeMissing is set:
// the daemon then starts with no projects. Env overrides are applied last.
func Load(path string, mayBeMissing bool, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && mayBeMissing {
			c := Default()
			if err := c.applyEnv(getenv); err != nil {
				return nil, err
			}
			return c, c.finish(filepath.Dir(path))
		}
		return nil, fmt.Errorf("config: %w", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	if err := c.applyEnv(getenv); err != nil {
		return nil, err
	}
	return c, c.finish(filepath.Dir(path))
}

// Parse decodes and validates a config file's bytes (no env overrides,
// authenticator files not read).
func Parse(path string, data []byte) (*Config, error) {
	c := Default()
	c.Path = path
	c.raw = data
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(c)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "toml: ")
		line := 0
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line = pe.Position.Line
		}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = strings.TrimPrefix(msg, m[0])
			msg = strings.TrimLeft(msg, " :")
		}
		if line > 0 {
			return nil, fmt.Errorf("%s:%d: %s", path, line, msg)
		}
		return nil, fmt.Errorf("%s: %s", path, msg)
	}
	c.set = map[string]bool{}
	for _, k := range md.Keys() {
		c.set[k.String()] = true
	}
	if und := md.Undecoded(); len(und) > 0 {
		key := und[0].String()
		last := und[0][len(und[0])-1]
		return nil, fmt.Errorf("%s:%d: unknown setting %q", path, lineOfKey(data, last), key)
	}
	headers := lineOfTables(data, "project")
	for i := range c.Projects {
		if i < len(headers) {
			c.Projects[i].Line = headers[i]
		}
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Config) where(line int) string {
	if c.Path == "" {
		return "config"
	}
	if line <= 0 {
		return c.Path
	}
	return c.Path + ":" + strconv.Itoa(line)
}

func (c *Config) validate() error {
	if err := c.validateAccountManager(); err != nil {
		return err
	}
	seen := map[string]int{}
	for i := range c.Projects {
		p := &c.Projects[i]
		at := c.where(p.Line)
		canon, err := boinc.CanonicalMasterURL(p.URL)
		if err != nil {
			return fmt.Errorf("%s: project #%d: %w", at, i+1, err)
		}
		p.URL = canon
		if j, dup := seen[canon]; dup {
			return fmt.Errorf("%s: project #%d: %s is already listed as project #%d", at, i+1, canon, j+1)
		}
		seen[canon] = i
		if p.Authenticator != "" && p.AuthenticatorFile != "" {
			return fmt.Errorf("%s: project %s: set authenticator or authenticator_file, not both", at, canon)
		}
		if p.Authenticator == "" && p.AuthenticatorFile == "" {
			return fmt.Errorf("%s: project %s: no authenticator (account key) or authenticator_file", at, canon)
		}
		// Written so NaN fails too; a share beyond 1e9 is a typo.
		if !(p.ResourceShare >= 0 && p.ResourceShare <= 1e9) {
			return fmt.Errorf("%s: project %s: resource_share %g: want a number in [0, 1e9]", at, canon, p.ResourceShare)
		}
		if p.ResourceShare == 0 {
			p.ResourceShare = 100
		}
	}
	checks := []struct {
		name     string
		v        *float64
		min, max float64
	}{
		{"work_buf_min_days", c.Prefs.WorkBufMinDays, 0, 10},
		{"work_buf_additional_days", c.Prefs.WorkBufAdditionalDays, 0, 10},
		{"max_ncpus_pct", c.Prefs.MaxNCPUsPct, 0, 100},
		{"cpu_usage_limit", c.Prefs.CPUUsageLimit, 1, 100},
		{"cpu_scheduling_period_minutes", c.Prefs.CPUSchedulingPeriodMinutes, 1, 24 * 60},
		{"disk_interval", c.Prefs.DiskInterval, 1, 86400},
		{"suspend_cpu_usage", c.Prefs.SuspendCPUUsage, 0, 100},
		{"idle_time_to_run", c.Prefs.IdleTimeToRun, 0, 1440},
		{"start_hour", c.Prefs.StartHour, 0, 24},
		{"end_hour", c.Prefs.EndHour, 0, 24},
		{"net_start_hour", c.Prefs.NetStartHour, 0, 24},
		{"net_end_hour", c.Prefs.NetEndHour, 0, 24},
	}
	for _, ck := range checks {
		if ck.v != nil && !(*ck.v >= ck.min && *ck.v <= ck.max) { // NaN fails too
			return fmt.Errorf("%s: prefs.%s = %g is outside [%g, %g]", c.where(c.lineOf(ck.name)), ck.name, *ck.v, ck.min, ck.max)
		}
	}
	if err := c.validateAppUser(); err != nil {
		return err
	}
	if c.CABundle != "" {
		if !filepath.IsAbs(c.CABundle) {
			return fmt.Errorf("%s: ca_bundle %q: want an absolute path to a PEM file", c.where(c.lineOf("ca_bundle")), c.CABundle)
		}
		if st, err := os.Stat(c.CABundle); err != nil || !st.Mode().IsRegular() {
			return fmt.Errorf("%s: ca_bundle %q: not a readable regular file", c.where(c.lineOf("ca_bundle")), c.CABundle)
		}
	}
	if c.ProjectListURL != "" {
		if u, err := url.Parse(c.ProjectListURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: project_list_url %q: want an http or https URL", c.where(c.lineOf("project_list_url")), c.ProjectListURL)
		}
	}
	if err := CheckGUIRPCAddress(c.GUIRPC.Address); err != nil {
		return fmt.Errorf("%s: gui_rpc.address %q: %v", c.where(lineOfTableKey(c.raw, "gui_rpc", "address")), c.GUIRPC.Address, err)
	}
	if w := c.Web; w.Enabled && w.Listen != "" {
		line := c.where(lineOfTableKey(c.raw, "web", "listen"))
		if err := CheckGUIRPCAddress(w.Listen); err != nil || w.Listen == "off" {
			if err == nil {
				err = errors.New(`want HOST:PORT; to turn the dashboard off set web.enabled = false`)
			}
			return fmt.Errorf("%s: web.listen %q: %v", line, w.Listen, err)
		}
		host, _, _ := net.SplitHostPort(w.Listen)
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && (w.TLSCert == "" || w.TLSKey == "") {
			return fmt.Errorf("%s: web.listen %q is not loopback: set web.tls_cert and web.tls_key (PEM files), the password must not cross a network in clear", line, w.Listen)
		}
	}
	if c.Metrics.Address == "" {
		c.Metrics.Address = DefaultMetricsAddress
	}
	if c.Metrics.Enabled {
		host, _, err := net.SplitHostPort(c.Metrics.Address)
		if err != nil {
			return fmt.Errorf("%s: metrics.address %q: %v", c.where(c.lineOf("address")), c.Metrics.Address, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) && !c.Metrics.AllowRemote {
			return fmt.Errorf("%s: metrics.address %q is not loopback: set metrics.allow_remote = true to expose it", c.where(c.lineOf("address")), c.Metrics.Address)
		}
	}
	switch strings.ToLower(c.Log.Level) {
	case "debug", "info", "warn", "error":
	default:
		return fmt.Errorf("%s: log.level %q: want debug, info, warn or error", c.where(c.lineOf("level")), c.Log.Level)
	}
	switch c.Log.Format {
	case "auto", "text", "json", "journal":
	default:
		return fmt.Errorf("%s: log.format %q: want auto, text, json or journal", c.where(c.lineOf("format")), c.Log.Format)
	}
	return nil
}

// IsSet reports whether the file or the environment gave key (dotted
// for tables: "gui_rpc.allow_remote"). A config built in code (the demo,
// tests) has no record of its keys: there, only what differs from
// Default counts as set, which the caller checks itself.
func (c *Config) IsSet(key string) bool { return c.set[key] }

func (c *Config) markSet(key string) {
	if c.set == nil {
		c.set = map[string]bool{}
	}
	c.set[key] = true
}

// CheckGUIRPCAddress checks a GUI RPC listen address: "off" (or empty)
// for none, else HOST:PORT with PORT 0-65535 (0: any free port) and HOST
// empty (all interfaces), an IP address or a host name. Checked at load,
// so a typo cannot leave a daemon nobody can control (issue 14).
func CheckGUIRPCAddress(addr string) error {
	if addr == "" || addr == "off" {
		return nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("want HOST:PORT, e.g. 127.0.0.1:31416, or \"off\"")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("port %q: want a number from 0 to 65535", port)
	}
	if host == "" {
		return nil
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if !hostNameRE.MatchString(host) || allDigitsRE.MatchString(host[strings.LastIndexByte(host, '.')+1:]) {
		// A last label of digits only is a mistyped IP (999.1.1.1), never
		// a host name (RFC 3696 §2).
		return fmt.Errorf("host %q: not an IP address or host name", host)
	}
	return nil
}

var (
	hostNameRE  = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*\.?$`)
	allDigitsRE = regexp.MustCompile(`^[0-9]*$`)
)

// lineOfTableKey is the line of key inside [table] (or of table.key at
// the top), 0 when not found.
func lineOfTableKey(data []byte, table, key string) int {
	cur := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			cur = strings.Trim(strings.ReplaceAll(t, " ", ""), "[]")
			if j := strings.IndexByte(cur, '#'); j >= 0 {
				cur = strings.Trim(cur[:j], "[]")
			}
			continue
		}
		k := key // inside [table]
		if cur == "" {
			k = table + "." + key // a dotted key at the top
		} else if cur != table {
			continue
		}
		if rest, ok := strings.CutPrefix(t, k); ok && strings.HasPrefix(strings.TrimSpace(rest), "=") {
			return i + 1
		}
	}
	return 0
}

// appUserRE is the portable POSIX user name set: letters, digits, '.',
// '_' and '-', not starting with '-' (useradd's rule, which also keeps
// the name from reading as a flag anywhere it is passed on).
var appUserRE = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}$`)

// validateAppUser checks app_user's form only: whether the account exists
// and the daemon may switch to it is the task runner's check at start,
// on the host that runs the apps.
func (c *Config) validateAppUser() error {
	if c.AppUser == "" {
		return nil
	}
	at := c.where(c.lineOf("app_user"))
	switch {
	case runtime.GOOS == "windows":
		return fmt.Errorf("%s: app_user %q: not supported on Windows (apps run as the service's account; see winsvc/README.md)", at, c.AppUser)
	case c.AppUser == "root" || c.AppUser == "0":
		return fmt.Errorf("%s: app_user %q: apps must not run as root; name an unprivileged account", at, c.AppUser)
	case !appUserRE.MatchString(c.AppUser):
		return fmt.Errorf("%s: app_user %q: not a user name (letters, digits, '.', '_', '-')", at, c.AppUser)
	}
	return nil
}

func (c *Config) lineOf(key string) int {
	return lineOfKey(c.raw, key)
}

// finish reads authenticator files (relative to the config's directory).
func (c *Config) finish(dir string) error {
	if err := c.finishAccountManager(dir); err != nil {
		return err
	}
	for i := range c.Projects {
		p := &c.Projects[i]
		if p.AuthenticatorFile == "" {
			continue
		}
		path := p.AuthenticatorFile
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("%s: project %s: authenticator_file: %w", c.where(p.Line), p.URL, err)
		}
		key := strings.TrimSpace(string(b))
		if key == "" || strings.ContainsAny(key, " \t\n<>&") {
			return fmt.Errorf("%s: project %s: authenticator_file %s does not hold one account key", c.where(p.Line), p.URL, path)
		}
		p.Authenticator = key
	}
	return nil
}

// applyEnv applies BOINCD_* overrides, for container images where editing
// a file is awkward. BOINCD_PROJECT_URL with BOINCD_PROJECT_AUTHENTICATOR
// (or _FILE) attaches one project.
func (c *Config) applyEnv(getenv func(string) string) error {
	if getenv == nil {
		return nil
	}
	str := func(name string, dst *string) {
		if v := getenv(name); v != "" {
			*dst = v
		}
	}
	str("BOINCD_DATA_DIR", &c.DataDir)
	str("BOINCD_CA_BUNDLE", &c.CABundle)
	str("BOINCD_PROJECT_LIST_URL", &c.ProjectListURL)
	str("BOINCD_GUI_RPC_ADDRESS", &c.GUIRPC.Address)
	str("BOINCD_WEB_LISTEN", &c.Web.Listen)
	str("BOINCD_LOG_LEVEL", &c.Log.Level)
	str("BOINCD_LOG_FORMAT", &c.Log.Format)
	str("BOINCD_APP_USER", &c.AppUser)
	for _, e := range []struct {
		name, key string
		dst       *bool
	}{
		{"BOINCD_ALLOW_ROOT_APPS", "allow_root_apps", &c.AllowRootApps},
		{"BOINCD_UNSIGNED_APPS_OK", "unsigned_apps_ok", &c.UnsignedAppsOK},
		{"BOINCD_GUI_RPC_ALLOW_REMOTE", "gui_rpc.allow_remote", &c.GUIRPC.AllowRemote},
		{"BOINCD_WEB_ENABLED", "web.enabled", &c.Web.Enabled},
		// A container image rarely wants its daemon to look for podman
		// or Docker inside it.
		{"BOINCD_DONT_USE_DOCKER", "dont_use_docker", &c.DontUseDocker},
	} {
		if v := getenv(e.name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("environment %s=%q: want true or false", e.name, v)
			}
			*e.dst = b
			c.markSet(e.key)
		}
	}
	if v := getenv("BOINCD_METRICS_ADDRESS"); v != "" {
		// Naming an address is asking for the endpoint.
		c.Metrics.Address, c.Metrics.Enabled = v, true
	}
	floats := []struct {
		name string
		dst  **float64
	}{
		{"BOINCD_WORK_BUF_MIN_DAYS", &c.Prefs.WorkBufMinDays},
		{"BOINCD_WORK_BUF_ADDITIONAL_DAYS", &c.Prefs.WorkBufAdditionalDays},
		{"BOINCD_MAX_NCPUS_PCT", &c.Prefs.MaxNCPUsPct},
		{"BOINCD_CPU_USAGE_LIMIT", &c.Prefs.CPUUsageLimit},
	}
	for _, f := range floats {
		if v := getenv(f.name); v != "" {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return fmt.Errorf("environment %s=%q: not a number", f.name, v)
			}
			*f.dst = &x
		}
	}
	if u := getenv("BOINCD_PROJECT_URL"); u != "" {
		p := Project{URL: u, Authenticator: getenv("BOINCD_PROJECT_AUTHENTICATOR"), AuthenticatorFile: getenv("BOINCD_PROJECT_AUTHENTICATOR_FILE")}
		c.Projects = append(c.Projects, p)
	}
	c.accountManagerEnv(getenv)
	saved := c.Path
	c.Path = "environment"
	defer func() { c.Path = saved }()
	return c.validate()
}

// BoincPrefs merges the configured prefs over the BOINC defaults.
func (c *Config) BoincPrefs() boinc.Prefs {
	p := boinc.DefaultPrefs()
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.WorkBufMinDays, c.Prefs.WorkBufMinDays)
	set(&p.WorkBufAdditionalDays, c.Prefs.WorkBufAdditionalDays)
	set(&p.MaxNCPUsPct, c.Prefs.MaxNCPUsPct)
	set(&p.CPUUsageLimit, c.Prefs.CPUUsageLimit)
	set(&p.CPUSchedulingPeriodMinutes, c.Prefs.CPUSchedulingPeriodMinutes)
	set(&p.DiskInterval, c.Prefs.DiskInterval)
	set(&p.SuspendCPUUsage, c.Prefs.SuspendCPUUsage)
	if c.Prefs.RunIfUserActive != nil {
		p.RunIfUserActive = *c.Prefs.RunIfUserActive
	}
	if c.Prefs.LeaveAppsInMemory != nil {
		p.LeaveAppsInMemory = *c.Prefs.LeaveAppsInMemory
	}
	return p
}

// HostCondPrefs returns the suspend-condition preferences the config
// sets, over BOINC's defaults (the other prefs come from BoincPrefs).
func (c *Config) HostCondPrefs() hostcond.Prefs {
	p := hostcond.FromBoinc(c.BoincPrefs())
	setB := func(dst *bool, v *bool) {
		if v != nil {
			*dst = *v
		}
	}
	setF := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	setB(&p.RunGPUIfUserActive, c.Prefs.RunGPUIfUserActive)
	setB(&p.RunOnBatteries, c.Prefs.RunOnBatteries)
	setF(&p.IdleTimeToRun, c.Prefs.IdleTimeToRun)
	setF(&p.CPU.Start, c.Prefs.StartHour)
	setF(&p.CPU.End, c.Prefs.EndHour)
	setF(&p.Net.Start, c.Prefs.NetStartHour)
	setF(&p.Net.End, c.Prefs.NetEndHour)
	return p
}

var lineRE = regexp.MustCompile(`^line (\d+)(?: \(last key "[^"]*"\))?`)

func lineOfKey(data []byte, key string) int {
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, key) {
			rest := strings.TrimSpace(strings.TrimPrefix(t, key))
			rest = strings.TrimPrefix(rest, `"`)
			if strings.HasPrefix(rest, "=") || strings.HasPrefix(rest, "\"") {
				return i + 1
			}
		}
	}
	return 0
}

func lineOfTables(data []byte, name string) []int {
	var out []int
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.ReplaceAll(strings.TrimSpace(line), " ", "")
		if strings.HasPrefix(t, "[["+name+"]]") {
			out = append(out, i+1)
		}
	}
	return out
}
