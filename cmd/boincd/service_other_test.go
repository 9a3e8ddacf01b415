//go:build !windows

package main

import (
	"bytes"
	"testing"
)

func TestRunServiceNotWindows(t *testing.T) {
	for _, args := range [][]string{nil, {"install"}, {"run", "--dir", "x"}} {
		var stdout, stderr bytes.Buffer
		if code := runService(args, &stdout, &stderr); code != 2 {
			t.Errorf("runService(%q) = %d, want 2", args, code)
		}
		if got, want := stderr.String(), "boincd service: Windows only; on Linux use the systemd unit in systemd/\n"; got != want || stdout.Len() != 0 {
			t.Errorf("runService(%q): stderr %q stdout %q", args, got, stdout.String())
		}
	}
}
