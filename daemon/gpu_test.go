//go:build cgo

package daemon

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/workfetch"
)

// A DGX A100 (8 GPUs, through go-nvml's mock) becomes 8 NVIDIA instances
// for the core, scheduler requests describe them in <coprocs> with the
// request for them, and schedule instance numbers map to CUDA devices.
func TestGPUsReachCoreAndRequests(t *testing.T) {
	t.Parallel()
	info := coproc.ProbeNVIDIA(dgxa100.New())
	if info.Err != nil || len(info.GPUs) == 0 {
		t.Skipf("mock probe found no GPUs: %v", info.Err)
	}
	d := &Daemon{log: slog.New(slog.DiscardHandler), cfg: config.Default(), host: boinc.Host{PNCPUs: 16, PFpops: 4e9}, core: newCore()}
	d.prefs = d.cfg.BoincPrefs()
	d.handleGPUProbed(gpuProbed{info})
	h := d.coreHost()
	if got := int(h.Instances[workfetch.NVIDIA]); got != len(d.gpu.usable) || got == 0 {
		t.Fatalf("NVIDIA instances = %d, usable %d", got, len(d.gpu.usable))
	}
	if h.RelSpeed[workfetch.NVIDIA] <= 1 {
		t.Fatalf("GPU relative speed %g: a GPU should outrun a CPU", h.RelSpeed[workfetch.NVIDIA])
	}
	if d.host.NUsableCoprocs != len(d.gpu.usable) {
		t.Fatalf("n_usable_coprocs = %d", d.host.NUsableCoprocs)
	}
	var work workfetch.Request
	work.Secs[workfetch.NVIDIA], work.Instances[workfetch.NVIDIA] = 8640, 2
	x := d.coprocsXML(work)
	for _, want := range []string{"<coproc_cuda>", "<req_secs>8640", "<req_instances>2", "<count>"} {
		if !strings.Contains(x, want) {
			t.Fatalf("coprocs XML lacks %q:\n%s", want, x)
		}
	}
	if got := d.gpuDevices([]int{0, 1}); len(got) != 2 || got[0] != d.gpu.usable[0].Index {
		t.Fatalf("devices = %v", got)
	}

	// Excluding every GPU for one project turns its NVIDIA fetch off.
	d.cfg.GPUExclude = []config.GPUExclude{{Project: "http://a.example/"}}
	d.applySettings(time.Now()) // boincd.toml's gpu_exclude (ccopts.go)
	d.handleGPUProbed(gpuProbed{info})
	if !d.gpuExcludedFor("http://a.example/") || d.gpuExcludedFor("http://b.example/") {
		t.Fatal("project-wide GPU exclusion not applied to exactly that project")
	}
	// --no_gpus: nothing is probed.
	d.opt.NoGPUs = true
	if !d.gpusDisabled() {
		t.Fatal("no_gpus ignored")
	}
}
