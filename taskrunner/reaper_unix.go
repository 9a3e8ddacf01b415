//go:build unix

package taskrunner

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The task reaper makes a task's whole process tree die with the daemon.
//
// Each app runs in a process group of its own, and Pdeathsig (Linux) kills
// the process the daemon started when the daemon dies; but not its
// children: a wrapper's worker, or a script's `sleep 240 &`, would be
// reparented to init and run on unsupervised after a kill -9 of boincd.
// So the runner starts one small helper, this binary run again with
// reaperArg, in a process group of its own, whose stdin is a pipe the
// daemon holds. The daemon writes "+PGID description" when a task starts
// and "-PGID" when it has ended (before its leader is reaped, so the group
// id cannot have been reused). When the pipe reaches end of file, however
// the daemon ended (kill -9, a crash, the OOM killer, or a normal exit),
// the reaper SIGKILLs every group still registered, says so on stderr (the
// journal under systemd) and exits.
//
// The reaper runs with the daemon's credentials, so it may signal apps
// that run as app_user exactly when the daemon may (root or CAP_KILL,
// which execve keeps when it is ambient or a file capability). If the
// reaper is killed along with the daemon, the next start finds the
// leftovers in the slots and kills them (KillLeftovers), logging each.

const (
	reaperArg = "boincd-task-reaper"
	reaperEnv = "BOINCD_TASK_REAPER"
)

func init() {
	// Any binary that links the runner (boincd, test binaries) doubles
	// as its reaper; both the argument and the variable must be there.
	// The variable holds the daemon's pid (for the message: by the time
	// this runs, the daemon may be gone already).
	if len(os.Args) != 2 || os.Args[1] != reaperArg {
		return
	}
	if daemonPID, err := strconv.Atoi(os.Getenv(reaperEnv)); err == nil && daemonPID > 0 {
		// Terminal signals are for the daemon, which stops its tasks
		// itself; the reaper ends when the daemon does.
		signal.Ignore(syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGQUIT, syscall.SIGTSTP)
		os.Exit(runReaper(os.Stdin, os.Stderr, daemonPID))
	}
}

// runReaper reads registrations from in until it ends, then kills the
// groups still registered. daemonPID is only for the message.
func runReaper(in io.Reader, out io.Writer, daemonPID int) int {
	groups := map[int]string{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 2 {
			continue
		}
		id, what, _ := strings.Cut(line[1:], " ")
		pgid, err := strconv.Atoi(id)
		if err != nil || pgid <= 1 {
			continue
		}
		switch line[0] {
		case '+':
			groups[pgid] = what
		case '-':
			delete(groups, pgid)
		}
	}
	for pgid, what := range groups {
		if killGroup(pgid) {
			fmt.Fprintf(out, "boincd task reaper: boincd (pid %d) is gone; killed process group %d (%s)\n", daemonPID, pgid, what)
		}
	}
	return 0
}

// killGroup SIGKILLs process group pgid and reports whether it had
// members. It kills again a few times over 100 ms, for a member that was
// forking; that is safe, as a group's id cannot be reused while it has a
// member (a zombie not yet reaped included).
func killGroup(pgid int) bool {
	if err := unix.Kill(-pgid, unix.SIGKILL); err != nil {
		return false
	}
	for i := 0; i < 5; i++ {
		time.Sleep(20 * time.Millisecond)
		if unix.Kill(-pgid, unix.SIGKILL) != nil {
			break
		}
	}
	return true
}

// reaper is the daemon's side of the task reaper.
type reaper struct {
	log *slog.Logger

	mu       sync.Mutex
	cmd      *exec.Cmd
	w        *os.File
	exited   chan struct{}  // closed when cmd has been reaped
	groups   map[int]string // registered groups, sent again to a new reaper
	stopped  bool
	failures int // starts that failed or reapers that died
}

func newReaper(log *slog.Logger) *reaper {
	return &reaper{log: log, groups: map[int]string{}}
}

// reaperExe is the binary to run as the reaper: on Linux the running one
// itself, even if a package upgrade replaced the file since.
func reaperExe() (string, error) {
	if runtime.GOOS == "linux" {
		return "/proc/self/exe", nil
	}
	return os.Executable()
}

// start runs a new reaper and registers the known groups with it; mu held.
func (p *reaper) start() error {
	exe, err := reaperExe()
	if err != nil {
		return err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, reaperArg)
	cmd.Args[0] = "boincd-task-reaper"
	cmd.Env = []string{reaperEnv + "=" + strconv.Itoa(os.Getpid())}
	cmd.Stdin = pr
	cmd.Stderr = os.Stderr
	cmd.Dir = "/"
	// Its own group: a terminal's Ctrl-C, or a signal to the daemon's
	// group, must not end it before the daemon.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return err
	}
	exited := make(chan struct{})
	p.cmd, p.w, p.exited = cmd, pw, exited
	go p.watchExit(cmd, pw, exited)
	for pgid, what := range p.groups {
		if err := p.writeLocked(fmt.Sprintf("+%d %s\n", pgid, what)); err != nil {
			return err
		}
	}
	return nil
}

// watchExit reaps a reaper, closes its pipe once it is gone and notices
// one that died while the daemon runs.
func (p *reaper) watchExit(cmd *exec.Cmd, w *os.File, exited chan struct{}) {
	err := cmd.Wait()
	w.Close()
	close(exited)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != cmd || p.stopped {
		return
	}
	p.cmd, p.w, p.exited = nil, nil, nil
	p.failures++
	p.log.Warn("the task reaper exited; it is started again with the next task change", "err", err, "tasks", len(p.groups))
}

// writeLocked sends a line, never blocking for long on a reaper that stopped
// reading; mu held.
func (p *reaper) writeLocked(line string) error {
	_ = p.w.SetWriteDeadline(time.Now().Add(time.Second))
	_, err := io.WriteString(p.w, line)
	return err
}

// send registers or unregisters a group, starting a reaper if none runs.
func (p *reaper) send(pgid int, line string, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.groups[pgid] = strings.Join(strings.Fields(line), " ")
	} else {
		delete(p.groups, pgid)
	}
	if p.stopped {
		return
	}
	if p.cmd == nil {
		if !add || p.failures >= maxReaperFailures {
			return
		}
		if err := p.start(); err != nil {
			p.failures++
			p.log.Warn("cannot start the task reaper: if boincd is killed, a task's child processes may run on until its next start",
				"err", err)
			p.dropLocked()
		}
		return // start sent every registered group
	}
	msg := fmt.Sprintf("-%d\n", pgid)
	if add {
		msg = fmt.Sprintf("+%d %s\n", pgid, p.groups[pgid])
	}
	if err := p.writeLocked(msg); err != nil {
		p.failures++
		p.log.Warn("the task reaper does not listen; restarting it", "err", err)
		p.dropLocked()
		if p.failures < maxReaperFailures {
			if err := p.start(); err != nil {
				p.failures++
				p.dropLocked()
			}
		}
	}
}

// maxReaperFailures stops restarting a reaper that keeps failing.
const maxReaperFailures = 10

// dropLocked abandons the current reaper: it is killed, and its pipe is
// closed only once it is gone (watchExit), since end of file would make it
// kill the tasks a new reaper is to guard; mu held.
func (p *reaper) dropLocked() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Kill()
	}
	p.cmd, p.w, p.exited = nil, nil, nil
}

func (p *reaper) watch(pgid, slot int, name string) {
	p.send(pgid, fmt.Sprintf("slot %d, task %s", slot, name), true)
}

func (p *reaper) unwatch(pgid int) { p.send(pgid, "", false) }

// stop ends the reaper after the runner's tasks have ended: the pipe
// closes and the reaper kills whatever is still registered (nothing, after
// a clean StopAll) and exits.
func (p *reaper) stop() {
	p.mu.Lock()
	p.stopped = true
	w, exited := p.w, p.exited
	p.cmd, p.w, p.exited = nil, nil, nil
	p.mu.Unlock()
	if w == nil {
		return
	}
	w.Close()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		p.log.Warn("the task reaper did not exit 5 s after the runner stopped")
	}
}
