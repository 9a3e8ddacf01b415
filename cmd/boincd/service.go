package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/winsvc"
)

// "boincd service ..." runs boincd as a Windows service (winsvc). The
// argument handling and the daemon's construction are here, untagged, so
// they are tested on Linux; service_windows.go does the Windows calls and
// service_other.go refuses elsewhere.

// serviceInstall is what "boincd service install" was asked to do.
type serviceInstall struct {
	dir, configPath string
	account         winsvc.Account
	password        string
	passwordGiven   bool
	manual          bool
}

// parseServiceInstall parses install's flags; getenv locates ProgramData.
// Paths must be absolute Windows paths: the SCM starts the service in
// System32, where a relative path would land.
func parseServiceInstall(args []string, getenv func(string) string, stderr io.Writer) (serviceInstall, error) {
	fs := flag.NewFlagSet("boincd service install", flag.ContinueOnError)
	fs.SetOutput(stderr)
	layout := winsvc.NewLayout(getenv)
	var req serviceInstall
	var user string
	fs.StringVar(&req.dir, "dir", layout.Dir, "data directory (state, projects, slots, config)")
	fs.StringVar(&req.configPath, "config", "", "config file (default DIR\\"+config.FileName+")")
	fs.StringVar(&user, "user", "", `account to run as: empty for NT SERVICE\boincd, LocalSystem, LocalService, NetworkService, or a user (.\name, DOMAIN\name)`)
	fs.StringVar(&req.password, "password", "", "the user account's password (asked for when omitted)")
	fs.BoolVar(&req.manual, "manual", false, "start only when asked (default: automatic, delayed after boot)")
	if err := fs.Parse(args); err != nil {
		return serviceInstall{}, err
	}
	if fs.NArg() > 0 {
		return serviceInstall{}, fmt.Errorf("service install: unexpected argument %q", fs.Arg(0))
	}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "password" {
			req.passwordGiven = true
		}
	})
	if !winsvc.IsAbsWindowsPath(req.dir) {
		return serviceInstall{}, fmt.Errorf("service install: --dir %q is not an absolute Windows path (like C:\\ProgramData\\boincd)", req.dir)
	}
	if req.configPath != "" && !winsvc.IsAbsWindowsPath(req.configPath) {
		return serviceInstall{}, fmt.Errorf("service install: --config %q is not an absolute Windows path", req.configPath)
	}
	acct, err := winsvc.ParseAccount(user, winsvc.Name)
	if err != nil {
		return serviceInstall{}, fmt.Errorf("service install: --user: %w", err)
	}
	req.account = acct
	if req.passwordGiven && !acct.NeedsPassword {
		return serviceInstall{}, fmt.Errorf("service install: %s (%s) has no password; drop --password", acct.StartName, acct.Kind)
	}
	return req, nil
}

// parseServiceRun parses the flags the installed command line carries.
func parseServiceRun(args []string, getenv func(string) string, stderr io.Writer) (dir, configPath string, err error) {
	fs := flag.NewFlagSet("boincd service run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&dir, "dir", winsvc.NewLayout(getenv).Dir, "data directory")
	fs.StringVar(&configPath, "config", "", "config file (default DIR\\"+config.FileName+")")
	if err := fs.Parse(args); err != nil {
		return "", "", err
	}
	if fs.NArg() > 0 {
		return "", "", fmt.Errorf("service run: unexpected argument %q", fs.Arg(0))
	}
	return dir, configPath, nil
}

// newServiceDaemon builds the daemon the way runDaemon does for
// "--dir dir --config configPath" and no other flags: the config file
// decides the rest. handlerFor makes the log handler once the config's
// [log] section is known (the event log under the SCM).
func newServiceDaemon(dir, configPath string, getenv func(string) string, handlerFor func(config.Log) slog.Handler) (winsvc.Runner, error) {
	cfgPath := configPath
	if cfgPath == "" {
		cfgPath = filepath.Join(dir, config.FileName)
	}
	cfg, err := config.Load(cfgPath, configPath == "", getenv)
	if err != nil {
		return nil, err
	}
	logger := slog.New(handlerFor(cfg.Log))
	opt := daemonOptions(dir, cfgPath, cfg, logger)
	opt.Getenv = getenv
	d, err := daemon.New(opt)
	if err != nil {
		return nil, fmt.Errorf("daemon in %s: %w", dir, err)
	}
	return daemonRunner{d}, nil
}

// logLevel is the config's level, Info when unset or unknown (as newLogger).
func logLevel(c config.Log) slog.Level {
	var level slog.Level
	_ = level.UnmarshalText([]byte(c.Level))
	return level
}

// daemonRunner adapts the daemon to winsvc.Runner: exit_when_idle ending
// the daemon is a clean stop, not a failure the SCM should restart.
type daemonRunner struct{ d *daemon.Daemon }

func (r daemonRunner) Run(ctx context.Context) error {
	if err := r.d.Run(ctx); err != nil && !errors.Is(err, daemon.ErrIdle) {
		return err
	}
	return nil
}

func (r daemonRunner) Reload() { r.d.Reload() }

// installedCommandLine is what "boincd service install" shows, and the
// SCM will run.
func installedCommandLine(exe string, req serviceInstall) (string, error) {
	return winsvc.CommandLine(exe, winsvc.RunArgs(req.dir, req.configPath))
}

// serviceSubcommand splits "service" arguments into the action and its
// flags; help variants are reported as "help".
func serviceSubcommand(args []string) (string, []string) {
	if len(args) == 0 {
		return "", nil
	}
	switch strings.TrimLeft(args[0], "-") {
	case "help", "h":
		return "help", args[1:]
	}
	return args[0], args[1:]
}

// writeSkipped tells what an install or uninstall left out; the action
// still succeeded (winsvc.Skipped).
func writeSkipped(w io.Writer, skipped []winsvc.Skipped) {
	for _, s := range skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
}
