package statefile

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// MoveAside is the explicit "start fresh": it renames the state file at
// path to path.broken-YYYYMMDD-HHMMSS (kept for inspection or a later
// restore, never deleted) and returns the new name, so that the next Open
// finds no state file and starts a new client. It refuses while a process
// holds the file (a running daemon) and when there is no file. It never
// reads the file: a damaged one is moved like any other.
func MoveAside(path string, now time.Time) (string, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", fmt.Errorf("state file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("state file %s: not a regular file (%v); move it away by hand", path, fi.Mode().Type())
	}
	release, err := lockForMove(path)
	if err != nil {
		return "", err
	}
	defer release()
	dest := path + ".broken-" + now.UTC().Format("20060102-150405")
	if _, err := os.Lstat(dest); err == nil {
		return "", fmt.Errorf("state file %s: %s already exists; try again in a second", path, dest)
	}
	if err := os.Rename(path, dest); err != nil {
		return "", fmt.Errorf("move state file %s aside: %w", path, err)
	}
	syncDir(filepath.Dir(path))
	return dest, nil
}
