package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/boincd/boincd/internal/testsupport"
)

// scenario is one of the shipped examples, short enough for a test.
const scenario = "../../sim/scenarios/baseline_2cpu.toml"

func TestRun(t *testing.T) {
	out := t.TempDir()
	fake := filepath.Join(t.TempDir(), "boincd-sim-sweep")
	script := "#!/bin/sh\necho \"$@\"\ncase \"$*\" in *fail*) exit 3;; esac\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(sweepEnv, fake)
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string // each must appear
		stderr []string
	}{
		{name: "text report", args: []string{"--seed", "3", "--days", "2", scenario}, stdout: []string{"2 days", "seed 3", "idle fraction"}},
		{name: "policies from flags", args: []string{"--days", "1", "--policy", "rec", "--sched", "cs1", "--fetch", "wf1", "--event_driven", scenario}, stdout: []string{"policy rec"}},
		{name: "json with timeline", args: []string{"--days", "2", "--json", "--timeline", "24", scenario}, stdout: []string{"{"}},
		{name: "no scenario", args: nil, code: 2, stderr: []string{"want exactly one scenario file", "usage: boincd-sim"}},
		{name: "two scenarios", args: []string{scenario, scenario}, code: 2, stderr: []string{"want exactly one scenario file"}},
		{name: "bad timeline", args: []string{"--timeline", "-1", scenario}, code: 2, stderr: []string{"--timeline -1"}},
		{name: "bad policy", args: []string{"--policy", "fifo", scenario}, code: 2, stderr: []string{"--policy:"}},
		{name: "bad scheduler", args: []string{"--sched", "cs9", scenario}, code: 2, stderr: []string{"--sched:"}},
		{name: "bad fetcher", args: []string{"--fetch", "wf9", scenario}, code: 2, stderr: []string{"--fetch:"}},
		{name: "missing scenario file", args: []string{"no-such.toml"}, code: 1, stderr: []string{"boincd-sim:", "no-such.toml"}},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: []string{"-nope"}},
		{name: "help", args: []string{"--help"}, stderr: []string{"usage: boincd-sim", "--sweep"}},
		{name: "help command", args: []string{"help"}, stdout: []string{"usage: boincd-sim"}},
		{name: "version", args: []string{"version"}, stdout: []string{"boincd-sim"}},
		{name: "sweep with a scenario", args: []string{"--sweep", scenario}, code: 2, stderr: []string{"--sweep takes no scenario file"}},
		{name: "sweep bad seeds", args: []string{"--sweep", "--seeds", "0"}, code: 2, stderr: []string{"--seeds 0"}},
		{
			// --sweep runs boincd-sim-sweep (here a stand-in that prints its
			// arguments) with the sweep's flags and passes its status on.
			name:   "sweep runs boincd-sim-sweep",
			args:   []string{"--sweep", "--quick", "--seeds", "1", "--only", "2", "--out", out, "--compare"},
			stdout: []string{"--out " + out + " --seeds 1 --only 2 --quick --compare"},
			stderr: []string{"boincd-sim: the study runs ", "(built "},
		},
		{name: "sweep's status passed on", args: []string{"--sweep", "--only", "fail"}, code: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testsupport.CheckCommand(t, run, tt.args, tt.code, tt.stdout, tt.stderr)
		})
	}
}

func TestRunJSONIsValid(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--days", "2", "--json", "--timeline", "24", scenario}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout.String())
	}
}
