package coproc

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/disk"
	"github.com/shirou/gopsutil/v3/host"
	"github.com/shirou/gopsutil/v3/mem"

	"github.com/boincd/boincd/boinc"
)

// ProbeHost fills everything in boinc.Host except the CPID and benchmarks,
// which the caller keeps persisted. dataDir decides which filesystem's
// space is reported. Problems are returned as warnings alongside a usable
// Host.
func ProbeHost(ctx context.Context, dataDir string) (boinc.Host, []error) {
	var h boinc.Host
	var warns []error
	_, off := time.Now().Zone()
	h.Timezone = off
	if name, err := os.Hostname(); err == nil {
		h.DomainName = name
	}
	h.IPAddr = localIP()

	h.PNCPUs = runtime.NumCPU()
	if infos, err := cpu.InfoWithContext(ctx); err == nil && len(infos) > 0 {
		h.PVendor = infos[0].VendorID
		h.PModel = infos[0].ModelName
		if infos[0].Family != "" {
			h.PModel += fmt.Sprintf(" [Family %s Model %s Stepping %d]", infos[0].Family, infos[0].Model, infos[0].Stepping)
		}
		h.PFeatures = strings.Join(infos[0].Flags, " ")
		h.MCache = float64(infos[0].CacheSize) * 1024
	} else if err != nil {
		warns = append(warns, fmt.Errorf("cpu info: %w", err))
	}
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		h.MNBytes = float64(vm.Total)
	} else {
		warns = append(warns, fmt.Errorf("memory: %w", err))
	}
	if sw, err := mem.SwapMemoryWithContext(ctx); err == nil {
		h.MSwap = float64(sw.Total)
	}
	if du, err := disk.UsageWithContext(ctx, dataDir); err == nil {
		h.DTotal = float64(du.Total)
		h.DFree = float64(du.Free)
	} else {
		warns = append(warns, fmt.Errorf("disk usage of %s: %w", dataDir, err))
	}
	if hi, err := host.InfoWithContext(ctx); err == nil {
		h.OSName, h.OSVersion = osNames(hi)
	} else {
		h.OSName = runtime.GOOS
		warns = append(warns, fmt.Errorf("os info: %w", err))
	}
	return h, warns
}

// osNames mirrors the C++ client: os_name is "Linux <Distro>", os_version
// "<pretty distro> [<kernel>|libc ...]" on Linux; elsewhere the platform.
func osNames(hi *host.InfoStat) (string, string) {
	switch hi.OS {
	case "linux":
		distro := strings.ToUpper(hi.Platform[:min(1, len(hi.Platform))]) + hi.Platform[min(1, len(hi.Platform)):]
		pretty := prettyName()
		if pretty == "" {
			pretty = strings.TrimSpace(distro + " " + hi.PlatformVersion)
		}
		return strings.TrimSpace("Linux " + distro), fmt.Sprintf("%s [%s]", pretty, hi.KernelVersion)
	case "windows":
		return "Microsoft Windows", strings.TrimSpace(hi.Platform + " " + hi.PlatformVersion)
	case "darwin":
		return "Darwin", hi.PlatformVersion
	}
	return hi.OS, hi.PlatformVersion
}

func prettyName() string {
	b, err := os.ReadFile("/etc/os-release")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

func localIP() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "127.0.0.1"
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return "127.0.0.1"
}
