//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// libDirs are where detect_platforms looks for a 32-bit C library: the
// entries directly in each (not their subdirectories), symbolic links
// followed, as `file -L` does.
var libDirs = []string{"/lib", "/lib32", "/lib/32", "/usr/lib", "/usr/lib32", "/usr/lib/32"}

// probeOS is detect_platforms' Linux part: the kernel's machine name, and
// on a 64-bit x86 or ARM system whether 32-bit programs run.
func probeOS(ctx context.Context) Probe {
	var p Probe
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		p.Notes = append(p.Notes, fmt.Sprintf("uname: %v", err))
	} else {
		p.KernelMachine = unix.ByteSliceToString(u.Machine[:])
	}
	var note string
	switch runtime.GOARCH {
	case "amd64":
		if strings.Contains(p.KernelMachine, "x86_64") {
			// The C++ rule: a 32-bit C library is enough.
			p.Run32, note = run32(ctx, emI386, "i386", false)
		}
	case "arm64":
		// armhf programs need their loader, and a CPU that still
		// runs AArch32 code (many newer ARM cores do not): the loader
		// must start.
		p.Run32, note = run32(ctx, emARM, "armhf", true)
	}
	if note != "" {
		p.Notes = append(p.Notes, note)
	}
	return p
}

// run32 finds a 32-bit library of machine in libDirs and, where there is
// a 32-bit program loader among them, starts it: a kernel that cannot run
// such programs refuses the exec (ENOEXEC). needLoader: without a loader
// the answer is no.
func run32(ctx context.Context, machine uint16, what string, needLoader bool) (bool, string) {
	f := find32(libDirs, machine)
	if f.lib == "" {
		return false, fmt.Sprintf("no 32-bit %s library in %s", what, strings.Join(libDirs, ", "))
	}
	if f.loader == "" {
		if needLoader {
			return false, fmt.Sprintf("32-bit %s library %s but no program loader (ld-linux*)", what, f.lib)
		}
		return true, fmt.Sprintf("32-bit %s library %s", what, f.lib)
	}
	err := exec.CommandContext(ctx, f.loader, "--version").Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		// The exec itself failed: the kernel does not run it.
		return false, fmt.Sprintf("32-bit %s loader %s does not run: %v", what, f.loader, err)
	}
	return true, fmt.Sprintf("32-bit %s loader %s runs", what, f.loader)
}
