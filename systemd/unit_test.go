package systemd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/boincd/boincd/config"
)

const unitPath = "boincd.service"

// unitEntry is one key=value assignment of a unit file.
type unitEntry struct {
	value string
	line  int
}

// unitFile is a unit file parsed the way systemd.syntax(7) describes:
// sections of key=value lines, "#" and ";" comments, a trailing backslash
// continuing a line. Keys may repeat (ExecStart=, Environment=, ...), so
// each keeps every assignment in order.
type unitFile struct {
	path     string
	sections map[string]map[string][]unitEntry
	order    []string // "Section/Key" in first-seen order
}

func parseUnit(path string, data []byte) (*unitFile, error) {
	u := &unitFile{path: path, sections: map[string]map[string][]unitEntry{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	lineNo := 0
	for sc.Scan() {
		lineNo++
		start := lineNo
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, `\`) {
			if !sc.Scan() {
				return nil, fmt.Errorf("%s:%d: line continuation at end of file", path, start)
			}
			lineNo++
			next := strings.TrimSpace(sc.Text())
			if strings.HasPrefix(next, "#") || strings.HasPrefix(next, ";") {
				continue // comments inside a continuation are skipped
			}
			line = strings.TrimSuffix(line, `\`) + " " + next
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") || len(line) < 3 {
				return nil, fmt.Errorf("%s:%d: malformed section header %q", path, start, line)
			}
			section = line[1 : len(line)-1]
			if _, dup := u.sections[section]; dup {
				return nil, fmt.Errorf("%s:%d: section [%s] appears twice", path, start, section)
			}
			u.sections[section] = map[string][]unitEntry{}
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("%s:%d: assignment %q before any [section]", path, start, line)
		}
		key, value, ok := strings.Cut(line, "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" || strings.ContainsAny(key, " \t") {
			return nil, fmt.Errorf("%s:%d: want Key=value, got %q", path, start, line)
		}
		if _, seen := u.sections[section][key]; !seen {
			u.order = append(u.order, section+"/"+key)
		}
		u.sections[section][key] = append(u.sections[section][key], unitEntry{strings.TrimSpace(value), start})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return u, nil
}

// get returns the effective (last) value of section/key.
func (u *unitFile) get(section, key string) (string, bool) {
	es := u.sections[section][key]
	if len(es) == 0 {
		return "", false
	}
	return es[len(es)-1].value, true
}

func loadUnit(t *testing.T) *unitFile {
	t.Helper()
	data, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(unitPath, data)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestParseUnitRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no section", "Type=notify\n", "before any [section]"},
		{"no equals", "[Service]\nType notify\n", "want Key=value"},
		{"empty key", "[Service]\n=notify\n", "want Key=value"},
		{"bad header", "[Service\nType=notify\n", "malformed section header"},
		{"duplicate section", "[Service]\n[Service]\n", "appears twice"},
		{"dangling continuation", "[Service]\nExecStart=/bin/true \\", "continuation at end of file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseUnit("x.service", []byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "x.service:") {
				t.Fatalf("err = %v, want one naming x.service and containing %q", err, tc.want)
			}
		})
	}
}

func TestParseUnitContinuationAndRepeats(t *testing.T) {
	u, err := parseUnit("x.service", []byte("[Service]\n; comment\nExecStart=/bin/a \\\n  # skipped\n  --b\nEnvironment=A=1\nEnvironment=B=2\n"))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := u.get("Service", "ExecStart"); strings.Join(strings.Fields(v), " ") != "/bin/a --b" {
		t.Errorf("ExecStart = %q, want the continued line", v)
	}
	if es := u.sections["Service"]["Environment"]; len(es) != 2 || es[1].value != "B=2" {
		t.Errorf("Environment = %v, want both assignments", es)
	}
}

// requiredDirectives is the whole unit: every directive it sets, with its
// value. A directive added to the unit must be added here and explained
// in README.md.
var requiredDirectives = []struct {
	section, key, want string
}{
	{"Unit", "Description", "boincd BOINC client (volunteer computing)"},
	{"Unit", "Documentation", "file:/usr/share/doc/boincd/README.md file:/usr/share/doc/boincd/systemd.md"},
	{"Unit", "Wants", "network-online.target"},
	{"Unit", "After", "network-online.target"},
	{"Unit", "StartLimitIntervalSec", "10min"},
	{"Unit", "StartLimitBurst", "5"},

	{"Service", "Type", "notify"},
	{"Service", "NotifyAccess", "main"},
	{"Service", "User", "boincd"},
	{"Service", "Group", "boincd"},
	{"Service", "StateDirectory", "boincd"},
	{"Service", "StateDirectoryMode", "0750"},
	{"Service", "ConfigurationDirectory", "boincd"},
	{"Service", "ConfigurationDirectoryMode", "0750"},
	{"Service", "WorkingDirectory", "/var/lib/boincd"},
	{"Service", "UMask", "0027"},
	{"Service", "ExecStart", "/usr/bin/boincd --dir /var/lib/boincd --config /etc/boincd/boincd.toml"},
	{"Service", "ExecReload", "/bin/kill -HUP $MAINPID"},
	{"Service", "Restart", "on-failure"},
	{"Service", "RestartSec", "30s"},
	{"Service", "KillMode", "mixed"},
	{"Service", "KillSignal", "SIGTERM"},
	{"Service", "TimeoutStartSec", "90s"},
	{"Service", "TimeoutStopSec", "90s"},
	{"Service", "WatchdogSec", "120s"},
	{"Service", "Nice", "10"},
	{"Service", "IOSchedulingClass", "best-effort"},
	{"Service", "IOSchedulingPriority", "7"},
	{"Service", "ProtectSystem", "full"},
	{"Service", "ProtectHome", "true"},
	{"Service", "PrivateTmp", "true"},
	{"Service", "NoNewPrivileges", "true"},
	{"Service", "RestrictSUIDSGID", "true"},
	{"Service", "LockPersonality", "true"},
	{"Service", "ProtectKernelTunables", "true"},
	{"Service", "ProtectKernelModules", "true"},
	{"Service", "ProtectKernelLogs", "true"},
	{"Service", "ProtectControlGroups", "true"},
	{"Service", "ProtectHostname", "true"},
	{"Service", "RestrictRealtime", "true"},
	{"Service", "RemoveIPC", "true"},

	{"Install", "WantedBy", "multi-user.target"},
}

// forbiddenDirectives would each break some science app or host check;
// README.md says which.
var forbiddenDirectives = []struct {
	key, why string
}{
	{"MemoryDenyWriteExecute", "JIT compilers (Java, LuaJIT) and the NVIDIA/OpenCL drivers map writable+executable memory"},
	{"PrivateDevices", "hides /dev/nvidia*, /dev/dri, /dev/kfd (GPUs) and /dev/input, /dev/pts (idle detection)"},
	{"DevicePolicy", "a device allow-list must track every GPU vendor's nodes"},
	{"DeviceAllow", "implies a device allow-list, see DevicePolicy"},
	{"ProtectClock", "implies DeviceAllow=char-rtc, i.e. a device allow-list that blocks the GPUs"},
	{"SystemCallArchitectures", "=native kills the 32-bit x86 apps many projects still ship"},
	{"SystemCallFilter", "science apps and their runtimes use syscalls no list can foresee"},
	{"RestrictNamespaces", "container-based apps (apptainer/singularity in LHC@home) need user namespaces"},
	{"PrivateUsers", "breaks GPU device group access and container-based apps"},
	{"RestrictAddressFamilies", "apps' own network and IPC needs are unknown"},
	{"CPUSchedulingPolicy", "SCHED_IDLE is inherited by apps and starves GPU feeder threads"},
	{"ProtectProc", "hiding other users' processes skews the other-programs CPU load check"},
	{"CapabilityBoundingSet", "the daemon runs unprivileged; an empty set changes nothing but hides setuid failures less clearly"},
	{"SupplementaryGroups", "a missing group (render is not everywhere) makes the unit fail to start; postinstall adds boincd to video/render instead"},
	{"DynamicUser", "data must survive reinstalls under a stable owner, and GPU groups must be added to a real user"},
}

func TestUnitRequiredDirectives(t *testing.T) {
	u := loadUnit(t)
	checked := map[string]bool{}
	for _, d := range requiredDirectives {
		checked[d.section+"/"+d.key] = true
		t.Run(d.section+"/"+d.key, func(t *testing.T) {
			es := u.sections[d.section][d.key]
			if len(es) == 0 {
				t.Fatalf("%s: [%s] %s= is missing, want %q", u.path, d.section, d.key, d.want)
			}
			if len(es) > 1 {
				t.Errorf("%s:%d: [%s] %s= is set %d times; the unit sets each directive once", u.path, es[1].line, d.section, d.key, len(es))
			}
			if got := es[len(es)-1].value; got != d.want {
				t.Errorf("%s:%d: %s=%s, want %s", u.path, es[len(es)-1].line, d.key, got, d.want)
			}
		})
	}
	for _, k := range u.order {
		if !checked[k] {
			t.Errorf("%s: %s is set but not in requiredDirectives: add it there and explain it in README.md", u.path, k)
		}
	}
}

func TestUnitLeavesOutHardeningThatBreaksApps(t *testing.T) {
	u := loadUnit(t)
	for _, d := range forbiddenDirectives {
		t.Run(d.key, func(t *testing.T) {
			for section, keys := range u.sections {
				if es, ok := keys[d.key]; ok {
					t.Errorf("%s:%d: [%s] %s= must not be set: %s", u.path, es[0].line, section, d.key, d.why)
				}
			}
		})
	}
}

func TestUnitPathsAgree(t *testing.T) {
	u := loadUnit(t)
	execStart, _ := u.get("Service", "ExecStart")
	argv := strings.Fields(execStart)
	flags := map[string]string{}
	for i := 1; i+1 < len(argv); i += 2 {
		flags[argv[i]] = argv[i+1]
	}
	state, _ := u.get("Service", "StateDirectory")
	conf, _ := u.get("Service", "ConfigurationDirectory")
	wd, _ := u.get("Service", "WorkingDirectory")
	for _, tc := range []struct {
		what, got, want string
	}{
		{"ExecStart --dir vs StateDirectory=", flags["--dir"], "/var/lib/" + state},
		{"WorkingDirectory= vs --dir", wd, flags["--dir"]},
		{"ExecStart --config vs ConfigurationDirectory=", flags["--config"], "/etc/" + conf + "/" + config.FileName},
		{"ExecStart binary", argv[0], "/usr/bin/boincd"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s: got %q, want %q", u.path, tc.what, tc.got, tc.want)
		}
	}
}

func TestReadmeExplainsEveryDirective(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	u := loadUnit(t)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Za-z]+)=").FindAllSubmatch(readme, -1) {
		documented[string(m[1])] = true
	}
	for _, k := range u.order {
		_, key, _ := strings.Cut(k, "/")
		if !documented[key] {
			t.Errorf("README.md does not explain `%s=` (set in %s)", key, u.path)
		}
	}
	for _, d := range forbiddenDirectives {
		if !documented[d.key] {
			t.Errorf("README.md does not say why `%s=` is left out", d.key)
		}
	}
}

// exampleLine is a commented-out example in boincd.toml: "#" directly
// followed by a key or a table header. Prose comments have "# ".
var exampleLine = regexp.MustCompile(`^#(\[|[a-z_]+ *=)`)

func TestDefaultConfig(t *testing.T) {
	data, err := os.ReadFile(config.FileName)
	if err != nil {
		t.Fatal(err)
	}
	var uncommented []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if exampleLine.MatchString(line) {
			line = line[1:]
		}
		uncommented = append(uncommented, line)
	}
	for _, tc := range []struct {
		name         string
		data         []byte
		wantProjects int
	}{
		{"as shipped attaches nothing", data, 0},
		{"examples uncommented are valid", []byte(strings.Join(uncommented, "\n")), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := config.Parse("/etc/boincd/"+config.FileName, tc.data)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Projects) != tc.wantProjects {
				t.Fatalf("%d projects, want %d", len(c.Projects), tc.wantProjects)
			}
		})
	}
}

// buildBoincd builds the daemon into a temp dir and returns its path.
func buildBoincd(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "boincd")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/boincd")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/boincd: %v\n%s", err, out)
	}
	return bin
}

func TestUnitAgainstBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds boincd; skipped with -short")
	}
	bin := buildBoincd(t)
	u := loadUnit(t)
	execStart, _ := u.get("Service", "ExecStart")
	argv := strings.Fields(execStart)

	t.Run("ExecStart flags accepted", func(t *testing.T) {
		// -help after the unit's flags: the flag parser rejects an unknown
		// flag (exit 2) before it reaches -help (exit 0).
		cmd := exec.CommandContext(t.Context(), bin, append(argv[1:], "-help")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("boincd %s -help: %v\n%s", strings.Join(argv[1:], " "), err, out)
		}
	})

	t.Run("systemd-analyze verify", func(t *testing.T) {
		analyze, err := exec.LookPath("systemd-analyze")
		if err != nil {
			t.Skip("systemd-analyze is not installed (no systemd package, as in minimal CI images); the directive tables above still check the unit")
		}
		data, err := os.ReadFile(unitPath)
		if err != nil {
			t.Fatal(err)
		}
		// verify insists that ExecStart's binary exists: point it at the
		// freshly built one. Same for ExecReload's kill, which minimal
		// images (no procps) lack.
		text := strings.Replace(string(data), "ExecStart="+argv[0], "ExecStart="+bin, 1)
		if _, err := os.Stat("/bin/kill"); err != nil {
			t.Logf("/bin/kill missing here (%v): verifying with ExecReload=/bin/true", err)
			text = strings.Replace(text, "ExecReload=/bin/kill -HUP $MAINPID", "ExecReload=/bin/true", 1)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, unitPath)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), analyze, "verify", path)
		out, err := cmd.CombinedOutput()
		var exitErr *exec.ExitError
		if err != nil && !errors.As(err, &exitErr) {
			t.Fatalf("systemd-analyze verify: %v", err)
		}
		// verify exits 0 on unknown keys and bad values (it only warns),
		// so any line about our unit is a failure. Lines about other units
		// of the host are not ours to fix.
		var ours []string
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.Contains(line, unitPath) || strings.Contains(line, bin) {
				ours = append(ours, line)
			}
		}
		if err != nil {
			t.Fatalf("systemd-analyze verify %s: %v\n%s", path, err, out)
		}
		if ours = slices.DeleteFunc(ours, func(s string) bool { return s == "" }); len(ours) > 0 {
			t.Fatalf("systemd-analyze verify %s warns about the unit:\n%s", path, strings.Join(ours, "\n"))
		}
		if len(out) > 0 {
			t.Logf("systemd-analyze verify (about other units):\n%s", out)
		}
		// The exposure score is informative only: the hardening is capped
		// by what science apps need (README.md).
		sec, err := exec.CommandContext(t.Context(), analyze, "security", "--offline=yes", path).CombinedOutput()
		if err == nil {
			if i := bytes.Index(sec, []byte("Overall exposure level")); i >= 0 {
				t.Log(strings.TrimSpace(string(sec[i:])))
			}
		}
	})
}
