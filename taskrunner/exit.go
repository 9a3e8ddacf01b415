package taskrunner

import (
	"bufio"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/boincapi"
)

// Limits from client/app_control.cpp.
const (
	stderrMax            = 63 * 1024
	temporaryExitDefault = 300 * time.Second
	temporaryExitMax     = 86400
)

// exitSnapshot is the task state the exit handling needs, taken under the
// lock once the process is gone.
type exitSnapshot struct {
	quitReq, abortReq, killReq, finishKill bool
	cpu, ckptCPU, ckptElapsed, elapsed     float64
	fraction, peakWSS, peakDisk            float64
	limit                                  *limitExceeded
}

// wait owns the process: it waits for the exit, kills what is left of the
// process group, reaps, classifies, handles outputs and the slot, and
// reports the Event.
func (r *Runner) wait(t *task) {
	defer r.wg.Done()
	// Where the OS lets us see the exit without reaping (Linux), the
	// leader's pid still pins the group id, so killing leftovers (like a
	// `sleep &` of a shell app) cannot hit a reused group.
	markExited := func() {
		r.mu.Lock()
		t.exited = true
		if t.grace != nil {
			t.grace.Stop()
		}
		close(t.exitCh)
		r.mu.Unlock()
	}
	var waitErr error
	if waitExitNoReap(t.pid) {
		markExited()
		killGroupLeftovers(t.pid, t.job)
		r.reap.unwatch(t.pid) // before the reap frees the group id
		waitErr = t.cmd.Wait()
	} else {
		// Elsewhere the exit is only seen by reaping; signals sent in the
		// short window before markExited go to Process methods (safe on
		// Windows, where the handle pins the process) or to a group that
		// is gone.
		waitErr = t.cmd.Wait()
		markExited()
		killGroupLeftovers(t.pid, t.job)
		r.reap.unwatch(t.pid)
	}
	// Nothing signals the job any more: markExited made killTree a no-op.
	closeJob(t.job)
	ps := t.cmd.ProcessState

	r.mu.Lock()
	now := time.Now()
	elapsed := t.elapsed
	if !t.suspended && now.After(t.lastTick) {
		elapsed += now.Sub(t.lastTick).Seconds()
	}
	snap := exitSnapshot{
		quitReq: t.quitReq, abortReq: t.abortReq, killReq: t.killReq, finishKill: t.finishKill,
		cpu: t.cpu, ckptCPU: t.ckptCPU, ckptElapsed: t.ckptElapsed, elapsed: elapsed,
		fraction: t.fraction, peakWSS: t.peakWSS, peakDisk: t.peakDisk, limit: t.limit,
	}
	if t.shm != nil {
		// A last app_status may carry the final CPU time and checkpoint.
		if msg, ok, err := t.shm.Receive(boincapi.AppStatus); err == nil && ok {
			s := boincapi.ParseAppStatus(msg)
			snap.cpu = max(snap.cpu, s.CurrentCPUTime)
			if s.CheckpointCPUTime != snap.ckptCPU {
				snap.ckptCPU, snap.ckptElapsed = s.CheckpointCPUTime, elapsed
			}
			if s.FractionDone > 0 {
				snap.fraction = min(s.FractionDone, 1)
			}
		}
		t.shm.Close()
		t.shm = nil
	}
	r.mu.Unlock()

	info := r.classify(t, ps, waitErr, snap)
	info.Stderr = readStderrTail(filepath.Join(t.dir, stderrFileName))
	if info.Outcome == Success {
		r.collectOutputs(t, &info)
	}
	// The C++ client cleans the slot out the same way and carries on
	// whatever the result (ACTIVE_TASK::handle_exited_app): a slot that
	// cannot be cleared does not change what the task computed. The
	// daemon hears of it in the event and logs it once per slot.
	var slotErr error
	switch info.Outcome {
	case Success, Error, Aborted:
		if err := r.cfg.RemoveAll(t.dir); err != nil {
			slotErr = fmt.Errorf("clean slot %s: %w", t.dir, err)
		}
	}
	// The caller logs what the exit means for the task, with its project.
	// process_exit_code is the process's own (-1 when a signal ended it);
	// exit_status is what the task is reported with.
	code := -1
	if ps != nil {
		code = ps.ExitCode()
	}
	r.log.Debug("task process exited", "result", t.name, "slot", t.slot, "outcome", info.Outcome.String(),
		"exit_status", info.ExitStatus, "process_exit_code", code, "signal", info.Signal, "cpu", info.CPUTime, "message", info.Message)

	r.mu.Lock()
	delete(r.tasks, t.key)
	if r.busy[t.slot] == t.key {
		delete(r.busy, t.slot)
	}
	r.mu.Unlock()
	r.send(Event{ResultKey: t.key, Slot: t.slot, Exit: info, SlotErr: slotErr})
}

// classify maps the exit to an Outcome (PROTOCOLS §6.5).
func (r *Runner) classify(t *task, ps *os.ProcessState, waitErr error, s exitSnapshot) ExitInfo {
	info := ExitInfo{
		CPUTime:               s.cpu,
		ElapsedTime:           s.elapsed,
		CheckpointCPUTime:     s.ckptCPU,
		CheckpointElapsedTime: s.ckptElapsed,
		FractionDone:          s.fraction,
		PeakWorkingSet:        s.peakWSS,
		PeakDiskUsage:         s.peakDisk,
	}
	if ps == nil {
		info.Outcome = Error
		info.ExitStatus = boinc.ExitUnknown
		info.Message = fmt.Sprintf("cannot wait for process %d: %v", t.pid, waitErr)
		return info
	}
	if !t.container {
		info.CPUTime = max(info.CPUTime, t.startCPU+(ps.UserTime()+ps.SystemTime()).Seconds())
	}
	info.ExitStatus = ps.ExitCode()
	sig, signaled := exitSignal(ps)
	if signaled {
		info.Signal = sig
		info.ExitStatus = 0
	}
	finish, hasFinish := readSmallFile(filepath.Join(t.dir, boincapi.FinishFileName))
	temp, hasTemp := readSmallFile(filepath.Join(t.dir, boincapi.TemporaryExitFileName))

	switch {
	case s.abortReq || s.killReq:
		info.Outcome = Aborted
		info.Message = "aborted by client"
	case s.limit != nil:
		// abort_task(EXIT_*_LIMIT_EXCEEDED): a compute error whatever the
		// process did when it was killed.
		info.Outcome = Error
		info.ExitStatus = s.limit.status
		info.Message = s.limit.msg
	case s.quitReq:
		info.Outcome = Restart
		info.Message = "quit by client"
	case s.finishKill || (!signaled && hasFinish && info.ExitStatus == 0):
		info.Outcome = Success
		info.Message = finishMessage(finish)
	case hasTemp && !hasFinish:
		info.Outcome = TemporaryExit
		info.Delay, info.Message = parseTemporaryExit(temp)
	case signaled && restartSignal(sig):
		info.Outcome = Restart
		info.Message = fmt.Sprintf("process got signal %d", sig)
	case signaled:
		info.Outcome = Error
		info.Message = fmt.Sprintf("process got signal %d", sig)
		info.ExitStatus = sig // as the C++ client reports it
	case info.ExitStatus != 0:
		info.Outcome = Error
		info.Message = fmt.Sprintf("process exited with code %d (0x%x, %d)", info.ExitStatus, uint32(info.ExitStatus), int8(info.ExitStatus))
		if m := finishMessage(finish); m != "" {
			info.Message += ": " + m
		}
	default:
		// Exit 0 without finish file: premature exit, restart. The daemon
		// counts these (ERR_TOO_MANY_EXITS after 100 without checkpoint).
		info.Outcome = Restart
		info.Message = "process exited with code 0 without calling boinc_finish()"
	}
	return info
}

// restartSignal lists the signals after which the C++ client restarts the
// task instead of failing it.
func restartSignal(sig int) bool {
	switch syscall.Signal(sig) {
	case syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGKILL, syscall.SIGTERM, sigStop:
		return true
	}
	return false
}

// finishMessage is line 2 of boinc_finish_called.
func finishMessage(content string) string {
	lines := strings.SplitN(content, "\n", 3)
	if len(lines) < 2 {
		return ""
	}
	return strings.TrimSpace(lines[1])
}

// parseTemporaryExit reads `delay\nreason\n`; a delay outside 0–86400 s
// becomes 300 s.
func parseTemporaryExit(content string) (time.Duration, string) {
	lines := strings.SplitN(content, "\n", 3)
	delay := temporaryExitDefault
	if d, err := strconv.ParseFloat(strings.TrimSpace(lines[0]), 64); err == nil && d >= 0 && d <= temporaryExitMax {
		delay = time.Duration(d * float64(time.Second))
	}
	reason := ""
	if len(lines) > 1 {
		reason = strings.TrimSpace(lines[1])
	}
	if reason == "" {
		reason = "temporary exit"
	}
	return delay, reason
}

// readSmallFile reads up to 4 KB of a file the app wrote.
func readSmallFile(path string) (string, bool) {
	f, err := openRegular(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	return string(b), true
}

// readStderrTail returns the last 63 KB of stderr.txt.
func readStderrTail(path string) string {
	f, err := openRegular(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	if st.Size() > stderrMax {
		if _, err := f.Seek(st.Size()-stderrMax, io.SeekStart); err != nil {
			return ""
		}
	}
	b, _ := io.ReadAll(io.LimitReader(f, stderrMax))
	return string(b)
}

// collectOutputs moves outputs into the project directory and checks
// them; a missing or oversized output turns the Success into an Error.
func (r *Runner) collectOutputs(t *task, info *ExitInfo) {
	for _, o := range t.outputs {
		dst := filepath.Join(t.projDir, o.ref.FileName)
		src := filepath.Join(t.dir, filepath.FromSlash(o.slotName))
		moved, err := r.moveOutput(t, o, src, dst)
		if err != nil {
			r.failOutput(info, boinc.ErrFileMissing, fmt.Sprintf("output file %s for task %s: %v", o.ref.FileName, t.name, err))
			return
		}
		st, err := os.Stat(dst)
		if errors.Is(err, fs.ErrNotExist) {
			if o.ref.Optional {
				continue
			}
			r.failOutput(info, boinc.ErrFileMissing, fmt.Sprintf("output file %s for task %s absent", o.ref.FileName, t.name))
			return
		}
		if err != nil {
			r.failOutput(info, boinc.ErrFileMissing, fmt.Sprintf("output file %s for task %s: %v", o.ref.FileName, t.name, err))
			return
		}
		if o.maxBytes > 0 && float64(st.Size()) > o.maxBytes {
			r.failOutput(info, boinc.ErrFileTooBig, fmt.Sprintf("output file %s for task %s exceeds size limit: %d bytes > %.0f", o.ref.FileName, t.name, st.Size(), o.maxBytes))
			return
		}
		sum, n, err := md5File(dst)
		if err != nil {
			r.failOutput(info, boinc.ErrFileMissing, fmt.Sprintf("output file %s for task %s: %v", o.ref.FileName, t.name, err))
			return
		}
		r.log.Debug("output collected", "result", t.name, "file", o.ref.FileName, "moved", moved, "bytes", n)
		info.Outputs = append(info.Outputs, OutputFile{Name: o.ref.FileName, Path: dst, NBytes: n, MD5: sum})
	}
}

func (r *Runner) failOutput(info *ExitInfo, code int, msg string) {
	info.Outcome = Error
	info.ExitStatus = code
	info.Message = msg
	info.Outputs = nil
}

// moveOutput brings an output from the slot into the project directory
// when it is there: copy_file outputs always, and soft-linked outputs a
// plain program overwrote in place (it did not resolve the link). It
// reports whether it moved anything.
func (r *Runner) moveOutput(t *task, o outputSpec, src, dst string) (bool, error) {
	st, err := os.Lstat(src)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() {
		return false, nil // a real symlink or directory: leave it
	}
	if !o.copy {
		link := t.links[o.slotName]
		if st.Size() == int64(len(link)) {
			b, err := readAllRegular(src)
			if err != nil {
				return false, err
			}
			if string(b) == link {
				return false, nil // still our link: the app wrote through it
			}
		}
	}
	if t.acct != nil {
		// The app's own file is copied into one the daemon owns, through
		// a descriptor checked to be a plain file with one link: renaming
		// would leave the app owning (and able to change) its reported
		// output, or carry a hard link to a file it could not read.
		if err := copyFile(src, dst); err != nil {
			return false, fmt.Errorf("move %s to %s: %w", src, dst, err)
		}
		if err := os.Remove(src); err != nil {
			return false, fmt.Errorf("move %s to %s: %w", src, dst, err)
		}
		return true, nil
	}
	if err := moveFile(src, dst); err != nil {
		return false, err
	}
	return true, nil
}

func readAllRegular(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

func md5File(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := md5.New()
	n, err := io.Copy(h, bufio.NewReaderSize(f, 64*1024))
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
