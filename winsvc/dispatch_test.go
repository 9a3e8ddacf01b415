package winsvc

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
)

// "boincd service run" tries the service dispatcher first and falls back
// to the console only when the dispatcher says no service manager
// started the process (ERROR_FAILED_SERVICE_CONTROLLER_CONNECT).
func TestAfterDispatch(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want DispatchOutcome
	}{
		{"ran under the SCM and stopped", nil, DispatchDone},
		{"started from a console", syscall.Errno(1063), DispatchConsole},
		{"started from a console, wrapped", fmt.Errorf("dispatcher: %w", syscall.Errno(1063)), DispatchConsole},
		{"access denied", syscall.Errno(5), DispatchFailed},
		{"service already running in this process", syscall.Errno(1056), DispatchFailed},
		{"not an errno", errors.New("bad service name"), DispatchFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := AfterDispatch(tc.err); got != tc.want {
				t.Errorf("AfterDispatch(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
