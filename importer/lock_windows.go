//go:build windows

package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/windows"
)

// lockBOINCDir takes the BOINC client's lockfile as the Windows client
// does (an exclusive lock on the file), failing at once if the client
// holds it. A missing lockfile is not created.
func lockBOINCDir(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	if err != nil {
		// The client opens the file without sharing while it runs.
		if errors.Is(err, windows.ERROR_SHARING_VIOLATION) || errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("%w: %s is in use; stop the BOINC client first", ErrBOINCRunning, path)
		}
		return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
	}
	ol := new(windows.Overlapped)
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
	if err != nil {
		f.Close()
		if errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			return nil, fmt.Errorf("%w: %s is locked; stop the BOINC client first", ErrBOINCRunning, path)
		}
		return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
	}
	return func() {
		_ = windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
		f.Close()
	}, nil
}
