// Package container finds the container engine (podman or Docker) that
// BOINC 8.x container apps ("BUDA" apps, run by a project's docker_wrapper)
// need, and cleans up the images and containers those apps leave behind.
//
// Projects send container jobs only to hosts that report a working engine
// in <host_info> (<docker_version>, <docker_type>), so detection follows
// the C++ 8.x client: podman first, then docker; the version comes from
// `<cli> --version`; and an engine counts only if it can really run a
// container as the account apps run as (`<cli> run --rm hello-world`).
// Every command goes through a Runner, so tests script the engine.
package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// Type is the engine kind as <docker_type> carries it.
type Type = boinc.DockerType

// The engine kinds.
const (
	None   = boinc.DockerNone
	Docker = boinc.Docker
	Podman = boinc.Podman
)

// Engine is a working container engine: the command to call and what it
// reports about itself.
type Engine struct {
	Type Type
	// Version is the bare version ("4.9.3"), what <docker_version> carries.
	Version string
	// CLI is the program run for it ("podman", or "docker" when that is
	// podman-docker's alias or Docker itself).
	CLI string
}

// Result is what a detection found: the engine, or why there is none.
type Result struct {
	Engine Engine // Type None: no working engine
	// Reason says why no engine counts, one clause per program tried;
	// empty when one does.
	Reason string
	// Disabled: detection was not attempted (dont_use_docker).
	Disabled bool
}

// Found reports whether a working engine was found.
func (r Result) Found() bool { return r.Engine.Type != None }

// Summary is the one-line log text, as the C++ client's "Docker: …".
func (r Result) Summary() string {
	switch {
	case r.Disabled:
		return "Docker: not used (dont_use_docker)"
	case r.Found():
		return fmt.Sprintf("Docker: version %s (%s)", r.Engine.Version, r.Engine.Type)
	}
	return "Docker: not usable: " + r.Reason
}

// Detector finds the engine. Zero fields take the defaults noted.
type Detector struct {
	// Runner runs the engine's commands (default Exec{}).
	Runner Runner
	// DataDir is the client's data directory: podman keeps its storage
	// and locks beside the user's files and fails on NFS and the like, so
	// a data directory on a remote filesystem skips podman, as the C++
	// client does.
	DataDir string
	// RemoteFS says whether dir is on a network filesystem and which
	// (default: statfs on Linux, never elsewhere).
	RemoteFS func(dir string) (remote bool, fsName string, err error)
	// VersionTimeout bounds `--version` (default 15 s); RunTimeout bounds
	// `run --rm hello-world` (default 3 min: a first run pulls the image).
	VersionTimeout time.Duration
	RunTimeout     time.Duration
	// TestImage is the image run to prove the engine works (default
	// "hello-world", as the C++ client).
	TestImage string
	Log       *slog.Logger
}

// The commands the engines are called by, in the order tried.
var candidates = []struct {
	cli string
	typ Type
}{{"podman", Podman}, {"docker", Docker}}

// Detect tries podman, then docker, and returns the first that can run
// a container. It blocks for up to a few minutes (an image pull): call
// it off any goroutine that must stay responsive.
func (d *Detector) Detect(ctx context.Context) Result {
	run := d.Runner
	if run == nil {
		run = Exec{}
	}
	log := d.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var why []string
	podmanTried := false
	for _, c := range candidates {
		if ctx.Err() != nil {
			why = append(why, "detection cancelled")
			break
		}
		if _, err := run.LookPath(c.cli); err != nil {
			why = append(why, c.cli+" not installed")
			continue
		}
		out, err := d.runTimed(ctx, run, d.versionTimeout(), c.cli, "--version")
		typ, version := ParseVersion(string(out))
		if err != nil && typ == None {
			why = append(why, fmt.Sprintf("%s --version failed: %s", c.cli, brief(err, out)))
			continue
		}
		if typ == None {
			why = append(why, fmt.Sprintf("%s --version said %q, not a Docker or podman version", c.cli, firstLine(out)))
			continue
		}
		if typ == Podman {
			if podmanTried {
				// podman-docker: `docker` is podman under another name,
				// and podman was just found wanting.
				why = append(why, c.cli+" is podman (podman-docker)")
				continue
			}
			podmanTried = true
			if remote, fs := d.remote(log); remote {
				why = append(why, fmt.Sprintf("%s skipped: the data directory %s is on a remote filesystem (%s), where podman does not work", c.cli, d.DataDir, fs))
				continue
			}
		}
		e := Engine{Type: typ, Version: version, CLI: c.cli}
		if err := d.tryRun(ctx, run, e); err != nil {
			why = append(why, fmt.Sprintf("%s %s cannot run a container: %v", c.cli, version, err))
			continue
		}
		return Result{Engine: e}
	}
	return Result{Reason: strings.Join(why, "; ")}
}

func (d *Detector) versionTimeout() time.Duration {
	if d.VersionTimeout > 0 {
		return d.VersionTimeout
	}
	return 15 * time.Second
}

func (d *Detector) remote(log *slog.Logger) (bool, string) {
	if d.DataDir == "" {
		return false, ""
	}
	f := d.RemoteFS
	if f == nil {
		f = RemoteFS
	}
	remote, name, err := f(d.DataDir)
	if err != nil {
		// Unknown: try podman; the test run decides.
		log.Debug("cannot tell the data directory's filesystem", slog.String("dir", d.DataDir), slog.Any("err", err))
		return false, ""
	}
	return remote, name
}

// tryRun runs the test image and removes its container (--rm); the image
// is kept so the next check needs no download.
func (d *Detector) tryRun(ctx context.Context, run Runner, e Engine) error {
	timeout := d.RunTimeout
	if timeout <= 0 {
		timeout = 3 * time.Minute
	}
	image := d.TestImage
	if image == "" {
		image = "hello-world"
	}
	out, err := d.runTimed(ctx, run, timeout, e.CLI, "run", "--rm", image)
	if err != nil {
		return errors.New(brief(err, out))
	}
	return nil
}

// runTimed runs one command under its own deadline.
func (d *Detector) runTimed(ctx context.Context, run Runner, timeout time.Duration, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run.Run(ctx, name, args...)
	if err != nil && ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return out, fmt.Errorf("no answer within %s: %w", timeout, ctx.Err())
	}
	return out, err
}

// ParseVersion reads `<cli> --version`: "podman version 4.9.3" or "Docker
// version 24.0.7, build afdd53b" on the first or second line (podman-docker
// prints a notice line first). The version is the word after "version",
// without its trailing comma.
func ParseVersion(out string) (Type, string) {
	lines := strings.SplitN(out, "\n", 3)
	for i := 0; i < len(lines) && i < 2; i++ {
		f := strings.Fields(lines[i])
		if len(f) < 3 || !strings.EqualFold(f[1], "version") {
			continue
		}
		v := strings.TrimRight(f[2], ",")
		if v == "" {
			continue
		}
		switch strings.ToLower(f[0]) {
		case "podman":
			return Podman, v
		case "docker":
			return Docker, v
		}
	}
	return None, ""
}

// brief is an error with the line of the command's output that says what
// went wrong: the first naming an error ("Error: …", "docker: Cannot
// connect…"), else the last, since engines end with hints such as "Run
// 'docker run --help' for more information" after the cause.
func brief(err error, out []byte) string {
	last, cause := "", ""
	for l := range strings.Lines(strings.TrimSpace(string(out))) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		last = t
		low := strings.ToLower(t)
		if cause == "" && (strings.Contains(low, "error") || strings.Contains(low, "cannot")) {
			cause = t
		}
	}
	if cause != "" {
		last = cause
	}
	if len(last) > 300 {
		last = last[:300] + "…"
	}
	if last == "" {
		return err.Error()
	}
	return fmt.Sprintf("%v: %s", err, last)
}

func firstLine(out []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
