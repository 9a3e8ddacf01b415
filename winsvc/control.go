package winsvc

import (
	"fmt"
	"time"
)

// State is a service's current state; the values are Win32's
// SERVICE_STOPPED etc. (golang.org/x/sys/windows/svc.State).
type State uint32

// Service states.
const (
	Stopped      State = 1 // SERVICE_STOPPED
	StartPending State = 2 // SERVICE_START_PENDING
	StopPending  State = 3 // SERVICE_STOP_PENDING
	Running      State = 4 // SERVICE_RUNNING
)

func (s State) String() string {
	switch s {
	case Stopped:
		return "stopped"
	case StartPending:
		return "start pending"
	case StopPending:
		return "stop pending"
	case Running:
		return "running"
	}
	return fmt.Sprintf("state %d", uint32(s))
}

// Cmd is a control request from the SCM; the values are Win32's
// SERVICE_CONTROL_* codes (svc.Cmd).
type Cmd uint32

// Control requests boincd handles. Others (pause, power events, ...) are
// never accepted, so the SCM does not send them; if one arrives anyway it
// is answered with the current status.
const (
	CmdStop        Cmd = 1  // SERVICE_CONTROL_STOP: net stop, sc stop, boincd service stop
	CmdPause       Cmd = 2  // SERVICE_CONTROL_PAUSE (not accepted)
	CmdContinue    Cmd = 3  // SERVICE_CONTROL_CONTINUE (not accepted)
	CmdInterrogate Cmd = 4  // SERVICE_CONTROL_INTERROGATE: report the status again
	CmdShutdown    Cmd = 5  // SERVICE_CONTROL_SHUTDOWN: the system is going down
	CmdParamChange Cmd = 6  // SERVICE_CONTROL_PARAMCHANGE: sc control boincd paramchange, the SIGHUP of Windows
	CmdPreShutdown Cmd = 15 // SERVICE_CONTROL_PRESHUTDOWN: the system is going down, and waits for us
)

func (c Cmd) String() string {
	switch c {
	case CmdStop:
		return "stop"
	case CmdPause:
		return "pause"
	case CmdContinue:
		return "continue"
	case CmdInterrogate:
		return "interrogate"
	case CmdShutdown:
		return "shutdown"
	case CmdParamChange:
		return "paramchange"
	case CmdPreShutdown:
		return "preshutdown"
	}
	return fmt.Sprintf("control %d", uint32(c))
}

// Accepted is the set of controls a service accepts; the values are
// Win32's SERVICE_ACCEPT_* bits (svc.Accepted).
type Accepted uint32

// Accepted controls.
const (
	AcceptStop        Accepted = 0x1   // SERVICE_ACCEPT_STOP
	AcceptShutdown    Accepted = 0x4   // SERVICE_ACCEPT_SHUTDOWN
	AcceptParamChange Accepted = 0x8   // SERVICE_ACCEPT_PARAMCHANGE
	AcceptPreShutdown Accepted = 0x100 // SERVICE_ACCEPT_PRESHUTDOWN
)

// RunningAccepts is what boincd accepts while running. PreShutdown gets
// the service a bounded wait at system shutdown (set to StopWaitHint at
// install) instead of the few seconds a plain Shutdown allows, so tasks
// can reach a checkpoint. Shutdown stays accepted for systems that send
// only that.
const RunningAccepts = AcceptStop | AcceptShutdown | AcceptParamChange | AcceptPreShutdown

// ErrorServiceSpecific is Win32's ERROR_SERVICE_SPECIFIC_ERROR: the
// Win32ExitCode that says "look at ServiceSpecificExitCode".
const ErrorServiceSpecific = 1066

// Service-specific exit codes (shown by sc query as SERVICE_EXIT_CODE).
// A non-zero exit makes the SCM apply the recovery actions, which
// Install sets to "restart".
const (
	ExitOK          uint32 = 0
	ExitStartFailed uint32 = 1 // the daemon could not be built (bad config, unreadable data directory)
	ExitRunFailed   uint32 = 2 // the daemon's Run returned an error
)

// Status is what the service reports to the SCM (svc.Status without the
// process id, which the SCM knows).
type Status struct {
	State   State
	Accepts Accepted
	// CheckPoint grows while a pending state makes progress; WaitHint
	// (milliseconds) is how long the SCM should wait for the next
	// CheckPoint before it considers the service hung.
	CheckPoint              uint32
	WaitHint                uint32
	Win32ExitCode           uint32
	ServiceSpecificExitCode uint32
}

// Default wait hints.
const (
	// DefaultStartWaitHint covers building the daemon: reading the config
	// and opening the state file.
	DefaultStartWaitHint = 30 * time.Second
	// DefaultStopWaitHint covers a graceful stop: tasks are asked to quit
	// at their next checkpoint and killed after the daemon's QuitGrace
	// (60 s), then the state is written. The SCM is told again every
	// ProgressInterval, so this is the longest silence, not the total.
	DefaultStopWaitHint = 90 * time.Second
)

// Decision is what the service must do for one control request: report
// Status (always: the SCM expects an answer to every control), and
// possibly cancel the daemon's context or make it reload its config.
type Decision struct {
	Status Status
	Stop   bool // cancel the Runner's context
	Reload bool // call the Runner's Reload
	// Unexpected: a control boincd never accepts; worth a log line.
	Unexpected bool
}

// Machine is the service's control state machine. It is a plain value
// with no goroutines or clocks, so every transition is a table test; Serve
// drives it. The zero value is not usable: use NewMachine.
type Machine struct {
	cur       Status
	startWait uint32
	stopWait  uint32
}

// NewMachine returns a machine in StartPending's predecessor (Stopped,
// nothing accepted). Zero wait hints mean the defaults.
func NewMachine(startWait, stopWait time.Duration) *Machine {
	if startWait <= 0 {
		startWait = DefaultStartWaitHint
	}
	if stopWait <= 0 {
		stopWait = DefaultStopWaitHint
	}
	return &Machine{
		cur:       Status{State: Stopped},
		startWait: uint32(startWait / time.Millisecond),
		stopWait:  uint32(stopWait / time.Millisecond),
	}
}

// Current is the status last reported.
func (m *Machine) Current() Status { return m.cur }

// Starting moves to StartPending: nothing is accepted until the daemon
// exists, because there would be nothing to stop or reload.
func (m *Machine) Starting() Status {
	m.cur = Status{State: StartPending, CheckPoint: 1, WaitHint: m.startWait}
	return m.cur
}

// Started moves to Running once the daemon's Run has been launched.
func (m *Machine) Started() Status {
	if m.cur.State == StopPending || m.cur.State == Stopped {
		return m.cur
	}
	m.cur = Status{State: Running, Accepts: RunningAccepts}
	return m.cur
}

// Handle decides what to do with control request c.
func (m *Machine) Handle(c Cmd) Decision {
	switch c {
	case CmdInterrogate:
		return Decision{Status: m.cur}
	case CmdStop, CmdShutdown, CmdPreShutdown:
		if m.cur.State == StopPending || m.cur.State == Stopped {
			// Already stopping: the first request cancelled the daemon;
			// a second one (a repeated net stop, or Shutdown after
			// PreShutdown) only gets the status.
			return Decision{Status: m.cur}
		}
		m.cur = Status{State: StopPending, CheckPoint: 1, WaitHint: m.stopWait}
		return Decision{Status: m.cur, Stop: true}
	case CmdParamChange:
		if m.cur.State != Running {
			return Decision{Status: m.cur}
		}
		return Decision{Status: m.cur, Reload: true}
	}
	return Decision{Status: m.cur, Unexpected: true}
}

// Progress is reported periodically while stopping, so the SCM sees the
// CheckPoint grow and keeps waiting. In other states it is the current
// status unchanged.
func (m *Machine) Progress() Status {
	if m.cur.State == StopPending {
		m.cur.CheckPoint++
	}
	return m.cur
}

// Stopped is the final status, with exit code code (ExitOK or one of the
// service-specific codes).
func (m *Machine) Stopped(code uint32) Status {
	m.cur = Status{State: Stopped}
	if code != ExitOK {
		m.cur.Win32ExitCode = ErrorServiceSpecific
		m.cur.ServiceSpecificExitCode = code
	}
	return m.cur
}
