package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/workfetch"
)

const acURL = "http://ac.example/"

// acDaemon is a daemon with one project holding a CPU and a GPU version
// of app "sci" (GPU plan class "cuda"), a CPU app "other", and one
// result per version, with app_config.xml as given (parsed as read).
func acDaemon(t *testing.T, appConfig string) *Daemon {
	t.Helper()
	d := &Daemon{log: slog.New(slog.DiscardHandler), cfg: config.Default(), core: newCore(),
		st: newClientState(), local: newLocalConfig(), opt: Options{DataDir: t.TempDir()},
		host: boinc.Host{PNCPUs: 4, PFpops: 1e9}}
	d.prefs = d.cfg.BoincPrefs()
	d.sched = map[string]*workfetch.ProjectState{}
	d.active = map[string]*activeTask{}
	d.st.projects[acURL] = &boinc.Project{MasterURL: acURL}
	for _, v := range []*boinc.AppVersion{
		{ProjectURL: acURL, AppName: "sci", VersionNum: 1, Platform: "x", AvgNCPUs: 1, Cmdline: "--own"},
		{ProjectURL: acURL, AppName: "sci", VersionNum: 1, Platform: "x", PlanClass: "cuda", AvgNCPUs: 0.2,
			Coproc: &boinc.CoprocUsage{Type: "NVIDIA", Count: 1}},
		{ProjectURL: acURL, AppName: "other", VersionNum: 1, Platform: "x", AvgNCPUs: 1},
	} {
		d.st.versions[v.Key()] = v
	}
	for _, r := range []struct{ name, app, plan string }{{"cpu_0", "sci", ""}, {"gpu_0", "sci", "cuda"}, {"other_0", "other", ""}} {
		d.st.wus[entityKey(acURL, r.name+"_wu")] = &boinc.Workunit{ProjectURL: acURL, Name: r.name + "_wu", AppName: r.app}
		res := &boinc.Result{ProjectURL: acURL, Name: r.name, WUName: r.name + "_wu", Platform: "x", VersionNum: 1, PlanClass: r.plan}
		d.st.putResult(res)
	}
	if appConfig != "" {
		dir := d.projectDir(acURL)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, AppConfigFile), []byte(appConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		d.readAppConfigs()
	}
	return d
}

func (d *Daemon) testResult(name string) *boinc.Result {
	for _, r := range d.st.results {
		if r.Name == name {
			return r
		}
	}
	return nil
}

func TestAppConfigUsage(t *testing.T) {
	t.Parallel()
	type usage struct {
		rsc          workfetch.Rsc
		ncpus, ngpus float64
		cmd          string
	}
	cases := []struct {
		name string
		file string
		cpu  usage // result cpu_0
		gpu  usage // result gpu_0
	}{
		{"no file: the versions' own usage", "",
			usage{workfetch.CPU, 1, 0, "--own"}, usage{workfetch.NVIDIA, 0.2, 1, ""}},
		{"gpu_versions: two tasks share a GPU; CPU versions unchanged",
			"<app_config><app><name>sci</name><gpu_versions><gpu_usage>0.5</gpu_usage><cpu_usage>0.4</cpu_usage></gpu_versions></app></app_config>",
			usage{workfetch.CPU, 1, 0, "--own"}, usage{workfetch.NVIDIA, 0.4, 0.5, ""}},
		{"app_version without plan class: the version without one only; cmdline replaces its own",
			"<app_config><app_version><app_name>sci</app_name><avg_ncpus>2</avg_ncpus><ngpus>0.25</ngpus><cmdline>--fast</cmdline></app_version></app_config>",
			usage{workfetch.CPU, 2, 0, "--fast"}, usage{workfetch.NVIDIA, 0.2, 1, ""}},
		{"app_version with plan class, after gpu_versions",
			"<app_config><app><name>sci</name><gpu_versions><gpu_usage>0.5</gpu_usage><cpu_usage>1</cpu_usage></gpu_versions></app>" +
				"<app_version><app_name>sci</app_name><plan_class>cuda</plan_class><ngpus>0.25</ngpus><cmdline>--dev</cmdline></app_version></app_config>",
			usage{workfetch.CPU, 1, 0, "--own"}, usage{workfetch.NVIDIA, 1, 0.25, "--dev"}},
		{"another app's entry changes nothing",
			"<app_config><app_version><app_name>other</app_name><avg_ncpus>3</avg_ncpus></app_version></app_config>",
			usage{workfetch.CPU, 1, 0, "--own"}, usage{workfetch.NVIDIA, 0.2, 1, ""}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := acDaemon(t, c.file)
			for res, want := range map[string]usage{"cpu_0": c.cpu, "gpu_0": c.gpu} {
				r := d.testResult(res)
				stored := *d.st.versionOf(r)
				rsc, nc, ng := d.resultRsc(r)
				if rsc != want.rsc || nc != want.ncpus || ng != want.ngpus {
					t.Errorf("%s: resultRsc %v %g CPUs %g GPUs, want %v %g %g", res, rsc, nc, ng, want.rsc, want.ncpus, want.ngpus)
				}
				v := d.effectiveVersion(d.st.versionOf(r))
				gotGPU := 0.0
				if v.Coproc != nil {
					gotGPU = v.Coproc.Count
				}
				if v.AvgNCPUs != want.ncpus || gotGPU != want.ngpus || v.Cmdline != want.cmd {
					t.Errorf("%s: effective version %g CPUs %g GPUs cmdline %q, want %g %g %q", res, v.AvgNCPUs, gotGPU, v.Cmdline, want.ncpus, want.ngpus, want.cmd)
				}
				// The stored version is never changed: removing the file
				// gives the project's values back.
				after := d.st.versionOf(r)
				if after.AvgNCPUs != stored.AvgNCPUs || after.Cmdline != stored.Cmdline ||
					(after.Coproc != nil && after.Coproc.Count != stored.Coproc.Count) {
					t.Errorf("%s: stored version modified: %+v", res, after)
				}
			}
		})
	}
}

func TestAppConfigLimitsReachCore(t *testing.T) {
	t.Parallel()
	d := acDaemon(t, "<app_config><app><name>sci</name><max_concurrent>1</max_concurrent></app><project_max_concurrent>2</project_max_concurrent></app_config>")
	g1, m1 := d.limitGroup(d.testResult("cpu_0"))
	g2, m2 := d.limitGroup(d.testResult("gpu_0"))
	g3, m3 := d.limitGroup(d.testResult("other_0"))
	if g1 == 0 || g1 != g2 || m1 != 1 || m2 != 1 {
		t.Errorf("sci's CPU and GPU tasks: groups %d %d limits %d %d; want one group, limit 1", g1, g2, m1, m2)
	}
	if g3 != 0 || m3 != 0 {
		t.Errorf("other: group %d limit %d, want none", g3, m3)
	}
	if got := d.projectLimit(acURL); got != 2 {
		t.Errorf("project limit %d, want 2", got)
	}
	if got := d.projectLimit("http://none.example/"); got != 0 {
		t.Errorf("project without a file: limit %d", got)
	}
}

func TestAppConfigReportAndFractionDone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file           string
		cpuNow, othNow bool // report at once: sci's task, other's task
		exact          bool // sci's fraction done exact
	}{
		{"", false, false, false},
		{"<app_config><app><name>sci</name><report_results_immediately/><fraction_done_exact/></app></app_config>", true, false, true},
		{"<app_config><report_results_immediately/></app_config>", true, true, false},
	}
	for _, c := range cases {
		d := acDaemon(t, c.file)
		cpu, oth := d.testResult("cpu_0"), d.testResult("other_0")
		if d.reportAtOnce(cpu) != c.cpuNow || d.reportAtOnce(oth) != c.othNow {
			t.Errorf("%q: report at once sci %v other %v, want %v %v", c.file, d.reportAtOnce(cpu), d.reportAtOnce(oth), c.cpuNow, c.othNow)
		}
		if d.fractionDoneExact(cpu) != c.exact || d.fractionDoneExact(oth) {
			t.Errorf("%q: fraction_done_exact sci %v other %v", c.file, d.fractionDoneExact(cpu), d.fractionDoneExact(oth))
		}
	}

	// fraction_done_exact: a task 1/4 done after 100 s has 300 s left,
	// whatever the static estimate (here 3600 s); otherwise the estimate
	// still weighs in.
	for _, exact := range []bool{false, true} {
		file := ""
		if exact {
			file = "<app_config><app><name>sci</name><fraction_done_exact/></app></app_config>"
		}
		d := acDaemon(t, file)
		r := d.testResult("cpu_0")
		d.st.wuOf(r).RscFpopsEst = 3600e9
		d.st.versionOf(r).Flops = 1e9
		r.ElapsedTime, r.FractionDone = 100, 0.25
		got := d.estimateRemaining(r)
		if exact && got != 300 || !exact && got <= 300 {
			t.Errorf("exact %v: %g s remaining", exact, got)
		}
	}
}

// An <app_version> entry whose plan class matches none of the app's
// versions is said once, in the C++ client's words, with its line.
func TestAppConfigUnmatchedPlanClass(t *testing.T) {
	t.Parallel()
	var logs testsupport.LogBuffer
	d := acDaemon(t, "")
	d.log = slog.New(slog.NewJSONHandler(&logs, nil))
	dir := d.projectDir(acURL)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := "<app_config>\n<app_version>\n<app_name>sci</app_name>\n<plan_class>opencl</plan_class>\n<avg_ncpus>2</avg_ncpus>\n</app_version>\n</app_config>\n"
	if err := os.WriteFile(filepath.Join(dir, AppConfigFile), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	d.readAppConfigs()
	d.readAppConfigs()
	want := "line 2: Entry in app_config.xml for app 'sci', plan class 'opencl' doesn't match any app versions"
	if n := strings.Count(logs.String(), want); n != 1 {
		t.Errorf("logged %d times, want once: %q\n%s", n, want, logs.String())
	}
	if _, nc, _ := d.resultRsc(d.testResult("cpu_0")); nc != 1 {
		t.Errorf("unmatched entry applied: %g CPUs", nc)
	}
}

// The core's jobs carry the app's limit (CPU and GPU versions in one
// group), and the simulation built from them defers the project's CPU
// work, so work fetch stops asking for it.
func TestAppConfigCoreInput(t *testing.T) {
	t.Parallel()
	d := acDaemon(t, "<app_config><app><name>sci</name><max_concurrent>1</max_concurrent></app></app_config>")
	for i := range 3 {
		name := "more_" + string(rune('a'+i))
		d.st.wus[entityKey(acURL, name+"_wu")] = &boinc.Workunit{ProjectURL: acURL, Name: name + "_wu", AppName: "sci"}
		r := &boinc.Result{ProjectURL: acURL, Name: name, WUName: name + "_wu", Platform: "x", VersionNum: 1}
		d.st.putResult(r)
	}
	now := time.Unix(1_700_000_000, 0)
	d.buildCore(now)
	c := d.core
	limited, n := 0, 0
	for i, j := range c.jobs {
		if j.AppMax > 0 {
			limited++
		}
		if j.App > 0 && d.resultApp(d.st.results[c.jobKeys[i]]) != "sci" {
			t.Errorf("job %s in a limit group", c.jobKeys[i])
		}
		n++
	}
	if limited != 5 || n != 6 {
		t.Fatalf("%d of %d jobs limited, want 5 of 6", limited, n)
	}
	if !c.sim.Projects[0].Deferred[workfetch.CPU] {
		t.Error("the simulation does not mark the project's CPU work as deferred")
	}
}
