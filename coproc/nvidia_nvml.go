//go:build linux && cgo

package coproc

// The NVML probe. go-nvml is cgo and Linux only: it dlopens
// libnvidia-ml.so.1 at Init, so the binary builds and starts on hosts with
// no NVIDIA driver and simply finds no GPU there.

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// NVML is the part of go-nvml's nvml.Interface the probe calls. The daemon
// passes DefaultNVML(); tests pass go-nvml's pkg/nvml/mock.
type NVML interface {
	Init() nvml.Return
	Shutdown() nvml.Return
	SystemGetDriverVersion() (string, nvml.Return)
	SystemGetCudaDriverVersion() (int, nvml.Return)
	DeviceGetCount() (int, nvml.Return)
	DeviceGetHandleByIndex(int) (nvml.Device, nvml.Return)
	Extensions() nvml.ExtendedInterface
}

// DefaultNVML returns the system's NVML: libnvidia-ml.so.1, loaded on each
// probe's Init and released by its Shutdown, so a driver installed after
// the daemon started is found by the next probe.
func DefaultNVML() NVML {
	return nvml.New()
}

// Symbols newer than the oldest drivers NVML still runs on. go-nvml binds
// symbols lazily: calling one the loaded library lacks would crash the
// process, so each is looked up before use.
const (
	symCudaDriverVersion = "nvmlSystemGetCudaDriverVersion"
	symComputeCap        = "nvmlDeviceGetCudaComputeCapability"
	symNumGpuCores       = "nvmlDeviceGetNumGpuCores"
	symMigMode           = "nvmlDeviceGetMigMode"
	symAttributes        = "nvmlDeviceGetAttributes_v2"
)

// fallbackPeakFlops is what the C++ client assumes when it cannot compute
// a device's speed.
const fallbackPeakFlops = 5e10

// ProbeNVIDIA asks NVML for every NVIDIA device. It never panics and never
// fails outright: with no library, no driver, a driver/library mismatch or
// no device it returns zero GPUs and an Err (wrapping ErrNoNVIDIA and the
// nvml.Return) that says which. Fields a device does not support
// (ERROR_NOT_SUPPORTED, or a function this driver lacks) are left zero and
// named in GPU.Unsupported; those tolerated are name, PCI bus id, memory,
// compute capability, multiprocessor count, SM and memory clocks and MIG
// mode. A device whose handle or UUID cannot be read is skipped with a
// warning, since devices are keyed by UUID.
func ProbeNVIDIA(lib NVML) (info NVIDIAInfo) {
	if lib == nil {
		info.Err = fmt.Errorf("%w: no NVML library given", ErrNoNVIDIA)
		return info
	}
	// A library (or mock) that panics must not take the daemon down.
	defer func() {
		if r := recover(); r != nil {
			info = NVIDIAInfo{Err: fmt.Errorf("%w: NVML panicked: %v", ErrNoNVIDIA, r)}
		}
	}()
	if ret := lib.Init(); ret != nvml.SUCCESS {
		info.Err = initError(ret)
		return info
	}
	defer func() { _ = lib.Shutdown() }()

	has := symbolChecker(lib)

	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		info.DriverVersion = v
		if n, err := driverVersionNumber(v); err == nil {
			info.DrvVersion = n
		} else {
			info.Warnings = append(info.Warnings, err.Error())
		}
	} else {
		info.Warnings = append(info.Warnings, fmt.Sprintf("nvmlSystemGetDriverVersion: %v", ret))
	}
	if has(symCudaDriverVersion) {
		if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
			info.CUDAVersion = v
		} else {
			info.Warnings = append(info.Warnings, fmt.Sprintf("nvmlSystemGetCudaDriverVersion: %v", ret))
		}
	}

	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		info.Err = fmt.Errorf("%w: counting devices (driver %s): nvmlDeviceGetCount: %w", ErrNoNVIDIA, info.DriverVersion, ret)
		return info
	}
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS || dev == nil {
			info.Warnings = append(info.Warnings, fmt.Sprintf("GPU %d: nvmlDeviceGetHandleByIndex: %v; skipped", i, ret))
			continue
		}
		g, err := probeDevice(dev, i, has)
		if err != nil {
			info.Warnings = append(info.Warnings, err.Error())
			continue
		}
		info.GPUs = append(info.GPUs, g)
	}
	if len(info.GPUs) == 0 {
		if n == 0 {
			info.Err = fmt.Errorf("%w: NVML lists no devices (driver %s)", ErrNoNVIDIA, info.DriverVersion)
		} else {
			info.Err = fmt.Errorf("%w: none of the %d devices NVML lists could be read: %s", ErrNoNVIDIA, n, strings.Join(info.Warnings, "; "))
		}
	}
	return info
}

// initError explains an nvmlInit failure in the words a volunteer needs.
func initError(ret nvml.Return) error {
	var why string
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		why = "NVIDIA driver not installed (libnvidia-ml.so.1 not found)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		why = "NVIDIA kernel driver not loaded"
	case nvml.ERROR_LIB_RM_VERSION_MISMATCH:
		why = "NVIDIA driver/library version mismatch: the loaded kernel module and libnvidia-ml differ (driver updated without a reboot?)"
	case nvml.ERROR_NO_PERMISSION:
		why = "no permission to open the NVIDIA device files"
	default:
		why = "NVML failed to initialise"
	}
	return fmt.Errorf("%w: %s: nvmlInit: %w", ErrNoNVIDIA, why, ret)
}

// symbolChecker reports whether the loaded library has a symbol. A library
// without the extension (or whose lookup panics) has none of the optional
// ones.
func symbolChecker(lib NVML) func(string) bool {
	var ext nvml.ExtendedInterface
	func() {
		defer func() { _ = recover() }()
		ext = lib.Extensions()
	}()
	return func(sym string) (ok bool) {
		if ext == nil {
			return false
		}
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		return ext.LookupSymbol(sym) == nil
	}
}

// query calls one optional device function. A panic (a mock without that
// function) reads as ERROR_FUNCTION_NOT_FOUND, like a driver without it.
func query[T any](f func() (T, nvml.Return)) (v T, ret nvml.Return) {
	defer func() {
		if recover() != nil {
			var zero T
			v, ret = zero, nvml.ERROR_FUNCTION_NOT_FOUND
		}
	}()
	return f()
}

func probeDevice(dev nvml.Device, index int, has func(string) bool) (GPU, error) {
	g := GPU{Index: index, Usable: true}
	uuid, ret := query(dev.GetUUID)
	if ret != nvml.SUCCESS || uuid == "" {
		return g, fmt.Errorf("GPU %d: nvmlDeviceGetUUID: %v; skipped (devices are keyed by UUID)", index, ret)
	}
	g.UUID = uuid
	unsupported := func(field string) { g.Unsupported = append(g.Unsupported, field) }

	if name, ret := query(dev.GetName); ret == nvml.SUCCESS {
		g.Name = name
	} else {
		unsupported("name")
	}
	if pci, ret := query(dev.GetPciInfo); ret == nvml.SUCCESS && busID(pci) != "" {
		g.PCIBusID = busID(pci)
	} else {
		unsupported("pci_bus_id")
	}
	if mem, ret := query(dev.GetMemoryInfo); ret == nvml.SUCCESS {
		g.TotalMem, g.FreeMem = mem.Total, mem.Free
	} else {
		unsupported("memory")
	}

	ccOK := false
	if has(symComputeCap) {
		var major, minor int
		ret := nvml.ERROR_FUNCTION_NOT_FOUND
		func() {
			defer func() { _ = recover() }()
			major, minor, ret = dev.GetCudaComputeCapability()
		}()
		if ret == nvml.SUCCESS {
			g.Major, g.Minor, ccOK = major, minor, true
		}
	}
	if !ccOK {
		unsupported("compute_capability")
	}

	g.SMCount = smCount(dev, g.Major, g.Minor, has)
	if g.SMCount == 0 {
		unsupported("multiprocessor_count")
	}
	if c, ret := query(func() (uint32, nvml.Return) { return dev.GetMaxClockInfo(nvml.CLOCK_SM) }); ret == nvml.SUCCESS && c > 0 {
		g.ClockMHz = int(c)
	} else {
		unsupported("sm_clock")
	}
	if c, ret := query(func() (uint32, nvml.Return) { return dev.GetMaxClockInfo(nvml.CLOCK_MEM) }); ret == nvml.SUCCESS && c > 0 {
		g.MemClockMHz = int(c)
	} else {
		unsupported("mem_clock")
	}

	g.PeakFlops = PeakFlops(g.Major, g.Minor, g.SMCount, g.ClockMHz)
	if g.PeakFlops <= 0 {
		g.PeakFlops = fallbackPeakFlops
		unsupported("peak_flops")
	}

	// ERROR_NOT_SUPPORTED here just means a GPU without MIG.
	if has(symMigMode) {
		var cur int
		ret := nvml.ERROR_FUNCTION_NOT_FOUND
		func() {
			defer func() { _ = recover() }()
			cur, _, ret = dev.GetMigMode()
		}()
		g.MIG = ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE
	}

	switch {
	case g.MIG:
		// CUDA then shows a process one MIG instance, chosen by
		// CUDA_VISIBLE_DEVICES=MIG-<uuid>, and BOINC apps address GPUs by
		// CUDA ordinal only: the whole card cannot be handed out.
		g.Usable, g.WhyNotUsable = false, "MIG mode is enabled: BOINC apps address whole GPUs by CUDA ordinal (disable MIG to use it)"
	case !ccOK:
		g.Usable, g.WhyNotUsable = false, "compute capability unknown"
	case g.Major <= 0 || g.Major > 100:
		// The C++ client skips such devices as bogus.
		g.Usable, g.WhyNotUsable = false, fmt.Sprintf("implausible compute capability %d.%d", g.Major, g.Minor)
	}
	return g, nil
}

// smCount derives the multiprocessor count: NVML's CUDA core count divided
// by the cores per SM of the compute capability (exact for every
// architecture in the table), else the MIG/device attributes.
func smCount(dev nvml.Device, major, minor int, has func(string) bool) int {
	if cores, _ := coresPerSM(major, minor); cores > 0 && has(symNumGpuCores) {
		if n, ret := query(dev.GetNumGpuCores); ret == nvml.SUCCESS && n > 0 {
			return n / cores
		}
	}
	if has(symAttributes) {
		if a, ret := query(dev.GetAttributes); ret == nvml.SUCCESS && a.MultiprocessorCount > 0 {
			return int(a.MultiprocessorCount)
		}
	}
	return 0
}

// busID returns NVML's bus id string, the long form when present.
func busID(p nvml.PciInfo) string {
	if s := cString(p.BusId[:]); s != "" {
		return s
	}
	return cString(p.BusIdLegacy[:])
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return strings.TrimSpace(sb.String())
}
