package demoapp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/boincapi"
)

type exits struct{ codes []int }

func (e *exits) exit(code int) { e.codes = append(e.codes, code) }

// slot creates a slot directory with init_data.xml and the mmap file, so
// the app runs in client mode (checkpoint period from init_data).
func slot(t *testing.T, period string) string {
	t.Helper()
	dir := t.TempDir()
	doc := "<app_init_data>\n<shm_key>-1</shm_key>\n<client_pid>" + itoa(os.Getpid()) +
		"</client_pid>\n<checkpoint_period>" + period + "</checkpoint_period>\n</app_init_data>\n"
	if err := os.WriteFile(filepath.Join(dir, boincapi.InitDataFileName), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	shm, err := boincapi.CreateShmem(filepath.Join(dir, boincapi.MmapFileName))
	if err != nil {
		t.Fatal(err)
	}
	shm.Close()
	return dir
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func runIn(t *testing.T, dir string, args ...string) (int, *exits, string) {
	t.Helper()
	var stderr strings.Builder
	e := &exits{}
	code := run(context.Background(), args, boincapi.Options{Dir: dir, Exit: e.exit}, &stderr)
	return code, e, stderr.String()
}

func TestRunFreshWithInputAndCheckpoints(t *testing.T) {
	dir := slot(t, "0.05")
	if err := os.WriteFile(filepath.Join(dir, "in.dat"), []byte("input data"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, InputName), []byte(boincapi.SoftLinkContent("in.dat")), 0o644)
	os.WriteFile(filepath.Join(dir, OutputName), []byte(boincapi.SoftLinkContent("out.dat")), 0o644)

	code, e, log := runIn(t, dir, BinaryPrefix+"_1.00", "--seconds", "0.3", "--seed", "9")
	if code != 0 || len(e.codes) != 1 || e.codes[0] != 0 {
		t.Fatalf("code %d exits %v\n%s", code, e.codes, log)
	}
	for _, want := range []string{"demoapp: start", "args=--seconds 0.3 --seed 9", "demoapp: done"} {
		if !strings.Contains(log, want) {
			t.Errorf("stderr lacks %q:\n%s", want, log)
		}
	}
	// The output went through the soft link.
	out, err := os.ReadFile(filepath.Join(dir, "out.dat"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "seed: 9\n") || !strings.Contains(string(out), "input bytes: 10\n") {
		t.Fatalf("output:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, boincapi.FinishFileName)); err != nil || string(b) != "0\n\n" {
		t.Fatalf("finish file %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointName)); err != nil {
		t.Fatalf("no checkpoint written with a 50 ms period: %v", err)
	}
}

func TestResumeIsDeterministic(t *testing.T) {
	dir := slot(t, "3600")
	// A checkpoint 3 iterations before the end: the result is exactly 3
	// more hashes of the saved digest.
	h := sha256.Sum256([]byte("start"))
	st := state{Version: stateVersion, Seed: 5, Total: 10, Done: 7, Hash: hex.EncodeToString(h[:]), Batch: 2, InBytes: -1}
	if err := saveCheckpoint(filepath.Join(dir, CheckpointName), st); err != nil {
		t.Fatal(err)
	}
	code, _, log := runIn(t, dir, "--seed", "5")
	if code != 0 {
		t.Fatalf("code %d\n%s", code, log)
	}
	if !strings.Contains(log, "demoapp: resumed from checkpoint at 70%") {
		t.Fatalf("stderr:\n%s", log)
	}
	for i := 0; i < 3; i++ {
		h = sha256.Sum256(h[:])
	}
	out, err := os.ReadFile(filepath.Join(dir, OutputName))
	if err != nil {
		t.Fatal(err)
	}
	want := "demoapp output\nseed: 5\niterations: 10\ninput bytes: none\nresult: " + hex.EncodeToString(h[:]) + "\n"
	if string(out) != want {
		t.Fatalf("output\n%s\nwant\n%s", out, want)
	}
}

func TestBadCheckpointIsIgnored(t *testing.T) {
	tests := []struct{ name, content string }{
		{"garbage", "{not json"},
		{"other seed", `{"version":1,"seed":99,"total":10,"done":1,"hash":"00","batch":1}`},
		{"done past total", `{"version":1,"seed":1,"total":10,"done":11,"hash":"00","batch":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := slot(t, "3600")
			os.WriteFile(filepath.Join(dir, CheckpointName), []byte(tc.content), 0o644)
			code, _, log := runIn(t, dir, "--seconds", "0.05")
			if code != 0 || !strings.Contains(log, "ignoring checkpoint") || strings.Contains(log, "resumed") {
				t.Fatalf("code %d\n%s", code, log)
			}
		})
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{{"--seconds", "-1"}, {"--bogus"}, {"--seed", "x"}, {"--seconds", "1", "extra"}} {
		code, e, log := runIn(t, t.TempDir(), args...)
		if code != 2 || len(e.codes) != 0 {
			t.Errorf("%v: code %d exits %v\n%s", args, code, e.codes, log)
		}
	}
}

func TestWorkSeconds(t *testing.T) {
	d := &boincapi.InitData{RscFpopsEst: 3e10}
	d.Host.PFpops = 1e10
	tests := []struct {
		name string
		cfg  config
		d    *boincapi.InitData
		want float64
	}{
		{"seconds wins", config{seconds: 2, fpops: 1e12}, d, 2},
		{"fpops over host speed", config{fpops: 5e10}, d, 5},
		{"workunit estimate", config{}, d, 3},
		{"standalone default", config{}, nil, defaultSeconds},
		{"fpops standalone", config{fpops: 2e9}, nil, 2},
	}
	for _, tc := range tests {
		if got := workSeconds(tc.cfg, tc.d); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
