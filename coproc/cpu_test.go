package coproc

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// firstValue is the first "key : value" of /proc/cpuinfo text.
func firstValue(text, key string) string {
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func TestParseCPUInfoFixtures(t *testing.T) {
	epyc, err := os.ReadFile(filepath.Join("testdata", "cpuinfo", "amd-epyc-kvm.txt"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		file string
		arm  bool
		want cpuInfo
	}{
		{
			// What BOINC 7.20.5 reported on the VM the file was
			// captured on (testdata/cpuinfo/README.md).
			file: "amd-epyc-kvm.txt",
			want: cpuInfo{
				vendor:   "AuthenticAMD",
				model:    "AMD EPYC [Family 26 Model 2 Stepping 1]",
				features: firstValue(string(epyc), "flags"),
				cache:    1048576,
			},
		},
		{
			// The downstream kernel's "Hardware" line is the only model
			// text an arm64 kernel gives.
			file: "rpi4-arm64.txt", arm: true,
			want: cpuInfo{
				vendor:   "ARM",
				model:    "BCM2835 [Impl 0x41 Arch 8 Variant 0x0 Part 0xd08 Rev 3]",
				features: "fp asimd evtstrm crc32 cpuid",
				cache:    -1,
				product:  "BCM2835",
			},
		},
		{
			file: "rpi5-arm64.txt", arm: true,
			want: cpuInfo{
				vendor:   "ARM",
				model:    "[Impl 0x41 Arch 8 Variant 0x4 Part 0xd0b Rev 1]",
				features: "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp",
				cache:    -1,
			},
		},
		{
			file: "rpi4-armv7l.txt", arm: true,
			want: cpuInfo{
				vendor:   "ARM",
				model:    "ARMv7 Processor rev 3 (v7l) [Impl 0x41 Arch 7 Variant 0x0 Part 0xd08 Rev 3]",
				features: "half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32",
				cache:    -1,
				product:  "BCM2711",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", "cpuinfo", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			got, err := parseCPUInfo(f, tt.arm)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestProbeCPUMatchesProcCPUInfo: on Linux the probe's vendor, model and
// features are /proc/cpuinfo's fields as parse_cpuinfo_linux combines
// them.
func TestProbeCPUMatchesProcCPUInfo(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/cpuinfo is Linux's")
	}
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Skip(err)
	}
	text := string(b)
	ci, err := probeCPU(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	flags := firstValue(text, "flags")
	if flags == "" {
		flags = firstValue(text, "Features")
	}
	if want := capFeatures(strings.Join(strings.Fields(flags), " ")); ci.features != want {
		t.Errorf("p_features = %q, want %q", ci.features, want)
	}
	switch runtime.GOARCH {
	case "amd64", "386":
		if want := firstValue(text, "vendor_id"); ci.vendor != want {
			t.Errorf("p_vendor = %q, want %q", ci.vendor, want)
		}
		name := firstValue(text, "model name")
		if !strings.HasPrefix(ci.model, name+" [Family "+firstValue(text, "cpu family")+" Model "+firstValue(text, "model")+" Stepping ") {
			t.Errorf("p_model = %q, /proc/cpuinfo model name %q", ci.model, name)
		}
	case "arm", "arm64":
		if ci.vendor != "ARM" || !strings.Contains(ci.model, "[Impl "+firstValue(text, "CPU implementer")) {
			t.Errorf("p_vendor %q p_model %q", ci.vendor, ci.model)
		}
	}
}

// fakeCPUID answers CPUID from recorded registers (eax, ebx, ecx, edx per
// leaf, subleaf 0); absent leaves read as zeros, as past-the-maximum
// leaves do on real CPUs closely enough for these tests.
func fakeCPUID(regs map[uint32][4]uint32) cpuidFunc {
	return func(leaf, _ uint32) (a, b, c, d uint32) {
		r := regs[leaf]
		return r[0], r[1], r[2], r[3]
	}
}

// strRegs packs text into little-endian registers, as CPUID returns the
// vendor and brand strings.
func strRegs(s string, n int) []uint32 {
	b := make([]byte, 4*n)
	copy(b, s)
	r := make([]uint32, n)
	for i := range r {
		r[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return r
}

func bits(n ...uint) uint32 {
	var v uint32
	for _, b := range n {
		v |= 1 << b
	}
	return v
}

// epycKVM is CPUID on the development VM (AMD EPYC, family 0x1A, under
// KVM), read with cpuidRaw; XCR0 was 0xe7.
var epycKVM = map[uint32][4]uint32{
	0x0:        {0x0000001c, 0x68747541, 0x444d4163, 0x69746e65},
	0x1:        {0x00b00f21, 0x01020800, 0xfffa3203, 0x178bfbff},
	0x7:        {0x00000001, 0xf1bf07ab, 0x00405fc6, 0x00000110},
	0xb:        {0x00000000, 0x00000001, 0x00000100, 0x00000001},
	0x80000000: {0x80000021, 0x68747541, 0x444d4163, 0x69746e65},
	0x80000001: {0x00b00f21, 0x40000000, 0x004003f3, 0x2fd3fbff},
	0x80000002: {0x20444d41, 0x43595045, 0x00000000, 0x00000000},
	0x80000006: {0x40802040, 0x60804040, 0x04008140, 0x0c009140},
}

func intelRegs() map[uint32][4]uint32 {
	v := strRegs("GenuineIntel", 3) // ebx edx ecx order below
	brand := strRegs("       Intel(R) Core(TM) i7-8700K\x01CPU @ 3.70GHz", 12)
	m := map[uint32][4]uint32{
		0: {0xd, v[0], v[2], v[1]},
		// family 6, model 0x9E (158), stepping 10
		1: {0x000906ea, 0,
			bits(0, 5, 27, 28, 30), // pni vmx osxsave avx rdrand
			bits(0, 26, 31)},       // fpu sse2 pbe
		7:          {0, bits(3, 5), 0, 0},                      // bmi1 avx2
		0x80000000: {0x80000008, 0, 0, 0},                      //
		0x80000001: {0, 0, bits(2), bits(11, 29)},              // svm (AMD only) syscall lm
		0x80000006: {0, 0, 0x01006040, 0},                      // 256 KB L2
		0x80000002: {brand[0], brand[1], brand[2], brand[3]},   //
		0x80000003: {brand[4], brand[5], brand[6], brand[7]},   //
		0x80000004: {brand[8], brand[9], brand[10], brand[11]}, //
	}
	return m
}

func TestX86CPUID(t *testing.T) {
	hygon := intelRegs()
	hv := strRegs("HygonGenuine", 3)
	hygon[0] = [4]uint32{0xd, hv[0], hv[2], hv[1]}
	ancient := map[uint32][4]uint32{0: {0, 0x756e6547, 0x6c65746e, 0x49656e69}}
	tests := []struct {
		name string
		regs map[uint32][4]uint32
		xcr0 uint64
		want cpuInfo
	}{
		{
			name: "AMD EPYC under KVM (this development VM)",
			regs: epycKVM, xcr0: 0xe7,
			want: cpuInfo{
				vendor: "AuthenticAMD",
				model:  "AMD EPYC [Family 26 Model 2 Stepping 1]",
				features: "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 htt " +
					"pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 movebe popcnt aes f16c rdrand syscall nx lm avx " +
					"avx2 avx512f avx512dq adx avx512ifma avx512cd avx512bw avx512vl avx512vbmi avx512_vbmi2 gfni vaes vpclmulqdq " +
					"avx512_vnni avx512_bitalg avx512_vpopcntdq sse4a osvw topx page1gb rdtscp fsgsbase bmi1 smep bmi2",
				cache: 1048576,
			},
		},
		{
			name: "Intel: rdrand keeps its space, AMD-only bits ignored, Intel-only kept",
			regs: intelRegs(), xcr0: 0x7,
			want: cpuInfo{
				vendor:   "GenuineIntel",
				model:    "Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz [Family 6 Model 158 Stepping 10]",
				features: "fpu sse2 pni rdrand syscall lm avx avx2 vmx pbe bmi1",
				cache:    262144,
			},
		},
		{
			name: "AVX the OS does not save is not reported",
			regs: intelRegs(), xcr0: 0x1,
			want: cpuInfo{
				vendor:   "GenuineIntel",
				model:    "Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz [Family 6 Model 158 Stepping 10]",
				features: "fpu sse2 pni rdrand syscall lm vmx pbe bmi1",
				cache:    262144,
			},
		},
		{
			name: "Hygon gets the AMD bits",
			regs: hygon, xcr0: 0x7,
			want: cpuInfo{
				vendor:   "HygonGenuine",
				model:    "Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz [Family 6 Model 158 Stepping 10]",
				features: "fpu sse2 pni rdrand syscall lm avx avx2 svm bmi1",
				cache:    262144,
			},
		},
		{
			name: "no leaf 1 and no extended leaves",
			regs: ancient,
			want: cpuInfo{vendor: "GenuineIntel", model: "[Family 0 Model 0 Stepping 0]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			xgetbvCalls := 0
			got := x86CPUID(fakeCPUID(tt.regs), func() uint64 { xgetbvCalls++; return tt.xcr0 })
			got.vendor = strings.TrimSpace(collapseWhitespace(got.vendor))
			got.model = strings.TrimSpace(collapseWhitespace(got.model))
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if tt.regs[1][2]&(1<<27) == 0 && xgetbvCalls > 0 {
				t.Fatal("XGETBV run without OSXSAVE")
			}
		})
	}
}

func TestX86ThreadsPerCore(t *testing.T) {
	if got := x86ThreadsPerCore(fakeCPUID(epycKVM)); got != 1 {
		t.Errorf("EPYC VM: %d threads per core", got)
	}
	smt := map[uint32][4]uint32{0: {0x16}, 0xb: {1, 2, 0x100, 0}}
	if got := x86ThreadsPerCore(fakeCPUID(smt)); got != 2 {
		t.Errorf("SMT2: %d", got)
	}
	if got := x86ThreadsPerCore(fakeCPUID(map[uint32][4]uint32{0: {0x7}})); got != 0 {
		t.Errorf("no leaf 0xb: %d", got)
	}
}

// macSysctls is a fake sysctl table; names not in it are absent.
func macSysctls(m map[string]any) sysctls {
	return sysctls{
		str: func(name string) (string, error) {
			if v, ok := m[name].(string); ok {
				return v, nil
			}
			return "", errors.New("no such sysctl")
		},
		num: func(name string) (int64, error) {
			if v, ok := m[name].(int); ok {
				return int64(v), nil
			}
			return 0, errors.New("no such sysctl")
		},
	}
}

// The sysctl values are typed from public listings of `sysctl machdep.cpu
// hw.optional hw.model` on such Macs, not captured.
func TestMacCPU(t *testing.T) {
	intelMac := map[string]any{
		"machdep.cpu.brand_string": "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz",
		"machdep.cpu.vendor":       "GenuineIntel",
		"machdep.cpu.family":       6,
		"machdep.cpu.model":        158,
		"machdep.cpu.stepping":     13,
		"machdep.cpu.features":     "FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MTRR PGE MCA CMOV PAT PSE36 CLFSH DS ACPI MMX FXSR SSE SSE2 SS HTT TM PBE SSE3 PCLMULQDQ DTES64 MON DSCPL VMX SMX EST TM2 SSSE3 FMA CX16 TPR PDCM SSE4.1 SSE4.2 x2APIC MOVBE POPCNT AES PCID XSAVE OSXSAVE SEGLIM64 TSCTMR AVX1.0 RDRAND F16C",
		"hw.model":                 "MacBookPro16,1",
	}
	m1 := map[string]any{
		"machdep.cpu.brand_string":     "Apple M1",
		"hw.model":                     "MacBookAir10,1",
		"hw.optional.amx_version":      2,
		"hw.optional.arm64":            1,
		"hw.optional.armv8_1_atomics":  1,
		"hw.optional.armv8_2_fhm":      1,
		"hw.optional.armv8_2_sha3":     1,
		"hw.optional.armv8_2_sha512":   1,
		"hw.optional.armv8_crc32":      1,
		"hw.optional.floatingpoint":    1,
		"hw.optional.neon":             1,
		"hw.optional.neon_fp16":        1,
		"hw.optional.neon_hpfp":        1,
		"hw.optional.ucnormal_mem":     1,
		"machdep.cpu.features":         "ignored on arm64",
		"hw.optional.armv8_2_sha3_bad": 1,
	}
	sparse := map[string]any{"machdep.cpu.brand_string": "Apple M4", "hw.optional.neon": 1, "hw.optional.arm64": 1, "hw.optional.floatingpoint": 0}
	tests := []struct {
		name string
		m    map[string]any
		x86  bool
		want cpuInfo
	}{
		{"Intel Mac", intelMac, true, cpuInfo{
			vendor: "GenuineIntel",
			model:  "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz [x86 Family 6 Model 158 Stepping 13]",
			features: "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clfsh ds acpi mmx fxsr sse sse2 ss htt tm pbe " +
				"pni pclmulqdq dtes64 mon dscpl vmx smx est tm2 ssse3 fma cx16 tpr pdcm sse4_1 sse4_2 x2apic movbe popcnt aes pcid xsave osxsave seglim64 tsctmr avx rdrand f16c",
			product: "MacBookPro16,1",
		}},
		{"x86 build under Rosetta", map[string]any{"machdep.cpu.brand_string": "Apple M1", "machdep.cpu.vendor": "GenuineIntel", "machdep.cpu.features": "FPU SSE SSE2 SSE3 SSE4.1 SSE4.2"}, true, cpuInfo{
			vendor: "Apple", model: "Apple M1", features: "fpu sse sse2 pni sse4_1 sse4_2",
		}},
		{"Apple M1", m1, false, cpuInfo{
			vendor: "Apple", model: "Apple M1",
			features: "amx_version_2 arm64 armv8_1_atomics armv8_2_fhm armv8_2_sha3 armv8_2_sha512 armv8_crc32 floatingpoint neon neon_fp16 neon_hpfp ucnormal_mem",
			product:  "MacBookAir10,1",
		}},
		{"arm64 with sysctls missing", sparse, false, cpuInfo{
			vendor: "Apple", model: "Apple M4", features: "amx_version_0 arm64 neon",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := macCPU(macSysctls(tt.m), tt.x86); got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// The registry strings are typed after a Snapdragon 8cx laptop's, not
// captured.
func TestWindowsARMCPU(t *testing.T) {
	reg := map[string]string{
		"VendorIdentifier":    "Qualcomm Technologies Inc",
		"ProcessorNameString": "Snapdragon (TM) 8cx @ 2.84 GHz",
		"Identifier":          "ARMv8 (64-bit) Family 8 Model D4B Revision   E",
	}
	present := map[uint32]bool{pfARMNeon: true, pfARMDivide: true, pfARMV8: true, pfARMV8Crypto: true, pfARMV8CRC32: true, pfARMV81Atomic: true}
	got := windowsARMCPU(func(n string) string { return reg[n] }, func(pf uint32) bool { return present[pf] })
	got.model = collapseWhitespace(got.model)
	want := cpuInfo{
		vendor:   "Qualcomm Technologies Inc",
		model:    "Snapdragon (TM) 8cx @ 2.84 GHz [ARMv8 (64-bit) Family 8 Model D4B Revision E]",
		features: "neon divide v8 crypto crc32 atomic",
	}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestCountProcessorCores(t *testing.T) {
	rec := func(rel, size uint32) []byte {
		b := make([]byte, size)
		binary.LittleEndian.PutUint32(b, rel)
		binary.LittleEndian.PutUint32(b[4:], size)
		return b
	}
	var four []byte
	for range 4 {
		four = append(four, rec(relationProcessorCore, 48)...)
	}
	tests := []struct {
		name    string
		buf     []byte
		want    int
		wantErr bool
	}{
		{"four cores", four, 4, false},
		{"other relations skipped", append(rec(2, 32), rec(0, 48)...), 1, false},
		{"empty", nil, 0, false},
		{"record past the end", rec(0, 48)[:40], 0, true},
		{"header-only record", rec(0, 8), 1, false},
		{"size below header", append(rec(0, 48), 0, 0, 0, 0, 4, 0, 0, 0), 0, true},
		{"stray bytes", append(rec(0, 48), 1, 2, 3), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := countProcessorCores(tt.buf)
			if (err != nil) != tt.wantErr || (!tt.wantErr && got != tt.want) {
				t.Fatalf("got %d, %v; want %d, err %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
