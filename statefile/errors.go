package statefile

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// ErrLocked is wrapped by Open's error when another process (or another
// Store in this process) holds the state file.
var ErrLocked = errors.New("state file is locked")

// ErrCorrupt is wrapped when the state file is not a valid bbolt file,
// fails the structural check, or holds values that cannot be decoded.
var ErrCorrupt = errors.New("state file is corrupt")

// ErrSchemaTooNew is wrapped when the state file was written by a newer
// boincd whose schema this binary does not know.
var ErrSchemaTooNew = errors.New("state file schema is newer than this boincd")

// lockedError carries the exact text users see when two daemons share a
// data directory.
type lockedError struct{ path string }

func (e *lockedError) Error() string {
	return fmt.Sprintf("another boincd uses this data directory (%s is locked)", e.path)
}

func (e *lockedError) Unwrap() error { return ErrLocked }

// corruptError names the file and what is wrong with it, and says that
// nothing was changed so the user knows a backup or a move is safe.
type corruptError struct {
	path   string
	detail string
	cause  error
}

func newCorrupt(path string, cause error, format string, args ...any) error {
	return &corruptError{path: path, detail: fmt.Sprintf(format, args...), cause: cause}
}

func (e *corruptError) Error() string {
	return fmt.Sprintf("state file %s is corrupt (%s); it was left as is: restore a backup, or move it away to start fresh (boincd reset-state does)", e.path, e.detail)
}

func (e *corruptError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrCorrupt}
	}
	return []error{ErrCorrupt, e.cause}
}

// tooNewError refuses a file from a newer boincd.
type tooNewError struct {
	path          string
	have, highest int
}

func (e *tooNewError) Error() string {
	return fmt.Sprintf("state file %s has schema version %d but this boincd knows versions up to %d; it was left as is: run the newer boincd that wrote it, or move the file away to start fresh", e.path, e.have, e.highest)
}

func (e *tooNewError) Unwrap() error { return ErrSchemaTooNew }

// ErrNoSpace is wrapped when a commit could not write because the disk,
// the user's quota or the process's file size limit is exhausted.
var ErrNoSpace = errors.New("no space to write the state file")

// ErrReadOnly is wrapped when a commit could not write because the file
// or the file system under it does not accept writes (a read-only mount,
// an immutable file, permissions).
var ErrReadOnly = errors.New("state file cannot be written")

// writeError is a failed commit. The transaction was rolled back, so the
// file still holds the last committed state; the hint tells the user what
// the operating system's error means for them.
type writeError struct {
	op    string // "commit to" or "open"
	path  string
	kind  error // ErrNoSpace, ErrReadOnly or nil
	cause error
}

func (e *writeError) Error() string {
	hint := ""
	switch e.kind {
	case ErrNoSpace:
		hint = " (the disk is full, or the quota or the file size limit is reached: free space and the daemon carries on)"
	case ErrReadOnly:
		hint = " (the data directory or the file is read-only: make it writable and the daemon carries on)"
	}
	if e.op == "open" {
		return fmt.Sprintf("open state file %s: %v%s", e.path, e.cause, hint)
	}
	return fmt.Sprintf("commit to state file %s: %v%s; the file still holds the last saved state", e.path, e.cause, hint)
}

func (e *writeError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.cause}
	}
	return []error{e.kind, e.cause}
}

// commitError wraps a failed write transaction. bbolt formats some of its
// I/O failures with %s (growing the file: "file resize error: file too
// large"), which drops the errno, so the text is matched as well.
func commitError(path string, err error) error {
	if errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("commit to state file %s: %w", path, err)
	}
	return ioError("commit to", path, err)
}

// ioError classifies an operating system error on the state file.
func ioError(op, path string, err error) error {
	var kind error
	msg := err.Error()
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT), errors.Is(err, syscall.EFBIG),
		strings.Contains(msg, syscall.ENOSPC.Error()), strings.Contains(msg, syscall.EDQUOT.Error()), strings.Contains(msg, syscall.EFBIG.Error()):
		kind = ErrNoSpace
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EACCES),
		strings.Contains(msg, syscall.EROFS.Error()), strings.Contains(msg, syscall.EPERM.Error()), strings.Contains(msg, syscall.EACCES.Error()):
		kind = ErrReadOnly
	}
	return &writeError{op: op, path: path, kind: kind, cause: err}
}
