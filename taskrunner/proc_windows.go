//go:build windows

package taskrunner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"
)

// sigStop never occurs on Windows; it only completes restartSignal.
const sigStop = syscall.Signal(0x13)

var (
	ntdll            = windows.NewLazySystemDLL("ntdll.dll")
	ntSuspendProcess = ntdll.NewProc("NtSuspendProcess")
	ntResumeProcess  = ntdll.NewProc("NtResumeProcess")
)

// configureCmd starts the app in a new process group so console control
// events for the daemon do not reach it. Without a Job Object, its own
// children are not tied to it (see the package documentation).
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// lowerPriority puts the app in the idle priority class.
func lowerPriority(p *os.Process) error {
	h, err := windows.OpenProcess(windows.PROCESS_SET_INFORMATION, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.SetPriorityClass(h, windows.IDLE_PRIORITY_CLASS); err != nil {
		return fmt.Errorf("set priority class of %d: %w", p.Pid, err)
	}
	return nil
}

// killTree ends the main process only (no Job Object).
func killTree(p *os.Process) error {
	if err := p.Kill(); err != nil && err != os.ErrProcessDone {
		return fmt.Errorf("kill process %d: %w", p.Pid, err)
	}
	return nil
}

// terminateTree: Windows has no SIGTERM for a windowless process, so a
// plain program is killed; the exit is still classified as a restart.
func terminateTree(p *os.Process) error { return killTree(p) }

func suspendCall(proc *windows.LazyProc, p *os.Process) error {
	h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	if err := proc.Find(); err != nil {
		return fmt.Errorf("%s: %w", proc.Name, err)
	}
	if st, _, _ := proc.Call(uintptr(h)); st != 0 {
		return fmt.Errorf("%s(%d): NTSTATUS 0x%x", proc.Name, p.Pid, st)
	}
	return nil
}

func stopTree(p *os.Process) error { return suspendCall(ntSuspendProcess, p) }
func contTree(p *os.Process) error { return suspendCall(ntResumeProcess, p) }

func killGroupLeftovers(int) {}

// waitExitNoReap is not available: the caller waits first.
func waitExitNoReap(int) bool { return false }

func exitSignal(*os.ProcessState) (int, bool) { return 0, false }

func checkExecutable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	return nil
}

type usage struct {
	cpu float64
	rss float64
	ok  bool
}

// groupUsages: no process groups to sum over; CPU time then comes from
// app_status (API apps) and the final process times.
func groupUsages([]int) map[int]usage { return nil }

// KillOrphan ends a task process left by a daemon that died. Windows has
// no portable way to read another process's working directory, so the
// process is identified by its executable lying under dataDir\projects;
// the slot is not checked. An open handle pins the process, so the kill
// cannot hit a reused pid.
func KillOrphan(dataDir string, slot int, pid int) {
	if pid <= 0 || dataDir == "" {
		return
	}
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_TERMINATE, false, uint32(pid))
	if err != nil {
		return
	}
	defer windows.CloseHandle(h)
	buf := make([]uint16, windows.MAX_LONG_PATH)
	n := uint32(len(buf))
	if err := windows.QueryFullProcessImageName(h, 0, &buf[0], &n); err != nil {
		return
	}
	exe := filepath.Clean(windows.UTF16ToString(buf[:n]))
	projects := filepath.Join(filepath.Clean(dataDir), "projects") + string(filepath.Separator)
	if !strings.HasPrefix(strings.ToLower(exe), strings.ToLower(projects)) {
		return
	}
	_ = windows.TerminateProcess(h, 1)
}
