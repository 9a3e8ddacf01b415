//go:build linux

// Package clientproc holds what the benchmarks that run boincd and the
// C++ BOINC client side by side (bench/bigqueue, bench/footprint,
// bench/startup) do to the client processes: build boincd, find a free
// GUI RPC port and wait for it, run a client as an unprivileged account
// (setpriv, or the credential of the process) on a data directory that
// account owns, and read the client's CPU ticks and RSS from /proc.
package clientproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/taskrunner"
)

// TempDir makes a temporary directory that other accounts may enter (a
// client run as one has its data directory below it).
func TempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("temp dir: %w", err)
	}
	return dir, nil
}

// BuildBoincd builds ./cmd/boincd of the current directory's checkout
// into bin, the compiler's output going to stderr.
func BuildBoincd(ctx context.Context, bin string) error {
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/boincd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("building boincd: %w", err)
	}
	return nil
}

// FreePort is a TCP port on 127.0.0.1 that nothing listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitPort waits up to timeout until 127.0.0.1:port accepts connections.
func WaitPort(ctx context.Context, port int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("port %d not answering after %s: %w", port, timeout, err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Account is the unprivileged account the clients run as, as the
// packages run them: resolved as the daemon resolves app_user.
type Account struct{ taskrunner.AppAccount }

// RunAs is the account name when this process runs as root and name is
// not empty, and nil otherwise (the clients run as this process).
func RunAs(name string) (*Account, error) {
	if os.Geteuid() != 0 || name == "" {
		return nil, nil
	}
	a, err := taskrunner.LookupAccount(name)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", name, err)
	}
	return &Account{*a}, nil
}

// Setpriv is argv run as the account through setpriv (with its groups).
func (a *Account) Setpriv(argv []string) []string {
	return append([]string{"setpriv", "--reuid=" + strconv.FormatUint(uint64(a.UID), 10), "--regid=" + strconv.FormatUint(uint64(a.GID), 10), "--init-groups", "--"}, argv...)
}

// Credential is the account's credential for exec.Cmd's SysProcAttr.
func (a *Account) Credential() *syscall.Credential {
	return &syscall.Credential{Uid: a.UID, Gid: a.GID, Groups: a.Groups}
}

// Own gives the account dir and everything below it.
func (a *Account) Own(dir string) error {
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(a.UID), int(a.GID))
	})
}

// CPUTicks is utime+stime of /proc/PID/stat, in clock ticks (1/100 s).
func CPUTicks(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu ticks: %w", err)
	}
	// The command name may hold spaces: fields count from its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu ticks: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu ticks: malformed /proc/%d/stat", pid)
	}
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("cpu ticks: %w", err)
	}
	return ut + st, nil
}

// RSS is a process's resident memory, in kB, from /proc/PID/status.
type RSS struct {
	Total int64 // VmRSS
	Anon  int64 // RssAnon
	File  int64 // RssFile
}

// ReadRSS reads the RSS of pid.
func ReadRSS(pid int) (RSS, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return RSS{}, fmt.Errorf("rss: %w", err)
	}
	defer f.Close()
	var r RSS
	total := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmRSS":
			r.Total, total = n, true
		case "RssAnon":
			r.Anon = n
		case "RssFile":
			r.File = n
		}
	}
	if err := sc.Err(); err != nil {
		return RSS{}, fmt.Errorf("rss: %w", err)
	}
	if !total {
		return RSS{}, fmt.Errorf("rss: no VmRSS in /proc/%d/status", pid)
	}
	return r, nil
}
