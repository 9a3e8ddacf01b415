package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/statefile"
)

func TestResetState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, daemon.StateFileName)
	var out, errb bytes.Buffer
	if code := run([]string{"boincd", "reset-state", "--dir", dir}, &out, &errb); code != 1 || !strings.Contains(errb.String(), path) {
		t.Fatalf("without a state file: exit %d, stderr %q; want 1 naming %s", code, errb.String(), path)
	}

	s, err := statefile.Open(path, statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	errb.Reset()
	if code := run([]string{"boincd", "reset-state", "--dir", dir}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "another boincd uses this data directory") {
		t.Fatalf("while the file is held: exit %d, stderr %q", code, errb.String())
	}
	s.Close()

	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"boincd", "reset-state", "--dir", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	moved, _ := filepath.Glob(path + ".broken-*")
	if len(moved) != 1 || !strings.Contains(out.String(), moved[0]) {
		t.Fatalf("moved files %v; output %q", moved, out.String())
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the state file is still there: %v", err)
	}
}
