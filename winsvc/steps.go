package winsvc

import (
	"errors"
	"fmt"
	"syscall"
)

// Skipped is an optional part of an install or uninstall that did not
// happen, and why. The service works without it: Install and Uninstall
// still succeed, and the CLI says what was left out.
type Skipped struct {
	What string // the part left out, and what that means, in words
	Err  error
}

func (s Skipped) String() string {
	if s.Err == nil {
		return s.What
	}
	return s.What + ": " + s.Err.Error()
}

// step is one part of an install or uninstall.
type step struct {
	what     string
	optional bool
	do       func() error
}

// runSteps does steps in order. A required step's error ends the run
// with that error (wrapped with its what); an optional step's error is
// noted in skipped and the run goes on. Windows versions and emulations
// (Wine) differ in which service settings they accept, and none of the
// optional ones is worth refusing the service over.
func runSteps(steps []step) (skipped []Skipped, err error) {
	for _, s := range steps {
		err := s.do()
		if err == nil {
			continue
		}
		if !s.optional {
			return skipped, fmt.Errorf("%s: %w", s.what, err)
		}
		skipped = append(skipped, Skipped{What: s.what, Err: err})
	}
	return skipped, nil
}

// errorFileNotFound is Win32's ERROR_FILE_NOT_FOUND, which the registry
// answers for a key that does not exist.
const errorFileNotFound = 2

// ErrNotRegistered: the event log source to remove was never registered
// (an install that skipped it, or one removed by hand).
var ErrNotRegistered = errors.New("it was not registered")

// sourceRemoveErr turns the registry's "not found" on removing the event
// log source into ErrNotRegistered; other errors stay as they are.
func sourceRemoveErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) && uintptr(errno) == errorFileNotFound {
		return ErrNotRegistered
	}
	return err
}
