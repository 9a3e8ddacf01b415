//go:build unix

package container

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fake is one scripted engine CLI.
type fake struct {
	name    string // program name on PATH
	version string // what --version prints (may be two lines)
	// run is the shell body for `run …` (default: print hello, exit 0).
	run string
	// ps and images are what the listing commands print.
	ps, images string
}

// fakeEngines writes the fakes as shell scripts into a fresh directory
// and returns an Exec whose PATH is that directory alone, so neither the
// machine's real docker nor an installed podman is ever found. Every call
// is appended to the returned log file.
func fakeEngines(t *testing.T, fakes ...fake) (Exec, string) {
	t.Helper()
	dir := t.TempDir()
	logf := filepath.Join(dir, "calls.log")
	for _, f := range fakes {
		run := f.run
		if run == "" {
			run = "echo 'Hello from Docker!'; exit 0"
		}
		script := "#!/bin/sh\n" +
			"echo \"" + f.name + " $*\" >> '" + logf + "'\n" +
			"case \"$1\" in\n" +
			"--version) /bin/cat <<'EOF'\n" + f.version + "\nEOF\n;;\n" +
			"run) " + run + ";;\n" +
			"ps) /bin/cat <<'EOF'\n" + f.ps + "\nEOF\n;;\n" +
			"image) if [ \"$2\" = ls ]; then /bin/cat <<'EOF'\n" + f.images + "\nEOF\nfi;;\n" +
			"rm) ;;\n" +
			"esac\n"
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return Exec{Env: []string{"PATH=" + dir}}, logf
}

func calls(t *testing.T, logf string) []string {
	t.Helper()
	b, err := os.ReadFile(logf)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

func TestDetect(t *testing.T) {
	const (
		podmanV = "podman version 4.9.3"
		dockerV = "Docker version 24.0.7, build afdd53b"
		// podman-docker's docker prints a notice first (on stderr,
		// which Run merges).
		aliasV = "Emulate Docker CLI using podman. Create /etc/containers/nodocker to quiet msg.\npodman version 5.0.2"
	)
	fail := "echo 'Error: initializing source docker://hello-world:latest: pinging container registry registry-1.docker.io: dial tcp: lookup registry-1.docker.io: no such host' >&2; exit 125"
	tests := []struct {
		name       string
		fakes      []fake
		remote     bool
		wantType   Type
		wantVer    string
		wantCLI    string
		wantReason []string // substrings of Reason
		wantCalls  []string // exact calls, in order
	}{
		{
			name:     "podman first",
			fakes:    []fake{{name: "podman", version: podmanV}, {name: "docker", version: dockerV}},
			wantType: Podman, wantVer: "4.9.3", wantCLI: "podman",
			wantCalls: []string{"podman --version", "podman run --rm hello-world"},
		},
		{
			name:     "docker alone",
			fakes:    []fake{{name: "docker", version: dockerV}},
			wantType: Docker, wantVer: "24.0.7", wantCLI: "docker",
			wantCalls: []string{"docker --version", "docker run --rm hello-world"},
		},
		{
			name:     "podman-docker alias counts as podman",
			fakes:    []fake{{name: "docker", version: aliasV}},
			wantType: Podman, wantVer: "5.0.2", wantCLI: "docker",
		},
		{
			name:     "podman cannot run a container, docker can",
			fakes:    []fake{{name: "podman", version: podmanV, run: fail}, {name: "docker", version: dockerV}},
			wantType: Docker, wantVer: "24.0.7", wantCLI: "docker",
		},
		{
			name:       "failing hello-world",
			fakes:      []fake{{name: "podman", version: podmanV, run: fail}},
			wantReason: []string{"podman 4.9.3 cannot run a container", "exit status 125", "no such host", "docker not installed"},
		},
		{
			name:       "podman and its docker alias both fail: tried once",
			fakes:      []fake{{name: "podman", version: podmanV, run: fail}, {name: "docker", version: aliasV}},
			wantReason: []string{"cannot run a container", "docker is podman (podman-docker)"},
			wantCalls:  []string{"podman --version", "podman run --rm hello-world", "docker --version"},
		},
		{
			name:       "slow hello-world hits the timeout",
			fakes:      []fake{{name: "podman", version: podmanV, run: "exec /bin/sleep 30"}},
			wantReason: []string{"no answer within"},
		},
		{
			name:       "remote data directory skips podman",
			fakes:      []fake{{name: "podman", version: podmanV}},
			remote:     true,
			wantReason: []string{"remote filesystem (nfs)"},
			wantCalls:  []string{"podman --version"},
		},
		{
			name:     "remote data directory: docker still counts",
			fakes:    []fake{{name: "podman", version: podmanV}, {name: "docker", version: dockerV}},
			remote:   true,
			wantType: Docker, wantVer: "24.0.7", wantCLI: "docker",
		},
		{
			name:       "not a version",
			fakes:      []fake{{name: "docker", version: "something else entirely"}},
			wantReason: []string{"not a Docker or podman version"},
		},
		{
			name:       "nothing installed",
			wantReason: []string{"podman not installed", "docker not installed"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run, logf := fakeEngines(t, tc.fakes...)
			d := Detector{
				Runner:     run,
				DataDir:    t.TempDir(),
				RemoteFS:   func(string) (bool, string, error) { return tc.remote, "nfs", nil },
				RunTimeout: 300 * time.Millisecond,
			}
			start := time.Now()
			res := d.Detect(context.Background())
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("Detect took %s", took)
			}
			if res.Engine.Type != tc.wantType || res.Engine.Version != tc.wantVer || res.Engine.CLI != tc.wantCLI {
				t.Errorf("engine = %+v, want %v %q via %q (reason %q)", res.Engine, tc.wantType, tc.wantVer, tc.wantCLI, res.Reason)
			}
			for _, w := range tc.wantReason {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q lacks %q", res.Reason, w)
				}
			}
			if tc.wantType != None && res.Reason != "" {
				t.Errorf("reason %q with an engine found", res.Reason)
			}
			if tc.wantCalls != nil {
				if got := calls(t, logf); !slices.Equal(got, tc.wantCalls) {
					t.Errorf("calls = %q, want %q", got, tc.wantCalls)
				}
			}
		})
	}
}

func TestDetectCancelled(t *testing.T) {
	run, _ := fakeEngines(t, fake{name: "podman", version: "podman version 4.9.3", run: "exec /bin/sleep 30"})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	start := time.Now()
	res := (&Detector{Runner: run, RemoteFS: func(string) (bool, string, error) { return false, "", nil }}).Detect(ctx)
	if res.Found() || time.Since(start) > 10*time.Second {
		t.Fatalf("cancelled detection: %+v after %s", res, time.Since(start))
	}
}

func TestCleanup(t *testing.T) {
	const proj = "einstein.phys.uwm.edu"
	run, logf := fakeEngines(t, fake{
		name:    "podman",
		version: "podman version 4.9.3",
		ps: strings.Join([]string{
			"boinc__einstein.phys.uwm.edu__wu_1_0", // a task still here
			"boinc__einstein.phys.uwm.edu__wu_2_1", // task gone
			"boinc__other.org__x_0",                // detached project
			"my_postgres",                          // the volunteer's own
		}, "\n"),
		images: strings.Join([]string{
			"localhost/boinc__einstein.phys.uwm.edu__wu_1:latest",     // the task's workunit
			"localhost/boinc__einstein.phys.uwm.edu__wu_2:latest",     // gone
			"localhost/boinc__einstein.phys.uwm.edu__brp7__v1:latest", // app-named image, app in use
			"localhost/boinc__other.org__x:latest",                    // detached
			"docker.io/library/hello-world:latest",                    // the detection's, kept
			"docker.io/boinc/client:latest",                           // someone else's
			"ghcr.io/someone/boinc__lookalike:1",                      // not built here
			"<none>:<none>",
		}, "\n"),
	})
	keep := KeepFor([]Task{{ProjectDir: proj, App: "brp7", Workunit: "wu_1", Result: "wu_1_0"}})
	removed, err := Cleanup(context.Background(), run, Engine{Type: Podman, Version: "4.9.3", CLI: "podman"}, keep, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Removed{
		{"container", "boinc__einstein.phys.uwm.edu__wu_2_1"},
		{"container", "boinc__other.org__x_0"},
		{"image", "localhost/boinc__einstein.phys.uwm.edu__wu_2:latest"},
		{"image", "localhost/boinc__other.org__x:latest"},
	}
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v, want %v", removed, want)
	}
	var rms []string
	for _, c := range calls(t, logf) {
		if strings.Contains(c, " rm ") {
			rms = append(rms, c)
		}
	}
	wantRm := []string{
		"podman rm --force boinc__einstein.phys.uwm.edu__wu_2_1",
		"podman rm --force boinc__other.org__x_0",
		"podman image rm localhost/boinc__einstein.phys.uwm.edu__wu_2:latest",
		"podman image rm localhost/boinc__other.org__x:latest",
	}
	if !slices.Equal(rms, wantRm) {
		t.Errorf("rm calls %q, want %q", rms, wantRm)
	}
}

func TestExecLookPath(t *testing.T) {
	run, _ := fakeEngines(t, fake{name: "docker", version: "Docker version 1.0"})
	if _, err := run.LookPath("podman"); err == nil {
		t.Error("podman found on a PATH without it")
	}
	p, err := run.LookPath("docker")
	if err != nil || !strings.HasSuffix(p, "/docker") {
		t.Errorf("LookPath(docker) = %q, %v", p, err)
	}
}
