package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSimulateMovedToSim(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"boincd", "simulate", "sim/scenarios/five_projects.toml"}, "boincd-sim [flags] SCENARIO.toml"},
		{[]string{"boincd", "simulate", "--sweep", "--quick"}, "boincd-sim --sweep"},
		{[]string{"boincd", "sweep", "--quick"}, "boincd-sim --sweep"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(tt.args, &stdout, &stderr); code != 2 {
			t.Errorf("%v: exit %d, want 2", tt.args, code)
		}
		if lines := strings.Count(stderr.String(), "\n"); lines != 1 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: want one line naming %q, got:\n%s", tt.args, tt.want, stderr.String())
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q", tt.args, stdout.String())
		}
	}
}
