//go:build !windows

package main

import (
	"fmt"
	"io"
)

// runService: the service manager integration is Windows's; elsewhere
// systemd (or another supervisor) runs "boincd run".
func runService(_ []string, _, stderr io.Writer) int {
	fmt.Fprintln(stderr, "boincd service: Windows only; on Linux use the systemd unit in systemd/")
	return 2
}
