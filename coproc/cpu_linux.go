//go:build linux

package coproc

import (
	"context"
	"os"
	"runtime"

	"github.com/shirou/gopsutil/v3/cpu"
)

// platformCPU reads /proc/cpuinfo as the C++ Linux client does
// (parse_cpuinfo_linux), with its ARM rules on ARM builds.
func platformCPU(context.Context) (cpuInfo, error) {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return cpuInfo{}, err
	}
	defer f.Close()
	return parseCPUInfo(f, runtime.GOARCH == "arm" || runtime.GOARCH == "arm64")
}

// physicalCores counts distinct cores from sysfs topology and
// /proc/cpuinfo (gopsutil).
func physicalCores(ctx context.Context) (int, error) {
	return cpu.CountsWithContext(ctx, false)
}
