//go:build unix

package taskrunner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

const sigStop = syscall.SIGSTOP

// configureCmd puts the app in its own process group, so signals reach its
// children too and never the daemon.
func configureCmd(cmd *exec.Cmd) {
	attr := &syscall.SysProcAttr{Setpgid: true}
	setPdeathsig(attr)
	cmd.SysProcAttr = attr
}

// Nice values of client/app_start.cpp: PROCESS_IDLE_PRIORITY for CPU
// apps, PROCESS_MEDIUM_PRIORITY for the "high priority" ones (GPU apps,
// apps using less than one CPU).
const (
	niceIdle   = 19
	niceMedium = 10
)

// lowerPriority sets the nice value of the new process group.
func lowerPriority(p *os.Process, high bool) error {
	nice := niceIdle
	if high {
		nice = niceMedium
	}
	if err := unix.Setpriority(unix.PRIO_PGRP, p.Pid, nice); err != nil {
		return fmt.Errorf("setpriority pgrp %d: %w", p.Pid, err)
	}
	return nil
}

// jobObject exists on Windows only; process groups do its work here.
type jobObject struct{}

func newJob(*os.Process) (*jobObject, error) { return nil, nil }
func closeJob(*jobObject)                    {}

// procRef names a task's processes for procScan.usages.
type procRef struct {
	pid int // process group id
	job *jobObject
}

func signalGroup(pid int, sig unix.Signal) error {
	if pid <= 0 {
		return fmt.Errorf("invalid process group %d", pid)
	}
	if err := unix.Kill(-pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal %v to process group %d: %w", sig, pid, err)
	}
	return nil
}

// killTree SIGKILLs the whole process group.
func killTree(p *os.Process, _ *jobObject) error { return signalGroup(p.Pid, unix.SIGKILL) }

// terminateTree asks a plain program's group to end: SIGTERM, plus SIGCONT
// so a stopped group receives it.
func terminateTree(p *os.Process, _ *jobObject) error {
	if err := signalGroup(p.Pid, unix.SIGTERM); err != nil {
		return err
	}
	return signalGroup(p.Pid, unix.SIGCONT)
}

func stopTree(p *os.Process, _ *jobObject) error { return signalGroup(p.Pid, unix.SIGSTOP) }
func contTree(p *os.Process, _ *jobObject) error { return signalGroup(p.Pid, unix.SIGCONT) }

// killGroupLeftovers kills children the app left behind in its group.
func killGroupLeftovers(pid int, _ *jobObject) { _ = signalGroup(pid, unix.SIGKILL) }

func exitSignal(ps *os.ProcessState) (int, bool) {
	ws, ok := ps.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, false
	}
	return int(ws.Signal()), true
}

// checkExecutable requires a regular file with an execute bit.
func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}
