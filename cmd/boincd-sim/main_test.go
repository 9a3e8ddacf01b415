package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/sim/study"
)

// scenario is one of the shipped examples, short enough for a test.
const scenario = "../../sim/scenarios/baseline_2cpu.toml"

func TestRun(t *testing.T) {
	out := t.TempDir()
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     []string // each must appear
		stderr     []string
		checkFiles []string // under out, after the run
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
		{name: "sweep unknown experiment", args: []string{"--sweep", "--only", "exp9_none"}, code: 2, stderr: []string{"no experiment \"exp9_none\"", "exp1_mix_cs"}},
		{
			name:       "sweep one experiment",
			args:       []string{"--sweep", "--quick", "--seeds", "1", "--only", "2", "--out", out},
			stdout:     []string{"exp2_slack.csv"},
			stderr:     []string{"policy study: 1 experiments, 1 seeds per point"},
			checkFiles: []string{"exp2_slack.csv", "exp2_slack_idle_fraction.png"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			for _, f := range tt.checkFiles {
				if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
					t.Errorf("%s not written: %v", f, err)
				}
			}
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

func TestPickExperiments(t *testing.T) {
	all := study.Experiments(true)
	tests := []struct {
		only    string
		want    []string
		wantErr bool
	}{
		{only: "", want: ids(all)},
		{only: "  ", want: ids(all)},
		{only: "3", want: []string{"exp3_buffer"}},
		{only: "exp5_send, 1", want: []string{"exp5_send", "exp1_mix_cs"}},
		{only: "7", wantErr: true},
		{only: "exp3", wantErr: true},
	}
	for _, tt := range tests {
		got, err := pickExperiments(all, tt.only)
		if (err != nil) != tt.wantErr {
			t.Errorf("pickExperiments(%q): err %v, want error %v", tt.only, err, tt.wantErr)
			continue
		}
		if g := strings.Join(ids(got), ","); !tt.wantErr && g != strings.Join(tt.want, ",") {
			t.Errorf("pickExperiments(%q) = %s, want %s", tt.only, g, strings.Join(tt.want, ","))
		}
	}
}

func ids(exps []*study.Experiment) []string {
	out := make([]string, len(exps))
	for i, e := range exps {
		out[i] = e.ID
	}
	return out
}
