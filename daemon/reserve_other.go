//go:build !linux

package daemon

import "os"

// preallocate makes path a file of size bytes whose blocks are written,
// so that removing it frees that much space.
func preallocate(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err == nil && fi.Size() == size {
		return f.Close()
	}
	err = writeZeros(f, size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
