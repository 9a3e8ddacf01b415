// Command boincd is a BOINC-compatible volunteer-computing client daemon.
//
//	boincd [--dir DIR] [flags]        run the client (same as "boincd run")
//	boincd probe [--json] [--benchmark]  print what the host probe finds
//	boincd status                     show a running client
//	boincd import BOINC_DIR           take over a C++ BOINC client's data directory
//	boincd service install|...        Windows service
//	boincd version
//
// It accepts the C++ client's flags where they overlap, so service units
// and container images can swap the binary. The demo (a built-in project
// on loopback) is a separate command, boincd-demo, and so are the client
// emulator and the policy study, boincd-sim: the daemon's binary is
// resident in memory as a whole while it runs, so it carries only what
// the daemon runs.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/logjournal"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	sub, rest := "run", args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		sub, rest = rest[0], rest[1:]
	}
	switch sub {
	case "run":
		return runDaemon(rest, stderr)
	case "demo":
		// Moved, as "simulate": exit 2 so that scripts notice.
		fmt.Fprintln(stderr, "boincd: \"demo\" moved to its own command: boincd-demo (go run ./cmd/boincd-demo)")
		return 2
	case "probe":
		return runProbe(rest, stdout, stderr)
	case "simulate", "sweep":
		return runMovedToSim(sub, rest, stderr)
	case "status":
		return runStatus(rest, stdout, stderr)
	case "import":
		return runImport(rest, stdout, stderr)
	case "service":
		return runService(rest, stdout, stderr)
	case "reset-state":
		return runResetState(rest, stdout, stderr)
	case "version", "--version":
		fmt.Fprintf(stdout, "boincd %d.%d.%d (BOINC client protocol)\n", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease)
		return 0
	case "help":
		usage(stdout)
		return 0
	}
	fmt.Fprintf(stderr, "boincd: unknown command %q\n", sub)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  boincd [run] [--dir DIR] [--config FILE] [flags]   run the client
  boincd probe [--json] [--xml] [--benchmark] [--dir DIR]  show what the host probe finds
  boincd status [--host HOST[:PORT]] [--passwd P] [--dir DIR] [--json] [--watch SECONDS]  show a running client
  boincd import BOINC_DIR [--dir DIR] [--config FILE] [--dry_run]  take over a C++ BOINC client's data directory
  boincd reset-state [--dir DIR]                     start fresh: move the state file aside (see --help)
  boincd service install|uninstall|start|stop|run [flags]  run as a Windows service (winsvc/README.md)
  boincd version
Run "boincd run --help" for the daemon's flags. The demo is boincd-demo
(go run ./cmd/boincd-demo); the client emulator and the policy study are
boincd-sim (sim/README.md).
`)
}

// runFlags are the daemon's flags; names follow the C++ client.
type runFlags struct {
	dir, configPath      string
	guiRPCPort           int
	guiRPCPortSet        bool // --gui_rpc_port given (0 = any free port)
	allowRemoteGUIRPC    bool
	noGPUs, exitWhenIdle bool
	skipBenchmarks       bool
	logLevel, logFormat  string
	ignoredCompatibility bool
	unsignedAppsOK       bool
	allowRootApps        bool
	stopTimeout          time.Duration
}

func runDaemon(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	fs.StringVar(&f.dir, "dir", ".", "data directory (state, projects, slots, config)")
	fs.StringVar(&f.configPath, "config", "", "config file (default DIR/"+config.FileName+")")
	fs.IntVar(&f.guiRPCPort, "gui_rpc_port", 0, "GUI RPC port (default 31416)")
	fs.BoolVar(&f.allowRemoteGUIRPC, "allow_remote_gui_rpc", false, "accept GUI RPC connections from other hosts")
	fs.BoolVar(&f.noGPUs, "no_gpus", false, "do not use any GPU")
	fs.BoolVar(&f.exitWhenIdle, "exit_when_idle", false, "exit when there are no tasks left and no project gives more")
	fs.BoolVar(&f.skipBenchmarks, "skip_cpu_benchmarks", false, "do not run CPU benchmarks (use 1 GFLOPS/GIOPS if none were run before)")
	fs.StringVar(&f.logLevel, "log_level", "", "debug, info, warn or error (overrides the config)")
	fs.StringVar(&f.logFormat, "log_format", "", "text, json, journal or auto (overrides the config)")
	fs.DurationVar(&f.stopTimeout, "stop_timeout", 60*time.Second, "on SIGTERM, how long to wait for tasks to quit at a checkpoint before killing them (a second SIGTERM stops at once)")
	// Flags of the C++ client that only make sense for its own process
	// model; boincd never forks or redirects, a service manager does.
	fs.BoolVar(&f.unsignedAppsOK, "unsigned_apps_ok", false, "accept app files without the project's code signature (testing only)")
	fs.BoolVar(&f.allowRootApps, "allow_root_apps", false, "run science apps as root when boincd runs as root without app_user (config allow_root_apps; refused by default)")
	for _, name := range []string{"daemon", "redirectio", "check_all_logins", "no_priority_change", "no_info_fetch"} {
		fs.BoolVar(&f.ignoredCompatibility, name, false, "accepted for compatibility with the C++ client; no effect")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	cfgPath := f.configPath
	if cfgPath == "" {
		cfgPath = filepath.Join(f.dir, config.FileName)
	}
	fs.Visit(func(fl *flag.Flag) { f.guiRPCPortSet = f.guiRPCPortSet || fl.Name == "gui_rpc_port" })
	// Flags that change the config go in as environment overrides, so
	// they also hold for the config the daemon reads itself and re-reads
	// on SIGHUP.
	flagEnv := map[string]string{}
	if f.allowRootApps {
		flagEnv["BOINCD_ALLOW_ROOT_APPS"] = "true"
	}
	if f.unsignedAppsOK {
		flagEnv["BOINCD_UNSIGNED_APPS_OK"] = "true"
	}
	if f.allowRemoteGUIRPC {
		flagEnv["BOINCD_GUI_RPC_ALLOW_REMOTE"] = "true"
	}
	if f.guiRPCPortSet {
		flagEnv["BOINCD_GUI_RPC_ADDRESS"] = fmt.Sprintf("127.0.0.1:%d", f.guiRPCPort)
	}
	getenv := func(k string) string {
		if v, ok := flagEnv[k]; ok {
			return v
		}
		return os.Getenv(k)
	}
	defer tuneRuntime(os.Getenv)()
	cfg, err := config.Load(cfgPath, f.configPath == "", getenv)
	if err != nil {
		fmt.Fprintln(stderr, "boincd:", err)
		return 1
	}
	if f.logLevel != "" {
		cfg.Log.Level = f.logLevel
	}
	if f.logFormat != "" {
		cfg.Log.Format = f.logFormat
	}
	logger := newLogger(stderr, cfg.Log)
	dir := f.dir
	if cfg.DataDir != "" && f.dir == "." {
		dir = cfg.DataDir
	}
	opt := daemonOptions(dir, cfgPath, cfg, logger)
	opt.Getenv = getenv
	opt.ExitWhenIdle = opt.ExitWhenIdle || f.exitWhenIdle
	opt.NoGPUs = opt.NoGPUs || f.noGPUs
	if f.skipBenchmarks {
		opt.BenchmarkDuration = -1
	}
	opt.StopTimeout = f.stopTimeout
	opt.Notifier, opt.WatchdogInterval = systemdNotifier()
	d, err := daemon.New(opt)
	if err != nil {
		logger.Error("cannot start", slog.Any("err", err))
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go handleSignals(sigs, done, cancel, d, logger)
	if err := d.Run(ctx); err != nil && !errors.Is(err, daemon.ErrIdle) {
		logger.Error("boincd stopped with an error", slog.Any("err", err))
		return 1
	}
	return 0
}

// daemonOptions is what every way of running the daemon (the command
// line, the Windows service) derives from the config alone; callers add
// their own flags on top.
func daemonOptions(dir, cfgPath string, cfg *config.Config, logger *slog.Logger) daemon.Options {
	return daemon.Options{
		DataDir:      dir,
		ConfigPath:   cfgPath,
		Logger:       logger,
		ExitWhenIdle: cfg.ExitWhenIdle,
		NoGPUs:       cfg.NoGPUs,
	}
}

// newLogger: text on a terminal, JSON under a service manager (systemd
// sets JOURNAL_STREAM / INVOCATION_ID), unless the config says otherwise.
func newLogger(w io.Writer, c config.Log) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	opts := &slog.HandlerOptions{Level: level}
	format := c.Format
	if format == "" || format == "auto" {
		format = "text"
		if os.Getenv("JOURNAL_STREAM") != "" || os.Getenv("INVOCATION_ID") != "" {
			format = "json"
		}
	}
	if (c.Format == "" || c.Format == "auto") && logjournal.Usable() {
		// Under systemd: native journal entries, attributes as fields.
		format = "journal"
	}
	switch format {
	case "journal":
		return slog.New(logjournal.New(nil, level, "boincd"))
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
