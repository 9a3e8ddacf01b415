package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/statefile"
)

const resetStateHelp = `usage: boincd reset-state [--dir DIR]

Start fresh: move the client state file (DIR/boincd.db) aside to
DIR/boincd.db.broken-YYYYMMDD-HHMMSS, so that the next start is a first
start: projects are attached again from the config and every task, result
and credit the old state knew is forgotten (the projects' servers time out
or resend the tasks). The old file is kept, never deleted. boincd never does
this by itself: a damaged or empty state file stops the daemon with an
error that names it. Refused while a daemon runs on DIR.

`

// runResetState is "boincd reset-state".
func runResetState(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd reset-state", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, resetStateHelp)
		fs.PrintDefaults()
	}
	dir := fs.String("dir", ".", "data directory")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "boincd reset-state: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	path := filepath.Join(*dir, daemon.StateFileName)
	dest, err := statefile.MoveAside(path, time.Now())
	if err != nil {
		fmt.Fprintln(stderr, "boincd reset-state:", err)
		return 1
	}
	fmt.Fprintf(stdout, "moved %s to %s; the next start begins with a new client state\n", path, dest)
	return 0
}
