//go:build unix

package taskrunner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/boincapi"
)

// A slot left set up for another task (whose start failed, say) is set up
// again for the task given it: its input links must be this task's, never
// the other's, or the other's input would be computed and reported as
// this task's result.
func TestSlotOfAnotherTaskSetUpAgain(t *testing.T) {
	e := newTestEnv(t, Config{})
	e.writeApp(t, appFile, refApp)
	dir := slotDir(e.dataDir, 0)
	if err := os.MkdirAll(dir, 0o771); err != nil {
		t.Fatal(err)
	}
	stale := map[string]string{
		setupMarker: "other_task_0",
		"in":        boincapi.SoftLinkContent("../../projects/" + testEsc + "/other_task_input"),
		"leftover":  "from the other task",
	}
	for name, content := range stale {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := e.spec("--seconds 1")
	spec.Slot = 0
	slot, _, err := e.runner.Start(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if slot != 0 {
		t.Fatalf("slot %d", slot)
	}
	if b, _ := os.ReadFile(e.slotPath(0, setupMarker)); string(b) != resName {
		t.Errorf("setup marker %q, want %q", b, resName)
	}
	want := boincapi.SoftLinkContent("../../projects/" + testEsc + "/" + inFile)
	if b, _ := os.ReadFile(e.slotPath(0, "in")); string(b) != want {
		t.Errorf("input link %q, want %q", b, want)
	}
	if _, err := os.Stat(e.slotPath(0, "leftover")); !os.IsNotExist(err) {
		t.Errorf("the other task's file is still in the slot: %v", err)
	}
	waitEvent(t, e.events, 20*time.Second)
}
