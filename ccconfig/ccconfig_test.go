package ccconfig

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
)

func problemTexts(ps []Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Error())
	}
	return out
}

func TestParseCC(t *testing.T) {
	const file = "/var/lib/boinc/cc_config.xml"
	data := `<cc_config>
  <log_flags>
    <task>1</task>
    <work_fetch_debug/>
    <sched_op_debug>0</sched_op_debug>
    <frobnicate_debug>1</frobnicate_debug>
  </log_flags>
  <options>
    <ncpus>3</ncpus>
    <max_file_xfers_per_project>4</max_file_xfers_per_project>
    <exclusive_app>steam</exclusive_app>
    <exclusive_app>kdenlive</exclusive_app>
    <exclusive_gpu_app>blender</exclusive_gpu_app>
    <exclude_gpu>
      <url>http://einstein.phys.uwm.edu</url>
      <device_num>1</device_num>
      <type>NVIDIA</type>
    </exclude_gpu>
    <exclude_gpu>
      <device_num>0</device_num>
    </exclude_gpu>
    <ignore_nvidia_dev>2</ignore_nvidia_dev>
    <start_delay>30</start_delay>
    <report_results_immediately/>
    <http_transfer_timeout>thirty</http_transfer_timeout>
    <proxy_info>
      <use_http_proxy/>
      <http_server_name>proxy.lan</http_server_name>
      <http_server_port>3128</http_server_port>
    </proxy_info>
    <dont_use_vbox/>
    <no_opencl>0</no_opencl>
    <nccpus>2</nccpus>
  </options>
</cc_config>
`
	cc, probs := ParseCC(file, []byte(data))
	o := cc.Options
	if o.NCPUs != 3 || o.MaxFileXfersPerProject != 4 || o.MaxFileXfers != 8 || o.StartDelay != 30 || !o.ReportResultsImmediately {
		t.Errorf("options %+v", o)
	}
	if o.HTTPTransferTimeout != 300 {
		t.Errorf("a bad http_transfer_timeout replaced the default: %v", o.HTTPTransferTimeout)
	}
	if !reflect.DeepEqual(o.ExclusiveApps, []string{"steam", "kdenlive"}) || !reflect.DeepEqual(o.ExclusiveGPUApps, []string{"blender"}) {
		t.Errorf("exclusive apps %q / %q", o.ExclusiveApps, o.ExclusiveGPUApps)
	}
	if want := []ExcludeGPU{{URL: "http://einstein.phys.uwm.edu/", DeviceNum: 1, Type: "NVIDIA", Line: 14}}; !reflect.DeepEqual(o.ExcludeGPUs, want) {
		t.Errorf("exclude_gpu %+v, want %+v", o.ExcludeGPUs, want)
	}
	if !reflect.DeepEqual(o.IgnoreGPU, map[string][]int{"NVIDIA": {2}}) {
		t.Errorf("ignore %v", o.IgnoreGPU)
	}
	if o.Proxy == nil || o.Proxy.HTTPServerName != "proxy.lan" || o.Proxy.HTTPServerPort != 3128 || !o.Proxy.UseHTTPProxy {
		t.Errorf("proxy %+v", o.Proxy)
	}
	if !reflect.DeepEqual(cc.LogFlags, map[string]bool{"task": true, "work_fetch_debug": true, "sched_op_debug": false}) {
		t.Errorf("log flags %v", cc.LogFlags)
	}
	if !reflect.DeepEqual(cc.Unsupported, []string{"dont_use_vbox"}) || !reflect.DeepEqual(cc.Unknown, []string{"nccpus"}) {
		t.Errorf("unsupported %q unknown %q", cc.Unsupported, cc.Unknown)
	}
	if !cc.Set["ncpus"] || cc.Set["max_file_xfers"] || cc.Set["http_transfer_timeout"] {
		t.Errorf("set %v", cc.Set)
	}
	want := []string{
		file + " line 6: unknown log flag <frobnicate_debug>",
		file + " line 19: <exclude_gpu> without <url>; ignored",
		file + " line 25: <http_transfer_timeout>thirty</http_transfer_timeout>: not a number",
		file + " line 33: unknown option <nccpus>",
	}
	if got := problemTexts(probs); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestParseCCBroken(t *testing.T) {
	cases := []struct {
		name, data string
		check      func(t *testing.T, cc CC)
		want       string // substring of the first problem
	}{
		{"typo after a good option keeps it", "<cc_config>\n<options>\n<ncpus>1</ncpus>\n<max_file_xfers>2</max_file_xfers\n</options>\n</cc_config>\n",
			func(t *testing.T, cc CC) {
				if cc.Options.NCPUs != 1 {
					t.Errorf("ncpus %d", cc.Options.NCPUs)
				}
			}, "line 5: XML syntax error"},
		{"unclosed", "<cc_config>\n<options>\n<ncpus>1</ncpus>\n", func(t *testing.T, cc CC) {
			if cc.Options.NCPUs != 1 {
				t.Errorf("ncpus %d", cc.Options.NCPUs)
			}
		}, "line 2: <options> is never closed"},
		{"not cc_config", "<global_preferences/>", nil, "no <cc_config> element"},
		{"empty", "", nil, "no <cc_config> element"},
		{"entity", "<cc_config><options><exclusive_app>a&amp;b&nbsp;</exclusive_app></options></cc_config>", func(t *testing.T, cc CC) {
			if got := cc.Options.ExclusiveApps; len(got) != 1 || got[0] != "a&b" {
				t.Errorf("exclusive apps %q", got)
			}
		}, ""},
		{"huge", "<cc_config>" + strings.Repeat(" ", maxFileBytes) + "</cc_config>", nil, "larger than"},
		{"negative ncpus", "<cc_config><options><ncpus>-5</ncpus></options></cc_config>", func(t *testing.T, cc CC) {
			if cc.Options.NCPUs != -1 {
				t.Errorf("ncpus %d", cc.Options.NCPUs)
			}
		}, "below -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cc, probs := ParseCC("cc_config.xml", []byte(c.data))
			if c.check != nil {
				c.check(t, cc)
			}
			switch {
			case c.want == "" && len(probs) > 0:
				t.Errorf("problems %q", problemTexts(probs))
			case c.want != "" && (len(probs) == 0 || !strings.Contains(probs[0].Error(), c.want)):
				t.Errorf("problems %q, want one with %q", problemTexts(probs), c.want)
			}
		})
	}
}

func TestParseApp(t *testing.T) {
	const file = "projects/einstein.phys.uwm.edu/app_config.xml"
	data := `<app_config>
   <app>
      <name>hsgamma_FGRPB1G</name>
      <max_concurrent>1</max_concurrent>
      <report_results_immediately/>
      <gpu_versions>
          <gpu_usage>.5</gpu_usage>
          <cpu_usage>.4</cpu_usage>
      </gpu_versions>
   </app>
   <app>
      <max_concurrent>2</max_concurrent>
   </app>
   <app_version>
       <app_name>einstein_O3MD1</app_name>
       <plan_class>mt</plan_class>
       <avg_ncpus>4</avg_ncpus>
       <cmdline>--nthreads 4</cmdline>
   </app_version>
   <project_max_concurrent>3</project_max_concurrent>
   <report_results_immediately/>
   <max_conurrent>1</max_conurrent>
</app_config>
`
	ac, probs := ParseApp(file, []byte(data))
	want := App{
		Apps:                 []AppLimits{{Name: "hsgamma_FGRPB1G", MaxConcurrent: 1, ReportResultsImmediately: true, HasGPUVersions: true, GPUUsage: .5, CPUUsage: .4, Line: 2}},
		Versions:             []AppVersion{{AppName: "einstein_O3MD1", PlanClass: "mt", AvgNCPUs: 4, CmdLine: "--nthreads 4", Line: 14}},
		ProjectMaxConcurrent: 3, ReportResultsImmediately: true,
	}
	if !reflect.DeepEqual(ac, want) {
		t.Errorf("got  %+v\nwant %+v", ac, want)
	}
	wantProbs := []string{
		file + " line 11: <app> without <name>; ignored",
		file + " line 22: unknown element <max_conurrent> in <app_config>",
	}
	if got := problemTexts(probs); !reflect.DeepEqual(got, wantProbs) {
		t.Errorf("problems %q, want %q", got, wantProbs)
	}
	names := ac.CheckAppNames(file, func(n string) bool { return n == "hsgamma_FGRPB1G" })
	if got := problemTexts(names); len(got) != 1 || !strings.Contains(got[0], `line 14: the project has no app named "einstein_O3MD1"`) {
		t.Errorf("app name check %q", got)
	}
}

func TestDefaultProxyUnsetInCC(t *testing.T) {
	cc, _ := ParseCC("cc_config.xml", []byte("<cc_config><options/></cc_config>"))
	if cc.Options.Proxy != nil || !reflect.DeepEqual(cc.Options, DefaultOptions()) {
		t.Errorf("empty options %+v", cc.Options)
	}
	_ = boinc.DefaultProxyInfo()
}

// FuzzParse: no input makes either parser panic, and each problem names
// its file.
func FuzzParse(f *testing.F) {
	f.Add([]byte("<cc_config><options><ncpus>1</ncpus></options></cc_config>"))
	f.Add([]byte("<app_config><app><name>a</name><max_concurrent>1</max_concurrent></app></app_config>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, p1 := ParseCC("f", data)
		_, p2 := ParseApp("f", data)
		for _, p := range append(p1, p2...) {
			if p.File != "f" {
				t.Fatalf("problem without its file: %+v", p)
			}
		}
	})
}

// The BOINC Manager 7.20.5 writes every option it knows, at its default,
// into the cc_config.xml it saves (Options → Event Log options, with
// cpu_sched ticked): that file must read without a single complaint and
// change nothing but the flag.
func TestManagerWrittenFile(t *testing.T) {
	data, err := os.ReadFile("testdata/manager_7.20.5_cc_config.xml")
	if err != nil {
		t.Fatal(err)
	}
	cc, probs := ParseCC("cc_config.xml", data)
	if len(probs) > 0 || len(cc.Unsupported) > 0 || len(cc.Unknown) > 0 {
		t.Errorf("problems %q, unsupported %q, unknown %q", problemTexts(probs), cc.Unsupported, cc.Unknown)
	}
	if cc.Options.Proxy != nil {
		t.Errorf("the Manager's empty proxy_info read as a proxy: %+v", cc.Options.Proxy)
	}
	want := DefaultOptions()
	if !reflect.DeepEqual(cc.Options, want) {
		t.Errorf("options %+v\nwant the defaults %+v", cc.Options, want)
	}
	if !cc.LogFlags["cpu_sched"] || cc.LogFlags["work_fetch_debug"] || !cc.LogFlags["task"] {
		t.Errorf("log flags %v", cc.LogFlags)
	}
}

// <gpu_versions> applies only with both usages, as in the C++ client.
func TestGPUVersionsNeedBoth(t *testing.T) {
	ac, probs := ParseApp("app_config.xml", []byte("<app_config>\n<app>\n<name>a</name>\n<gpu_versions>\n<gpu_usage>0.5</gpu_usage>\n</gpu_versions>\n</app>\n</app_config>\n"))
	if len(ac.Apps) != 1 || ac.Apps[0].HasGPUVersions {
		t.Errorf("apps %+v", ac.Apps)
	}
	if got := problemTexts(probs); len(got) != 1 || got[0] != "app_config.xml line 4: <gpu_versions> needs both <gpu_usage> and <cpu_usage>; ignored" {
		t.Errorf("problems %q", got)
	}
}

// dont_use_docker is acted on (container apps, package container), no
// longer read past as unsupported.
func TestDontUseDocker(t *testing.T) {
	tests := []struct {
		name string
		xml  string
		want bool
	}{
		{"flag", "<dont_use_docker/>", true},
		{"one", "<dont_use_docker>1</dont_use_docker>", true},
		{"zero", "<dont_use_docker>0</dont_use_docker>", false},
		{"absent", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, probs := ParseCC("cc_config.xml", []byte("<cc_config><options>"+tc.xml+"</options></cc_config>"))
			if len(probs) != 0 || len(cc.Unsupported) != 0 {
				t.Fatalf("problems %v, unsupported %v", problemTexts(probs), cc.Unsupported)
			}
			if cc.Options.DontUseDocker != tc.want {
				t.Errorf("DontUseDocker = %v, want %v", cc.Options.DontUseDocker, tc.want)
			}
		})
	}
}

// no_alt_platform and alt_platform shape the platform list
// (CLIENT_STATE::detect_platforms); alt_platform repeats, and an empty one
// adds nothing.
func TestAltPlatformOptions(t *testing.T) {
	tests := []struct {
		name  string
		xml   string
		noAlt bool
		alts  []string
		probs int
	}{
		{"absent", "", false, nil, 0},
		{"no_alt_platform", "<no_alt_platform/>", true, nil, 0},
		{"two alternates", "<alt_platform>i686-pc-linux-gnu</alt_platform><alt_platform> x86_64-pc-linux-gnu-sse </alt_platform>", false,
			[]string{"i686-pc-linux-gnu", "x86_64-pc-linux-gnu-sse"}, 0},
		{"empty one", "<alt_platform></alt_platform>", false, nil, 0},
		{"hostile one", "<alt_platform>a&amp;lt;b</alt_platform>", false, nil, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cc, probs := ParseCC("cc_config.xml", []byte("<cc_config><options>"+tc.xml+"</options></cc_config>"))
			if len(probs) != tc.probs || len(cc.Unsupported) != 0 {
				t.Fatalf("problems %v, unsupported %v", problemTexts(probs), cc.Unsupported)
			}
			if cc.Options.NoAltPlatform != tc.noAlt || !reflect.DeepEqual(cc.Options.AltPlatforms, tc.alts) {
				t.Errorf("no_alt_platform %v alt_platform %q, want %v %q", cc.Options.NoAltPlatform, cc.Options.AltPlatforms, tc.noAlt, tc.alts)
			}
		})
	}
}
