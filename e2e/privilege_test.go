package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// e2eAppUser is this package's own test account (other packages create
// their own, so parallel package runs never delete each other's).
const e2eAppUser = "boincd-test-e2e"

// privAppScript runs as the app account: it works a while, tries to write
// outside its slot, and reports its uid and what it managed in its output
// (the output comes back to the server, so the report is the evidence).
const privAppScript = `#!/bin/sh
secs=1
[ "$1" = "--seconds" ] && secs="$2"
echo "privapp: start" >&2
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in 2>/dev/null)
i=0
while [ "$i" -lt "$secs" ]; do sleep 1; i=$((i+1)); done
r=""
if (echo x > ../../escaped) 2>/dev/null; then r="$r data-dir-root"; fi
if (echo x > ../../projects/planted) 2>/dev/null; then r="$r projects"; fi
if (echo x >> "$inpath") 2>/dev/null; then r="$r input"; fi
if (echo x >> ../../boincd.db) 2>/dev/null; then r="$r state"; fi
if (cat ../../gui_rpc_auth.cfg) >/dev/null 2>&1; then r="$r gui-password"; fi
{
  echo "uid=$(id -u) gid=$(id -g)"
  echo "escaped:$r"
  echo "input bytes: $(wc -c < "$inpath" | tr -d ' ')"
} > out
echo "privapp: done" >&2
echo 0 > boinc_finish_called
exit 0
`

// appAccountForTest returns the uid and gid of an unprivileged account,
// creating it (and deleting it at the end) when missing.
func appAccountForTest(t *testing.T) (uid, gid string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running apps as another user needs root")
	}
	u, err := user.Lookup(e2eAppUser)
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", e2eAppUser).CombinedOutput()
		if err != nil {
			t.Skipf("cannot create test user %s: %v: %s", e2eAppUser, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", e2eAppUser).CombinedOutput(); err != nil {
				t.Logf("userdel %s: %v: %s", e2eAppUser, err, out)
			}
		})
		if u, err = user.Lookup(e2eAppUser); err != nil {
			t.Fatal(err)
		}
	}
	return u.Uid, u.Gid
}

// statusIDs reads the real and effective uid and gid of a process.
func statusIDs(pid int) (uids, gids []string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uids = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "Gid:"); ok {
			gids = strings.Fields(v)
		}
	}
	return uids, gids
}

// TestAppUser: with app_user, a real daemon runs the app as that account
// (seen in /proc while it runs), the app cannot write outside its slot
// nor read the GUI RPC password, and the task completes, uploads and is
// reported as usual.
func TestAppUser(t *testing.T) {
	t.Parallel()
	uid, gid := appAccountForTest(t)
	p := startProject(t, testproject.Config{
		Apps:      []testproject.App{testproject.ShellApp("privapp", privAppScript)},
		Job:       testproject.JobTemplate{CommandLine: "--seconds 3", InputSize: 500},
		TotalJobs: 1,
	})
	dir := newDataDir(t)
	// A data directory the account can reach, as a packaged one is.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	toml := fmt.Sprintf("app_user = %q\n\n[[project]]\nurl = %q\nauthenticator = %q\n", e2eAppUser, p.URL(), accountKey)
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(toml))
	d := startDaemon(t, "daemon", childOptions{DataDir: dir, Seed: 7})
	d.waitLog("science apps run as app_user", 30*time.Second, "user", e2eAppUser)

	// While the app runs: its real, effective, saved and fs ids are the
	// account's.
	var seen bool
	deadline := time.Now().Add(60 * time.Second)
	for !seen && time.Now().Before(deadline) {
		for pid := range processesUnder(filepath.Join(dir, "slots")) {
			uids, gids := statusIDs(pid)
			if len(uids) == 0 {
				continue
			}
			for _, id := range uids {
				if id != uid {
					t.Fatalf("app pid %d runs with uids %v, want %s", pid, uids, uid)
				}
			}
			if gids[0] != gid || gids[1] != gid {
				t.Fatalf("app pid %d runs with gids %v, want %s", pid, gids, gid)
			}
			seen = true
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !seen {
		t.Fatalf("no app process seen in the slots:\n%s", d.tail(40))
	}

	waitAllReported(t, d, p, 1, 60*time.Second)
	st := p.Stats()
	var out []byte
	for _, b := range st.Uploaded {
		out = b
	}
	if !strings.Contains(string(out), "uid="+uid+" gid="+gid+"\n") {
		t.Fatalf("uploaded output %q: not computed as %s", out, e2eAppUser)
	}
	if !strings.Contains(string(out), "escaped:\n") {
		t.Fatalf("the app got outside its slot: %q", out)
	}
	if !strings.Contains(string(out), "input bytes: 500\n") {
		t.Fatalf("the app could not read its input: %q", out)
	}
	for _, name := range st.Sent {
		if r := st.ReportedResults[name]; r.ExitStatus != 0 || !strings.Contains(r.StderrOut, "privapp: done") {
			t.Fatalf("result %s reported %+v", name, r)
		}
	}
	for _, path := range []string{filepath.Join(dir, "escaped"), filepath.Join(dir, "projects", "planted")} {
		if _, err := os.Lstat(path); err == nil {
			t.Fatalf("%s exists", path)
		}
	}
	d.stop()
}

// TestRootAppsRefusedByDefault: a root daemon without app_user or
// allow_root_apps downloads its task but never starts it, says so once,
// and reports nothing as failed; with allow_root_apps = true after a
// reload (SIGHUP) the same task runs and is reported.
func TestRootAppsRefusedByDefault(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the refusal concerns a daemon running as root")
	}
	p := startProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 100},
		TotalJobs: 1,
	})
	dir := newDataDir(t)
	base := fmt.Sprintf("[[project]]\nurl = %q\nauthenticator = %q\n", p.URL(), accountKey)
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte(base))
	d := startDaemon(t, "daemon", childOptions{DataDir: dir, Seed: 3})
	d.waitLog("refusing to run science apps as root", 30*time.Second)
	d.waitLog("task files downloaded", 30*time.Second)
	time.Sleep(2 * time.Second)
	if _, ok := d.find(msgIs("task started")); ok {
		t.Fatalf("a task started as root:\n%s", d.tail(40))
	}
	if got := p.Stats(); len(got.Reported) != 0 {
		t.Fatalf("reported %v while refused", got.Reported)
	}
	writeFile(t, filepath.Join(dir, "boincd.toml"), []byte("allow_root_apps = true\n"+base))
	d.signal(syscall.SIGHUP)
	waitAllReported(t, d, p, 1, 60*time.Second)
	n := 0
	for _, l := range d.snapshot() {
		if strings.HasPrefix(l.Msg, "refusing to run science apps as root") {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("refusal logged %d times, want once", n)
	}
	d.stop()
}
