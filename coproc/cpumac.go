package coproc

import (
	"fmt"
	"strings"
)

// sysctls reads macOS sysctl values by name; the darwin build passes
// golang.org/x/sys/unix, tests a map. An error means the name is absent.
type sysctls struct {
	str func(name string) (string, error)
	num func(name string) (int64, error)
}

// macARMFeatures are the hw.optional sysctls get_cpu_info_mac reports on
// Apple silicon, in its order (after "amx_version_N").
var macARMFeatures = []string{
	"arm64", "armv8_1_atomics", "armv8_2_fhm", "armv8_2_sha3", "armv8_2_sha512",
	"armv8_crc32", "floatingpoint", "neon", "neon_fp16", "neon_hpfp", "ucnormal_mem",
}

// macCPU follows client/hostinfo_unix.cpp get_cpu_info_mac. On x86 (a
// native Intel build, or an x86 build under Rosetta) p_vendor is
// machdep.cpu.vendor and p_model "BRAND [x86 Family F Model M Stepping
// S]" ("Apple" and the bare brand under Rosetta, whose brand starts
// "Apple M"), with p_features machdep.cpu.features; on arm64 p_vendor is
// "Apple", p_model the brand and p_features the hw.optional flags. The
// features are then lower-cased and avx1.0, sse3, sse4.1 and sse4.2
// renamed to Linux's avx, pni, sse4_1 and sse4_2; product_name is
// hw.model. m_cache is left 0, as the C++ client leaves it.
func macCPU(s sysctls, x86 bool) cpuInfo {
	var ci cpuInfo
	str := func(name string) string {
		v, _ := s.str(name)
		return strings.TrimRight(v, "\x00")
	}
	num := func(name string) int64 {
		v, _ := s.num(name)
		return v
	}
	brand := str("machdep.cpu.brand_string")
	var features string
	if x86 {
		if strings.HasPrefix(brand, "Apple M") {
			ci.vendor, ci.model = "Apple", brand
		} else {
			ci.vendor = str("machdep.cpu.vendor")
			ci.model = fmt.Sprintf("%s [x86 Family %d Model %d Stepping %d]", brand,
				num("machdep.cpu.family"), num("machdep.cpu.model"), num("machdep.cpu.stepping"))
		}
		features = str("machdep.cpu.features")
	} else {
		ci.vendor, ci.model = "Apple", brand
		// A missing sysctl counts as 0 here; the C++ client would
		// repeat the previous value (or print garbage for the first).
		f := []string{fmt.Sprintf("amx_version_%d", num("hw.optional.amx_version"))}
		for _, name := range macARMFeatures {
			if num("hw.optional."+name) != 0 {
				f = append(f, name)
			}
		}
		features = strings.Join(f, " ")
	}
	var out []string
	for _, f := range strings.Fields(strings.ToLower(features)) {
		switch f {
		case "avx1.0":
			f = "avx"
		case "sse3":
			f = "pni"
		case "sse4.1":
			f = "sse4_1"
		case "sse4.2":
			f = "sse4_2"
		}
		out = append(out, f)
	}
	ci.features = strings.Join(out, " ")
	ci.product = str("hw.model")
	return ci
}
