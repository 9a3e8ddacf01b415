package container

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Runner runs the engine's command-line programs. Detect and Cleanup take
// one so tests can script the engine and the daemon can run it as the
// account apps run as.
type Runner interface {
	// LookPath finds a program as Run would start it.
	LookPath(name string) (string, error)
	// Run runs a program to its end and returns its standard output and
	// standard error together. Cancelling ctx kills it.
	Run(ctx context.Context, name string, args ...string) ([]byte, error)
}

// Exec runs real programs.
type Exec struct {
	// Env is the programs' environment; nil: the daemon's own. Its PATH
	// is where programs are looked for.
	Env []string
	// Prepare, when set, adjusts each command before it starts: the
	// daemon makes it run as app_user, since the engine must work for the
	// account that runs the apps, not only for the daemon's.
	Prepare func(*exec.Cmd)
}

// waitDelay bounds how long Run waits, after the engine's process exits
// or is killed, for children that kept its output open: podman leaves
// conmon behind, which would otherwise hold Run until the container ends.
const waitDelay = 5 * time.Second

func (e Exec) env() []string {
	if e.Env != nil {
		return e.Env
	}
	return os.Environ()
}

// LookPath searches the PATH of Env (the daemon's when Env is nil).
func (e Exec) LookPath(name string) (string, error) {
	if e.Env == nil || strings.ContainsRune(name, filepath.Separator) {
		return exec.LookPath(name)
	}
	path := ""
	for _, kv := range e.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if p2, err := exec.LookPath(p); err == nil {
			return p2, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

// Run starts the program found by LookPath.
func (e Exec) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	path, err := e.LookPath(name)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = e.env()
	cmd.WaitDelay = waitDelay
	if e.Prepare != nil {
		e.Prepare(cmd)
	}
	out, err := cmd.CombinedOutput()
	if err != nil && errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		// The program succeeded; only a child still held its output.
		err = nil
	}
	return out, err
}
