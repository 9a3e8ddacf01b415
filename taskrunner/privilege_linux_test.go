//go:build linux

package taskrunner

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testAppUserName is this package's own test account, so packages tested
// in parallel never delete each other's.
const testAppUserName = "boincd-test-tr"

// appUserForTest returns an unprivileged account to run apps as,
// creating it (and deleting it at the end) when missing. It needs root.
func appUserForTest(t *testing.T) *AppAccount {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running apps as another user needs root")
	}
	if _, err := user.Lookup(testAppUserName); err != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testAppUserName).CombinedOutput()
		if err != nil {
			t.Skipf("cannot create test user %s: %v: %s", testAppUserName, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", testAppUserName).CombinedOutput(); err != nil {
				t.Logf("userdel %s: %v: %s", testAppUserName, err, out)
			}
		})
	}
	acct, err := LookupAccount(testAppUserName)
	if err != nil {
		t.Fatal(err)
	}
	return acct
}

// openUp makes the test's temporary directories searchable by others, as
// a real data directory is (t.TempDir creates them 0700).
func openUp(t *testing.T, dir string) {
	t.Helper()
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestResolvePolicy(t *testing.T) {
	dataDir := t.TempDir()
	for _, sub := range []string{"projects", "slots"} {
		if err := os.MkdirAll(filepath.Join(dataDir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name    string
		p       AppPolicy
		euid    int
		wantErr error
		wantMsg string
	}{
		{name: "root refused", euid: 0, wantErr: ErrRootRefused, wantMsg: "allow_root_apps = true"},
		{name: "root allowed", p: AppPolicy{AllowRoot: true}, euid: 0},
		{name: "unprivileged daemon", euid: 1000},
		{name: "windows has no root", euid: -1},
		{name: "unknown user", p: AppPolicy{AppUser: "boincd-no-such-user"}, euid: 0, wantErr: ErrAppUser, wantMsg: `app_user "boincd-no-such-user": no such account`},
		{name: "root user", p: AppPolicy{AppUser: "root"}, euid: 0, wantErr: ErrAppUser, wantMsg: "is root (uid 0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			acct, err := resolvePolicy(tt.p, dataDir, tt.euid)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.wantMsg)
			}
			if acct != nil {
				t.Fatalf("account = %+v for a policy without app_user", acct)
			}
		})
	}
}

func TestResolvePolicyAppUser(t *testing.T) {
	acct := appUserForTest(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	for _, sub := range []string{"projects", "slots"} {
		if err := os.MkdirAll(filepath.Join(dataDir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir is 0700: the account cannot get in, and is told so.
	_, err := resolvePolicy(AppPolicy{AppUser: acct.Name}, dataDir, 0)
	if !errors.Is(err, ErrAppUser) || !strings.Contains(err.Error(), "not searchable") || !strings.Contains(err.Error(), "chmod o+x") {
		t.Fatalf("unreachable data directory: err = %v", err)
	}
	openUp(t, dataDir)
	got, err := resolvePolicy(AppPolicy{AppUser: acct.Name}, dataDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != acct.UID || got.GID != acct.GID || got.UID == 0 || len(got.Groups) == 0 || got.Groups[0] != got.GID {
		t.Fatalf("account = %+v", got)
	}
	// By numeric uid too.
	if got, err := resolvePolicy(AppPolicy{AppUser: strconv.Itoa(int(acct.UID))}, dataDir, 0); err != nil || got.Name != acct.Name {
		t.Fatalf("by uid: %+v, %v", got, err)
	}
}

// procIDs reads the Uid: and Gid: lines (real, effective, saved, fs) of
// /proc/PID/status.
func procIDs(t *testing.T, pid int) (uids, gids []string) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
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

// escapeApp runs as the app account: it waits for "go" in its slot, then
// tries to write outside the slot, and writes its environment and what
// it managed as its output.
const escapeApp = `#!/bin/sh
echo $$ > pid
while [ ! -e go ]; do sleep 0.05; done
r=""
if (echo x > ../../escaped) 2>/dev/null; then r="$r data-dir-root"; fi
if (echo x > ../../projects/` + testEsc + `/planted) 2>/dev/null; then r="$r project-dir"; fi
if (echo x >> ../../projects/` + testEsc + `/` + inFile + `) 2>/dev/null; then r="$r input"; fi
if (echo x > ../../slots/other) 2>/dev/null; then r="$r slots"; fi
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in)
{ echo "escaped:$r"; echo "input: $(cat "$inpath")"; env; } > out
echo "stderr of the app" >&2
echo 0 > boinc_finish_called
exit 0
`

// TestAppRunsAsAppUser: with app_user the process runs with that uid and
// gid, can write in its slot only, does not see the daemon's secrets in
// its environment, and its output comes back owned by the daemon.
func TestAppRunsAsAppUser(t *testing.T) {
	acct := appUserForTest(t)
	t.Setenv("BOINCD_PROJECT_AUTHENTICATOR", "daemon-secret-key")
	t.Setenv("NOTIFY_SOCKET", "/run/systemd/notify")
	e := newTestEnv(t, Config{})
	openUp(t, e.dataDir)
	for _, sub := range []string{"slots"} {
		if err := os.MkdirAll(filepath.Join(e.dataDir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A restrictive daemon umask: the runner shares what the app needs.
	if err := os.Chmod(filepath.Join(e.projDir, inFile), 0o600); err != nil {
		t.Fatal(err)
	}
	e.writeApp(t, appFile, escapeApp)
	if err := os.Chmod(filepath.Join(e.projDir, appFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := e.runner.SetAppPolicy(AppPolicy{AppUser: acct.Name}); err != nil {
		t.Fatal(err)
	}
	slot, pid, err := e.runner.Start(context.Background(), e.spec(""))
	if err != nil {
		t.Fatal(err)
	}
	appPID := readPID(t, e.slotPath(slot, "pid"))
	if appPID != pid {
		t.Fatalf("app pid %d, runner pid %d", appPID, pid)
	}
	uids, gids := procIDs(t, pid)
	want := strconv.Itoa(int(acct.UID))
	if len(uids) != 4 || uids[0] != want || uids[1] != want || uids[2] != want || uids[3] != want {
		t.Fatalf("app Uid: %v, want all %s", uids, want)
	}
	wantG := strconv.Itoa(int(acct.GID))
	if len(gids) != 4 || gids[0] != wantG || gids[1] != wantG {
		t.Fatalf("app Gid: %v, want %s", gids, wantG)
	}
	st, err := os.Stat(filepath.Join(e.dataDir, "slots", strconv.Itoa(slot)))
	if err != nil {
		t.Fatal(err)
	}
	if sys := st.Sys().(*syscall.Stat_t); sys.Uid != acct.UID || st.Mode().Perm() != 0o700 {
		t.Fatalf("slot owner %d mode %04o, want %d 0700", sys.Uid, st.Mode().Perm(), acct.UID)
	}
	if err := os.WriteFile(e.slotPath(slot, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 20*time.Second).Exit
	if x.Outcome != Success {
		t.Fatalf("outcome %v (%d): %s; stderr %q", x.Outcome, x.ExitStatus, x.Message, x.Stderr)
	}
	if !strings.Contains(x.Stderr, "stderr of the app") {
		t.Fatalf("stderr = %q", x.Stderr)
	}
	outPath := filepath.Join(e.projDir, outFile)
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "escaped:\n") {
		t.Fatalf("the app wrote outside its slot: %q", strings.SplitN(string(out), "\n", 2)[0])
	}
	if !strings.Contains(string(out), "input: "+strings.TrimSpace(inputTxt)) {
		t.Fatalf("the app could not read its input: %q", out)
	}
	for _, bad := range []string{"daemon-secret-key", "NOTIFY_SOCKET"} {
		if strings.Contains(string(out), bad) {
			t.Fatalf("app environment holds %q", bad)
		}
	}
	for _, want := range []string{"USER=" + acct.Name, "LOGNAME=" + acct.Name} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("app environment lacks %q", want)
		}
	}
	for _, p := range []string{filepath.Join(e.dataDir, "escaped"), filepath.Join(e.projDir, "planted"), filepath.Join(e.dataDir, "slots", "other")} {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists", p)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.projDir, inFile)); string(b) != inputTxt {
		t.Fatalf("input changed: %q", b)
	}
	ost, err := os.Stat(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if sys := ost.Sys().(*syscall.Stat_t); int(sys.Uid) != os.Geteuid() {
		t.Fatalf("output owned by uid %d, want the daemon's %d", sys.Uid, os.Geteuid())
	}
	if len(x.Outputs) != 1 || x.Outputs[0].NBytes != int64(len(out)) {
		t.Fatalf("outputs = %+v", x.Outputs)
	}
}

// TestStartRefusedByPolicy: a blocked policy fails Start with the
// policy's error and leaves no slot behind.
func TestStartRefusedByPolicy(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, refApp)
	err := e.runner.SetAppPolicy(AppPolicy{AppUser: "boincd-no-such-user"})
	if !errors.Is(err, ErrAppUser) {
		t.Fatalf("SetAppPolicy: %v", err)
	}
	if !errors.Is(e.runner.AppsBlocked(), ErrAppUser) {
		t.Fatalf("AppsBlocked = %v", e.runner.AppsBlocked())
	}
	if _, _, err := e.runner.Start(context.Background(), e.spec("--seconds 0")); !errors.Is(err, ErrAppUser) {
		t.Fatalf("Start: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.dataDir, "slots")); len(ents) != 0 {
		t.Fatalf("slots left: %v", ents)
	}
	if p, set := e.runner.AppPolicy(); !set || p.AppUser != "boincd-no-such-user" {
		t.Fatalf("AppPolicy = %+v, %v", p, set)
	}
	// Allowed again: starts.
	if err := e.runner.SetAppPolicy(AppPolicy{AllowRoot: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.runner.Start(context.Background(), e.spec("--seconds 0")); err != nil {
		t.Fatal(err)
	}
	if x := waitEvent(t, e.events, 20*time.Second).Exit; x.Outcome != Success {
		t.Fatalf("outcome %v: %s", x.Outcome, x.Message)
	}
}

// TestPlantedLinksInSlot: a reused slot may hold links an earlier run of
// the app planted. The runner replaces them instead of writing through
// them, and never reports a file outside the slot as stderr.
func TestPlantedLinksInSlot(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, refApp)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("top secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("keep me\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	slot := filepath.Join(e.dataDir, "slots", "3")
	if err := os.MkdirAll(slot, 0o771); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"init_data.xml":   victim,
		"boinc_mmap_file": victim,
		"in":              victim,
		"stderr.txt":      secret,
	} {
		if err := os.Symlink(target, filepath.Join(slot, name)); err != nil {
			t.Fatal(err)
		}
	}
	spec := e.spec("--seconds 0")
	spec.Slot = 3
	if _, _, err := e.runner.Start(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	x := waitEvent(t, e.events, 20*time.Second).Exit
	if x.Outcome != Success {
		t.Fatalf("outcome %v: %s; stderr %q", x.Outcome, x.Message, x.Stderr)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep me\n" {
		t.Fatalf("the runner wrote through a planted link: %q", b)
	}
	if strings.Contains(x.Stderr, "top secret") {
		t.Fatalf("stderr reported a file outside the slot: %q", x.Stderr)
	}
	if !strings.Contains(x.Stderr, "refapp: done") {
		t.Fatalf("stderr = %q", x.Stderr)
	}
}

func TestTaskEnvKeepsDaemonSecrets(t *testing.T) {
	env := taskEnv([]string{"PATH=/bin", "BOINCD_PROJECT_AUTHENTICATOR=k", "BOINCD_GUI_RPC_PASSWORD=p", "NOTIFY_SOCKET=/x",
		"CREDENTIALS_DIRECTORY=/run/credentials/boincd.service", "LD_LIBRARY_PATH=/opt"}, "p")
	got := strings.Join(env, " ")
	want := "PATH=/bin LD_LIBRARY_PATH=../../projects/p:.:../..:/opt"
	if got != want {
		t.Fatalf("env = %q, want %q", got, want)
	}
}
