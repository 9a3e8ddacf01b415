//go:build unix

// Command fetchsizes runs fetchsizes.sh beside it: boincd and the C++
// BOINC client, each on a fresh copy of a real BOINC server 1.6.2 project
// (../shared/realserver), with generous and tight deadlines, and a table of
// the work each asked for in every scheduler request and the jobs sent.
// See the script's header for the scenarios and settings. Run from the
// module root, as root:
//
//	go run ./bench/fetchsizes
//
// It has no tests; go test ./... never runs it.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

func main() {
	script := filepath.Join("bench", "fetchsizes", "fetchsizes.sh")
	if _, err := os.Stat(script); err != nil {
		fmt.Fprintf(os.Stderr, "fetchsizes: run from the module root (%v)\n", err)
		os.Exit(2)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fetchsizes:", err)
		os.Exit(2)
	}
	// The script cleans up on its own exit; exec keeps signals going to it.
	err = syscall.Exec(bash, append([]string{"bash", script}, os.Args[1:]...), os.Environ())
	fmt.Fprintln(os.Stderr, "fetchsizes:", err)
	os.Exit(2)
}
