//go:build windows

package boincapi

import (
	"errors"
	"fmt"
	"os"
)

// fileRegion backs the segment with plain file I/O. The C++ client on
// Windows uses a named file mapping (shm_boinc_<slot>) instead of
// boinc_mmap_file, so this only interoperates with apps built on this
// package; it keeps the boincd client and its own apps working on Windows.
type fileRegion struct{ f *os.File }

func (r *fileRegion) readAt(p []byte, off int64) error {
	if r.f == nil {
		return errors.New("segment is closed")
	}
	_, err := r.f.ReadAt(p, off)
	return err
}

func (r *fileRegion) writeAt(p []byte, off int64) error {
	if r.f == nil {
		return errors.New("segment is closed")
	}
	_, err := r.f.WriteAt(p, off)
	return err
}

func (r *fileRegion) loadHead(off int64) ([4]byte, error) {
	var h [4]byte
	err := r.readAt(h[:], off)
	return h, err
}

func (r *fileRegion) storeHead(off int64, h [4]byte) error {
	// The flag byte goes last so a reader never sees it before the rest.
	if err := r.writeAt(h[1:], off+1); err != nil {
		return err
	}
	return r.writeAt(h[:1], off)
}

func (r *fileRegion) close() error {
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}

// CreateShmem creates (or truncates) path as ShmemSize zero bytes.
func CreateShmem(path string) (*Shmem, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: create: %w", path, err)
	}
	if err := f.Truncate(ShmemSize); err != nil {
		f.Close()
		return nil, fmt.Errorf("shared memory %s: size: %w", path, err)
	}
	return &Shmem{path: path, r: &fileRegion{f: f}}, nil
}

// OpenShmem opens an existing segment file.
func OpenShmem(path string) (*Shmem, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: open: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("shared memory %s: stat: %w", path, err)
	}
	if st.Size() < ShmemSize {
		f.Close()
		return nil, fmt.Errorf("shared memory %s: file is %d bytes, want %d", path, st.Size(), ShmemSize)
	}
	return &Shmem{path: path, r: &fileRegion{f: f}}, nil
}
