package coproc

// NVIDIA GPU model, exclusions and the C++ client's device-selection rule
// (client/gpu_nvidia.cpp COPROC_NVIDIA::correlate). Everything here is
// platform independent; the NVML probe itself lives in nvidia_nvml.go
// (Linux with cgo) or nvidia_nonvml.go (everything else).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	stdslices "slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/boincd/boincd/boinc"
)

// ErrNoNVIDIA is wrapped by every NVIDIAInfo.Err: the probe found no NVIDIA
// GPU the daemon can use, and the daemon runs CPU-only. The rest of the
// error chain says why (no driver, no devices, version mismatch, ...).
var ErrNoNVIDIA = errors.New("no NVIDIA GPU")

// GPU is one NVIDIA device as NVML reports it. Devices are keyed by UUID:
// NVML indices follow PCI bus order and can shift when a card is added,
// removed or fails, a UUID cannot.
type GPU struct {
	// UUID is NVML's "GPU-xxxxxxxx-..." identifier, the stable key.
	UUID string
	// Name is the marketing name, e.g. "NVIDIA H200".
	Name string
	// PCIBusID is NVML's "DDDDDDDD:BB:DD.F" address.
	PCIBusID string
	// Index is the NVML index. It equals the CUDA ordinal an app sees
	// (the <gpu_device_num> it is given) only when the app runs with
	// CUDA_DEVICE_ORDER=PCI_BUS_ID and no CUDA_VISIBLE_DEVICES; CUDA's
	// default order is fastest-first. Hosts with identical GPUs, the usual
	// case, number them the same either way.
	Index int
	// TotalMem and FreeMem are bytes of device memory.
	TotalMem, FreeMem uint64
	// Major and Minor are the CUDA compute capability.
	Major, Minor int
	// SMCount is the number of streaming multiprocessors.
	SMCount int
	// ClockMHz is the maximum SM clock (CUDA's clockRate, in MHz).
	ClockMHz int
	// MemClockMHz is the maximum memory clock.
	MemClockMHz int
	// PeakFlops is the peak single-precision estimate (func PeakFlops:
	// SMs × cores per SM × clock × 2), or 5e10 when a factor is unknown,
	// the C++ client's fallback.
	PeakFlops float64
	// MIG is true when Multi-Instance GPU mode is enabled on the device.
	MIG bool
	// Usable is false for devices BOINC apps must not be given; WhyNotUsable
	// then says why.
	Usable       bool
	WhyNotUsable string
	// Unsupported lists the fields NVML could not give for this device
	// (ERROR_NOT_SUPPORTED and the like); they are left zero.
	Unsupported []string
}

// NVIDIAInfo is the result of one NVML probe.
type NVIDIAInfo struct {
	// GPUs are all devices NVML listed whose UUID could be read, in NVML
	// index order, usable or not.
	GPUs []GPU
	// DriverVersion is the display driver version, e.g. "550.54.15".
	DriverVersion string
	// DrvVersion is the C++ client's integer form of DriverVersion:
	// major×100 + min(minor, 99), e.g. 55054.
	DrvVersion int
	// CUDAVersion is the CUDA driver API version, e.g. 12040 for 12.4.
	CUDAVersion int
	// Warnings are problems that did not stop the probe (a device whose
	// handle or UUID could not be read, an unreadable driver version).
	Warnings []string
	// Err says why there is no GPU at all; it wraps ErrNoNVIDIA. Nil when
	// at least one device was found.
	Err error
}

// coresPerSM returns the FP32 cores per multiprocessor and the flops each
// core does per clock for a compute capability, the table of
// COPROC_NVIDIA::set_peak_flops (lib/coproc.cpp):
//
//	CC      cores/SM  flops/clock
//	1.x      8        3
//	2.0     32        2
//	2.x     48        2
//	3.x    192        2
//	5.x    128        2
//	6.0     64        2
//	6.x    128        2
//	7.x     64        2
//	8.0     64        2
//	8.x    128        2
//	≥ 9    128        2   (Hopper H100/H200 9.0, Blackwell 10.x/12.x)
//
// CC 4 never existed; it falls into the default row like ≥ 9. Unknown
// (major ≤ 0) gives 0.
func coresPerSM(major, minor int) (cores, flopsPerClock int) {
	switch {
	case major <= 0:
		return 0, 0
	case major == 1:
		return 8, 3
	case major == 2 && minor == 0:
		return 32, 2
	case major == 2:
		return 48, 2
	case major == 3:
		return 192, 2
	case major == 6 && minor == 0:
		return 64, 2
	case major == 7:
		return 64, 2
	case major == 8 && minor == 0:
		return 64, 2
	default:
		return 128, 2
	}
}

// PeakFlops estimates a device's peak single-precision FLOPS the way the
// C++ client does: clock(kHz)×1000 × SMs × cores per SM × flops per clock.
// It returns 0 when any factor is unknown. An H200 (CC 9.0, 132 SMs,
// 1980 MHz) gives 66.9 TFLOPS, an A100 (CC 8.0, 108 SMs, 1410 MHz) 19.5.
func PeakFlops(major, minor, smCount, clockMHz int) float64 {
	cores, fpc := coresPerSM(major, minor)
	return float64(clockMHz) * 1000 * 1000 * float64(smCount) * float64(cores) * float64(fpc)
}

// driverVersionNumber turns "535.104.05" into 53599: major×100 +
// min(minor, 99), as nvidia_driver_version in the C++ client.
func driverVersionNumber(v string) (int, error) {
	parts := strings.Split(strings.TrimSpace(v), ".")
	if len(parts) < 2 {
		return 0, fmt.Errorf("driver version %q: want major.minor", v)
	}
	major, err := strconv.Atoi(parts[0])
	if err != nil || major < 0 {
		return 0, fmt.Errorf("driver version %q: bad major %q", v, parts[0])
	}
	minor, err := strconv.Atoi(parts[1])
	if err != nil || minor < 0 {
		return 0, fmt.Errorf("driver version %q: bad minor %q", v, parts[1])
	}
	return major*100 + min(minor, 99), nil
}

// Exclusion keeps GPUs away from BOINC work: the C++ client's
// <ignore_nvidia_dev> when Project is empty, <exclude_gpu> otherwise.
type Exclusion struct {
	// Device is a GPU UUID ("GPU-…", case-insensitive) or a decimal NVML
	// index; empty means every NVIDIA device.
	Device string
	// Project is the master URL the exclusion applies to; empty means
	// every project.
	Project string
}

func (e Exclusion) String() string {
	dev := strings.TrimSpace(e.Device)
	if dev == "" {
		dev = "all devices"
	}
	if strings.TrimSpace(e.Project) == "" {
		return dev + " for all projects"
	}
	return dev + " for " + strings.TrimSpace(e.Project)
}

// matches reports whether the exclusion names g.
func (e Exclusion) matches(g GPU) bool {
	d := strings.TrimSpace(e.Device)
	if d == "" {
		return true
	}
	if n, err := strconv.Atoi(d); err == nil {
		return n == g.Index
	}
	return strings.EqualFold(d, g.UUID)
}

// ApplyExclusions marks every device excluded for all projects as not
// usable. It returns a warning for each exclusion that names a device not
// present on this host: stale config must not stop the daemon.
// Per-project exclusions are left to ProjectExcluded.
func ApplyExclusions(info *NVIDIAInfo, ex []Exclusion) (warnings []string) {
	for _, e := range ex {
		found := false
		for i := range info.GPUs {
			g := &info.GPUs[i]
			if !e.matches(*g) {
				continue
			}
			found = true
			if strings.TrimSpace(e.Project) == "" && g.Usable {
				g.Usable = false
				g.WhyNotUsable = "excluded in config for all projects"
			}
		}
		if !found && strings.TrimSpace(e.Device) != "" {
			warnings = append(warnings, fmt.Sprintf("GPU exclusion %s: no NVIDIA GPU %q on this host; ignored", e, strings.TrimSpace(e.Device)))
		}
	}
	return warnings
}

// ProjectExcluded returns the NVML indices, ascending, of the devices
// excluded for the project with the given master URL. URLs are compared in
// canonical form (boinc.CanonicalMasterURL).
func ProjectExcluded(info NVIDIAInfo, ex []Exclusion, projectURL string) []int {
	want := canonicalOrRaw(projectURL)
	var out []int
	for _, e := range ex {
		if strings.TrimSpace(e.Project) == "" || canonicalOrRaw(e.Project) != want {
			continue
		}
		for _, g := range info.GPUs {
			if e.matches(g) && !stdslices.Contains(out, g.Index) {
				out = append(out, g.Index)
			}
		}
	}
	stdslices.Sort(out)
	return out
}

func canonicalOrRaw(u string) string {
	if c, err := boinc.CanonicalMasterURL(u); err == nil {
		return c
	}
	return strings.TrimSpace(u)
}

// compareGPUs is the C++ client's nvidia_compare: compute capability, then
// (system-wide here) CUDA version, then memory, then FLOPS. With loose,
// memory within ×0.7–1.4 counts as equal and FLOPS are not compared.
func compareGPUs(a, b GPU, loose bool) int {
	if c := cmpInt(a.Major, b.Major); c != 0 {
		return c
	}
	if c := cmpInt(a.Minor, b.Minor); c != 0 {
		return c
	}
	am, bm := float64(a.TotalMem), float64(b.TotalMem)
	if loose {
		switch {
		case am > 1.4*bm:
			return 1
		case am < 0.7*bm:
			return -1
		}
		return 0
	}
	switch {
	case am > bm:
		return 1
	case am < bm:
		return -1
	case a.PeakFlops > b.PeakFlops:
		return 1
	case a.PeakFlops < b.PeakFlops:
		return -1
	}
	return 0
}

func cmpInt(a, b int) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}

// BestGPU returns the most capable device by the C++ client's order, the
// lowest index on ties. ok is false for an empty list.
func BestGPU(gpus []GPU) (best GPU, ok bool) {
	for i, g := range gpus {
		if i == 0 || compareGPUs(g, best, false) > 0 {
			best = g
		}
	}
	return best, len(gpus) > 0
}

// UsableGPUs applies the C++ client's correlate rule to the devices still
// marked Usable (after ApplyExclusions): the best device is always used;
// another is used only if it is "loosely equal" to the best (same compute
// capability, memory within ×0.7–1.4), or if useAll (cc_config
// <use_all_gpus>) is set. Mixing a fast and a slow card would otherwise
// make every job's runtime estimate wrong for one of them. The result is
// in NVML index order; its length is the <count> of <coproc_cuda>.
func UsableGPUs(info NVIDIAInfo, useAll bool) []GPU {
	var cand []GPU
	for _, g := range info.GPUs {
		if g.Usable {
			cand = append(cand, g)
		}
	}
	best, ok := BestGPU(cand)
	if !ok {
		return nil
	}
	var out []GPU
	for _, g := range cand {
		if useAll || g.UUID == best.UUID || compareGPUs(g, best, true) == 0 {
			out = append(out, g)
		}
	}
	return out
}

// Changed reports whether the set of device UUIDs differs between two
// probes: a GPU appeared, vanished or was swapped.
func Changed(old, new NVIDIAInfo) bool {
	a, b := uuidSet(old), uuidSet(new)
	if len(a) != len(b) {
		return true
	}
	for u := range a {
		if !b[u] {
			return true
		}
	}
	return false
}

func uuidSet(info NVIDIAInfo) map[string]bool {
	m := make(map[string]bool, len(info.GPUs))
	for _, g := range info.GPUs {
		m[g.UUID] = true
	}
	return m
}

// DefaultProbeTimeout bounds one NVML probe when NewProber is given none.
const DefaultProbeTimeout = 30 * time.Second

// Prober runs ProbeNVIDIA periodically for the daemon. The NVML calls run
// in a goroutine with a timeout, so a hung driver (it happens: a GPU fallen
// off the bus can block nvmlInit for minutes) cannot block the daemon. A
// cgo call cannot be cancelled: the goroutine ends when NVML returns, and
// until then later Probe calls wait on that same call rather than piling
// up new ones. Safe for concurrent use.
type Prober struct {
	lib     NVML
	log     *slog.Logger
	timeout time.Duration

	mu        sync.Mutex
	run       *probeRun // the call in flight, nil when none
	saidNone  bool      // "no NVIDIA GPU" already logged for this state
	lastFound NVIDIAInfo
	// lastWarnings are the previous probe's warnings.
	lastWarnings []string
}

type probeRun struct {
	done chan struct{}
	info NVIDIAInfo
}

// NewProber returns a Prober over lib (DefaultNVML() in the daemon). A
// timeout ≤ 0 means DefaultProbeTimeout; a nil log discards.
func NewProber(lib NVML, log *slog.Logger, timeout time.Duration) *Prober {
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Prober{lib: lib, log: log, timeout: timeout}
}

// Probe runs one NVML probe, or joins the one in flight, and returns its
// result; after the timeout or ctx's end it returns zero GPUs with an Err
// saying so. "no NVIDIA GPU" is logged at info level once per stretch of
// GPU-less probes, and the device list whenever the UUID set changes, so a
// periodic re-probe (which finds a driver installed after boot) is quiet.
func (p *Prober) Probe(ctx context.Context) NVIDIAInfo {
	p.mu.Lock()
	run := p.run
	if run == nil {
		run = &probeRun{done: make(chan struct{})}
		p.run = run
		go func() {
			defer close(run.done)
			run.info = ProbeNVIDIA(p.lib)
		}()
	}
	p.mu.Unlock()

	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	var info NVIDIAInfo
	select {
	case <-run.done:
		info = run.info
		p.mu.Lock()
		if p.run == run {
			p.run = nil
		}
		p.mu.Unlock()
	case <-timer.C:
		info.Err = fmt.Errorf("%w: NVML did not answer within %v (hung driver?)", ErrNoNVIDIA, p.timeout)
	case <-ctx.Done():
		info.Err = fmt.Errorf("%w: probe abandoned: %w", ErrNoNVIDIA, ctx.Err())
		return info
	}
	p.report(info)
	return info
}

func (p *Prober) report(info NVIDIAInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Warnings repeat on every re-probe while their cause lasts: log each
	// once, when it first appears.
	for _, w := range info.Warnings {
		if !stdslices.Contains(p.lastWarnings, w) {
			p.log.Warn("NVIDIA probe", "warning", w)
		}
	}
	p.lastWarnings = info.Warnings
	if len(info.GPUs) == 0 {
		if !p.saidNone {
			p.log.Info("no NVIDIA GPU", "reason", errString(info.Err))
			p.saidNone = true
		}
		p.lastFound = NVIDIAInfo{}
		return
	}
	p.saidNone = false
	if !Changed(p.lastFound, info) {
		return
	}
	p.lastFound = info
	for _, g := range info.GPUs {
		attrs := []any{"index", g.Index, "uuid", g.UUID, "name", g.Name,
			"cc", fmt.Sprintf("%d.%d", g.Major, g.Minor), "mem_mb", g.TotalMem >> 20,
			"sms", g.SMCount, "clock_mhz", g.ClockMHz, "peak_gflops", g.PeakFlops / 1e9,
			"usable", g.Usable}
		if !g.Usable {
			attrs = append(attrs, "why", g.WhyNotUsable)
		}
		if len(g.Unsupported) > 0 {
			attrs = append(attrs, "unsupported", strings.Join(g.Unsupported, ","))
		}
		p.log.Info("NVIDIA GPU", attrs...)
	}
	p.log.Info("NVIDIA driver", "version", info.DriverVersion, "cuda", info.CUDAVersion, "gpus", len(info.GPUs))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
