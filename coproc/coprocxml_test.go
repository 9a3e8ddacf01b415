package coproc

import (
	"bytes"
	"encoding/xml"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// h200Info is one H200 as NVML reports it on a driver 550.54.15 host.
func h200Info() NVIDIAInfo {
	return NVIDIAInfo{
		GPUs: []GPU{{UUID: "GPU-11111111-2222-3333-4444-555555555555", Name: "NVIDIA H200",
			PCIBusID: "00000000:19:00.0", TotalMem: 150754820096, FreeMem: 150200000000,
			Major: 9, Minor: 0, SMCount: 132, ClockMHz: 1980, MemClockMHz: 3201,
			PeakFlops: 66908160000000, Usable: true}},
		DriverVersion: "550.54.15", DrvVersion: 55054, CUDAVersion: 12040,
	}
}

// goldenH200 is COPROC_NVIDIA::write_xml(f, false) for that host, fields in
// lib/coproc.cpp order (PROTOCOLS.md §8), CUDA limits as cudaGetDeviceProperties
// reports them on CC 9.0.
const goldenH200 = `<coproc_cuda>
   <count>1</count>
   <name>NVIDIA H200</name>
   <available_ram>150200000000.000000</available_ram>
   <have_cuda>1</have_cuda>
   <have_opencl>0</have_opencl>
   <peak_flops>66908160000000.000000</peak_flops>
   <cudaVersion>12040</cudaVersion>
   <drvVersion>55054</drvVersion>
   <totalGlobalMem>150754820096.000000</totalGlobalMem>
   <sharedMemPerBlock>49152.000000</sharedMemPerBlock>
   <regsPerBlock>65536</regsPerBlock>
   <warpSize>32</warpSize>
   <memPitch>2147483647.000000</memPitch>
   <maxThreadsPerBlock>1024</maxThreadsPerBlock>
   <maxThreadsDim>1024 1024 64</maxThreadsDim>
   <maxGridSize>2147483647 65535 65535</maxGridSize>
   <clockRate>1980000</clockRate>
   <totalConstMem>65536.000000</totalConstMem>
   <major>9</major>
   <minor>0</minor>
   <textureAlignment>512.000000</textureAlignment>
   <deviceOverlap>1</deviceOverlap>
   <multiProcessorCount>132</multiProcessorCount>
<pci_info>
   <bus_id>25</bus_id>
   <device_id>0</device_id>
   <domain_id>0</domain_id>
</pci_info>
</coproc_cuda>
`

// goldenA100Request is the scheduler-request form (write_xml(f, true)) for
// the two identical A100s of testInfo that UsableGPUs keeps when the 80 GB
// card and the RTX are excluded: no pci_info, the request fields after
// have_opencl, count 2 and the per-instance peak_flops.
const goldenA100Request = `<coproc_cuda>
   <count>2</count>
   <name>NVIDIA A100-SXM4-40GB</name>
   <available_ram>41875931136.000000</available_ram>
   <have_cuda>1</have_cuda>
   <have_opencl>0</have_opencl>
   <req_secs>86400.000000</req_secs>
   <req_instances>2.000000</req_instances>
   <estimated_delay>0.500000</estimated_delay>
   <peak_flops>19491840000000.000000</peak_flops>
   <cudaVersion>12040</cudaVersion>
   <drvVersion>55054</drvVersion>
   <totalGlobalMem>42949672960.000000</totalGlobalMem>
   <sharedMemPerBlock>49152.000000</sharedMemPerBlock>
   <regsPerBlock>65536</regsPerBlock>
   <warpSize>32</warpSize>
   <memPitch>2147483647.000000</memPitch>
   <maxThreadsPerBlock>1024</maxThreadsPerBlock>
   <maxThreadsDim>1024 1024 64</maxThreadsDim>
   <maxGridSize>2147483647 65535 65535</maxGridSize>
   <clockRate>1410000</clockRate>
   <totalConstMem>65536.000000</totalConstMem>
   <major>8</major>
   <minor>0</minor>
   <textureAlignment>512.000000</textureAlignment>
   <deviceOverlap>1</deviceOverlap>
   <multiProcessorCount>108</multiProcessorCount>
</coproc_cuda>
`

func TestWriteCoprocCUDA(t *testing.T) {
	a100s := testInfo()
	if w := ApplyExclusions(&a100s, []Exclusion{{Device: "GPU-a2"}, {Device: "3"}}); len(w) != 0 {
		t.Fatal(w)
	}
	tests := []struct {
		name    string
		info    NVIDIAInfo
		req     *Request
		withPCI bool
		want    string
	}{
		{"H200 with pci_info", h200Info(), nil, true, goldenH200},
		{"A100 pair, scheduler request", a100s, &Request{ReqSecs: 86400, ReqInstances: 2, EstimatedDelay: 0.5}, false, goldenA100Request},
		{"no usable GPU writes nothing", NVIDIAInfo{}, &Request{}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteCoprocCUDA(&b, tt.info, UsableGPUs(tt.info, false), tt.req, tt.withPCI); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
			if tt.want != "" {
				var v struct {
					Count int    `xml:"count"`
					Name  string `xml:"name"`
				}
				if err := xml.Unmarshal(b.Bytes(), &v); err != nil || v.Count == 0 || v.Name == "" {
					t.Errorf("not well-formed: %+v %v", v, err)
				}
			}
		})
	}
}

func TestWriteCoprocCUDAPCIPerDevice(t *testing.T) {
	info := testInfo()
	info.GPUs = info.GPUs[:2]
	info.GPUs[0].PCIBusID = "00000000:07:00.0"
	info.GPUs[1].PCIBusID = "0001:0F:1a.0" // legacy form, other domain
	var b bytes.Buffer
	if err := WriteCoprocCUDA(&b, info, UsableGPUs(info, false), nil, true); err != nil {
		t.Fatal(err)
	}
	want := "<pci_info>\n   <bus_id>7</bus_id>\n   <device_id>0</device_id>\n   <domain_id>0</domain_id>\n</pci_info>\n" +
		"<pci_info>\n   <bus_id>15</bus_id>\n   <device_id>26</device_id>\n   <domain_id>1</domain_id>\n</pci_info>\n</coproc_cuda>\n"
	if !strings.HasSuffix(b.String(), want) {
		t.Errorf("got:\n%s", b.String())
	}
}

func TestWriteCoprocCUDAHostileName(t *testing.T) {
	info := h200Info()
	info.GPUs[0].Name = "</name><evil>&"
	var b bytes.Buffer
	if err := WriteCoprocCUDA(&b, info, UsableGPUs(info, false), nil, false); err != nil {
		t.Fatal(err)
	}
	var v struct {
		Name string `xml:"name"`
	}
	if err := xml.Unmarshal(b.Bytes(), &v); err != nil || v.Name != info.GPUs[0].Name {
		t.Errorf("name round trip: %q %v", v.Name, err)
	}
}

// TestWriteCoprocsEmptyMatchesFixture compares the GPU-less <coprocs> with
// what the C++ 7.20 client wrote on the fixture host (no GPU).
func TestWriteCoprocsEmptyMatchesFixture(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedFixtures, "client_files", "client_state_task_running.xml"))
	if err != nil {
		t.Fatal(err)
	}
	start := bytes.Index(data, []byte("    <coprocs>"))
	end := bytes.Index(data, []byte("</coprocs>\n"))
	if start < 0 || end < 0 {
		t.Fatal("fixture has no <coprocs>")
	}
	want := string(data[start : end+len("</coprocs>\n")])
	var b bytes.Buffer
	info := NVIDIAInfo{Err: ErrNoNVIDIA}
	if err := WriteCoprocs(&b, info, UsableGPUs(info, false), nil, true); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}

	// With a GPU the element sits between the same two lines.
	b.Reset()
	if err := WriteCoprocs(&b, h200Info(), UsableGPUs(h200Info(), false), nil, true); err != nil {
		t.Fatal(err)
	}
	if b.String() != "    <coprocs>\n"+goldenH200+"    </coprocs>\n" {
		t.Errorf("got:\n%s", b.String())
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteCoprocsWriteError(t *testing.T) {
	if err := WriteCoprocCUDA(failWriter{}, h200Info(), UsableGPUs(h200Info(), false), nil, false); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("err = %v", err)
	}
	if err := WriteCoprocs(failWriter{}, NVIDIAInfo{}, nil, nil, false); err == nil {
		t.Error("no error")
	}
}

func TestLimitsFor(t *testing.T) {
	if l := limitsFor(0, 0); l != (cudaLimits{}) {
		t.Errorf("unknown CC: %+v", l)
	}
	if l := limitsFor(2, 1); l.regsPerBlock != 32768 || l.maxGridSize[0] != 65535 {
		t.Errorf("CC 2.1: %+v", l)
	}
	if l := limitsFor(5, 3); l.regsPerBlock != 32768 || l.maxThreadsPerBlock != 1024 {
		t.Errorf("CC 5.3 (Tegra X1): %+v", l)
	}
	if l := limitsFor(1, 3); l.maxThreadsPerBlock != 512 || l.regsPerBlock != 16384 || l.textureAlignment != 256 {
		t.Errorf("CC 1.3: %+v", l)
	}
	if l := limitsFor(12, 0); l.regsPerBlock != 65536 || l.maxGridSize[0] != 2147483647 {
		t.Errorf("CC 12.0: %+v", l)
	}
}
