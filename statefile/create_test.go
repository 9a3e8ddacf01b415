package statefile

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// createChildEnv makes the test binary open (create) the state file named
// by its value and exit: TestFirstStartKilled kills it on the way.
const createChildEnv = "STATEFILE_CREATE_CHILD"

// TestFirstStartCreatesCompleteFile: a missing state file is created whole
// at the current schema, and no temporary file is left beside it.
func TestFirstStartCreatesCompleteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "boincd.db")
	s := openT(t, path)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if v := schemaVersionOf(t, path); v != latestVersion(migrations) {
		t.Fatalf("new file has schema version %d, want %d", v, latestVersion(migrations))
	}
	assertNoInits(t, dir)
}

// TestEmptyStateFileRefused: an existing empty file is damage, not a first
// start: Open refuses it with ErrCorrupt, says so, and leaves it as it is.
func TestEmptyStateFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("an empty state file opened as a new one")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "empty (0 bytes)") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want ErrCorrupt naming the file and saying it is empty", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty file was changed: %v %v", fi, err)
	}
}

// TestStaleInitFileIgnored: a temporary file left by a create that was
// killed does not stop the next first start, and goes once the state file
// is held.
func TestStaleInitFileIgnored(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "boincd.db")
	for _, name := range []string{"boincd.db" + initInfix + "123", "boincd.db" + initInfix + "456"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := openT(t, path)
	loadT(t, s)
	s.Close()
	assertNoInits(t, dir)
}

// TestConcurrentFirstStarts: two processes starting on the same new data
// directory end with one state file; one holds it, the other is told the
// file is locked (never two files, never a replaced one).
func TestConcurrentFirstStarts(t *testing.T) {
	for i := range 20 {
		dir := t.TempDir()
		path := filepath.Join(dir, "boincd.db")
		var wg sync.WaitGroup
		stores := make([]*Store, 2)
		errs := make([]error, 2)
		for k := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				stores[k], errs[k] = Open(path, Options{LockTimeout: 50 * time.Millisecond, NoSync: true})
			}()
		}
		wg.Wait()
		opened := 0
		for k := range 2 {
			switch {
			case errs[k] == nil:
				opened++
			case !errors.Is(errs[k], ErrLocked):
				t.Fatalf("round %d: Open: %v", i, errs[k])
			}
		}
		if opened != 1 {
			t.Fatalf("round %d: %d stores opened, want 1 (errors %v)", i, opened, errs)
		}
		for _, s := range stores {
			if s != nil {
				loadT(t, s)
				s.Close()
			}
		}
		assertNoInits(t, dir)
	}
}

// TestFirstStartKilled kills processes in their first Open (bbolt
// initialising the file, the migration, the link) at random moments: the
// next Open must always work, finding either no state file (a first start
// again) or a complete one; an empty or half-made file under the state
// file's name would be refused as damage.
func TestFirstStartKilled(t *testing.T) {
	kills := 40
	if testing.Short() {
		kills = 15
	}
	rng := rand.New(rand.NewPCG(7, 11))
	var none, whole int
	for i := range kills {
		dir := t.TempDir()
		path := filepath.Join(dir, "boincd.db")
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), createChildEnv+"="+path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Starting the child takes a few ms; the kills spread over it.
		time.Sleep(time.Duration(rng.IntN(8000)) * time.Microsecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if _, err := os.Stat(path); err != nil {
			none++
		} else {
			whole++
		}
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatalf("kill %d: the next start fails: %v", i, err)
		}
		loadT(t, s)
		s.Close()
		assertNoInits(t, dir)
	}
	t.Logf("%d kills during a first start: %d left no state file, %d a complete one, 0 a damaged one", kills, none, whole)
}

func assertNoInits(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.Contains(e.Name(), initInfix) {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

// TestMoveAside: the explicit fresh start keeps the old file under a new
// name, refuses while the file is held or missing, and the next Open is a
// first start.
func TestMoveAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "boincd.db")
	if _, err := MoveAside(path, time.Now()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("MoveAside of a missing file: %v, want not-exist", err)
	}
	s := openT(t, path)
	if _, err := MoveAside(path, time.Now()); !errors.Is(err, ErrLocked) {
		t.Fatalf("MoveAside of a held file: %v, want ErrLocked", err)
	}
	s.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 17, 4, 5, 0, time.UTC)
	dest, err := MoveAside(path, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := path + ".broken-20261125-170405"; dest != want {
		t.Errorf("moved to %s, want %s", dest, want)
	}
	if fi, err := os.Stat(dest); err != nil || fi.Size() != 0 {
		t.Fatalf("the moved file: %v %v", fi, err)
	}
	s = openT(t, path)
	loadT(t, s)
	s.Close()
}
