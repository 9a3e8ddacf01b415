package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
)

// The policy study is a command of its own, boincd-sim-sweep (in
// ./boincd-sim-sweep), so that the emulator links none of the plotting
// stack: its fonts and package initialisation would cost every emulator
// run about 5 MB of resident memory (bench/emulator). "boincd-sim
// --sweep" runs it.
const (
	sweepCommand = "boincd-sim-sweep"
	sweepPackage = "github.com/boincd/boincd/cmd/boincd-sim/boincd-sim-sweep"
	// sweepEnv names the study command explicitly (tests, unusual
	// installs).
	sweepEnv = "BOINCD_SIM_SWEEP"
)

// runSweep is "boincd-sim --sweep": it runs boincd-sim-sweep with the
// sweep's flags and passes its exit status on.
func runSweep(outDir, only string, seeds int, quick, compare bool, stdout, stderr io.Writer) int {
	if seeds < 1 || seeds > 1000 {
		fmt.Fprintf(stderr, "boincd-sim: --seeds %d: want 1..1000\n", seeds)
		return 2
	}
	name, pre, err := findSweep()
	if err != nil {
		fmt.Fprintln(stderr, "boincd-sim:", err)
		return 1
	}
	// A study binary left beside boincd-sim or on the PATH by an older
	// build runs the old policies and writes its results as new ones,
	// silently: say which one runs and when it was built.
	if len(pre) == 0 {
		built := "modification time unknown"
		if fi, err := os.Stat(name); err == nil {
			built = "built " + fi.ModTime().Format("2006-01-02 15:04:05 MST")
		}
		fmt.Fprintf(stderr, "boincd-sim: the study runs %s (%s)\n", name, built)
	} else {
		fmt.Fprintf(stderr, "boincd-sim: the study runs %s %s\n", name, strings.Join(pre, " "))
	}
	args := append(pre, "--out", outDir, "--seeds", strconv.Itoa(seeds), "--only", only)
	if quick {
		args = append(args, "--quick")
	}
	if compare {
		args = append(args, "--compare")
	}
	cmd := exec.Command(name, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	// An interrupt reaches the study too (same process group): it stops
	// its runs; wait for it rather than leave it behind.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.ExitCode() > 0:
		return ee.ExitCode()
	default:
		fmt.Fprintf(stderr, "boincd-sim: %s: %v\n", name, err)
		return 1
	}
}

// findSweep finds the study command: $BOINCD_SIM_SWEEP, boincd-sim-sweep
// next to this executable or on the PATH, else "go run" of its package
// when the working directory is inside the boincd module (go run
// ./cmd/boincd-sim --sweep in a checkout).
func findSweep() (name string, pre []string, err error) {
	if p := os.Getenv(sweepEnv); p != "" {
		return p, nil, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), sweepCommand)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil, nil
		}
	}
	if p, err := exec.LookPath(sweepCommand); err == nil {
		return p, nil, nil
	}
	if goBin, err := exec.LookPath("go"); err == nil && inBoincdModule() {
		return goBin, []string{"run", sweepPackage}, nil
	}
	return "", nil, fmt.Errorf("--sweep runs %s, which is neither next to boincd-sim nor on the PATH: go install ./cmd/boincd-sim/... (or set %s)", sweepCommand, sweepEnv)
}

// inBoincdModule reports whether the working directory is inside the
// boincd module's source.
func inBoincdModule() bool {
	dir, err := os.Getwd()
	if err != nil {
		return false
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			for _, l := range strings.Split(string(data), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "module" {
					return f[1] == "github.com/boincd/boincd"
				}
			}
			return false
		}
		up := filepath.Dir(dir)
		if up == dir {
			return false
		}
		dir = up
	}
}
