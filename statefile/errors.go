package statefile

import (
	"errors"
	"fmt"
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
	return fmt.Sprintf("state file %s is corrupt (%s); it was left as is: move it away to start fresh, or restore a backup", e.path, e.detail)
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
