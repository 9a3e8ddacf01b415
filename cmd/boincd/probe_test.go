package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/platform"
)

func TestProbeCommand(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		check    func(t *testing.T, out string)
	}{
		{
			name: "table",
			args: []string{"--dir", dir, "--no-containers"},
			check: func(t *testing.T, out string) {
				for _, s := range []string{"Host", "CPU", "logical", "physical", "features", "+sse2", "Memory", "swap", "Disk", dir, "OS", "Platforms", "primary", "alternates", platform.This(), "Benchmarks", "use --benchmark", "GPUs", "NVIDIA", "Containers", "not checked"} {
					if !strings.Contains(out, s) && !(s == "+sse2" && strings.Contains(out, "-sse2")) {
						t.Errorf("output lacks %q:\n%s", s, out)
					}
				}
			},
		},
		{
			name: "table with benchmarks",
			args: []string{"--dir", dir, "--benchmark", "--benchmark-seconds", "0.05", "--no-containers"},
			check: func(t *testing.T, out string) {
				for _, s := range []string{"floating point", "(Whetstone)", "(Dhrystone)", "million ops/s per CPU"} {
					if !strings.Contains(out, s) {
						t.Errorf("output lacks %q:\n%s", s, out)
					}
				}
			},
		},
		{
			name: "json",
			args: []string{"--json", "--dir", dir, "--benchmark", "--benchmark-seconds", "0.05", "--no-containers"},
			check: func(t *testing.T, out string) {
				var doc probeDoc
				if err := json.Unmarshal([]byte(out), &doc); err != nil {
					t.Fatalf("not JSON: %v\n%s", err, out)
				}
				if doc.CPU.Logical < 1 || doc.Host.PNCPUs < 1 || doc.Memory.Total <= 0 || doc.Disk.Dir != dir || doc.OS.Name == "" {
					t.Fatalf("doc = %+v", doc)
				}
				if doc.Benchmarks == nil || doc.Benchmarks.FpopsPerCPU <= 0 || doc.Host.PIops != doc.Benchmarks.IopsPerCPU {
					t.Fatalf("benchmarks = %+v, host %+v", doc.Benchmarks, doc.Host)
				}
				if doc.Platforms.Primary == "" || doc.Platforms.Alternates == nil {
					t.Fatalf("platforms = %+v", doc.Platforms)
				}
				if len(doc.CPU.Has) != len(planClassFeatures) {
					t.Fatalf("plan class features %v", doc.CPU.Has)
				}
				if len(doc.GPUs.NVIDIA.GPUs) == 0 && doc.GPUs.NVIDIA.NotFound == "" {
					t.Fatal("no GPU and no reason")
				}
				var want strings.Builder
				if err := coproc.WriteHostInfo(&want, doc.Host, coproc.HostInfoOptions{}); err != nil || doc.HostInfo != want.String() {
					t.Fatalf("host_info_xml\n%s\nwant\n%s", doc.HostInfo, want.String())
				}
			},
		},
		{
			name: "xml",
			args: []string{"--xml", "--dir", dir, "--no-containers"},
			check: func(t *testing.T, out string) {
				if !strings.HasPrefix(out, "<host_info>\n    <timezone>") || !strings.HasSuffix(out, "</host_info>\n") {
					t.Fatalf("not host_info:\n%s", out)
				}
			},
		},
		{name: "help", args: []string{"--help"}, wantCode: 0},
		{name: "bad flag", args: []string{"--nope"}, wantCode: 2},
		{name: "stray argument", args: []string{"extra"}, wantCode: 2},
		{name: "bad duration", args: []string{"--benchmark-seconds", "0"}, wantCode: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(append([]string{"boincd", "probe"}, tt.args...), &out, &errb)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr %s", code, tt.wantCode, errb.String())
			}
			if tt.check != nil {
				tt.check(t, out.String())
			}
		})
	}
}

func TestProbeHelpers(t *testing.T) {
	tests := []struct{ got, want string }{
		{tzOffset(0), "+00:00"},
		{tzOffset(19800), "+05:30"},
		{tzOffset(-25200), "-07:00"},
		{cudaVersion(12040), "12.4"},
		{cudaVersion(11080), "11.8"},
		{cudaVersion(0), "unknown"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}

// TestWriteProbeGPUs renders a host with GPUs, as the NVIDIA probe
// reports them on a machine with a driver.
func TestWriteProbeGPUs(t *testing.T) {
	d := probeDoc{
		CPU: probeCPUDoc{Has: map[string]bool{"neon": true}},
		GPUs: probeGPUDoc{NVIDIA: probeNVIDIADoc{
			DriverVersion: "550.54.15", CUDAVersion: 12040, Usable: 1,
			GPUs: []coproc.GPU{
				{Index: 0, UUID: "GPU-aaaa", Name: "NVIDIA H200", TotalMem: 141 << 30, Major: 9, SMCount: 132, ClockMHz: 1980, PeakFlops: 66.9e12, Usable: true},
				{Index: 1, UUID: "GPU-bbbb", Name: "NVIDIA T400", Major: 7, Minor: 5, MIG: true, WhyNotUsable: "excluded by cc_config"},
			},
			Warnings: []string{"device 2: no UUID"},
		}},
	}
	var b bytes.Buffer
	writeProbe(&b, &d)
	for _, s := range []string{
		"+neon", "not run",
		"550.54.15, CUDA 12.4, 1 of 2 usable",
		"GPU 0          NVIDIA H200, 141.0 GiB, CC 9.0, 132 SMs, 1980 MHz, 66900 GFLOPS peak; usable (GPU-aaaa)",
		"GPU 1          NVIDIA T400, 0 B, CC 7.5, 0 SMs, 0 MHz, 0 GFLOPS peak; not usable: excluded by cc_config, MIG (GPU-bbbb)",
		"warning        device 2: no UUID",
	} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}

// The platforms shown are the daemon's: cc_config.xml's no_alt_platform
// and alt_platform apply.
func TestProbePlatformsCCConfig(t *testing.T) {
	dir := t.TempDir()
	cc := "<cc_config><options><no_alt_platform/><alt_platform>my-custom-platform</alt_platform></options></cc_config>"
	if err := os.WriteFile(filepath.Join(dir, "cc_config.xml"), []byte(cc), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := probePlatforms(context.Background(), dir)
	names, _ := platform.Host(context.Background())
	if doc.Primary != names[0] || !slices.Equal(doc.Alternates, []string{"my-custom-platform"}) {
		t.Errorf("platforms %+v, want primary %q and only my-custom-platform", doc, names[0])
	}
}
