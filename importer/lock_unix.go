//go:build unix

package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// lockBOINCDir takes the BOINC client's lockfile the way the client does
// (lib/filesys.cpp FILE_LOCK::lock: an fcntl write lock on the whole
// file), so a client cannot start while we copy, and fails at once if a
// client holds it. A flock lock is tried too: other tools (and some
// packagings) use it on the same file. A missing lockfile means no client
// ever ran there with this layout; it is not created, so the BOINC
// directory is left exactly as it was.
func lockBOINCDir(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return func() {}, nil
	}
	readOnly := false
	if errors.Is(err, fs.ErrPermission) {
		// Read access is enough to ask whether someone holds it.
		f, err = os.Open(path)
		readOnly = true
	}
	if err != nil {
		return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
	}
	held := func() error {
		f.Close()
		return fmt.Errorf("%w: %s is locked; stop the BOINC client first (e.g. systemctl stop boinc-client)", ErrBOINCRunning, path)
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: 0, Len: 0}
	if readOnly {
		if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
			f.Close()
			return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
		}
		if lk.Type != unix.F_UNLCK {
			return nil, held()
		}
	} else if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EACCES) {
			return nil, held()
		}
		f.Close()
		return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, held()
		}
		f.Close()
		return nil, fmt.Errorf("BOINC lockfile %s: %w", path, err)
	}
	// Closing the descriptor drops both locks.
	return func() { f.Close() }, nil
}
