package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/ccconfig"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/platform"
)

const probeHelp = `usage: boincd probe [--json] [--xml] [--benchmark [--benchmark-seconds S]] [--no-containers] [--dir DIR]

Shows what boincd finds on this host: CPU (logical and physical count,
vendor, model, flags that plan classes test), memory and swap, the disk
holding DIR, the operating system, NVIDIA GPUs (or why none was found),
the container engine for container apps (podman or Docker, which must
run a container as the user running this command: the hello-world
image may be pulled; --no-containers skips the check) and, with
--benchmark, the CPU benchmarks run now on every CPU (Whetstone
floating point and Dhrystone integer speed per CPU, as the daemon runs
them at first start, when the CPU changes and every 5 days).

--json prints all of it as one JSON document; --xml prints the
<host_info> element exactly as a scheduler request would carry it.
Exit status: 0 ok (warnings go to stderr), 2 usage.
`

// planClassFeatures are the CPU flags projects' plan classes commonly
// require; the table shows each one's presence.
var planClassFeatures = []string{"sse2", "avx", "avx2", "avx512f", "fma", "neon"}

// probeDoc is what --json prints.
type probeDoc struct {
	Host       boinc.Host       `json:"host"`
	CPU        probeCPUDoc      `json:"cpu"`
	Memory     probeMemDoc      `json:"memory"`
	Disk       probeDiskDoc     `json:"disk"`
	OS         probeOSDoc       `json:"os"`
	Platforms  probePlatformDoc `json:"platforms"`
	Benchmarks *probeBenchDoc   `json:"benchmarks,omitempty"`
	GPUs       probeGPUDoc      `json:"gpus"`
	// Containers is nil with --no-containers.
	Containers *probeContainerDoc `json:"containers,omitempty"`
	HostInfo   string             `json:"host_info_xml"`
	Warnings   []string           `json:"warnings,omitempty"`
}

type probeCPUDoc struct {
	Usable   int             `json:"usable"`
	Logical  int             `json:"logical"`
	Physical int             `json:"physical"`
	Vendor   string          `json:"vendor"`
	Model    string          `json:"model"`
	Features []string        `json:"features"`
	Has      map[string]bool `json:"plan_class_features"`
	Cache    float64         `json:"cache_bytes"`
}

type probeMemDoc struct {
	Total     float64 `json:"total_bytes"`
	Available float64 `json:"available_bytes"`
	SwapTotal float64 `json:"swap_total_bytes"`
	SwapFree  float64 `json:"swap_free_bytes"`
}

type probeDiskDoc struct {
	Dir   string  `json:"dir"`
	Total float64 `json:"total_bytes"`
	Free  float64 `json:"free_bytes"`
}

type probeOSDoc struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Kernel  string `json:"kernel"`
	Libc    string `json:"libc,omitempty"`
	Arch    string `json:"arch"`
}

// probePlatformDoc is what the daemon would ask projects for: the primary
// platform and the alternates (package platform), with cc_config.xml's
// no_alt_platform and alt_platform applied, and what the checks found.
type probePlatformDoc struct {
	Primary    string   `json:"primary"`
	Alternates []string `json:"alternates"`
	Checks     []string `json:"checks,omitempty"`
}

type probeBenchDoc struct {
	FpopsPerCPU float64 `json:"fpops_per_cpu"`
	IopsPerCPU  float64 `json:"iops_per_cpu"`
	CPUs        int     `json:"cpus"`
	Seconds     float64 `json:"seconds"`
}

type probeContainerDoc struct {
	Type    string `json:"type"` // docker, podman or none
	Version string `json:"version,omitempty"`
	Program string `json:"program,omitempty"`
	// NotFound says why none works; empty when one does.
	NotFound string `json:"not_found,omitempty"`
}

type probeGPUDoc struct {
	NVIDIA probeNVIDIADoc `json:"nvidia"`
}

type probeNVIDIADoc struct {
	DriverVersion string       `json:"driver_version,omitempty"`
	CUDAVersion   int          `json:"cuda_version,omitempty"`
	GPUs          []coproc.GPU `json:"devices"`
	Usable        int          `json:"usable"`
	Warnings      []string     `json:"warnings,omitempty"`
	// NotFound says why there is no GPU; empty when there is one.
	NotFound string `json:"not_found,omitempty"`
}

func runProbe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("boincd probe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, probeHelp); fs.PrintDefaults() }
	asJSON := fs.Bool("json", false, "print JSON")
	asXML := fs.Bool("xml", false, "print <host_info> as a scheduler request carries it")
	bench := fs.Bool("benchmark", false, "run the CPU benchmarks now")
	benchSecs := fs.Float64("benchmark-seconds", 1, "seconds per benchmark kernel")
	dir := fs.String("dir", ".", "data directory whose filesystem is measured")
	noContainers := fs.Bool("no-containers", false, "skip the container engine check")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "boincd probe: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if *benchSecs <= 0 || *benchSecs > 60 {
		fmt.Fprintf(stderr, "boincd probe: --benchmark-seconds %g: want more than 0 and at most 60\n", *benchSecs)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	var engines container.Runner
	if !*noContainers {
		engines = container.Exec{}
	}
	doc := probe(ctx, *dir, *bench, time.Duration(*benchSecs*float64(time.Second)), engines)
	for _, w := range doc.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	bw := bufio.NewWriter(stdout)
	switch {
	case *asJSON:
		enc := json.NewEncoder(bw)
		enc.SetIndent("", "  ")
		_ = enc.Encode(doc)
	case *asXML:
		bw.WriteString(doc.HostInfo)
	default:
		writeProbe(bw, &doc)
	}
	if err := bw.Flush(); err != nil {
		fmt.Fprintln(stderr, "boincd probe:", err)
		return 1
	}
	return 0
}

// probe gathers everything the command shows; engines runs the container
// engine's programs (nil: no container check).
func probe(ctx context.Context, dir string, bench bool, benchDur time.Duration, engines container.Runner) probeDoc {
	h, x, warns := coproc.ProbeHostExtra(ctx, dir)
	var doc probeDoc
	for _, w := range warns {
		doc.Warnings = append(doc.Warnings, w.Error())
	}
	doc.CPU = probeCPUDoc{
		Usable: h.PNCPUs, Logical: x.LogicalCPUs, Physical: x.PhysicalCPUs,
		Vendor: h.PVendor, Model: h.PModel, Features: strings.Fields(h.PFeatures),
		Has: map[string]bool{}, Cache: h.MCache,
	}
	for _, f := range planClassFeatures {
		doc.CPU.Has[f] = coproc.HasFeature(h.PFeatures, f)
	}
	doc.Memory = probeMemDoc{Total: h.MNBytes, Available: x.MemAvailable, SwapTotal: h.MSwap, SwapFree: x.SwapFree}
	doc.Disk = probeDiskDoc{Dir: dir, Total: h.DTotal, Free: h.DFree}
	doc.OS = probeOSDoc{Name: h.OSName, Version: h.OSVersion, Kernel: x.Kernel, Libc: x.Libc, Arch: x.Arch}
	doc.Platforms = probePlatforms(ctx, dir)

	doc.GPUs.NVIDIA = probeGPUs(ctx)
	h.NUsableCoprocs = doc.GPUs.NVIDIA.Usable
	if engines != nil {
		doc.Containers = probeContainers(ctx, dir, engines)
		if doc.Containers.Version != "" {
			h.DockerVersion = doc.Containers.Version
			h.DockerType = int(container.Docker)
			if doc.Containers.Type == container.Podman.String() {
				h.DockerType = int(container.Podman)
			}
		}
	}

	if bench {
		start := time.Now()
		h.PFpops, h.PIops = coproc.Benchmark(ctx, h.PNCPUs, benchDur)
		h.PMembw = 1e9
		h.PCalculated = float64(time.Now().Unix())
		doc.Benchmarks = &probeBenchDoc{
			FpopsPerCPU: h.PFpops, IopsPerCPU: h.PIops, CPUs: h.PNCPUs,
			Seconds: time.Since(start).Seconds(),
		}
	}
	doc.Host = h
	var hi strings.Builder
	_ = coproc.WriteHostInfo(&hi, h, coproc.HostInfoOptions{})
	doc.HostInfo = hi.String()
	return doc
}

// probePlatforms detects the platforms as the daemon does at start,
// including dir's cc_config.xml.
func probePlatforms(ctx context.Context, dir string) probePlatformDoc {
	names, pr := platform.Host(ctx)
	path := filepath.Join(dir, daemon.CCConfigFile)
	if data, err := os.ReadFile(path); err == nil {
		cc, _ := ccconfig.ParseCC(path, data)
		names = platform.Configure(names, cc.Options.NoAltPlatform, cc.Options.AltPlatforms)
	}
	return probePlatformDoc{Primary: names[0], Alternates: append([]string{}, names[1:]...), Checks: pr.Notes}
}

// probeContainers runs the daemon's detection (container.Detector) as
// the user running the command.
func probeContainers(ctx context.Context, dir string, engines container.Runner) *probeContainerDoc {
	res := (&container.Detector{Runner: engines, DataDir: dir}).Detect(ctx)
	return &probeContainerDoc{
		Type: res.Engine.Type.String(), Version: res.Engine.Version, Program: res.Engine.CLI, NotFound: res.Reason,
	}
}

// probeGPUs is the GPU section: the NVIDIA probe through NVML (with the
// daemon's timeout, so a hung driver cannot hang the command), or why it
// found nothing.
func probeGPUs(ctx context.Context) probeNVIDIADoc {
	info := coproc.NewProber(coproc.DefaultNVML(), nil, 0).Probe(ctx)
	d := probeNVIDIADoc{
		DriverVersion: info.DriverVersion,
		CUDAVersion:   info.CUDAVersion,
		GPUs:          info.GPUs,
		Usable:        len(coproc.UsableGPUs(info, false)),
		Warnings:      info.Warnings,
	}
	if d.GPUs == nil {
		d.GPUs = []coproc.GPU{}
	}
	if info.Err != nil {
		d.NotFound = strings.TrimPrefix(info.Err.Error(), coproc.ErrNoNVIDIA.Error()+": ")
	}
	return d
}

func writeProbe(w io.Writer, d *probeDoc) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t"+format+"\n", append([]any{k}, a...)...) }
	// The tab keeps section titles in the same tabwriter block, so every
	// section is aligned to the same column.
	section := func(s string) { fmt.Fprintln(tw, s+"\t") }

	section("Host")
	row("name", "%s (%s)", d.Host.DomainName, d.Host.IPAddr)
	row("timezone", "UTC%s", tzOffset(d.Host.Timezone))

	section("CPU")
	row("CPUs", "%d logical, %d physical cores, %d usable by boincd", d.CPU.Logical, d.CPU.Physical, d.CPU.Usable)
	row("vendor", "%s", orUnknown(d.CPU.Vendor))
	row("model", "%s", orUnknown(d.CPU.Model))
	var has []string
	for _, f := range planClassFeatures {
		mark := "-"
		if d.CPU.Has[f] {
			mark = "+"
		}
		has = append(has, mark+f)
	}
	row("features", "%d flags; %s", len(d.CPU.Features), strings.Join(has, " "))
	if d.CPU.Cache > 0 {
		row("cache", "%s", bytesize(d.CPU.Cache))
	} else { // ARM Linux reports -1, as the C++ client does
		row("cache", "unknown")
	}

	section("Memory")
	row("RAM", "%s (%s available)", bytesize(d.Memory.Total), bytesize(d.Memory.Available))
	row("swap", "%s (%s free)", bytesize(d.Memory.SwapTotal), bytesize(d.Memory.SwapFree))

	section("Disk")
	row("directory", "%s", d.Disk.Dir)
	row("total", "%s", bytesize(d.Disk.Total))
	row("free", "%s", bytesize(d.Disk.Free))

	section("OS")
	row("name", "%s", d.OS.Name)
	row("version", "%s", d.OS.Version)
	row("arch", "%s", d.OS.Arch)

	section("Platforms")
	row("primary", "%s", d.Platforms.Primary)
	alt := strings.Join(d.Platforms.Alternates, ", ")
	if alt == "" {
		alt = "none"
	}
	row("alternates", "%s", alt)
	for _, c := range d.Platforms.Checks {
		row("checked", "%s", c)
	}

	section("Benchmarks")
	if b := d.Benchmarks; b != nil {
		row("floating point", "%.0f million ops/s per CPU (Whetstone)", b.FpopsPerCPU/1e6)
		row("integer", "%.0f million ops/s per CPU (Dhrystone)", b.IopsPerCPU/1e6)
		row("run", "on %d CPUs at once, %.1f s", b.CPUs, b.Seconds)
	} else {
		row("not run", "use --benchmark")
	}

	section("GPUs")
	n := d.GPUs.NVIDIA
	if len(n.GPUs) == 0 {
		row("NVIDIA", "none: %s", n.NotFound)
	} else {
		row("NVIDIA driver", "%s, CUDA %s, %d of %d usable", n.DriverVersion, cudaVersion(n.CUDAVersion), n.Usable, len(n.GPUs))
		for _, g := range n.GPUs {
			use := "usable"
			if !g.Usable {
				use = "not usable: " + g.WhyNotUsable
			}
			if g.MIG {
				use += ", MIG"
			}
			row(fmt.Sprintf("GPU %d", g.Index), "%s, %s, CC %d.%d, %d SMs, %d MHz, %.0f GFLOPS peak; %s (%s)",
				g.Name, bytesize(float64(g.TotalMem)), g.Major, g.Minor, g.SMCount, g.ClockMHz, g.PeakFlops/1e9, use, g.UUID)
		}
	}
	for _, wn := range n.Warnings {
		row("warning", "%s", wn)
	}

	section("Containers")
	switch c := d.Containers; {
	case c == nil:
		row("not checked", "--no-containers")
	case c.Version != "":
		row("engine", "%s %s (program %s; docker_type %d in host_info)", c.Type, c.Version, c.Program, dockerType(c.Type))
	default:
		row("engine", "none: %s", c.NotFound)
	}
	_ = tw.Flush()
	// Section titles get padded like cells; drop the trailing blanks.
	for line := range strings.Lines(buf.String()) {
		io.WriteString(w, strings.TrimRight(line, " \n")+"\n")
	}
}

func dockerType(t string) int {
	if t == container.Podman.String() {
		return int(container.Podman)
	}
	return int(container.Docker)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// tzOffset formats seconds east of UTC as "+HH:MM".
func tzOffset(secs int) string {
	sign := "+"
	if secs < 0 {
		sign, secs = "-", -secs
	}
	return fmt.Sprintf("%s%02d:%02d", sign, secs/3600, secs%3600/60)
}

// cudaVersion turns NVML's 12040 into "12.4".
func cudaVersion(v int) string {
	if v <= 0 {
		return "unknown"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}
