//go:build windows

package platform

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sys/windows"
)

// probeOS is detect_platforms' Windows part: whether a 32-bit build runs
// under WOW64 (IsWow64Process), and the Windows version, which decides
// the x86 emulation Windows on ARM offers.
func probeOS(context.Context) Probe {
	var p Probe
	if v := windows.RtlGetVersion(); v != nil {
		p.WindowsMajor, p.WindowsBuild = v.MajorVersion, v.BuildNumber
	}
	if runtime.GOARCH == "386" {
		var wow bool
		if err := windows.IsWow64Process(windows.CurrentProcess(), &wow); err != nil {
			p.Notes = append(p.Notes, fmt.Sprintf("IsWow64Process: %v", err))
		}
		p.WOW64 = wow
	}
	return p
}
