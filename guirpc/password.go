package guirpc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/boincd/boincd/internal/atomicfile"
)

// PasswordFile is the GUI RPC password file in the data directory.
const PasswordFile = "gui_rpc_auth.cfg"

// LoadOrCreatePassword returns the GUI RPC password: the first line of
// dataDir/gui_rpc_auth.cfg with surrounding whitespace removed. When the
// file is missing it is created, mode 0600, holding a random
// 32-hex-digit password, as the C++ client does. When its first line is
// empty the file is replaced by one holding a fresh random password (the
// C++ client would run with no password then, letting any local program
// control it; issue 14). An existing file that others may read is
// narrowed to 0600. OpenPassword logs both.
func LoadOrCreatePassword(dataDir string) (string, error) {
	return OpenPassword(dataDir, nil)
}

// OpenPassword is LoadOrCreatePassword logging to logger (nil: nowhere)
// when it narrows the file's permissions, or cannot, and when it replaces
// an empty file (the path is logged, never the password).
func OpenPassword(dataDir string, logger *slog.Logger) (string, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	path := filepath.Join(dataDir, PasswordFile)
	f, err := os.Open(path)
	if err == nil {
		defer f.Close()
		narrowMode(f, path, logger)
		data, err := io.ReadAll(io.LimitReader(f, 64<<10))
		if err != nil {
			return "", fmt.Errorf("read GUI RPC password %s: %w", path, err)
		}
		line, _, _ := bytes.Cut(data, []byte("\n"))
		if pw := strings.TrimSpace(string(line)); pw != "" {
			return pw, nil
		}
		f.Close()
		pw, err := newPassword()
		if err != nil {
			return "", err
		}
		if err := replaceFile(path, []byte(pw+"\n")); err != nil {
			return "", fmt.Errorf("GUI RPC password file %s is empty and cannot be replaced: %w", path, err)
		}
		logger.Warn("GUI RPC password file was empty (no password: any local program could control boincd): wrote a new random password to it; GUIs read it from there",
			slog.String("file", path))
		return pw, nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read GUI RPC password %s: %w", path, err)
	}
	pw, err := newPassword()
	if err != nil {
		return "", err
	}
	f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		// Another process created it between our read and create: use
		// theirs so both agree.
		return OpenPassword(dataDir, logger)
	}
	if err != nil {
		return "", fmt.Errorf("create GUI RPC password %s: %w", path, err)
	}
	w := bufio.NewWriter(f)
	_, err = w.WriteString(pw + "\n")
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return "", fmt.Errorf("write GUI RPC password %s: %w", path, err)
	}
	return pw, nil
}

// newPassword is a random 32-hex-digit password, as the C++ client makes.
func newPassword() (string, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("generate GUI RPC password: %w", err)
	}
	return hex.EncodeToString(raw[:]), nil
}

// replaceFile puts data at path (mode 0600) in one step, following a
// link at path (atomicfile.WriteFile). In a directory we may not create
// files in, the file is rewritten in place instead.
func replaceFile(path string, data []byte) error {
	err := atomicfile.WriteFile(path, data, 0o600)
	if errors.Is(err, fs.ErrPermission) {
		return os.WriteFile(path, data, 0o600)
	}
	return err
}

// narrowMode makes the open password file 0600 when group or others
// have any access: whoever reads it controls the client. Windows has no
// such mode bits; its ACLs come from the data directory.
func narrowMode(f *os.File, path string, logger *slog.Logger) {
	st, err := f.Stat()
	if err != nil || runtime.GOOS == "windows" {
		return
	}
	mode := st.Mode().Perm()
	if mode&0o077 == 0 {
		return
	}
	if err := f.Chmod(0o600); err != nil {
		logger.Warn("GUI RPC password file is readable by others and its mode cannot be narrowed: chmod 600 it",
			slog.String("file", path), slog.String("mode", fmt.Sprintf("%04o", mode)), slog.Any("err", err))
		return
	}
	logger.Warn("GUI RPC password file was readable by others: mode narrowed to 0600",
		slog.String("file", path), slog.String("was", fmt.Sprintf("%04o", mode)))
}

// RemoteHostsFile lists the hosts allowed to connect, like the C++
// client's remote_hosts.cfg.
const RemoteHostsFile = "remote_hosts.cfg"

// LoadRemoteHosts reads dataDir/remote_hosts.cfg: one host name or IP per
// line; blank lines and lines starting with '#' or ';' are ignored. A
// missing file means no extra hosts.
func LoadRemoteHosts(dataDir string) ([]string, error) {
	path := filepath.Join(dataDir, RemoteHostsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read remote hosts %s: %w", path, err)
	}
	var hosts []string
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		hosts = append(hosts, line)
	}
	return hosts, nil
}
