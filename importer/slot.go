package importer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Slot files that belong to the client process that ran the task, not to
// the task: the task runner writes fresh ones (init_data.xml, the shared
// memory file) or they would misreport the restarted run (the finish and
// temporary-exit files). The setup marker is left out so the runner
// writes the link files again for boincd's paths.
var slotSkip = map[string]bool{
	"init_data.xml":          true,
	"boinc_mmap_file":        true,
	"boinc_lockfile":         true,
	"boinc_finish_called":    true,
	"boinc_temporary_exit":   true,
	"boinc_setup_complete":   true,
	"boinc_graphics_lib_dir": true,
}

// slotResultName reads <result_name> from the slot's init_data.xml, so a
// slot reused for another task since is not mistaken for this one's. ""
// means the slot has no init_data.xml.
func slotResultName(dir string) (string, error) {
	path := filepath.Join(dir, "init_data.xml")
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", errors.New("init_data.xml is not a regular file")
	}
	root, err := readXMLFile(path, maxAccountFileBytes)
	if err != nil {
		return "", err
	}
	for _, c := range root.kids {
		if c.name == "result_name" {
			return strings.TrimSpace(c.text), nil
		}
	}
	return "", nil
}

// copySlot copies a BOINC slot's regular files and directories into dst.
// Symbolic links and special files are not copied: a link could point
// anywhere, and the task runner recreates the links the task needs.
func copySlot(ctx context.Context, src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if rel == "." {
			return os.MkdirAll(to, 0o771)
		}
		if !strings.Contains(rel, string(filepath.Separator)) && slotSkip[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o771)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			if _, _, err := copyAndHash(path, to, info.Mode().Perm()|0o600); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
		return nil
	})
}
