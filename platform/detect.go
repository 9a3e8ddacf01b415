package platform

import (
	"context"
	"runtime"
	"time"
)

// probeTimeout bounds the checks (the programs they start), as
// detect_platforms gives its Solaris 64-bit test program 5 seconds.
const probeTimeout = 5 * time.Second

// Detect runs the checks Names needs for this build on this host.
func Detect(ctx context.Context) Probe {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return probeOS(ctx)
}

// Host is this host's platform list for this build, primary first, and
// what the checks found.
func Host(ctx context.Context) ([]string, Probe) {
	p := Detect(ctx)
	return Names(runtime.GOOS, runtime.GOARCH, p), p
}

// This is the platform this binary is built for (Build for its own
// GOOS/GOARCH): the C++ client's HOSTTYPE.
func This() string { return Build(runtime.GOOS, runtime.GOARCH) }
