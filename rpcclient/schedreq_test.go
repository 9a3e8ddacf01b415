package rpcclient

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

// fixtureDir holds the BOINC 7.20 captures (testdata/ at the module root).
const fixtureDir = "../testdata/boinc-7.20"

func readFixtureErr(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(fixtureDir, rel))
}

func readFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := readFixtureErr(rel)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	return b
}

const fixtureCodeSignKey = `1024
c6187c8ae79e5b906a1a6731a741326ececa4ba8ac3e9fae2e79134a2b26a735
a13ad95cb4aa9ee220a3c2df91ceb7fb95fee1828ee1f67d4673b4f4b3ad9deb
80ade498896172ea2ea13c491fa8e3d614cfcb827dd98676aa8b18fb0f35e2f7
691236a6603cd3ab8046a05c77662c744fec8d8918a81c09307fab9a79bd2ce1
0000000000000000000000000000000000000000000000000000000000000000
0000000000000000000000000000000000000000000000000000000000000000
0000000000000000000000000000000000000000000000000000000000000000
0000000000000000000000000000000000000000000000000000000000010001
.`

func fixtureHost(dFree float64) boinc.Host {
	return boinc.Host{
		Timezone:    0,
		DomainName:  "vm",
		IPAddr:      "127.0.0.1",
		HostCPID:    "b7bf3b34162c2edc3003abbdc50384b1",
		PNCPUs:      2,
		PVendor:     "GenuineIntel",
		PModel:      "Intel(R) Xeon(R) Processor [Family 6 Model 207 Stepping 2]",
		PFeatures:   "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b fsrm serialize tsxldtrk avx512_fp16 arch_capabilities",
		PFpops:      1e9,
		PIops:       1e9,
		PMembw:      1e9,
		PCalculated: 1795268541.552086,
		MNBytes:     25276502016,
		MCache:      272629760,
		MSwap:       0,
		DTotal:      270553174016,
		DFree:       dFree,
		OSName:      "Linux Debian",
		OSVersion:   "Debian GNU/Linux 12 (bookworm) [6.18.44-fc-v669|libc 2.36]",
	}
}

func fixtureRequest01() *SchedulerRequest {
	return &SchedulerRequest{
		Authenticator:         "0123456789abcdef0123456789abcdef",
		ResourceShareFraction: 1, RRSFraction: 1, PRRSFraction: 1, DCF: 1,
		WorkReqSeconds: 1, CPUReqSecs: 1,
		Platform: platform.LinuxX86_64,
		Prefs:    boinc.DefaultPrefs(),
		TimeStats: TimeStats{
			OnFrac: 1, ConnectedFrac: -1, CPUAndNetworkAvailableFrac: 1, ActiveFrac: 1, GPUActiveFrac: 1,
			ClientStartTime: 1795268541.552086, TotalStartTime: 1795268541.973745,
			TotalDuration: 10.016405, TotalActiveDuration: 10.016405, TotalGPUActiveDuration: 10.016405,
			Now: 1795268553.994038, SessionActiveDuration: 10.016405, SessionGPUActiveDuration: 10.016405,
		},
		NetStats:  NetStats{BWDown: 4641509.433962, AvgDown: 399764192545.291504, AvgTimeDown: 1795268547.984200},
		Host:      fixtureHost(84384870400),
		DiskUsage: DiskUsage{Total: 49152, Project: 0, Share: 92705299906.560013},
	}
}

func fixtureRequest04() *SchedulerRequest {
	av := &boinc.AppVersion{AppName: "refapp", VersionNum: 100, Platform: platform.LinuxX86_64, AvgNCPUs: 1, Flops: 1e9}
	mk := func(name, out, md5 string, elapsed, ws float64, pid string, slot string) ReportedResult {
		return ReportedResult{
			Result: &boinc.Result{
				Name: name, FinalElapsedTime: elapsed, WireState: 5, Platform: platform.LinuxX86_64, VersionNum: 100,
				PeakWorkingSet: ws, PeakDiskUsage: 6205,
				StderrOut: "refapp: start pid=" + pid + " cwd=/var/lib/boinc-client/slots/" + slot + " args=--seconds 30\nrefapp: done\n",
			},
			OutputFiles: []*boinc.FileInfo{{
				Name: out, NBytes: 86, MaxNBytes: 65536, MD5: md5,
				UploadURLs: []string{"http://127.0.0.1:18080/cgi-bin/file_upload_handler"},
			}},
			AppVersionNum: 100,
			PeakSwapSize:  2990080,
		}
	}
	return &SchedulerRequest{
		Authenticator: "0123456789abcdef0123456789abcdef",
		HostID:        1, RPCSeqno: 2,
		ResourceShareFraction: 1, RRSFraction: 1, PRRSFraction: 1, DCF: 0.970272,
		WorkReqSeconds: 103680, CPUReqSecs: 103680, CPUReqInstances: 2,
		Platform:       platform.LinuxX86_64,
		CodeSignKey:    "\n" + fixtureCodeSignKey + "\n",
		Prefs:          boinc.DefaultPrefs(),
		CrossProjectID: "11111111111111111111111111111111",
		TimeStats: TimeStats{
			OnFrac: 1, ConnectedFrac: -1, CPUAndNetworkAvailableFrac: 0.999988, ActiveFrac: 0.999988, GPUActiveFrac: 0.999988,
			ClientStartTime: 1795268541.552086, TotalStartTime: 1795268541.973745,
			TotalDuration: 60.103526, TotalActiveDuration: 50.082675, TotalGPUActiveDuration: 50.082675,
			Now: 1795268610.098770, SessionActiveDuration: 50.082675, SessionGPUActiveDuration: 50.082675,
		},
		NetStats: NetStats{
			BWUp: 634321.348975, AvgUp: 52680246493.466339, AvgTimeUp: 1795268606.086870,
			BWDown: 5147572.388273, AvgDown: 399756371766.958008, AvgTimeDown: 1795268565.054938,
		},
		Host:      fixtureHost(82881982464),
		DiskUsage: DiskUsage{Total: 81920, Project: 12288, Share: 91052159221.760010},
		Results: []ReportedResult{
			mk("refwu_1795268541_1_0", "refwu_1795268541_1_0_r7919_0", "b351e64117fecd13f028009656b05c18", 20.034629, 1724416, "6508", "0"),
			mk("refwu_1795268541_2_0", "refwu_1795268541_2_0_r15838_0", "fc79e3aca4f5844a174ede6e0e292dcd", 30.050415, 1691648, "6908", "1"),
		},
		AppVersions: []*boinc.AppVersion{av},
	}
}

func TestWriteRequestGolden(t *testing.T) {
	tests := []struct {
		fixture string
		req     *SchedulerRequest
	}{
		{"scheduler/01_request_first_contact.xml", fixtureRequest01()},
		{"scheduler/04_request_report_two_results.xml", fixtureRequest04()},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.fixture), func(t *testing.T) {
			want := readFixture(t, tc.fixture)
			var buf bytes.Buffer
			n, err := tc.req.WriteTo(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if n != int64(buf.Len()) {
				t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
			}
			if got := buf.Bytes(); !bytes.Equal(got, want) {
				gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
				for i := 0; i < len(gl) && i < len(wl); i++ {
					if gl[i] != wl[i] {
						t.Fatalf("line %d differs:\n got: %q\nwant: %q", i+1, gl[i], wl[i])
					}
				}
				t.Fatalf("length differs: got %d lines, want %d", len(gl), len(wl))
			}
		})
	}
}

func TestWriteRequestVariants(t *testing.T) {
	aborted := &boinc.Result{Name: "r<&>", WireState: 6, ExitStatus: 203, Platform: platform.LinuxX86_64, VersionNum: 100}
	dlErr := &boinc.Result{Name: "d", WireState: 1, ExitStatus: -186, Platform: platform.LinuxX86_64, VersionNum: 100,
		ErrorMessage: "app_version download error\n"}
	hostile := &boinc.Result{Name: "h", WireState: 3, PlanClass: "cuda", StderrOut: "a]]>b", ErrorMessage: "boom"}
	big := &boinc.Result{Name: "big", WireState: 5, StderrOut: "HEAD" + strings.Repeat("x", maxStderrBytes)}
	req := &SchedulerRequest{
		AltPlatforms: []string{"i686-pc-linux-gnu"},
		Results: []ReportedResult{
			{Result: aborted, AppVersionNum: 100},
			{Result: dlErr, AppVersionNum: 100},
			{Result: hostile},
			{Result: big},
		},
		AppVersions: []*boinc.AppVersion{{AppName: "a", VersionNum: 1, Platform: "p", PlanClass: "cuda", APIVersion: "8.0.4",
			Coproc: &boinc.CoprocUsage{Type: "NVIDIA", Count: 1}}},
		OtherResults: []OtherResult{{Name: "o1", AppVersion: 0, PlanClass: "cuda"}},
	}
	var buf bytes.Buffer
	if _, err := req.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"    <alt_platform>\n        <name>i686-pc-linux-gnu</name>\n    </alt_platform>\n",
		"<name>r&lt;&amp;&gt;</name>",
		"    <app_version_num>100</app_version_num>\n<stderr_out>\n<core_client_version>7.20.5</core_client_version>\n</stderr_out>\n</result>\n",
		"<![CDATA[\n<message>\napp_version download error\n</message>\n]]>\n",
		"<stderr_txt>\na]]]]><![CDATA[>b\n</stderr_txt>\n<message>\nboom</message>\n]]>\n",
		"    <plan_class>cuda</plan_class>\n",
		"    <coproc>\n        <type>NVIDIA</type>\n        <count>1.000000</count>\n    </coproc>\n",
		"        <name>o1</name>\n        <app_version>0</app_version>\n        <plan_class>cuda</plan_class>\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "HEAD") {
		t.Error("stderr not cut to its last 63 KB")
	}
}

// The container engine goes in host_info after wsl_available, and
// dont_use_docker at top level after dont_send_work (PROTOCOLS.md §1.3 #8
// and host_info #10); neither appears when not set.
func TestWriteRequestDocker(t *testing.T) {
	tests := []struct {
		name     string
		req      SchedulerRequest
		contains []string
		excludes []string
	}{
		{
			name: "podman found",
			req:  SchedulerRequest{Host: boinc.Host{DockerVersion: "4.9.3", DockerType: 2}},
			contains: []string{
				"    <wsl_available>0</wsl_available>\n    <docker_version>4.9.3</docker_version>\n    <docker_type>2</docker_type>\n</host_info>\n",
			},
			excludes: []string{"dont_use_docker"},
		},
		{
			name:     "none found",
			excludes: []string{"docker_version", "docker_type", "dont_use_docker"},
		},
		{
			name: "dont_use_docker",
			req:  SchedulerRequest{DontUseDocker: true},
			contains: []string{
				"    <dont_send_work>0</dont_send_work>\n    <dont_use_docker/>\n    <work_req_seconds>",
			},
			excludes: []string{"docker_version"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := tc.req.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.contains {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("request lacks %q:\n%s", w, buf.String())
				}
			}
			for _, w := range tc.excludes {
				if strings.Contains(buf.String(), w) {
					t.Errorf("request has %q", w)
				}
			}
		})
	}
}

// Non-ASCII bytes of an app's stderr reach the report as &#N;, as the C++
// client writes them (moved here from the task runner, which had the
// conversion but never used it).
func TestStderrNonASCIIEscaped(t *testing.T) {
	if got, want := escapeNonASCII("ok\nnaïve\n"), "ok\nna&#195;&#175;ve\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if s := "plain"; escapeNonASCII(s) != s {
		t.Fatal("ASCII text changed")
	}
}
