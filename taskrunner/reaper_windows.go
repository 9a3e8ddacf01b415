package taskrunner

import "log/slog"

// reaper does nothing on Windows: each task's Job Object is created with
// JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE, so when the daemon dies, however it
// dies, the system closes its handle and ends the whole process tree.
type reaper struct{}

func newReaper(*slog.Logger) *reaper { return &reaper{} }

func (*reaper) watch(pgid, slot int, name string) {}
func (*reaper) unwatch(pgid int)                  {}
func (*reaper) stop()                             {}
