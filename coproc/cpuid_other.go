//go:build !amd64 && !386

package coproc

// nativeCPUID: no CPUID instruction on this architecture.
func nativeCPUID() (cpuid cpuidFunc, xgetbv func() uint64, ok bool) {
	return nil, nil, false
}
