package daemon

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// slotRemover is a RemoveAll that refuses the slots it is told to, as
// Wine did ("unlinkat …: Invalid function.") and as a file held open by
// a virus scanner does on Windows, and counts the attempts per slot.
// It runs as root too, where a directory without write permission would
// not stop anything.
type slotRemover struct {
	mu     sync.Mutex
	refuse map[int]bool
	tries  map[int]int
}

func newSlotRemover(refuse ...int) *slotRemover {
	f := &slotRemover{refuse: map[int]bool{}, tries: map[int]int{}}
	for _, n := range refuse {
		f.refuse[n] = true
	}
	return f
}

func (f *slotRemover) remove(path string) error {
	n, err := strconv.Atoi(filepath.Base(path))
	if err != nil || filepath.Base(filepath.Dir(path)) != "slots" {
		return os.RemoveAll(path)
	}
	f.mu.Lock()
	f.tries[n]++
	refused := f.refuse[n]
	f.mu.Unlock()
	if refused {
		// Errno 1 is Windows's ERROR_INVALID_FUNCTION, Wine's answer.
		return &fs.PathError{Op: "unlinkat", Path: filepath.Join(path, "held_open"), Err: syscall.Errno(1)}
	}
	return os.RemoveAll(path)
}

func (f *slotRemover) allow(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.refuse, n)
}

func (f *slotRemover) triesOf(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tries[n]
}

// slotDaemon is a daemon (not running) on a fresh data directory whose
// slot removals go through rm, logging into logs.
func slotDaemon(t *testing.T, rm *slotRemover, logs *testsupport.LogBuffer) *Daemon {
	t.Helper()
	d := &Daemon{log: slog.New(slog.NewJSONHandler(logs, nil)), cfg: config.Default(), st: newClientState(),
		opt:  Options{DataDir: t.TempDir(), RemoveAll: rm.remove, WorkFetchInterval: time.Minute},
		host: boinc.Host{PNCPUs: 1}}
	d.prefs = d.cfg.BoincPrefs()
	return d
}

// leaveInSlot puts a file in slots/n, as a task whose slot was not
// cleared leaves it.
func leaveInSlot(t *testing.T, d *Daemon, n int) {
	t.Helper()
	dir := filepath.Join(d.opt.DataDir, "slots", strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o771); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stderr.txt"), []byte("left over"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func slotWarnings(logs *testsupport.LogBuffer, n int) int {
	c := 0
	for _, r := range logs.Find(slotDirtyMsg) {
		if r.Num("slot") == float64(n) {
			c++
		}
	}
	return c
}

// ACTIVE_TASK::get_free_slot: the lowest slot no task holds whose
// directory is missing, empty, or can be emptied now; one that cannot
// be emptied is skipped, never handed out.
func TestFreeSlot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		owned     []int // slots held by tasks in the state
		leftovers []int // slots with files in them
		empties   []int // slots that are empty directories
		refuse    []int // slots that cannot be removed
		want      int
		wantOK    bool
		wantDirty []int
	}{
		{name: "no slots yet", want: 0, wantOK: true},
		{name: "held slots are skipped", owned: []int{0, 1}, want: 2, wantOK: true},
		{name: "a leftover slot is cleared and used", leftovers: []int{0}, want: 0, wantOK: true},
		{name: "a leftover slot that cannot be cleared is skipped", leftovers: []int{0}, refuse: []int{0}, want: 1, wantOK: true, wantDirty: []int{0}},
		{name: "several are skipped", owned: []int{1}, leftovers: []int{0, 2}, refuse: []int{0, 2}, want: 3, wantOK: true, wantDirty: []int{0, 2}},
		{name: "an empty directory needs no removal", empties: []int{0}, refuse: []int{0}, want: 0, wantOK: true},
		{name: "a missing slot is used before a higher leftover is examined", leftovers: []int{1}, refuse: []int{0, 1}, want: 0, wantOK: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rm := newSlotRemover(tc.refuse...)
			logs := &testsupport.LogBuffer{}
			d := slotDaemon(t, rm, logs)
			for i, n := range tc.owned {
				d.st.putResult(&boinc.Result{ProjectURL: "http://p/", Name: "held_" + strconv.Itoa(i), Slot: n})
			}
			for _, n := range tc.leftovers {
				leaveInSlot(t, d, n)
			}
			for _, n := range tc.empties {
				if err := os.MkdirAll(filepath.Join(d.opt.DataDir, "slots", strconv.Itoa(n)), 0o771); err != nil {
					t.Fatal(err)
				}
			}
			got, ok := d.freeSlot()
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("freeSlot = %d, %v; want %d, %v", got, ok, tc.want, tc.wantOK)
			}
			if len(d.dirtySlots) != len(tc.wantDirty) {
				t.Errorf("dirty slots %v, want %v", d.dirtySlots, tc.wantDirty)
			}
			for _, n := range tc.wantDirty {
				if !d.dirtySlots[n] {
					t.Errorf("slot %d not marked dirty (%v)", n, d.dirtySlots)
				}
				if c := slotWarnings(logs, n); c != 1 {
					t.Errorf("slot %d: %d warnings, want 1", n, c)
				}
			}
			if tc.wantOK {
				if empty, err := os.ReadDir(filepath.Join(d.opt.DataDir, "slots", strconv.Itoa(got))); err == nil && len(empty) > 0 {
					t.Errorf("slot %d handed out with files in it: %v", got, empty)
				}
			}
		})
	}
}

// With every slot up to the limit (100 per CPU) dirty, no slot is
// handed out: the task stays queued rather than failing.
func TestFreeSlotNoneUsable(t *testing.T) {
	t.Parallel()
	refuse := make([]int, 100)
	for i := range refuse {
		refuse[i] = i
	}
	rm := newSlotRemover(refuse...)
	logs := &testsupport.LogBuffer{}
	d := slotDaemon(t, rm, logs)
	for _, n := range refuse {
		leaveInSlot(t, d, n)
	}
	if n, ok := d.freeSlot(); ok {
		t.Fatalf("freeSlot = %d with every slot dirty", n)
	}
	if len(d.dirtySlots) != 100 {
		t.Errorf("%d dirty slots, want 100", len(d.dirtySlots))
	}
}

// A dirty slot is tried again at every start and by the periodic retry,
// warned about once whatever the number of tries, and used again once it
// clears.
func TestDirtySlotRetried(t *testing.T) {
	t.Parallel()
	rm := newSlotRemover(0)
	logs := &testsupport.LogBuffer{}
	d := slotDaemon(t, rm, logs)
	leaveInSlot(t, d, 0)
	now := time.Now()
	for i, want := range []int{1, 2} {
		n, ok := d.freeSlot()
		if !ok || n != want {
			t.Fatalf("start %d: freeSlot = %d, %v; want %d", i, n, ok, want)
		}
		d.st.putResult(&boinc.Result{ProjectURL: "http://p/", Name: "t" + strconv.Itoa(i), Slot: n})
	}
	d.retryDirtySlots(now)
	d.retryDirtySlots(now.Add(time.Second)) // before the interval: not tried
	if got := rm.triesOf(0); got != 3 {
		t.Errorf("slot 0 tried %d times, want 3 (two starts, one periodic retry)", got)
	}
	if c := slotWarnings(logs, 0); c != 1 {
		t.Errorf("%d warnings for slot 0, want exactly 1", c)
	}
	rm.allow(0)
	d.retryDirtySlots(now.Add(time.Minute))
	if d.dirtySlots[0] {
		t.Fatal("slot 0 still dirty after it could be cleared")
	}
	if len(logs.Find("slot directory cleared; it is used again")) != 1 {
		t.Error("the slot's recovery is not logged")
	}
	if n, ok := d.freeSlot(); !ok || n != 0 {
		t.Fatalf("freeSlot = %d, %v after slot 0 cleared; want 0", n, ok)
	}
	if c := slotWarnings(logs, 0); c != 1 {
		t.Errorf("%d warnings for slot 0, want exactly 1", c)
	}
}

// End to end, as under Wine: a slot that cannot be emptied (left over
// before the start, or by a task whose exit could not clean it) fails no
// task. Every task is reported as a success, none starts in a dirty slot,
// each dirty slot is warned about once, and both are used again (or
// removed by the periodic retry) once they can be cleared.
func TestDirtySlotsFailNoTask(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		TotalJobs: 1,
		Job:       testproject.JobTemplate{CommandLine: "--seconds 0"},
	})
	dataDir := filepath.Join(t.TempDir(), "data")
	// Slot 0 holds a file that cannot be deleted; slot 1 will hold the
	// first task, whose exit cannot clean it.
	if err := os.MkdirAll(filepath.Join(dataDir, "slots", "0"), 0o771); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "slots", "0", "held_open"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	rm := newSlotRemover(0, 1)
	h := startDaemonIn(t, dataDir, projectsConfig(srv), func(o *Options) { o.RemoveAll = rm.remove })

	startedIn := func(n int) map[string]int {
		t.Helper()
		var st testproject.Stats
		testsupport.WaitFor(t, 60*time.Second, strconv.Itoa(n)+" results reported", func() bool {
			st = srv.Stats()
			return len(st.ReportedResults) >= n
		})
		for name, rr := range st.ReportedResults {
			if rr.State != 5 || rr.ExitStatus != 0 {
				t.Errorf("result %s reported with state %d exit_status %d (%s), want a success", name, rr.State, rr.ExitStatus, rr.StderrOut)
			}
		}
		slots := map[string]int{}
		for _, r := range h.logs.Find("task started") {
			slots[r.Str("task")] = int(r.Num("slot"))
		}
		return slots
	}

	slots := startedIn(1)
	if len(slots) != 1 || slots[srv.Stats().Sent[0]] != 1 {
		t.Fatalf("first task started in %v, want slot 1 (slot 0 cannot be cleared)", slots)
	}
	srv.AddJobs(1)
	slots = startedIn(2)
	if got := slots[srv.Stats().Sent[1]]; got != 2 {
		t.Fatalf("second task started in slot %d, want 2 (0 and 1 cannot be cleared): %v", got, slots)
	}
	if rm.triesOf(0) < 2 || rm.triesOf(1) < 2 {
		t.Errorf("dirty slots tried %d and %d times, want each retried", rm.triesOf(0), rm.triesOf(1))
	}

	rm.allow(0)
	rm.allow(1)
	srv.AddJobs(1)
	slots = startedIn(3)
	if got := slots[srv.Stats().Sent[2]]; got != 0 {
		t.Fatalf("third task started in slot %d, want 0 (clearable again): %v", got, slots)
	}
	testsupport.WaitFor(t, 30*time.Second, "slot 1 removed by the periodic retry", func() bool {
		_, err := os.Stat(filepath.Join(dataDir, "slots", "1"))
		return errors.Is(err, fs.ErrNotExist)
	})
	for _, n := range []int{0, 1} {
		if c := slotWarnings(h.logs, n); c != 1 {
			t.Errorf("slot %d: %d warnings, want exactly 1", n, c)
		}
	}
	if n := len(h.logs.Find("cannot start task")); n != 0 {
		t.Errorf("%d start errors logged", n)
	}
}
