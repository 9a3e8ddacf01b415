package winsvc

import (
	"testing"
	"time"
)

// machineIn returns a machine in state s, reached through the real
// transitions.
func machineIn(t *testing.T, s State) *Machine {
	t.Helper()
	m := NewMachine(0, 0)
	switch s {
	case Stopped:
	case StartPending:
		m.Starting()
	case Running:
		m.Starting()
		m.Started()
	case StopPending:
		m.Starting()
		m.Started()
		m.Handle(CmdStop)
	default:
		t.Fatalf("no way to reach %s", s)
	}
	if got := m.Current().State; got != s {
		t.Fatalf("machine in %s, want %s", got, s)
	}
	return m
}

func TestMachineTransitions(t *testing.T) {
	stopWait := uint32(DefaultStopWaitHint / time.Millisecond)
	running := Status{State: Running, Accepts: RunningAccepts}
	stopping := Status{State: StopPending, CheckPoint: 1, WaitHint: stopWait}
	starting := Status{State: StartPending, CheckPoint: 1, WaitHint: uint32(DefaultStartWaitHint / time.Millisecond)}
	stopped := Status{State: Stopped}
	tests := []struct {
		from State
		cmd  Cmd
		want Decision
	}{
		{Running, CmdInterrogate, Decision{Status: running}},
		{Running, CmdStop, Decision{Status: stopping, Stop: true}},
		{Running, CmdShutdown, Decision{Status: stopping, Stop: true}},
		{Running, CmdPreShutdown, Decision{Status: stopping, Stop: true}},
		{Running, CmdParamChange, Decision{Status: running, Reload: true}},
		{Running, CmdPause, Decision{Status: running, Unexpected: true}},
		{Running, CmdContinue, Decision{Status: running, Unexpected: true}},
		{Running, Cmd(200), Decision{Status: running, Unexpected: true}},

		{StopPending, CmdInterrogate, Decision{Status: stopping}},
		{StopPending, CmdStop, Decision{Status: stopping}},
		{StopPending, CmdShutdown, Decision{Status: stopping}},
		{StopPending, CmdPreShutdown, Decision{Status: stopping}},
		{StopPending, CmdParamChange, Decision{Status: stopping}},
		{StopPending, CmdPause, Decision{Status: stopping, Unexpected: true}},

		{StartPending, CmdInterrogate, Decision{Status: starting}},
		{StartPending, CmdStop, Decision{Status: stopping, Stop: true}},
		{StartPending, CmdPreShutdown, Decision{Status: stopping, Stop: true}},
		{StartPending, CmdParamChange, Decision{Status: starting}},

		{Stopped, CmdInterrogate, Decision{Status: stopped}},
		{Stopped, CmdStop, Decision{Status: stopped}},
		{Stopped, CmdShutdown, Decision{Status: stopped}},
		{Stopped, CmdParamChange, Decision{Status: stopped}},
	}
	for _, tt := range tests {
		t.Run(tt.from.String()+"/"+tt.cmd.String(), func(t *testing.T) {
			m := machineIn(t, tt.from)
			got := m.Handle(tt.cmd)
			if got != tt.want {
				t.Fatalf("Handle(%s) in %s = %+v, want %+v", tt.cmd, tt.from, got, tt.want)
			}
			if m.Current() != tt.want.Status {
				t.Fatalf("Current() = %+v after the decision, want %+v", m.Current(), tt.want.Status)
			}
		})
	}
}

func TestMachineSequence(t *testing.T) {
	m := NewMachine(10*time.Second, 90*time.Second)
	if got := m.Current(); got != (Status{State: Stopped}) {
		t.Fatalf("initial %+v", got)
	}
	if got := m.Starting(); got.State != StartPending || got.Accepts != 0 || got.WaitHint != 10000 || got.CheckPoint == 0 {
		t.Fatalf("Starting() = %+v: want StartPending accepting nothing, wait hint 10 s", got)
	}
	if got := m.Started(); got != (Status{State: Running, Accepts: RunningAccepts}) {
		t.Fatalf("Started() = %+v", got)
	}
	d := m.Handle(CmdStop)
	if !d.Stop || d.Status.State != StopPending || d.Status.Accepts != 0 || d.Status.WaitHint != 90000 {
		t.Fatalf("Stop = %+v: want StopPending, no controls accepted, wait hint 90 s", d)
	}
	// While stopping, each progress report raises the checkpoint so the
	// SCM keeps waiting; nothing else changes.
	for want := uint32(2); want < 5; want++ {
		if got := m.Progress(); got.CheckPoint != want || got.State != StopPending || got.WaitHint != 90000 {
			t.Fatalf("Progress() = %+v, want checkpoint %d", got, want)
		}
	}
	// Started after a stop request does not resurrect the service.
	if got := m.Started(); got.State != StopPending {
		t.Fatalf("Started() while stopping = %+v", got)
	}
	if got := m.Stopped(ExitOK); got != (Status{State: Stopped}) {
		t.Fatalf("Stopped(ok) = %+v", got)
	}
	if got := m.Progress(); got != (Status{State: Stopped}) {
		t.Fatalf("Progress() when stopped = %+v", got)
	}
}

func TestMachineStoppedExitCodes(t *testing.T) {
	tests := []struct {
		code uint32
		want Status
	}{
		{ExitOK, Status{State: Stopped}},
		{ExitStartFailed, Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitStartFailed}},
		{ExitRunFailed, Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitRunFailed}},
	}
	for _, tt := range tests {
		if got := NewMachine(0, 0).Stopped(tt.code); got != tt.want {
			t.Errorf("Stopped(%d) = %+v, want %+v", tt.code, got, tt.want)
		}
	}
}

func TestStrings(t *testing.T) {
	tests := []struct{ got, want string }{
		{Running.String(), "running"},
		{State(9).String(), "state 9"},
		{CmdPreShutdown.String(), "preshutdown"},
		{Cmd(77).String(), "control 77"},
		{Virtual.String(), "virtual account"},
		{AccountKind(42).String(), "account kind 42"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
