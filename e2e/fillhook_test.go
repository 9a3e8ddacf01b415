//go:build unix

package e2e

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// chainHooks runs the non-nil hooks in order; nil when there are none.
func chainHooks(hooks ...func()) func() {
	var live []func()
	for _, h := range hooks {
		if h != nil {
			live = append(live, h)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return func() {
		for _, h := range live {
			h()
		}
	}
}

// diskFillHook returns the daemon's StateCommitHook for a child with a
// fill trigger: when the trigger file exists at a commit, the hook removes
// it and fills the file system it names ("FILLER LEAVE": the filler
// file's path, the bytes to leave free) right before bbolt writes the
// commit's pages, so the disk runs out in the middle of that commit. The
// hook runs once per trigger. nil when trigger is "".
func diskFillHook(trigger string) func() {
	if trigger == "" {
		return nil
	}
	return func() {
		spec, err := os.ReadFile(trigger)
		if err != nil {
			return
		}
		_ = os.Remove(trigger)
		f := strings.Fields(string(spec))
		if len(f) != 2 {
			fmt.Fprintf(os.Stderr, "e2e fill hook: bad trigger %q\n", spec)
			return
		}
		leave, _ := strconv.ParseInt(f[1], 10, 64)
		n, err := fillDisk(f[0], leave)
		fmt.Fprintf(os.Stderr, "e2e fill hook: filled the disk inside a state commit (%d bytes, %d left free): %v\n", n, leave, err)
	}
}

// fillDisk appends to the file at path until the file system is full, then
// gives back leave bytes (a multiple of the page size frees whole pages on
// tmpfs). It returns the bytes the file holds.
func fillDisk(path string, leave int64) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := fi.Size()
	for _, chunk := range []int{1 << 20, 4096} {
		buf := make([]byte, chunk)
		for {
			n, err := f.Write(buf)
			size += int64(n)
			if errors.Is(err, syscall.ENOSPC) {
				break
			}
			if err != nil {
				return size, err
			}
		}
	}
	if leave > 0 {
		size = max(size-leave, 0)
		if err := f.Truncate(size); err != nil {
			return size, err
		}
	}
	return size, nil
}
