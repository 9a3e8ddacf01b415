package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/sim/study"
)

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
		{name: "help", args: []string{"--help"}, stderr: []string{"usage: boincd-sim-sweep", "--compare"}},
		{name: "unknown flag", args: []string{"--nope"}, code: 2, stderr: []string{"-nope"}},
		{name: "a scenario", args: []string{"x.toml"}, code: 2, stderr: []string{"takes no scenario file"}},
		{name: "bad seeds", args: []string{"--seeds", "0"}, code: 2, stderr: []string{"--seeds 0"}},
		{name: "unknown experiment", args: []string{"--only", "exp9_none"}, code: 2, stderr: []string{"no experiment \"exp9_none\"", "exp1_mix_cs"}},
		{
			name:       "one experiment",
			args:       []string{"--quick", "--seeds", "1", "--only", "2", "--out", out},
			stdout:     []string{"exp2_slack.csv"},
			stderr:     []string{"policy study: 1 experiments, 1 seeds per point"},
			checkFiles: []string{"exp2_slack.csv", "exp2_slack_idle_fraction.png"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testsupport.CheckCommand(t, run, tt.args, tt.code, tt.stdout, tt.stderr)
			for _, f := range tt.checkFiles {
				if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
					t.Errorf("%s not written: %v", f, err)
				}
			}
		})
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
