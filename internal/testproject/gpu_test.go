package testproject

import (
	"slices"
	"strings"
	"testing"

	"github.com/boincd/boincd/rpcclient"
)

// gpuApp is the reference sleeper app announced as a CUDA version using
// ngpus NVIDIA GPUs per task.
func gpuApp(name string, ngpus float64) App {
	a := ShellApp(name, RefAppScript)
	a.PlanClass, a.NGPUs = "cuda", ngpus
	return a
}

// A GPU app's version carries the plan class and the <coproc> host usage
// as a real scheduler writes them, its results the plan class, and the
// client's own reply parser reads them as a GPU version.
func TestGPUAppVersionReply(t *testing.T) {
	s := startServer(t, Config{Apps: []App{gpuApp("gpuapp", 1)}})
	raw := rpc(t, s, makeRequest(reqOpts{cudaSecs: 2}))
	const coprocXML = "    <plan_class>cuda</plan_class>\n" +
		"    <avg_ncpus>1.000000</avg_ncpus>\n" +
		"    <flops>1000000000.000000</flops>\n" +
		"    <coproc>\n" +
		"        <type>NVIDIA</type>\n" +
		"        <count>1.000000</count>\n" +
		"    </coproc>\n"
	if !strings.Contains(string(raw), coprocXML) {
		t.Errorf("reply lacks the GPU version's usage\n%s\nin\n%s", coprocXML, raw)
	}
	r, err := rpcclient.ParseSchedulerReply(raw)
	if err != nil {
		t.Fatalf("the client's parser refuses the reply: %v\n%s", err, raw)
	}
	if len(r.AppVersions) != 1 {
		t.Fatalf("%d app versions, want 1", len(r.AppVersions))
	}
	v := r.AppVersions[0]
	if v.PlanClass != "cuda" || v.Coproc == nil || v.Coproc.Type != "NVIDIA" || v.Coproc.Count != 1 {
		t.Errorf("app version: plan class %q coproc %+v", v.PlanClass, v.Coproc)
	}
	if len(r.Results) != 2 {
		t.Fatalf("%d results for 2 s of GPU work at 1 s a job, want 2", len(r.Results))
	}
	for _, res := range r.Results {
		if res.PlanClass != "cuda" {
			t.Errorf("result %s: plan class %q, want cuda (the version lookup needs it)", res.Name, res.PlanClass)
		}
	}

	// A CPU app's reply keeps its form: no plan class, no <coproc>.
	c := startServer(t, Config{})
	if raw := string(rpc(t, c, makeRequest(reqOpts{reqSecs: 1}))); strings.Contains(raw, "plan_class") || strings.Contains(raw, "<coproc>") {
		t.Errorf("CPU app reply names a plan class or coproc:\n%s", raw)
	}
}

// Jobs answer the resource they run on: CPU apps the CPU request, GPU
// apps the NVIDIA request, each covering seconds and instances as a real
// scheduler does (a 0.5-GPU job fills half an instance).
func TestGPUWorkSelection(t *testing.T) {
	cpuApp := DefaultApp()
	tests := []struct {
		name string
		apps []App
		req  reqOpts
		want []string // apps of the jobs sent, in order
	}{
		{"GPU app, CPU request", []App{gpuApp("g", 1)}, reqOpts{reqSecs: 5, reqInst: 2}, nil},
		{"GPU app, GPU seconds", []App{gpuApp("g", 1)}, reqOpts{cudaSecs: 2.5}, []string{"g", "g", "g"}},
		{"GPU app, GPU instance", []App{gpuApp("g", 1)}, reqOpts{cudaInst: 1}, []string{"g"}},
		{"half-GPU app, GPU instance", []App{gpuApp("g", 0.5)}, reqOpts{cudaInst: 1}, []string{"g", "g"}},
		{"CPU app, GPU request", []App{cpuApp}, reqOpts{cudaSecs: 5, cudaInst: 1}, nil},
		{"both, CPU request", []App{cpuApp, gpuApp("g", 1)}, reqOpts{reqSecs: 2}, []string{"refapp", "refapp"}},
		{"both, both requests", []App{cpuApp, gpuApp("g", 1)}, reqOpts{reqSecs: 2, cudaSecs: 2}, []string{"refapp", "g", "refapp", "g"}},
		{"both, capped", []App{gpuApp("g", 1), cpuApp}, reqOpts{reqSecs: 1, cudaSecs: 9}, []string{"g", "refapp", "g", "g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, Config{Apps: tc.apps})
			r := parseReply(t, rpc(t, s, makeRequest(tc.req)))
			jobs := s.Stats().Jobs
			var got []string
			for _, res := range r.Results {
				got = append(got, jobs[res.Name].App)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("jobs of apps %q, want %q", got, tc.want)
			}
			if len(tc.want) == 0 && len(r.Messages) == 0 {
				t.Error("no message in a reply without work")
			}
		})
	}
}
