//go:build unix

package statefile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockForMove takes the lock bbolt takes (flock, exclusive), so that a
// running daemon's file is never moved from under it.
func lockForMove(path string) (func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, ioError("open", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &lockedError{path: path}
		}
		return nil, ioError("open", path, err)
	}
	return func() { _ = f.Close() }, nil
}
