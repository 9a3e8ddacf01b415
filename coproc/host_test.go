package coproc

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

func TestProbeHost(t *testing.T) {
	h, x, warns := ProbeHostExtra(context.Background(), t.TempDir())
	for _, w := range warns {
		t.Log("warning:", w)
	}
	if h.PNCPUs < 1 || h.MNBytes <= 0 || h.DTotal <= 0 || h.DFree <= 0 || h.OSName == "" {
		t.Fatalf("host = %+v", h)
	}
	if x.LogicalCPUs < 1 || x.Arch != runtime.GOARCH {
		t.Fatalf("extra = %+v", x)
	}
	if runtime.GOOS == "linux" {
		if !strings.HasPrefix(h.OSName, "Linux") || !strings.Contains(h.OSVersion, x.Kernel) || x.Kernel == "" {
			t.Fatalf("os_name %q os_version %q kernel %q", h.OSName, h.OSVersion, x.Kernel)
		}
		if h.PModel == "" || h.PFeatures == "" {
			t.Fatalf("p_model %q p_features %q", h.PModel, h.PFeatures)
		}
		// p_features is the first flags line of /proc/cpuinfo verbatim.
		b, err := os.ReadFile("/proc/cpuinfo")
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(b)) {
			k, v, _ := strings.Cut(line, ":")
			if k = strings.TrimSpace(k); k == "flags" || k == "Features" {
				if want := capFeatures(strings.Join(strings.Fields(v), " ")); h.PFeatures != want {
					t.Fatalf("p_features = %q, want %q", h.PFeatures, want)
				}
				break
			}
		}
	}
	h2, _ := ProbeHost(context.Background(), t.TempDir())
	if h2.PModel != h.PModel || h2.PNCPUs != h.PNCPUs {
		t.Fatalf("ProbeHost and ProbeHostExtra disagree: %+v vs %+v", h2, h)
	}
}

// fixtureFlags is the flags line of the CPU in the BOINC 7.20 captures
// (scheduler/01_request_first_contact.xml).
const fixtureFlags = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b fsrm serialize tsxldtrk avx512_fp16 arch_capabilities"

// fixtureCPUInfo is /proc/cpuinfo of the captured host (two identical
// processors; the second must not override the first).
const fixtureCPUInfo = `processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 207
model name	: Intel(R) Xeon(R) Processor
stepping	: 2
microcode	: 0x1
cpu MHz		: 2100.000
cache size	: 266240 KB
physical id	: 0
siblings	: 2
core id		: 0
cpu cores	: 2
fpu		: yes
flags		: ` + fixtureFlags + `
bugs		: spectre_v1 spectre_v2
bogomips	: 4200.00

processor	: 1
vendor_id	: GenuineIntel
cpu family	: 7
model		: 1
model name	: Other
stepping	: 9
cache size	: 1 KB
flags		: fpu
`

const arm64CPUInfo = `processor	: 0
BogoMIPS	: 108.00
Features	: fp asimd evtstrm crc32 cpuid
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x0
CPU part	: 0xd08
CPU revision	: 3

processor	: 1
BogoMIPS	: 108.00
Features	: fp asimd evtstrm crc32 cpuid
CPU implementer	: 0x41
CPU architecture: 8
CPU variant	: 0x0
CPU part	: 0xd08
CPU revision	: 3
`

const arm32CPUInfo = `processor	: 0
model name	: ARMv7 Processor rev 4 (v7l)
BogoMIPS	: 38.40
Features	: half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32
CPU implementer	: 0x41
CPU architecture: 7
CPU variant	: 0x0
CPU part	: 0xd03
CPU revision	: 4

Hardware	: BCM2835
Revision	: a02082
`

func TestParseCPUInfo(t *testing.T) {
	long := strings.Repeat("flagname ", 200) // 1800 bytes
	tests := []struct {
		name, in string
		arm      bool
		want     cpuInfo
		wantErr  bool
	}{
		{
			name: "x86 as in the BOINC 7.20 capture",
			in:   fixtureCPUInfo,
			want: cpuInfo{
				vendor:   "GenuineIntel",
				model:    "Intel(R) Xeon(R) Processor [Family 6 Model 207 Stepping 2]",
				features: fixtureFlags,
				cache:    272629760,
			},
		},
		{
			name: "arm64",
			in:   arm64CPUInfo,
			arm:  true,
			want: cpuInfo{
				vendor:   "ARM",
				model:    "[Impl 0x41 Arch 8 Variant 0x0 Part 0xd08 Rev 3]",
				features: "fp asimd evtstrm crc32 cpuid",
				cache:    -1,
			},
		},
		{
			name: "arm32 Raspberry Pi",
			in:   arm32CPUInfo,
			arm:  true,
			want: cpuInfo{
				vendor:   "ARM",
				model:    "ARMv7 Processor rev 4 (v7l) [Impl 0x41 Arch 7 Variant 0x0 Part 0xd03 Rev 4]",
				features: "half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32",
				cache:    -1,
				product:  "BCM2835",
			},
		},
		{
			name: "family without stepping",
			in:   "vendor_id : X\ncpu family : 6\nmodel : 1\nmodel name : Y\n",
			want: cpuInfo{vendor: "X", model: "Y [Family 6 Model 1 ]", cache: -1},
		},
		{
			name: "model name with a colon",
			in:   "model name\t: CPU: fast\n",
			want: cpuInfo{model: "CPU: fast", cache: -1},
		},
		{
			name: "flags over 1023 bytes are cut at a flag boundary",
			in:   "flags\t\t: " + long + "\n",
			want: cpuInfo{features: strings.TrimSpace(strings.Repeat("flagname ", 113)), cache: -1},
		},
		{
			name: "x86 rules ignore ARM lines",
			in:   arm32CPUInfo,
			want: cpuInfo{features: "half thumb fastmult vfp edsp neon vfpv3 tls vfpv4 idiva idivt vfpd32 lpae evtstrm crc32", model: "ARMv7 Processor rev 4 (v7l)", cache: -1},
		},
		{
			name: "ARM rules ignore vendor_id",
			in:   "vendor_id\t: GenuineIntel\nCPU implementer\t: 0x61\nCPU part\t: 0x22\n",
			arm:  true,
			want: cpuInfo{vendor: "ARM", model: "[Impl 0x61 Part 0x22 ]", cache: -1},
		},
		{name: "empty", in: "", wantErr: true},
		{name: "empty ARM", in: "", arm: true, wantErr: true},
		{name: "garbage", in: "\x00\x01 no colons here\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseCPUInfo(strings.NewReader(tt.in), tt.arm)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if got != tt.want {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if len(got.features) > maxFeatures {
				t.Fatalf("features %d bytes", len(got.features))
			}
		})
	}
}

func TestLinuxOSNames(t *testing.T) {
	debian := "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\nVERSION=\"12 (bookworm)\"\nVERSION_CODENAME=bookworm\nID=debian\n"
	ubuntuOS := "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nNAME=\"Ubuntu\"\nID=ubuntu\n"
	ubuntuLSB := "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=24.04\nDISTRIB_DESCRIPTION=\"Ubuntu 24.04.1 LTS\"\n"
	tests := []struct {
		name, osRelease, lsb, kernel, libc string
		wantName, wantVersion              string
	}{
		{"Debian as in the capture", debian, "", "6.18.44-fc-v669", "2.36",
			"Linux Debian", "Debian GNU/Linux 12 (bookworm) [6.18.44-fc-v669|libc 2.36]"},
		{"Ubuntu with lsb-release", ubuntuOS, ubuntuLSB, "6.8.0-45-generic", "2.39",
			"Linux Ubuntu", "Ubuntu 24.04.1 LTS [6.8.0-45-generic|libc 2.39]"},
		{"Mint names itself through lsb-release", "NAME=\"Linux Mint\"\nID=linuxmint\nPRETTY_NAME=\"Linux Mint 22\"\n", "DISTRIB_ID=LinuxMint\n", "6.8.0", "2.39",
			"Linux LinuxMint", "Linux Mint 22 [6.8.0|libc 2.39]"},
		{"NAME starting with Linux falls back to ID", "NAME=\"Linux Mint\"\nID=linuxmint\n", "", "6.8.0", "",
			"Linux Linuxmint", "Linux Mint [6.8.0]"},
		{"musl: no libc part", "NAME=\"Alpine Linux\"\nID=alpine\nPRETTY_NAME=\"Alpine Linux v3.20\"\n", "", "6.6.1", "",
			"Linux Alpine", "Alpine Linux v3.20 [6.6.1]"},
		{"no os-release at all", "", "", "6.1.0", "2.36", "Linux", "6.1.0|libc 2.36"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, v := linuxOSNames(parseEnvFile([]byte(tt.osRelease)), parseEnvFile([]byte(tt.lsb)), tt.kernel, tt.libc)
			if n != tt.wantName || v != tt.wantVersion {
				t.Fatalf("got (%q, %q), want (%q, %q)", n, v, tt.wantName, tt.wantVersion)
			}
		})
	}
}

func TestParseEnvFile(t *testing.T) {
	m := parseEnvFile([]byte("# comment\nA=\"quoted \\\"x\\\"\"\nB='single'\nC=plain\nnot a pair\n"))
	want := map[string]string{"A": `quoted "x"`, "B": "single", "C": "plain"}
	if len(m) != len(want) {
		t.Fatalf("got %v", m)
	}
	for k, v := range want {
		if m[k] != v {
			t.Fatalf("%s = %q, want %q", k, m[k], v)
		}
	}
}

func TestHasFeature(t *testing.T) {
	tests := []struct {
		features, name string
		want           bool
	}{
		{fixtureFlags, "avx512f", true},
		{fixtureFlags, "avx512", false},
		{fixtureFlags, "sse2", true},
		{fixtureFlags, "neon", false},
		{"fp asimd evtstrm", "neon", true},
		{"half thumb neon vfp", "neon", true},
		{"", "sse2", false},
	}
	for _, tt := range tests {
		if got := HasFeature(tt.features, tt.name); got != tt.want {
			t.Errorf("HasFeature(%.20q, %q) = %v", tt.features, tt.name, got)
		}
	}
}

func TestGlibcVersion(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("glibc only on Linux")
	}
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	if err != nil {
		t.Skipf("no glibc getconf here: %v", err)
	}
	v := glibcVersion(context.Background())
	if !regexp.MustCompile(`^\d+\.\d+`).MatchString(v) || !strings.Contains(string(out), v) {
		t.Fatalf("libc version %q from %q", v, out)
	}
}
