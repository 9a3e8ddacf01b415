package realserver

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The arm64 case: boincd built for 64-bit ARM Linux (GOARCH=arm64,
// CGO_ENABLED=0, as for a Raspberry Pi) runs under qemu-user
// (qemu-aarch64-static) against the project, which gets a version of
// rsapp for aarch64-unknown-linux-gnu beside its x86_64 one; the C++
// client on this x86_64 host runs beside it as the reference. The app is
// a shell script, which qemu-user does not see: boincd execs it, and the
// host's own shell runs it. What qemu-user cannot show: a real ARM
// kernel's /proc/cpuinfo (it passes the host's through), ARM timing, or
// 32-bit ARM programs (arm-unknown-linux-gnueabihf).

const (
	armPlatform = "aarch64-unknown-linux-gnu"
	qemuAArch64 = "qemu-aarch64-static"
)

// arm64Case is the arm64 feature case.
func arm64Case() featureCase {
	return featureCase{
		name: "arm64",
		about: "boincd for linux/arm64 under qemu-user beside the x86_64 C++ client; the project has rsapp for " + armPlatform +
			" and x86_64: the platform of the version each client's results were computed with",
		setup: installARMVersion,
		start: func(t *testing.T, s *server, r *caseRun) (string, []string) {
			if r.client != "boincd" {
				return r.bin, nil
			}
			qemu, err := exec.LookPath(qemuAArch64)
			if err != nil {
				t.Fatalf("no %s (apt-get install qemu-user-static): %v", qemuAArch64, err)
			}
			// skip_cpu_benchmarks: emulated benchmarks would take minutes
			// and measure qemu, not a board
			prepareSkipBenchmarks(t, s, r)
			return qemu, []string{s.buildARM64(t), "--dir", r.dir, "--gui_rpc_port", strconv.Itoa(r.port)}
		},
		jobs: func(t *testing.T, s *server, r *caseRun) []string {
			return s.targetedJobs(t, r, false)
		},
		check: checkARM64,
	}
}

// buildARM64 builds boincd for linux/arm64 once and returns its path.
func (s *server) buildARM64(t *testing.T) string {
	t.Helper()
	s.armOnce.Do(func() {
		out := filepath.Join(s.root, "boincd-arm64")
		ctx, cancel := s.ctx(4 * time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/boincd")
		cmd.Dir = s.modRoot
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
		t0 := time.Now()
		if b, err := cmd.CombinedOutput(); err != nil {
			s.armErr = fmt.Errorf("GOARCH=arm64 go build ./cmd/boincd: %v\n%s", err, b)
			return
		}
		s.armBin = out
		t.Logf("built boincd for linux/arm64 in %.1f s", time.Since(t0).Seconds())
	})
	if s.armErr != nil {
		t.Fatal(s.armErr)
	}
	return s.armBin
}

// installARMVersion gives rsapp a version for aarch64-unknown-linux-gnu:
// the same script, signed by update_versions.
func installARMVersion(t *testing.T, s *server) {
	t.Helper()
	proj := filepath.Join(s.root, "projects", project)
	apps, _ := filepath.Glob(filepath.Join(proj, "apps", "rsapp", apiAppVersion, apiPlatform, "rsapp_*"))
	if len(apps) == 0 {
		t.Fatalf("no rsapp %s executable under the project's apps/", apiAppVersion)
	}
	exe, err := os.ReadFile(apps[0])
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(proj, "apps", "rsapp", apiAppVersion, armPlatform)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("rsapp_%s_%s", apiAppVersion, armPlatform)), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	logPath := s.addVersions(t, "arm_version", false, "apps")
	n, err := s.sql(fmt.Sprintf("select count(*) from app_version av join platform p on p.id=av.platformid join app a on a.id=av.appid "+
		"where a.name='rsapp' and p.name='%s'", armPlatform))
	if err != nil || strings.TrimSpace(n) != "1" {
		t.Fatalf("rsapp versions for %s after update_versions: %q (%v)\n%s", armPlatform, n, err, tail(logPath, 30))
	}
	s.awaitReread(t, "rsapp for "+armPlatform)
}

// checkARM64: every result of the account was computed by the version for
// the client's own platform (aarch64 for boincd under qemu, x86_64 for
// the C++ client).
func checkARM64(t *testing.T, s *server, r *caseRun) string {
	out, err := s.sql(fmt.Sprintf("select p.name from result res join app_version av on av.id=res.app_version_id "+
		"join platform p on p.id=av.platformid where res.userid=%d", r.userID))
	if err != nil {
		t.Error(err)
		return "?"
	}
	want := apiPlatform
	if r.client == "boincd" {
		want = armPlatform
	}
	got := strings.Fields(out)
	n := 0
	for _, p := range got {
		if p == want {
			n++
		}
	}
	if len(got) == 0 || n != len(got) {
		t.Errorf("%s: results computed by versions for %v, want all %s", r.label, got, want)
	}
	cell := fmt.Sprintf("%s: %d/%d", want, n, len(got))
	if r.client == "boincd" {
		// boincd's start-up line names the platform it detected
		out, _ := os.ReadFile(filepath.Join(r.dir, "rs_client.out"))
		m := startPlatformRE.FindSubmatch(out)
		if m == nil || string(m[1]) != armPlatform {
			t.Errorf("%s: boincd's start-up line names platform %q, want %s", r.label, m, armPlatform)
		} else {
			cell += ", started as " + string(m[1])
		}
	}
	return cell
}

var startPlatformRE = regexp.MustCompile(`msg="boincd starting".* platform=(\S+)`)
