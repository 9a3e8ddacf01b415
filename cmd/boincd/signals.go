package main

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"time"

	sddaemon "github.com/coreos/go-systemd/v22/daemon"

	"github.com/boincd/boincd/daemon"
)

// stopper is what a stop signal drives; *daemon.Daemon in production.
type stopper interface {
	Reload()
	StopNow()
}

// handleSignals: SIGHUP reloads the config; the first SIGTERM or SIGINT
// starts a graceful stop (tasks asked to quit at their next checkpoint,
// up to --stop_timeout); a second one stops at once, killing the tasks
// still running. Either way the state is persisted before exit. It
// returns when done is closed.
func handleSignals(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelFunc, d stopper, log *slog.Logger) {
	stopping := false
	for {
		select {
		case <-done:
			return
		case s := <-sigs:
			switch {
			case s == syscall.SIGHUP:
				d.Reload()
			case !stopping:
				stopping = true
				log.Info("stopping: asking tasks to quit at their next checkpoint (signal again to stop at once)", slog.String("signal", s.String()))
				cancel()
			default:
				log.Warn("stopping at once: tasks still running are killed; they restart from their last checkpoint", slog.String("signal", s.String()))
				d.StopNow()
			}
		}
	}
}

// sdNotifier tells systemd the daemon's state (Type=notify units). Off
// systemd NOTIFY_SOCKET is unset and every call is a no-op.
type sdNotifier struct{}

func (sdNotifier) Notify(state string) { _, _ = sddaemon.SdNotify(false, state) }

// systemdNotifier returns the notifier and the watchdog interval
// (WatchdogSec=, 0 when off) when running under systemd, else nils.
func systemdNotifier() (daemon.Notifier, time.Duration) {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return nil, 0
	}
	w, err := sddaemon.SdWatchdogEnabled(false)
	if err != nil {
		w = 0
	}
	return sdNotifier{}, w
}
