// Command boincd-demo runs the boincd daemon against a built-in BOINC
// project on loopback: it attaches, fetches and computes real tasks
// (prime counting with checkpoints), uploads and reports them, showing
// live progress, and ends with a summary.
//
//	boincd-demo [--tasks N] [--seconds S] [--dir DIR [--keep]]
//
// It is its own command, not a subcommand of boincd, so that the daemon
// volunteers run does not carry the demo project server and app: every
// byte of the daemon's binary is resident while it runs (about 0.4 MB
// for the demo). The same executable is also the demo science app:
// started under a name beginning with "boincd_demoapp" it runs the app.
package main

import (
	"io"
	"os"

	"github.com/boincd/boincd/internal/demoapp"
)

func main() {
	demoapp.RunIfInvoked()
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	return runDemo(args[1:], stdout, stderr)
}
