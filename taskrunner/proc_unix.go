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

// lowerPriority sets nice 19 on the new process group (client/app_start.cpp
// uses setpriority(19) for CPU apps).
func lowerPriority(p *os.Process) error {
	if err := unix.Setpriority(unix.PRIO_PGRP, p.Pid, 19); err != nil {
		return fmt.Errorf("setpriority pgrp %d: %w", p.Pid, err)
	}
	return nil
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
func killTree(p *os.Process) error { return signalGroup(p.Pid, unix.SIGKILL) }

// terminateTree asks a plain program's group to end: SIGTERM, plus SIGCONT
// so a stopped group receives it.
func terminateTree(p *os.Process) error {
	if err := signalGroup(p.Pid, unix.SIGTERM); err != nil {
		return err
	}
	return signalGroup(p.Pid, unix.SIGCONT)
}

func stopTree(p *os.Process) error { return signalGroup(p.Pid, unix.SIGSTOP) }
func contTree(p *os.Process) error { return signalGroup(p.Pid, unix.SIGCONT) }

// killGroupLeftovers kills children the app left behind in its group.
func killGroupLeftovers(pid int) { _ = signalGroup(pid, unix.SIGKILL) }

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
