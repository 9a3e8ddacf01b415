package coproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// cpuInfo is the processor as the C++ client's HOST_INFO describes it:
// p_vendor, p_model, p_features, m_cache and, where its CPU probe fills
// it, product_name.
type cpuInfo struct {
	vendor, model, features string
	cache                   float64
	product                 string
}

// probeCPU identifies the processor the way the C++ client does on this
// platform (HOST_INFO::get_cpu_info on Unix, get_processor_info on
// Windows): the names plan classes test and project pages show come from
// it, so each platform reports what that platform's C++ client reports.
// An error with a non-zero cpuInfo is a warning: the description came
// from a fallback.
func probeCPU(ctx context.Context) (cpuInfo, error) {
	ci, err := platformCPU(ctx)
	if err != nil {
		cpuid, xgetbv, ok := nativeCPUID()
		if !ok {
			return ci, fmt.Errorf("cpu info: %w", err)
		}
		// No /proc/cpuinfo (a bare container) or no sysctl: the C++
		// client would send "unknown"; CPUID still names the CPU, in
		// the Windows client's terms, so plan classes can match.
		ci = x86CPUID(cpuid, xgetbv)
		err = fmt.Errorf("cpu info: %w (described from CPUID instead)", err)
	}
	ci.vendor = strings.TrimSpace(collapseWhitespace(ci.vendor))
	ci.model = strings.TrimSpace(collapseWhitespace(ci.model))
	ci.features = capFeatures(strings.Join(strings.Fields(ci.features), " "))
	return ci, err
}

// maxFeatures is the size of HOST_INFO.p_features minus its NUL: longer
// flag lists (recent server CPUs) are cut by the C++ client, and servers
// store the column as varchar(1024). We cut at a flag boundary so no
// partial flag name reaches a plan-class test.
const maxFeatures = 1023

// armVendor is p_vendor on ARM Linux: parse_cpuinfo_linux presets "ARM"
// (its vendor_hack) whatever the implementer, and ignores vendor lines.
const armVendor = "ARM"

// parseCPUInfo follows client/hostinfo_unix.cpp parse_cpuinfo_linux, whose
// rules depend on the architecture the client was built for (arm: 32- or
// 64-bit ARM). The first value of each key wins.
//
// Not ARM: p_vendor is "vendor_id" (or MIPS' "system type"), p_model
// "model name" (or "cpu model") with " [Family F Model M Stepping S]"
// appended from "cpu family", "model" and "stepping".
//
// ARM: p_vendor is "ARM"; p_model is the first line containing "model
// name", "Processor" or "Hardware" (arm64 kernels have no model name, so
// boards whose kernel adds "Hardware" get the SoC name, others nothing),
// followed by " [Impl I Arch A Variant V Part P Rev R]" with each field's
// text as the kernel wrote it; "Hardware" also becomes product_name.
//
// Both: p_features is the "flags" (x86), "Features" (ARM) or "features"
// (s390) line verbatim; m_cache is "cache size" in bytes, -1 when the
// file has none (the C++ client's initial value, which ARM hosts send).
func parseCPUInfo(r io.Reader, arm bool) (cpuInfo, error) {
	ci := cpuInfo{cache: -1}
	family, model, stepping := -1, -1, -1
	var armFields [5]string // implementer, architecture, variant, part, revision
	armKeys := [5]string{"CPU implementer", "CPU architecture", "CPU variant", "CPU part", "CPU revision"}
	armLabels := [5]string{"Impl ", "Arch ", "Variant ", "Part ", "Rev "}
	var armInfo, modelFound bool
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "flags", "Features", "features":
			if ci.features == "" {
				ci.features = capFeatures(strings.Join(strings.Fields(val), " "))
			}
		case "cache size":
			if ci.cache < 0 {
				if n := atoiPrefix(val); n >= 0 {
					ci.cache = float64(n) * 1024
				}
			}
		}
		if arm {
			// The C++ ARM branch matches these anywhere in the line.
			if !modelFound && (strings.Contains(line, "model name") || strings.Contains(line, "Processor") || strings.Contains(line, "Hardware")) {
				modelFound = true
				ci.model = val
			}
			if key == "Hardware" {
				ci.product = strings.TrimSpace(ci.product + " " + val)
			}
			for i, k := range armKeys {
				if armFields[i] == "" && strings.Contains(line, k) {
					armFields[i] = truncate(val, 31)
					armInfo = true
				}
			}
			continue
		}
		switch key {
		case "vendor_id", "system type":
			if ci.vendor == "" {
				ci.vendor = val
			}
		case "model name", "cpu model":
			if !modelFound {
				modelFound = true
				ci.model = val
			}
		case "cpu family":
			if family < 0 {
				family = atoiPrefix(val)
			}
		case "model":
			if model < 0 {
				model = atoiPrefix(val)
			}
		case "stepping":
			if stepping < 0 {
				stepping = atoiPrefix(val)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return ci, err
	}
	var b strings.Builder
	b.WriteString(ci.model)
	if arm {
		ci.vendor = armVendor
		if armInfo {
			b.WriteString(" [")
			for i, f := range armFields {
				if f == "" {
					continue
				}
				b.WriteString(armLabels[i])
				b.WriteString(f)
				if i < len(armFields)-1 {
					b.WriteByte(' ')
				}
			}
			b.WriteString("]")
		}
	} else if family >= 0 || model >= 0 || stepping > 0 {
		b.WriteString(" [")
		if family >= 0 {
			fmt.Fprintf(&b, "Family %d ", family)
		}
		if model >= 0 {
			fmt.Fprintf(&b, "Model %d ", model)
		}
		if stepping >= 0 {
			fmt.Fprintf(&b, "Stepping %d", stepping)
		}
		b.WriteString("]")
	}
	ci.model = strings.TrimSpace(collapseWhitespace(b.String()))
	if (!arm && ci.vendor == "") && ci.model == "" && ci.features == "" {
		return ci, errors.New("no processor description found")
	}
	if arm && !modelFound && !armInfo && ci.features == "" {
		return ci, errors.New("no processor description found")
	}
	return ci, nil
}

// atoiPrefix is C's atoi for non-negative numbers: the leading digits, or
// -1 when there are none.
func atoiPrefix(s string) int {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	n, err := strconv.Atoi(s[:i])
	if err != nil {
		return -1
	}
	return n
}

func capFeatures(s string) string {
	if len(s) <= maxFeatures {
		return s
	}
	s = s[:maxFeatures+1]
	return s[:strings.LastIndexByte(s, ' ')]
}

// truncate cuts s to at most n bytes, as the C++ client's fixed buffers do.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// collapseWhitespace is lib/str_util.cpp collapse_whitespace, which
// get_host_info applies to p_model and p_vendor: a run of white space
// keeps its first character.
func collapseWhitespace(s string) string {
	var b strings.Builder
	prevSpace := false
	for _, r := range s {
		sp := r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
		if sp && prevSpace {
			continue
		}
		prevSpace = sp
		b.WriteRune(r)
	}
	return b.String()
}
