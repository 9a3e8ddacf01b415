package winsvc

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// Install and Uninstall go on past an optional setting the system
// refuses (Wine refuses some service settings; a missing event log
// source cannot be removed), saying what was left out, and stop at a
// required step's error.
func TestRunSteps(t *testing.T) {
	refused := errors.New("refused")
	ok := func() error { return nil }
	fail := func() error { return refused }
	tests := []struct {
		name        string
		steps       []step
		wantRun     []string
		wantSkipped []string
		wantErr     string
	}{
		{name: "all done", steps: []step{{what: "a", do: ok}, {what: "b", optional: true, do: ok}}, wantRun: []string{"a", "b"}},
		{
			name:        "optional refusals are skipped",
			steps:       []step{{what: "create", do: ok}, {what: "recovery", optional: true, do: fail}, {what: "acl", do: ok}, {what: "event source", optional: true, do: fail}},
			wantRun:     []string{"create", "recovery", "acl", "event source"},
			wantSkipped: []string{"recovery: refused", "event source: refused"},
		},
		{
			name:        "a required failure ends the run",
			steps:       []step{{what: "recovery", optional: true, do: fail}, {what: "acl", do: fail}, {what: "event source", optional: true, do: ok}},
			wantRun:     []string{"recovery", "acl"},
			wantSkipped: []string{"recovery: refused"},
			wantErr:     "acl: refused",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var ran []string
			steps := slices.Clone(tc.steps)
			for i := range steps {
				s := steps[i]
				steps[i].do = func() error { ran = append(ran, s.what); return s.do() }
			}
			skipped, err := runSteps(steps)
			if !slices.Equal(ran, tc.wantRun) {
				t.Errorf("ran %v, want %v", ran, tc.wantRun)
			}
			var got []string
			for _, s := range skipped {
				got = append(got, s.String())
			}
			if !slices.Equal(got, tc.wantSkipped) {
				t.Errorf("skipped %q, want %q", got, tc.wantSkipped)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("err %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, refused)):
				t.Errorf("err %v, want %q wrapping the step's error", err, tc.wantErr)
			}
		})
	}
}

// Uninstall after a successful stop and delete reported "remove event
// log source: File not found" and exited 1 under Wine: a source that was
// never registered is now said to be so, as a skipped part.
func TestSourceRemoveErr(t *testing.T) {
	if got := sourceRemoveErr(syscall.Errno(2)); !errors.Is(got, ErrNotRegistered) {
		t.Errorf("not found: %v, want ErrNotRegistered", got)
	}
	if got := sourceRemoveErr(fmt.Errorf("delete key: %w", syscall.Errno(2))); !errors.Is(got, ErrNotRegistered) {
		t.Errorf("wrapped not found: %v, want ErrNotRegistered", got)
	}
	denied := syscall.Errno(5)
	if got := sourceRemoveErr(denied); !errors.Is(got, denied) {
		t.Errorf("access denied: %v, want it kept", got)
	}
	s := Skipped{What: "remove the event log source", Err: sourceRemoveErr(syscall.Errno(2))}
	if !strings.Contains(s.String(), "not registered") {
		t.Errorf("skipped reads %q", s)
	}
}
