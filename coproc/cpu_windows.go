//go:build windows

package coproc

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// platformCPU is get_processor_info: CPUID on x86 (gopsutil's WMI route
// gives nothing under Wine and no flags anywhere), the registry and
// IsProcessorFeaturePresent on ARM.
func platformCPU(context.Context) (cpuInfo, error) {
	if cpuid, xgetbv, ok := nativeCPUID(); ok {
		return x86CPUID(cpuid, xgetbv), nil
	}
	k, err := registry.OpenKey(registry.LOCAL_MACHINE, `HARDWARE\DESCRIPTION\System\CentralProcessor\0`, registry.QUERY_VALUE)
	if err != nil {
		return cpuInfo{}, fmt.Errorf(`HKLM\HARDWARE\DESCRIPTION\System\CentralProcessor\0: %w`, err)
	}
	defer k.Close()
	reg := func(name string) string {
		v, _, err := k.GetStringValue(name)
		if err != nil {
			return ""
		}
		return v
	}
	return windowsARMCPU(reg, windows.IsProcessorFeaturePresent), nil
}

var procGetLogicalProcessorInformationEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GetLogicalProcessorInformationEx")

// physicalCores counts the cores GetLogicalProcessorInformationEx
// reports across all processor groups; where that fails, the logical
// count divided by CPUID's threads per core.
func physicalCores(context.Context) (int, error) {
	n, err := glpiCores()
	if err == nil && n > 0 {
		return n, nil
	}
	if cpuid, _, ok := nativeCPUID(); ok {
		if tpc := x86ThreadsPerCore(cpuid); tpc > 0 {
			logical := int(windows.GetActiveProcessorCount(windows.ALL_PROCESSOR_GROUPS))
			if logical <= 0 {
				logical = runtime.NumCPU()
			}
			return max(1, logical/tpc), nil
		}
	}
	if err == nil {
		err = errors.New("no processor core reported")
	}
	return 0, err
}

func glpiCores() (int, error) {
	if err := procGetLogicalProcessorInformationEx.Find(); err != nil {
		return 0, err
	}
	var size uint32
	r, _, err := procGetLogicalProcessorInformationEx.Call(relationProcessorCore, 0, uintptr(unsafe.Pointer(&size)))
	if r != 0 || size == 0 {
		return 0, fmt.Errorf("GetLogicalProcessorInformationEx: size query: %w", err)
	}
	buf := make([]byte, size)
	r, _, err = procGetLogicalProcessorInformationEx.Call(relationProcessorCore, uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&size)))
	if r == 0 {
		return 0, fmt.Errorf("GetLogicalProcessorInformationEx: %w", err)
	}
	return countProcessorCores(buf[:size])
}
