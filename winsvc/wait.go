package winsvc

import (
	"context"
	"fmt"
	"time"
)

// WaitState polls query every interval until the service reports want,
// and returns that status. A service that stops while we wait for it to
// run is an error carrying its exit code (the SCM's only account of why
// it failed, besides the event log). ctx bounds the wait.
func WaitState(ctx context.Context, query func() (Status, error), want State, interval time.Duration) (Status, error) {
	if interval <= 0 {
		interval = 300 * time.Millisecond
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		st, err := query()
		if err != nil {
			return st, fmt.Errorf("service %s: query status: %w", Name, err)
		}
		if st.State == want {
			return st, nil
		}
		if st.State == Stopped {
			return st, fmt.Errorf("service %s stopped while waiting for it to be %s (%s)", Name, want, exitDescription(st))
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("service %s: still %s, waiting to be %s: %w", Name, st.State, want, ctx.Err())
		case <-t.C:
		}
	}
}

// exitDescription explains a stopped service's exit code; see the event
// log for the message behind it.
func exitDescription(st Status) string {
	switch {
	case st.Win32ExitCode == ErrorServiceSpecific && st.ServiceSpecificExitCode == ExitStartFailed:
		return "exit code 1: boincd could not start, see the Application event log, source boincd"
	case st.Win32ExitCode == ErrorServiceSpecific && st.ServiceSpecificExitCode == ExitRunFailed:
		return "exit code 2: boincd stopped with an error, see the Application event log, source boincd"
	case st.Win32ExitCode == ErrorServiceSpecific:
		return fmt.Sprintf("service-specific exit code %d", st.ServiceSpecificExitCode)
	case st.Win32ExitCode != 0:
		return fmt.Sprintf("Win32 exit code %d", st.Win32ExitCode)
	}
	return "exit code 0"
}
