//go:build linux && cgo

package coproc

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	stdslices "slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// fakeGPU describes one device for mockLib; names in notSupported make the
// matching NVML call return ERROR_NOT_SUPPORTED.
type fakeGPU struct {
	uuid, name, bus   string
	total, free       uint64
	major, minor      int
	cores             int
	smClock, memClock uint32
	mig               bool
	notSupported      []string
}

func busIDArray(s string) (a [32]int8) {
	for i := 0; i < len(s) && i < len(a)-1; i++ {
		a[i] = int8(s[i])
	}
	return a
}

func (f fakeGPU) device() *mock.Device {
	ns := func(what string) bool { return stdslices.Contains(f.notSupported, what) }
	return &mock.Device{
		GetUUIDFunc: func() (string, nvml.Return) {
			if ns("uuid") {
				return "", nvml.ERROR_NOT_SUPPORTED
			}
			return f.uuid, nvml.SUCCESS
		},
		GetNameFunc: func() (string, nvml.Return) {
			if ns("name") {
				return "", nvml.ERROR_NOT_SUPPORTED
			}
			return f.name, nvml.SUCCESS
		},
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			if ns("pci") {
				return nvml.PciInfo{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.PciInfo{BusId: busIDArray(f.bus)}, nvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			if ns("memory") {
				return nvml.Memory{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.Memory{Total: f.total, Free: f.free, Used: f.total - f.free}, nvml.SUCCESS
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) {
			if ns("cc") {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			return f.major, f.minor, nvml.SUCCESS
		},
		GetNumGpuCoresFunc: func() (int, nvml.Return) {
			if ns("cores") {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return f.cores, nvml.SUCCESS
		},
		GetAttributesFunc: func() (nvml.DeviceAttributes, nvml.Return) {
			// Full GPUs: "only supports MIG device handles".
			return nvml.DeviceAttributes{}, nvml.ERROR_NOT_SUPPORTED
		},
		GetMaxClockInfoFunc: func(c nvml.ClockType) (uint32, nvml.Return) {
			if ns("clocks") {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			if c == nvml.CLOCK_MEM {
				return f.memClock, nvml.SUCCESS
			}
			return f.smClock, nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if ns("mig") {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			if f.mig {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
	}
}

// mockLib is an NVML with the given devices; missing lists symbols the
// "driver" lacks.
func mockLib(driver string, cuda int, missing []string, gpus ...fakeGPU) *mock.Interface {
	devs := make([]nvml.Device, len(gpus))
	for i, g := range gpus {
		devs[i] = g.device()
	}
	ext := &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
		if stdslices.Contains(missing, s) {
			return errors.New("undefined symbol " + s)
		}
		return nil
	}}
	return &mock.Interface{
		InitFunc:                       func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:     func() (string, nvml.Return) { return driver, nvml.SUCCESS },
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) { return cuda, nvml.SUCCESS },
		DeviceGetCountFunc:             func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
		ExtensionsFunc: func() nvml.ExtendedInterface { return ext },
	}
}

var (
	h200 = fakeGPU{uuid: "GPU-11111111-2222-3333-4444-555555555555", name: "NVIDIA H200",
		bus: "00000000:19:00.0", total: 150754820096, free: 150200000000, major: 9, minor: 0,
		cores: 16896, smClock: 1980, memClock: 3201}
	rtx3080 = fakeGPU{uuid: "GPU-aaaaaaaa-0000-0000-0000-000000000001", name: "NVIDIA GeForce RTX 3080",
		bus: "00000000:01:00.0", total: 10737418240, free: 10200000000, major: 8, minor: 6,
		cores: 8704, smClock: 2100, memClock: 9501}
)

func TestProbeNVIDIA(t *testing.T) {
	tests := []struct {
		name       string
		lib        NVML
		wantErr    []error // errors.Is targets; nil = success
		wantGPUs   int
		wantUsable int
		check      func(t *testing.T, info NVIDIAInfo)
	}{
		{
			name: "one H200", lib: mockLib("550.54.15", 12040, nil, h200),
			wantGPUs: 1, wantUsable: 1,
			check: func(t *testing.T, info NVIDIAInfo) {
				g := info.GPUs[0]
				if info.DrvVersion != 55054 || info.CUDAVersion != 12040 || info.DriverVersion != "550.54.15" {
					t.Errorf("versions = %q %d %d", info.DriverVersion, info.DrvVersion, info.CUDAVersion)
				}
				if g.SMCount != 132 || g.ClockMHz != 1980 || g.MemClockMHz != 3201 || g.Major != 9 || g.PCIBusID != h200.bus {
					t.Errorf("gpu = %+v", g)
				}
				if want := 66908160000000.0; g.PeakFlops != want {
					t.Errorf("peak = %g, want %g", g.PeakFlops, want)
				}
				if len(g.Unsupported) != 0 {
					t.Errorf("unsupported = %v", g.Unsupported)
				}
			},
		},
		{
			name: "second GPU without clocks and memory",
			lib: mockLib("535.104.05", 12020, nil, rtx3080, fakeGPU{uuid: "GPU-bbbb", name: "NVIDIA GeForce RTX 3070",
				bus: "00000000:02:00.0", major: 8, minor: 6, cores: 5888, notSupported: []string{"clocks", "memory"}}),
			// Unknown memory is not "loosely equal" to 10 GB: the C++ rule
			// leaves the second card unused.
			wantGPUs: 2, wantUsable: 1,
			check: func(t *testing.T, info NVIDIAInfo) {
				if info.DrvVersion != 53599 {
					t.Errorf("drvVersion = %d, want 53599", info.DrvVersion)
				}
				g := info.GPUs[1]
				if g.ClockMHz != 0 || g.TotalMem != 0 || g.SMCount != 46 || g.PeakFlops != fallbackPeakFlops {
					t.Errorf("gpu = %+v", g)
				}
				want := []string{"memory", "sm_clock", "mem_clock", "peak_flops"}
				if !stdslices.Equal(g.Unsupported, want) {
					t.Errorf("unsupported = %v, want %v", g.Unsupported, want)
				}
				if g0 := info.GPUs[0]; g0.SMCount != 68 || len(g0.Unsupported) != 0 {
					t.Errorf("gpu0 = %+v", g0)
				}
			},
		},
		{
			name: "everything optional unsupported",
			lib: mockLib("550.54.15", 12040, nil, fakeGPU{uuid: "GPU-cccc",
				notSupported: []string{"name", "pci", "memory", "cc", "cores", "clocks", "mig"}}),
			wantGPUs: 1, wantUsable: 0,
			check: func(t *testing.T, info NVIDIAInfo) {
				g := info.GPUs[0]
				if g.WhyNotUsable != "compute capability unknown" || g.MIG {
					t.Errorf("gpu = %+v", g)
				}
				want := []string{"name", "pci_bus_id", "memory", "compute_capability", "multiprocessor_count", "sm_clock", "mem_clock", "peak_flops"}
				if !stdslices.Equal(g.Unsupported, want) {
					t.Errorf("unsupported = %v, want %v", g.Unsupported, want)
				}
			},
		},
		{
			name: "old driver lacks the newer symbols",
			lib: mockLib("418.87.01", 10010, []string{symCudaDriverVersion, symComputeCap, symNumGpuCores, symMigMode, symAttributes},
				rtx3080),
			wantGPUs: 1, wantUsable: 0,
			check: func(t *testing.T, info NVIDIAInfo) {
				g := info.GPUs[0]
				if info.CUDAVersion != 0 || g.Major != 0 || g.SMCount != 0 || g.TotalMem != rtx3080.total {
					t.Errorf("info = %+v", info)
				}
			},
		},
		{
			name: "MIG enabled", lib: mockLib("550.54.15", 12040, nil, h200, func() fakeGPU { g := h200; g.uuid = "GPU-mig"; g.mig = true; return g }()),
			wantGPUs: 2, wantUsable: 1,
			check: func(t *testing.T, info NVIDIAInfo) {
				if g := info.GPUs[1]; !g.MIG || g.Usable || !strings.Contains(g.WhyNotUsable, "MIG") {
					t.Errorf("gpu = %+v", g)
				}
				if info.GPUs[0].MIG {
					t.Errorf("gpu 0 MIG")
				}
			},
		},
		{
			name:    "NVML missing",
			lib:     &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }},
			wantErr: []error{ErrNoNVIDIA, nvml.ERROR_LIBRARY_NOT_FOUND},
			check: func(t *testing.T, info NVIDIAInfo) {
				if !strings.Contains(info.Err.Error(), "libnvidia-ml.so.1 not found") {
					t.Errorf("err = %v", info.Err)
				}
			},
		},
		{
			name:    "driver/library version mismatch",
			lib:     &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIB_RM_VERSION_MISMATCH }},
			wantErr: []error{ErrNoNVIDIA, nvml.ERROR_LIB_RM_VERSION_MISMATCH},
			check: func(t *testing.T, info NVIDIAInfo) {
				if !strings.Contains(info.Err.Error(), "version mismatch") {
					t.Errorf("err = %v", info.Err)
				}
			},
		},
		{
			name:    "driver not loaded",
			lib:     &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }},
			wantErr: []error{ErrNoNVIDIA, nvml.ERROR_DRIVER_NOT_LOADED},
		},
		{
			name:    "no devices",
			lib:     mockLib("550.54.15", 12040, nil),
			wantErr: []error{ErrNoNVIDIA},
			check: func(t *testing.T, info NVIDIAInfo) {
				if !strings.Contains(info.Err.Error(), "no devices") || info.DriverVersion != "550.54.15" {
					t.Errorf("info = %+v", info)
				}
			},
		},
		{
			name: "lost GPU is skipped, the other kept",
			lib: func() NVML {
				m := mockLib("550.54.15", 12040, nil, h200, rtx3080)
				ok := m.DeviceGetHandleByIndexFunc
				m.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
					if i == 0 {
						return nil, nvml.ERROR_GPU_IS_LOST
					}
					return ok(i)
				}
				return m
			}(),
			wantGPUs: 1, wantUsable: 1,
			check: func(t *testing.T, info NVIDIAInfo) {
				if info.GPUs[0].Index != 1 || len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "GPU 0") {
					t.Errorf("info = %+v", info)
				}
			},
		},
		{
			name:     "device without UUID is skipped",
			lib:      mockLib("550.54.15", 12040, nil, fakeGPU{notSupported: []string{"uuid"}}),
			wantErr:  []error{ErrNoNVIDIA},
			wantGPUs: 0,
		},
		{
			name: "panicking library", lib: &mock.Interface{InitFunc: func() nvml.Return { return nvml.SUCCESS }},
			wantErr: []error{ErrNoNVIDIA},
		},
		{name: "nil library", lib: nil, wantErr: []error{ErrNoNVIDIA}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := ProbeNVIDIA(tt.lib)
			if tt.wantErr == nil && info.Err != nil {
				t.Fatalf("err = %v", info.Err)
			}
			for _, w := range tt.wantErr {
				if !errors.Is(info.Err, w) {
					t.Fatalf("err = %v, want it to wrap %v", info.Err, w)
				}
			}
			if len(info.GPUs) != tt.wantGPUs {
				t.Fatalf("%d GPUs, want %d: %+v", len(info.GPUs), tt.wantGPUs, info)
			}
			if n := len(UsableGPUs(info, false)); n != tt.wantUsable {
				t.Errorf("%d usable, want %d", n, tt.wantUsable)
			}
			if tt.check != nil {
				tt.check(t, info)
			}
		})
	}
}

// TestProbeShutsDown checks every successful Init is paired with Shutdown,
// so a re-probe reloads the library.
func TestProbeShutsDown(t *testing.T) {
	m := mockLib("550.54.15", 12040, nil, h200)
	inits, shutdowns := 0, 0
	m.InitFunc = func() nvml.Return { inits++; return nvml.SUCCESS }
	m.ShutdownFunc = func() nvml.Return { shutdowns++; return nvml.SUCCESS }
	for range 3 {
		ProbeNVIDIA(m)
	}
	if inits != 3 || shutdowns != 3 {
		t.Errorf("inits %d shutdowns %d", inits, shutdowns)
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// switchable is an NVML whose driver can be "installed" mid-test.
type switchable struct {
	mu  sync.Mutex
	lib NVML
}

func (s *switchable) get() NVML                          { s.mu.Lock(); defer s.mu.Unlock(); return s.lib }
func (s *switchable) set(l NVML)                         { s.mu.Lock(); defer s.mu.Unlock(); s.lib = l }
func (s *switchable) Init() nvml.Return                  { return s.get().Init() }
func (s *switchable) Shutdown() nvml.Return              { return s.get().Shutdown() }
func (s *switchable) DeviceGetCount() (int, nvml.Return) { return s.get().DeviceGetCount() }
func (s *switchable) SystemGetDriverVersion() (string, nvml.Return) {
	return s.get().SystemGetDriverVersion()
}
func (s *switchable) SystemGetCudaDriverVersion() (int, nvml.Return) {
	return s.get().SystemGetCudaDriverVersion()
}
func (s *switchable) DeviceGetHandleByIndex(i int) (nvml.Device, nvml.Return) {
	return s.get().DeviceGetHandleByIndex(i)
}
func (s *switchable) Extensions() nvml.ExtendedInterface { return s.get().Extensions() }

func TestProberLogsOnceAndFindsLateDriver(t *testing.T) {
	missing := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	lib := &switchable{lib: missing}
	var logs syncBuffer
	p := NewProber(lib, slog.New(slog.NewTextHandler(&logs, nil)), time.Minute)
	ctx := context.Background()

	var prev NVIDIAInfo
	for range 3 {
		info := p.Probe(ctx)
		if len(info.GPUs) != 0 || !errors.Is(info.Err, nvml.ERROR_LIBRARY_NOT_FOUND) {
			t.Fatalf("info = %+v", info)
		}
		if Changed(prev, info) {
			t.Errorf("Changed between two GPU-less probes")
		}
		prev = info
	}
	if n := strings.Count(logs.String(), `msg="no NVIDIA GPU"`); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "level=INFO") {
		t.Errorf("not at info level:\n%s", logs.String())
	}

	lib.set(mockLib("550.54.15", 12040, nil, h200))
	info := p.Probe(ctx)
	if len(info.GPUs) != 1 || !Changed(prev, info) {
		t.Fatalf("late driver not found: %+v", info)
	}
	if !strings.Contains(logs.String(), h200.uuid) {
		t.Errorf("new GPU not logged:\n%s", logs.String())
	}
	before := logs.String()
	if again := p.Probe(ctx); Changed(info, again) || logs.String() != before {
		t.Errorf("unchanged re-probe logged or changed:\n%s", logs.String())
	}
}

func TestProberHungDriver(t *testing.T) {
	release := make(chan struct{})
	calls := 0
	var mu sync.Mutex
	m := mockLib("550.54.15", 12040, nil, h200)
	m.InitFunc = func() nvml.Return {
		mu.Lock()
		calls++
		mu.Unlock()
		<-release
		return nvml.SUCCESS
	}
	p := NewProber(m, nil, 20*time.Millisecond)
	info := p.Probe(context.Background())
	if !errors.Is(info.Err, ErrNoNVIDIA) || !strings.Contains(info.Err.Error(), "did not answer") {
		t.Fatalf("hung probe: %+v", info)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if info := p.Probe(ctx); !errors.Is(info.Err, context.Canceled) {
		t.Fatalf("cancelled probe: %+v", info)
	}
	close(release)
	// The stuck call finishes; the next Probe joins it and returns its
	// result, and only one NVML call was ever made.
	p.timeout = time.Minute
	info = p.Probe(context.Background())
	if len(info.GPUs) != 1 {
		t.Fatalf("after release: %+v", info)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Errorf("%d NVML Init calls, want 1 (no pile-up behind a hung driver)", calls)
	}
}

// TestProbeRealNVML runs the real go-nvml. Without a driver it checks the
// no-GPU path (dlopen fails, twice, cleanly); on a GPU host it checks the
// numbers are plausible and logs what the daemon would send.
func TestProbeRealNVML(t *testing.T) {
	p := NewProber(DefaultNVML(), nil, time.Minute)
	info := p.Probe(context.Background())
	if errors.Is(info.Err, nvml.ERROR_LIBRARY_NOT_FOUND) {
		if again := p.Probe(context.Background()); !errors.Is(again.Err, nvml.ERROR_LIBRARY_NOT_FOUND) || len(again.GPUs) != 0 {
			t.Fatalf("re-probe: %+v", again)
		}
		t.Skipf("no NVIDIA driver here: %v", info.Err)
	}
	if info.Err != nil {
		t.Skipf("NVML present but no usable GPU: %v", info.Err)
	}
	for _, g := range info.GPUs {
		t.Logf("%+v", g)
		if !strings.HasPrefix(g.UUID, "GPU-") || g.Major < 3 || g.TotalMem == 0 {
			t.Errorf("implausible GPU %+v", g)
		}
		if g.PeakFlops < 1e11 || g.PeakFlops > 1e15 {
			t.Errorf("%s: peak %g FLOPS implausible", g.Name, g.PeakFlops)
		}
	}
	if info.DrvVersion < 30000 || info.CUDAVersion < 9000 {
		t.Errorf("versions %q %d %d", info.DriverVersion, info.DrvVersion, info.CUDAVersion)
	}
	var b strings.Builder
	if err := WriteCoprocs(&b, info, UsableGPUs(info, false), nil, true); err != nil {
		t.Fatal(err)
	}
	t.Logf("driver %s CUDA %d\n%s", info.DriverVersion, info.CUDAVersion, b.String())
}

func TestProberWarnsOnce(t *testing.T) {
	m := mockLib("550.54.15", 12040, nil, h200, rtx3080)
	ok := m.DeviceGetHandleByIndexFunc
	m.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 1 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return ok(i)
	}
	var logs syncBuffer
	p := NewProber(m, slog.New(slog.NewTextHandler(&logs, nil)), time.Minute)
	for range 3 {
		if info := p.Probe(context.Background()); len(info.GPUs) != 1 || len(info.Warnings) != 1 {
			t.Fatalf("info = %+v", info)
		}
	}
	if n := strings.Count(logs.String(), "ERROR_GPU_IS_LOST"); n != 1 {
		t.Errorf("warning logged %d times, want once:\n%s", n, logs.String())
	}
	if n := strings.Count(logs.String(), h200.uuid); n != 1 {
		t.Errorf("GPU logged %d times, want once:\n%s", n, logs.String())
	}
}
