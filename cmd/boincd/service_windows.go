//go:build windows

package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc/eventlog"

	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/winsvc"
)

// How long the CLI waits for the service to change state. Stopping covers
// the daemon's graceful stop (winsvc.DefaultStopWaitHint) with margin.
const (
	serviceStartTimeout = 2 * time.Minute
	serviceStopTimeout  = 3 * time.Minute
)

const serviceUsageText = `usage:
  boincd service install [--dir DIR] [--config FILE] [--user ACCOUNT [--password P]] [--manual]
  boincd service uninstall
  boincd service start
  boincd service stop
  boincd service run [--dir DIR] [--config FILE]   (what the service manager starts)
DIR defaults to %ProgramData%\boincd. ACCOUNT defaults to the virtual account
NT SERVICE\boincd; a user account (.\name, DOMAIN\name, name@domain) needs its
password, asked for when --password is not given. See winsvc/README.md.
`

func serviceUsage(w io.Writer) { fmt.Fprint(w, serviceUsageText) }

func runService(args []string, stdout, stderr io.Writer) int {
	sub, rest := serviceSubcommand(args)
	switch sub {
	case "install":
		return serviceInstallCmd(rest, stdout, stderr)
	case "uninstall":
		return serviceCtl(rest, stdout, stderr, "uninstalled", serviceStopTimeout, winsvc.Uninstall)
	case "start":
		return serviceCtl(rest, stdout, stderr, "started", serviceStartTimeout, noneSkipped(winsvc.Start))
	case "stop":
		return serviceCtl(rest, stdout, stderr, "stopped", serviceStopTimeout, noneSkipped(winsvc.Stop))
	case "run":
		return serviceRunCmd(rest, stderr)
	case "help":
		serviceUsage(stdout)
		return 0
	case "":
		serviceUsage(stderr)
		return 2
	}
	fmt.Fprintf(stderr, "boincd service: unknown action %q\n", sub)
	serviceUsage(stderr)
	return 2
}

func serviceInstallCmd(args []string, stdout, stderr io.Writer) int {
	req, err := parseServiceInstall(args, os.Getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "boincd:", err)
		return 2
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.Abs(exe)
	}
	if err != nil {
		fmt.Fprintln(stderr, "boincd: service install: locate boincd.exe:", err)
		return 1
	}
	if req.account.NeedsPassword && !req.passwordGiven {
		req.password, err = readPassword(stderr, fmt.Sprintf("Password for %s: ", req.account.StartName))
		if err != nil {
			fmt.Fprintln(stderr, "boincd: service install:", err)
			return 1
		}
	}
	cmdline, err := installedCommandLine(exe, req)
	if err != nil {
		fmt.Fprintln(stderr, "boincd:", err)
		return 2
	}
	skipped, err := winsvc.Install(exe, winsvc.RunArgs(req.dir, req.configPath), winsvc.InstallOptions{
		Account:     req.account,
		Password:    req.password,
		DataDir:     req.dir,
		ManualStart: req.manual,
	})
	if err != nil {
		fmt.Fprintln(stderr, "boincd:", err)
		return 1
	}
	fmt.Fprintf(stdout, "installed service %s running as %s:\n  %s\nconfig: %s\n",
		winsvc.Name, req.account.StartName, cmdline, configPathFor(req))
	writeSkipped(stdout, skipped)
	fmt.Fprintln(stdout, "start it with: boincd service start")
	return 0
}

func configPathFor(req serviceInstall) string {
	if req.configPath != "" {
		return req.configPath
	}
	return filepath.Join(req.dir, config.FileName)
}

// noneSkipped adapts an action that has no optional parts to serviceCtl.
func noneSkipped(f func(context.Context) error) func(context.Context) ([]winsvc.Skipped, error) {
	return func(ctx context.Context) ([]winsvc.Skipped, error) { return nil, f(ctx) }
}

func serviceCtl(args []string, stdout, stderr io.Writer, done string, timeout time.Duration, f func(context.Context) ([]winsvc.Skipped, error)) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "boincd service: unexpected argument %q\n", args[0])
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	skipped, err := f(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "boincd:", err)
		return 1
	}
	fmt.Fprintf(stdout, "service %s %s\n", winsvc.Name, done)
	writeSkipped(stdout, skipped)
	return 0
}

// serviceRunCmd is what the SCM starts. Logs go to the Application event
// log; run from a console (svc/debug mode, to try the service path) they
// go to stderr as with "boincd run".
func serviceRunCmd(args []string, stderr io.Writer) int {
	dir, configPath, err := parseServiceRun(args, os.Getenv, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "boincd:", err)
		return 2
	}
	defer tuneRuntime(os.Getenv)()
	// Whether the SCM runs us is known only once the service dispatcher
	// has connected (winsvc.Run): the logs' destination is chosen then.
	consoleHandler := func(c config.Log) slog.Handler { return newLogger(stderr, c).Handler() }
	var el *eventlog.Log
	defer func() {
		if el != nil {
			el.Close()
		}
	}()
	boot := slog.New(consoleHandler(config.Log{}))
	err = winsvc.Run(func(underSCM bool) *winsvc.Service {
		handlerFor := consoleHandler
		if underSCM {
			// Nobody reads stderr under the SCM. Without the event log
			// (RegisterEventSource failing is rare: an unregistered
			// source still logs) the service still runs: its messages
			// remain in the daemon's own event log, which "boincd
			// status" and GUIs show.
			handlerFor = func(config.Log) slog.Handler { return slog.DiscardHandler }
			if l, err := winsvc.OpenEventLog(); err == nil {
				el = l
				handlerFor = func(c config.Log) slog.Handler { return winsvc.NewEventHandler(l, logLevel(c)) }
			}
			boot = slog.New(handlerFor(config.Log{}))
		}
		return &winsvc.Service{
			Logger: boot,
			Start: func() (winsvc.Runner, error) {
				return newServiceDaemon(dir, configPath, os.Getenv, handlerFor)
			},
		}
	})
	if err != nil {
		boot.Error("boincd service failed", slog.Any("err", err))
		if el == nil {
			// Not connected to the SCM: tell the event log too, if it
			// can be opened, since stderr may go nowhere.
			if l, oerr := winsvc.OpenEventLog(); oerr == nil {
				_ = l.Error(winsvc.EventIDError, "boincd service failed: "+err.Error())
				l.Close()
			}
		}
		return 1
	}
	return 0
}

// readPassword reads a line from the console without echoing it; from a
// pipe it reads the line as is.
func readPassword(prompt io.Writer, text string) (string, error) {
	fmt.Fprint(prompt, text)
	h := windows.Handle(os.Stdin.Fd())
	var mode uint32
	if windows.GetConsoleMode(h, &mode) == nil {
		if err := windows.SetConsoleMode(h, mode&^windows.ENABLE_ECHO_INPUT); err != nil {
			return "", fmt.Errorf("read password: hide input: %w", err)
		}
		defer func() {
			_ = windows.SetConsoleMode(h, mode)
			fmt.Fprintln(prompt)
		}()
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && line != "") {
		return "", fmt.Errorf("read password: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", fmt.Errorf("read password: empty password")
	}
	return pw, nil
}
