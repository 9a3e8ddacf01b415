package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/tty"
)

const statusHelp = `usage: boincd status [--host HOST[:PORT]] [--passwd P] [--dir DIR] [--config FILE] [--json] [--watch SECONDS]

Connects to a running boincd (or any BOINC client) over GUI RPC and shows
run modes and suspend reasons, projects, tasks, file transfers, and why no
work is being fetched (the newest "not requesting work" event-log message
per project and resource).

The address is --host, else gui_rpc.address in the config (--config, else
DIR/boincd.toml; BOINCD_GUI_RPC_ADDRESS overrides it as for the daemon),
else 127.0.0.1:31416. The password is --passwd, else the first line of
DIR/gui_rpc_auth.cfg, else none: a local connection may read status
without one.

Exit status: 0 ok, 1 cannot connect or the client refused/failed a
request, 2 usage.

--json prints one JSON document (with --watch, one per refresh):
  address, time                     server address, client's "now" (RFC 3339)
  web_ui                            the web dashboard's URL by the config
                                    ("off" when web.enabled = false)
  client{version, platform, host_name, ncpus, executing_as_daemon}
  container_engine{type, version, status}   the Docker/podman engine for container
                                    apps: type docker|podman with its version, or
                                    "none" with why (from the event log) in status
  network_status                    online | need connection | don't need connection | reconnecting
  cpu, gpu, network                 {mode, perm_mode, mode_expires_in_secs,
                                     suspended, suspend_reason (bitmask), suspend_reasons[]}
  projects[]   {name, url, tasks, tasks_running, resource_share,
                user_total_credit, user_expavg_credit, host_total_credit, host_expavg_credit,
                suspended, no_new_tasks, detach_when_done, ended, scheduler_rpc_in_progress,
                sched_rpc_pending, rpc_failures, deferred_until, rsc_backoffs[{resource, until}],
                status[] (the words shown in the STATUS column),
                source (config: a [[project]] of boincd.toml; acct_mgr: the account
                manager's; gui_rpc: attached with boinccmd or the Manager;
                omitted when the config cannot be read)}
  tasks[]      {name, project, project_url, app, state, result_state, active_task_state,
                scheduler_state, fraction_done, elapsed_secs, remaining_secs, deadline,
                received, slot, pid, exit_status, ready_to_report, suspended_via_gui}
  transfers[]  {file, project, project_url, direction (up|down), bytes_done, bytes_total,
                active, speed_bytes_per_sec, retries, next_try, status}
  not_fetching[] {project, resource, reason, time, seqno}
  config_sources[] {name, value, source}   cc_config.xml options not at their
                default and where each came from: boincd.toml, command line
                or cc_config.xml (boincd.toml wins; see the README)
Times are RFC 3339 and omitted when unknown; durations are seconds.

Suspend reasons (lib/common_defs.h): 1 on batteries, 2 computer in use,
4 user request, 8 time of day, 16 benchmarks, 32 disk space, 64 CPU
throttle, 128 no recent input, 256 initial delay, 512 exclusive app,
1024 CPU busy, 2048 network transfer limit; 4096 OS request, 4097-4101
WiFi/battery/GUI keep-alive/Podman (plain values, not bits).

flags:
`

func runStatus(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return statusMain(ctx, args, stdout, stderr)
}

type statusOpts struct {
	addr         string
	password     string
	passwordFrom string // "" when none, else where it came from (for messages)
	asJSON       bool
	watch        time.Duration
	loc          *time.Location
	// configProjects are boincd.toml's [[project]] URLs (nil: unknown),
	// which tell a project's source.
	configProjects map[string]bool
	// webUI is the web dashboard's address as the config gives it (""
	// when unknown, "off" when disabled).
	webUI string
}

func statusMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, statusHelp)
		fs.PrintDefaults()
	}
	host := fs.String("host", "", "GUI RPC address HOST[:PORT] (default: the config's gui_rpc.address, else "+client.DefaultAddr+")")
	cfgFile := fs.String("config", "", "config file giving the GUI RPC address (default DIR/"+config.FileName+")")
	passwd := fs.String("passwd", "", "GUI RPC password (default: first line of DIR/gui_rpc_auth.cfg)")
	dir := fs.String("dir", ".", "data directory holding gui_rpc_auth.cfg")
	asJSON := fs.Bool("json", false, "print one JSON document (field names above)")
	watch := fs.Float64("watch", 0, "redraw every SECONDS until interrupted")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(stderr, "boincd status: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	if *watch < 0 || math.IsNaN(*watch) || math.IsInf(*watch, 0) {
		fmt.Fprintf(stderr, "boincd status: --watch %g: want seconds > 0\n", *watch)
		return 2
	}
	passwdSet, hostSet := false, false
	fs.Visit(func(f *flag.Flag) {
		passwdSet = passwdSet || f.Name == "passwd"
		hostSet = hostSet || f.Name == "host"
	})
	addr := *host
	if !hostSet {
		path := *cfgFile
		if path == "" {
			path = filepath.Join(*dir, config.FileName)
		}
		a, err := configGUIAddr(path, *cfgFile != "", os.Getenv)
		if err != nil {
			fmt.Fprintln(stderr, "boincd status:", err)
			return 1
		}
		addr = a
	}
	o := statusOpts{addr: client.NormalizeAddr(addr), asJSON: *asJSON, watch: time.Duration(*watch * float64(time.Second)), loc: time.Local}
	o.configProjects = configProjectURLs(*cfgFile, *dir)
	{
		path := *cfgFile
		if path == "" {
			path = filepath.Join(*dir, config.FileName)
		}
		o.webUI = configWebURL(path, os.Getenv)
	}
	if passwdSet {
		o.password, o.passwordFrom = *passwd, "--passwd"
	} else {
		path := filepath.Join(*dir, "gui_rpc_auth.cfg")
		pw, err := readGUIPassword(path)
		switch {
		case err == nil:
			o.password, o.passwordFrom = pw, path
		case !errors.Is(err, os.ErrNotExist):
			fmt.Fprintf(stderr, "boincd status: warning: %v; continuing without a password\n", err)
		}
	}
	if o.watch > 0 {
		return watchStatus(ctx, o, stdout, stderr)
	}
	s := &statusSession{opts: o, stderr: stderr}
	defer s.close()
	doc, err := s.fetch(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "boincd status:", err)
		return 1
	}
	if err := writeStatus(stdout, o, doc); err != nil {
		fmt.Fprintln(stderr, "boincd status:", err)
		return 1
	}
	return 0
}

// configWebURL is the web dashboard's address by the config at path (the
// daemon's rule, config.Web.WebListen): "off" when disabled, "" when it
// cannot be told (an unreadable config, a port chosen at start).
func configWebURL(path string, getenv func(string) string) string {
	c, err := config.Load(path, true, getenv)
	if err != nil {
		return ""
	}
	if !c.Web.Enabled {
		return "off"
	}
	host, port, err := net.SplitHostPort(c.Web.WebListen(c.GUIRPC.Address))
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	scheme := "http"
	if c.Web.TLSCert != "" {
		scheme = "https"
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/"
}

// configGUIAddr is the address to reach the daemon that reads the config
// at path: its gui_rpc.address (or BOINCD_GUI_RPC_ADDRESS), with an
// all-interfaces host read as loopback; client.DefaultAddr when the file
// is missing and was not named (mustExist). A config the daemon would
// refuse, "off" and port 0 are errors: guessing 31416 would talk to some
// other client, or to nothing.
func configGUIAddr(path string, mustExist bool, getenv func(string) string) (string, error) {
	addr := ""
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		c, err := config.Parse(path, data)
		if err != nil {
			return "", fmt.Errorf("cannot take the GUI RPC address from the config: %w (or give --host)", err)
		}
		addr = c.GUIRPC.Address
	case mustExist || !errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("cannot take the GUI RPC address from the config: %w (or give --host)", err)
	}
	from := path
	if v := getenv("BOINCD_GUI_RPC_ADDRESS"); v != "" {
		addr, from = v, "BOINCD_GUI_RPC_ADDRESS"
		if err := config.CheckGUIRPCAddress(v); err != nil {
			return "", fmt.Errorf("BOINCD_GUI_RPC_ADDRESS=%q: %v", v, err)
		}
	}
	if addr == "" {
		return client.DefaultAddr, nil
	}
	if addr == "off" {
		return "", fmt.Errorf("GUI RPC is off (gui_rpc.address = \"off\" in %s)", from)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("GUI RPC address %q in %s: %w", addr, from, err)
	}
	if port == "0" {
		return "", fmt.Errorf("GUI RPC address %q in %s: port 0 is a free port chosen at start; give --host", addr, from)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
		if ip != nil && ip.To4() == nil {
			host = "::1"
		}
	}
	return net.JoinHostPort(host, port), nil
}

// readGUIPassword reads gui_rpc_auth.cfg the way the C++ client does: the
// first line, whitespace-stripped.
func readGUIPassword(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("read GUI RPC password: %w", err)
	}
	defer f.Close()
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read GUI RPC password from %s: %w", path, err)
	}
	return strings.TrimSpace(line), nil
}

func writeStatus(w io.Writer, o statusOpts, doc *statusDoc) error {
	doc.WebUI = o.webUI
	if o.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(doc); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
		return nil
	}
	return renderStatus(w, doc, o.loc)
}

// watchStatus redraws until ctx ends. A failed refresh is shown and
// retried on the next tick (the daemon may be restarting), but a first
// attempt that cannot connect exits 1 like a single run.
func watchStatus(ctx context.Context, o statusOpts, stdout, stderr io.Writer) int {
	s := &statusSession{opts: o, stderr: stderr}
	defer s.close()
	clearScreen := !o.asJSON && tty.Is(stdout)
	tick := time.NewTicker(o.watch)
	defer tick.Stop()
	for first := true; ; first = false {
		doc, err := s.fetch(ctx)
		if ctx.Err() != nil {
			return 0
		}
		if err != nil && first {
			fmt.Fprintln(stderr, "boincd status:", err)
			return 1
		}
		switch {
		case clearScreen:
			fmt.Fprint(stdout, "\x1b[H\x1b[2J")
		case !first && !o.asJSON:
			fmt.Fprintln(stdout)
		}
		if err != nil {
			fmt.Fprintf(stdout, "boincd status: %v (retrying every %s)\n", err, o.watch)
		} else if err := writeStatus(stdout, o, doc); err != nil {
			fmt.Fprintln(stderr, "boincd status:", err)
			return 1
		}
		select {
		case <-ctx.Done():
			return 0
		case <-tick.C:
		}
	}
}

// statusSession keeps one connection and the event-log position across
// refreshes, so --watch reads only new messages.
type statusSession struct {
	opts   statusOpts
	stderr io.Writer
	c      *client.Client
	seqno  int
	nf     notFetchingSet
	cfg    configSources
	// docker is the newest "Docker: …" event-log line's text after
	// "Docker: ": why no engine is used.
	docker string
}

func (s *statusSession) close() {
	if s.c != nil {
		_ = s.c.Close()
		s.c = nil
	}
}

func (s *statusSession) connect(ctx context.Context) error {
	// A new connection may be to a restarted client whose event log
	// starts again at 1.
	s.seqno, s.nf, s.cfg, s.docker = 0, notFetchingSet{}, configSources{}, ""
	hint := func(err error) error {
		// The dial error repeats the address; keep only its cause.
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			err = op.Err
		}
		return fmt.Errorf("cannot connect to %s: %w (is boincd running? --gui_rpc_port?)", s.opts.addr, err)
	}
	c, err := client.Dial(ctx, s.opts.addr)
	if err != nil {
		return hint(err)
	}
	if s.opts.password == "" {
		s.c = c
		return nil
	}
	err = c.Authorize(ctx, s.opts.password)
	if err == nil {
		s.c = c
		return nil
	}
	_ = c.Close()
	if !errors.Is(err, client.ErrUnauthorized) {
		return hint(err)
	}
	if s.opts.passwordFrom == "--passwd" {
		return fmt.Errorf("%s refused the password given with --passwd: %w", s.opts.addr, err)
	}
	// A stale gui_rpc_auth.cfg (say, of another client) should not stop
	// a local read-only look; the server hung up, so dial again.
	fmt.Fprintf(s.stderr, "boincd status: warning: %s refused the password in %s; continuing without authorization\n", s.opts.addr, s.opts.passwordFrom)
	s.opts.password = ""
	c, err = client.Dial(ctx, s.opts.addr)
	if err != nil {
		return hint(err)
	}
	s.c = c
	return nil
}

// fetch gathers one snapshot. Any failure drops the connection so the next
// refresh starts clean.
func (s *statusSession) fetch(ctx context.Context) (*statusDoc, error) {
	fresh := s.c == nil
	if fresh {
		if err := s.connect(ctx); err != nil {
			return nil, err
		}
	}
	doc, err := s.query(ctx)
	if err != nil && !fresh && ctx.Err() == nil {
		// The server may have closed the connection while it sat idle
		// between refreshes (boincd does after 10 s without a password,
		// 30 s with one): try once more on a new one.
		s.close()
		if err := s.connect(ctx); err != nil {
			return nil, err
		}
		doc, err = s.query(ctx)
	}
	if err != nil {
		s.close()
		return nil, err
	}
	return doc, nil
}

func (s *statusSession) query(ctx context.Context) (*statusDoc, error) {
	cc, err := s.c.GetCCStatus(ctx)
	if err != nil {
		return nil, err
	}
	st, err := s.c.GetState(ctx)
	if err != nil {
		return nil, err
	}
	xfers, err := s.c.GetFileTransfers(ctx)
	if err != nil {
		return nil, err
	}
	msgs, err := s.c.GetMessages(ctx, s.seqno)
	if err != nil {
		return nil, err
	}
	for _, m := range msgs {
		s.nf.add(m)
		s.cfg.add(m)
		if rest, ok := strings.CutPrefix(m.Body, "Docker: "); ok {
			s.docker = rest
		}
		if m.Seqno > s.seqno {
			s.seqno = m.Seqno
		}
	}
	now := st.TimeStats.Now
	if now.IsZero() {
		now = time.Now()
	}
	doc := buildStatus(s.opts.addr, now, cc, st, xfers, s.nf.list())
	doc.ConfigSources = s.cfg.list()
	doc.Containers = containerEngine(st.HostInfo, s.docker)
	setProjectSources(doc, st, s.opts.configProjects)
	return doc, nil
}

// statusDoc is what --json prints and the text view renders; field names
// are documented in statusHelp.
type statusDoc struct {
	Address       string    `json:"address"`
	WebUI         string    `json:"web_ui,omitempty"`
	Time          time.Time `json:"time"`
	Client        clientDoc `json:"client"`
	NetworkStatus string    `json:"network_status"`
	CPU           modeDoc   `json:"cpu"`
	GPU           modeDoc   `json:"gpu"`
	Network       modeDoc   `json:"network"`
	// Health is boincd's active named warnings (empty when all is well).
	Health      []client.HealthWarning `json:"health"`
	Projects    []projectDoc           `json:"projects"`
	Tasks       []taskDoc              `json:"tasks"`
	Transfers   []transferDoc          `json:"transfers"`
	NotFetching []notFetchInfo         `json:"not_fetching"`
	// ConfigSources are the cc_config.xml options set to other than
	// their defaults and where each value came from (nil: the event log
	// holds no "config sources" table, e.g. a C++ client).
	ConfigSources []configSourceDoc `json:"config_sources"`
	// Containers is the container engine for container apps.
	Containers containerDoc `json:"container_engine"`
}

type containerDoc struct {
	Type    string `json:"type"` // docker, podman or none
	Version string `json:"version,omitempty"`
	// Status says why there is none: the daemon's "Docker: …" event-log
	// line ("not usable: podman not installed; …", "not used
	// (dont_use_docker)"), or that it has not said yet.
	Status string `json:"status,omitempty"`
}

// containerEngine is the engine host_info names (<docker_version>,
// <docker_type>), else the reason the event log gives.
func containerEngine(h client.HostInfo, logged string) containerDoc {
	if h.DockerVersion != "" {
		// An engine whose kind is not said is Docker, as the C++ client
		// reads it.
		typ := boinc.Docker.String()
		if h.DockerType == boinc.Podman {
			typ = boinc.Podman.String()
		}
		return containerDoc{Type: typ, Version: h.DockerVersion}
	}
	if logged == "" || strings.HasPrefix(logged, "version ") {
		// The detection has not ended (or runs again), or the client
		// does not say.
		logged = "none reported"
	}
	return containerDoc{Type: "none", Status: logged}
}

func (c containerDoc) String() string {
	if c.Type == "none" {
		return "none: " + c.Status
	}
	return c.Type + " " + c.Version
}

type configSourceDoc struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// configSources is the effective-settings table the daemon logs at each
// read of boincd.toml and cc_config.xml: a "config sources" line, then one
// "config setting name=N value=V source=S" line per value that is not
// the default. The newest table wins.
type configSources struct {
	seen bool
	rows []configSourceDoc
}

func (c *configSources) add(m client.Message) {
	low := strings.ToLower(m.Body)
	switch {
	case strings.HasPrefix(low, "config sources"):
		c.seen, c.rows = true, []configSourceDoc{}
	case strings.HasPrefix(low, "config setting ") && c.seen:
		kv := parseKV(m.Body)
		c.rows = append(c.rows, configSourceDoc{Name: kv["name"], Value: kv["value"], Source: kv["source"]})
	}
}

func (c *configSources) list() []configSourceDoc {
	if !c.seen {
		return nil
	}
	return c.rows
}

type clientDoc struct {
	Version  string `json:"version"`
	Platform string `json:"platform"`
	// AltPlatforms are the other platforms the client asks work for
	// (get_state's <platform> list after the primary).
	AltPlatforms      []string `json:"alt_platforms,omitempty"`
	HostName          string   `json:"host_name"`
	NCPUs             int      `json:"ncpus"`
	ExecutingAsDaemon bool     `json:"executing_as_daemon"`
}

type modeDoc struct {
	Mode              string   `json:"mode"`
	PermMode          string   `json:"perm_mode"`
	ModeExpiresInSecs float64  `json:"mode_expires_in_secs"`
	Suspended         bool     `json:"suspended"`
	SuspendReason     int      `json:"suspend_reason"`
	SuspendReasons    []string `json:"suspend_reasons"`
}

type backoffDoc struct {
	Resource string    `json:"resource"`
	Until    time.Time `json:"until"`
}

type projectDoc struct {
	Name                   string       `json:"name"`
	URL                    string       `json:"url"`
	Tasks                  int          `json:"tasks"`
	TasksRunning           int          `json:"tasks_running"`
	ResourceShare          float64      `json:"resource_share"`
	UserTotalCredit        float64      `json:"user_total_credit"`
	UserExpavgCredit       float64      `json:"user_expavg_credit"`
	HostTotalCredit        float64      `json:"host_total_credit"`
	HostExpavgCredit       float64      `json:"host_expavg_credit"`
	Suspended              bool         `json:"suspended"`
	NoNewTasks             bool         `json:"no_new_tasks"`
	DetachWhenDone         bool         `json:"detach_when_done"`
	Ended                  bool         `json:"ended"`
	SchedulerRPCInProgress bool         `json:"scheduler_rpc_in_progress"`
	SchedRPCPending        int          `json:"sched_rpc_pending"`
	RPCFailures            int          `json:"rpc_failures"`
	DeferredUntil          time.Time    `json:"deferred_until,omitzero"`
	RscBackoffs            []backoffDoc `json:"rsc_backoffs"`
	Status                 []string     `json:"status"`
	Source                 string       `json:"source,omitempty"`
}

type taskDoc struct {
	Name            string    `json:"name"`
	Project         string    `json:"project"`
	ProjectURL      string    `json:"project_url"`
	App             string    `json:"app,omitempty"`
	State           string    `json:"state"`
	ResultState     string    `json:"result_state"`
	ActiveTaskState string    `json:"active_task_state,omitempty"`
	SchedulerState  string    `json:"scheduler_state,omitempty"`
	FractionDone    float64   `json:"fraction_done"`
	ElapsedSecs     float64   `json:"elapsed_secs"`
	RemainingSecs   float64   `json:"remaining_secs"`
	Deadline        time.Time `json:"deadline,omitzero"`
	Received        time.Time `json:"received,omitzero"`
	Slot            int       `json:"slot"`
	PID             int       `json:"pid,omitempty"`
	ExitStatus      int       `json:"exit_status"`
	ReadyToReport   bool      `json:"ready_to_report"`
	SuspendedViaGUI bool      `json:"suspended_via_gui"`
}

type transferDoc struct {
	File       string    `json:"file"`
	Project    string    `json:"project"`
	ProjectURL string    `json:"project_url"`
	Direction  string    `json:"direction"`
	BytesDone  float64   `json:"bytes_done"`
	BytesTotal float64   `json:"bytes_total"`
	Active     bool      `json:"active"`
	Speed      float64   `json:"speed_bytes_per_sec"`
	Retries    int       `json:"retries"`
	NextTry    time.Time `json:"next_try,omitzero"`
	Status     int       `json:"status"`
}

type notFetchInfo struct {
	Project  string    `json:"project"`
	Resource string    `json:"resource"`
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time,omitzero"`
	Seqno    int       `json:"seqno"`
}

func buildStatus(addr string, now time.Time, cc *client.CCStatus, st *client.State, xfers []client.FileTransfer, nf []notFetchInfo) *statusDoc {
	doc := &statusDoc{
		Address: addr,
		Time:    now,
		Client: clientDoc{
			Version:           st.CoreClientVersion.String(),
			Platform:          st.PlatformName,
			AltPlatforms:      altPlatforms(st.PlatformName, st.Platforms),
			HostName:          st.HostInfo.DomainName,
			NCPUs:             st.HostInfo.PNCPUs,
			ExecutingAsDaemon: st.ExecutingAsDaemon,
		},
		NetworkStatus: cc.NetworkStatus.String(),
		Health:        append([]client.HealthWarning{}, cc.Health...),
		CPU:           mode(cc.TaskMode, cc.TaskModePerm, cc.TaskModeDelay, cc.TaskSuspendReason),
		GPU:           mode(cc.GPUMode, cc.GPUModePerm, cc.GPUModeDelay, cc.GPUSuspendReason),
		Network:       mode(cc.NetworkMode, cc.NetworkModePerm, cc.NetworkModeDelay, cc.NetworkSuspendReason),
		Projects:      []projectDoc{},
		Tasks:         []taskDoc{},
		Transfers:     []transferDoc{},
		NotFetching:   nf,
	}
	if doc.NotFetching == nil {
		doc.NotFetching = []notFetchInfo{}
	}
	names := map[string]string{}
	for i := range st.Projects {
		names[st.Projects[i].MasterURL] = st.Projects[i].DisplayName()
	}
	projectName := func(url string) string {
		if n, ok := names[url]; ok {
			return n
		}
		return url
	}
	// The event log names a project by its URL until it knows its name.
	for i := range doc.NotFetching {
		doc.NotFetching[i].Project = projectName(doc.NotFetching[i].Project)
	}
	sort.SliceStable(doc.NotFetching, func(i, j int) bool {
		a, b := doc.NotFetching[i], doc.NotFetching[j]
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		return a.Resource < b.Resource
	})
	tasks, running := map[string]int{}, map[string]int{}
	for i := range st.Results {
		r := &st.Results[i]
		state := taskState(r, cc)
		tasks[r.ProjectURL]++
		if state == "running" {
			running[r.ProjectURL]++
		}
		t := taskDoc{
			Name:            r.Name,
			Project:         projectName(r.ProjectURL),
			ProjectURL:      r.ProjectURL,
			App:             r.AppName,
			State:           state,
			ResultState:     r.State.String(),
			FractionDone:    r.FractionDone,
			ElapsedSecs:     r.ElapsedTime.Seconds(),
			RemainingSecs:   r.EstimatedCPUTimeRemaining.Seconds(),
			Deadline:        r.ReportDeadline,
			Received:        r.ReceivedTime,
			Slot:            r.Slot,
			PID:             r.PID,
			ExitStatus:      r.ExitStatus,
			ReadyToReport:   r.ReadyToReport,
			SuspendedViaGUI: r.SuspendedViaGUI,
		}
		if r.HasActiveTask {
			t.ActiveTaskState = r.ActiveTaskState.String()
			t.SchedulerState = r.SchedulerState.String()
		}
		if r.State >= boinc.ResultComputeError {
			t.FractionDone = 1
			t.ElapsedSecs = r.FinalElapsedTime.Seconds()
			t.RemainingSecs = 0
		}
		doc.Tasks = append(doc.Tasks, t)
	}
	for i := range st.Projects {
		p := &st.Projects[i]
		d := projectDoc{
			Name:                   p.DisplayName(),
			URL:                    p.MasterURL,
			Tasks:                  tasks[p.MasterURL],
			TasksRunning:           running[p.MasterURL],
			ResourceShare:          p.ResourceShare,
			UserTotalCredit:        p.UserTotalCredit,
			UserExpavgCredit:       p.UserExpavgCredit,
			HostTotalCredit:        p.HostTotalCredit,
			HostExpavgCredit:       p.HostExpavgCredit,
			Suspended:              p.SuspendedViaGUI,
			NoNewTasks:             p.DontRequestMoreWork,
			DetachWhenDone:         p.DetachWhenDone,
			Ended:                  p.Ended,
			SchedulerRPCInProgress: p.SchedulerRPCInProgress,
			SchedRPCPending:        p.SchedRPCPending,
			RPCFailures:            p.NRPCFailures,
			RscBackoffs:            []backoffDoc{},
		}
		if p.MinRPCTime.After(now) {
			d.DeferredUntil = p.MinRPCTime
		}
		for _, b := range p.RscBackoffs {
			if b.Until.After(now) {
				d.RscBackoffs = append(d.RscBackoffs, backoffDoc{Resource: b.Resource, Until: b.Until})
			}
		}
		d.Status = projectStatus(&d, now)
		doc.Projects = append(doc.Projects, d)
	}
	for _, x := range xfers {
		dir := "down"
		if x.IsUpload {
			dir = "up"
		}
		name := x.ProjectName
		if name == "" {
			name = projectName(x.ProjectURL)
		}
		doc.Transfers = append(doc.Transfers, transferDoc{
			File:       x.Name,
			Project:    name,
			ProjectURL: x.ProjectURL,
			Direction:  dir,
			BytesDone:  x.BytesXferred,
			BytesTotal: x.NBytes,
			Active:     x.Active,
			Speed:      x.XferSpeed,
			Retries:    x.NumRetries,
			NextTry:    x.NextRequestTime,
			Status:     x.Status,
		})
	}
	return doc
}

func mode(cur, perm boinc.RunMode, delay time.Duration, reason client.SuspendReason) modeDoc {
	m := modeDoc{
		Mode:              cur.String(),
		PermMode:          perm.String(),
		ModeExpiresInSecs: delay.Seconds(),
		Suspended:         reason != 0,
		SuspendReason:     int(reason),
		SuspendReasons:    reason.Words(),
	}
	if m.SuspendReasons == nil {
		m.SuspendReasons = []string{}
	}
	return m
}

// taskState is the one-word state of the task list, in the spirit of the
// BOINC Manager's status column.
func taskState(r *client.Result, cc *client.CCStatus) string {
	switch r.State {
	case boinc.ResultNew:
		return "new"
	case boinc.ResultFilesDownloading:
		if r.ReadyToReport {
			return "error"
		}
		return "downloading"
	case boinc.ResultComputeError, boinc.ResultUploadFailed:
		return "error"
	case boinc.ResultAborted:
		return "aborted"
	case boinc.ResultFilesUploading:
		if r.ReadyToReport {
			return "error"
		}
		return "uploading"
	case boinc.ResultFilesUploaded:
		return "ready to report"
	case boinc.ResultFilesDownloaded:
	default:
		return r.State.String()
	}
	switch {
	case r.SuspendedViaGUI, r.ProjectSuspendedViaGUI:
		return "suspended"
	case r.HasActiveTask && cc.TaskSuspendReason != 0:
		return "suspended"
	case r.CoprocMissing:
		return "GPU missing"
	case r.HasActiveTask && r.SchedulerState == boinc.SchedScheduled && r.ActiveTaskState == boinc.TaskExecuting:
		return "running"
	case r.HasActiveTask && r.ActiveTaskState == boinc.TaskSuspended, r.HasActiveTask && r.SchedulerState == boinc.SchedPreempted:
		return "waiting to run"
	case r.SchedulerWait, r.NetworkWait:
		return "waiting"
	case r.HasActiveTask:
		return "starting"
	}
	return "ready to run"
}

func projectStatus(d *projectDoc, now time.Time) []string {
	out := []string{}
	if d.Suspended {
		out = append(out, "suspended")
	}
	if d.NoNewTasks {
		out = append(out, "no new tasks")
	}
	if d.DetachWhenDone {
		out = append(out, "detaching")
	}
	if d.Ended {
		out = append(out, "ended")
	}
	if d.SchedulerRPCInProgress {
		out = append(out, "scheduler request in progress")
	} else if d.SchedRPCPending != 0 {
		out = append(out, "scheduler request pending")
	}
	if !d.DeferredUntil.IsZero() {
		out = append(out, "backoff "+shortDur(d.DeferredUntil.Sub(now)))
	}
	if d.RPCFailures > 0 {
		out = append(out, fmt.Sprintf("%d RPC failures", d.RPCFailures))
	}
	for _, b := range d.RscBackoffs {
		out = append(out, b.Resource+" backoff "+shortDur(b.Until.Sub(now)))
	}
	return out
}

// notFetchingSet keeps the newest "not requesting work" message per
// project and resource. boincd logs
//
//	Not requesting work resource=CPU reason="..."   (project from the record)
//
// once each time the reason changes; the C++ client writes "Not requesting
// tasks: REASON". A later request for work for the same project and
// resource (boincd: "Sending scheduler request … cpu_req_secs=N" with N > 0;
// C++: "Requesting new tasks for CPU") makes the entry stale, so it is
// dropped.
type notFetchingSet struct {
	m map[string]notFetchInfo
}

func (s *notFetchingSet) add(m client.Message) {
	body := m.Body
	low := strings.ToLower(body)
	switch {
	case strings.HasPrefix(low, "not requesting work"), strings.HasPrefix(low, "not requesting tasks"):
		kv := parseKV(body)
		info := notFetchInfo{Project: m.Project, Resource: kv["resource"], Reason: kv["reason"], Time: m.Time, Seqno: m.Seqno}
		if info.Project == "" {
			info.Project = kv["project"]
		}
		if info.Reason == "" {
			if i := strings.Index(body, ":"); i >= 0 {
				info.Reason = strings.TrimSpace(body[i+1:])
			}
		}
		if info.Reason == "" {
			info.Reason = "unknown"
		}
		if s.m == nil {
			s.m = map[string]notFetchInfo{}
		}
		s.m[info.Project+"\x00"+info.Resource] = info
	case strings.HasPrefix(low, "sending scheduler request"):
		if v, err := strconv.ParseFloat(parseKV(body)["cpu_req_secs"], 64); err == nil && v > 0 {
			s.drop(m.Project, "CPU")
		}
	case strings.HasPrefix(low, "requesting new tasks"):
		rest := strings.TrimSpace(body[len("requesting new tasks"):])
		rest = strings.TrimPrefix(rest, "for ")
		for _, r := range strings.Split(rest, " and ") {
			s.drop(m.Project, strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(r), " GPU")))
		}
	}
}

// drop forgets entries for the resource, and the resource-less ones (C++
// wording) of the project.
func (s *notFetchingSet) drop(project, rsc string) {
	for k, v := range s.m {
		if v.Project == project && (v.Resource == "" || strings.EqualFold(v.Resource, rsc)) {
			delete(s.m, k)
		}
	}
}

func (s *notFetchingSet) list() []notFetchInfo {
	out := make([]notFetchInfo, 0, len(s.m))
	for _, v := range s.m {
		out = append(out, v)
	}
	return out
}

// parseKV reads the key=value attributes the event log appends (values
// Go-quoted when they contain spaces).
func parseKV(s string) map[string]string {
	out := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			break
		}
		key := s[:eq]
		if i := strings.LastIndexByte(key, ' '); i >= 0 {
			key = key[i+1:]
		}
		rest := s[eq+1:]
		var val string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				val, rest = strings.Trim(rest, `"`), ""
			} else {
				val, _ = strconv.Unquote(q)
				rest = rest[len(q):]
			}
		} else {
			end := strings.IndexByte(rest, ' ')
			if end < 0 {
				end = len(rest)
			}
			val, rest = rest[:end], rest[end:]
		}
		if key != "" {
			out[key] = val
		}
		s = rest
	}
	return out
}

// renderStatus is the human view.
// altPlatforms is get_state's platform list without the primary one.
func altPlatforms(primary string, all []string) []string {
	var out []string
	for _, p := range all {
		if p != primary {
			out = append(out, p)
		}
	}
	return out
}

func renderStatus(w io.Writer, d *statusDoc, loc *time.Location) error {
	bw := bufio.NewWriter(w)
	host := d.Client.HostName
	if host == "" {
		host = "?"
	}
	plat := strings.Join(append([]string{d.Client.Platform}, d.Client.AltPlatforms...), " + ")
	fmt.Fprintf(bw, "BOINC client %s at %s (%s, host %s, %d CPUs)\n", d.Client.Version, d.Address, plat, host, d.Client.NCPUs)
	fmt.Fprintf(bw, "  as of %s, network: %s\n", d.Time.In(loc).Format("2006-01-02 15:04:05 MST"), d.NetworkStatus)
	if d.WebUI != "" {
		fmt.Fprintf(bw, "  %-8s %s\n", "Web UI:", d.WebUI)
	}
	for _, m := range []struct {
		name string
		m    modeDoc
	}{{"CPU", d.CPU}, {"GPU", d.GPU}, {"Network", d.Network}} {
		fmt.Fprintf(bw, "  %-8s %s\n", m.name+":", modeLine(m.m))
	}
	if d.Containers.Type != "" {
		fmt.Fprintf(bw, "  %-8s %s\n", "Docker:", d.Containers)
	}
	for _, h := range d.Health {
		fmt.Fprintf(bw, "  WARNING %s: %s (since %s)\n", h.Name, h.Message, h.Since.In(loc).Format("2006-01-02 15:04"))
	}

	fmt.Fprintf(bw, "\nPROJECTS (%d)\n", len(d.Projects))
	if len(d.Projects) == 0 {
		fmt.Fprintln(bw, "  none attached")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tURL\tSOURCE\tTASKS\tCREDIT user/host (avg)\tSTATUS")
		for _, p := range d.Projects {
			status := strings.Join(p.Status, ", ")
			if status == "" {
				status = "ok"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%d (%d running)\t%s/%s (%s)\t%s\n", trimTo(p.Name, 32), p.URL, sourceText(p.Source), p.Tasks, p.TasksRunning,
				credit(p.UserTotalCredit), credit(p.HostTotalCredit), credit(p.HostExpavgCredit), status)
		}
		_ = tw.Flush()
	}

	fmt.Fprintf(bw, "\nTASKS (%d)\n", len(d.Tasks))
	if len(d.Tasks) == 0 {
		fmt.Fprintln(bw, "  none")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  NAME\tPROJECT\tSTATE\tPROGRESS\tELAPSED\tLEFT\tDEADLINE")
		for _, t := range d.Tasks {
			deadline := "-"
			if !t.Deadline.IsZero() {
				deadline = t.Deadline.In(loc).Format("Jan 02 15:04") + " (" + relative(t.Deadline.Sub(d.Time)) + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", trimTo(t.Name, 40), trimTo(t.Project, 24), t.State,
				progressBar(t.FractionDone), clock(t.ElapsedSecs), clock(t.RemainingSecs), deadline)
		}
		_ = tw.Flush()
	}

	fmt.Fprintf(bw, "\nTRANSFERS (%d)\n", len(d.Transfers))
	if len(d.Transfers) == 0 {
		fmt.Fprintln(bw, "  none")
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  FILE\tPROJECT\tDIR\tBYTES\tSPEED\tRETRIES\tNEXT TRY")
		for _, x := range d.Transfers {
			speed, next := "-", "-"
			if x.Active {
				speed = bytesize(x.Speed) + "/s"
			}
			if !x.NextTry.IsZero() && x.NextTry.After(d.Time) && !x.Active {
				next = relative(x.NextTry.Sub(d.Time))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s / %s\t%s\t%d\t%s\n", trimTo(x.File, 40), trimTo(x.Project, 24), x.Direction,
				bytesize(x.BytesDone), bytesize(x.BytesTotal), speed, x.Retries, next)
		}
		_ = tw.Flush()
	}

	if d.ConfigSources != nil {
		fmt.Fprintln(bw, "\nCONFIG (set values and where they came from; everything else is the default)")
		if len(d.ConfigSources) == 0 {
			fmt.Fprintln(bw, "  all defaults")
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, c := range d.ConfigSources {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.Name, trimTo(c.Value, 60), c.Source)
		}
		_ = tw.Flush()
	}

	fmt.Fprintln(bw, "\nWHY NO WORK IS BEING FETCHED")
	if len(d.NotFetching) == 0 {
		fmt.Fprintln(bw, `  no "not requesting work" messages in the event log`)
	} else {
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		for _, n := range d.NotFetching {
			rsc := n.Resource
			if rsc == "" {
				rsc = "all"
			}
			when := ""
			if !n.Time.IsZero() {
				when = " (" + age(d.Time.Sub(n.Time)) + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s%s\n", trimTo(n.Project, 32), rsc, n.Reason, when)
		}
		_ = tw.Flush()
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

func modeLine(m modeDoc) string {
	s := m.Mode
	if m.Mode != m.PermMode && m.ModeExpiresInSecs > 0 {
		s += fmt.Sprintf(" for %s, then %s", shortDur(time.Duration(m.ModeExpiresInSecs*float64(time.Second))), m.PermMode)
	}
	if m.Suspended {
		s += "; suspended: " + strings.Join(m.SuspendReasons, ", ")
	} else {
		s += "; not suspended"
	}
	return s
}

func progressBar(f float64) string {
	if math.IsNaN(f) || f < 0 {
		f = 0
	}
	if f > 1 {
		f = 1
	}
	const width = 20
	n := int(math.Round(f * width))
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", width-n) + "] " + fmt.Sprintf("%5.1f%%", f*100)
}

// clock formats seconds as H:MM:SS (with days beyond 24 h), like the
// BOINC Manager's task list.
func clock(secs float64) string {
	if math.IsNaN(secs) || secs <= 0 {
		return "-"
	}
	if secs > 1e9 {
		return "∞"
	}
	t := int64(math.Round(secs))
	d, h, m, s := t/86400, t/3600%24, t/60%60, t%60
	if d > 0 {
		return fmt.Sprintf("%dd %02d:%02d:%02d", d, h, m, s)
	}
	return fmt.Sprintf("%d:%02d:%02d", h, m, s)
}

// shortDur is a duration in its two largest units, e.g. "6d 23h", "4m 10s".
func shortDur(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s >= 86400:
		return fmt.Sprintf("%dd %dh", s/86400, s/3600%24)
	case s >= 3600:
		return fmt.Sprintf("%dh %dm", s/3600, s/60%60)
	case s >= 60:
		return fmt.Sprintf("%dm %ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

func relative(d time.Duration) string {
	if d >= 0 {
		return "in " + shortDur(d)
	}
	return shortDur(d) + " ago"
}

// age says how long ago something was logged; a message stamped after the
// client's "now" (clock skew between log and state) is "just now".
func age(d time.Duration) string {
	if d < time.Second {
		return "just now"
	}
	return shortDur(d) + " ago"
}

func bytesize(b float64) string {
	if math.IsNaN(b) || b < 0 {
		b = 0
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%.0f %s", b, units[i])
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

func credit(c float64) string {
	if c >= 1e6 {
		return fmt.Sprintf("%.2fM", c/1e6)
	}
	if c >= 1e4 {
		return fmt.Sprintf("%.0f", c)
	}
	return fmt.Sprintf("%.2f", c)
}

// trimTo shortens s to n runes, marking the cut with "…".
func trimTo(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
