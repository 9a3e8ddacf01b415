package platform

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

// TestNames is detect_platforms for each build boincd makes, with the
// run-time findings that change its answer.
func TestNames(t *testing.T) {
	tests := []struct {
		goos, goarch string
		probe        Probe
		want         []string
	}{
		// Windows: x64 always adds 32-bit (client/cs_platforms.cpp
		// _WIN64 && _M_X64); a 32-bit build asks for x64 under WOW64.
		{"windows", "amd64", Probe{}, []string{"windows_x86_64", "windows_intelx86"}},
		{"windows", "386", Probe{}, []string{"windows_intelx86"}},
		{"windows", "386", Probe{WOW64: true}, []string{"windows_x86_64", "windows_intelx86"}},
		// Windows on ARM: x86 emulation from 10, x64 from build 22000.
		{"windows", "arm64", Probe{WindowsMajor: 6}, []string{"windows_arm64"}},
		{"windows", "arm64", Probe{WindowsMajor: 10, WindowsBuild: 19045}, []string{"windows_arm64", "windows_intelx86"}},
		{"windows", "arm64", Probe{WindowsMajor: 10, WindowsBuild: 22631}, []string{"windows_arm64", "windows_intelx86", "windows_x86_64"}},

		// Linux x86: uname -m, then a 32-bit C library.
		{"linux", "amd64", Probe{KernelMachine: "x86_64"}, []string{"x86_64-pc-linux-gnu"}},
		{"linux", "amd64", Probe{KernelMachine: "x86_64", Run32: true}, []string{"x86_64-pc-linux-gnu", "i686-pc-linux-gnu"}},
		{"linux", "amd64", Probe{KernelMachine: "i686"}, []string{"i686-pc-linux-gnu"}},   // linux32 personality
		{"linux", "amd64", Probe{}, []string{"x86_64-pc-linux-gnu", "i686-pc-linux-gnu"}}, // uname failed: HOSTTYPE, HOSTTYPEALT
		{"linux", "386", Probe{KernelMachine: "x86_64"}, []string{"x86_64-pc-linux-gnu", "i686-pc-linux-gnu"}},
		{"linux", "386", Probe{KernelMachine: "i686"}, []string{"i686-pc-linux-gnu"}},
		{"linux", "386", Probe{}, []string{"i686-pc-linux-gnu"}},

		// Linux ARM.
		{"linux", "arm64", Probe{KernelMachine: "aarch64"}, []string{"aarch64-unknown-linux-gnu"}},
		{"linux", "arm64", Probe{KernelMachine: "aarch64", Run32: true}, []string{"aarch64-unknown-linux-gnu", "arm-unknown-linux-gnueabihf"}},
		{"linux", "arm", Probe{KernelMachine: "armv7l"}, []string{"arm-unknown-linux-gnueabihf"}},
		{"linux", "arm", Probe{KernelMachine: "aarch64", Run32: true}, []string{"arm-unknown-linux-gnueabihf"}},
		{"linux", "ppc64le", Probe{}, []string{"powerpc64le-unknown-linux-gnu"}},
		{"linux", "riscv64", Probe{}, []string{"riscv64-unknown-linux-gnu"}},

		// macOS.
		{"darwin", "amd64", Probe{}, []string{"x86_64-apple-darwin"}},
		{"darwin", "amd64", Probe{MacOSBefore1015: true}, []string{"x86_64-apple-darwin", "i686-apple-darwin"}},
		{"darwin", "arm64", Probe{}, []string{"arm64-apple-darwin"}},
		{"darwin", "arm64", Probe{Rosetta: true}, []string{"arm64-apple-darwin", "x86_64-apple-darwin"}},

		// Elsewhere: the build's own name only.
		{"freebsd", "amd64", Probe{}, []string{"x86_64-pc-freebsd"}},
		{"plan9", "amd64", Probe{}, []string{"amd64-unknown-plan9"}},
	}
	for _, tc := range tests {
		got := Names(tc.goos, tc.goarch, tc.probe)
		if !slices.Equal(got, tc.want) {
			t.Errorf("Names(%s, %s, %+v) = %q, want %q", tc.goos, tc.goarch, tc.probe, got, tc.want)
		}
		// The build's own name is always sent, but under a 32-bit
		// personality, where the C++ rule trusts uname.
		if b := Build(tc.goos, tc.goarch); !slices.Contains(got, b) && tc.probe.KernelMachine != "i686" {
			t.Errorf("Names(%s, %s, %+v) = %q lacks the build's own %q", tc.goos, tc.goarch, tc.probe, got, b)
		}
	}
}

func TestConfigure(t *testing.T) {
	two := []string{LinuxX86_64, LinuxI686}
	tests := []struct {
		name  string
		noAlt bool
		extra []string
		want  []string
	}{
		{"as detected", false, nil, two},
		{"no_alt_platform", true, nil, []string{LinuxX86_64}},
		{"alt_platform appended", false, []string{"x86_64-pc-linux-gnu-custom"}, []string{LinuxX86_64, LinuxI686, "x86_64-pc-linux-gnu-custom"}},
		{"both: alternates after the cut", true, []string{LinuxI686, "", LinuxX86_64}, []string{LinuxX86_64, LinuxI686}},
	}
	for _, tc := range tests {
		got := Configure(two, tc.noAlt, tc.extra)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: Configure = %q, want %q", tc.name, got, tc.want)
		}
	}
	if !slices.Equal(two, []string{LinuxX86_64, LinuxI686}) {
		t.Errorf("Configure changed its input: %q", two)
	}
}

// writeELF writes a 52-byte ELF header: class (1: 32-bit, 2: 64-bit),
// machine, flags.
func writeELF(t *testing.T, path string, class byte, machine uint16, flags uint32) {
	t.Helper()
	h := make([]byte, 64)
	copy(h, "\x7fELF")
	h[4], h[5], h[6] = class, 1, 1
	binary.LittleEndian.PutUint16(h[18:], machine)
	binary.LittleEndian.PutUint32(h[36:], flags)
	if err := os.WriteFile(path, h, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestFind32 is the library search of detect_platforms on made-up lib
// directories.
func TestFind32(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	only64, x86lib, x86ld, arm := dir("only64"), dir("x86lib"), dir("x86ld"), dir("arm")
	writeELF(t, filepath.Join(only64, "libc.so.6"), 2, 62, 0)
	writeELF(t, filepath.Join(only64, "libx32.so"), 1, 62, 0) // x32: 32-bit class but x86-64
	if err := os.WriteFile(filepath.Join(only64, "notes.txt"), []byte("not an ELF file at all, long enough to be read"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeELF(t, filepath.Join(x86lib, "libc.so.6"), 1, emI386, 0)
	writeELF(t, filepath.Join(x86ld, "libm.so.6"), 1, emI386, 0)
	writeELF(t, filepath.Join(x86ld, "ld-linux.so.2"), 1, emI386, 0)
	writeELF(t, filepath.Join(arm, "ld-linux.so.3"), 1, emARM, 0)                      // armel: soft float
	writeELF(t, filepath.Join(arm, "ld-linux-armhf.so.3"), 1, emARM, 0x05000000|0x400) // EABI5, hard float
	if err := os.Symlink(filepath.Join(x86lib, "libc.so.6"), filepath.Join(dir("links"), "libc.so.6")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		dirs    []string
		machine uint16
		want    lib32
	}{
		{"64-bit only", []string{only64, filepath.Join(root, "missing")}, emI386, lib32{}},
		{"i386 library, no loader", []string{only64, x86lib}, emI386, lib32{lib: filepath.Join(x86lib, "libc.so.6")}},
		{"i386 loader", []string{x86ld}, emI386, lib32{lib: filepath.Join(x86ld, "ld-linux.so.2"), loader: filepath.Join(x86ld, "ld-linux.so.2")}},
		{"symlink followed", []string{filepath.Join(root, "links")}, emI386, lib32{lib: filepath.Join(root, "links", "libc.so.6")}},
		{"armhf, not armel", []string{arm}, emARM, lib32{lib: filepath.Join(arm, "ld-linux-armhf.so.3"), loader: filepath.Join(arm, "ld-linux-armhf.so.3")}},
		{"no ARM on x86", []string{x86ld, x86lib}, emARM, lib32{}},
	}
	for _, tc := range tests {
		if got := find32(tc.dirs, tc.machine); got != tc.want {
			t.Errorf("%s: find32 = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestHost: detection on this host gives the build's platform first
// (or, for a 32-bit build, the 64-bit one of its family) and only names
// Names can give.
func TestHost(t *testing.T) {
	got, p := Host(context.Background())
	if len(got) == 0 {
		t.Fatal("no platforms")
	}
	if !slices.Contains(got, This()) {
		t.Errorf("Host = %q lacks this build's %q", got, This())
	}
	t.Logf("platforms %q, probe %+v", got, p)
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && got[0] != LinuxX86_64 {
		t.Errorf("primary %q, want %q", got[0], LinuxX86_64)
	}
}
