package coproc

import (
	"reflect"
	"strings"
	"testing"
)

func TestPeakFlops(t *testing.T) {
	tests := []struct {
		name                       string
		major, minor, sms, clockMH int
		want                       float64
	}{
		{"H200 CC 9.0", 9, 0, 132, 1980, 66908160000000},    // ~66.9 TFLOPS
		{"A100 CC 8.0", 8, 0, 108, 1410, 19491840000000},    // 19.5 TFLOPS
		{"RTX 3080 CC 8.6", 8, 6, 68, 1710, 29767680000000}, // 29.8 TFLOPS
		{"V100 CC 7.0", 7, 0, 80, 1530, 15667200000000},
		{"P100 CC 6.0", 6, 0, 56, 1480, 10608640000000},
		{"GTX 1080 CC 6.1", 6, 1, 20, 1733, 8872960000000},
		{"GTX 980 CC 5.2", 5, 2, 16, 1216, 4980736000000},
		{"K80 CC 3.7", 3, 7, 13, 875, 4368000000000},
		{"GTX 480 CC 2.0", 2, 0, 15, 1401, 1344960000000},
		{"GTX 460 CC 2.1", 2, 1, 7, 1350, 907200000000},
		{"GTX 280 CC 1.3: 3 flops/clock", 1, 3, 30, 1296, 933120000000},
		{"B200 CC 10.0", 10, 0, 148, 1965, 74449920000000},
		{"unknown CC", 0, 0, 100, 1000, 0},
		{"unknown SMs", 9, 0, 0, 1980, 0},
		{"unknown clock", 9, 0, 132, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PeakFlops(tt.major, tt.minor, tt.sms, tt.clockMH); got != tt.want {
				t.Errorf("PeakFlops = %.0f, want %.0f", got, tt.want)
			}
		})
	}
}

func TestDriverVersionNumber(t *testing.T) {
	tests := []struct {
		in      string
		want    int
		wantErr bool
	}{
		{"535.104.05", 53599, false},
		{"550.54.15", 55054, false},
		{"470.42", 47042, false},
		{"390.157", 39099, false},
		{"", 0, true},
		{"550", 0, true},
		{"x.1", 0, true},
		{"550.y.1", 0, true},
		{"-1.2", 0, true},
	}
	for _, tt := range tests {
		got, err := driverVersionNumber(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("driverVersionNumber(%q) = %d, %v; want %d, err %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// testInfo is a host with four GPUs: two identical A100 40GB, an A100
// 80GB and an RTX 3080.
func testInfo() NVIDIAInfo {
	a := func(i int, uuid string, mem uint64) GPU {
		return GPU{UUID: uuid, Name: "NVIDIA A100-SXM4-40GB", Index: i, TotalMem: mem, FreeMem: mem - 1<<30,
			Major: 8, Minor: 0, SMCount: 108, ClockMHz: 1410, PeakFlops: 19491840000000, Usable: true}
	}
	return NVIDIAInfo{
		GPUs: []GPU{
			a(0, "GPU-a0", 40<<30),
			a(1, "GPU-a1", 40<<30),
			a(2, "GPU-a2", 80<<30),
			{UUID: "GPU-r3", Name: "NVIDIA GeForce RTX 3080", Index: 3, TotalMem: 10 << 30, Major: 8, Minor: 6,
				SMCount: 68, ClockMHz: 1710, PeakFlops: 29767680000000, Usable: true},
		},
		DriverVersion: "550.54.15", DrvVersion: 55054, CUDAVersion: 12040,
	}
}

func uuids(gs []GPU) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.UUID)
	}
	return out
}

func TestApplyExclusions(t *testing.T) {
	const proj = "https://einstein.phys.uwm.edu/"
	tests := []struct {
		name         string
		ex           []Exclusion
		wantUsable   []string
		wantWarnings int
		warnContains string
		projectURL   string
		wantProject  []int
	}{
		{name: "none", wantUsable: []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"}},
		{name: "by UUID, any case", ex: []Exclusion{{Device: "gpu-A2"}},
			wantUsable: []string{"GPU-a0", "GPU-a1", "GPU-r3"}},
		{name: "by index", ex: []Exclusion{{Device: "0"}, {Device: " 3 "}},
			wantUsable: []string{"GPU-a1", "GPU-a2"}},
		{name: "unknown UUID warns", ex: []Exclusion{{Device: "GPU-gone"}},
			wantUsable:   []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"},
			wantWarnings: 1, warnContains: `"GPU-gone"`},
		{name: "unknown index warns", ex: []Exclusion{{Device: "7", Project: proj}},
			wantUsable:   []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"},
			wantWarnings: 1, warnContains: proj, projectURL: proj},
		{name: "per project leaves the device usable", ex: []Exclusion{{Device: "GPU-a1", Project: "einstein.phys.uwm.edu"}, {Device: "0", Project: proj}},
			wantUsable: []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"},
			projectURL: "https://EINSTEIN.phys.uwm.edu", wantProject: []int{0}},
		{name: "per project, scheme-less URL canonicalises to http", ex: []Exclusion{{Device: "GPU-a1", Project: "einstein.phys.uwm.edu"}},
			wantUsable: []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"},
			projectURL: "http://einstein.phys.uwm.edu/", wantProject: []int{1}},
		{name: "all devices for one project", ex: []Exclusion{{Project: proj}},
			wantUsable: []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"},
			projectURL: proj, wantProject: []int{0, 1, 2, 3}},
		{name: "all devices for all projects", ex: []Exclusion{{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info := testInfo()
			warns := ApplyExclusions(&info, tt.ex)
			if len(warns) != tt.wantWarnings {
				t.Fatalf("warnings = %q, want %d", warns, tt.wantWarnings)
			}
			if tt.warnContains != "" && !strings.Contains(warns[0], tt.warnContains) {
				t.Errorf("warning %q lacks %q", warns[0], tt.warnContains)
			}
			var usable []string
			for _, g := range info.GPUs {
				if g.Usable {
					usable = append(usable, g.UUID)
				} else if !strings.Contains(g.WhyNotUsable, "excluded") {
					t.Errorf("%s: why = %q", g.UUID, g.WhyNotUsable)
				}
			}
			if !reflect.DeepEqual(usable, tt.wantUsable) {
				t.Errorf("usable = %v, want %v", usable, tt.wantUsable)
			}
			if got := ProjectExcluded(info, tt.ex, tt.projectURL); !reflect.DeepEqual(got, tt.wantProject) {
				t.Errorf("ProjectExcluded = %v, want %v", got, tt.wantProject)
			}
		})
	}
}

func TestUsableGPUs(t *testing.T) {
	without := func(info NVIDIAInfo, drop ...string) NVIDIAInfo {
		var gs []GPU
		for _, g := range info.GPUs {
			keep := true
			for _, d := range drop {
				keep = keep && g.UUID != d
			}
			if keep {
				gs = append(gs, g)
			}
		}
		info.GPUs = gs
		return info
	}
	tests := []struct {
		name   string
		info   NVIDIAInfo
		useAll bool
		want   []string
	}{
		// CC 8.6 beats CC 8.0 regardless of memory; the A100s differ in CC.
		{"mixed: best by compute capability", testInfo(), false, []string{"GPU-r3"}},
		{"mixed with use_all_gpus", testInfo(), true, []string{"GPU-a0", "GPU-a1", "GPU-a2", "GPU-r3"}},
		// 80 GB > 1.4 × 40 GB: the 40 GB cards are not loosely equal.
		{"same CC: more memory wins", without(testInfo(), "GPU-r3"), false, []string{"GPU-a2"}},
		{"identical cards all used", without(testInfo(), "GPU-r3", "GPU-a2"), false, []string{"GPU-a0", "GPU-a1"}},
		{"unusable ones skipped", func() NVIDIAInfo {
			i := testInfo()
			i.GPUs[3].Usable = false
			i.GPUs[2].Usable = false
			return i
		}(), false, []string{"GPU-a0", "GPU-a1"}},
		{"memory within 0.7-1.4 is loosely equal", func() NVIDIAInfo {
			i := without(testInfo(), "GPU-r3")
			i.GPUs[2].TotalMem = 48 << 30
			return i
		}(), false, []string{"GPU-a0", "GPU-a1", "GPU-a2"}},
		{"none", NVIDIAInfo{}, false, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := uuids(UsableGPUs(tt.info, tt.useAll)); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("UsableGPUs = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBestGPUTieGoesToLowestIndex(t *testing.T) {
	info := testInfo()
	best, ok := BestGPU(info.GPUs[:2])
	if !ok || best.UUID != "GPU-a0" {
		t.Errorf("best = %v %v", best.UUID, ok)
	}
	faster := info.GPUs[:2]
	faster[1].PeakFlops *= 2
	if best, _ := BestGPU(faster); best.UUID != "GPU-a1" {
		t.Errorf("equal memory: FLOPS should decide, got %v", best.UUID)
	}
}

func TestChanged(t *testing.T) {
	a := testInfo()
	b := testInfo()
	b.GPUs[0].FreeMem = 1 // not identity
	b.GPUs[0], b.GPUs[1] = b.GPUs[1], b.GPUs[0]
	if Changed(a, b) {
		t.Error("same UUIDs reordered counted as changed")
	}
	c := testInfo()
	c.GPUs[3].UUID = "GPU-new"
	if !Changed(a, c) {
		t.Error("swapped card not noticed")
	}
	if !Changed(a, NVIDIAInfo{}) || !Changed(NVIDIAInfo{}, a) || Changed(NVIDIAInfo{}, NVIDIAInfo{}) {
		t.Error("appear/vanish")
	}
}
