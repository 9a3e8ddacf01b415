package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/internal/demoapp"
)

// The demo runs its app from its own executable: here, the test binary.
func TestMain(m *testing.M) {
	if strings.HasPrefix(filepath.Base(os.Args[0]), demoapp.BinaryPrefix) {
		os.Exit(demoapp.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// The README's first command: the demo computes real tasks end to end,
// shows progress and ends with every result acknowledged.
func TestDemoComputesAndReports(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo end to end")
	}
	var out, errb bytes.Buffer
	dir := filepath.Join(t.TempDir(), "data")
	if rc := run([]string{"boincd-demo", "--tasks", "2", "--seconds", "1", "--dir", dir}, &out, &errb); rc != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", rc, out.String(), errb.String())
	}
	for _, want := range []string{
		"boincd-demo: project http://127.0.0.1:",
		"tasks received 2 of 2, succeeded 2, failed 0",
		"results reported and acknowledged by the project: 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(out.String(), "running") && !strings.Contains(out.String(), "acked") {
		t.Errorf("no live progress in the output:\n%s", out.String())
	}
}
