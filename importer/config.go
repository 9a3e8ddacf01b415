package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
)

// configPlan is the change to boincd.toml: [[project]] tables appended
// for the imported projects the file does not list yet. The file is
// edited by appending, so the volunteer's comments and layout survive.
type configPlan struct {
	path     string
	mode     fs.FileMode
	data     []byte // the whole new file; nil when nothing changes
	listed   map[string]bool
	unsigned bool
	tmp      string
}

// planConfig reads the target config (a missing file is fine) and
// prepares the entries. A project the config already lists with another
// account key is an error: the daemon would switch the project to that
// key, which is not what an import should do silently.
func planConfig(path string, projects []*boinc.Project, boincDir string, now time.Time) (*configPlan, error) {
	cp := &configPlan{path: path, mode: 0o600, listed: map[string]bool{}}
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return nil, fmt.Errorf("config %s: %w", path, err)
	default:
		if fi, err := os.Stat(path); err == nil {
			cp.mode = fi.Mode().Perm()
		}
	}
	cfg, err := config.Load(path, true, nil)
	if err != nil {
		return nil, fmt.Errorf("the target config cannot be read, so the imported projects cannot be added to it: %w", err)
	}
	cp.unsigned = cfg.UnsignedAppsOK
	for _, c := range cfg.Projects {
		cp.listed[c.URL] = true
		for _, p := range projects {
			if p.MasterURL == c.URL && c.Authenticator != p.Authenticator {
				return nil, fmt.Errorf("%s:%d: project %s is listed with a different account key than the BOINC client's account file; remove or correct that entry before importing", path, c.Line, c.URL)
			}
		}
	}
	var add strings.Builder
	for _, p := range projects {
		if cp.listed[p.MasterURL] {
			continue
		}
		if add.Len() == 0 {
			fmt.Fprintf(&add, "\n# Imported from the BOINC client in %s on %s.\n", boincDir, now.UTC().Format("2006-01-02"))
		}
		add.WriteString("[[project]]\n")
		fmt.Fprintf(&add, "url = %s\n", tomlString(p.MasterURL))
		fmt.Fprintf(&add, "authenticator = %s\n", tomlString(p.Authenticator))
		if p.ResourceShare > 0 {
			fmt.Fprintf(&add, "resource_share = %s\n", tomlFloat(p.ResourceShare))
		}
		if p.NoNewTasks {
			add.WriteString("no_new_tasks = true\n")
		}
		if p.Suspended {
			add.WriteString("suspended = true\n")
		}
	}
	if add.Len() == 0 {
		return cp, nil
	}
	data := append([]byte(nil), old...)
	if len(data) > 0 && data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	data = append(data, add.String()...)
	// The merged file must be one the daemon accepts, or the import
	// would leave a config that stops the daemon from starting.
	if _, err := config.Parse(path, data); err != nil {
		return nil, fmt.Errorf("adding the imported projects to the config would make it invalid: %w", err)
	}
	cp.data = data
	return cp, nil
}

// stage writes the new config next to the old one, synced.
func (cp *configPlan) stage() error {
	if cp.data == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(cp.path), 0o755); err != nil {
		return fmt.Errorf("config directory: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(cp.path), "."+filepath.Base(cp.path)+".import-*")
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cp.tmp = f.Name()
	if err := f.Chmod(cp.mode); err != nil {
		f.Close()
		return fmt.Errorf("config %s: %w", cp.tmp, err)
	}
	if _, err := f.Write(cp.data); err != nil {
		f.Close()
		return fmt.Errorf("config %s: %w", cp.tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("config %s: %w", cp.tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("config %s: %w", cp.tmp, err)
	}
	return nil
}

// install renames the staged file into place.
func (cp *configPlan) install() error {
	if cp.tmp == "" {
		return nil
	}
	if err := os.Rename(cp.tmp, cp.path); err != nil {
		return fmt.Errorf("config %s: %w", cp.path, err)
	}
	cp.tmp = ""
	syncDir(filepath.Dir(cp.path))
	return nil
}

// discard removes a staged file that was not installed.
func (cp *configPlan) discard() {
	if cp.tmp != "" {
		_ = os.Remove(cp.tmp)
		cp.tmp = ""
	}
}

// tomlString is a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// tomlFloat always has a decimal point, so TOML reads a float.
func tomlFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
