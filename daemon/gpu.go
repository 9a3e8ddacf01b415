package daemon

import (
	"bytes"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/workfetch"
)

// gpuReprobePeriod: how often NVIDIA GPUs are looked for again, so a
// driver that loads after boot is found without a restart.
const gpuReprobePeriod = 10 * time.Minute

// gpuState is what the daemon knows about its NVIDIA GPUs.
type gpuState struct {
	prober *coproc.Prober
	info   coproc.NVIDIAInfo
	raw    coproc.NVIDIAInfo // the last probe's, before exclusions
	usable []coproc.GPU      // instance i of the NVIDIA resource is usable[i]
	next   time.Time
	busy   bool
	probed bool // a probe has completed
	warned map[string]bool
}

type gpuProbed struct{ info coproc.NVIDIAInfo }

// gpusDisabled: no_gpus (boincd.toml, the command line or cc_config.xml;
// ccopts.go).
func (d *Daemon) gpusDisabled() bool { return d.opt.NoGPUs || d.cc.eff.NoGPUs }

// maybeProbeGPUs starts an NVIDIA probe in the background when one is due.
func (d *Daemon) maybeProbeGPUs(now time.Time) {
	g := &d.gpu
	if d.gpusDisabled() || g.busy || now.Before(g.next) {
		return
	}
	if g.prober == nil {
		lib := d.opt.NVML
		if lib == nil {
			lib = coproc.DefaultNVML()
		}
		g.prober = coproc.NewProber(lib, d.log.With(slog.String("component", "gpu")), 0)
	}
	g.busy, g.next = true, now.Add(gpuReprobePeriod)
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.send(gpuProbed{g.prober.Probe(d.ctx)})
	}()
}

func (d *Daemon) handleGPUProbed(ev gpuProbed) {
	g := &d.gpu
	g.busy, g.probed = false, true
	g.raw = ev.info
	d.applyGPUInfo(ev.info)
}

// gpuExclusions are the exclusions in force: boincd.toml's gpu_exclude,
// else cc_config.xml's exclude_gpu (the precedence rule, ccopts.go), and
// cc_config.xml's ignore_nvidia_dev, which keeps a device from every
// project. boincd drives NVIDIA GPUs only: entries for other types
// exclude nothing here.
func (d *Daemon) gpuExclusions() []coproc.Exclusion {
	var ex []coproc.Exclusion
	for _, e := range d.cc.eff.GPUExclude {
		ex = append(ex, coproc.Exclusion{Device: e.Device, Project: e.Project})
	}
	for _, x := range d.cc.eff.ExcludeGPUs {
		switch strings.ToLower(x.Type) {
		case "", "nvidia":
		default:
			continue
		}
		if x.App != "" {
			// The schedule places GPU tasks per project; one app's
			// exclusion would need it per app.
			d.gpuWarnOnce("app:"+x.URL+"\x00"+x.App, "exclude_gpu for one app is not supported by boincd; this entry is ignored (leave out <app> to exclude the GPU for the whole project)",
				slog.String("project", x.URL), slog.String("app", x.App), slog.Int("line", x.Line))
			continue
		}
		dev := ""
		if x.DeviceNum >= 0 {
			dev = strconv.Itoa(x.DeviceNum)
		}
		ex = append(ex, coproc.Exclusion{Device: dev, Project: x.URL})
	}
	for _, n := range d.cc.eff.IgnoreGPU["NVIDIA"] {
		ex = append(ex, coproc.Exclusion{Device: strconv.Itoa(n)})
	}
	return ex
}

func (d *Daemon) gpuWarnOnce(key, msg string, attrs ...any) {
	g := &d.gpu
	if g.warned == nil {
		g.warned = map[string]bool{}
	}
	if !g.warned[key] {
		g.warned[key] = true
		d.log.Warn(msg, attrs...)
	}
}

// applyGPUInfo derives the usable GPUs from a probe under the settings
// in force (after each probe, and when a re-read changes them).
func (d *Daemon) applyGPUInfo(raw coproc.NVIDIAInfo) {
	g := &d.gpu
	info := raw
	info.GPUs = slices.Clone(raw.GPUs)
	for _, w := range coproc.ApplyExclusions(&info, d.gpuExclusions()) {
		d.gpuWarnOnce(w, "GPU exclusion", slog.String("problem", w))
	}
	var usable []coproc.GPU
	if !d.gpusDisabled() {
		usable = coproc.UsableGPUs(info, d.cc.eff.UseAllGPUs)
	}
	if len(usable) != len(g.usable) {
		d.log.Info("usable NVIDIA GPUs", slog.Int("count", len(usable)))
	}
	g.info, g.usable = info, usable
	d.host.NUsableCoprocs = len(usable)
}

// gpuExcludedFor reports whether every usable GPU is excluded for the
// project, so it is treated as having no NVIDIA apps. A partial exclusion
// cannot be honoured by the schedule yet: it is logged once.
func (d *Daemon) gpuExcludedFor(url string) bool {
	if len(d.gpu.usable) == 0 {
		return false
	}
	var ex []coproc.Exclusion
	for _, e := range d.gpuExclusions() {
		if e.Project != "" {
			ex = append(ex, e)
		}
	}
	if len(ex) == 0 {
		return false
	}
	idx := coproc.ProjectExcluded(d.gpu.info, ex, url)
	if len(idx) == 0 {
		return false
	}
	excluded := map[int]bool{}
	for _, i := range idx {
		excluded[i] = true
	}
	n := 0
	for _, g := range d.gpu.usable {
		if excluded[g.Index] {
			n++
		}
	}
	if n > 0 && n < len(d.gpu.usable) {
		key := "partial:" + url
		if d.gpu.warned == nil {
			d.gpu.warned = map[string]bool{}
		}
		if !d.gpu.warned[key] {
			d.gpu.warned[key] = true
			d.log.Warn("GPU exclusion of some devices for one project is not applied yet; exclude all of them or none",
				slog.String("project", url))
		}
	}
	return n == len(d.gpu.usable)
}

// addGPUs fills the NVIDIA resource of the core's host.
func (d *Daemon) addGPUs(h *workfetch.Host) {
	n := len(d.gpu.usable)
	if n == 0 {
		return
	}
	h.Instances[workfetch.NVIDIA] = float64(n)
	best, _ := coproc.BestGPU(d.gpu.usable)
	if d.host.PFpops > 0 && best.PeakFlops > 0 {
		h.RelSpeed[workfetch.NVIDIA] = best.PeakFlops / d.host.PFpops
	} else {
		h.RelSpeed[workfetch.NVIDIA] = 10 // the C++ client's assumption
	}
}

// gpuDevices maps the schedule's instance numbers to CUDA device numbers.
func (d *Daemon) gpuDevices(instances []int) []int {
	out := make([]int, 0, len(instances))
	for _, i := range instances {
		if i >= 0 && i < len(d.gpu.usable) {
			out = append(out, d.gpu.usable[i].Index)
		}
	}
	return out
}

// coprocsXML is the <coprocs> body of a scheduler request.
func (d *Daemon) coprocsXML(work workfetch.Request) string {
	if len(d.gpu.usable) == 0 {
		return ""
	}
	var b bytes.Buffer
	req := &coproc.Request{
		ReqSecs:        work.Secs[workfetch.NVIDIA],
		ReqInstances:   work.Instances[workfetch.NVIDIA],
		EstimatedDelay: d.core.sim.Rsc[workfetch.NVIDIA].BusyTime,
	}
	if err := coproc.WriteCoprocCUDA(&b, d.gpu.info, d.gpu.usable, req, false); err != nil {
		d.log.Error("cannot describe the GPUs to the scheduler", slog.Any("err", err))
		return ""
	}
	return b.String()
}

func (d *Daemon) guiCoprocs() []guirpc.CoprocInfo {
	if len(d.gpu.usable) == 0 {
		return nil
	}
	best, _ := coproc.BestGPU(d.gpu.usable)
	return []guirpc.CoprocInfo{{
		Type: workfetch.NVIDIA, Count: len(d.gpu.usable), Name: best.Name,
		AvailableRAM: float64(best.FreeMem), PeakFlops: best.PeakFlops * float64(len(d.gpu.usable)),
		CUDAVersion: d.gpu.info.CUDAVersion, DriverVersion: d.gpu.info.DrvVersion,
	}}
}
