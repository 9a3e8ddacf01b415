package realserver

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The feature cases whose app is linked with the BOINC API: testdata/
// rsapi.cpp, built here with the system's C++ compiler against Debian's
// libboinc-app-dev and added to the project as two apps of its own once
// per suite run (installAPIApps). No validator runs for them, so their
// jobs are done when reported as successes.

const (
	// trickleApp's only version has the API binary as its main program:
	// update_versions finds its api_version in it.
	trickleApp = "rstrickle"
	// noAPIApp's only version is BOINC's wrapper built against the shared
	// libboinc_api (no API_VERSION string: the version has no
	// api_version) with job.xml and a worker script.
	noAPIApp = "rsnoapi"
	// wrapperApp is the same with the API_VERSION string in the wrapper:
	// its version has an api_version.
	wrapperApp = "rswrap"
	// apiAppVersion and apiPlatform: both apps' only version is
	// apps/<app>/1.00/<platform>.
	apiAppVersion = "1.00"
	apiPlatform   = "x86_64-pc-linux-gnu"

	// trickleSeconds bounds how long a trickle job waits for its
	// trickle-down; it ends as soon as one arrives.
	trickleSeconds = 30
	// trickleVariety is the variety of the app's trickle-ups and of the
	// trickle-downs the suite sends back.
	trickleVariety = "rstest"

	// gridSeconds and gridSteps: a no_api_version job runs gridSeconds and
	// reports fraction done i/gridSteps after each step.
	gridSeconds = 8
	gridSteps   = 16

	// apiAppsMarker in the project directory says installAPIApps ran.
	apiAppsMarker = ".rs_api_apps"
)

// apiFeatureCases are the feature cases whose app is linked with the BOINC
// API (trickle messages; an app version without <api_version>).
func apiFeatureCases() []featureCase {
	return []featureCase{
		{
			name: "trickle",
			about: fmt.Sprintf("%s (API app): trickle-up (variety %s) at once, msg_to_host <trickle_down> inserted once the task runs; "+
				"msg_from_host rows (s from task start), trickle-downs that reached the app's output", trickleApp, trickleVariety),
			setup: installAPIApps,
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.assignedJobs(t, r, trickleApp, "--copy", "", func(string) string { return fmt.Sprintf("trickle %d\n", trickleSeconds) })
			},
			during:   watchTrickles,
			check:    checkTrickles,
			reported: true,
		},
		{
			name: "no_api_version",
			about: fmt.Sprintf("%s: BOINC's wrapper 7.20.5 in a version without <api_version> (built on Debian's shared libboinc_api), "+
				"running a shell worker that writes its fraction done to a file; fraction done (boinccmd --get_tasks, every 0.5 s) "+
				"on the worker's 1/%d grid", noAPIApp, gridSteps),
			setup: installAPIApps,
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.assignedJobs(t, r, noAPIApp, "--copy", "", func(string) string { return fmt.Sprintf("grid %d %d\n", gridSeconds, gridSteps) })
			},
			during:   watchGrid,
			check:    func(t *testing.T, s *server, r *caseRun) string { return checkGrid(t, s, r, noAPIApp, false) },
			reported: true,
		},
		{
			name: "wrapper",
			about: fmt.Sprintf("%s: the same wrapper and worker in a version with <api_version> (the API_VERSION string a static "+
				"link gives); fraction done on the worker's 1/%d grid", wrapperApp, gridSteps),
			setup: installAPIApps,
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.assignedJobs(t, r, wrapperApp, "--copy", "", func(string) string { return fmt.Sprintf("grid %d %d\n", gridSeconds, gridSteps) })
			},
			during:   watchGrid,
			check:    func(t *testing.T, s *server, r *caseRun) string { return checkGrid(t, s, r, wrapperApp, true) },
			reported: true,
		},
	}
}

// ---------------------------------------------------------------- the apps

// apiApp is one app installAPIApps adds: the files of its only version
// (the first the main program), and whether update_versions must find an
// api_version in it.
type apiApp struct {
	name    string
	seconds int // its jobs' estimate
	files   []apiAppFile
	api     bool
}

type apiAppFile struct {
	suffix  string // physical name: <app>_<suffix>_<version>_<platform>, "" for the main program
	logical string // logical name ("" for the main program)
	build   func(t *testing.T, out string)
	body    string // when build is nil
	mode    os.FileMode
}

// apiApps are the apps of the API cases: rsapi's trickle and grid modes,
// and BOINC's own wrapper running a worker script, once in a version
// without <api_version> (built against the shared libboinc_api, as
// Debian builds it) and once with.
func (s *server) apiApps() []apiApp {
	wrapped := func(tagged bool) []apiAppFile {
		return []apiAppFile{
			{build: func(t *testing.T, out string) { s.buildWrapper(t, out, tagged) }, mode: 0o755},
			{suffix: "job", logical: "job.xml", body: wrapperJob, mode: 0o644},
			{suffix: "worker", logical: "worker", body: wrapperWorker, mode: 0o755},
		}
	}
	return []apiApp{
		{name: trickleApp, seconds: trickleSeconds, api: true,
			files: []apiAppFile{{build: s.buildRSAPI, mode: 0o755}}},
		{name: noAPIApp, seconds: gridSeconds, files: wrapped(false)},
		{name: wrapperApp, seconds: gridSeconds, api: true, files: wrapped(true)},
	}
}

// wrapperJob is the wrapper's job.xml: one task, the worker, whose
// fraction done is the last number in its file progress.
const wrapperJob = `<job_desc>
    <task>
        <application>worker</application>
        <fraction_done_filename>progress</fraction_done_filename>
    </task>
</job_desc>
`

// wrapperWorker is the program the wrapper runs: no BOINC API, a shell
// script reading "grid SECONDS STEPS" from its input (in, a copy) that
// writes i/STEPS to progress after each of STEPS equal steps, then its
// output.
const wrapperWorker = `#!/bin/sh
# rs worker (no BOINC API): "grid SECONDS STEPS" in its input; after each
# step, i/STEPS in progress (the wrapper's fraction_done_filename)
set -e
read -r mode secs steps <in
[ "$mode" = grid ] || { echo "worker: input mode '$mode', want grid" >&2; exit 1; }
step=$(awk -v s="$secs" -v n="$steps" 'BEGIN { printf "%.3f", s / n }')
i=1
while [ "$i" -le "$steps" ]; do
  sleep "$step"
  awk -v i="$i" -v n="$steps" 'BEGIN { printf "%.6f\n", i / n }' >progress.tmp
  mv progress.tmp progress
  i=$((i + 1))
done
echo "worker: $steps steps of $step s" >out
`

// installAPIApps adds the apiApps to the project as setup.sh adds rsapp:
// the files under apps/<app>/1.00/<platform>/ (with version.xml naming
// the logical names of all but the main program), templates/<app>_in and
// _out, the app in project.xml, bin/xadd, then bin/update_versions
// --noconfirm (which signs the files). The feeder loads the new versions
// into the scheduler's shared memory on its reread_db trigger. config.xml
// gets <msg_to_host/>: without it the scheduler sends no msg_to_host row
// (handle_request.cpp handle_msgs_to_host). It runs once per suite run.
func installAPIApps(t *testing.T, s *server) {
	t.Helper()
	proj := filepath.Join(s.root, "projects", project)
	if fileExists(filepath.Join(proj, apiAppsMarker)) {
		return
	}
	t0 := time.Now()
	s.editProjectFile(t, "config.xml", "<config>", "<config>\n    <msg_to_host/>")
	apps := s.apiApps()
	var names []string
	for _, app := range apps {
		names = append(names, app.name)
		dir := filepath.Join(proj, "apps", app.name, apiAppVersion, apiPlatform)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var version strings.Builder
		version.WriteString("<version>\n")
		for _, f := range app.files {
			name := fmt.Sprintf("%s_%s_%s", app.name, apiAppVersion, apiPlatform)
			if f.suffix != "" {
				name = fmt.Sprintf("%s_%s_%s_%s", app.name, f.suffix, apiAppVersion, apiPlatform)
			}
			path := filepath.Join(dir, name)
			if f.build != nil {
				f.build(t, path)
			} else if err := os.WriteFile(path, []byte(f.body), f.mode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, f.mode); err != nil {
				t.Fatal(err)
			}
			if f.logical == "" {
				fmt.Fprintf(&version, "    <file>\n        <physical_name>%s</physical_name>\n        <main_program/>\n    </file>\n", name)
			} else {
				fmt.Fprintf(&version, "    <file>\n        <physical_name>%s</physical_name>\n        <logical_name>%s</logical_name>\n    </file>\n", name, f.logical)
			}
		}
		version.WriteString("</version>\n")
		if len(app.files) > 1 {
			if err := os.WriteFile(filepath.Join(dir, "version.xml"), []byte(version.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for name, body := range map[string]string{app.name + "_in": apiInputTemplate(app.seconds), app.name + "_out": apiOutputTemplate} {
			if err := os.WriteFile(filepath.Join(proj, "templates", name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s.editProjectFile(t, "project.xml", "</boinc>", fmt.Sprintf(
			"<app>\n        <name>%s</name>\n        <user_friendly_name>Real-server harness API app %s</user_friendly_name>\n    </app>\n</boinc>",
			app.name, app.name))
	}

	logPath := s.addVersions(t, "api_apps", true, "apps", "templates", "project.xml")
	for _, app := range apps {
		doc, err := s.versionXML(app.name)
		if err != nil || doc == "" {
			t.Fatalf("no app_version of %s after update_versions (%v)\n%s", app.name, err, tail(logPath, 30))
		}
		if has := strings.Contains(doc, "<api_version>"); has != app.api {
			t.Fatalf("app_version of %s: <api_version> present %v, want %v: %s", app.name, has, app.api, doc)
		}
	}
	s.awaitReread(t, strings.Join(names, ", "))
	if err := os.WriteFile(filepath.Join(proj, apiAppsMarker), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("API apps %s added (%s) in %.1f s", strings.Join(names, ", "), logPath, time.Since(t0).Seconds())
}

// cxx is the system C++ compiler ($CXX, else g++, else c++), as package
// apptest finds it.
func cxx(t *testing.T) string {
	t.Helper()
	candidates := []string{"g++", "c++"}
	if env := os.Getenv("CXX"); env != "" {
		candidates = []string{env}
	}
	for _, c := range candidates {
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	t.Fatalf("no C++ compiler for the API apps (tried %s): apt-get install g++", strings.Join(candidates, ", "))
	return ""
}

// compile runs a compiler with args, failing the test with its output.
func (s *server) compile(t *testing.T, dir, compiler string, args ...string) {
	t.Helper()
	ctx, cancel := s.ctx(2 * time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, compiler, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", compiler, strings.Join(args, " "), err, b)
	}
}

// buildRSAPI compiles testdata/rsapi.cpp into out against Debian's
// libboinc-app-dev.
func (s *server) buildRSAPI(t *testing.T, out string) {
	t.Helper()
	if !fileExists("/usr/include/boinc/boinc_api.h") {
		t.Fatalf("no BOINC API headers for the API app: apt-get install libboinc-app-dev")
	}
	src, err := filepath.Abs(filepath.Join("testdata", "rsapi.cpp"))
	if err != nil {
		t.Fatal(err)
	}
	s.compile(t, "", cxx(t), "-O2", "-Wall", "-o", out, src, "-I/usr/include/boinc", "-lboinc_api", "-lboinc", "-lpthread")
}

// buildWrapper compiles BOINC's wrapper (testdata/wrapper, upstream
// 7.20.5) into out against Debian's libboinc-app-dev, as samples/wrapper's
// Makefile does; tagged links testdata/api_version_tag.c in too (see
// testdata/wrapper/README.md).
func (s *server) buildWrapper(t *testing.T, out string, tagged bool) {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "wrapper"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	cc := "gcc"
	if env := os.Getenv("CC"); env != "" {
		cc = env
	}
	var objs []string
	cs := []string{"regexp", "regsub", "regerror", "regexp_memory", "regexp_report"}
	for _, c := range cs {
		obj := filepath.Join(tmp, c+".o")
		s.compile(t, src, cc, "-O2", "-w", "-I"+src, "-c", "-o", obj, filepath.Join(src, c+".c"))
		objs = append(objs, obj)
	}
	if tagged {
		obj := filepath.Join(tmp, "api_version_tag.o")
		s.compile(t, src, cc, "-O2", "-c", "-o", obj, filepath.Join(src, "..", "api_version_tag.c"))
		objs = append(objs, obj)
	}
	args := append([]string{"-O2", "-w", "-I" + src, "-I/usr/include/boinc", "-o", out, filepath.Join(src, "wrapper.cpp")}, objs...)
	s.compile(t, src, cxx(t), append(args, "-lboinc_api", "-lboinc", "-lboinc_zip", "-lpthread")...)
}

// apiInputTemplate is rsapp's input template (setup.sh) with the
// deadline real projects give (configureAsRealProjects): one input, in.
func apiInputTemplate(seconds int) string {
	return fmt.Sprintf(`<input_template>
  <file_info>
    <number>0</number>
  </file_info>
  <workunit>
    <file_ref>
      <file_number>0</file_number>
      <open_name>in</open_name>
      <copy_file/>
    </file_ref>
    <min_quorum>1</min_quorum>
    <target_nresults>1</target_nresults>
    <max_error_results>3</max_error_results>
    <max_total_results>4</max_total_results>
    <max_success_results>2</max_success_results>
    <rsc_fpops_est>%de9</rsc_fpops_est>
    <rsc_fpops_bound>%de12</rsc_fpops_bound>
    <rsc_memory_bound>100000000</rsc_memory_bound>
    <rsc_disk_bound>100000000</rsc_disk_bound>
    <delay_bound>%d</delay_bound>
  </workunit>
</input_template>
`, seconds, seconds, delayBound)
}

// apiOutputTemplate is setup.sh's rsapp output template: one output,
// out, uploaded when present (the https case writes its upload URL in).
const apiOutputTemplate = `<output_template>
  <file_info>
    <name><OUTFILE_0/></name>
    <generated_locally/>
    <upload_when_present/>
    <max_nbytes>100000</max_nbytes>
    <url><UPLOAD_URL/></url>
  </file_info>
  <result>
    <file_ref>
      <file_name><OUTFILE_0/></file_name>
      <open_name>out</open_name>
      <copy_file/>
    </file_ref>
  </result>
</output_template>
`

// versionXML is the xml_doc of app's (only) app version.
func (s *server) versionXML(app string) (string, error) {
	return s.sql(fmt.Sprintf("select av.xml_doc from app_version av join app a on a.id=av.appid where a.name='%s' order by av.id desc limit 1", app))
}

// uploadedOutput is what the server holds of result's output in its
// upload directory: the template's <OUTFILE_0/>, which create_work makes
// RESULT_r<random>_0 (backend_lib.cpp create_result,
// process_result_template).
func (s *server) uploadedOutput(result string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(s.root, "projects", project, "upload", "*", result+"_r*_0"))
	if len(m) == 0 {
		return "", fmt.Errorf("no %s_r*_0 under the project's upload/", result)
	}
	b, err := os.ReadFile(m[0])
	return string(b), err
}

// resultNames are the names of the results of userID's account.
func (s *server) resultNames(userID int) ([]string, error) {
	out, err := s.sql(fmt.Sprintf("select name from result where userid=%d order by id", userID))
	return strings.Fields(out), err
}

// ---------------------------------------------------------------- tasks as boinccmd shows them

// taskView is one task of boinccmd --get_tasks.
type taskView struct {
	name     string
	state    string  // active_task_state ("" before the task first runs)
	fraction string  // "fraction done" as printed ("%f"); "" if absent
	value    float64 // fraction, parsed
	ready    bool    // "ready to report: yes"
}

var taskHeadRE = regexp.MustCompile(`^\d+\) -+$`)

// getTasks asks the client on port for its tasks.
func getTasks(port int) ([]taskView, error) {
	out, err := boinccmd(port, "--get_tasks")
	if err != nil {
		return nil, fmt.Errorf("boinccmd --get_tasks: %v: %s", err, out)
	}
	var tasks []taskView
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if taskHeadRE.MatchString(l) {
			tasks = append(tasks, taskView{})
			continue
		}
		if len(tasks) == 0 {
			continue
		}
		tk := &tasks[len(tasks)-1]
		k, v, ok := strings.Cut(l, ": ")
		if !ok {
			continue
		}
		switch k {
		case "name":
			tk.name = v
		case "active_task_state":
			tk.state = v
		case "ready to report":
			tk.ready = v == "yes"
		case "fraction done":
			tk.fraction = v
			tk.value, _ = strconv.ParseFloat(v, 64)
		}
	}
	return tasks, nil
}

// watchTicker calls f every 0.5 s until ctx ends.
func watchTicker(ctx context.Context, f func(now time.Time)) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		f(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// ---------------------------------------------------------------- trickle

// trickleWatch is what watchTrickles saw of one client's run.
type trickleWatch struct {
	host    int
	started map[string]time.Time // task first seen executing
	down    map[string]string    // the trickle-down body sent to each result
	upSeen  map[string]time.Time // first msg_from_host row naming the result
}

var resultNameRE = regexp.MustCompile(`<result_name>([^<]*)</result_name>`)

// watchTrickles follows the client's tasks: once a task runs and the
// account's host exists, it queues a trickle-down for the task's result
// (a msg_to_host row, as sched/trickle_echo.cpp makes them: the
// result_name and time lines the client's handle_trickle_down reads, then
// the body the app gets); it notes when each result's first trickle-up
// reached the DB (msg_from_host).
func watchTrickles(ctx context.Context, t *testing.T, s *server, r *caseRun) {
	w := &trickleWatch{started: map[string]time.Time{}, down: map[string]string{}, upSeen: map[string]time.Time{}}
	r.watch = w
	watchTicker(ctx, func(now time.Time) {
		if tasks, err := getTasks(r.port); err == nil {
			for _, tk := range tasks {
				if _, ok := w.started[tk.name]; !ok && tk.state == "EXECUTING" {
					w.started[tk.name] = now
				}
			}
		}
		if w.host == 0 {
			v, err := s.sqlInts(fmt.Sprintf("select ifnull(max(id),0) from host where userid=%d", r.userID))
			if err != nil || len(v) != 1 || v[0] == 0 {
				return
			}
			w.host = int(v[0])
		}
		for name := range w.started {
			if _, ok := w.down[name]; ok {
				continue
			}
			body := fmt.Sprintf("<rs_down>trickle-down for %s from the suite</rs_down>", name)
			xml := fmt.Sprintf("<trickle_down>\n<result_name>%s</result_name>\n<time>%d</time>\n%s\n</trickle_down>\n", name, now.Unix(), body)
			q := fmt.Sprintf("insert into msg_to_host (create_time, hostid, variety, handled, xml) values (%d, %d, '%s', 0, '%s')",
				now.Unix(), w.host, trickleVariety, xml)
			if _, err := s.sql(q); err != nil {
				t.Errorf("%s: queueing the trickle-down for %s: %v", r.label, name, err)
			}
			w.down[name] = body
			t.Logf("%s: trickle-down for %s queued (host %d)", r.label, name, w.host)
		}
		rows, err := s.sql(fmt.Sprintf("select xml from msg_from_host where hostid=%d", w.host))
		if err != nil {
			return
		}
		for _, m := range resultNameRE.FindAllStringSubmatch(rows, -1) {
			if _, ok := w.upSeen[m[1]]; !ok {
				w.upSeen[m[1]] = now
			}
		}
	})
}

// checkTrickles: for each result of the account, a msg_from_host row of
// the host with variety trickleVariety whose xml names the result and
// holds the app's body; the msg_to_host row queued for it handled (sent);
// its body in the output the client uploaded.
func checkTrickles(t *testing.T, s *server, r *caseRun) string {
	w, _ := r.watch.(*trickleWatch)
	names, err := s.resultNames(r.userID)
	if err != nil || w == nil || w.host == 0 {
		t.Errorf("%s: results %v (%v); host seen: %v", r.label, names, err, w != nil && w.host != 0)
		return "?"
	}
	total, err := s.sqlInts(fmt.Sprintf("select count(*) from msg_from_host where hostid=%d", w.host))
	if err != nil {
		t.Error(err)
		return "?"
	}
	ups, downs, inOut := 0, 0, 0
	var firstUp []float64
	matched := 0.0
	for _, name := range names {
		v, err := s.sqlInts(fmt.Sprintf("select count(*) from msg_from_host where hostid=%d and variety='%s' "+
			"and xml like '%%<result_name>%s</result_name>%%' and xml like '%%<rs_up>%s</rs_up>%%'", w.host, trickleVariety, name, name))
		if err != nil {
			t.Error(err)
			return "?"
		}
		matched += v[0]
		if v[0] > 0 {
			ups++
			if st, ok := w.started[name]; ok && !w.upSeen[name].IsZero() {
				firstUp = append(firstUp, w.upSeen[name].Sub(st).Seconds())
			}
		} else {
			t.Errorf("%s: no msg_from_host row of host %d with variety %s naming %s with the app's body", r.label, w.host, trickleVariety, name)
		}
		body, queued := w.down[name]
		if !queued {
			t.Errorf("%s: %s was never seen running: no trickle-down queued for it", r.label, name)
			continue
		}
		h, err := s.sqlInts(fmt.Sprintf("select ifnull(min(handled),0) from msg_to_host where hostid=%d and xml like '%%<result_name>%s</result_name>%%'", w.host, name))
		if err == nil && h[0] == 1 {
			downs++
		} else {
			t.Errorf("%s: the trickle-down for %s was never sent (msg_to_host.handled %v, %v)", r.label, name, h, err)
		}
		out, err := s.uploadedOutput(name)
		if name == names[0] {
			up, _ := s.sql(fmt.Sprintf("select variety, xml from msg_from_host where hostid=%d order by id limit 1", w.host))
			t.Logf("%s: first msg_from_host row (variety, xml): %s; output of %s: %q", r.label, up, name, out)
		}
		switch {
		case err != nil:
			t.Errorf("%s: %v", r.label, err)
		case strings.Contains(out, body):
			inOut++
		default:
			t.Errorf("%s: the output of %s lacks its trickle-down %q: %q", r.label, name, body, out)
		}
	}
	if matched != total[0] {
		t.Errorf("%s: %.0f msg_from_host rows of host %d, %.0f of them with variety %s naming one of its results with the app's body",
			r.label, total[0], w.host, matched, trickleVariety)
	}
	first := "?"
	if len(firstUp) > 0 {
		sort.Float64s(firstUp)
		first = fmt.Sprintf("+%.1f s", firstUp[0])
	}
	return fmt.Sprintf("up %d/%d (%s, %.0f rows), down %d/%d, in out %d/%d", ups, len(names), first, total[0], downs, len(names), inOut, len(names))
}

// ---------------------------------------------------------------- no api_version

// gridWatch is what watchGrid sampled of one client's run.
type gridWatch struct {
	n, on  int
	values map[string]bool // the distinct fractions strictly between 0 and 1
	off    []string        // samples off the grid, for the log
	// seq is each task's samples, "+S:F" (seconds from the task first
	// seen executing, fraction), for the log when a check fails.
	seq   map[string][]string
	start map[string]time.Time
}

// watchGrid samples the fraction done of the client's executing tasks.
// The C++ client shows what the app last reported (ACTIVE_TASK::
// write_gui: its own estimate only for an app that reported nothing
// after a minute), so every sample must lie on the app's grid.
func watchGrid(ctx context.Context, t *testing.T, s *server, r *caseRun) {
	w := &gridWatch{values: map[string]bool{}, seq: map[string][]string{}, start: map[string]time.Time{}}
	r.watch = w
	watchTicker(ctx, func(now time.Time) {
		tasks, err := getTasks(r.port)
		if err != nil {
			return
		}
		for _, tk := range tasks {
			if tk.state != "EXECUTING" || tk.fraction == "" {
				continue
			}
			if _, ok := w.start[tk.name]; !ok {
				w.start[tk.name] = now
			}
			w.seq[tk.name] = append(w.seq[tk.name], fmt.Sprintf("+%.1f:%s", now.Sub(w.start[tk.name]).Seconds(), tk.fraction))
			w.n++
			x := tk.value * gridSteps
			if math.Abs(x-math.Round(x)) < 1e-4 {
				w.on++
			} else if len(w.off) < 20 {
				w.off = append(w.off, tk.name+": "+tk.fraction)
			}
			if tk.value > 0 && tk.value < 1 {
				w.values[tk.fraction] = true
			}
		}
	})
}

// checkGrid: the version the jobs ran (app's) has an api_version or not,
// as api says; enough samples, all on the grid, and some of the app's
// own values among them (a client showing only 0 would pass the grid
// trivially).
func checkGrid(t *testing.T, s *server, r *caseRun, app string, api bool) string {
	w, _ := r.watch.(*gridWatch)
	if w == nil {
		t.Errorf("%s: no samples", r.label)
		return "?"
	}
	doc, err := s.versionXML(app)
	if err != nil || strings.Contains(doc, "<api_version>") != api {
		t.Errorf("%s: the app_version of %s: %v %s; want <api_version> %v", r.label, app, err, doc, api)
	}
	if w.on != w.n {
		t.Errorf("%s: %d of %d fraction-done samples off the app's 1/%d grid: %v", r.label, w.n-w.on, w.n, gridSteps, w.off)
	}
	if w.n < 4 || len(w.values) < 2 {
		t.Errorf("%s: %d samples, %d distinct values between 0 and 1: too few to tell whether the client shows the app's fraction done",
			r.label, w.n, len(w.values))
	}
	if t.Failed() {
		for name, seq := range w.seq {
			t.Logf("%s: %s: fraction done sampled (s from first seen executing): %s", r.label, name, strings.Join(seq, " "))
		}
	}
	return fmt.Sprintf("%d of %d on the 1/%d grid (%d values)", w.on, w.n, gridSteps, len(w.values))
}
