package statefile

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
)

func TestIOErrorClassified(t *testing.T) {
	const path = "/data/boincd.db"
	tests := []struct {
		name string
		err  error
		kind error // nil: neither
		hint string
	}{
		{"ENOSPC", &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}, ErrNoSpace, "disk is full"},
		{"EDQUOT", &fs.PathError{Op: "write", Path: path, Err: syscall.EDQUOT}, ErrNoSpace, "quota"},
		{"EFBIG", &fs.PathError{Op: "write", Path: path, Err: syscall.EFBIG}, ErrNoSpace, "file size limit"},
		// bbolt's grow formats the truncate error with %s.
		{"bbolt resize", fmt.Errorf("file resize error: %s", &fs.PathError{Op: "truncate", Path: path, Err: syscall.EFBIG}), ErrNoSpace, "disk is full"},
		{"EROFS", &fs.PathError{Op: "open", Path: path, Err: syscall.EROFS}, ErrReadOnly, "read-only"},
		{"EPERM", &fs.PathError{Op: "write", Path: path, Err: syscall.EPERM}, ErrReadOnly, "read-only"},
		{"EIO", &fs.PathError{Op: "write", Path: path, Err: syscall.EIO}, nil, "input/output error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := commitError(path, tc.err)
			for _, k := range []error{ErrNoSpace, ErrReadOnly} {
				if got := errors.Is(err, k); got != (k == tc.kind) {
					t.Errorf("errors.Is(%v, %v) = %v", err, k, got)
				}
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("the cause is not wrapped: %v", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tc.hint) {
				t.Errorf("message %q lacks the path or %q", msg, tc.hint)
			}
		})
	}
}
