package daemon

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/ccconfig"
	"github.com/boincd/boincd/config"
	"github.com/boincd/boincd/coproc"
	"github.com/boincd/boincd/hostcond"
	"github.com/boincd/boincd/logflags"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

func parseCC(t *testing.T, opts string) ccconfig.CC {
	t.Helper()
	cc, probs := ccconfig.ParseCC("cc_config.xml", []byte("<cc_config><options>"+opts+"</options></cc_config>"))
	if len(probs) > 0 {
		t.Fatalf("cc_config: %v", probs)
	}
	return cc
}

func parseTOML(t *testing.T, s string) *config.Config {
	t.Helper()
	c, err := config.Parse("boincd.toml", []byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// One rule: a key boincd.toml (or the command line) sets wins, cc_config.xml
// decides the rest, defaults fill in; a disagreement is a conflict.
func TestEffectiveSettingsPrecedence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		toml      string
		flags     flagSettings
		cc        string
		check     func(t *testing.T, s settings)
		sources   map[string]string
		conflicts []string
	}{
		{name: "defaults", toml: "", cc: "",
			check: func(t *testing.T, s settings) {
				if s.NoGPUs || s.NCPUs != -1 || s.MaxFileXfers != 8 || s.HTTPTransferTimeout != 300 {
					t.Errorf("defaults %+v", s.Options)
				}
			},
			sources: map[string]string{"no_gpus": fromDefault, "ncpus": fromDefault}},
		{name: "cc only", toml: "", cc: "<no_gpus>1</no_gpus><ncpus>2</ncpus><exit_when_idle/>",
			check: func(t *testing.T, s settings) {
				if !s.NoGPUs || s.NCPUs != 2 || !s.ExitWhenIdle {
					t.Errorf("%+v", s.Options)
				}
			},
			sources: map[string]string{"no_gpus": fromCC, "ncpus": fromCC, "exit_when_idle": fromCC, "use_all_gpus": fromDefault}},
		{name: "toml wins over cc", toml: "no_gpus = false\nunsigned_apps_ok = true\n[gui_rpc]\nallow_remote = false\n",
			cc: "<no_gpus>1</no_gpus><unsigned_apps_ok>0</unsigned_apps_ok><allow_remote_gui_rpc>1</allow_remote_gui_rpc>",
			check: func(t *testing.T, s settings) {
				if s.NoGPUs || !s.UnsignedAppsOK || s.AllowRemoteGUIRPC {
					t.Errorf("%+v", s.Options)
				}
			},
			sources:   map[string]string{"no_gpus": fromTOML, "unsigned_apps_ok": fromTOML, "allow_remote_gui_rpc": fromTOML},
			conflicts: []string{"no_gpus:false:true", "unsigned_apps_ok:true:false", "allow_remote_gui_rpc:false:true"}},
		{name: "same value is no conflict", toml: "use_all_gpus = true\n", cc: "<use_all_gpus>1</use_all_gpus>",
			check:   func(t *testing.T, s settings) {},
			sources: map[string]string{"use_all_gpus": fromTOML}},
		{name: "toml gpu_exclude replaces exclude_gpu", toml: "[[gpu_exclude]]\ndevice = \"0\"\n",
			cc: "<exclude_gpu><url>http://a.example/</url></exclude_gpu>",
			check: func(t *testing.T, s settings) {
				if len(s.ExcludeGPUs) != 0 || len(s.GPUExclude) != 1 {
					t.Errorf("exclusions %+v / %+v", s.ExcludeGPUs, s.GPUExclude)
				}
			},
			sources:   map[string]string{"exclude_gpu": fromTOML},
			conflicts: []string{"exclude_gpu:0:http://a.example/"}},
		{name: "dont_use_docker from cc_config.xml", toml: "", cc: "<dont_use_docker/>",
			check: func(t *testing.T, s settings) {
				if !s.DontUseDocker {
					t.Errorf("%+v", s.Options)
				}
			},
			sources: map[string]string{"dont_use_docker": fromCC}},
		{name: "dont_use_docker: boincd.toml wins", toml: "dont_use_docker = false\n", cc: "<dont_use_docker>1</dont_use_docker>",
			check: func(t *testing.T, s settings) {
				if s.DontUseDocker {
					t.Errorf("%+v", s.Options)
				}
			},
			sources:   map[string]string{"dont_use_docker": fromTOML},
			conflicts: []string{"dont_use_docker:false:true"}},
		{name: "command line", toml: "", flags: flagSettings{noGPUs: true, skipBenchmarks: true}, cc: "<no_gpus>0</no_gpus>",
			check: func(t *testing.T, s settings) {
				if !s.NoGPUs || !s.SkipCPUBenchmarks {
					t.Errorf("%+v", s.Options)
				}
			},
			sources:   map[string]string{"no_gpus": fromFlag, "skip_cpu_benchmarks": fromFlag},
			conflicts: []string{"no_gpus:true:false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, conflicts := effectiveSettings(parseTOML(t, tc.toml), tc.flags, parseCC(t, tc.cc))
			tc.check(t, s)
			for k, want := range tc.sources {
				if s.source[k] != want {
					t.Errorf("source of %s = %q, want %q", k, s.source[k], want)
				}
			}
			var got []string
			for _, c := range conflicts {
				got = append(got, c.option+":"+c.tomlValue+":"+c.ccValue)
			}
			if strings.Join(got, ",") != strings.Join(tc.conflicts, ",") {
				t.Errorf("conflicts %q, want %q", got, tc.conflicts)
			}
		})
	}
}

// bareDaemon is a daemon with state but nothing started, for the effects
// that are decisions on the owner goroutine.
func bareDaemon(t *testing.T, tomlText, cc string) (*Daemon, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	d, err := New(Options{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(&logs, nil)), PollInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d.st = newClientState()
	d.cfg = parseTOML(t, tomlText)
	d.local.cc = parseCC(t, cc)
	d.host = boinc.Host{PNCPUs: 8, DomainName: "host.example", IPAddr: "192.0.2.7"}
	d.startTime = time.Now()
	d.ctx = context.Background()
	d.applySettings(time.Now())
	return d, &logs
}

func TestCCOptionEffectsOnTheHost(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "")
	if d.usableCPUs() != 8 || d.reportedHost().PNCPUs != 8 || d.reportedHost().IPAddr == "" {
		t.Fatalf("defaults: %d cpus, host %+v", d.usableCPUs(), d.reportedHost())
	}
	d, _ = bareDaemon(t, "", "<ncpus>2</ncpus><suppress_net_info/>")
	if got := d.usableCPUs(); got != 2 {
		t.Errorf("ncpus 2: %d usable CPUs", got)
	}
	if got := d.coreHost().Instances[workfetch.CPU]; got != 2 {
		t.Errorf("ncpus 2: the schedule sees %g CPUs", got)
	}
	h := d.reportedHost()
	if h.PNCPUs != 2 || h.DomainName != "" || h.IPAddr != "" {
		t.Errorf("reported host %+v", h)
	}
	if d.host.PNCPUs != 8 {
		t.Error("the probed count was overwritten")
	}
	// Re-read: takes effect at once.
	d.local.cc = parseCC(t, "<ncpus>-1</ncpus>")
	d.applySettings(time.Now())
	if d.usableCPUs() != 8 {
		t.Errorf("ncpus -1 after a re-read: %d", d.usableCPUs())
	}
}

func TestCCOptionEffectsOnSuspension(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "<start_delay>30</start_delay>")
	now := d.startTime.Add(10 * time.Second)
	if cpu, _, _ := d.suspendReasons(now); cpu != hostcond.ReasonInitialDelay {
		t.Errorf("within start_delay: reason %d", cpu)
	}
	if cpu, _, _ := d.suspendReasons(d.startTime.Add(31 * time.Second)); cpu != 0 {
		t.Errorf("after start_delay: reason %d", cpu)
	}

	d, _ = bareDaemon(t, "", "<exclusive_app>fakegame</exclusive_app><exclusive_gpu_app>editor</exclusive_gpu_app>")
	now = time.Now()
	d.handleExclusiveScanned(exclusiveScanned{at: now, cpu: "fakegame"})
	if cpu, _, _ := d.suspendReasons(now); cpu != hostcond.ReasonExclusiveApp {
		t.Errorf("exclusive app running: reason %d", cpu)
	}
	d.modes.Run.Perm = ModeAlways
	if cpu, _, _ := d.suspendReasons(now); cpu != 0 {
		t.Errorf("mode always ignores exclusive apps (as the C++ client): reason %d", cpu)
	}
	d.modes.Run.Perm = ModeAuto
	d.handleExclusiveScanned(exclusiveScanned{at: now.Add(5 * time.Second)})
	if cpu, _, _ := d.suspendReasons(now.Add(5*time.Second + hostcond.ExclusiveAppWait)); cpu != 0 {
		t.Errorf("after the app ended and the wait: reason %d", cpu)
	}
	d.host.NUsableCoprocs = 1
	d.handleExclusiveScanned(exclusiveScanned{at: now.Add(20 * time.Second), gpu: "editor"})
	if cpu, gpu, _ := d.suspendReasons(now.Add(20 * time.Second)); cpu != 0 || gpu != hostcond.ReasonExclusiveApp {
		t.Errorf("exclusive GPU app: cpu %d gpu %d", cpu, gpu)
	}
	// The option removed: nothing left suspended.
	d.local.cc = parseCC(t, "")
	d.applySettings(now)
	if _, gpu, _ := d.suspendReasons(now.Add(20 * time.Second)); gpu != 0 {
		t.Errorf("exclusive_gpu_app removed: gpu %d", gpu)
	}
}

func TestCCOptionEffectsOnWorkAndReports(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "<fetch_minimal_work/>")
	req := workfetch.Request{Project: 0, Reason: "CPU major shortfall"}
	req.Secs[workfetch.CPU], req.Instances[workfetch.CPU] = 86400, 8
	got := d.minimalWork(req)
	if got.Secs[workfetch.CPU] != 1 || got.Instances[workfetch.CPU] != 8 {
		t.Errorf("fetch_minimal_work: asks %g s for %g instances", got.Secs[workfetch.CPU], got.Instances[workfetch.CPU])
	}
	d.notedWork(got)
	if again := d.minimalWork(req); again.Project >= 0 {
		t.Errorf("fetch_minimal_work asks again after the first request: %+v", again)
	}

	d, _ = bareDaemon(t, "", "<report_results_immediately/><max_tasks_reported>2</max_tasks_reported>")
	p := &boinc.Project{MasterURL: "http://p.example/", ResourceShare: 100}
	d.st.projects[p.MasterURL] = p
	for i := range 5 {
		r := &boinc.Result{ProjectURL: p.MasterURL, Name: "r" + string(rune('0'+i)), Phase: boinc.PhaseUploaded,
			CompletedTime: time.Now(), ReportDeadline: time.Now().Add(30 * 24 * time.Hour)}
		d.st.putResult(r)
	}
	if !d.resultsDue(p, time.Now()) {
		t.Error("report_results_immediately: finished results not due at once")
	}
	_, reported := d.buildRequest(p, workfetch.Request{Project: -1}, time.Now())
	if len(reported) != 2 {
		t.Errorf("max_tasks_reported 2: %d reported", len(reported))
	}

	d, _ = bareDaemon(t, "", "")
	d.st.projects[p.MasterURL] = p
	for _, r := range d.st.results {
		d.st.deleteResult(r.Key())
	}
	r := &boinc.Result{ProjectURL: p.MasterURL, Name: "late", Phase: boinc.PhaseUploaded,
		CompletedTime: time.Now(), ReportDeadline: time.Now().Add(30 * 24 * time.Hour)}
	d.st.putResult(r)
	d.opt.MaxReportDelay = time.Hour
	if d.resultsDue(p, time.Now()) {
		t.Error("without report_results_immediately a fresh result is due at once")
	}
}

func TestCCOptionEffectsOnTransfersAndFiles(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "")
	if total, per := d.xferLimits(); total != 8 || per != 2 {
		t.Errorf("default limits %d/%d", total, per)
	}
	d, _ = bareDaemon(t, "", "<max_file_xfers>3</max_file_xfers><max_file_xfers_per_project>1</max_file_xfers_per_project>"+
		"<http_transfer_timeout>20</http_transfer_timeout><http_transfer_timeout_bps>100</http_transfer_timeout_bps><dont_check_file_sizes/>")
	if total, per := d.xferLimits(); total != 3 || per != 1 {
		t.Errorf("limits %d/%d", total, per)
	}
	d.http = rpcclient.New(rpcclient.Options{})
	d.applySettings(time.Now())
	if stall, bps := d.http.TransferLimits(); stall != 20*time.Second || bps != 100 {
		t.Errorf("http limits %v %d", stall, bps)
	}
	// dont_check_file_sizes: a file of another size than announced is
	// not a problem before a task starts.
	f := &boinc.FileInfo{ProjectURL: "http://p.example/", Name: "in", NBytes: 10}
	if err := os.MkdirAll(filepath.Dir(d.filePath(f)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(d.filePath(f), []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if why := d.fileProblem(f, false); why != "" {
		t.Errorf("dont_check_file_sizes: %s", why)
	}
	d.local.cc = parseCC(t, "")
	d.applySettings(time.Now())
	if why := d.fileProblem(f, false); !strings.HasPrefix(why, "wrong size") {
		t.Errorf("size checked again without the option: %q", why)
	}
	if stall, _ := d.http.TransferLimits(); stall != 300*time.Second {
		t.Errorf("http_transfer_timeout back to the default: %v", stall)
	}
}

func TestCCOptionEffectsOnHistoryAndBenchmarks(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "<save_stats_days>3</save_stats_days><rec_half_life_days>1</rec_half_life_days><skip_cpu_benchmarks/>")
	day := statsDay(time.Now())
	var list []boinc.DailyStats
	for i := 10; i >= 0; i-- {
		list = addDailyStats(list, boinc.DailyStats{Day: day.Add(-time.Duration(i) * 24 * time.Hour)}, d.statsDays())
	}
	if len(list) != 4 {
		t.Errorf("save_stats_days 3: %d days kept", len(list))
	}
	if d.recHalfLife() != 86400 {
		t.Errorf("rec_half_life_days 1: %g s", d.recHalfLife())
	}
	var short, long workfetch.ProjectState
	var used [workfetch.NumRsc]float64
	used[workfetch.CPU] = 3600
	h := d.coreHost()
	workfetch.UpdateRECHalfLife(&short, h, 1e9, used, 0, 86400, d.recHalfLife())
	workfetch.UpdateREC(&long, h, 1e9, used, 0, 86400)
	// Five idle days later: the credit of a 1-day half-life has decayed
	// far more than that of the default 10 days.
	var idle [workfetch.NumRsc]float64
	workfetch.UpdateRECHalfLife(&short, h, 1e9, idle, 86400, 6*86400, d.recHalfLife())
	workfetch.UpdateREC(&long, h, 1e9, idle, 86400, 6*86400)
	if !(short.REC < long.REC/4) {
		t.Errorf("rec_half_life_days 1 decays as fast as the default: %g vs %g", short.REC, long.REC)
	}
	d.opt.BenchmarkDuration = time.Second
	d.host.PCalculated = float64(time.Now().Add(-6 * 24 * time.Hour).Unix())
	if d.benchmarksDue(time.Now()) {
		t.Error("skip_cpu_benchmarks: benchmarks due after 6 days")
	}
	d.local.cc = parseCC(t, "")
	d.applySettings(time.Now())
	if !d.benchmarksDue(time.Now()) {
		t.Error("without skip_cpu_benchmarks benchmarks are due after 6 days")
	}
}

func TestCCOptionEffectsOnProxyAndFeeds(t *testing.T) {
	t.Parallel()
	d, logs := bareDaemon(t, "", "<proxy_info><use_http_proxy/><http_server_name>proxy.example</http_server_name><http_server_port>3128</http_server_port></proxy_info><no_info_fetch/>")
	gui := boinc.DefaultProxyInfo()
	d.proxy.Store(&gui)
	if p := d.currentProxy(); p.HTTPServerName != "proxy.example" || p.HTTPServerPort != 3128 {
		t.Errorf("cc_config.xml's proxy not in force: %+v", p)
	}
	if !strings.Contains(logs.String(), "Using proxy info from cc_config.xml") {
		t.Errorf("not logged:\n%s", logs)
	}
	// no_info_fetch: no feed is even looked at (the notice store is not
	// set up in this bare daemon: touching it would panic).
	d.pollFeeds(time.Now())
	if d.nt.fetching {
		t.Error("no_info_fetch: a feed fetch started")
	}
	d.local.cc = parseCC(t, "")
	d.applySettings(time.Now())
	if p := d.currentProxy(); p.UseHTTPProxy {
		t.Errorf("GUI proxy not back: %+v", p)
	}
	if !strings.Contains(logs.String(), "Using proxy info from GUI") {
		t.Errorf("not logged:\n%s", logs)
	}
}

func TestCCOptionEffectsOnGPUs(t *testing.T) {
	t.Parallel()
	gpu := func(i int) coproc.GPU {
		return coproc.GPU{UUID: "GPU-" + string(rune('a'+i)), Name: "Test", Index: i, Major: 8, TotalMem: 1 << 34, Usable: true}
	}
	info := coproc.NVIDIAInfo{GPUs: []coproc.GPU{gpu(0), gpu(1)}}
	for _, tc := range []struct {
		toml, cc string
		want     int
		excluded bool // all GPUs excluded for http://p.example/
	}{
		{"", "", 2, false},
		{"", "<no_gpus/>", 0, false},
		{"no_gpus = false\n", "<no_gpus/>", 2, false},
		{"", "<ignore_nvidia_dev>1</ignore_nvidia_dev>", 1, false},
		{"", "<exclude_gpu><url>http://p.example/</url></exclude_gpu>", 2, true},
		{"", "<exclude_gpu><url>http://p.example/</url><type>ATI</type></exclude_gpu>", 2, false},
		{"", "<exclude_gpu><url>http://p.example/</url><app>x</app></exclude_gpu>", 2, false},
	} {
		d, _ := bareDaemon(t, tc.toml, tc.cc)
		d.gpu.probed, d.gpu.raw = true, info
		d.applyGPUInfo(info)
		if len(d.gpu.usable) != tc.want || d.host.NUsableCoprocs != tc.want {
			t.Errorf("%q %q: %d usable GPUs, want %d", tc.toml, tc.cc, len(d.gpu.usable), tc.want)
		}
		if got := d.gpuExcludedFor("http://p.example/"); got != tc.excluded {
			t.Errorf("%q: excluded for the project %v, want %v", tc.cc, got, tc.excluded)
		}
	}
	// A re-read applies at once to the GPUs already probed.
	d, _ := bareDaemon(t, "", "")
	d.gpu.probed, d.gpu.raw = true, info
	d.applyGPUInfo(info)
	d.local.cc = parseCC(t, "<no_gpus/>")
	d.applySettings(time.Now())
	if len(d.gpu.usable) != 0 {
		t.Errorf("no_gpus on re-read: %d usable", len(d.gpu.usable))
	}
}

func TestTrimToTail(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stderr.txt")
	if n, err := trimToTail(path, 10); n != 0 || err != nil {
		t.Fatalf("missing file: %d %v", n, err)
	}
	if err := os.WriteFile(path, []byte("0123456789abcdefghij"), 0o644); err != nil {
		t.Fatal(err)
	}
	n, err := trimToTail(path, 10)
	if err != nil || n != 15 {
		t.Fatalf("trim: %d %v", n, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "fghij" {
		t.Errorf("kept %q", b)
	}
	if n, _ := trimToTail(path, 10); n != 0 {
		t.Errorf("trimmed a file within its limit")
	}
}

// <log_flags> reach the logger: a debug flag brings its records in.
func TestCCLogFlagsApplied(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var d *Daemon
	d, _ = bareDaemon(t, "", "")
	d.logFlags = logflags.New(slog.NewTextHandler(io.MultiWriter(&buf), nil))
	log := slog.New(d.logFlags).With(slog.String("component", "client"))
	log.Debug("not requesting work", slog.String("reason", "backoff"))
	if buf.Len() != 0 {
		t.Fatalf("debug record shown without its flag: %s", buf.String())
	}
	cc, _ := ccconfig.ParseCC("cc_config.xml", []byte("<cc_config><log_flags><work_fetch_debug>1</work_fetch_debug></log_flags></cc_config>"))
	d.local.cc = cc
	d.applySettings(time.Now())
	log.Debug("not requesting work", slog.String("reason", "backoff"))
	if !strings.Contains(buf.String(), "[work_fetch] not requesting work") {
		t.Fatalf("work_fetch_debug on: %q", buf.String())
	}
}
