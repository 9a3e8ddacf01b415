//go:build linux

package deb

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sourceDateEpoch pins file times inside the packages so that two builds
// of the same inputs are byte-identical.
const sourceDateEpoch = "1700000000"

// repoRoot is the module root, two levels up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	return root
}

// buildBoincd builds the daemon the way a release does (cgo as the
// environment says) into a temp dir.
func buildBoincd(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "boincd")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/boincd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/boincd: %v\n%s", err, out)
	}
	return bin
}

// buildPackage runs nfpm for packager ("deb" or "rpm") and returns the
// one package file it wrote. version "" leaves VERSION unset.
func buildPackage(t *testing.T, root, bin, packager, version string) string {
	t.Helper()
	target := t.TempDir()
	cmd := exec.CommandContext(t.Context(), "go", "tool", "nfpm", "pkg",
		"--packager", packager, "--config", "packaging/nfpm.yaml", "--target", target)
	cmd.Dir = root
	env := []string{"GOARCH=" + runtime.GOARCH, "BOINCD_BINARY=" + bin, "SOURCE_DATE_EPOCH=" + sourceDateEpoch}
	if version != "" {
		env = append(env, "VERSION="+version)
	}
	cmd.Env = append(withoutEnv(os.Environ(), "VERSION"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nfpm pkg --packager %s: %v\n%s", packager, err, out)
	}
	matches, err := filepath.Glob(filepath.Join(target, "*."+packager))
	if err != nil || len(matches) != 1 {
		t.Fatalf("nfpm wrote %v (err %v) in %s, want one .%s", matches, err, target, packager)
	}
	return matches[0]
}

func withoutEnv(env []string, name string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// debArch and rpmArch translate GOARCH as nfpm does, for the ones a
// test machine plausibly has.
var debArch = map[string]string{"amd64": "amd64", "arm64": "arm64", "386": "i386", "ppc64le": "ppc64el", "s390x": "s390x", "riscv64": "riscv64"}
var rpmArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "386": "i386", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64"}

func needTool(t *testing.T, name, why string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: %s", name, why)
	}
	return p
}

func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// debEntry is one line of `dpkg-deb -c`.
type debEntry struct{ mode, owner string }

func parseDebContents(t *testing.T, listing string) map[string]debEntry {
	t.Helper()
	entries := map[string]debEntry{}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c: unexpected line %q", line)
		}
		entries[strings.TrimSuffix(strings.TrimPrefix(f[5], "."), "/")] = debEntry{f[0], f[1]}
	}
	return entries
}

func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds boincd and both packages; skipped with -short")
	}
	root := repoRoot(t)
	bin := buildBoincd(t, root)
	const version = "0.1.0"
	deb := buildPackage(t, root, bin, "deb", version)
	rpm := buildPackage(t, root, bin, "rpm", version)

	t.Run("deb control", func(t *testing.T) {
		needTool(t, "dpkg-deb", "the .deb cannot be inspected (not a Debian-family machine)")
		for _, tc := range []struct{ field, want string }{
			{"Package", "boincd"},
			{"Version", version},
			{"Architecture", debArch[runtime.GOARCH]},
			{"Section", "net"},
			{"Depends", "libc6"},
		} {
			if tc.want == "" {
				t.Logf("no deb architecture name known for GOARCH=%s: not checked", runtime.GOARCH)
				continue
			}
			if got := strings.TrimSpace(output(t, "dpkg-deb", "-f", deb, tc.field)); got != tc.want {
				t.Errorf("%s: %s = %q, want %q", deb, tc.field, got, tc.want)
			}
		}
		if info := output(t, "dpkg-deb", "-I", deb); !strings.Contains(info, " Description: BOINC-compatible volunteer-computing client daemon") {
			t.Errorf("dpkg-deb -I: no description:\n%s", info)
		}
		if got := strings.TrimSpace(output(t, "dpkg-deb", "-I", deb, "conffiles")); got != "/etc/boincd/boincd.toml" {
			t.Errorf("conffiles = %q, want exactly /etc/boincd/boincd.toml", got)
		}
		for _, tc := range []struct{ control, script string }{
			{"postinst", "postinstall.sh"},
			{"prerm", "preremove.sh"},
			{"postrm", "postremove.sh"},
		} {
			got := output(t, "dpkg-deb", "-I", deb, tc.control)
			want := string(readFile(t, filepath.Join(root, "packaging", "scripts", tc.script)))
			if got != want {
				t.Errorf("%s in the .deb differs from packaging/scripts/%s", tc.control, tc.script)
			}
		}
	})

	t.Run("deb files", func(t *testing.T) {
		needTool(t, "dpkg-deb", "the .deb cannot be inspected (not a Debian-family machine)")
		entries := parseDebContents(t, output(t, "dpkg-deb", "-c", deb))
		want := map[string]debEntry{
			"/usr/bin/boincd":                    {"-rwxr-xr-x", "root/root"},
			"/lib/systemd/system/boincd.service": {"-rw-r--r--", "root/root"},
			"/etc/boincd":                        {"drwxr-x---", "root/root"},
			"/etc/boincd/boincd.toml":            {"-rw-r--r--", "root/root"},
			"/usr/share/doc/boincd/README.md":    {"-rw-r--r--", "root/root"},
			"/usr/share/doc/boincd/systemd.md":   {"-rw-r--r--", "root/root"},
		}
		for path, w := range want {
			got, ok := entries[path]
			if !ok {
				t.Errorf("%s missing from the .deb", path)
				continue
			}
			if got != w {
				t.Errorf("%s: %s %s, want %s %s", path, got.mode, got.owner, w.mode, w.owner)
			}
		}
		for path, e := range entries {
			if _, ok := want[path]; !ok && !strings.HasPrefix(e.mode, "d") {
				t.Errorf("unexpected file %s in the .deb", path)
			}
		}
		// The payload is the sources, byte for byte.
		dir := t.TempDir()
		output(t, "dpkg-deb", "-x", deb, dir)
		for _, tc := range []struct{ inPkg, src string }{
			{"usr/bin/boincd", bin},
			{"lib/systemd/system/boincd.service", filepath.Join(root, "systemd", "boincd.service")},
			{"etc/boincd/boincd.toml", filepath.Join(root, "systemd", "boincd.toml")},
			{"usr/share/doc/boincd/systemd.md", filepath.Join(root, "systemd", "README.md")},
		} {
			if !bytes.Equal(readFile(t, filepath.Join(dir, tc.inPkg)), readFile(t, tc.src)) {
				t.Errorf("/%s in the .deb differs from %s", tc.inPkg, tc.src)
			}
		}
	})

	t.Run("rpm", func(t *testing.T) {
		data := readFile(t, rpm)
		// The lead: magic, then version 3.0, then "NAME-VERSION-RELEASE".
		if len(data) < 96 || !bytes.Equal(data[:4], []byte{0xED, 0xAB, 0xEE, 0xDB}) {
			t.Fatalf("%s does not start with the rpm lead magic ED AB EE DB", rpm)
		}
		if name, _, _ := bytes.Cut(data[10:76], []byte{0}); string(name) != "boincd-"+version+"-1" {
			t.Errorf("rpm lead name %q, want boincd-%s-1", name, version)
		}
		if a := rpmArch[runtime.GOARCH]; a != "" && !strings.HasSuffix(rpm, "."+a+".rpm") {
			t.Errorf("rpm file %s, want arch %s", filepath.Base(rpm), a)
		}
		if _, err := exec.LookPath("rpm"); err != nil {
			t.Log("rpm is not installed: only the lead was checked")
			return
		}
		files := output(t, "rpm", "-qlp", rpm)
		for _, want := range []string{"/usr/bin/boincd", "/usr/lib/systemd/system/boincd.service", "/etc/boincd/boincd.toml", "/usr/share/doc/boincd/README.md"} {
			if !strings.Contains("\n"+files, "\n"+want+"\n") {
				t.Errorf("rpm -qlp does not list %s:\n%s", want, files)
			}
		}
		if strings.Contains(files, "/lib/systemd/system/boincd.service\n") && !strings.Contains(files, "/usr/lib/systemd/system/boincd.service") {
			t.Errorf("rpm ships the unit in /lib, want /usr/lib")
		}
		if conf := strings.TrimSpace(output(t, "rpm", "-qcp", rpm)); conf != "/etc/boincd/boincd.toml" {
			t.Errorf("rpm config files %q, want /etc/boincd/boincd.toml", conf)
		}
	})

	t.Run("reproducible", func(t *testing.T) {
		again := buildPackage(t, root, bin, "deb", version)
		if sha256.Sum256(readFile(t, deb)) != sha256.Sum256(readFile(t, again)) {
			t.Errorf("two builds with SOURCE_DATE_EPOCH=%s differ", sourceDateEpoch)
		}
	})
}

func TestDebVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds packages; skipped with -short")
	}
	needTool(t, "dpkg-deb", "the .deb cannot be inspected (not a Debian-family machine)")
	root := repoRoot(t)
	// The payload does not matter here: any file stands in for the binary.
	bin := filepath.Join(root, "go.mod")
	for _, tc := range []struct{ version, want string }{
		{"1.2.3", "1.2.3"},
		{"v1.2.3", "1.2.3"},        // release tags carry a v
		{"1.2.3-rc1", "1.2.3~rc1"}, // a pre-release sorts before the release
		{"", "0.0.0~rc0"},          // unset: nfpm's default, below any release
	} {
		t.Run("VERSION="+tc.version, func(t *testing.T) {
			deb := buildPackage(t, root, bin, "deb", tc.version)
			if got := strings.TrimSpace(output(t, "dpkg-deb", "-f", deb, "Version")); got != tc.want {
				t.Errorf("Version = %q, want %q", got, tc.want)
			}
		})
	}
}

// installedUnit is what the harness needs of the installed unit file.
type installedUnit struct {
	execStart            []string
	user, group, workDir string
	watchdog             time.Duration
}

func readInstalledUnit(t *testing.T, path string) installedUnit {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var u installedUnit
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			section = strings.Trim(line, "[]")
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s:%d: want Key=value, got %q", path, n, line)
		}
		if section != "Service" {
			continue
		}
		switch key {
		case "ExecStart":
			u.execStart = strings.Fields(value)
		case "User":
			u.user = value
		case "Group":
			u.group = value
		case "WorkingDirectory":
			u.workDir = value
		case "WatchdogSec":
			d, err := time.ParseDuration(value)
			if err != nil {
				t.Fatalf("%s:%d: WatchdogSec=%s: %v", path, n, value, err)
			}
			u.watchdog = d
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(u.execStart) == 0 || u.user == "" || u.workDir == "" {
		t.Fatalf("%s: ExecStart=, User= or WorkingDirectory= missing: %+v", path, u)
	}
	if u.group == "" {
		u.group = u.user
	}
	return u
}

// stderrWatch collects the daemon's stderr and reports its start line.
type stderrWatch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	started chan struct{}
	once    sync.Once
}

func (w *stderrWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if bytes.Contains(w.buf.Bytes(), []byte("boincd started")) {
		w.once.Do(func() { close(w.started) })
	}
	return len(p), nil
}

func (w *stderrWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func lookupIDs(t *testing.T, name string) (uid, gid uint32, groups []uint32) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatalf("user %s after install: %v", name, err)
	}
	id := func(s string) uint32 {
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatalf("user %s: id %q: %v", name, s, err)
		}
		return uint32(n)
	}
	gids, err := u.GroupIds()
	if err != nil {
		t.Fatalf("groups of %s: %v", name, err)
	}
	for _, g := range gids {
		groups = append(groups, id(g))
	}
	return id(u.Uid), id(u.Gid), groups
}

func owner(t *testing.T, path string) (fs.FileMode, uint32, uint32) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return fi.Mode(), st.Uid, st.Gid
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func portFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestDebInstallsAndServiceStarts installs the .deb for real and runs the
// service as its unit says. CI containers have no systemd, so the
// harness plays its part: ExecStart= as User= in WorkingDirectory=, with
// NOTIFY_SOCKET and WATCHDOG_USEC set, then SIGTERM as KillMode=mixed
// sends it.
func TestDebInstallsAndServiceStarts(t *testing.T) {
	const (
		pkg      = "boincd"
		dataDir  = "/var/lib/boincd"
		confFile = "/etc/boincd/boincd.toml"
		unitFile = "/lib/systemd/system/boincd.service"
		wantsDir = "/etc/systemd/system/multi-user.target.wants"
	)
	switch {
	case os.Getenv("CI") != "true" && os.Getenv("BOINCD_TEST_DEB_INSTALL") != "1":
		t.Skip("installs a package system-wide: runs only with CI=true or BOINCD_TEST_DEB_INSTALL=1")
	case os.Geteuid() != 0:
		t.Skip("dpkg -i needs root")
	case testing.Short():
		t.Skip("builds and installs a package; skipped with -short")
	}
	needTool(t, "dpkg", "not a Debian-family machine")
	needTool(t, "dpkg-deb", "not a Debian-family machine")
	// Never touch a real installation or a volunteer's data: purge would
	// delete it.
	if err := exec.CommandContext(t.Context(), "dpkg", "-s", pkg).Run(); err == nil {
		t.Skipf("package %s is already installed here; not replacing it", pkg)
	}
	if exists(dataDir) {
		t.Skipf("%s exists without the package; purge would delete it", dataDir)
	}
	_, userErr := user.Lookup(pkg)
	_, groupErr := user.LookupGroup(pkg)
	userExisted, groupExisted := userErr == nil, groupErr == nil

	root := repoRoot(t)
	bin := buildBoincd(t, root)
	deb := buildPackage(t, root, bin, "deb", "0.1.0")
	upgrade := buildPackage(t, root, bin, "deb", "0.2.0")

	// Cleanups run last-registered first: the daemon is stopped (below)
	// before the package is purged and the user we created removed.
	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "--purge", pkg).CombinedOutput(); err != nil {
			t.Errorf("cleanup: dpkg --purge %s: %v\n%s", pkg, err, out)
		}
		if !userExisted {
			if out, err := exec.Command("userdel", pkg).CombinedOutput(); err != nil {
				t.Errorf("cleanup: userdel %s: %v\n%s", pkg, err, out)
			}
		}
		if _, err := user.LookupGroup(pkg); !groupExisted && err == nil {
			if out, err := exec.Command("groupdel", pkg).CombinedOutput(); err != nil {
				t.Errorf("cleanup: groupdel %s: %v\n%s", pkg, err, out)
			}
		}
	})
	t.Log(output(t, "dpkg", "-i", deb))

	// What postinstall promised.
	uid, gid, groups := lookupIDs(t, pkg)
	if mode, ou, og := owner(t, dataDir); ou != uid || og != gid || mode.Perm() != 0o750 || !mode.IsDir() {
		t.Errorf("%s: %v uid %d gid %d, want a 0750 directory owned by %s (%d:%d)", dataDir, mode, ou, og, pkg, uid, gid)
	}
	if mode, ou, og := owner(t, filepath.Dir(confFile)); ou != 0 || og != gid || mode.Perm() != 0o750 {
		t.Errorf("%s: %v uid %d gid %d, want 0750 root:%s", filepath.Dir(confFile), mode, ou, og, pkg)
	}
	if !exists(confFile) {
		t.Errorf("%s missing after install", confFile)
	}
	if u, err := user.Lookup(pkg); err == nil && u.HomeDir != dataDir {
		t.Errorf("user %s: home %s, want %s", pkg, u.HomeDir, dataDir)
	}
	_, systemctlErr := exec.LookPath("systemctl")
	if systemctlErr == nil && !exists(filepath.Join(wantsDir, "boincd.service")) {
		t.Errorf("systemctl is installed but postinstall did not enable boincd.service")
	}

	unit := readInstalledUnit(t, unitFile)
	if unit.user != pkg || unit.group != pkg {
		t.Fatalf("%s runs as %s:%s, want %s:%s", unitFile, unit.user, unit.group, pkg, pkg)
	}

	// NOTIFY_SOCKET: an abstract socket, so the unprivileged daemon can
	// reach it without file permissions.
	notifyAddr := fmt.Sprintf("@boincd-test-notify-%d-%d", os.Getpid(), time.Now().UnixNano())
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: notifyAddr, Net: "unixgram"})
	if err != nil {
		t.Fatalf("notify socket: %v", err)
	}
	messages := make(chan string, 64)
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(messages)
		buf := make([]byte, 4096)
		for {
			n, _, err := notify.ReadFromUnix(buf)
			if err != nil {
				return // closed by the cleanup below
			}
			messages <- string(buf[:n])
		}
	}()
	t.Cleanup(func() {
		notify.Close()
		<-readerDone
	})

	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=" + dataDir, "USER=" + pkg, "LOGNAME=" + pkg,
		"STATE_DIRECTORY=" + dataDir, "CONFIGURATION_DIRECTORY=" + filepath.Dir(confFile),
		"NOTIFY_SOCKET=" + notifyAddr,
	}
	if unit.watchdog > 0 {
		env = append(env, "WATCHDOG_USEC="+strconv.FormatInt(unit.watchdog.Microseconds(), 10))
	}
	// The unit uses the default GUI RPC port. If something else holds it
	// here (a real BOINC client), move the daemon with the config's env
	// override rather than fail on a busy port.
	guiAddr := "127.0.0.1:31416"
	if !portFree(guiAddr) {
		guiAddr = freePort(t)
		t.Logf("31416 is busy here: BOINCD_GUI_RPC_ADDRESS=%s", guiAddr)
		env = append(env, "BOINCD_GUI_RPC_ADDRESS="+guiAddr)
	}

	stderr := &stderrWatch{started: make(chan struct{})}
	cmd := exec.Command(unit.execStart[0], unit.execStart[1:]...)
	cmd.Dir = unit.workDir
	cmd.Env = env
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups},
		Setpgid:    true, // its apps too can be killed as a group, as KillMode=mixed ends
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v as %s: %v", unit.execStart, pkg, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var exitErr error
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	// Started: READY=1 (the daemon's sd_notify), else the start log line
	// or the GUI RPC port.
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var ready, logged, listening bool
	var got []string
	startLine := stderr.started
wait:
	for !ready {
		select {
		case m, ok := <-messages:
			if ok {
				got = append(got, m)
				ready = ready || hasLine(m, "READY=1")
			}
		case <-startLine:
			logged = true
			startLine = nil
		case <-tick.C:
			if !listening {
				if c, err := net.DialTimeout("tcp", guiAddr, time.Second); err == nil {
					c.Close()
					listening = true
				}
			}
		case err := <-exited:
			stopped = true
			t.Fatalf("boincd exited during start: %v\n%s", err, stderr)
		case <-deadline:
			break wait
		}
	}
	switch {
	case ready:
		t.Logf("READY=1 received (notifications: %q)", got)
	case logged:
		t.Logf("no READY=1 within 20 s (sd_notify not wired?); started by the \"boincd started\" log line")
	case listening:
		t.Logf("no READY=1 within 20 s (sd_notify not wired?); started by GUI RPC accepting on %s", guiAddr)
	default:
		t.Fatalf("boincd did not start within 20 s: no READY=1, no start log line, %s not accepting\n%s", guiAddr, stderr)
	}

	// Stop as systemd does with KillMode=mixed: SIGTERM to the main
	// process only.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case exitErr = <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("boincd still running 30 s after SIGTERM\n%s", stderr)
	}
	if exitErr != nil {
		t.Fatalf("boincd exit after SIGTERM: %v, want 0\n%s", exitErr, stderr)
	}
	stopping := false
	for {
		select {
		case m, ok := <-messages:
			if ok {
				stopping = stopping || hasLine(m, "STOPPING=1")
				continue
			}
		default:
		}
		break
	}
	t.Logf("exited 0 after SIGTERM; STOPPING=1 received: %v", stopping)

	// It ran as the service user in the data directory.
	pw := filepath.Join(dataDir, "gui_rpc_auth.cfg")
	if mode, ou, _ := owner(t, pw); ou != uid || mode.Perm() != 0o600 {
		t.Errorf("%s: %v owned by uid %d, want 0600 owned by %s", pw, mode, ou, pkg)
	}

	// Upgrade: the volunteer's config edit and data stay, and a service
	// the admin disabled stays disabled.
	edited := append(readFile(t, confFile), "# local edit\n"...)
	if err := os.WriteFile(confFile, edited, 0o644); err != nil {
		t.Fatal(err)
	}
	if systemctlErr == nil {
		output(t, "systemctl", "disable", "boincd.service")
	}
	t.Log(output(t, "dpkg", "-i", upgrade))
	if v := output(t, "dpkg-query", "-W", "-f=${Version}", pkg); v != "0.2.0" {
		t.Errorf("installed version %q after upgrade, want 0.2.0", v)
	}
	if !bytes.Equal(readFile(t, confFile), edited) {
		t.Errorf("%s: the local edit did not survive the upgrade", confFile)
	}
	if !exists(pw) {
		t.Errorf("%s gone after upgrade", pw)
	}
	if systemctlErr == nil && exists(filepath.Join(wantsDir, "boincd.service")) {
		t.Errorf("upgrade re-enabled boincd.service that was disabled")
	}

	// Remove disables the service and keeps data and config; purge
	// deletes them.
	if systemctlErr == nil {
		output(t, "systemctl", "enable", "boincd.service")
	}
	t.Log(output(t, "dpkg", "--remove", pkg))
	for _, gone := range []string{"/usr/bin/boincd", filepath.Join(wantsDir, "boincd.service")} {
		if exists(gone) {
			t.Errorf("%s still there after dpkg --remove", gone)
		}
	}
	for _, kept := range []string{pw, confFile} {
		if !exists(kept) {
			t.Errorf("%s gone after a plain dpkg --remove, want it kept until purge", kept)
		}
	}
	t.Log(output(t, "dpkg", "--purge", pkg))
	for _, gone := range []string{dataDir, confFile, unitFile, "/usr/bin/boincd", filepath.Join(wantsDir, "boincd.service")} {
		if exists(gone) {
			t.Errorf("%s still there after dpkg --purge", gone)
		}
	}
	if err := exec.Command("dpkg", "-s", pkg).Run(); err == nil {
		t.Errorf("dpkg -s %s: still installed after purge", pkg)
	}
	// Debian keeps system users on purge (postremove.sh says why).
	if _, err := user.Lookup(pkg); err != nil {
		t.Errorf("user %s after purge: %v, want it kept", pkg, err)
	}
}

// hasLine reports whether an sd_notify datagram (newline-separated
// assignments) contains line.
func hasLine(msg, line string) bool {
	for l := range strings.SplitSeq(msg, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// TestMaintainerScriptsParse checks the scripts' syntax with every POSIX
// shell at hand (dpkg runs them with /bin/sh, which is dash on Debian),
// and with shellcheck where it is installed.
func TestMaintainerScriptsParse(t *testing.T) {
	scripts, err := filepath.Glob(filepath.Join(repoRoot(t), "packaging", "scripts", "*.sh"))
	if err != nil || len(scripts) != 3 {
		t.Fatalf("packaging/scripts: %v (err %v), want the three maintainer scripts", scripts, err)
	}
	checkers := [][]string{{"sh", "-n"}, {"dash", "-n"}, {"bash", "--posix", "-n"}, {"shellcheck", "-s", "sh"}}
	for _, script := range scripts {
		data := readFile(t, script)
		if !bytes.HasPrefix(data, []byte("#!/bin/sh\n")) {
			t.Errorf("%s: want #!/bin/sh first: rpm and dpkg run it with its interpreter line", script)
		}
		for _, c := range checkers {
			t.Run(filepath.Base(script)+"/"+c[0], func(t *testing.T) {
				if _, err := exec.LookPath(c[0]); err != nil {
					t.Skipf("%s is not installed", c[0])
				}
				cmd := exec.CommandContext(t.Context(), c[0], append(c[1:], script)...)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("%s %s: %v\n%s", strings.Join(c, " "), script, err, out)
				}
			})
		}
	}
}
