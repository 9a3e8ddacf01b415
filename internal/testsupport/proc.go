package testsupport

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Proc is a process as Linux's /proc shows it, by pid. Tests use it to
// find the processes they started (or must not have left behind) by
// name, command line, working directory, group or owner. Where there is
// no /proc (other systems) Processes yields nothing and every reading
// fails as for a process that is gone.
type Proc int

// Processes yields every process /proc lists, in no particular order.
// One that ends while the caller looks at it reads as gone.
func Processes() iter.Seq[Proc] {
	return func(yield func(Proc) bool) {
		ents, err := os.ReadDir("/proc")
		if err != nil {
			return
		}
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			if !yield(Proc(pid)) {
				return
			}
		}
	}
}

func (p Proc) file(name string) string {
	return filepath.Join("/proc", strconv.Itoa(int(p)), name)
}

// Comm is the command name (at most 15 bytes), "" once the process is
// gone.
func (p Proc) Comm() string {
	b, _ := os.ReadFile(p.file("comm"))
	return strings.TrimSuffix(string(b), "\n")
}

// Cmdline is the argument vector, nil once the process is gone (or for a
// kernel thread).
func (p Proc) Cmdline() []string {
	b, err := os.ReadFile(p.file("cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(string(bytes.TrimSuffix(b, []byte{0})), "\x00")
}

// Env is the value of one variable in the environment the process
// started with, and whether it was set (reading another user's needs
// root).
func (p Proc) Env(name string) (string, bool) {
	b, err := os.ReadFile(p.file("environ"))
	if err != nil {
		return "", false
	}
	for kv := range bytes.SplitSeq(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(name+"=")); ok {
			return string(v), true
		}
	}
	return "", false
}

// Cwd is the working directory, "" when it cannot be read; a directory
// removed since reads as the path it had.
func (p Proc) Cwd() string {
	cwd, err := os.Readlink(p.file("cwd"))
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(cwd, " (deleted)")
}

// ClockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100
// on every Linux a test runs on (sysconf(_SC_CLK_TCK) would need cgo).
const ClockTicks = 100

// ProcStat is what tests need from /proc/PID/stat.
type ProcStat struct {
	State byte    // R, S, D, T, Z, ...
	PPID  int     // the parent
	PGRP  int     // the process group
	CPU   float64 // user + system CPU seconds so far
}

// Stat reads /proc/PID/stat; ok is false once the process is gone.
func (p Proc) Stat() (st ProcStat, ok bool, err error) {
	b, err := os.ReadFile(p.file("stat"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return ProcStat{}, false, nil
	}
	if err != nil {
		return ProcStat{}, false, fmt.Errorf("read /proc/%d/stat: %w", p, err)
	}
	// The command name is in parentheses and may hold anything, ')'
	// included; the fields after the last ')' are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcStat{}, false, fmt.Errorf("/proc/%d/stat: no ')' in %q", p, b)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state), then ppid and pgrp; utime and stime are
	// fields 14 and 15.
	if len(f) < 13 {
		return ProcStat{}, false, fmt.Errorf("/proc/%d/stat: %d fields after the name", p, len(f))
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	ut, err3 := strconv.ParseUint(f[11], 10, 64)
	sy, err4 := strconv.ParseUint(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return ProcStat{}, false, fmt.Errorf("/proc/%d/stat: %w", p, err)
	}
	return ProcStat{State: f[0][0], PPID: ppid, PGRP: pgrp, CPU: float64(ut+sy) / ClockTicks}, true, nil
}

// Alive says whether the process exists and is not a zombie.
func (p Proc) Alive() bool {
	st, ok, err := p.Stat()
	return err == nil && ok && st.State != 'Z' && st.State != 'X'
}

// Under says whether dir is root or inside it.
func Under(dir, root string) bool {
	return dir != "" && (dir == root || strings.HasPrefix(dir, root+string(filepath.Separator)))
}
