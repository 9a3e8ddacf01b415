package coproc

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// cpuidFunc executes CPUID for a leaf (EAX) and subleaf (ECX). The real
// one is cpuidRaw (amd64 and 386); tests inject recorded register values.
type cpuidFunc func(leaf, sub uint32) (a, b, c, d uint32)

// x86Register names the CPUID output register a feature bit lives in.
type x86Register int

const (
	regEBX x86Register = iota
	regECX
	regEDX
)

// x86FeatureGroup is the condition under which get_processor_features
// tests a bit.
type x86FeatureGroup int

const (
	groupStd      x86FeatureGroup = iota // leaf 1 exists
	groupExt                             // leaf 0x80000001 exists
	groupAVX                             // is_avx_supported()
	groupAVXLeaf7                        // is_avx_supported() and leaf 7 exists
	groupIntel                           // vendor GenuineIntel
	groupAMD                             // vendor AuthenticAMD or HygonGenuine
	groupLeaf7                           // leaf 7 exists
)

// x86Feature is one FEATURE_TEST line of get_processor_features.
type x86Feature struct {
	group x86FeatureGroup
	leaf  uint32 // 1, 7 or 0x80000001
	reg   x86Register
	bit   uint
	name  string
}

// windowsX86Features is the C++ Windows client's feature list
// (client/hostinfo_win.cpp get_processor_features), in its order and with
// its names, which are Linux's except htt (Linux ht), movebe (movbe),
// page1gb (pdpe1gb), topx (topoext) and cvt16. The list is the 8.x
// client's: 7.20's plus pclmulqdq and the AVX-512/GFNI/VAES bits, all
// added in their 8.x positions, so hosts with those units match projects'
// avx512 plan classes as they do under a current client.
var windowsX86Features = []x86Feature{
	{groupStd, 1, regEDX, 0, "fpu"},
	{groupStd, 1, regEDX, 1, "vme"},
	{groupStd, 1, regEDX, 2, "de"},
	{groupStd, 1, regEDX, 3, "pse"},
	{groupStd, 1, regEDX, 4, "tsc"},
	{groupStd, 1, regEDX, 5, "msr"},
	{groupStd, 1, regEDX, 6, "pae"},
	{groupStd, 1, regEDX, 7, "mce"},
	{groupStd, 1, regEDX, 8, "cx8"},
	{groupStd, 1, regEDX, 9, "apic"},
	{groupStd, 1, regEDX, 11, "sep"},
	{groupStd, 1, regEDX, 12, "mtrr"},
	{groupStd, 1, regEDX, 13, "pge"},
	{groupStd, 1, regEDX, 14, "mca"},
	{groupStd, 1, regEDX, 15, "cmov"},
	{groupStd, 1, regEDX, 16, "pat"},
	{groupStd, 1, regEDX, 17, "pse36"},
	{groupStd, 1, regEDX, 18, "psn"},
	{groupStd, 1, regEDX, 19, "clflush"},
	{groupStd, 1, regEDX, 21, "dts"},
	{groupStd, 1, regEDX, 22, "acpi"},
	{groupStd, 1, regEDX, 23, "mmx"},
	{groupStd, 1, regEDX, 24, "fxsr"},
	{groupStd, 1, regEDX, 25, "sse"},
	{groupStd, 1, regEDX, 26, "sse2"},
	{groupStd, 1, regEDX, 27, "ss"},
	{groupStd, 1, regEDX, 28, "htt"},
	{groupStd, 1, regEDX, 29, "tm"},

	{groupStd, 1, regECX, 0, "pni"},
	{groupStd, 1, regECX, 1, "pclmulqdq"},
	{groupStd, 1, regECX, 9, "ssse3"},
	{groupStd, 1, regECX, 12, "fma"},
	{groupStd, 1, regECX, 13, "cx16"},
	{groupStd, 1, regECX, 19, "sse4_1"},
	{groupStd, 1, regECX, 20, "sse4_2"},
	{groupStd, 1, regECX, 22, "movebe"},
	{groupStd, 1, regECX, 23, "popcnt"},
	{groupStd, 1, regECX, 25, "aes"},
	{groupStd, 1, regECX, 29, "f16c"},
	// The C++ client appends "rdrand" without the trailing space every
	// other name has, so a CPU with RDRAND and SYSCALL reports
	// "rdrandsyscall" and plan classes match neither; we keep the space.
	{groupStd, 1, regECX, 30, "rdrand"},

	{groupExt, 0x80000001, regEDX, 11, "syscall"},
	{groupExt, 0x80000001, regEDX, 20, "nx"},
	{groupExt, 0x80000001, regEDX, 29, "lm"},

	{groupAVX, 1, regECX, 28, "avx"},

	{groupAVXLeaf7, 7, regEBX, 5, "avx2"},
	{groupAVXLeaf7, 7, regEBX, 16, "avx512f"},
	{groupAVXLeaf7, 7, regEBX, 17, "avx512dq"},
	{groupAVXLeaf7, 7, regEBX, 19, "adx"},
	{groupAVXLeaf7, 7, regEBX, 21, "avx512ifma"},
	{groupAVXLeaf7, 7, regEBX, 26, "avx512pf"},
	{groupAVXLeaf7, 7, regEBX, 27, "avx512er"},
	{groupAVXLeaf7, 7, regEBX, 28, "avx512cd"},
	{groupAVXLeaf7, 7, regEBX, 30, "avx512bw"},
	{groupAVXLeaf7, 7, regEBX, 31, "avx512vl"},
	{groupAVXLeaf7, 7, regECX, 1, "avx512vbmi"},
	{groupAVXLeaf7, 7, regECX, 6, "avx512_vbmi2"},
	{groupAVXLeaf7, 7, regECX, 8, "gfni"},
	{groupAVXLeaf7, 7, regECX, 9, "vaes"},
	{groupAVXLeaf7, 7, regECX, 10, "vpclmulqdq"},
	{groupAVXLeaf7, 7, regECX, 11, "avx512_vnni"},
	{groupAVXLeaf7, 7, regECX, 12, "avx512_bitalg"},
	{groupAVXLeaf7, 7, regECX, 14, "avx512_vpopcntdq"},

	{groupIntel, 1, regECX, 5, "vmx"},
	{groupIntel, 1, regECX, 6, "smx"},
	{groupIntel, 1, regECX, 8, "tm2"},
	{groupIntel, 1, regECX, 18, "dca"},
	{groupIntel, 1, regEDX, 31, "pbe"},

	{groupAMD, 0x80000001, regECX, 2, "svm"},
	{groupAMD, 0x80000001, regECX, 6, "sse4a"},
	{groupAMD, 0x80000001, regECX, 9, "osvw"},
	{groupAMD, 0x80000001, regECX, 10, "ibs"},
	{groupAMD, 0x80000001, regECX, 11, "xop"},
	{groupAMD, 0x80000001, regECX, 12, "skinit"},
	{groupAMD, 0x80000001, regECX, 13, "wdt"},
	{groupAMD, 0x80000001, regECX, 15, "lwp"},
	{groupAMD, 0x80000001, regECX, 16, "fma4"},
	{groupAMD, 0x80000001, regECX, 17, "tce"},
	{groupAMD, 0x80000001, regECX, 18, "cvt16"},
	{groupAMD, 0x80000001, regECX, 21, "tbm"},
	{groupAMD, 0x80000001, regECX, 22, "topx"},
	{groupAMD, 0x80000001, regEDX, 26, "page1gb"},
	{groupAMD, 0x80000001, regEDX, 27, "rdtscp"},
	{groupAMD, 0x80000001, regEDX, 30, "3dnowext"},
	{groupAMD, 0x80000001, regEDX, 31, "3dnow"},

	{groupLeaf7, 7, regEBX, 0, "fsgsbase"},
	{groupLeaf7, 7, regEBX, 3, "bmi1"},
	{groupLeaf7, 7, regEBX, 4, "hle"},
	{groupLeaf7, 7, regEBX, 7, "smep"},
	{groupLeaf7, 7, regEBX, 8, "bmi2"},
}

// x86CPUID describes an x86 processor from CPUID as the C++ Windows
// client does (client/hostinfo_win.cpp get_processor_info):
//
//   - p_vendor: the 12-byte vendor string of leaf 0 (get_processor_vendor);
//   - p_model: the brand string of leaves 0x80000002-4, non-printing bytes
//     turned into spaces (get_processor_name), then " [Family F Model M
//     Stepping S]" from leaf 1 with get_processor_version's arithmetic;
//   - m_cache: the L2 size of leaf 0x80000006 (get_processor_cache);
//   - p_features: windowsX86Features (get_processor_features).
//
// xgetbv reads XCR0; it is called only when CPUID says the OS enabled
// XSAVE, as is_avx_supported does.
func x86CPUID(cpuid cpuidFunc, xgetbv func() uint64) cpuInfo {
	var ci cpuInfo
	maxStd, vb, vc, vd := cpuid(0, 0)
	ci.vendor = bytesToCString(regBytes(vb, vd, vc))

	var leaf1 [4]uint32 // eax ebx ecx edx
	var family, model, stepping uint32
	if maxStd >= 1 {
		leaf1[0], leaf1[1], leaf1[2], leaf1[3] = cpuid(1, 0)
		a := leaf1[0]
		family = ((a >> 8) + (a >> 20)) & 0xff
		model = ((((a >> 16) & 0xf) << 4) + ((a >> 4) & 0xf)) & 0xff
		stepping = a & 0xf
	}
	var leaf7 [4]uint32
	if maxStd >= 7 {
		leaf7[0], leaf7[1], leaf7[2], leaf7[3] = cpuid(7, 0)
	}
	maxExt, _, _, _ := cpuid(0x80000000, 0)
	var ext1 [4]uint32
	if maxExt >= 0x80000001 {
		ext1[0], ext1[1], ext1[2], ext1[3] = cpuid(0x80000001, 0)
	}

	var brand string
	if maxExt >= 0x80000004 {
		var raw []byte
		for leaf := uint32(0x80000002); leaf <= 0x80000004; leaf++ {
			a, b, c, d := cpuid(leaf, 0)
			raw = append(raw, regBytes(a, b, c, d)...)
		}
		brand = bytesToCString(raw)
		brand = strings.Map(func(r rune) rune {
			if r < 0x20 || r > 0x7e {
				return ' '
			}
			return r
		}, brand)
	}
	ci.model = fmt.Sprintf("%s [Family %d Model %d Stepping %d]", brand, family, model, stepping)

	if maxExt >= 0x80000006 {
		_, _, c, _ := cpuid(0x80000006, 0)
		ci.cache = float64((c>>16)&0xffff) * 1024
	}

	// is_avx_supported: OSXSAVE and AVX in leaf 1 ECX, and XCR0 saving
	// SSE or AVX state.
	avx := false
	if maxStd >= 1 && leaf1[2]&(1<<27) != 0 && leaf1[2]&(1<<28) != 0 && xgetbv != nil {
		avx = xgetbv()&0x6 != 0
	}
	intel := ci.vendor == "GenuineIntel"
	amd := ci.vendor == "AuthenticAMD" || ci.vendor == "HygonGenuine"
	regs := func(leaf uint32) [4]uint32 {
		switch leaf {
		case 1:
			return leaf1
		case 7:
			return leaf7
		}
		return ext1
	}
	var names []string
	for _, f := range windowsX86Features {
		var on bool
		switch f.group {
		case groupStd:
			on = maxStd >= 1
		case groupExt:
			on = maxExt >= 0x80000001
		case groupAVX:
			on = maxStd >= 1 && avx
		case groupAVXLeaf7:
			on = maxStd >= 7 && avx
		case groupIntel:
			on = maxStd >= 1 && intel
		case groupAMD:
			on = maxExt >= 0x80000001 && amd
		case groupLeaf7:
			on = maxStd >= 7
		}
		if !on {
			continue
		}
		r := regs(f.leaf)
		var v uint32
		switch f.reg {
		case regEBX:
			v = r[1]
		case regECX:
			v = r[2]
		case regEDX:
			v = r[3]
		}
		if v&(1<<f.bit) != 0 {
			names = append(names, f.name)
		}
	}
	ci.features = strings.Join(names, " ")
	return ci
}

// x86ThreadsPerCore is the SMT width from CPUID leaf 0xB (extended
// topology), level 0 being the SMT level; 0 when the CPU does not say.
func x86ThreadsPerCore(cpuid cpuidFunc) int {
	maxStd, _, _, _ := cpuid(0, 0)
	if maxStd < 0xb {
		return 0
	}
	_, b, c, _ := cpuid(0xb, 0)
	if (c>>8)&0xff != 1 { // level type 1: SMT
		return 0
	}
	return int(b & 0xffff)
}

// regBytes lays registers out in memory order, as the C++ client's
// *((int*)(name + n)) = reg stores do on little-endian x86.
func regBytes(regs ...uint32) []byte {
	b := make([]byte, 0, 4*len(regs))
	for _, r := range regs {
		b = binary.LittleEndian.AppendUint32(b, r)
	}
	return b
}

// bytesToCString is b up to its first NUL.
func bytesToCString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
