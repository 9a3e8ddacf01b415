package hostcond

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Processes lists the running processes from /proc. Entries that vanish
// or cannot be read while it runs are skipped; only a /proc that cannot
// be listed is an error.
func Processes(ctx context.Context) ([]Process, error) {
	return processesIn(ctx, "/proc")
}

func processesIn(ctx context.Context, root string) ([]Process, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("process list: %w", err)
	}
	out := make([]Process, 0, len(ents))
	for _, e := range ents {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !e.IsDir() || e.Name() == "" || e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		comm, err := os.ReadFile(filepath.Join(root, e.Name(), "comm"))
		if err != nil {
			continue
		}
		exe, _ := os.Readlink(filepath.Join(root, e.Name(), "exe"))
		out = append(out, Process{Name: strings.TrimRight(string(comm), "\n"), Exe: strings.TrimSuffix(exe, " (deleted)")})
	}
	return out, nil
}
