//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/metrics"
)

// The tests run as root in CI, where permission bits stop nothing, so
// "cannot write" is made with what binds root too:
//
//   - disk full: RLIMIT_FSIZE, set on the running daemon with prlimit(2)
//     (writes past the limit fail with EFBIG; the child ignores SIGXFSZ).
//     Limited to 8 KiB, the state file's two meta pages stay writable and
//     every data page write fails, as on a full disk; the small inputs
//     and outputs of the jobs stay under it. Raising the limit again is
//     "space returns".
//   - read-only: the state file made immutable (chattr +i), which makes
//     even root's writes to an open descriptor fail with EPERM. It needs
//     the chattr tool, CAP_LINUX_IMMUTABLE and a file system with the
//     flag (ext4, xfs, btrfs; not tmpfs or overlayfs before Linux 5.10):
//     the test probes and skips with the reason where it cannot.

// unwritable is one way of making the state file refuse writes while the
// daemon runs.
type unwritable struct {
	name string
	// probe returns why the method cannot work here ("" if it can).
	probe func(dir string) string
	// breakWrites and repair act on the running daemon or its state file.
	breakWrites, repair func(t *testing.T, d *daemonProc, path string)
	// errWords must appear in the logged error.
	errWords []string
}

func fileSizeLimit(t *testing.T, d *daemonProc, limit uint64) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(d.cmd.Process.Pid, unix.RLIMIT_FSIZE, nil, &old); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	lim := unix.Rlimit{Cur: min(limit, old.Max), Max: old.Max}
	if err := unix.Prlimit(d.cmd.Process.Pid, unix.RLIMIT_FSIZE, &lim, nil); err != nil {
		t.Fatalf("prlimit RLIMIT_FSIZE %d: %v", limit, err)
	}
}

func chattr(flag, path string) error {
	out, err := exec.Command("chattr", flag, path).CombinedOutput()
	if err != nil {
		return &exec.Error{Name: "chattr " + flag + " " + path + ": " + strings.TrimSpace(string(out)), Err: err}
	}
	return nil
}

var unwritables = []unwritable{
	{
		name: "disk full (RLIMIT_FSIZE)",
		probe: func(string) string {
			var lim unix.Rlimit
			if err := unix.Prlimit(os.Getpid(), unix.RLIMIT_FSIZE, nil, &lim); err != nil {
				return "prlimit(2) unavailable: " + err.Error()
			}
			return ""
		},
		breakWrites: func(t *testing.T, d *daemonProc, _ string) { fileSizeLimit(t, d, 8192) },
		repair:      func(t *testing.T, d *daemonProc, _ string) { fileSizeLimit(t, d, unix.RLIM_INFINITY) },
		errWords:    []string{"file too large", "disk is full"},
	},
	{
		name: "read-only (immutable state file)",
		probe: func(dir string) string {
			if _, err := exec.LookPath("chattr"); err != nil {
				return "no chattr tool"
			}
			f := filepath.Join(dir, "probe")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				return err.Error()
			}
			defer os.Remove(f)
			if err := chattr("+i", f); err != nil {
				return "cannot make a file immutable here: " + err.Error()
			}
			_ = chattr("-i", f)
			return ""
		},
		breakWrites: func(t *testing.T, _ *daemonProc, path string) {
			if err := chattr("+i", path); err != nil {
				t.Fatal(err)
			}
			// A file left immutable would outlive the test's temporary
			// directory.
			t.Cleanup(func() { _ = chattr("-i", path) })
		},
		repair: func(t *testing.T, _ *daemonProc, path string) {
			if err := chattr("-i", path); err != nil {
				t.Fatal(err)
			}
		},
		errWords: []string{"operation not permitted", "read-only"},
	},
}

// TestStateWritesFail makes the state file refuse writes while the daemon
// works: it must say so once, naming the file and the system's error,
// raise the state_write_failed warning, keep running without starting
// anything new, and carry on when writes work again, every result reported
// exactly once and the state file clean.
func TestStateWritesFail(t *testing.T) {
	t.Parallel()
	for _, u := range unwritables {
		t.Run(u.name, func(t *testing.T) {
			t.Parallel()
			dir := newDataDir(t)
			if why := u.probe(dir); why != "" {
				t.Skip(why)
			}
			path := filepath.Join(dir, daemon.StateFileName)
			const jobs = 5
			p := startProject(t, testproject.Config{TotalJobs: jobs,
				Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 2000}})
			writeConfig(t, dir, configSpec{projects: []*project{p}})
			d := startDaemon(t, "daemon", childOptions{DataDir: dir, IgnoreFileSizeSignal: true})
			d.waitLog("task started", 60*time.Second, "component", "client")

			u.breakWrites(t, d, path)
			failed := d.waitLog("cannot save client state", 30*time.Second)
			t.Logf("the daemon said: %s", failed.Raw)
			if failed.str("file") != path {
				t.Errorf("the error names %q, want the state file %s: %s", failed.str("file"), path, failed.Raw)
			}
			for _, w := range u.errWords {
				if !strings.Contains(failed.Raw, w) {
					t.Errorf("the error does not say %q: %s", w, failed.Raw)
				}
			}
			d.waitLog("health warning", 15*time.Second, "warning", metrics.HealthStateWriteFailed)
			// Events keep coming (tasks finish); nothing new may start.
			time.Sleep(3 * time.Second)
			select {
			case <-d.exited:
				t.Fatalf("the daemon exited while it could not write:\n%s", d.tail(40))
			default:
			}
			lines := d.snapshot()
			at := slices.IndexFunc(lines, msgIs("cannot save client state"))
			for _, l := range lines[at+1:] {
				for _, start := range []string{"task started", "started download", "started upload", "sending scheduler request"} {
					if l.Msg == start {
						t.Errorf("started something while the state could not be saved: %s", l.Raw)
					}
				}
			}
			if n := countLines(lines, msgIs("cannot save client state")); n != 1 {
				t.Errorf("the failure was logged %d times in one episode, want once:\n%s", n, d.tail(60))
			}

			u.repair(t, d, path)
			d.waitLog("state writes work again", 30*time.Second, "file", path)
			d.waitLog("health warning cleared", 15*time.Second, "warning", metrics.HealthStateWriteFailed)
			waitAllReported(t, d, p, jobs, 90*time.Second)
			waitNoLeftovers(t, dir, 15*time.Second, p)
			d.stop()
			checkReportedOnce(t, p, jobs, refOutput(p, 1))
			newSoakAccount(nil).checkState(t, "after the run", dir)
		})
	}
}

// TestStartReadOnlyState: a daemon whose state file cannot be opened for
// writing stops at once with an error naming the file and saying it is
// read-only, and leaves the file as it was; writable again, it starts.
func TestStartReadOnlyState(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	if why := unwritables[1].probe(dir); why != "" {
		t.Skip(why)
	}
	d := startDaemon(t, "first daemon", childOptions{DataDir: dir})
	d.waitLog("boincd started", 30*time.Second)
	d.stop()
	path := filepath.Join(dir, daemon.StateFileName)
	before := readAll(t, path)
	if err := chattr("+i", path); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = chattr("-i", path) })

	refused := startDaemon(t, "daemon on a read-only state file", childOptions{DataDir: dir})
	if code := refused.wait(30 * time.Second); code == 0 {
		t.Fatalf("the daemon started on a state file it cannot write:\n%s", refused.tail(20))
	}
	out := refused.output()
	for _, w := range []string{path, "read-only"} {
		if !strings.Contains(out, w) {
			t.Errorf("the error does not say %q:\n%s", w, out)
		}
	}
	if err := chattr("-i", path); err != nil {
		t.Fatal(err)
	}
	if after := readAll(t, path); string(after) != string(before) {
		t.Errorf("the refused start changed the state file")
	}
	again := startDaemon(t, "daemon after the repair", childOptions{DataDir: dir})
	again.waitLog("boincd started", 30*time.Second)
	again.stop()
}

func countLines(lines []logLine, pred func(logLine) bool) int {
	n := 0
	for _, l := range lines {
		if pred(l) {
			n++
		}
	}
	return n
}
