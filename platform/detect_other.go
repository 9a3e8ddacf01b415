//go:build !linux && !darwin && !windows

package platform

import "context"

// probeOS: no run-time checks elsewhere; the build's own platform is the
// list (detect_platforms' "any other platform" branch).
func probeOS(context.Context) Probe { return Probe{} }
