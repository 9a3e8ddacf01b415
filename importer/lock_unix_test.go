//go:build unix

package importer

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/boincd/boincd/importer/importtest"
)

// holdLockEnv makes the test binary a stand-in BOINC client: it takes the
// fcntl lock on the named lockfile (as the C++ client does), says so, and
// holds it until its stdin closes. fcntl locks belong to a process, so
// only another process can show that a held lock is seen.
const holdLockEnv = "IMPORTER_TEST_HOLD_LOCK"

func TestMain(m *testing.M) {
	if path := os.Getenv(holdLockEnv); path != "" {
		os.Exit(holdLock(path))
	}
	os.Exit(m.Run())
}

func holdLock(path string) int {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		fmt.Println("error:", err)
		return 1
	}
	fmt.Println("locked")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// startLockHolder runs the stand-in client until the test ends.
func startLockHolder(t *testing.T, lockfile string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), holdLockEnv+"="+lockfile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("lock holder: %v", err)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("lock holder did not take the lock: %q %v", line, err)
	}
}

func TestImportRefusedWhileBOINCRuns(t *testing.T) {
	cases := []struct {
		name string
		hold func(t *testing.T, lockfile string)
	}{
		{name: "fcntl lock (the C++ client)", hold: startLockHolder},
		{name: "flock", hold: func(t *testing.T, lockfile string) {
			f, err := os.Open(lockfile)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			src := importtest.Build(t, importtest.Options{StateFile: "client_state_task_running.xml"})
			lockfile := filepath.Join(src.Path, "lockfile")
			tc.hold(t, lockfile)
			dst := filepath.Join(t.TempDir(), "boincd")
			for _, dry := range []bool{false, true} {
				_, err := runImport(t, src.Path, dst, dry)
				if !errors.Is(err, ErrBOINCRunning) || !strings.Contains(err.Error(), lockfile) {
					t.Errorf("import while BOINC runs (dry run %v): %v", dry, err)
				}
			}
			if _, err := os.Stat(dst); err == nil {
				t.Error("the boincd directory was created while BOINC runs")
			}
		})
	}
}

// The lock is free again after an import, and a BOINC directory without
// a lockfile is imported without creating one.
func TestImportLockReleasedAndNotCreated(t *testing.T) {
	src := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	lockfile := filepath.Join(src.Path, "lockfile")
	if _, err := runImport(t, src.Path, filepath.Join(t.TempDir(), "a"), false); err != nil {
		t.Fatalf("Import: %v", err)
	}
	startLockHolder(t, lockfile)

	src2 := importtest.Build(t, importtest.Options{StateFile: "client_state_after_report.xml"})
	if err := os.Remove(filepath.Join(src2.Path, "lockfile")); err != nil {
		t.Fatal(err)
	}
	if _, err := runImport(t, src2.Path, filepath.Join(t.TempDir(), "b"), false); err != nil {
		t.Fatalf("Import without lockfile: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src2.Path, "lockfile")); err == nil {
		t.Error("the import created a lockfile in the BOINC directory")
	}
}
