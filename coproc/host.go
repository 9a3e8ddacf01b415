package coproc

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/disk"
	"github.com/shirou/gopsutil/v3/host"
	"github.com/shirou/gopsutil/v3/mem"

	"github.com/boincd/boincd/boinc"
)

// HostExtra is what the probe finds beyond boinc.Host, which mirrors the
// C++ HOST_INFO and has no room for these.
type HostExtra struct {
	// LogicalCPUs counts the online logical CPUs; boinc.Host.PNCPUs is
	// the ones this process may use (its affinity mask), which is what
	// the scheduler may fill.
	LogicalCPUs int `json:"logical_cpus"`
	// PhysicalCPUs counts cores (0 when unknown).
	PhysicalCPUs int `json:"physical_cpus"`
	// MemAvailable and SwapFree are bytes free now.
	MemAvailable float64 `json:"mem_available"`
	SwapFree     float64 `json:"swap_free"`
	// Kernel is the kernel release; Libc the C library version ("" when
	// not glibc).
	Kernel string `json:"kernel"`
	Libc   string `json:"libc,omitempty"`
	// Arch is the Go architecture boincd runs as (amd64, arm64…).
	Arch string `json:"arch"`
}

// ProbeHost fills everything in boinc.Host except the CPID and benchmarks,
// which the caller keeps persisted. dataDir decides which filesystem's
// space is reported. Problems are returned as warnings alongside a usable
// Host.
func ProbeHost(ctx context.Context, dataDir string) (boinc.Host, []error) {
	h, _, warns := ProbeHostExtra(ctx, dataDir)
	return h, warns
}

// ProbeHostExtra is ProbeHost that also returns what boinc.Host cannot
// carry (core count, free memory, kernel and libc).
func ProbeHostExtra(ctx context.Context, dataDir string) (boinc.Host, HostExtra, []error) {
	var h boinc.Host
	x := HostExtra{Arch: runtime.GOARCH}
	var warns []error
	_, off := time.Now().Zone()
	h.Timezone = off
	if name, err := os.Hostname(); err == nil {
		h.DomainName = name
	}
	h.IPAddr = hostIP(ctx, h.DomainName)

	h.PNCPUs = runtime.NumCPU()
	if n, err := cpu.CountsWithContext(ctx, true); err == nil && n > 0 {
		x.LogicalCPUs = n
	} else {
		x.LogicalCPUs = h.PNCPUs
	}
	if n, err := physicalCores(ctx); err == nil {
		x.PhysicalCPUs = n
	} else {
		warns = append(warns, fmt.Errorf("physical CPU count: %w", err))
	}
	ci, err := probeCPU(ctx)
	if err != nil {
		warns = append(warns, err)
	}
	h.PVendor, h.PModel, h.PFeatures, h.MCache = ci.vendor, ci.model, ci.features, ci.cache
	// HOST_INFO.product_name: the board ("Hardware" on ARM Linux) or the
	// Mac model, as the C++ client's CPU probe fills it; a name a GUI
	// sets (set_host_info) takes precedence in the daemon.
	h.ProductName = ci.product

	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		h.MNBytes = float64(vm.Total)
		x.MemAvailable = float64(vm.Available)
	} else {
		warns = append(warns, fmt.Errorf("memory: %w", err))
	}
	if sw, err := mem.SwapMemoryWithContext(ctx); err == nil {
		h.MSwap = float64(sw.Total)
		x.SwapFree = float64(sw.Free)
	} else {
		warns = append(warns, fmt.Errorf("swap: %w", err))
	}
	// statfs: total is f_blocks and free f_bavail (what an unprivileged
	// process may use), both times the block size, as the C++ client's
	// get_filesystem_info computes them.
	if du, err := disk.UsageWithContext(ctx, dataDir); err == nil {
		h.DTotal = float64(du.Total)
		h.DFree = float64(du.Free)
	} else {
		warns = append(warns, fmt.Errorf("disk usage of %s: %w", dataDir, err))
	}

	h.OSName, h.OSVersion, x.Kernel, x.Libc, err = probeOS(ctx)
	if err != nil {
		warns = append(warns, err)
	}
	return h, x, warns
}

// HasFeature reports whether the space-separated CPU flag list (p_features)
// contains name, as plan classes test it. On arm64 Advanced SIMD is
// mandatory and Linux calls it "asimd", so "neon" also matches that.
func HasFeature(features, name string) bool {
	for f := range strings.FieldsSeq(features) {
		if f == name || (name == "neon" && f == "asimd") {
			return true
		}
	}
	return false
}

// probeOS returns os_name and os_version as the C++ client writes them,
// plus the kernel release and libc version they were built from.
func probeOS(ctx context.Context) (osName, osVersion, kernel, libc string, err error) {
	if runtime.GOOS != "linux" {
		hi, err := host.InfoWithContext(ctx)
		if err != nil {
			return runtime.GOOS, "", "", "", fmt.Errorf("os info: %w", err)
		}
		osName, osVersion = otherOSNames(hi)
		return osName, osVersion, hi.KernelVersion, "", nil
	}
	kernel, err = host.KernelVersionWithContext(ctx)
	if err != nil {
		err = fmt.Errorf("kernel version: %w", err)
	}
	libc = glibcVersion(ctx)
	osRelease, _ := os.ReadFile("/etc/os-release")
	if len(osRelease) == 0 {
		osRelease, _ = os.ReadFile("/usr/lib/os-release")
	}
	lsbRelease, _ := os.ReadFile("/etc/lsb-release")
	osName, osVersion = linuxOSNames(parseEnvFile(osRelease), parseEnvFile(lsbRelease), kernel, libc)
	return osName, osVersion, kernel, libc, err
}

// linuxOSNames builds "Linux <Distro>" and "<pretty name> [<kernel>|libc
// <version>]" (client/hostinfo_unix.cpp). The distro is what lsb_release
// calls the distributor ID: DISTRIB_ID where /etc/lsb-release has one,
// else the first word of os-release's NAME ("Debian GNU/Linux" gives
// "Debian", as the reference capture shows).
func linuxOSNames(osRelease, lsb map[string]string, kernel, libc string) (string, string) {
	distro := lsb["DISTRIB_ID"]
	if distro == "" {
		if f := strings.Fields(osRelease["NAME"]); len(f) > 0 && f[0] != "Linux" {
			distro = f[0]
		} else if id := osRelease["ID"]; id != "" {
			distro = strings.ToUpper(id[:1]) + id[1:]
		}
	}
	pretty := osRelease["PRETTY_NAME"]
	if pretty == "" {
		pretty = lsb["DISTRIB_DESCRIPTION"]
	}
	if pretty == "" {
		pretty = strings.TrimSpace(osRelease["NAME"] + " " + osRelease["VERSION"])
	}
	ver := kernel
	if libc != "" {
		ver += "|libc " + libc
	}
	name := "Linux"
	if distro != "" {
		name += " " + distro
	}
	if pretty == "" {
		return name, ver
	}
	return name, pretty + " [" + ver + "]"
}

// parseEnvFile reads KEY=value lines with optional shell quoting
// (os-release(5)).
func parseEnvFile(b []byte) map[string]string {
	m := map[string]string{}
	for line := range bytes.Lines(b) {
		k, v, ok := strings.Cut(strings.TrimSpace(string(line)), "=")
		if !ok || strings.HasPrefix(k, "#") {
			continue
		}
		if uq, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
			v = uq
		} else {
			v = strings.Trim(v, `"'`)
		}
		m[k] = v
	}
	return m
}

// glibcVersion asks getconf, which every glibc system has; a static Go
// binary cannot call gnu_get_libc_version itself. musl and others answer
// nothing, and the C++ client then writes no libc either.
func glibcVersion(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "getconf", "GNU_LIBC_VERSION").Output()
	if err != nil {
		return ""
	}
	// "glibc 2.36"
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return ""
	}
	return f[1]
}

// otherOSNames: Windows and macOS names as the C++ client gives them in
// spirit (os_name the product family, os_version its version).
func otherOSNames(hi *host.InfoStat) (string, string) {
	switch hi.OS {
	case "windows":
		return "Microsoft Windows", strings.TrimSpace(hi.Platform + " " + hi.PlatformVersion)
	case "darwin":
		return "Darwin", hi.KernelVersion
	}
	return hi.OS, hi.PlatformVersion
}

// hostIP is the host name's address, as the C++ client resolves it
// (gethostbyname of gethostname), falling back to the first non-loopback
// IPv4 interface address when the name does not resolve.
func hostIP(ctx context.Context, hostname string) string {
	if hostname != "" {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if addrs, err := net.DefaultResolver.LookupIPAddr(ctx, hostname); err == nil {
			for _, a := range addrs {
				if a.IP.To4() != nil {
					return a.IP.String()
				}
			}
		}
	}
	return localIP()
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
