package metrics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/hostcond"
)

func fixed(s *Snapshot) Source {
	return SourceFunc(func(context.Context) (*Snapshot, error) { return s, nil })
}

func fullSnapshot() *Snapshot {
	return &Snapshot{
		Build: BuildInfo{Version: "0.3.1", ClientVersion: "7.20.5", Platform: "x86_64-pc-linux-gnu"},
		Daemon: DaemonState{
			StartTime:         time.Unix(1700000000, 0),
			RunMode:           int(boinc.RunModeAuto),
			GPUMode:           int(boinc.RunModeNever),
			NetworkMode:       int(boinc.RunModeAlways),
			TaskSuspendReason: hostcond.ReasonBatteries | hostcond.ReasonUserActive,
		},
		Host: HostFacts{
			OSName: "Linux", OSVersion: "6.8.0", CPUVendor: "GenuineIntel", CPUModel: "Xeon",
			LogicalCPUs: 8, UsableCPUs: 6, MemoryBytes: 16e9, SwapBytes: 2e9,
			DiskTotalBytes: 500e9, DiskFreeBytes: 0,
			FPOPS: 4e9, IOPS: 1e10, BenchmarkTime: time.Unix(1700000100, 0),
			GPUs: []GPUCount{
				{Type: "NVIDIA", Model: "RTX 3060", Count: 1},
				{Type: "NVIDIA", Model: "RTX 3060", Count: 1},
			},
		},
		Tasks: []TaskCount{
			{State: TaskRunning, Resource: "CPU", Count: 3},
			{State: TaskRunning, Resource: "CPU", Count: 2},
			{State: TaskReady, Resource: "NVIDIA", Count: 1},
		},
		Projects: []ProjectStats{{
			URL: "https://einstein.phys.uwm.edu/", Name: "Einstein@Home",
			ResourceShare: 100, NoNewTasks: true, TasksInProgress: 6, DCF: 1.25,
			RPCBackoff:      90 * time.Second,
			UserTotalCredit: 1000, UserExpavgCredit: 10, HostTotalCredit: 500, HostExpavgCredit: 5,
			Resources: []ProjectResource{
				{Resource: "CPU", ProcessingSecondsTotal: 3600, Debt: -120, FetchBackoff: 0},
				{Resource: "NVIDIA", ProcessingSecondsTotal: 60, Debt: 30, FetchBackoff: 10 * time.Minute},
			},
			SchedulerRPCsTotal: []RPCCount{{Outcome: RPCOK, Count: 7}, {Outcome: RPCNetworkError, Count: 2}, {Outcome: RPCOK, Count: 1}},
			Transfers: TransferStats{
				UploadedBytesTotal: 1024, DownloadedBytesTotal: 4096,
				ActiveUploads: 1, ActiveDownloads: 0, FailedUploadsTotal: 0, FailedDownloadsTotal: 3,
			},
		}},
		HealthWarnings: []string{HealthClockJump, "custom_warning"},
	}
}

func TestCollectorExposition(t *testing.T) {
	tests := []struct {
		name    string
		snap    *Snapshot
		metrics []string
		want    string
	}{
		{
			name:    "daemon",
			snap:    fullSnapshot(),
			metrics: []string{"boincd_scrape_error", "boincd_build_info", "boincd_start_time_seconds", "boincd_run_mode", "boincd_suspended"},
			want: `
# HELP boincd_build_info Always 1; labels identify the boincd build.
# TYPE boincd_build_info gauge
boincd_build_info{client_version="7.20.5",platform="x86_64-pc-linux-gnu",version="0.3.1"} 1
# HELP boincd_run_mode 1 for the run mode in force for each activity, 0 for the others.
# TYPE boincd_run_mode gauge
boincd_run_mode{activity="computing",mode="always"} 0
boincd_run_mode{activity="computing",mode="auto"} 1
boincd_run_mode{activity="computing",mode="never"} 0
boincd_run_mode{activity="gpu",mode="always"} 0
boincd_run_mode{activity="gpu",mode="auto"} 0
boincd_run_mode{activity="gpu",mode="never"} 1
boincd_run_mode{activity="network",mode="always"} 1
boincd_run_mode{activity="network",mode="auto"} 0
boincd_run_mode{activity="network",mode="never"} 0
# HELP boincd_scrape_error 1 if the last scrape could not get the daemon's state (nothing else from boincd is exported then), 0 otherwise.
# TYPE boincd_scrape_error gauge
boincd_scrape_error 0
# HELP boincd_start_time_seconds Unix time the daemon started.
# TYPE boincd_start_time_seconds gauge
boincd_start_time_seconds 1.7e+09
# HELP boincd_suspended 1 while the activity is suspended, with the reason; 0 with reason "none" otherwise.
# TYPE boincd_suspended gauge
boincd_suspended{activity="computing",reason="batteries"} 1
boincd_suspended{activity="gpu",reason="none"} 0
boincd_suspended{activity="network",reason="none"} 0
`,
		},
		{
			name:    "health",
			snap:    fullSnapshot(),
			metrics: []string{"boincd_health_warning"},
			want: `
# HELP boincd_health_warning 1 while the named health warning is in force, 0 otherwise.
# TYPE boincd_health_warning gauge
boincd_health_warning{name="app_user_unusable"} 0
boincd_health_warning{name="apps_refused_root"} 0
boincd_health_warning{name="clock_jump"} 1
boincd_health_warning{name="custom_warning"} 1
boincd_health_warning{name="disk_limit_reached"} 0
boincd_health_warning{name="no_gpu_found"} 0
boincd_health_warning{name="no_projects"} 0
boincd_health_warning{name="project_backed_off"} 0
boincd_health_warning{name="state_write_failed"} 0
boincd_health_warning{name="transfer_backed_off"} 0
`,
		},
		{
			name:    "tasks summed, every known state exported",
			snap:    fullSnapshot(),
			metrics: []string{"boincd_tasks"},
			want: `
# HELP boincd_tasks Tasks on this host by state and resource.
# TYPE boincd_tasks gauge
boincd_tasks{resource="CPU",state="aborted"} 0
boincd_tasks{resource="CPU",state="downloading"} 0
boincd_tasks{resource="CPU",state="failed"} 0
boincd_tasks{resource="CPU",state="ready"} 0
boincd_tasks{resource="CPU",state="ready_to_report"} 0
boincd_tasks{resource="CPU",state="running"} 5
boincd_tasks{resource="CPU",state="suspended"} 0
boincd_tasks{resource="CPU",state="uploading"} 0
boincd_tasks{resource="NVIDIA",state="aborted"} 0
boincd_tasks{resource="NVIDIA",state="downloading"} 0
boincd_tasks{resource="NVIDIA",state="failed"} 0
boincd_tasks{resource="NVIDIA",state="ready"} 1
boincd_tasks{resource="NVIDIA",state="ready_to_report"} 0
boincd_tasks{resource="NVIDIA",state="running"} 0
boincd_tasks{resource="NVIDIA",state="suspended"} 0
boincd_tasks{resource="NVIDIA",state="uploading"} 0
`,
		},
		{
			name: "host",
			snap: fullSnapshot(),
			metrics: []string{"boincd_host_info", "boincd_host_cpus", "boincd_host_usable_cpus", "boincd_host_memory_bytes",
				"boincd_host_disk_free_bytes", "boincd_host_benchmark_fpops", "boincd_host_benchmark_timestamp_seconds", "boincd_gpus"},
			want: `
# HELP boincd_gpus GPUs found on the host by type and model.
# TYPE boincd_gpus gauge
boincd_gpus{model="RTX 3060",type="NVIDIA"} 2
# HELP boincd_host_benchmark_fpops Whetstone benchmark result per CPU, floating-point operations per second.
# TYPE boincd_host_benchmark_fpops gauge
boincd_host_benchmark_fpops 4e+09
# HELP boincd_host_benchmark_timestamp_seconds Unix time the CPU benchmarks last ran.
# TYPE boincd_host_benchmark_timestamp_seconds gauge
boincd_host_benchmark_timestamp_seconds 1.7000001e+09
# HELP boincd_host_cpus Logical CPUs found on the host.
# TYPE boincd_host_cpus gauge
boincd_host_cpus 8
# HELP boincd_host_disk_free_bytes Free space on the file system holding the data directory.
# TYPE boincd_host_disk_free_bytes gauge
boincd_host_disk_free_bytes 0
# HELP boincd_host_info Always 1; labels describe the host as probed.
# TYPE boincd_host_info gauge
boincd_host_info{cpu_model="Xeon",cpu_vendor="GenuineIntel",os="Linux",os_version="6.8.0"} 1
# HELP boincd_host_memory_bytes Host RAM in bytes.
# TYPE boincd_host_memory_bytes gauge
boincd_host_memory_bytes 1.6e+10
# HELP boincd_host_usable_cpus CPUs the preferences let boincd use.
# TYPE boincd_host_usable_cpus gauge
boincd_host_usable_cpus 6
`,
		},
		{
			name:    "unmeasured host facts left out",
			snap:    &Snapshot{Host: HostFacts{OSName: "Linux"}},
			metrics: []string{"boincd_host_cpus", "boincd_host_memory_bytes", "boincd_host_disk_free_bytes", "boincd_host_benchmark_fpops", "boincd_host_benchmark_timestamp_seconds", "boincd_start_time_seconds", "boincd_run_mode", "boincd_gpus"},
			want:    "",
		},
		{
			name: "project scalars",
			snap: fullSnapshot(),
			metrics: []string{"boincd_project_resource_share", "boincd_project_no_new_tasks", "boincd_project_tasks_in_progress",
				"boincd_project_dcf", "boincd_project_rpc_backoff_seconds", "boincd_project_user_total_credit", "boincd_project_host_expavg_credit"},
			want: `
# HELP boincd_project_dcf The project's duration correction factor.
# TYPE boincd_project_dcf gauge
boincd_project_dcf{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 1.25
# HELP boincd_project_host_expavg_credit This host's recent average credit at the project.
# TYPE boincd_project_host_expavg_credit gauge
boincd_project_host_expavg_credit{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 5
# HELP boincd_project_no_new_tasks 1 if the project is set to get no new tasks.
# TYPE boincd_project_no_new_tasks gauge
boincd_project_no_new_tasks{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 1
# HELP boincd_project_resource_share The project's resource share.
# TYPE boincd_project_resource_share gauge
boincd_project_resource_share{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 100
# HELP boincd_project_rpc_backoff_seconds Seconds until the next scheduler RPC to the project is allowed.
# TYPE boincd_project_rpc_backoff_seconds gauge
boincd_project_rpc_backoff_seconds{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 90
# HELP boincd_project_tasks_in_progress The project's tasks not yet reported.
# TYPE boincd_project_tasks_in_progress gauge
boincd_project_tasks_in_progress{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 6
# HELP boincd_project_user_total_credit The user's total credit at the project.
# TYPE boincd_project_user_total_credit gauge
boincd_project_user_total_credit{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 1000
`,
		},
		{
			name:    "project resources",
			snap:    fullSnapshot(),
			metrics: []string{"boincd_project_processing_seconds_total", "boincd_project_debt_seconds", "boincd_project_fetch_backoff_seconds"},
			want: `
# HELP boincd_project_debt_seconds The project's scheduling debt for the resource in instance-seconds (positive: owed processing).
# TYPE boincd_project_debt_seconds gauge
boincd_project_debt_seconds{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="CPU"} -120
boincd_project_debt_seconds{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="NVIDIA"} 30
# HELP boincd_project_fetch_backoff_seconds Seconds until work fetch may ask the project for the resource again.
# TYPE boincd_project_fetch_backoff_seconds gauge
boincd_project_fetch_backoff_seconds{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="CPU"} 0
boincd_project_fetch_backoff_seconds{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="NVIDIA"} 600
# HELP boincd_project_processing_seconds_total Instance-seconds of the resource used by the project's tasks.
# TYPE boincd_project_processing_seconds_total counter
boincd_project_processing_seconds_total{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="CPU"} 3600
boincd_project_processing_seconds_total{project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home",resource="NVIDIA"} 60
`,
		},
		{
			name:    "rpcs and transfers",
			snap:    fullSnapshot(),
			metrics: []string{"boincd_scheduler_rpcs_total", "boincd_transfer_bytes_total", "boincd_transfers_active", "boincd_transfer_failures_total"},
			want: `
# HELP boincd_scheduler_rpcs_total Scheduler RPCs to the project by outcome.
# TYPE boincd_scheduler_rpcs_total counter
boincd_scheduler_rpcs_total{outcome="http_error",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 0
boincd_scheduler_rpcs_total{outcome="network_error",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 2
boincd_scheduler_rpcs_total{outcome="ok",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 8
boincd_scheduler_rpcs_total{outcome="parse_error",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 0
boincd_scheduler_rpcs_total{outcome="refused",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 0
# HELP boincd_transfer_bytes_total Bytes transferred for the project's files by direction.
# TYPE boincd_transfer_bytes_total counter
boincd_transfer_bytes_total{direction="down",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 4096
boincd_transfer_bytes_total{direction="up",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 1024
# HELP boincd_transfer_failures_total Failed file transfer attempts for the project by direction.
# TYPE boincd_transfer_failures_total counter
boincd_transfer_failures_total{direction="down",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 3
boincd_transfer_failures_total{direction="up",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 0
# HELP boincd_transfers_active File transfers in progress for the project by direction.
# TYPE boincd_transfers_active gauge
boincd_transfers_active{direction="down",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 0
boincd_transfers_active{direction="up",project="https://einstein.phys.uwm.edu/",project_name="Einstein@Home"} 1
`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := render(t, scrape(t, NewCollector(fixed(tc.snap), time.Second, nil)), tc.metrics...)
			if want := strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestCollectorLint runs client_golang's metric-naming lint (promlint,
// which parses the text with Prometheus' decoder) over a full scrape: the
// boincd metrics of a full snapshot and the Go and process series.
func TestCollectorLint(t *testing.T) {
	problems, err := lint(fullScrape(t, NewCollector(fixed(fullSnapshot()), time.Second, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestScrapeError(t *testing.T) {
	tests := []struct {
		name string
		src  Source
	}{
		{"source error", SourceFunc(func(context.Context) (*Snapshot, error) {
			return nil, errors.New("daemon stopping")
		})},
		{"nil snapshot", SourceFunc(func(context.Context) (*Snapshot, error) { return nil, nil })},
		{"timeout", SourceFunc(func(ctx context.Context) (*Snapshot, error) {
			// A daemon whose owner loop is busy: answers only when the
			// scrape gives up.
			<-ctx.Done()
			return nil, fmt.Errorf("waiting for owner loop: %w", ctx.Err())
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCollector(tc.src, 50*time.Millisecond, nil)
			want := `
# HELP boincd_scrape_error 1 if the last scrape could not get the daemon's state (nothing else from boincd is exported then), 0 otherwise.
# TYPE boincd_scrape_error gauge
boincd_scrape_error 1
`
			// No metric names: compare everything, so any stale or extra
			// series fails the test.
			if got := render(t, scrape(t, c)); got != strings.TrimPrefix(want, "\n") {
				t.Errorf("exposition:\n%s\nwant:%s", got, want)
			}
		})
	}
}

// TestScrapeErrorThenRecovery checks that a failed scrape does not poison
// the next one: the Collector keeps no state between scrapes.
func TestScrapeErrorThenRecovery(t *testing.T) {
	fail := true
	src := SourceFunc(func(context.Context) (*Snapshot, error) {
		if fail {
			return nil, errors.New("busy")
		}
		return fullSnapshot(), nil
	})
	c := NewCollector(src, time.Second, nil)
	if n := countSeries(parse(t, scrape(t, c))); n != 1 {
		t.Fatalf("failed scrape: %d series, want 1", n)
	}
	fail = false
	if v := value(t, c, "boincd_scrape_error"); v != 0 {
		t.Fatalf("boincd_scrape_error = %v after recovery, want 0", v)
	}
	if n := countSeries(parse(t, scrape(t, c)), "boincd_tasks"); n == 0 {
		t.Fatal("no boincd_tasks after recovery")
	}
}

// value scrapes c and returns the value of the single series named name.
func value(t *testing.T, c *Collector, name string) float64 {
	t.Helper()
	for _, mf := range parse(t, scrape(t, c)) {
		if mf.GetName() != name {
			continue
		}
		if len(mf.GetMetric()) != 1 {
			t.Fatalf("%s has %d series, want 1", name, len(mf.GetMetric()))
		}
		m := mf.GetMetric()[0]
		if m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("%s not collected", name)
	return 0
}

// TestCardinalityBounded: a thousand tasks, each reported as its own entry
// with made-up per-task noise, must not make more series than states ×
// resources, and the counts must still add up.
func TestCardinalityBounded(t *testing.T) {
	states := KnownTaskStates()
	resources := []string{"CPU", "NVIDIA", "ATI"}
	snap := &Snapshot{}
	for i := range 1000 {
		snap.Tasks = append(snap.Tasks, TaskCount{
			State:    states[i%len(states)],
			Resource: resources[i%len(resources)],
			Count:    1,
		})
	}
	mfs := parse(t, scrape(t, NewCollector(fixed(snap), time.Second, nil)))
	total, series := 0.0, 0
	for _, mf := range mfs {
		series += len(mf.GetMetric())
		if mf.GetName() != "boincd_tasks" {
			continue
		}
		if got, max := len(mf.GetMetric()), len(states)*len(resources); got > max {
			t.Errorf("boincd_tasks has %d series, want at most %d", got, max)
		}
		for _, m := range mf.GetMetric() {
			total += m.GetGauge().GetValue()
		}
	}
	if total != 1000 {
		t.Errorf("boincd_tasks adds up to %v, want 1000", total)
	}
	// Everything else is fixed-size for a snapshot without projects.
	if series > 100 {
		t.Errorf("%d series in all for 1000 tasks; something is per task", series)
	}
}

// TestSnapshotHasNoSecretFields walks the Snapshot type: no field may be
// meant to hold a credential, so none can leak into a metric.
func TestSnapshotHasNoSecretFields(t *testing.T) {
	secret := regexp.MustCompile(`(?i)auth|passw|secret|token|key|cpid|cookie|credential`)
	seen := map[reflect.Type]bool{}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeFor[Snapshot]().PkgPath() {
			return
		}
		seen[typ] = true
		for f := range typ.Fields() {
			if secret.MatchString(f.Name) {
				t.Errorf("%s.%s looks like a field for a secret", path, f.Name)
			}
			walk(path+"."+f.Name, f.Type)
		}
	}
	walk("Snapshot", reflect.TypeFor[Snapshot]())
	if len(seen) < 5 {
		t.Fatalf("walked only %d struct types; the walk is broken", len(seen))
	}
}

// TestNoSecretInExposition puts credentials where a careless daemon might
// (in the master URL) and checks none reaches the output.
func TestNoSecretInExposition(t *testing.T) {
	const secret = "s3cr3t-authenticator"
	snap := fullSnapshot()
	snap.Projects = append(snap.Projects,
		ProjectStats{URL: "https://user:" + secret + "@boinc.example.org/proj/?auth=" + secret + "#" + secret, Name: "Example"},
		ProjectStats{URL: "http://" + secret + "@[bad host/x?k=" + secret, Name: "Broken URL"},
	)
	out := gatherText(t, NewCollector(fixed(snap), time.Second, nil))
	if strings.Contains(out, secret) {
		t.Fatalf("secret in exposition:\n%s", out)
	}
	if !strings.Contains(out, `project="https://boinc.example.org/proj/"`) {
		t.Errorf("cleaned project URL missing from:\n%s", out)
	}
}

// gatherText scrapes c and lists each series, parsed back by Prometheus'
// parser, as `name label="value" ...` (values quoted by %q).
func gatherText(t *testing.T, c *Collector) string {
	t.Helper()
	var b strings.Builder
	for _, mf := range parse(t, scrape(t, c)) {
		for _, m := range mf.GetMetric() {
			b.WriteString(mf.GetName())
			for _, l := range m.GetLabel() {
				fmt.Fprintf(&b, " %s=%q", l.GetName(), l.GetValue())
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestHostileInput: duplicates and bad strings in the snapshot must neither
// panic nor make a scrape that Prometheus' parser refuses.
func TestHostileInput(t *testing.T) {
	long := strings.Repeat("é", 1000)
	snap := &Snapshot{
		Host: HostFacts{CPUModel: "bad\xff\xfeutf8", GPUs: []GPUCount{{Type: "NVIDIA", Model: long}, {Type: "NVIDIA", Model: long + "x"}}},
		Tasks: []TaskCount{
			{State: "", Resource: "CPU", Count: 4},
			{State: "weird\xff", Resource: "CPU", Count: 1},
		},
		Projects: []ProjectStats{
			{URL: "https://a.example/", Name: "A\xff"},
			{URL: "https://a.example/?x=1", Name: "A again"}, // same label after cleaning
			{URL: "", Name: "no url"},
			{URL: "https://b.example/", Resources: []ProjectResource{{Resource: "CPU"}, {Resource: "CPU"}, {Resource: ""}},
				SchedulerRPCsTotal: []RPCCount{{Outcome: "teapot", Count: 1}, {Outcome: ""}}},
		},
		HealthWarnings: []string{HealthClockJump, HealthClockJump, ""},
	}
	out := gatherText(t, NewCollector(fixed(snap), time.Second, nil))
	for _, want := range []string{
		"boincd_tasks resource=\"CPU\" state=\"weird\ufffd\"",
		"boincd_project_resource_share project=\"https://a.example/\" project_name=\"A\ufffd\"",
		`boincd_scheduler_rpcs_total outcome="teapot" project="https://b.example/" project_name=""`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "A again") || strings.Contains(out, "no url") {
		t.Errorf("duplicate or URL-less project exported:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4*maxLabelLen+200 {
			t.Errorf("label not capped: %d bytes", len(line))
		}
	}
	// The two GPU models differ only past the cap, so they merge.
	if n := strings.Count(out, "boincd_gpus "); n != 1 {
		t.Errorf("%d boincd_gpus series, want 1 (merged after capping)", n)
	}
}

func TestProjectLabel(t *testing.T) {
	tests := []struct{ in, want string }{
		{"https://einstein.phys.uwm.edu/", "https://einstein.phys.uwm.edu/"},
		{"  http://setiathome.berkeley.edu/ ", "http://setiathome.berkeley.edu/"},
		{"https://u:p@x.example/a/?q=1#f", "https://x.example/a/"},
		{"https://x.example/a?", "https://x.example/a"},
		{"http://u:p@[bad/x?q", "http://[bad/x"},
		{"u:p@host/x", "host/x"},
		{"", ""},
	}
	for _, tc := range tests {
		if got := ProjectLabel(tc.in); got != tc.want {
			t.Errorf("ProjectLabel(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestSuspendReasonLabel(t *testing.T) {
	tests := []struct {
		in   uint32
		want string
	}{
		{0, "none"},
		{hostcond.ReasonUserReq, "user_request"},
		{hostcond.ReasonCPUUsage, "cpu_usage"},
		{hostcond.ReasonNetworkQuota, "network_quota"},
		// Benchmarks take precedence over batteries, as in cc_status.
		{hostcond.ReasonBatteries | hostcond.ReasonBenchmarks, "benchmarks"},
		{1 << 20, "reason_1048576"},
	}
	for _, tc := range tests {
		if got := SuspendReasonLabel(tc.in); got != tc.want {
			t.Errorf("SuspendReasonLabel(%d) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestKnownListsAreCopies(t *testing.T) {
	KnownTaskStates()[0] = "x"
	KnownRPCOutcomes()[0] = "x"
	KnownHealthWarnings()[0] = "x"
	if KnownTaskStates()[0] != TaskDownloading || KnownRPCOutcomes()[0] != RPCOK || KnownHealthWarnings()[0] != HealthNoProjects {
		t.Fatal("Known* lists can be modified by callers")
	}
}

// hostileSnapshot is fullSnapshot with hostile strings and odd numbers.
func hostileSnapshot() *Snapshot {
	long := strings.Repeat("é", 1000)
	s := fullSnapshot()
	s.Host.CPUModel = "bad\xff\xfeutf8 \"q\" \\ \n"
	s.Host.GPUs = append(s.Host.GPUs, GPUCount{Type: "NVIDIA", Model: long}, GPUCount{Type: "ATI", Model: "a\"b"})
	s.Tasks = append(s.Tasks, TaskCount{State: "weird\xff", Resource: "CPU", Count: 1}, TaskCount{State: "x", Resource: "Z\n", Count: 2})
	s.Projects = append(s.Projects,
		ProjectStats{URL: "https://a.example/", Name: "A\xff\\\"", DCF: 0.1, RPCBackoff: -5, UserTotalCredit: 1e300, HostExpavgCredit: 123456.789},
		ProjectStats{URL: "https://b.example/", Resources: []ProjectResource{{Resource: "CPU", Debt: -0.000001}, {Resource: "intel_gpu"}},
			SchedulerRPCsTotal: []RPCCount{{Outcome: "teapot", Count: 1 << 60}}},
	)
	s.HealthWarnings = append(s.HealthWarnings, "zz", "a a")
	return s
}

// TestSameAsClientGolang: testdata/client_golang_v1.25.0.txt is what the
// exporter wrote for hostileSnapshot when it was built on client_golang
// v1.25.0 (its registry, const metrics and expfmt). The exposition must
// stay byte for byte the same.
func TestSameAsClientGolang(t *testing.T) {
	want, err := os.ReadFile("testdata/client_golang_v1.25.0.txt")
	if err != nil {
		t.Fatal(err)
	}
	got := scrape(t, NewCollector(fixed(hostileSnapshot()), time.Second, nil))
	if got != string(want) {
		t.Errorf("exposition differs from client_golang's:\n%s", got)
	}
	parse(t, got)
}
