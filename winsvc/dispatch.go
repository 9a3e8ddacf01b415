package winsvc

import (
	"errors"
	"syscall"
)

// ErrorFailedServiceControllerConnect is Win32's
// ERROR_FAILED_SERVICE_CONTROLLER_CONNECT (1063): StartServiceCtrlDispatcher
// found no service manager to connect to, because the process was started
// from a console and not by the SCM.
const ErrorFailedServiceControllerConnect = 1063

// DispatchOutcome is what "boincd service run" does after the service
// dispatcher (svc.Run, StartServiceCtrlDispatcher) returned.
type DispatchOutcome int

const (
	// DispatchDone: the SCM ran the service and it has stopped.
	DispatchDone DispatchOutcome = iota
	// DispatchConsole: not started by the SCM; run in the console
	// (svc/debug), where Ctrl+C is the Stop control.
	DispatchConsole
	// DispatchFailed: the dispatcher failed for another reason; the
	// service cannot run.
	DispatchFailed
)

func (o DispatchOutcome) String() string {
	switch o {
	case DispatchDone:
		return "done"
	case DispatchConsole:
		return "console"
	}
	return "fail"
}

// AfterDispatch maps the dispatcher's error to what to do next. The
// dispatcher is always tried first: guessing from the parent process
// (svc.IsWindowsService: a parent named services.exe in session 0) fails
// under Wine, whose services run in session 1, and a service that never
// connects is killed by the SCM after its start timeout (error 1053).
// Only the dispatcher's own "no service manager" answer means a console.
func AfterDispatch(err error) DispatchOutcome {
	if err == nil {
		return DispatchDone
	}
	var errno syscall.Errno
	if errors.As(err, &errno) && uintptr(errno) == ErrorFailedServiceControllerConnect {
		return DispatchConsole
	}
	return DispatchFailed
}
