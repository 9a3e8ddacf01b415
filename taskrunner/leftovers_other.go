//go:build !linux

package taskrunner

import "log/slog"

// killLeftovers needs /proc to see which processes work in a slot; on
// Windows the Job Objects end a task's tree with the daemon, and other
// systems rely on the task reaper alone.
func killLeftovers(string, *slog.Logger) {}
