//go:build windows

package winsvc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/debug"
	"golang.org/x/sys/windows/svc/eventlog"
	"golang.org/x/sys/windows/svc/mgr"
)

// The portable constants must equal x/sys's: each line stops compiling if
// one differs (the array length is 1 only when they are equal, and a
// negative difference overflows).
var (
	_ [1]struct{} = [1 + svc.Stopped - svc.State(Stopped)]struct{}{}
	_ [1]struct{} = [1 + svc.StartPending - svc.State(StartPending)]struct{}{}
	_ [1]struct{} = [1 + svc.StopPending - svc.State(StopPending)]struct{}{}
	_ [1]struct{} = [1 + svc.Running - svc.State(Running)]struct{}{}
	_ [1]struct{} = [1 + svc.Stop - svc.Cmd(CmdStop)]struct{}{}
	_ [1]struct{} = [1 + svc.Pause - svc.Cmd(CmdPause)]struct{}{}
	_ [1]struct{} = [1 + svc.Continue - svc.Cmd(CmdContinue)]struct{}{}
	_ [1]struct{} = [1 + svc.Interrogate - svc.Cmd(CmdInterrogate)]struct{}{}
	_ [1]struct{} = [1 + svc.Shutdown - svc.Cmd(CmdShutdown)]struct{}{}
	_ [1]struct{} = [1 + svc.ParamChange - svc.Cmd(CmdParamChange)]struct{}{}
	_ [1]struct{} = [1 + svc.PreShutdown - svc.Cmd(CmdPreShutdown)]struct{}{}
	_ [1]struct{} = [1 + svc.AcceptStop - svc.Accepted(AcceptStop)]struct{}{}
	_ [1]struct{} = [1 + svc.AcceptShutdown - svc.Accepted(AcceptShutdown)]struct{}{}
	_ [1]struct{} = [1 + svc.AcceptParamChange - svc.Accepted(AcceptParamChange)]struct{}{}
	_ [1]struct{} = [1 + svc.AcceptPreShutdown - svc.Accepted(AcceptPreShutdown)]struct{}{}
	_ [1]struct{} = [1 + windows.ERROR_SERVICE_SPECIFIC_ERROR - windows.Errno(ErrorServiceSpecific)]struct{}{}
	_ [1]struct{} = [1 + windows.ERROR_FAILED_SERVICE_CONTROLLER_CONNECT - windows.Errno(ErrorFailedServiceControllerConnect)]struct{}{}
	_ [1]struct{} = [1 + windows.ERROR_FILE_NOT_FOUND - windows.Errno(errorFileNotFound)]struct{}{}
)

// Handler is the svc.Handler that runs a Service. New builds it when the
// service starts, told whether the SCM runs it (false: the console), so
// the logs go where someone reads them.
type Handler struct {
	New      func(underSCM bool) *Service
	underSCM bool
}

// Execute implements svc.Handler.
func (h Handler) Execute(_ []string, r <-chan svc.ChangeRequest, s chan<- svc.Status) (bool, uint32) {
	st := Serve(h.New(h.underSCM), r, func(c svc.ChangeRequest) Cmd { return Cmd(c.Cmd) }, s, toSvcStatus)
	if st.ServiceSpecificExitCode != 0 {
		return true, st.ServiceSpecificExitCode
	}
	return false, st.Win32ExitCode
}

func toSvcStatus(st Status) svc.Status {
	return svc.Status{
		State:                   svc.State(st.State),
		Accepts:                 svc.Accepted(st.Accepts),
		CheckPoint:              st.CheckPoint,
		WaitHint:                st.WaitHint,
		Win32ExitCode:           st.Win32ExitCode,
		ServiceSpecificExitCode: st.ServiceSpecificExitCode,
	}
}

func fromSvcStatus(st svc.Status) Status {
	return Status{
		State:                   State(st.State),
		Accepts:                 Accepted(st.Accepts),
		CheckPoint:              st.CheckPoint,
		WaitHint:                st.WaitHint,
		Win32ExitCode:           st.Win32ExitCode,
		ServiceSpecificExitCode: st.ServiceSpecificExitCode,
	}
}

// Run runs the service newService builds: under the SCM when the service
// dispatcher connects to it, otherwise (the dispatcher's
// ERROR_FAILED_SERVICE_CONTROLLER_CONNECT: started from a console) with
// svc/debug, where Ctrl+C is the Stop control, for trying the service
// path without installing it. The dispatcher is tried first rather than
// svc.IsWindowsService, which is false under Wine's SCM (AfterDispatch).
func Run(newService func(underSCM bool) *Service) error {
	err := svc.Run(Name, Handler{New: newService, underSCM: true})
	switch AfterDispatch(err) {
	case DispatchDone:
		return nil
	case DispatchConsole:
		if err := debug.Run(Name, Handler{New: newService}); err != nil {
			return fmt.Errorf("service %s (console): %w", Name, err)
		}
		return nil
	}
	return fmt.Errorf("service %s: connect to the service manager: %w", Name, err)
}

// OpenEventLog opens the Application event log under the boincd source.
// The caller closes it.
func OpenEventLog() (*eventlog.Log, error) {
	l, err := eventlog.Open(Name)
	if err != nil {
		return nil, fmt.Errorf("open event log source %s: %w", Name, err)
	}
	return l, nil
}

// InstallOptions are the choices "boincd service install" offers.
type InstallOptions struct {
	Account  Account
	Password string // for User accounts only
	// DataDir is created if missing and given DataDirSDDL's ACL, with
	// the service's SID and, for a User account, that user's.
	DataDir string
	// ManualStart installs the service with start type "manual"
	// instead of delayed automatic.
	ManualStart bool
	// StopWaitHint is also the preshutdown timeout: how long Windows
	// waits for boincd at system shutdown. Zero means DefaultStopWaitHint.
	StopWaitHint time.Duration
}

// restartActions: restart 10 s after the first failure, 1 min after the
// second, 5 min after further ones; failures are forgotten after a day.
var restartActions = []mgr.RecoveryAction{
	{Type: mgr.ServiceRestart, Delay: 10 * time.Second},
	{Type: mgr.ServiceRestart, Delay: time.Minute},
	{Type: mgr.ServiceRestart, Delay: 5 * time.Minute},
}

const failureResetSeconds = 24 * 60 * 60

// Install registers the service to run exePath with args (RunArgs),
// with delayed automatic start, restart on failure (including a non-zero
// exit code, not only crashes), the event log source, and the data
// directory's ACL. It needs an elevated (administrator) process. A
// partly done install is undone.
//
// The service itself, the account's right to log on as a service and the
// data directory's ACL are required. The rest (description, service SID
// type, delayed start, recovery actions, preshutdown timeout, event log
// source) is optional: a setting the system refuses (older Windows, Wine)
// is returned in skipped and the install still succeeds.
func Install(exePath string, args []string, opts InstallOptions) (skipped []Skipped, err error) {
	if opts.Account.NeedsPassword && opts.Password == "" {
		return nil, fmt.Errorf("install service %s: account %s needs its password", Name, opts.Account.StartName)
	}
	if !opts.Account.NeedsPassword && opts.Password != "" {
		return nil, fmt.Errorf("install service %s: %s (%s) has no password; do not give one", Name, opts.Account.StartName, opts.Account.Kind)
	}
	if _, err := CommandLine(exePath, args); err != nil {
		return nil, fmt.Errorf("install service %s: %w", Name, err)
	}
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("install service %s: connect to the service manager (run as administrator): %w", Name, err)
	}
	defer m.Disconnect()
	if s, err := m.OpenService(Name); err == nil {
		s.Close()
		return nil, fmt.Errorf("install service %s: it is already installed; run \"boincd service uninstall\" first", Name)
	}

	sids := []string{ServiceSID(Name)}
	if opts.Account.Kind == User {
		computer, err := windows.ComputerName()
		if err != nil {
			return nil, fmt.Errorf("install service %s: computer name: %w", Name, err)
		}
		sid, _, _, err := windows.LookupSID("", opts.Account.LookupName(computer))
		if err != nil {
			return nil, fmt.Errorf("install service %s: look up account %s: %w", Name, opts.Account.StartName, err)
		}
		// The SCM does not grant "Log on as a service" (services.msc
		// does): without it the service fails to start with error 1069.
		if err := grantServiceLogonRight(sid); err != nil {
			return nil, fmt.Errorf("install service %s: grant %s the right to log on as a service: %w", Name, opts.Account.StartName, err)
		}
		sids = append(sids, sid.String())
	}

	startType := uint32(mgr.StartAutomatic)
	if opts.ManualStart {
		startType = mgr.StartManual
	}
	// Only what the service cannot run without goes into CreateService:
	// x/sys's CreateService deletes the service again when one of the
	// settings it applies after creating it (SID type, description,
	// delayed start) is refused.
	s, err := m.CreateService(Name, exePath, mgr.Config{
		StartType:        startType,
		ErrorControl:     mgr.ErrorNormal,
		DisplayName:      DisplayName,
		ServiceStartName: opts.Account.StartName,
		Password:         opts.Password,
	}, args...)
	if err != nil {
		return nil, fmt.Errorf("install service %s: create: %w", Name, err)
	}
	defer s.Close()
	defer func() {
		if err != nil {
			if derr := s.Delete(); derr != nil {
				err = errors.Join(err, fmt.Errorf("undo: delete service %s: %w", Name, derr))
			}
		}
	}()
	steps := []step{
		{what: "description", optional: true, do: func() error { return setDescription(s.Handle, Description) }},
		{
			// The service SID goes into the process token whatever the
			// account, so the data directory's ACL can name it; the
			// virtual account NT SERVICE\boincd is that SID anyway.
			what: "service SID in the process token (the data directory's ACL names it; other accounts than NT SERVICE\\" + Name + " need their own access)", optional: true,
			do: func() error { return setSIDType(s.Handle, windows.SERVICE_SID_TYPE_UNRESTRICTED) },
		},
	}
	if !opts.ManualStart {
		steps = append(steps, step{what: "delayed automatic start (it starts automatically, without the delay)", optional: true,
			do: func() error { return setDelayedAutoStart(s.Handle) }})
	}
	steps = append(steps,
		step{what: "restart on failure (recovery actions)", optional: true,
			do: func() error { return s.SetRecoveryActions(restartActions, failureResetSeconds) }},
		step{what: "restart on a non-zero exit code", optional: true,
			do: func() error { return s.SetRecoveryActionsOnNonCrashFailures(true) }},
		step{what: "preshutdown timeout (at system shutdown tasks get only the usual few seconds)", optional: true,
			do: func() error { return setPreshutdownTimeout(s.Handle, opts.StopWaitHint) }},
	)
	if opts.DataDir != "" {
		steps = append(steps, step{what: "data directory", do: func() error { return secureDataDir(opts.DataDir, sids) }})
	}
	steps = append(steps, step{what: "event log source (Event Viewer shows boincd's messages with a 'description cannot be found' note)", optional: true,
		do: func() error {
			// A source left by an earlier install would make
			// InstallAsEventCreate fail; its registration is the same,
			// so replace it.
			_ = eventlog.Remove(Name)
			return eventlog.InstallAsEventCreate(Name, eventlog.Error|eventlog.Warning|eventlog.Info)
		}})
	skipped, err = runSteps(steps)
	if err != nil {
		return nil, fmt.Errorf("install service %s: %w", Name, err)
	}
	return skipped, nil
}

func setDescription(h windows.Handle, text string) error {
	p, err := windows.UTF16PtrFromString(text)
	if err != nil {
		return err
	}
	d := windows.SERVICE_DESCRIPTION{Description: p}
	return windows.ChangeServiceConfig2(h, windows.SERVICE_CONFIG_DESCRIPTION, (*byte)(unsafe.Pointer(&d)))
}

func setSIDType(h windows.Handle, sidType uint32) error {
	return windows.ChangeServiceConfig2(h, windows.SERVICE_CONFIG_SERVICE_SID_INFO, (*byte)(unsafe.Pointer(&sidType)))
}

func setDelayedAutoStart(h windows.Handle) error {
	d := windows.SERVICE_DELAYED_AUTO_START_INFO{IsDelayedAutoStartUp: 1}
	return windows.ChangeServiceConfig2(h, windows.SERVICE_CONFIG_DELAYED_AUTO_START_INFO, (*byte)(unsafe.Pointer(&d)))
}

// preshutdownInfo is SERVICE_PRESHUTDOWN_INFO, which x/sys does not define.
type preshutdownInfo struct{ timeoutMillis uint32 }

func setPreshutdownTimeout(h windows.Handle, d time.Duration) error {
	if d <= 0 {
		d = DefaultStopWaitHint
	}
	info := preshutdownInfo{timeoutMillis: uint32(d / time.Millisecond)}
	return windows.ChangeServiceConfig2(h, windows.SERVICE_CONFIG_PRESHUTDOWN_INFO, (*byte)(unsafe.Pointer(&info)))
}

// secureDataDir creates dir and replaces its DACL by DataDirSDDL's; the
// new inheritable entries propagate to what is already inside.
func secureDataDir(dir string, sids []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	sddl, err := DataDirSDDL(sids...)
	if err != nil {
		return err
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return fmt.Errorf("data directory %s: security descriptor %s: %w", dir, sddl, err)
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return fmt.Errorf("data directory %s: DACL of %s: %w", dir, sddl, err)
	}
	err = windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return fmt.Errorf("data directory %s: set ACL: %w", dir, err)
	}
	return nil
}

// Uninstall stops the service if it runs (waiting for the graceful stop,
// bounded by ctx), deletes it and removes the event log source. The data
// directory stays. An event log source that is missing or cannot be
// removed is returned in skipped: the service is gone all the same.
func Uninstall(ctx context.Context) (skipped []Skipped, err error) {
	m, err := mgr.Connect()
	if err != nil {
		return nil, fmt.Errorf("uninstall service %s: connect to the service manager (run as administrator): %w", Name, err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(Name)
	if err != nil {
		return nil, fmt.Errorf("uninstall service %s: %w", Name, err)
	}
	defer s.Close()
	skipped, err = runSteps([]step{
		{what: "stop", do: func() error { return stopService(ctx, s) }},
		{what: "delete", do: s.Delete},
		{what: "remove the event log source", optional: true, do: func() error { return sourceRemoveErr(eventlog.Remove(Name)) }},
	})
	if err != nil {
		return nil, fmt.Errorf("uninstall service %s: %w", Name, err)
	}
	return skipped, nil
}

// Start starts the service and waits (bounded by ctx) until it runs.
func Start(ctx context.Context) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("start service %s: connect to the service manager: %w", Name, err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(Name)
	if err != nil {
		return fmt.Errorf("start service %s: %w (is it installed?)", Name, err)
	}
	defer s.Close()
	if err := s.Start(); err != nil && !errors.Is(err, windows.ERROR_SERVICE_ALREADY_RUNNING) {
		return fmt.Errorf("start service %s: %w", Name, err)
	}
	_, err = WaitState(ctx, queryFunc(s), Running, 0)
	return err
}

// Stop asks the service to stop and waits (bounded by ctx) until it has:
// tasks quit at a checkpoint and the state is saved first.
func Stop(ctx context.Context) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("stop service %s: connect to the service manager: %w", Name, err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(Name)
	if err != nil {
		return fmt.Errorf("stop service %s: %w (is it installed?)", Name, err)
	}
	defer s.Close()
	if err := stopService(ctx, s); err != nil {
		return fmt.Errorf("stop service %s: %w", Name, err)
	}
	return nil
}

func stopService(ctx context.Context, s *mgr.Service) error {
	st, err := s.Query()
	if err != nil {
		return fmt.Errorf("query status: %w", err)
	}
	if st.State == svc.Stopped {
		return nil
	}
	if st.State != svc.StopPending {
		if _, err := s.Control(svc.Stop); err != nil && !errors.Is(err, windows.ERROR_SERVICE_NOT_ACTIVE) {
			return fmt.Errorf("send stop: %w", err)
		}
	}
	_, err = WaitState(ctx, queryFunc(s), Stopped, 0)
	return err
}

func queryFunc(s *mgr.Service) func() (Status, error) {
	return func() (Status, error) {
		st, err := s.Query()
		return fromSvcStatus(st), err
	}
}
