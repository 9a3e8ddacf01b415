package coproc

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Windows processor feature numbers (winnt.h PF_*) the C++ client tests
// on ARM Windows.
const (
	pfARMVFP32Registers   = 18
	pfARMNeon             = 19
	pfARMDivide           = 24
	pfARM64BitLoadStore   = 25
	pfARMExternalCache    = 26
	pfARMFMAC             = 27
	pfARMV8               = 29
	pfARMV8Crypto         = 30
	pfARMV8CRC32          = 31
	pfARMV81Atomic        = 34
	relationProcessorCore = 0 // LOGICAL_PROCESSOR_RELATIONSHIP RelationProcessorCore
)

// windowsARMFeatures is get_processor_features' ARM list, in its order.
var windowsARMFeatures = []struct {
	pf   uint32
	name string
}{
	{pfARMVFP32Registers, "vfp32"},
	{pfARMNeon, "neon"},
	{pfARMDivide, "divide"},
	{pfARM64BitLoadStore, "64lsatomic"},
	{pfARMExternalCache, "excache"},
	{pfARMFMAC, "fmac"},
	{pfARMV8, "v8"},
	{pfARMV8Crypto, "crypto"},
	{pfARMV8CRC32, "crc32"},
	{pfARMV81Atomic, "atomic"},
}

// windowsARMCPU is get_processor_info on ARM Windows: vendor, name and
// identifier from HKLM\HARDWARE\DESCRIPTION\System\CentralProcessor\0
// (VendorIdentifier, ProcessorNameString, Identifier; reg returns "" for
// a missing value), p_model "NAME [IDENTIFIER]", and the features
// IsProcessorFeaturePresent reports. m_cache is left 0: the C++ client
// puts the L1 line size there, which is no cache size.
func windowsARMCPU(reg func(name string) string, present func(pf uint32) bool) cpuInfo {
	ci := cpuInfo{
		vendor: reg("VendorIdentifier"),
		model:  fmt.Sprintf("%s [%s]", reg("ProcessorNameString"), reg("Identifier")),
	}
	var f []string
	for _, x := range windowsARMFeatures {
		if present(x.pf) {
			f = append(f, x.name)
		}
	}
	ci.features = strings.Join(f, " ")
	return ci
}

// countProcessorCores counts the RelationProcessorCore records in what
// GetLogicalProcessorInformationEx(RelationProcessorCore) returns: each
// SYSTEM_LOGICAL_PROCESSOR_INFORMATION_EX starts with its Relationship and
// its Size (two little-endian uint32s), one record per physical core.
func countProcessorCores(buf []byte) (int, error) {
	n := 0
	for off := 0; off < len(buf); {
		if len(buf)-off < 8 {
			return 0, fmt.Errorf("processor information: %d stray bytes at offset %d", len(buf)-off, off)
		}
		rel := binary.LittleEndian.Uint32(buf[off:])
		size := int(binary.LittleEndian.Uint32(buf[off+4:]))
		if size < 8 || size > len(buf)-off {
			return 0, fmt.Errorf("processor information: record size %d at offset %d of %d", size, off, len(buf))
		}
		if rel == relationProcessorCore {
			n++
		}
		off += size
	}
	return n, nil
}
