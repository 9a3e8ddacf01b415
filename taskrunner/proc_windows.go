//go:build windows

package taskrunner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// sigStop never occurs on Windows; it only completes restartSignal.
const sigStop = syscall.Signal(0x13)

var (
	ntdll            = windows.NewLazySystemDLL("ntdll.dll")
	ntSuspendProcess = ntdll.NewProc("NtSuspendProcess")
	ntResumeProcess  = ntdll.NewProc("NtResumeProcess")
	kernel32         = windows.NewLazySystemDLL("kernel32.dll")
	isProcessInJob   = kernel32.NewProc("IsProcessInJob")
	getProcessMemory = kernel32.NewProc("K32GetProcessMemoryInfo")
)

// configureCmd starts the app in a new process group so console control
// events for the daemon do not reach it. Its process tree is tied
// together by the Job Object newJob puts it in.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{CreationFlags: windows.CREATE_NEW_PROCESS_GROUP}
}

// lowerPriority puts the app in the idle priority class, or below normal
// for "high priority" apps (GPU apps, apps using less than a CPU), as
// client/app_start.cpp does.
func lowerPriority(p *os.Process, high bool) error {
	class := uint32(windows.IDLE_PRIORITY_CLASS)
	if high {
		class = windows.BELOW_NORMAL_PRIORITY_CLASS
	}
	h, err := windows.OpenProcess(windows.PROCESS_SET_INFORMATION, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	if err := windows.SetPriorityClass(h, class); err != nil {
		return fmt.Errorf("set priority class of %d: %w", p.Pid, err)
	}
	return nil
}

// jobObject is the Job Object holding a task's process tree. Every
// process the app starts joins it, so TerminateJobObject ends the whole
// tree, and JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE ends it too when the
// handle is closed, including when the daemon dies. mu orders the uses
// of the handle against closeJob, since Poll samples it without the
// runner's lock.
type jobObject struct {
	mu sync.Mutex
	h  windows.Handle // 0 once closed
}

// newJob creates a kill-on-close Job Object and assigns p to it. os/exec
// cannot create the process suspended, so a child the app starts in the
// instant between CreateProcess and the assignment stays outside the job
// (and outlives a kill); children started later are inside. The open
// handle exec.Cmd holds on p pins its pid, so OpenProcess reaches p even
// if it has exited already (the assignment then fails).
func newJob(p *os.Process) (*jobObject, error) {
	h, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("create job object for process %d: %w", p.Pid, err)
	}
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := windows.SetInformationJobObject(h, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("set kill-on-close on the job of process %d: %w", p.Pid, err)
	}
	ph, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE, false, uint32(p.Pid))
	if err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(ph)
	if err := windows.AssignProcessToJobObject(h, ph); err != nil {
		windows.CloseHandle(h)
		return nil, fmt.Errorf("assign process %d to its job: %w", p.Pid, err)
	}
	return &jobObject{h: h}, nil
}

// terminate ends every process in the job. It reports false if there is
// no job to act on.
func (j *jobObject) terminate() (bool, error) {
	if j == nil {
		return false, nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h == 0 {
		return false, nil
	}
	if err := windows.TerminateJobObject(j.h, 1); err != nil {
		return true, fmt.Errorf("terminate job: %w", err)
	}
	return true, nil
}

// closeJob releases the job; kill-on-close ends anything still in it.
func closeJob(j *jobObject) {
	if j == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h != 0 {
		windows.CloseHandle(j.h)
		j.h = 0
	}
}

// members opens the processes of the job with access, each checked to
// still be in the job once opened, so a pid reused between the listing
// and the open is never touched. The caller closes the handles.
func (j *jobObject) members(access uint32) []windows.Handle {
	if isProcessInJob.Find() != nil {
		return nil
	}
	var list jobPIDList
	// ERROR_MORE_DATA still fills the list as far as it goes.
	_ = windows.QueryInformationJobObject(j.h, windows.JobObjectBasicProcessIdList,
		uintptr(unsafe.Pointer(&list)), uint32(unsafe.Sizeof(list)), nil)
	var out []windows.Handle
	for _, pid := range list.pids() {
		h, err := windows.OpenProcess(access|windows.PROCESS_QUERY_LIMITED_INFORMATION, false, pid)
		if err != nil {
			continue
		}
		var in int32
		if r, _, _ := isProcessInJob.Call(uintptr(h), uintptr(j.h), uintptr(unsafe.Pointer(&in))); r == 0 || in == 0 {
			windows.CloseHandle(h)
			continue
		}
		out = append(out, h)
	}
	return out
}

// killTree ends the job, hence the whole process tree; without a job,
// the main process only.
func killTree(p *os.Process, j *jobObject) error {
	done, err := j.terminate()
	if done && err == nil {
		return nil
	}
	if kerr := p.Kill(); kerr != nil && kerr != os.ErrProcessDone {
		return fmt.Errorf("kill process %d: %w", p.Pid, errors.Join(err, kerr))
	}
	return nil
}

// terminateTree: Windows has no SIGTERM for a windowless process, so a
// plain program is killed; the exit is still classified as a restart.
func terminateTree(p *os.Process, j *jobObject) error { return killTree(p, j) }

func ntCall(proc *windows.LazyProc, h windows.Handle, pid int) error {
	if err := proc.Find(); err != nil {
		return fmt.Errorf("%s: %w", proc.Name, err)
	}
	if st, _, _ := proc.Call(uintptr(h)); st != 0 {
		return fmt.Errorf("%s(%d): NTSTATUS 0x%x", proc.Name, pid, st)
	}
	return nil
}

// suspendCall suspends or resumes every process of the job (the main
// process only without one), as SIGSTOP of a process group does.
func suspendCall(proc *windows.LazyProc, p *os.Process, j *jobObject) error {
	if j != nil {
		j.mu.Lock()
		if j.h != 0 {
			hs := j.members(windows.PROCESS_SUSPEND_RESUME)
			j.mu.Unlock()
			var errs []error
			for _, h := range hs {
				errs = append(errs, ntCall(proc, h, p.Pid))
				windows.CloseHandle(h)
			}
			if len(hs) > 0 {
				return errors.Join(errs...)
			}
		} else {
			j.mu.Unlock()
		}
	}
	h, err := windows.OpenProcess(windows.PROCESS_SUSPEND_RESUME, false, uint32(p.Pid))
	if err != nil {
		return fmt.Errorf("open process %d: %w", p.Pid, err)
	}
	defer windows.CloseHandle(h)
	return ntCall(proc, h, p.Pid)
}

func stopTree(p *os.Process, j *jobObject) error { return suspendCall(ntSuspendProcess, p, j) }
func contTree(p *os.Process, j *jobObject) error { return suspendCall(ntResumeProcess, p, j) }

// killGroupLeftovers ends what the app left running in its job.
func killGroupLeftovers(_ int, j *jobObject) { _, _ = j.terminate() }

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
	vm  float64 // not measured here: swap_size reads 0
	ok  bool
}

// procRef names a task's processes for procScan.usages.
type procRef struct {
	pid int // main process
	job *jobObject
}

// procScan samples each task through its job object: nothing is kept
// between polls, as a job lists its own members.
type procScan struct{}

// usages samples each task: CPU time from the job's accounting (every
// process that ran in it) and the working set summed over its live
// members; without a job, the main process alone.
func (*procScan) usages(procs []procRef, _ time.Time) map[int]usage {
	out := make(map[int]usage, len(procs))
	for _, p := range procs {
		if u, ok := jobUsage(p.job); ok {
			out[p.pid] = u
		} else if u, ok := processUsage(p.pid); ok {
			out[p.pid] = u
		}
	}
	return out
}

func jobUsage(j *jobObject) (usage, bool) {
	if j == nil {
		return usage{}, false
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.h == 0 {
		return usage{}, false
	}
	var acct jobAccounting
	if err := windows.QueryInformationJobObject(j.h, windows.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&acct)), uint32(unsafe.Sizeof(acct)), nil); err != nil {
		return usage{}, false
	}
	u := usage{cpu: acct.cpuSeconds(), ok: true}
	for _, h := range j.members(windows.PROCESS_VM_READ) {
		if ws, ok := workingSet(h); ok {
			u.rss += ws
		}
		windows.CloseHandle(h)
	}
	return u, true
}

// processUsage samples one process. exec.Cmd's handle pins the pid
// until the process is reaped, the moment the task is marked exited.
func processUsage(pid int) (usage, bool) {
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_LIMITED_INFORMATION|windows.PROCESS_VM_READ, false, uint32(pid))
	if err != nil {
		return usage{}, false
	}
	defer windows.CloseHandle(h)
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return usage{}, false
	}
	ft := func(f windows.Filetime) float64 {
		return float64(uint64(f.HighDateTime)<<32|uint64(f.LowDateTime)) / 1e7
	}
	u := usage{cpu: ft(kernel) + ft(user), ok: true}
	if ws, ok := workingSet(h); ok {
		u.rss = ws
	}
	return u, true
}

func workingSet(h windows.Handle) (float64, bool) {
	if getProcessMemory.Find() != nil {
		return 0, false
	}
	var pmc processMemoryCounters
	pmc.Cb = uint32(unsafe.Sizeof(pmc))
	if r, _, _ := getProcessMemory.Call(uintptr(h), uintptr(unsafe.Pointer(&pmc)), uintptr(pmc.Cb)); r == 0 {
		return 0, false
	}
	return float64(pmc.WorkingSetSize), true
}

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
