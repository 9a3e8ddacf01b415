//go:build unix

package taskrunner

import (
	"context"
	"errors"
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

// errInvalidFunction is what Wine answered unlinkat in a slot with.
var errInvalidFunction = errors.New("unlinkat: Invalid function") // Wine's text ends with a full stop

// refuseRemove is a RemoveAll that cannot remove anything.
func refuseRemove(string) error { return errInvalidFunction }

// A slot holding another task's files that cannot be removed is not set
// up over: the start fails with ErrSlotNotCleared, which names the slot
// as the fault, and nothing runs there.
func TestSlotOfAnotherTaskNotCleared(t *testing.T) {
	e := newTestEnv(t, Config{RemoveAll: refuseRemove})
	e.writeApp(t, appFile, refApp)
	dir := slotDir(e.dataDir, 0)
	if err := os.MkdirAll(dir, 0o771); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, setupMarker), []byte("other_task_0"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := e.spec("--seconds 1")
	spec.Slot = 0
	_, _, err := e.runner.Start(context.Background(), spec)
	if !errors.Is(err, ErrSlotNotCleared) || !errors.Is(err, errInvalidFunction) {
		t.Fatalf("Start: %v, want ErrSlotNotCleared wrapping the remove error", err)
	}
	if got := e.runner.Running(); len(got) != 0 {
		t.Fatalf("running after a refused start: %v", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, setupMarker)); string(b) != "other_task_0" {
		t.Errorf("setup marker %q: the slot was set up over", b)
	}
}

// A slot that cannot be removed after the task finished changes nothing
// about the task (ACTIVE_TASK::handle_exited_app ignores it too): the exit
// is a success with its outputs collected, and the event says why the
// slot is left.
func TestExitWithSlotNotCleared(t *testing.T) {
	e := newTestEnv(t, Config{RemoveAll: refuseRemove})
	e.writeApp(t, appFile, refApp)
	if _, _, err := e.runner.Start(context.Background(), e.spec("--seconds 0")); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, e.events, 20*time.Second)
	if ev.Exit.Outcome != Success || len(ev.Exit.Outputs) == 0 {
		t.Fatalf("exit %+v, want a success with outputs", ev.Exit)
	}
	if !errors.Is(ev.SlotErr, errInvalidFunction) {
		t.Fatalf("SlotErr %v, want the remove error", ev.SlotErr)
	}
	if _, err := os.Stat(filepath.Join(e.projDir, outFile)); err != nil {
		t.Errorf("output not moved to the project directory: %v", err)
	}
}
