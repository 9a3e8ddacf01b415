//go:build linux && cgo

// The mock GPU goes through the NVML probe, which exists only where
// go-nvml does (Linux with cgo).

package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	"github.com/boincd/boincd/boinc"
	guiclient "github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestGPUUsageSharesOneGPU runs a daemon on one mocked A100 against a
// project whose only app is a CUDA version using one GPU a task (the
// reference sleeper: it never touches the GPU, the daemon schedules by
// it). app_config.xml's <gpu_versions> decides how many tasks share the
// GPU: with gpu_usage 0.5 two run at once on device 0, each told so in
// its init_data.xml and shown so over GUI RPC; without app_config.xml,
// or with gpu_usage 1, one runs at a time although more wait.
func TestGPUUsageSharesOneGPU(t *testing.T) {
	t.Parallel()
	const app = "gpuapp"
	gpuVersions := func(gpu, cpu string) string {
		return "<app_config>\n<app>\n<name>" + app + "</name>\n<gpu_versions>\n<gpu_usage>" + gpu +
			"</gpu_usage>\n<cpu_usage>" + cpu + "</cpu_usage>\n</gpu_versions>\n</app>\n</app_config>\n"
	}
	tests := []struct {
		name      string
		appConfig string // "": none
		running   int    // tasks executing at once
		gpuUsage  string // init_data.xml <gpu_usage>
		ncpus     string // init_data.xml <ncpus>
		resources string // GUI RPC <resources>
	}{
		{"gpu_usage 0.5", gpuVersions("0.5", "0.5"), 2, "0.500000", "0.500000", "0.5 CPUs + 0.5 NVIDIA GPUs"},
		{"no app_config", "", 1, "1.000000", "1.000000", "1 CPU + 1 NVIDIA GPU"},
		{"gpu_usage 1", gpuVersions("1", "0.5"), 1, "1.000000", "0.500000", "0.5 CPUs + 1 NVIDIA GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testproject.ShellApp(app, testproject.RefAppScript)
			a.PlanClass, a.NGPUs = "cuda", 1
			srv := testsupport.StartProject(t, testproject.Config{
				Apps:      []testproject.App{a},
				Job:       testproject.JobTemplate{CommandLine: "--seconds 120", FpopsEst: 120e9},
				TotalJobs: 4,
			})
			dataDir := filepath.Join(t.TempDir(), "data")
			if tc.appConfig != "" {
				dir := filepath.Join(dataDir, "projects", boinc.EscapeProjectURL(srv.URL()))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "app_config.xml"), []byte(tc.appConfig), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// One A100: whatever runs at once shares it.
			mock := dgxa100.NewWithGPUs(gpus.A100_SXM4_40GB)
			h := startDaemonIn(t, dataDir, projectsConfig(srv), func(o *Options) { o.NVML = mock })

			running := func(v View) []TaskView {
				var out []TaskView
				for _, tv := range v.Tasks {
					if tv.Running {
						out = append(out, tv)
					}
				}
				return out
			}
			// More tasks than run: the GPU, not a lack of work, is the limit.
			testsupport.WaitFor(t, 90*time.Second, strconv.Itoa(tc.running)+" GPU tasks running and one more waiting", func() bool {
				v := h.snapshot()
				return len(running(v)) == tc.running && len(v.Tasks) > tc.running
			})
			var v View
			for end := time.Now().Add(4 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				v = h.snapshot()
				if n := len(running(v)); n != tc.running {
					t.Fatalf("%d tasks running on one GPU, want %d (of %d held)", n, tc.running, len(v.Tasks))
				}
			}

			for _, tv := range running(v) {
				init := string(readFile(t, filepath.Join(dataDir, "slots", strconv.Itoa(tv.Slot), "init_data.xml")))
				for _, want := range []string{
					"<gpu_type>NVIDIA</gpu_type>", "<gpu_device_num>0</gpu_device_num>",
					"<gpu_usage>" + tc.gpuUsage + "</gpu_usage>", "<ncpus>" + tc.ncpus + "</ncpus>",
					"<plan_class>cuda</plan_class>",
				} {
					if !strings.Contains(init, want) {
						t.Errorf("task %s: init_data.xml lacks %s:\n%s", tv.Name, want, init)
					}
				}
			}

			results := guiResults(t, h)
			executing := 0
			for _, r := range results {
				if r.ActiveTaskState != boinc.TaskExecuting {
					continue
				}
				executing++
				if r.Resources != tc.resources || r.PID <= 0 {
					t.Errorf("GUI RPC: task %s resources %q pid %d, want %q and a process", r.Name, r.Resources, r.PID, tc.resources)
				}
			}
			if executing != tc.running {
				t.Errorf("GUI RPC shows %d tasks executing, want %d", executing, tc.running)
			}
			t.Logf("%s: %d of %d tasks executing on GPU 0, resources %q", tc.name, executing, len(v.Tasks), tc.resources)
		})
	}
}

// guiResults asks the daemon's GUI RPC port for its tasks, as a manager
// does.
func guiResults(t *testing.T, h *harness) []guiclient.Result {
	t.Helper()
	var addr string
	testsupport.WaitFor(t, 10*time.Second, "the GUI RPC address", func() bool {
		if rs := h.logs.Find("GUI RPC listening"); len(rs) > 0 {
			addr = rs[0].Str("address")
		}
		return addr != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := guiclient.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	results, err := c.GetResults(ctx, false)
	if err != nil {
		t.Fatalf("get_results: %v", err)
	}
	return results
}
