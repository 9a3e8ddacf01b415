//go:build !linux && !windows && !darwin

package coproc

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/shirou/gopsutil/v3/cpu"
)

// platformCPU: systems the C++ client describes through sysctl hw.model
// and hw.machine (BSDs); gopsutil reads the same sources.
func platformCPU(ctx context.Context) (cpuInfo, error) {
	infos, err := cpu.InfoWithContext(ctx)
	if err != nil {
		return cpuInfo{}, err
	}
	if len(infos) == 0 {
		return cpuInfo{}, errors.New("no CPU described")
	}
	c := infos[0]
	ci := cpuInfo{vendor: c.VendorID, model: c.ModelName, features: strings.Join(c.Flags, " "), cache: float64(c.CacheSize) * 1024}
	if c.Family != "" {
		ci.model += fmt.Sprintf(" [Family %s Model %s Stepping %d]", c.Family, c.Model, c.Stepping)
	}
	return ci, nil
}

func physicalCores(ctx context.Context) (int, error) {
	return cpu.CountsWithContext(ctx, false)
}
