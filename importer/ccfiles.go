package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/atomicfile"
)

// The C++ client's tuning files (cc_config.xml in the data directory,
// app_config.xml in each project's directory) are carried over as they
// are: boincd reads both where the C++ client does. A file boincd already
// has with other content is kept and the BOINC one left behind, so an
// import never overwrites what the volunteer wrote for boincd.

// planTuningFiles notes, per file, what carryTuningFiles will do.
func (im *importer) planTuningFiles() {
	im.tuning = nil
	add := func(from, to, what string) string {
		src, err := os.ReadFile(from)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Sprintf("%s not carried over: %v", what, err)
			}
			return ""
		}
		dst, err := os.ReadFile(to)
		switch {
		case err == nil && bytes.Equal(src, dst):
			return what + ": boincd already has the same file"
		case err == nil:
			return fmt.Sprintf("%s not carried over: %s exists with other content (kept)", what, to)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Sprintf("%s not carried over: %v", what, err)
		}
		im.tuning = append(im.tuning, tuningCopy{from: from, to: to, data: src})
		return what + " carried over"
	}
	if n := add(filepath.Join(im.src, daemon.CCConfigFile), filepath.Join(im.dst, daemon.CCConfigFile), daemon.CCConfigFile); n != "" {
		im.sum.Carried = append(im.sum.Carried, n)
	}
	for _, pp := range im.plans {
		if pp.srcDir == "" {
			continue
		}
		if n := add(filepath.Join(pp.srcDir, daemon.AppConfigFile), filepath.Join(pp.dstDir, daemon.AppConfigFile), daemon.AppConfigFile); n != "" {
			pp.sum.Carried = append(pp.sum.Carried, n)
		}
	}
}

type tuningCopy struct {
	from, to string
	data     []byte
}

// carryTuningFiles writes the planned copies, after the state commit (the
// project directories exist by then).
func (im *importer) carryTuningFiles() error {
	for _, c := range im.tuning {
		if err := os.MkdirAll(filepath.Dir(c.to), 0o755); err != nil {
			return fmt.Errorf("copy %s: %w", c.from, err)
		}
		if err := atomicfile.WriteFile(c.to, c.data, 0o644); err != nil {
			return fmt.Errorf("copy %s: %w", c.from, err)
		}
	}
	return nil
}
