package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// podmanAppUser is the account the container job runs as: rootless
// podman, as on a volunteer's host (BOINCD_TEST_PODMAN_USER overrides).
const podmanAppUser = "boinc"

// containerJobScript stands in for the project's docker_wrapper: it runs
// the job's container, named as the 8.x wrapper names it, and keeps what
// the container printed as the job's output.
const containerJobScript = `#!/bin/sh
export HOME=@HOME@ XDG_RUNTIME_DIR=@RUN@
name=$(sed -n 's:.*<result_name>\(.*\)</result_name>.*:\1:p' init_data.xml | tr 'A-Z' 'a-z')
proj=$(sed -n 's:.*<project_dir>\(.*\)</project_dir>.*:\1:p' init_data.xml)
proj=$(basename "$proj" | tr 'A-Z' 'a-z')
@PODMAN@ run --rm --name "boinc__${proj}__$name" hello-world > out 2>&1
rc=$?
echo "container exit $rc" >&2
[ $rc -eq 0 ] || exit $rc
echo 0 > boinc_finish_called
exit 0
`

// TestContainerJobWithPodman runs a container job from the test project
// with the real podman, rootless as the app user: the daemon finds the
// engine, reports it to the project, runs the job and uploads what the
// container printed. It skips, saying why, where podman cannot run a
// container here (not installed, not root, no image and no way to build
// one, a sandbox that refuses containers).
func TestContainerJobWithPodman(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the job runs as another account (app_user), as rootless podman")
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Skip("podman not installed")
	}
	name := podmanAppUser
	if v := os.Getenv("BOINCD_TEST_PODMAN_USER"); v != "" {
		name = v
	}
	acct := testsupport.LookupAccount(t, name)
	uid, gid := acct.UID, acct.GID

	root := t.TempDir()
	// The app account must reach the data directory and its own HOME.
	testsupport.OpenUp(t, root)
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	// podman's runtime directory: its own, so that the pause process
	// rootless podman leaves behind is found and ended with the test.
	run := filepath.Join(home, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	// Every podman run as the app user may start a pause process (the
	// daemon's detection runs podman with an environment of its own, so
	// its pause.pid may lie elsewhere): end the ones this test started.
	before := pauseProcesses(uid)
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(run, "libpod", "tmp", "pause.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		for pid := range pauseProcesses(uid) {
			if !before[pid] {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	asUser := func(cmd *exec.Cmd) {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		cmd.Env = append(os.Environ(), "HOME="+home, "USER="+name, "XDG_RUNTIME_DIR="+run)
		cmd.Dir = home
	}
	podmanDo := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, podman, args...)
		asUser(cmd)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	chownAll := func() {
		_ = filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err == nil {
				err = os.Lchown(p, uid, gid)
			}
			return err
		})
	}
	chownAll()
	// hello-world cannot be pulled without a network: build a tiny
	// stand-in (one static binary) and import it under that name.
	if _, err := podmanDo("image", "exists", "hello-world"); err != nil {
		if err := buildHelloImage(t, root, home); err != nil {
			t.Skipf("no hello-world image and cannot build one: %v", err)
		}
		chownAll()
		if out, err := podmanDo("import", "--change", `CMD ["/hello"]`, filepath.Join(root, "hello.tar"), "hello-world"); err != nil {
			t.Skipf("podman import as %s: %v: %s", name, err, out)
		}
	}
	out, err := podmanDo("run", "--rm", "hello-world")
	if err != nil {
		// Sandboxes (CI containers) often lack /dev/net/tun for rootless
		// networking or run hybrid cgroups crun refuses: try the settings
		// that work there, as a volunteer would in containers.conf.
		conf := filepath.Join(home, ".config", "containers", "containers.conf")
		if err2 := os.MkdirAll(filepath.Dir(conf), 0o755); err2 == nil {
			_ = os.WriteFile(conf, []byte("[containers]\nnetns = \"none\"\n[engine]\nruntime = \"runc\"\n"), 0o644)
			chownAll()
		}
		out2, err2 := podmanDo("run", "--rm", "hello-world")
		if err2 != nil {
			t.Skipf("podman cannot run a container as %s here: %v: %s; with runc and no network: %v: %s", name, err, out, err2, out2)
		}
	}

	script := strings.NewReplacer("@HOME@", home, "@RUN@", run, "@PODMAN@", podman).Replace(containerJobScript)
	srv := testsupport.StartProject(t, testproject.Config{
		Apps: []testproject.App{{
			Name: "buda", PlanClass: "docker_cpu",
			Files: []testproject.AppFile{{Name: "buda_wrapper.sh", Data: []byte(script)}},
		}},
		TotalJobs: 1,
	})
	t.Logf("podman works as %s; running a container job", name)

	cfg := projectsConfig(srv)
	cfg.AppUser = name
	h := startDaemonIn(t, filepath.Join(root, "data"), cfg, func(o *Options) {
		// The detection as the job will run: the app account, with the
		// HOME that holds its podman storage (its own is /nonexistent
		// for a system account).
		o.Containers = container.Exec{Prepare: asUser}
	})
	testsupport.WaitFor(t, 3*time.Minute, "podman detected", func() bool {
		for _, r := range h.logs.Records() {
			if strings.HasPrefix(r.Str("msg"), "Docker: ") {
				return true
			}
		}
		return false
	})
	for _, r := range h.logs.Records() {
		if msg := r.Str("msg"); strings.HasPrefix(msg, "Docker: ") {
			if !strings.HasPrefix(msg, "Docker: version ") {
				t.Fatalf("the daemon did not find podman: %s", msg)
			}
			t.Logf("daemon: %s", msg)
		}
	}
	testsupport.WaitFor(t, 3*time.Minute, "the container job reported", func() bool {
		return len(srv.Stats().ReportedResults) == 1
	})
	st := srv.Stats()
	for name, r := range st.ReportedResults {
		if r.ExitStatus != 0 {
			t.Fatalf("job %s failed: exit %d, stderr %s", name, r.ExitStatus, r.StderrOut)
		}
	}
	var outs []string
	for _, b := range st.Uploaded {
		outs = append(outs, string(b))
	}
	if len(outs) != 1 || !strings.Contains(outs[0], "Hello from Docker!") {
		t.Fatalf("uploaded %q: not the container's output", outs)
	}
	t.Logf("container job output: %q", outs[0])
	if !strings.Contains(string(st.LastRequest), "<docker_type>2</docker_type>") {
		t.Errorf("the request does not report podman:\n%s", st.LastRequest)
	}
	if out, err := podmanDo("ps", "--all", "--format", "{{.Names}}"); err != nil || strings.Contains(out, "boinc__") {
		t.Errorf("containers left: %q, %v", out, err)
	}
}

// buildHelloImage writes root/hello.tar: a root filesystem holding one
// static program, /hello, that greets as hello-world does.
func buildHelloImage(t *testing.T, root, home string) error {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	src := filepath.Join(root, "hellosrc")
	if err := os.MkdirAll(filepath.Join(src, "rootfs"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module hello\n\ngo 1.21\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"Hello from Docker! (boincd test image)\") }\n"), 0o644); err != nil {
		return err
	}
	build := exec.Command(goBin, "build", "-o", filepath.Join(src, "rootfs", "hello"), ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return &exec.Error{Name: "go build: " + string(out), Err: err}
	}
	tar := exec.Command("tar", "-C", filepath.Join(src, "rootfs"), "-cf", filepath.Join(root, "hello.tar"), "hello")
	if out, err := tar.CombinedOutput(); err != nil {
		return &exec.Error{Name: "tar: " + string(out), Err: err}
	}
	return os.Chmod(filepath.Join(root, "hello.tar"), 0o644)
}

// pauseProcesses lists the rootless-podman pause processes (catatonit -P)
// that run as uid.
func pauseProcesses(uid int) map[int]bool {
	out := map[int]bool{}
	for p := range testsupport.Processes() {
		if p.Comm() != "catatonit" {
			continue
		}
		if u, ok := p.UID(); ok && u == uid {
			out[int(p)] = true
		}
	}
	return out
}
