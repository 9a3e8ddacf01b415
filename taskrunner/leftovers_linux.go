package taskrunner

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// leftover is a process found working in a slot when the runner starts.
type leftover struct {
	pid, pgid, slot int
	uid             int
	command         string
}

// killLeftovers kills, and logs, every process still working in a slot
// directory when the runner starts. One daemon runs per data directory and
// its runner has started nothing yet, so any such process was left by a
// daemon that died together with its task reaper (or before the reaper
// knew the task): a worker a wrapper started, a script's background job.
// Each one's whole process group goes. A process that is a session of its
// own (a volunteer's shell that cd'ed into a slot) is left alone and
// logged, as KillOrphan does.
func killLeftovers(dataDir string, log *slog.Logger) {
	slots, err := filepath.EvalSymlinks(filepath.Join(dataDir, "slots"))
	if err != nil {
		return
	}
	found := findLeftovers(slots)
	if len(found) == 0 {
		return
	}
	groups := map[int]bool{}
	for _, l := range found {
		if l.pgid <= 1 {
			continue
		}
		sid, err := unix.Getsid(l.pid)
		if err == nil && sid == l.pgid {
			log.Warn("a process works in a slot but is a session of its own; leaving it alone",
				"slot", l.slot, "pid", l.pid, "command", l.command, "uid", l.uid)
			continue
		}
		if !groups[l.pgid] {
			groups[l.pgid] = true
			killGroup(l.pgid)
		}
		log.Warn("killed a process left running by a previous boincd",
			"slot", l.slot, "pid", l.pid, "pgid", l.pgid, "command", l.command, "uid", l.uid)
	}
	// SIGKILL is delivered at once, dying takes a moment; a task restarts
	// in its slot next, so wait (briefly) until they are gone.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		alive := false
		for _, l := range findLeftovers(slots) {
			if groups[l.pgid] {
				alive = true
			}
		}
		if !alive {
			break
		}
	}
}

// findLeftovers lists the live processes working in a slot directory
// under slots, other than this one.
func findLeftovers(slots string) []leftover {
	var out []leftover
	for _, p := range procsUnder(slots) {
		slot, err := strconv.Atoi(strings.SplitN(p.rel, string(filepath.Separator), 2)[0])
		if err != nil {
			continue // slots itself, or not a slot
		}
		l := leftover{pid: p.pid, pgid: p.pgid, slot: slot, uid: -1, command: processCommand(p.name)}
		if st, err := os.Stat("/proc/" + p.name); err == nil {
			if sys, ok := st.Sys().(*syscall.Stat_t); ok {
				l.uid = int(sys.Uid)
			}
		}
		out = append(out, l)
	}
	return out
}

// processCommand is a process's command line, shortened, for the log.
func processCommand(pid string) string {
	b, err := os.ReadFile("/proc/" + pid + "/cmdline")
	if err != nil || len(b) == 0 {
		b, _ = os.ReadFile("/proc/" + pid + "/comm")
	}
	s := strings.TrimSpace(string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte{' '})))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
