package sim

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/workfetch"
)

func TestShippedScenariosParse(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("scenarios", "*.toml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"baseline_2cpu.toml", "example1_gpu_cpu.toml", "example2_long_edf.toml", "example2b_attach_c.toml", "example3_gpu_app_later.toml", "example4_no_gpu_work.toml", "five_projects.toml"}
	have := map[string]bool{}
	for _, f := range files {
		have[filepath.Base(f)] = true
		if _, err := LoadScenario(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	for _, w := range want {
		if !have[w] {
			t.Errorf("scenarios/%s is missing", w)
		}
	}
}

const goodScenario = `duration_days = 2
seed = 7

[host]
cpus = 2
availability = { on_mean_s = 1000, off_mean_s = 250 }

[[project]]
name = "P"
share = 100
apps = [{ resource = "CPU", flops_mean = 1e12 }]
`

func TestScenarioErrors(t *testing.T) {
	tests := []struct {
		name string
		text string
		want string // substring of the error
	}{
		{"syntax", "duration_days = = 3\n", "s.toml:1:"},
		{"type", "duration_days = \"long\"\n", "s.toml:1:"},
		{"unknown key", goodScenario + "colour = 3\n", `s.toml:12: unknown setting "project.colour"`},
		{"unknown nested key", strings.Replace(goodScenario, "cpus = 2", "cpus = 2\nram = 4", 1), `s.toml:6: unknown setting "host.ram"`},
		{"duration", strings.Replace(goodScenario, "duration_days = 2", "duration_days = -1", 1), "s.toml:1: duration_days = -1"},
		{"step", strings.Replace(goodScenario, "seed = 7", "seed = 7\nstep_seconds = 0.5", 1), "s.toml:3: step_seconds = 0.5"},
		{"cpus", strings.Replace(goodScenario, "cpus = 2", "cpus = -2", 1), "s.toml:5: host.cpus = -2"},
		{"no cpus", strings.Replace(goodScenario, "cpus = 2", "cpus = 0", 1), "s.toml:5: host.cpus = 0"},
		{"gpu type", strings.Replace(goodScenario, "cpus = 2", "cpus = 2\ngpus = [{type = \"voodoo\", count = 1}]", 1), `s.toml:6: host.gpus[0].type = "voodoo"`},
		{"gpu count", strings.Replace(goodScenario, "cpus = 2", "cpus = 2\ngpus = [{type = \"NVIDIA\", count = 0}]", 1), "s.toml:6: host.gpus[0].count = 0"},
		{"availability", strings.Replace(goodScenario, "on_mean_s = 1000", "on_mean_s = 0", 1), "s.toml:6: host.availability.on_mean_s = 0"},
		{"buffer", goodScenario + "[prefs]\nwork_buf_min_days = 11\n", "s.toml:13: prefs.work_buf_min_days = 11"},
		{"no projects", "duration_days = 1\n[host]\ncpus = 1\n", "no [[project]]"},
		{"no name", strings.Replace(goodScenario, `name = "P"`, `name = ""`, 1), "s.toml:8: project 1 has no name"},
		{"duplicate name", goodScenario + "[[project]]\nname = \"P\"\napps = [{ resource = \"CPU\", flops_mean = 1e12 }]\n", `s.toml:13: project name "P" is used twice`},
		{"share", strings.Replace(goodScenario, "share = 100", "share = -5", 1), `s.toml:10: project "P": share = -5`},
		{"resource", strings.Replace(goodScenario, `resource = "CPU"`, `resource = "TPU"`, 1), `s.toml:11: project "P": apps[0].resource = "TPU"`},
		{"flops", strings.Replace(goodScenario, "flops_mean = 1e12", "flops_mean = 0", 1), `s.toml:11: project "P": apps[0].flops_mean = 0`},
		{"estimate", strings.Replace(goodScenario, "flops_mean = 1e12", "flops_mean = 1e12, estimate_factor = -2", 1), `apps[0].estimate_factor = -2`},
		{"work send", strings.Replace(goodScenario, "[[project]]", "[policies]\nwork_send = \"ws3\"\n[[project]]", 1), `s.toml:9: policies.work_send = "ws3": want ws1, plain or ws2`},
		{"estimate policy", strings.Replace(goodScenario, "[[project]]", "[policies]\nestimate = \"jc9\"\n[[project]]", 1), `s.toml:9: policies.estimate = "jc9"`},
		{"cpu sched", strings.Replace(goodScenario, "[[project]]", "[policies]\ncpu_sched = \"edf\"\n[[project]]", 1), `s.toml:9: policies.cpu_sched = "edf": unknown scheduler`},
		{"connection interval", strings.Replace(goodScenario, "cpus = 2", "cpus = 2\nconnection_interval_days = -1", 1), "s.toml:6: host.connection_interval_days = -1"},
		{"no apps", strings.Replace(goodScenario, `apps = [{ resource = "CPU", flops_mean = 1e12 }]`, "", 1), `project "P" has no apps`},
		{"attach", strings.Replace(goodScenario, "share = 100", "share = 100\nattach_at_days = 5", 1), `s.toml:11: project "P": attach_at_days = 5`},
		{"outage", strings.Replace(goodScenario, "share = 100", "share = 100\noutages = [{from_days = 2, to_days = 1}]", 1), `project "P": outages[0] = {from_days = 2, to_days = 1}`},
		{"second app", strings.Replace(goodScenario, `apps = [{ resource = "CPU", flops_mean = 1e12 }]`, "apps = [\n  { resource = \"CPU\", flops_mean = 1e12 },\n  { resource = \"CPU\", flops_mean = -1 },\n]", 1), `s.toml:13: project "P": apps[1].flops_mean = -1`},
		{"cpu app with gpus", strings.Replace(goodScenario, "flops_mean = 1e12", "flops_mean = 1e12, ngpus = 1", 1), "a CPU app uses no GPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseScenario("s.toml", []byte(tc.text))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadScenarioMissingFile(t *testing.T) {
	_, err := LoadScenario(filepath.Join(t.TempDir(), "nope.toml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v, want a not-exist error", err)
	}
}

func TestDefaults(t *testing.T) {
	sc, err := ParseScenario("s.toml", []byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	if sc.StepSeconds != DefaultStepSeconds || sc.Host.CPUFlops != DefaultCPUFlops ||
		sc.Prefs.WorkBufMinDays != DefaultBufMinDays || sc.Prefs.CPUSchedulingPeriodMinutes != DefaultSchedPeriodMins ||
		sc.Projects[0].LatencyBoundDays != DefaultLatencyDays || sc.Projects[0].Apps[0].NCPUs != 1 || sc.Projects[0].Apps[0].EstimateFactor != 1 {
		t.Fatalf("defaults not applied: %+v", sc)
	}
}

// The availability process's long-run on fraction is on/(on+off).
func TestAvailabilityFraction(t *testing.T) {
	tests := []struct {
		on, off float64
	}{{1000, 250}, {3600, 3600}, {100, 900}}
	for _, tc := range tests {
		a := newAvailability(&AvailabilitySpec{OnMeanS: tc.on, OffMeanS: tc.off}, seedStream(3, 0))
		total, on := 0.0, 0.0
		for t := 0.0; t < 400*86400; t += 60 {
			s := a.advance(t, 60)
			if s < 0 || s > 60+1e-9 {
				panic("on seconds outside the step")
			}
			on += s
			total += 60
		}
		want := tc.on / (tc.on + tc.off)
		if got := on / total; math.Abs(got-want) > 0.02 {
			t.Errorf("on=%g off=%g: on fraction %.3f, want %.3f", tc.on, tc.off, got, want)
		}
	}
	always := newAvailability(nil, seedStream(3, 0))
	if s := always.advance(0, 60); s != 60 || !always.on {
		t.Errorf("no availability spec: on %g s of 60, want always on", s)
	}
}

func runJSON(t testing.TB, sc *Scenario) []byte {
	t.Helper()
	rep, err := Run(context.Background(), sc, Options{BucketSeconds: 86400})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterministic(t *testing.T) {
	sc, err := LoadScenario(filepath.Join("scenarios", "five_projects.toml"))
	if err != nil {
		t.Fatal(err)
	}
	sc.DurationDays = 10
	a, b := runJSON(t, sc), runJSON(t, sc)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with the same seed gave different reports")
	}
	sc.Seed++
	if c := runJSON(t, sc); bytes.Equal(a, c) {
		t.Fatal("another seed gave the very same report")
	}
}

func TestRunCancelled(t *testing.T) {
	sc, err := ParseScenario("s.toml", []byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, sc, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// Sanity of the metrics on the baseline: a single project gets all the
// processing, nothing misses, and the CPUs are busy while the host is on.
func TestBaselineMetrics(t *testing.T) {
	rep := runFile(t, "baseline_2cpu.toml")
	m := rep.Metrics
	if m.ShareViolation > 1e-9 {
		t.Errorf("share violation %g with one project, want 0", m.ShareViolation)
	}
	if m.IdleFraction > 0.05 {
		t.Errorf("idle fraction %g, want < 0.05", m.IdleFraction)
	}
	if m.WastedFraction != 0 || m.JobsMissed != 0 {
		t.Errorf("wasted %g, %d missed: 9-day deadlines on 3.6-hour jobs cannot be missed", m.WastedFraction, m.JobsMissed)
	}
	if m.OnFraction < 0.75 || m.OnFraction > 0.85 {
		t.Errorf("host on %.3f of the time, want about 0.8", m.OnFraction)
	}
	if m.RPCs == 0 || m.Jobs == 0 || m.RPCsPerJob != float64(m.RPCs)/(2*float64(m.Jobs)) {
		t.Errorf("RPCs per job %g from %d RPCs and %d jobs", m.RPCsPerJob, m.RPCs, m.Jobs)
	}
	used := 0.0
	for _, b := range rep.Timeline {
		for _, row := range b.InstanceSeconds {
			used += row[0]
		}
	}
	if p := rep.Projects[0].Rsc[0].InstanceSeconds; math.Abs(used-p) > 1e-6*p {
		t.Errorf("timeline sums to %g instance-seconds, project total %g", used, p)
	}
}

// A server outage makes RPCs fail and back off; the project still gets
// work after it.
func TestOutage(t *testing.T) {
	text := strings.Replace(goodScenario, "duration_days = 2", "duration_days = 4", 1)
	text = strings.Replace(text, "share = 100", "share = 100\noutages = [{from_days = 0, to_days = 1}]", 1)
	sc, err := ParseScenario("s.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), sc, Options{BucketSeconds: 86400})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Projects[0]
	if p.FailedRPCs < 3 {
		t.Errorf("%d failed RPCs during a 1-day outage, want several (backed off, retried)", p.FailedRPCs)
	}
	// Exponential backoff: at most about 4 h apart after a while, so
	// about 10-20 attempts a day, not one a minute.
	if p.FailedRPCs > 100 {
		t.Errorf("%d failed RPCs in a day: the project RPC backoff is not applied", p.FailedRPCs)
	}
	if s := rep.Timeline[0].InstanceSeconds[0][0]; s != 0 {
		t.Errorf("%g instance-seconds computed on day 0, when the server was down from the start", s)
	}
	if s := rep.Timeline[2].InstanceSeconds[0][0]; s < 0.9*2*86400*rep.Metrics.OnFraction {
		t.Errorf("day 2: %g instance-seconds, want the CPUs busy after the outage", s)
	}
}

func BenchmarkSimulate100Days(b *testing.B) {
	sc, err := LoadScenario(filepath.Join("scenarios", "five_projects.toml"))
	if err != nil {
		b.Fatal(err)
	}
	sc.DurationDays = 100
	sc.StepSeconds = 60
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(context.Background(), sc, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// Event-driven stepping reacts to completions at once: with short jobs
// on an always-on host, the CPUs idle less than with 60 s steps, and the
// metrics stay sane.
func TestEventDriven(t *testing.T) {
	text := strings.Replace(goodScenario, "availability = { on_mean_s = 1000, off_mean_s = 250 }", "", 1)
	text = strings.Replace(text, "flops_mean = 1e12", "flops_mean = 9e10", 1) // 90 s jobs
	idle := map[bool]float64{}
	for _, ev := range []bool{false, true} {
		sc, err := ParseScenario("s.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		sc.EventDriven = ev
		rep, err := Run(context.Background(), sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		idle[ev] = rep.Metrics.IdleFraction
		if rep.Metrics.JobsMissed != 0 {
			t.Errorf("event driven %v: %d jobs missed", ev, rep.Metrics.JobsMissed)
		}
	}
	// 90 s jobs in 60 s steps: a CPU idles for the rest of the step in
	// which its job ends, about a third of the time.
	if idle[false] < 0.1 {
		t.Errorf("stepped idle fraction %.3f, want the step's rounding visible (> 0.1)", idle[false])
	}
	if idle[true] > 0.01 {
		t.Errorf("event-driven idle fraction %.3f, want < 0.01", idle[true])
	}
	t.Logf("idle fraction: stepped %.3f, event-driven %.3f", idle[false], idle[true])
}

// A server that checks deadlines sends no job that cannot make its
// deadline; one that does not sends them, and they are wasted.
func TestServerDeadlineCheck(t *testing.T) {
	text := strings.Replace(goodScenario, "share = 100", "share = 100\nlatency_bound_days = 1", 1)
	text = strings.Replace(text, "duration_days = 2", "duration_days = 6", 1)
	text = strings.Replace(text, "availability = { on_mean_s = 1000, off_mean_s = 250 }", "", 1)
	text = strings.Replace(text, "flops_mean = 1e12", "flops_mean = 1.728e14", 1) // 2 days on a CPU
	// The check is the per-project deadline_check or, for every
	// project, work_send = "plain".
	for _, tc := range []struct {
		check bool
		send  string
	}{{false, ""}, {true, ""}, {true, WorkSendPlain}} {
		check := tc.check
		sc, err := ParseScenario("s.toml", []byte(text))
		if err != nil {
			t.Fatal(err)
		}
		sc.Projects[0].DeadlineCheck = check && tc.send == ""
		sc.Policies.WorkSend = tc.send
		rep, err := Run(context.Background(), sc, Options{})
		if err != nil {
			t.Fatal(err)
		}
		m := rep.Metrics
		if check && (m.Jobs != 0 || rep.Projects[0].Rsc[0].MaxBackoff == 0) {
			t.Errorf("checking server: %d jobs sent, max backoff %g; want none sent and the CPU backed off", m.Jobs, rep.Projects[0].Rsc[0].MaxBackoff)
		}
		if !check && (m.JobsMissed == 0 || m.WastedFraction < 0.3) {
			t.Errorf("blind server: %d missed, wasted fraction %.3f; want the 2-day jobs to miss 1-day deadlines", m.JobsMissed, m.WastedFraction)
		}
	}
}

// recording is a policy that also observes each step's use and sets the
// schedule's charge, as a REC-like policy would: the loop must feed it.
type recording struct {
	steps   int
	used    float64
	charged bool
}

func (r *recording) Name() string { return "recording" }
func (r *recording) Priorities(projects []workfetch.Project, h workfetch.Host, sim *workfetch.SimResult, out []float64) []float64 {
	out = out[:0]
	for range projects {
		out = append(out, 0)
	}
	return out
}
func (r *recording) Observe(now time.Time, h workfetch.Host, projects []workfetch.Project, used [][workfetch.NumRsc]float64, dt float64) {
	r.steps++
	for _, u := range used {
		r.used += u[workfetch.CPU]
	}
}
func (r *recording) Charge(h workfetch.Host) float64 { r.charged = true; return 1 }

func TestPolicyHooks(t *testing.T) {
	sc, err := ParseScenario("s.toml", []byte(goodScenario))
	if err != nil {
		t.Fatal(err)
	}
	pol := &recording{}
	rep, err := Run(context.Background(), sc, Options{Policy: pol})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Policy != "recording" || !pol.charged {
		t.Errorf("policy %q, charged %v: want the given policy used and asked for its charge", rep.Policy, pol.charged)
	}
	if want := int(sc.DurationDays * 86400 / sc.StepSeconds); pol.steps != want {
		t.Errorf("observed %d steps, want %d", pol.steps, want)
	}
	if got := rep.PerResource[0].InstanceSeconds; math.Abs(pol.used-got) > 1e-6*got {
		t.Errorf("observed %g CPU instance-seconds, the report says %g", pol.used, got)
	}
}
