package winsvc

import (
	"fmt"
	"strings"
)

// DirName is boincd's directory under ProgramData.
const DirName = "boincd"

// ConfigFileName is the config file inside the data directory (the same
// name as config.FileName; winsvc does not import the daemon's packages).
const ConfigFileName = "boincd.toml"

// Layout is where the service keeps its files: the same layout as a Linux
// data directory, rooted in ProgramData (C:\ProgramData\boincd holding
// boincd.toml, boincd.db, projects\ and slots\). Paths are Windows paths
// whatever the build platform, so they can be computed and tested
// anywhere.
type Layout struct {
	ProgramData string // e.g. C:\ProgramData
	Dir         string // e.g. C:\ProgramData\boincd
	ConfigPath  string // e.g. C:\ProgramData\boincd\boincd.toml
}

// DefaultProgramData is used when the environment names no usable
// ProgramData (a stripped service environment, or a relative value).
const DefaultProgramData = `C:\ProgramData`

// NewLayout finds ProgramData the way Windows programs do: %ProgramData%,
// then %ALLUSERSPROFILE% (the same folder since Vista), then
// %SystemDrive%\ProgramData, then C:\ProgramData. Only absolute values
// count: a relative one would put the service's data wherever its
// working directory (System32) happens to be.
func NewLayout(getenv func(string) string) Layout {
	root := DefaultProgramData
	for _, cand := range []string{
		getenv("ProgramData"),
		getenv("ALLUSERSPROFILE"),
		driveProgramData(getenv("SystemDrive")),
	} {
		if cand = strings.TrimSpace(cand); IsAbsWindowsPath(cand) {
			root = cand
			break
		}
	}
	root = trimTrailingSeparators(root)
	dir := JoinWindows(root, DirName)
	return Layout{ProgramData: root, Dir: dir, ConfigPath: JoinWindows(dir, ConfigFileName)}
}

func driveProgramData(drive string) string {
	drive = strings.TrimSpace(drive)
	if len(drive) != 2 || drive[1] != ':' || !isLetter(drive[0]) {
		return ""
	}
	return drive + `\ProgramData`
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// IsAbsWindowsPath reports whether p is a fully qualified Windows path: a
// drive letter followed by a separator (C:\x) or a UNC path (\\server\share).
// "C:x" (relative to the drive's current directory) and "\x" (relative to
// the current drive) are not.
func IsAbsWindowsPath(p string) bool {
	if len(p) >= 3 && isLetter(p[0]) && p[1] == ':' && isSep(p[2]) {
		return true
	}
	return len(p) >= 3 && isSep(p[0]) && isSep(p[1]) && !isSep(p[2])
}

func isSep(c byte) bool { return c == '\\' || c == '/' }

// trimTrailingSeparators keeps a drive root's separator (C:\).
func trimTrailingSeparators(p string) string {
	for len(p) > 3 && isSep(p[len(p)-1]) {
		p = p[:len(p)-1]
	}
	return p
}

// JoinWindows joins path elements with backslashes, whatever the build
// platform's separator.
func JoinWindows(elem ...string) string {
	var b strings.Builder
	for _, e := range elem {
		if e == "" {
			continue
		}
		if b.Len() > 0 && !isSep(b.String()[b.Len()-1]) {
			b.WriteByte('\\')
		}
		if b.Len() > 0 {
			e = strings.TrimLeft(e, `\/`)
		}
		b.WriteString(e)
	}
	return b.String()
}

// RunArgs are the arguments the SCM passes to boincd.exe: "service run"
// and the data directory, plus the config file when it is not the
// directory's default.
func RunArgs(dir, configPath string) []string {
	args := []string{"service", "run", "--dir", dir}
	if configPath != "" {
		args = append(args, "--config", configPath)
	}
	return args
}

// EscapeArg quotes one argument for a Windows command line so that
// CommandLineToArgvW (and Go's os.Args on Windows) gives it back
// unchanged: syscall.EscapeArg's rules, available on every platform.
// Backslashes are literal except before a double quote, where they are
// doubled; a double quote becomes \"; an argument with a space or tab, or
// an empty one, is wrapped in double quotes, with its trailing
// backslashes doubled so they do not escape the closing quote
// ("C:\Program Files\" must become "C:\Program Files\\").
func EscapeArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, "\"\\ \t") {
		return s
	}
	quote := strings.ContainsAny(s, " \t")
	var b strings.Builder
	if quote {
		b.WriteByte('"')
	}
	slashes := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\':
			slashes++
		case '"':
			b.WriteString(strings.Repeat(`\`, slashes+1))
			slashes = 0
		default:
			slashes = 0
		}
		b.WriteByte(c)
	}
	if quote {
		b.WriteString(strings.Repeat(`\`, slashes))
		b.WriteByte('"')
	}
	return b.String()
}

// CommandLine is the service's ImagePath as the SCM stores it: exe then
// args, each escaped the way golang.org/x/sys/windows/svc/mgr.CreateService
// does (EscapeArg on the program name too). The program name cannot
// contain a double quote: Windows file names cannot, and
// CommandLineToArgvW has no escape for one there.
func CommandLine(exe string, args []string) (string, error) {
	if exe == "" {
		return "", fmt.Errorf("service command line: empty program path")
	}
	if strings.ContainsRune(exe, '"') {
		return "", fmt.Errorf("service command line: program path %q contains a double quote", exe)
	}
	for i, a := range args {
		if strings.ContainsRune(a, 0) {
			return "", fmt.Errorf("service command line: argument %d contains a NUL byte", i+1)
		}
	}
	parts := make([]string, 0, 1+len(args))
	parts = append(parts, EscapeArg(exe))
	for _, a := range args {
		parts = append(parts, EscapeArg(a))
	}
	return strings.Join(parts, " "), nil
}

// SplitCommandLine parses a Windows command line the way
// CommandLineToArgvW does for arguments after the program name (the
// msvcrt rules since 2008): 2n backslashes before a quote are n
// backslashes and the quote toggles quoting; 2n+1 are n and a literal
// quote; "" inside quotes is a literal quote. The program name (first
// field) is taken up to the next space, or between quotes, with no
// escapes, as CommandLineToArgvW does. It is how the tests prove
// CommandLine round-trips, and how "boincd service install" shows what
// the SCM will pass.
func SplitCommandLine(cmd string) []string {
	var args []string
	i := 0
	// Program name.
	if cmd == "" {
		return nil
	}
	if cmd[0] == '"' {
		end := strings.IndexByte(cmd[1:], '"')
		if end < 0 {
			return []string{cmd[1:]}
		}
		args = append(args, cmd[1:1+end])
		i = 2 + end
	} else {
		end := strings.IndexAny(cmd, " \t")
		if end < 0 {
			return []string{cmd}
		}
		args = append(args, cmd[:end])
		i = end
	}
	for {
		for i < len(cmd) && (cmd[i] == ' ' || cmd[i] == '\t') {
			i++
		}
		if i >= len(cmd) {
			return args
		}
		var b strings.Builder
		inQuote := false
		for i < len(cmd) {
			c := cmd[i]
			if !inQuote && (c == ' ' || c == '\t') {
				break
			}
			switch c {
			case '\\':
				n := 0
				for i < len(cmd) && cmd[i] == '\\' {
					n++
					i++
				}
				if i < len(cmd) && cmd[i] == '"' {
					b.WriteString(strings.Repeat(`\`, n/2))
					if n%2 == 1 {
						b.WriteByte('"')
						i++
					}
				} else {
					b.WriteString(strings.Repeat(`\`, n))
				}
				continue
			case '"':
				if inQuote && i+1 < len(cmd) && cmd[i+1] == '"' {
					b.WriteByte('"')
					i += 2
					continue
				}
				inQuote = !inQuote
				i++
				continue
			}
			b.WriteByte(c)
			i++
		}
		args = append(args, b.String())
	}
}
