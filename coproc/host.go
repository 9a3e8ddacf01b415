package coproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	if n, err := cpu.CountsWithContext(ctx, false); err == nil {
		x.PhysicalCPUs = n
	} else {
		warns = append(warns, fmt.Errorf("physical CPU count: %w", err))
	}
	if err := probeCPU(ctx, &h); err != nil {
		warns = append(warns, err)
	}

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

	var err error
	h.OSName, h.OSVersion, x.Kernel, x.Libc, err = probeOS(ctx)
	if err != nil {
		warns = append(warns, err)
	}
	return h, x, warns
}

// maxFeatures is the size of HOST_INFO.p_features minus its NUL: longer
// flag lists (recent server CPUs) are cut by the C++ client, and servers
// store the column as varchar(1024). We cut at a flag boundary so no
// partial flag name reaches a plan-class test.
const maxFeatures = 1023

// probeCPU fills vendor, model, features and cache. On Linux it reads
// /proc/cpuinfo the way the C++ client does (its p_model and p_features
// formats are what projects' plan classes and stats pages expect); other
// systems go through gopsutil.
func probeCPU(ctx context.Context, h *boinc.Host) error {
	if runtime.GOOS == "linux" {
		f, err := os.Open("/proc/cpuinfo")
		if err == nil {
			defer f.Close()
			ci, err := parseCPUInfo(f)
			if err == nil {
				h.PVendor, h.PModel, h.PFeatures, h.MCache = ci.vendor, ci.model, ci.features, ci.cache
				return nil
			}
			return fmt.Errorf("cpu info: /proc/cpuinfo: %w", err)
		}
	}
	infos, err := cpu.InfoWithContext(ctx)
	if err != nil {
		return fmt.Errorf("cpu info: %w", err)
	}
	if len(infos) == 0 {
		return errors.New("cpu info: no CPU described")
	}
	c := infos[0]
	h.PVendor = c.VendorID
	h.PModel = c.ModelName
	if c.Family != "" {
		h.PModel += fmt.Sprintf(" [Family %s Model %s Stepping %d]", c.Family, c.Model, c.Stepping)
	}
	h.PFeatures = capFeatures(strings.Join(c.Flags, " "))
	h.MCache = float64(c.CacheSize) * 1024
	return nil
}

// cpuInfo is the first processor's description in /proc/cpuinfo.
type cpuInfo struct {
	vendor, model, features string
	cache                   float64
}

// armVendors names ARM "CPU implementer" codes (arch/arm64 cputype.h).
var armVendors = map[int64]string{
	0x41: "ARM", 0x42: "Broadcom", 0x43: "Cavium", 0x44: "DEC", 0x46: "Fujitsu",
	0x48: "HiSilicon", 0x49: "Infineon", 0x4d: "Motorola/Freescale", 0x4e: "NVIDIA",
	0x50: "APM", 0x51: "Qualcomm", 0x56: "Marvell", 0x61: "Apple", 0x69: "Intel",
	0x6d: "Microsoft", 0xc0: "Ampere",
}

// parseCPUInfo follows client/hostinfo_unix.cpp parse_cpuinfo_linux: the
// first value of each key wins; p_model is "model name" with
// " [Family F Model M Stepping S]" appended on x86, or with
// " [Impl 0x.. Arch A Variant 0x.. Part 0x... Rev R]" on ARM; p_features is
// the flags line verbatim (x86 "flags", ARM "Features", s390 "features");
// m_cache is "cache size" in bytes.
func parseCPUInfo(r io.Reader) (cpuInfo, error) {
	var ci cpuInfo
	family, model, stepping := -1, -1, -1
	arm := map[string]int64{}
	var armName string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "vendor_id", "system type":
			if ci.vendor == "" {
				ci.vendor = val
			}
		case "model name", "cpu model":
			if ci.model == "" {
				ci.model = val
			}
		case "Hardware", "Processor":
			// 32-bit ARM kernels name the SoC or core here and have no
			// "model name".
			if armName == "" {
				armName = val
			}
		case "cpu family":
			if family < 0 {
				family = atoiPrefix(val)
			}
		case "model":
			if model < 0 {
				model = atoiPrefix(val)
			}
		case "stepping":
			if stepping < 0 {
				stepping = atoiPrefix(val)
			}
		case "CPU implementer", "CPU architecture", "CPU variant", "CPU part", "CPU revision":
			if _, seen := arm[key]; !seen {
				if n, err := strconv.ParseInt(val, 0, 64); err == nil {
					arm[key] = n
				} else if n := atoiPrefix(val); n >= 0 {
					arm[key] = int64(n) // "CPU architecture: 7" or "AArch64"-style
				}
			}
		case "cache size":
			if ci.cache == 0 {
				if n := atoiPrefix(val); n > 0 {
					ci.cache = float64(n) * 1024
				}
			}
		case "flags", "Features", "features":
			if ci.features == "" {
				ci.features = capFeatures(strings.Join(strings.Fields(val), " "))
			}
		}
	}
	if err := sc.Err(); err != nil {
		return ci, err
	}
	if ci.model == "" {
		ci.model = armName
	}
	if impl, ok := arm["CPU implementer"]; ok {
		if ci.vendor == "" {
			ci.vendor = armVendors[impl]
		}
		ci.model += fmt.Sprintf(" [Impl 0x%x Arch %d Variant 0x%x Part 0x%x Rev %d]",
			impl, arm["CPU architecture"], arm["CPU variant"], arm["CPU part"], arm["CPU revision"])
	}
	if family >= 0 || model >= 0 || stepping > 0 {
		var b strings.Builder
		b.WriteString(" [")
		if family >= 0 {
			fmt.Fprintf(&b, "Family %d ", family)
		}
		if model >= 0 {
			fmt.Fprintf(&b, "Model %d ", model)
		}
		if stepping >= 0 {
			fmt.Fprintf(&b, "Stepping %d", stepping)
		}
		b.WriteString("]")
		ci.model += b.String()
	}
	ci.model = strings.TrimSpace(ci.model)
	if ci.vendor == "" && ci.model == "" && ci.features == "" {
		return ci, errors.New("no processor description found")
	}
	return ci, nil
}

// atoiPrefix is C's atoi for non-negative numbers: the leading digits, or
// -1 when there are none.
func atoiPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return -1
	}
	return n
}

func capFeatures(s string) string {
	if len(s) <= maxFeatures {
		return s
	}
	s = s[:maxFeatures+1]
	return s[:strings.LastIndexByte(s, ' ')]
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
