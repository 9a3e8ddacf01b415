//go:build unix

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/statefile"
)

// TestEmptyStateFileRefused: a client with tasks (some part-computed) is
// killed and its state file truncated to 0 bytes. The next start must
// stop with an error naming the file and saying it is empty, leave it as
// it is, and neither attach again nor ask the project for anything (a
// brand-new client would, and would forget every task). The explicit
// fresh start (statefile.MoveAside, what "boincd reset-state" runs) keeps
// the old file aside, and the daemon then starts as a new client.
func TestEmptyStateFileRefused(t *testing.T) {
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{TotalJobs: 6, MaxJobsPerRPC: 6,
		Job: testproject.JobTemplate{CommandLine: "--seconds 30", InputSize: 1000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d := startDaemon(t, "daemon", childOptions{DataDir: dir})
	d.waitLog("task started", 60*time.Second, "component", "client")
	time.Sleep(500 * time.Millisecond)
	d.kill9()

	path := filepath.Join(dir, daemon.StateFileName)
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	rpcs := p.Stats().RPCs
	refused := startDaemon(t, "daemon on an empty state file", childOptions{DataDir: dir})
	if code := refused.wait(30 * time.Second); code == 0 {
		t.Fatalf("the daemon started on an empty state file:\n%s", refused.tail(30))
	}
	out := refused.output()
	for _, w := range []string{path, "empty (0 bytes)", "corrupt", "left as is", "reset-state"} {
		if !strings.Contains(out, w) {
			t.Errorf("the error does not say %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "migrated") || strings.Contains(out, "created a new state file") {
		t.Errorf("the daemon treated the empty file as a new one:\n%s", out)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty state file was changed: %v %v", fi, err)
	}
	if n := p.Stats().RPCs; n != rpcs {
		t.Errorf("the refused daemon sent %d scheduler requests", n-rpcs)
	}

	moved, err := statefile.MoveAside(path, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	fresh := startDaemon(t, "daemon after the fresh start", childOptions{DataDir: dir})
	fresh.waitLog("boincd started", 30*time.Second, "tasks", "0")
	fresh.waitLog("created a new state file", 5*time.Second)
	fresh.stop()
	if fi, err := os.Stat(moved); err != nil || fi.Size() != 0 {
		t.Errorf("the moved-aside file %s: %v %v", moved, fi, err)
	}
}
