//go:build !(linux && cgo)

package coproc

// Builds without NVML. go-nvml needs cgo and Linux: its types come from
// the C header, so not even nvml.Return exists without them. Here the
// NVML interface is reduced to the reason the probe cannot run, and
// ProbeNVIDIA reports zero GPUs with that reason; the daemon runs
// CPU-only. (A Windows or macOS GPU probe would need another library.)

import (
	"errors"
	"fmt"
	"runtime"
)

// NVML stands for the NVML library in builds that cannot load it.
type NVML interface {
	// Unavailable says why NVML cannot be used in this build.
	Unavailable() error
}

type noNVML struct{}

func (noNVML) Unavailable() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("no GPU: NVML probe supports Linux only, this is %s", runtime.GOOS)
	}
	return errors.New("no GPU: built without cgo")
}

// DefaultNVML returns the stand-in whose only answer is why there is no
// NVML in this build.
func DefaultNVML() NVML { return noNVML{} }

// ProbeNVIDIA returns zero GPUs and an Err wrapping ErrNoNVIDIA that says
// why this build has no NVML.
func ProbeNVIDIA(lib NVML) NVIDIAInfo {
	if lib == nil {
		lib = noNVML{}
	}
	return NVIDIAInfo{Err: fmt.Errorf("%w: %w", ErrNoNVIDIA, lib.Unavailable())}
}
