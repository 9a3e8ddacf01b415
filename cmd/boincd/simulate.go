package main

import (
	"fmt"
	"io"
	"slices"
)

// runMovedToSim answers "boincd simulate" and "boincd sweep": the
// emulator and the policy study are their own command, so the daemon
// binary links none of their plotting stack. Exit 2, as for any command
// boincd does not run, so scripts that still call it fail loudly.
func runMovedToSim(sub string, args []string, stderr io.Writer) int {
	use := "boincd-sim [flags] SCENARIO.toml"
	if sub == "sweep" || slices.Contains(args, "--sweep") || slices.Contains(args, "-sweep") {
		use = "boincd-sim --sweep [flags]"
	}
	fmt.Fprintf(stderr, "boincd: %q moved to its own command: %s (go run ./cmd/boincd-sim; sim/README.md)\n", sub, use)
	return 2
}
