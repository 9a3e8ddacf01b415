//go:build linux && cgo

// go-nvml's DGX mocks (pkg/nvml/mock/dgxa100, dgxh200) drive the probe
// through whole-machine configurations.

package coproc

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// completeDGX fills what the DGX mocks leave out (clocks, core counts,
// free memory, bus ids) with the real cards' values.
func completeDGX(s *server.Server, cores int, smMHz, memMHz uint32) {
	for _, d := range s.Devices {
		dev := d.(*server.Device)
		dev.MemoryInfo.Free = dev.MemoryInfo.Total - 512<<20
		dev.MemoryInfo.Used = 512 << 20
		dev.GetNumGpuCoresFunc = func() (int, nvml.Return) { return cores, nvml.SUCCESS }
		dev.GetMaxClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_MEM {
				return memMHz, nvml.SUCCESS
			}
			return smMHz, nvml.SUCCESS
		}
		bus := busIDArray("0000" + dev.PciBusID)
		dev.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{BusId: bus, PciDeviceId: dev.Config.PciDeviceId}, nvml.SUCCESS
		}
	}
}

func TestProbeDGXA100(t *testing.T) {
	s := dgxa100.New()
	completeDGX(s, 6912, 1410, 1215)
	info := ProbeNVIDIA(s)
	if info.Err != nil {
		t.Fatal(info.Err)
	}
	if len(info.GPUs) != 8 || info.DriverVersion != "550.54.15" || info.DrvVersion != 55054 || info.CUDAVersion != 12040 {
		t.Fatalf("info = %+v", info)
	}
	seen := map[string]bool{}
	for i, g := range info.GPUs {
		if g.Index != i || g.Major != 8 || g.Minor != 0 || g.SMCount != 108 || g.TotalMem != 40960<<20 ||
			g.PeakFlops != 19491840000000 || !g.Usable || g.MIG || len(g.Unsupported) != 0 ||
			!strings.HasPrefix(g.UUID, "GPU-") || seen[g.UUID] {
			t.Errorf("gpu %d = %+v", i, g)
		}
		seen[g.UUID] = true
	}
	usable := UsableGPUs(info, false)
	if len(usable) != 8 {
		t.Fatalf("%d usable", len(usable))
	}
	var b bytes.Buffer
	if err := WriteCoprocCUDA(&b, info, usable, nil, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<count>8</count>", "<name>Mock NVIDIA A100-SXM4-40GB</name>",
		"<peak_flops>19491840000000.000000</peak_flops>", "<multiProcessorCount>108</multiProcessorCount>",
		"<totalGlobalMem>42949672960.000000</totalGlobalMem>", "<available_ram>42412802048.000000</available_ram>",
		"<bus_id>7</bus_id>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %s in\n%s", want, b.String())
		}
	}
	if n := strings.Count(b.String(), "<pci_info>"); n != 8 {
		t.Errorf("%d pci_info, want 8", n)
	}

	// Exclude one card by UUID, one by index, and a card that is gone.
	warns := ApplyExclusions(&info, []Exclusion{{Device: info.GPUs[3].UUID}, {Device: "5"}, {Device: "GPU-00000000-dead-beef-0000-000000000000"}})
	if len(warns) != 1 || len(UsableGPUs(info, false)) != 6 {
		t.Errorf("warnings %q, usable %d", warns, len(UsableGPUs(info, false)))
	}
}

func TestProbeDGXA100MIG(t *testing.T) {
	s := dgxa100.New()
	completeDGX(s, 6912, 1410, 1215)
	dev, ret := s.DeviceGetHandleByIndex(2)
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	if ret, _ := dev.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	info := ProbeNVIDIA(s)
	if len(info.GPUs) != 8 || !info.GPUs[2].MIG || info.GPUs[2].Usable {
		t.Fatalf("gpu 2 = %+v", info.GPUs[2])
	}
	if n := len(UsableGPUs(info, false)); n != 7 {
		t.Errorf("%d usable, want 7", n)
	}
}

func TestProbeDGXA100InitFailures(t *testing.T) {
	for _, ret := range []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_LIB_RM_VERSION_MISMATCH} {
		s := dgxa100.New()
		s.InitFunc = func() nvml.Return { return ret }
		info := ProbeNVIDIA(s)
		if len(info.GPUs) != 0 || !errors.Is(info.Err, ret) || !errors.Is(info.Err, ErrNoNVIDIA) {
			t.Errorf("%v: %+v", ret, info)
		}
	}
}

func TestProbeDGXH200(t *testing.T) {
	s := dgxh200.New()
	completeDGX(s, 16896, 1980, 3201)
	info := ProbeNVIDIA(s)
	if info.Err != nil || len(info.GPUs) != 8 {
		t.Fatalf("info = %+v", info)
	}
	g := info.GPUs[0]
	// 132 SMs × 128 cores × 1980 MHz × 2 = 66.9 TFLOPS FP32.
	if g.Major != 9 || g.SMCount != 132 || g.PeakFlops != 66908160000000 {
		t.Errorf("gpu = %+v", g)
	}
}

// TestProbeDGXA100Raw probes the mock as shipped: it lacks clocks, core
// counts and attributes (calling them panics inside the mock), which must
// read as unsupported fields, not a crash.
func TestProbeDGXA100Raw(t *testing.T) {
	info := ProbeNVIDIA(dgxa100.New())
	if info.Err != nil || len(info.GPUs) != 8 {
		t.Fatalf("info = %+v", info)
	}
	g := info.GPUs[0]
	want := "pci_bus_id,multiprocessor_count,sm_clock,mem_clock,peak_flops"
	if strings.Join(g.Unsupported, ",") != want || g.PeakFlops != fallbackPeakFlops || g.Major != 8 || !g.Usable {
		t.Errorf("gpu = %+v", g)
	}
}
