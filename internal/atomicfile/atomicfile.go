// Package atomicfile replaces a file so that a reader, or a crash, finds
// the old content or the new, never a part: the one way boincd (and its
// app library) writes a small file that something else may read at any
// moment or that must survive a power cut whole.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// WriteFile puts data at path with permissions perm: a temporary file in
// the same directory (named with a leading dot, so no scanner of that
// directory takes it for the real one), given perm before any byte is
// written (a password is never readable by others, not even for a
// moment), synced, then renamed over path, and the directory synced so
// the rename itself survives a crash.
//
// A symbolic link at path is followed: its target is replaced and the
// link kept, as the C++ client's fopen-and-write does (Debian links
// gui_rpc_auth.cfg and cc_config.xml into /etc/boinc-client).
//
// Errors name path; on failure path is untouched and no temporary file
// is left behind.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	if err := write(path, data, perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	err = tmp.Chmod(perm)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable. Best effort: the file is in
// place already, and Windows cannot sync a directory (nor needs to: NTFS
// journals the rename).
func syncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
