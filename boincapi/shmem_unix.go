//go:build unix

package boincapi

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmapRegion is the MAP_SHARED mapping of boinc_mmap_file, the same memory
// a C++ BOINC app maps (lib/shmem.cpp create_shmem_mmap / attach_shmem_mmap).
type mmapRegion struct{ mem []byte }

func (m *mmapRegion) check(off int64, n int) error {
	if m.mem == nil {
		return errors.New("segment is unmapped")
	}
	if off < 0 || off+int64(n) > int64(len(m.mem)) {
		return fmt.Errorf("range %d+%d outside %d-byte segment", off, n, len(m.mem))
	}
	return nil
}

// guarded runs f, an access to the mapping, turning a fault into an
// error: the file behind the mapping is the app's to write, and an app
// that truncates it (or a file system that cannot back a page) makes the
// access a SIGBUS, which would otherwise kill the daemon.
func guarded(f func()) (err error) {
	old := debug.SetPanicOnFault(true)
	defer func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			re, ok := r.(runtime.Error)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("shared memory unreadable (file truncated, or the disk full?): %w", re)
		}
	}()
	f()
	return nil
}

func (m *mmapRegion) readAt(p []byte, off int64) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	return guarded(func() { copy(p, m.mem[off:]) })
}

func (m *mmapRegion) writeAt(p []byte, off int64) error {
	if err := m.check(off, len(p)); err != nil {
		return err
	}
	return guarded(func() { copy(m.mem[off:], p) })
}

func (m *mmapRegion) word(off int64) (*uint32, error) {
	if err := m.check(off, 4); err != nil {
		return nil, err
	}
	if off%4 != 0 {
		return nil, fmt.Errorf("offset %d is not word aligned", off)
	}
	return (*uint32)(unsafe.Pointer(&m.mem[off])), nil
}

func (m *mmapRegion) loadHead(off int64) ([4]byte, error) {
	w, err := m.word(off)
	if err != nil {
		return [4]byte{}, err
	}
	var v uint32
	if err := guarded(func() { v = atomic.LoadUint32(w) }); err != nil {
		return [4]byte{}, err
	}
	return headBytes(v), nil
}

func (m *mmapRegion) storeHead(off int64, h [4]byte) error {
	w, err := m.word(off)
	if err != nil {
		return err
	}
	return guarded(func() { atomic.StoreUint32(w, headWord(h)) })
}

func (m *mmapRegion) close() error {
	if m.mem == nil {
		return nil
	}
	err := unix.Munmap(m.mem)
	m.mem = nil
	return err
}

// CreateShmem creates (or truncates) path as ShmemSize zero bytes with mode
// 0666 and maps it shared: what the client does before each start.
func CreateShmem(path string) (*Shmem, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: create: %w", path, err)
	}
	defer f.Close()
	// The umask would otherwise narrow the mode; apps running as another
	// user (sandboxing) must be able to map it.
	if err := f.Chmod(0o666); err != nil {
		return nil, fmt.Errorf("shared memory %s: chmod: %w", path, err)
	}
	// Zeros written, not a sparse ftruncate: a page of a mapped file
	// that the file system cannot back (a full disk or tmpfs) is a SIGBUS
	// at the first touch, which kills the daemon; written now, a full
	// disk is an ENOSPC here, which holds the task's start instead.
	if n, err := f.WriteAt(make([]byte, ShmemSize), 0); err != nil || n != ShmemSize {
		return nil, fmt.Errorf("shared memory %s: size: %w", path, cmpErr(err, n))
	}
	return mapFile(path, f)
}

// cmpErr is err, or a short write's error when err is nil.
func cmpErr(err error, n int) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("short write: %d of %d bytes", n, ShmemSize)
}

// OpenShmem maps an existing segment file: what the app does.
func OpenShmem(path string) (*Shmem, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: open: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: stat: %w", path, err)
	}
	if st.Size() < ShmemSize {
		return nil, fmt.Errorf("shared memory %s: file is %d bytes, want %d", path, st.Size(), ShmemSize)
	}
	return mapFile(path, f)
}

func mapFile(path string, f *os.File) (*Shmem, error) {
	mem, err := unix.Mmap(int(f.Fd()), 0, ShmemSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shared memory %s: mmap: %w", path, err)
	}
	return &Shmem{path: path, r: &mmapRegion{mem: mem}}, nil
}
