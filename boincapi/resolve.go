package boincapi

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SoftLinkOpen and SoftLinkClose delimit the target in a soft-link file.
const (
	SoftLinkOpen  = "<soft_link>"
	SoftLinkClose = "</soft_link>"
)

// SoftLinkContent is the content of a soft-link file pointing at target
// (client/file_names.cpp make_soft_link).
func SoftLinkContent(target string) string {
	return SoftLinkOpen + target + SoftLinkClose + "\n"
}

// ResolveFilename maps a logical file name to the path to open, relative
// to the working directory, like boinc_resolve_filename: a soft-link file
// yields its target, anything else (a real file, a symlink, a missing file
// to be created) the name itself.
func ResolveFilename(logical string) (string, error) {
	return ResolveFilenameIn("", logical)
}

// ResolveFilenameIn is ResolveFilename for a slot directory other than the
// working directory. Paths it returns are relative to dir, as the link
// targets are.
func ResolveFilenameIn(dir, logical string) (string, error) {
	if logical == "" {
		return "", errors.New("resolve file name: empty name")
	}
	p := logical
	if dir != "" {
		p = filepath.Join(dir, logical)
	}
	st, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return logical, nil
	}
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", logical, err)
	}
	if !st.Mode().IsRegular() {
		return logical, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("resolve %q: %w", logical, err)
	}
	defer f.Close()
	// The link is on the first line; a data file's first line may be huge,
	// so read a bounded prefix only.
	line, err := bufio.NewReaderSize(f, 4096).ReadSlice('\n')
	if err != nil && len(line) == 0 {
		return logical, nil
	}
	s := string(line)
	if !strings.HasPrefix(s, SoftLinkOpen) {
		return logical, nil
	}
	end := strings.Index(s, SoftLinkClose)
	if end < 0 {
		return "", fmt.Errorf("resolve %q: soft-link file has no %s", logical, SoftLinkClose)
	}
	target := strings.TrimSpace(s[len(SoftLinkOpen):end])
	if target == "" {
		return "", fmt.Errorf("resolve %q: soft-link file has an empty target", logical)
	}
	return target, nil
}
