// Package platform names the BOINC platforms this host runs: the primary
// one a build is for and the alternates it can also run, in the order the
// C++ client 7.20 sends them (client/cs_platforms.cpp,
// CLIENT_STATE::detect_platforms). A project's scheduler chooses, for each
// job, an app version of one of these platforms, so the list decides which
// programs a host is sent.
//
// The naming (Names) is a pure function of GOOS, GOARCH and what the run
// time probe found (Probe), so every build's answer can be tested on any
// host; Detect is the probe itself, the only part that asks the OS.
package platform

import (
	"slices"
	"strings"
)

// The platform names the BOINC server knows (tools/project.xml) that
// boincd's builds can be.
const (
	WindowsX86_64   = "windows_x86_64"
	WindowsIntelX86 = "windows_intelx86"
	WindowsARM64    = "windows_arm64"

	LinuxX86_64  = "x86_64-pc-linux-gnu"
	LinuxI686    = "i686-pc-linux-gnu"
	LinuxAArch64 = "aarch64-unknown-linux-gnu"
	LinuxARMHF   = "arm-unknown-linux-gnueabihf"

	DarwinX86_64 = "x86_64-apple-darwin"
	DarwinARM64  = "arm64-apple-darwin"
	DarwinI686   = "i686-apple-darwin"

	// Anonymous is <platform_name> of a project that runs the volunteer's
	// own app versions (app_info.xml): CLIENT_STATE::write_platforms.
	Anonymous = "anonymous"
)

// builds maps GOOS/GOARCH to the platform the C++ client built for that
// target calls itself (HOSTTYPE: m4/boinc_platform.m4 for the autoconf
// builds, the Windows and Mac project files for the others). Pairs that
// BOINC never built for get the name its configure would give them.
var builds = map[[2]string]string{
	{"windows", "amd64"}: WindowsX86_64,
	{"windows", "386"}:   WindowsIntelX86,
	{"windows", "arm64"}: WindowsARM64,

	{"linux", "amd64"}:   LinuxX86_64,
	{"linux", "386"}:     LinuxI686,
	{"linux", "arm64"}:   LinuxAArch64,
	{"linux", "arm"}:     LinuxARMHF,
	{"linux", "ppc64le"}: "powerpc64le-unknown-linux-gnu",
	{"linux", "riscv64"}: "riscv64-unknown-linux-gnu",
	{"linux", "loong64"}: "loongarch64-unknown-linux-gnu",
	{"linux", "s390x"}:   "s390x-ibm-linux-gnu",

	{"darwin", "amd64"}: DarwinX86_64,
	{"darwin", "arm64"}: DarwinARM64,

	{"freebsd", "amd64"}: "x86_64-pc-freebsd",
	{"freebsd", "arm64"}: "aarch64-unknown-freebsd",
}

// Build is the platform a binary for goos/goarch is built for: the C++
// client's HOSTTYPE, which its "Starting BOINC client … for" line names.
// It is the primary platform except where Names finds a better one at run
// time (a 32-bit build on a 64-bit system). A pair the table lacks gets
// a configure-style "<arch>-unknown-<os>".
func Build(goos, goarch string) string {
	if p, ok := builds[[2]string{goos, goarch}]; ok {
		return p
	}
	return goarch + "-unknown-" + goos
}

// Probe is what the run-time checks found (Detect). Each field matters on
// one OS only; the zero value is "found nothing".
type Probe struct {
	// KernelMachine is the kernel's machine name (uname -m) on Linux:
	// "x86_64", "i686", "aarch64", … "" when unknown.
	KernelMachine string
	// Run32 is true when this 64-bit Linux host runs the 32-bit programs
	// of its family: i686 ones on x86_64, armhf ones on aarch64.
	Run32 bool
	// WOW64 is true for a 32-bit Windows build running on 64-bit Windows
	// (IsWow64Process).
	WOW64 bool
	// WindowsMajor and WindowsBuild are the Windows version
	// (RtlGetVersion): Windows on ARM emulates x86 from 10 and x86_64
	// from build 22000 (Windows 11).
	WindowsMajor, WindowsBuild uint32
	// Rosetta is true when this Apple-silicon Mac runs x86_64 programs.
	Rosetta bool
	// MacOSBefore1015 is true on macOS older than 10.15, which still runs
	// 32-bit Intel programs. Go needs a newer macOS, so Detect never sets
	// it; it is here so the rule is the C++ client's whole rule.
	MacOSBefore1015 bool
	// Notes say what the checks found or why they could not tell, for
	// `boincd probe` and the start-up log.
	Notes []string
}

// Names is the list of platforms a goos/goarch build sends, primary first,
// given what the run-time checks found: CLIENT_STATE::detect_platforms,
// branch by branch.
func Names(goos, goarch string, p Probe) []string {
	switch goos {
	case "windows":
		switch goarch {
		case "amd64":
			return []string{WindowsX86_64, WindowsIntelX86}
		case "386":
			// A 32-bit client on a 64-bit machine asks for 64-bit apps
			// first.
			if p.WOW64 {
				return []string{WindowsX86_64, WindowsIntelX86}
			}
			return []string{WindowsIntelX86}
		case "arm64":
			// Not in 7.20 (no ARM64 Windows client then); the rule of
			// the later clients' detect_platforms, in their order.
			out := []string{WindowsARM64}
			if p.WindowsMajor >= 10 {
				out = append(out, WindowsIntelX86)
				if p.WindowsBuild >= 22000 {
					out = append(out, WindowsX86_64)
				}
			}
			return out
		}
	case "darwin":
		switch goarch {
		case "amd64":
			if p.MacOSBefore1015 {
				return []string{DarwinX86_64, DarwinI686}
			}
			return []string{DarwinX86_64}
		case "arm64":
			if p.Rosetta {
				return []string{DarwinARM64, DarwinX86_64}
			}
			return []string{DarwinARM64}
		}
	case "linux":
		switch goarch {
		case "amd64", "386":
			return linuxX86(goarch, p)
		case "arm64":
			// The Debian/Ubuntu arm64 client's HOSTTYPEALT, sent here
			// only where a 32-bit ARM program can actually run.
			if p.Run32 {
				return []string{LinuxAArch64, LinuxARMHF}
			}
			return []string{LinuxAArch64}
		}
	}
	return []string{Build(goos, goarch)}
}

// linuxX86 is detect_platforms' Linux x86 branch: a 64-bit kernel
// (uname -m says x86_64) makes x86_64 the primary platform even for a
// 32-bit build; i686 follows when 32-bit programs run, which a 32-bit
// build proves by running and a 64-bit one checks by looking for a 32-bit
// C library. When the kernel is unknown the C++ client falls back to
// HOSTTYPE and HOSTTYPEALT (configure gives x86_64 Linux i686 as its
// alternate).
func linuxX86(goarch string, p Probe) []string {
	switch {
	case p.KernelMachine == "":
		if goarch == "386" {
			return []string{LinuxI686}
		}
		return []string{LinuxX86_64, LinuxI686}
	case !strings.Contains(p.KernelMachine, "x86_64"): // strstr(uname -m, "x86_64")
		// A 32-bit kernel (or a 32-bit personality: linux32).
		return []string{LinuxI686}
	case goarch == "386" || p.Run32:
		return []string{LinuxX86_64, LinuxI686}
	}
	return []string{LinuxX86_64}
}

// Configure applies cc_config.xml's <no_alt_platform> (keep only the
// primary) and then appends its <alt_platform> entries, as the end of
// detect_platforms does. Empty names and names already listed are
// skipped: a platform sent twice tells the server nothing more.
func Configure(names []string, noAlt bool, extra []string) []string {
	out := slices.Clone(names)
	if noAlt && len(out) > 1 {
		out = out[:1]
	}
	for _, e := range extra {
		if e != "" && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// Supported reports whether name is one of list: CLIENT_STATE::
// is_supported_platform.
func Supported(list []string, name string) bool {
	return slices.Contains(list, name)
}
