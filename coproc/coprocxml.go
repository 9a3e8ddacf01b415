package coproc

// The <coprocs>/<coproc_cuda> elements as the C++ client writes them
// (lib/coproc.cpp COPROCS::write_xml, COPROC_NVIDIA::write_xml,
// PCI_INFO::write): same element order, same indentation, doubles as
// printf "%f".

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Request is the per-resource work request of a scheduler RPC: written
// inside <coproc_cuda> only in scheduler requests.
type Request struct {
	ReqSecs, ReqInstances, EstimatedDelay float64
}

// cudaLimits are the cudaDeviceProp fields NVML cannot report. They are
// fixed per compute capability (CUDA Programming Guide, "Technical
// Specifications per Compute Capability"), so each architecture's
// standard values are written, as cuDeviceGetAttribute would return them.
type cudaLimits struct {
	sharedMemPerBlock  float64
	regsPerBlock       int
	warpSize           int
	memPitch           float64
	maxThreadsPerBlock int
	maxThreadsDim      [3]int
	maxGridSize        [3]int
	totalConstMem      float64
	textureAlignment   float64
	deviceOverlap      int
}

// limitsFor returns the standard values:
//
//	CC ≥ 3: sharedMemPerBlock 49152, regsPerBlock 65536 (32768 on the
//	        Tegra parts 3.2, 5.3, 6.2), warpSize 32, memPitch 2147483647,
//	        maxThreadsPerBlock 1024, maxThreadsDim 1024 1024 64,
//	        maxGridSize 2147483647 65535 65535, totalConstMem 65536,
//	        textureAlignment 512, deviceOverlap 1
//	CC 2.x: as CC 3 but regsPerBlock 32768, maxGridSize 65535 65535 65535
//	CC 1.x: sharedMemPerBlock 16384, regsPerBlock 8192 (16384 from 1.2),
//	        maxThreadsPerBlock 512, maxThreadsDim 512 512 64,
//	        maxGridSize 65535 65535 1, textureAlignment 256
//	unknown CC: all 0.
func limitsFor(major, minor int) cudaLimits {
	l := cudaLimits{
		sharedMemPerBlock: 49152, regsPerBlock: 65536, warpSize: 32,
		memPitch: 2147483647, maxThreadsPerBlock: 1024,
		maxThreadsDim: [3]int{1024, 1024, 64}, maxGridSize: [3]int{2147483647, 65535, 65535},
		totalConstMem: 65536, textureAlignment: 512, deviceOverlap: 1,
	}
	switch {
	case major <= 0:
		return cudaLimits{}
	case major == 1:
		l.sharedMemPerBlock, l.regsPerBlock = 16384, 8192
		if minor >= 2 {
			l.regsPerBlock = 16384
		}
		l.maxThreadsPerBlock = 512
		l.maxThreadsDim = [3]int{512, 512, 64}
		l.maxGridSize = [3]int{65535, 65535, 1}
		l.textureAlignment = 256
	case major == 2:
		l.regsPerBlock = 32768
		l.maxGridSize = [3]int{65535, 65535, 65535}
	case (major == 3 && minor == 2) || (major == 5 && minor == 3) || (major == 6 && minor == 2):
		l.regsPerBlock = 32768
	}
	return l
}

// WriteCoprocs writes the <coprocs> element of <host_info> (client_state,
// GUI RPC, init_data.xml): empty when no device is usable, exactly as the
// fixtures show. Scheduler requests are different: the C++ client omits
// <coprocs> there unless the host has a GPU, so call WriteCoprocCUDA inside
// your own <coprocs> only when len(usable) > 0.
func WriteCoprocs(w io.Writer, info NVIDIAInfo, usable []GPU, req *Request, withPCI bool) error {
	if _, err := io.WriteString(w, "    <coprocs>\n"); err != nil {
		return fmt.Errorf("writing <coprocs>: %w", err)
	}
	if err := WriteCoprocCUDA(w, info, usable, req, withPCI); err != nil {
		return err
	}
	if _, err := io.WriteString(w, "    </coprocs>\n"); err != nil {
		return fmt.Errorf("writing </coprocs>: %w", err)
	}
	return nil
}

// WriteCoprocCUDA writes <coproc_cuda> for the usable devices (from
// UsableGPUs) and writes nothing when there are none, as the C++ client.
// Like the C++ client it describes one device, the best (BestGPU), with
// count = len(usable): peak_flops is that device's, per instance, not the
// sum (the client and schedulers multiply by count themselves). req, when
// non-nil, adds the scheduler-request fields. withPCI adds one <pci_info>
// per usable device in index order; the C++ client writes those in
// client_state.xml and GUI RPC replies, not in scheduler requests.
// have_opencl is always 0: boincd does not probe OpenCL.
func WriteCoprocCUDA(w io.Writer, info NVIDIAInfo, usable []GPU, req *Request, withPCI bool) error {
	best, ok := BestGPU(usable)
	if !ok {
		return nil
	}
	bw := bufio.NewWriter(w)
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 6, 64) }
	haveCUDA := 0
	if info.CUDAVersion > 0 {
		haveCUDA = 1
	}
	fmt.Fprintf(bw, "<coproc_cuda>\n"+
		"   <count>%d</count>\n"+
		"   <name>%s</name>\n"+
		"   <available_ram>%s</available_ram>\n"+
		"   <have_cuda>%d</have_cuda>\n"+
		"   <have_opencl>0</have_opencl>\n",
		len(usable), escapeGPUName(best.Name), f(float64(best.FreeMem)), haveCUDA)
	if req != nil {
		fmt.Fprintf(bw, "   <req_secs>%s</req_secs>\n"+
			"   <req_instances>%s</req_instances>\n"+
			"   <estimated_delay>%s</estimated_delay>\n",
			f(req.ReqSecs), f(req.ReqInstances), f(req.EstimatedDelay))
	}
	l := limitsFor(best.Major, best.Minor)
	fmt.Fprintf(bw, "   <peak_flops>%s</peak_flops>\n"+
		"   <cudaVersion>%d</cudaVersion>\n"+
		"   <drvVersion>%d</drvVersion>\n"+
		"   <totalGlobalMem>%s</totalGlobalMem>\n"+
		"   <sharedMemPerBlock>%s</sharedMemPerBlock>\n"+
		"   <regsPerBlock>%d</regsPerBlock>\n"+
		"   <warpSize>%d</warpSize>\n"+
		"   <memPitch>%s</memPitch>\n"+
		"   <maxThreadsPerBlock>%d</maxThreadsPerBlock>\n"+
		"   <maxThreadsDim>%d %d %d</maxThreadsDim>\n"+
		"   <maxGridSize>%d %d %d</maxGridSize>\n"+
		"   <clockRate>%d</clockRate>\n"+
		"   <totalConstMem>%s</totalConstMem>\n"+
		"   <major>%d</major>\n"+
		"   <minor>%d</minor>\n"+
		"   <textureAlignment>%s</textureAlignment>\n"+
		"   <deviceOverlap>%d</deviceOverlap>\n"+
		"   <multiProcessorCount>%d</multiProcessorCount>\n",
		f(best.PeakFlops), info.CUDAVersion, info.DrvVersion, f(float64(best.TotalMem)),
		f(l.sharedMemPerBlock), l.regsPerBlock, l.warpSize, f(l.memPitch), l.maxThreadsPerBlock,
		l.maxThreadsDim[0], l.maxThreadsDim[1], l.maxThreadsDim[2],
		l.maxGridSize[0], l.maxGridSize[1], l.maxGridSize[2],
		best.ClockMHz*1000, f(l.totalConstMem), best.Major, best.Minor,
		f(l.textureAlignment), l.deviceOverlap, best.SMCount)
	if withPCI {
		for _, g := range usable {
			domain, bus, dev := parsePCIBusID(g.PCIBusID)
			fmt.Fprintf(bw, "<pci_info>\n"+
				"   <bus_id>%d</bus_id>\n"+
				"   <device_id>%d</device_id>\n"+
				"   <domain_id>%d</domain_id>\n"+
				"</pci_info>\n", bus, dev, domain)
		}
	}
	bw.WriteString("</coproc_cuda>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing <coproc_cuda>: %w", err)
	}
	return nil
}

// parsePCIBusID splits "DDDDDDDD:BB:DD.F" (or the legacy "DDDD:BB:DD.F")
// into domain, bus and device numbers; anything else gives zeros, which is
// what the C++ client writes when CUDA reports no PCI location.
func parsePCIBusID(s string) (domain, bus, dev int) {
	parts := strings.Split(strings.TrimSpace(s), ":")
	if len(parts) != 3 {
		return 0, 0, 0
	}
	devFn, _, _ := strings.Cut(parts[2], ".")
	d, err1 := strconv.ParseUint(parts[0], 16, 32)
	b, err2 := strconv.ParseUint(parts[1], 16, 8)
	v, err3 := strconv.ParseUint(devFn, 16, 8)
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, 0, 0
	}
	return int(d), int(b), int(v)
}

// escapeGPUName makes a device name safe as element text. Real names never
// need it (the C++ client writes them raw), a broken driver's might.
func escapeGPUName(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
