//go:build darwin

package coproc

import (
	"context"
	"errors"
	"runtime"

	"github.com/shirou/gopsutil/v3/cpu"
	"golang.org/x/sys/unix"
)

// platformCPU reads the sysctls get_cpu_info_mac reads.
func platformCPU(context.Context) (cpuInfo, error) {
	s := sysctls{
		str: unix.Sysctl,
		num: func(name string) (int64, error) {
			v, err := unix.SysctlUint32(name)
			return int64(int32(v)), err
		},
	}
	ci := macCPU(s, runtime.GOARCH == "amd64" || runtime.GOARCH == "386")
	if ci.vendor == "" && ci.features == "" {
		return ci, errors.New("sysctl machdep.cpu: no processor description")
	}
	return ci, nil
}

// physicalCores is hw.physicalcpu (gopsutil).
func physicalCores(ctx context.Context) (int, error) {
	return cpu.CountsWithContext(ctx, false)
}
