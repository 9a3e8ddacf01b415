package hostcond

import (
	"path/filepath"
	"strings"
	"time"
)

// ExclusiveAppWait is how long computing stays suspended after the last
// exclusive app was seen running (the C++ client's EXCLUSIVE_APP_WAIT):
// a game that restarts itself does not get a burst of tasks in between.
const ExclusiveAppWait = 5 * time.Second

// ExclusiveScanPeriod is how often the process list is read for exclusive
// apps; the C++ client checks at each memory-usage poll (10 s).
const ExclusiveScanPeriod = 5 * time.Second

// Process is one running program as the process list shows it.
type Process struct {
	// Name is the kernel's name of the process (Linux: /proc/PID/comm,
	// at most 15 bytes; Windows: the image name, "game.exe").
	Name string
	// Exe is the path of its executable, "" when not readable (another
	// user's process).
	Exe string
}

// ExclusiveRunning returns the first of names that runs among procs, ""
// when none does. A name matches a process's name or its executable's
// base name, ignoring case as the C++ client's app_running does; the
// Linux name is cut to 15 bytes, so a long name also matches its cut
// form there, and "game" matches "game.exe".
func ExclusiveRunning(procs []Process, names []string) string {
	for _, want := range names {
		w := strings.ToLower(strings.TrimSpace(want))
		if w == "" {
			continue
		}
		for _, p := range procs {
			if matchName(strings.ToLower(p.Name), w) || (p.Exe != "" && matchName(strings.ToLower(filepath.Base(p.Exe)), w)) {
				return want
			}
		}
	}
	return ""
}

func matchName(have, want string) bool {
	if have == "" {
		return false
	}
	if have == want || strings.TrimSuffix(have, ".exe") == strings.TrimSuffix(want, ".exe") {
		return true
	}
	// /proc/PID/comm holds the first 15 bytes of the name.
	return len(have) == 15 && strings.HasPrefix(want, have)
}

// Exclusive is the exclusive-app part of the suspension decision, fed by
// process scans: it holds while the last scan found an exclusive app and
// for ExclusiveAppWait after the scan that found it gone.
type Exclusive struct {
	// Running is the app seen at the last scan ("" none).
	Running string
	goneAt  time.Time
}

// Observe records a scan made at now that found running ("" none).
func (e *Exclusive) Observe(now time.Time, running string) {
	if running == "" && e.Running != "" {
		e.goneAt = now
	}
	e.Running = running
}

// Suspends reports whether computing (or GPU computing) must be
// suspended at now.
func (e *Exclusive) Suspends(now time.Time) bool {
	return e.Running != "" || (!e.goneAt.IsZero() && now.Sub(e.goneAt) < ExclusiveAppWait)
}

// Reset forgets what was seen (the option was removed from the config).
func (e *Exclusive) Reset() { *e = Exclusive{} }
