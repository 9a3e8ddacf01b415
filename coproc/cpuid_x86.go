//go:build amd64 || 386

package coproc

// cpuidRaw executes the CPUID instruction (cpuid_amd64.s, cpuid_386.s).
func cpuidRaw(leaf, sub uint32) (a, b, c, d uint32)

// xgetbvRaw reads XCR0; only valid when CPUID leaf 1 ECX bit 27 (OSXSAVE)
// is set.
func xgetbvRaw() (eax, edx uint32)

func xgetbv0() uint64 {
	a, d := xgetbvRaw()
	return uint64(d)<<32 | uint64(a)
}

// nativeCPUID is this machine's CPUID and XGETBV, or ok false where the
// architecture has none.
func nativeCPUID() (cpuid cpuidFunc, xgetbv func() uint64, ok bool) {
	return cpuidRaw, xgetbv0, true
}
