package boinc

import (
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// CanonicalMasterURL normalises a project URL the way the C++ client does
// (lib/url.cpp canonicalize_master_url): keep the scheme, collapse "//" in
// the path, force a trailing "/" and lower-case the host. Two spellings of
// the same project therefore map to one key in state and on disk.
func CanonicalMasterURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", fmt.Errorf("project URL is empty")
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("project URL %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("project URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return "", fmt.Errorf("project URL %q: no host", raw)
	}
	path := u.EscapedPath()
	for strings.Contains(path, "//") {
		path = strings.ReplaceAll(path, "//", "/")
	}
	if !strings.HasSuffix(path, "/") {
		path += "/"
	}
	out := u.Scheme + "://" + strings.ToLower(u.Host) + path
	// Trailing blanks would be trimmed off the result when it is read
	// again, so they are not part of the canonical form.
	if q := strings.TrimRightFunc(u.RawQuery, unicode.IsSpace); q != "" {
		out += "?" + q
	}
	return out, nil
}

// EscapeProjectURL turns a master URL into the directory and file-name
// component the C++ client uses (lib/url.cpp escape_url_readable): drop the
// scheme, replace everything outside [A-Za-z0-9._-] by '_', drop one
// trailing '_'. The result never contains a path separator or "..".
func EscapeProjectURL(masterURL string) string {
	s := masterURL
	if i := strings.Index(s, "://"); i >= 0 {
		s = s[i+3:]
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			b[i] = '_'
		}
	}
	s = strings.TrimSuffix(string(b), "_")
	// A URL made only of dots would escape to "." or "..": never a usable
	// directory name, so make it inert.
	if strings.Trim(s, ".") == "" {
		s = strings.Repeat("_", len(s)+1)
	}
	return s
}

// ValidateFileName checks a file name that came from a project server. It
// must stay inside the project directory: no absolute path, no "..", no
// NUL or other control byte, no backslash, no '%' (as the C++ client). A
// '/' is allowed only in open names (slot subdirectories), never in
// physical names.
func ValidateFileName(name string, allowSubdir bool) error {
	if name == "" {
		return fmt.Errorf("empty file name")
	}
	if len(name) > 255*4 {
		return fmt.Errorf("file name too long (%d bytes)", len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("file name %q contains control byte 0x%02x", name, c)
		}
		if c == '\\' || c == '%' {
			return fmt.Errorf("file name %q contains %q", name, c)
		}
	}
	if strings.HasPrefix(name, "/") {
		return fmt.Errorf("file name %q is an absolute path", name)
	}
	if !allowSubdir && strings.Contains(name, "/") {
		return fmt.Errorf("file name %q contains a path separator", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("file name %q has an empty, '.' or '..' component", name)
		}
		// Longer components cannot be created on common filesystems; a
		// reply naming one is refused rather than retried for 90 days.
		if len(part) > 255 {
			return fmt.Errorf("file name %q has a component of %d bytes (at most 255)", name[:64]+"…", len(part))
		}
	}
	return nil
}
