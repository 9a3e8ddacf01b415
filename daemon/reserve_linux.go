package daemon

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// preallocate makes path a file of size bytes whose blocks are allocated,
// so that removing it frees that much space. fallocate allocates without
// writing; a file system without it gets zeros written.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Blocks*512 >= size {
			return f.Close()
		}
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		err = writeZeros(f, size)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
