//go:build darwin

package platform

import (
	"context"
	"fmt"
	"os/exec"
	"runtime"
)

// probeOS is detect_platforms' Mac part. On Apple silicon the C++ client
// starts an x86_64 helper program and adds x86_64-apple-darwin when it
// runs (launch_child_process_to_detect_emulated_cpu); boincd starts the
// system's own universal /usr/bin/true as x86_64, which runs exactly when
// Rosetta 2 is installed. Intel builds need no check: macOS before 10.15
// (32-bit Intel apps) is older than Go supports.
func probeOS(ctx context.Context) Probe {
	var p Probe
	if runtime.GOARCH != "arm64" {
		return p
	}
	if err := exec.CommandContext(ctx, "/usr/bin/arch", "-x86_64", "/usr/bin/true").Run(); err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("x86_64 programs do not run (Rosetta 2 not installed?): %v", err))
		return p
	}
	p.Rosetta = true
	p.Notes = append(p.Notes, "x86_64 programs run (Rosetta 2)")
	return p
}
