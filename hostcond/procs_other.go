//go:build !linux

package hostcond

import (
	"context"
	"fmt"

	"github.com/shirou/gopsutil/v3/process"
)

// Processes lists the running processes (gopsutil: the image names on
// Windows, the command names elsewhere). Processes that end or cannot be
// read while it runs are skipped.
func Processes(ctx context.Context) ([]Process, error) {
	ps, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("process list: %w", err)
	}
	out := make([]Process, 0, len(ps))
	for _, p := range ps {
		name, err := p.NameWithContext(ctx)
		if err != nil {
			continue
		}
		exe, _ := p.ExeWithContext(ctx)
		out = append(out, Process{Name: name, Exe: exe})
	}
	return out, nil
}
