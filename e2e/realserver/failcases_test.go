//go:build linux

package realserver

import (
	"context"
	"crypto/md5"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testsupport"
)

// The feature cases of things going wrong on the way, as they do on real
// projects: a job past its elapsed-time limit, a job the project cancels
// while it runs, an input whose first download URL is dead. The first two
// run the API app (apicases_test.go): the C++ client asks an app to quit
// on an abort and leaves a non-API app (rsapp) running, past the report
// of its result and its own exit (seen with 7.20.5: the stock shell app
// ran on after the client quit).

const (
	// timeLimitSeconds is the time_limit case's elapsed-time limit: its
	// jobs' rsc_fpops_bound over the 1e9 flops both clients get with
	// skip_cpu_benchmarks. Both clients replace a limit under 120 s
	// (MIN_TIME_BOUND) by 12 h (ACTIVE_TASK::init, taskrunner
	// ElapsedLimit), so no shorter one can be met.
	timeLimitSeconds = 121
	// timeLimitJobSeconds is how long the time_limit jobs would run.
	timeLimitJobSeconds = 400
	// timeLimitTemplate is the time_limit case's input template: the
	// stock one with that bound, and no retry of the failed job (the
	// retry would go to the same account).
	timeLimitTemplate = "rsapp_in_tl"
	// exitTimeLimitExceeded and exitAbortedByProject are the exit
	// statuses a client reports (lib/error_numbers.h).
	exitTimeLimitExceeded = 197
	exitAbortedByProject  = 202
	// cancelJobSeconds is how long a cancel job would run.
	cancelJobSeconds = 120
	// cancelKillWithin bounds how long after the abort a client may take
	// to end its apps: the C++ client asks an app to quit and would kill
	// it ABORT_TIMEOUT (60 s) later (ACTIVE_TASK_SET::poll); it reports
	// the result meanwhile. Well under the job's own cancelJobSeconds.
	cancelKillWithin = 80 * time.Second
	// nudgeAfter: a task ready to report for this long gets a
	// boinccmd update (the user's "Update"), as a client holds errored
	// results while its work fetch is backed off. Longer than the
	// project's request_delay (7 s), which both clients wait out before
	// any request: a nudge marks a client that holds a report, not one
	// that waits as the project asked.
	nudgeAfter = 10 * time.Second
)

func failureFeatureCases() []featureCase {
	return []featureCase{
		{
			name: "time_limit",
			about: fmt.Sprintf("a %d s job of %s (API app, grid mode), rsc_fpops_bound %de9 at 1e9 flops (cc_config skip_cpu_benchmarks): exit status, "+
				"the event log's limit, elapsed time (DB), boinccmd updates sent for held reports", timeLimitJobSeconds, trickleApp, timeLimitSeconds),
			setup: func(t *testing.T, s *server) {
				installAPIApps(t, s)
				s.writeTemplate(t, timeLimitTemplate, s.inputTemplate("", timeLimitSeconds, 1))
			},
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.assignedJobs(t, r, trickleApp, "--copy", "--wu_template templates/"+timeLimitTemplate, func(string) string {
					return fmt.Sprintf("grid %d %d\n", timeLimitJobSeconds, gridSteps)
				})
			},
			prepare:      prepareSkipBenchmarks,
			during:       watchNudge,
			check:        checkTimeLimit,
			clientErrors: true,
		},
		{
			name: "cancel",
			about: fmt.Sprintf("a %d s job of %s (API app, grid mode) cancelled by bin/cancel_jobs once both run, then boinccmd update: "+
				"exit status, app processes gone (s after the update), updates sent for held reports", cancelJobSeconds, trickleApp),
			setup: installAPIApps,
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.assignedJobs(t, r, trickleApp, "--copy", "", func(string) string {
					return fmt.Sprintf("grid %d %d\n", cancelJobSeconds, gridSteps)
				})
			},
			during:       watchCancel,
			check:        checkCancel,
			clientErrors: true,
		},
		{
			name: "dead_url",
			about: "input with two <url>s in its template, the first dead (job 1: 127.0.0.1:1, refused; job 2: a 404 " +
				"on the project's Apache): fetched with 200 from the second, 404s served",
			jobs:  deadURLJobs,
			check: checkDeadURL,
		},
	}
}

// ---------------------------------------------------------------- templates

// inputTemplate is rsapp's input template (setup.sh, with
// configureAsRealProjects's deadline): fileInfo is the body of its
// file_info ("" for the stock one), the bound is boundSeconds e9 flops
// (0: the stock one), and maxErrors the errors a job may have before it
// fails (with as many results in all).
func (s *server) inputTemplate(fileInfo string, boundSeconds, maxErrors int) string {
	bound := fmt.Sprintf("%de12", wuSeconds)
	if boundSeconds > 0 {
		bound = fmt.Sprintf("%de9", boundSeconds)
	}
	maxTotal, maxSuccess := maxErrors+1, 2
	if maxErrors == 1 {
		maxTotal, maxSuccess = 1, 1
	}
	return fmt.Sprintf(`<input_template>
  <file_info>
    <number>0</number>
%s  </file_info>
  <workunit>
    <file_ref>
      <file_number>0</file_number>
      <open_name>in</open_name>
      <copy_file/>
    </file_ref>
    <min_quorum>1</min_quorum>
    <target_nresults>1</target_nresults>
    <max_error_results>%d</max_error_results>
    <max_total_results>%d</max_total_results>
    <max_success_results>%d</max_success_results>
    <rsc_fpops_est>%de9</rsc_fpops_est>
    <rsc_fpops_bound>%s</rsc_fpops_bound>
    <rsc_memory_bound>100000000</rsc_memory_bound>
    <rsc_disk_bound>100000000</rsc_disk_bound>
    <delay_bound>%d</delay_bound>
  </workunit>
</input_template>
`, fileInfo, maxErrors, maxTotal, maxSuccess, wuSeconds, bound, delayBound)
}

// writeTemplate writes templates/name in the project (create_work reads
// it as the server user).
func (s *server) writeTemplate(t *testing.T, name, body string) {
	t.Helper()
	p := filepath.Join(s.root, "projects", project, "templates", name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ---------------------------------------------------------------- nudges

// nudger sends boinccmd's project update when a task has been ready to
// report for nudgeAfter: the C++ client reports a failed task only with
// its next scheduler request, and it holds its requests while its work
// fetch is backed off after the project's "limit on tasks in progress"
// reply (a compute error or an abort does not clear the backoff, unlike
// an upload: CLIENT_STATE::update_results).
type nudger struct {
	readySince, last time.Time
	n                int
}

func (nd *nudger) tick(t *testing.T, s *server, r *caseRun, tasks []taskView, now time.Time) {
	ready := false
	for _, tk := range tasks {
		ready = ready || tk.ready
	}
	if !ready {
		nd.readySince = time.Time{}
		return
	}
	if nd.readySince.IsZero() {
		nd.readySince = now
	}
	if now.Sub(nd.readySince) < nudgeAfter || now.Sub(nd.last) < 2*nudgeAfter {
		return
	}
	nd.last = now
	nd.n++
	if out, err := boinccmd(r.port, "--project", s.masterURL(), "update"); err != nil {
		t.Logf("%s: boinccmd update: %v: %s", r.label, err, out)
	}
}

// nudgeWatch is what watchNudge saw.
type nudgeWatch struct{ nudges int }

// watchNudge only nudges held reports.
func watchNudge(ctx context.Context, t *testing.T, s *server, r *caseRun) {
	w := &nudgeWatch{}
	r.watch = w
	var nd nudger
	watchTicker(ctx, func(now time.Time) {
		if tasks, err := getTasks(r.port); err == nil {
			nd.tick(t, s, r, tasks, now)
			w.nudges = nd.n
		}
	})
}

// ---------------------------------------------------------------- time_limit

// prepareSkipBenchmarks writes cc_config.xml with skip_cpu_benchmarks:
// both clients then report the default 1e9 flops (C++
// cpu_benchmarks_set_defaults), the scheduler gives the app version that
// speed (estimate_flops without stats: p_fpops times its CPUs, 1), and
// the elapsed-time limit is rsc_fpops_bound / 1e9 s.
func prepareSkipBenchmarks(t *testing.T, s *server, r *caseRun) {
	t.Helper()
	p := filepath.Join(r.dir, "cc_config.xml")
	body := "<cc_config>\n  <options>\n    <skip_cpu_benchmarks>1</skip_cpu_benchmarks>\n  </options>\n</cc_config>\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(p, s.uid, s.gid); err != nil {
		t.Fatal(err)
	}
}

// resultRow is one result of an account, as checks read it.
type resultRow struct {
	name                 string
	exitStatus, outcome  int
	clientState          int
	elapsed              float64
	validateState, state int
}

func (s *server) resultRows(userID int) ([]resultRow, error) {
	out, err := s.sql(fmt.Sprintf("select name, exit_status, outcome, client_state, round(elapsed_time,1), validate_state, server_state "+
		"from result where userid=%d order by id", userID))
	if err != nil {
		return nil, err
	}
	var rows []resultRow
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, "\t")
		if len(f) != 7 {
			continue
		}
		var r resultRow
		r.name = f[0]
		r.exitStatus, _ = strconv.Atoi(f[1])
		r.outcome, _ = strconv.Atoi(f[2])
		r.clientState, _ = strconv.Atoi(f[3])
		r.elapsed, _ = strconv.ParseFloat(f[4], 64)
		r.validateState, _ = strconv.Atoi(f[5])
		r.state, _ = strconv.Atoi(f[6])
		rows = append(rows, r)
	}
	return rows, nil
}

// checkResultsFailed: every result of the account reported (server state
// OVER) as a client error (outcome 3) with exit status want. It returns
// how many did, and the elapsed times.
func checkResultsFailed(t *testing.T, s *server, r *caseRun, want int) (int, []string) {
	rows, err := s.resultRows(r.userID)
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	n := 0
	var elapsed []string
	for _, row := range rows {
		elapsed = append(elapsed, strconv.FormatFloat(row.elapsed, 'f', 1, 64))
		if row.state == 5 && row.outcome == 3 && row.exitStatus == want {
			n++
			continue
		}
		t.Errorf("%s: result %s: server_state %d, outcome %d, exit_status %d; want 5, 3 (client error), %d",
			r.label, row.name, row.state, row.outcome, row.exitStatus, want)
	}
	if len(rows) != len(r.inputs) {
		t.Errorf("%s: %d results, want %d (one per job)", r.label, len(rows), len(r.inputs))
	}
	return n, elapsed
}

var elapsedLimitRE = regexp.MustCompile(`Aborting task (\S+): exceeded elapsed time limit ([0-9.]+ \([0-9.]+G/[0-9.]+G\))`)

// checkTimeLimit: each result reported with exit status 197 as a client
// error; the event log says each task exceeded its elapsed-time limit,
// the limit the case set.
func checkTimeLimit(t *testing.T, s *server, r *caseRun) string {
	n, elapsed := checkResultsFailed(t, s, r, exitTimeLimitExceeded)
	msgs, _ := os.ReadFile(filepath.Join(r.dir, "rs_messages.txt"))
	logged := map[string]string{}
	for _, m := range elapsedLimitRE.FindAllStringSubmatch(string(msgs), -1) {
		logged[m[1]] = m[2]
	}
	names, _ := s.resultNames(r.userID)
	limits := map[string]bool{}
	for _, name := range names {
		lim, ok := logged[name]
		if !ok {
			t.Errorf("%s: the event log never says %s exceeded its elapsed time limit", r.label, name)
			continue
		}
		limits[lim] = true
		if want := fmt.Sprintf("%d.00 (%d.00G/1.00G)", timeLimitSeconds, timeLimitSeconds); lim != want {
			t.Errorf("%s: %s: limit %q in the event log, want %q", r.label, name, lim, want)
		}
	}
	var ls []string
	for l := range limits {
		ls = append(ls, l)
	}
	nudges := 0
	if w, ok := r.watch.(*nudgeWatch); ok {
		nudges = w.nudges
	}
	return fmt.Sprintf("%d: %d/%d, log %d %s, elapsed %s, upd %d", exitTimeLimitExceeded, n, len(names), len(logged),
		strings.Join(ls, ","), strings.Join(elapsed, "/"), nudges)
}

// ---------------------------------------------------------------- cancel

// cancelWatch is what watchCancel saw.
type cancelWatch struct {
	cancelled     time.Time // the update after cancel_jobs
	running       time.Time // all tasks first seen executing
	procsBefore   int       // app processes (cwd under slots/) at the cancel
	gone          time.Time // no app process left
	nudges        int
	cancelFailure string
}

// appProcesses counts the processes working in the client's slots.
func appProcesses(dir string) int {
	n := 0
	slots := filepath.Join(dir, "slots")
	for p := range testsupport.Processes() {
		if testsupport.Under(p.Cwd(), slots) {
			n++
		}
	}
	return n
}

// watchCancel waits until all the client's tasks execute, cancels their
// workunits with the project's bin/cancel_jobs (error_mask
// WU_ERROR_CANCELLED; the scheduler then sends <result_abort> for them,
// handle_request.cpp send_result_abort, as make_project's config has
// <send_result_abort>), asks the client for a scheduler request, and
// notes when the apps' processes are gone.
func watchCancel(ctx context.Context, t *testing.T, s *server, r *caseRun) {
	w := &cancelWatch{}
	r.watch = w
	var nd nudger
	watchTicker(ctx, func(now time.Time) {
		tasks, err := getTasks(r.port)
		if err != nil {
			return
		}
		if w.cancelled.IsZero() {
			executing := 0
			for _, tk := range tasks {
				if tk.state == "EXECUTING" {
					executing++
				}
			}
			if executing < len(r.inputs) || w.cancelFailure != "" {
				return
			}
			w.running = now
			w.procsBefore = appProcesses(r.dir)
			if err := s.cancelJobs(r); err != nil {
				w.cancelFailure = err.Error()
				t.Errorf("%s: %v", r.label, err)
				return
			}
			if out, err := boinccmd(r.port, "--project", s.masterURL(), "update"); err != nil {
				t.Errorf("%s: boinccmd update: %v: %s", r.label, err, out)
			}
			w.cancelled = time.Now()
			t.Logf("%s: jobs cancelled, update sent (%d app processes)", r.label, w.procsBefore)
			return
		}
		if w.gone.IsZero() && appProcesses(r.dir) == 0 {
			w.gone = now
		}
		nd.tick(t, s, r, tasks, now)
		w.nudges = nd.n
	})
}

// cancelJobs runs bin/cancel_jobs --name for each workunit of r.
func (s *server) cancelJobs(r *caseRun) error {
	var script strings.Builder
	script.WriteString("set -e\nsource \"$1\"\n")
	for _, in := range r.inputs {
		fmt.Fprintf(&script, "as_srv bin/cancel_jobs --name %q\n", strings.Replace(in, "_in_", "_wu_", 1))
	}
	ctx, cancel := s.ctx(time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, "cancel_"+strings.ReplaceAll(r.label, "/", "_")+".log")
	rc, err := s.run(ctx, logPath, nil, "bash", "-c", script.String(), "cancel", s.script("lib.sh"))
	if err != nil || rc != 0 {
		return fmt.Errorf("bin/cancel_jobs: exit %d, %v\n%s", rc, err, tail(logPath, 20))
	}
	return nil
}

// checkCancel: the jobs were cancelled while they ran; each result
// reported with exit status 202 as a client error; the apps' processes
// ended well before the jobs would have.
func checkCancel(t *testing.T, s *server, r *caseRun) string {
	w, _ := r.watch.(*cancelWatch)
	if w == nil || w.cancelled.IsZero() {
		t.Errorf("%s: the jobs were never cancelled (not seen running together?)", r.label)
		return "?"
	}
	n, _ := checkResultsFailed(t, s, r, exitAbortedByProject)
	if w.procsBefore == 0 {
		t.Errorf("%s: no app process seen in the slots when the jobs ran", r.label)
	}
	// A client may report the result before its app has ended (the C++
	// client does): wait for the end here.
	for w.gone.IsZero() && time.Since(w.cancelled) < cancelKillWithin {
		if appProcesses(r.dir) == 0 {
			w.gone = time.Now()
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	gone := "never"
	if w.gone.IsZero() {
		t.Errorf("%s: the apps' processes still ran %v after the cancel (the jobs run %d s)", r.label, cancelKillWithin, cancelJobSeconds)
	} else {
		gone = fmt.Sprintf("+%.1f s", w.gone.Sub(w.cancelled).Seconds())
	}
	names, _ := s.resultNames(r.userID)
	return fmt.Sprintf("%d: %d/%d, %d procs gone %s, upd %d", exitAbortedByProject, n, len(names), w.procsBefore, gone, w.nudges)
}

// ---------------------------------------------------------------- dead_url

// deadURLs are the dead first URLs of the dead_url case's jobs, by job:
// a port nothing listens on (1, privileged: no user process takes it),
// and a directory the project's Apache does not have (404).
func (s *server) deadURLs() []string {
	return []string{"http://127.0.0.1:1/rstest/download/", s.masterURL() + "gone/"}
}

var (
	downloadURLRE = regexp.MustCompile(`<download_url>\s*([^<\s]+)\s*</download_url>`)
	uploadURLRE   = regexp.MustCompile(`<upload_url>\s*([^<\s]+)\s*</upload_url>`)
)

// deadURLJobs: each job's input has two URL prefixes, the dead one first,
// then the download hierarchy's directory of the file.
func deadURLJobs(t *testing.T, s *server, r *caseRun) []string {
	dead := s.deadURLs()
	return s.stagedJobs(t, r, "dead", func(i int, dir string) []string { return []string{dead[i%len(dead)], dir} }, "")
}

// stagedJobs stages each input (stage_file puts it in the download
// hierarchy) and creates its job from an input template of its own whose
// file_info gives the input as a remote file with the URL prefixes urls
// returns for job i and the download hierarchy's directory of the file
// (an http URL ending in /), its size and MD5: process_input_template.cpp
// makes them the <url>s of the workunit's file_info, in that order.
// resultTemplate, when set, is the jobs' output template (else the
// app's).
func (s *server) stagedJobs(t *testing.T, r *caseRun, kind string, urls func(i int, dir string) []string, resultTemplate string) []string {
	t.Helper()
	proj := filepath.Join(s.root, "projects", project)
	cfg, err := os.ReadFile(filepath.Join(proj, "config.xml"))
	if err != nil {
		t.Fatal(err)
	}
	m := downloadURLRE.FindSubmatch(cfg)
	if m == nil {
		t.Fatalf("no <download_url> in the project's config.xml")
	}
	downloadURL := strings.TrimSuffix(string(m[1]), "/")
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	tmp, err := os.MkdirTemp(s.root, "stage-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	var names []string
	var stage strings.Builder
	stage.WriteString("set -e\nsource \"$1\"\n")
	for i := 1; i <= featureJobs; i++ {
		name := fmt.Sprintf("rsapp_in_%s_%s_%d", strings.ReplaceAll(r.label, "/", "_"), stamp, i)
		body := fmt.Sprintf("%d\nthe input of %s (%s case)\n", wuSeconds, name, kind)
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		fmt.Fprintf(&stage, "as_srv bin/stage_file --copy %q >/dev/null\n", filepath.Join(tmp, name))
	}
	label := strings.ReplaceAll(r.label, "/", "_")
	ctx, cancel := s.ctx(2 * time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, "stage_"+label+".log")
	if rc, err := s.run(ctx, logPath, nil, "bash", "-c", stage.String(), "stage", s.script("lib.sh")); err != nil || rc != 0 {
		t.Fatalf("staging %s's inputs: exit %d, %v\n%s", r.label, rc, err, tail(logPath, 20))
	}
	result := ""
	if resultTemplate != "" {
		result = "--result_template " + resultTemplate
	}
	var create strings.Builder
	create.WriteString("set -e\nsource \"$1\"\n")
	nURLs := 0
	for i, name := range names {
		staged, _ := filepath.Glob(filepath.Join(proj, "download", "*", name))
		if len(staged) != 1 {
			t.Fatalf("stage_file put %s at %v under download/, want one place", name, staged)
		}
		body, err := os.ReadFile(staged[0])
		if err != nil {
			t.Fatal(err)
		}
		hier := filepath.Base(filepath.Dir(staged[0]))
		var fileInfo strings.Builder
		us := urls(i, fmt.Sprintf("%s/%s/", downloadURL, hier))
		nURLs = len(us)
		for _, u := range us {
			fmt.Fprintf(&fileInfo, "    <url>%s</url>\n", u)
		}
		fmt.Fprintf(&fileInfo, "    <md5_cksum>%x</md5_cksum>\n    <nbytes>%d</nbytes>\n", md5.Sum(body), len(body))
		tmpl := fmt.Sprintf("rsapp_in_%s_%s_%d", kind, stamp, i)
		s.writeTemplate(t, tmpl, s.inputTemplate(fileInfo.String(), 0, 3))
		fmt.Fprintf(&create, "as_srv bin/create_work --appname rsapp --wu_template templates/%s %s --wu_name %q --target_user %d %q >/dev/null\n",
			tmpl, result, strings.Replace(name, "_in_", "_wu_", 1), r.userID, name)
	}
	logPath = filepath.Join(s.logs, "jobs_"+label+".log")
	if rc, err := s.run(ctx, logPath, nil, "bash", "-c", create.String(), "jobs", s.script("lib.sh")); err != nil || rc != 0 {
		t.Fatalf("creating %s's jobs: exit %d, %v\n%s", r.label, rc, err, tail(logPath, 20))
	}
	for _, name := range names {
		doc, err := s.sql(fmt.Sprintf("select xml_doc from workunit where name='%s'", strings.Replace(name, "_in_", "_wu_", 1)))
		if err != nil || strings.Count(doc, "<url>") != nURLs {
			t.Fatalf("workunit of %s: %v; want %d <url>s in its xml_doc: %s", name, err, nURLs, doc)
		}
	}
	return names
}

// checkDeadURL: each input was fetched whole (200) from the download
// hierarchy; the 404s Apache served for the dead URL are counted (a
// client starts at a random URL of the list, PERS_FILE_XFER / URL_LIST,
// so the dead one need not have been tried).
func checkDeadURL(t *testing.T, s *server, r *caseRun) string {
	log, err := os.ReadFile(filepath.Join(s.root, "apache", "access.log"))
	if err != nil {
		t.Error(err)
		return "?"
	}
	good, notFound := 0, 0
	for _, in := range r.inputs {
		got := false
		for _, line := range strings.Split(string(log), "\n") {
			if !strings.Contains(line, "GET ") || !strings.Contains(line, "/"+in+" ") {
				continue
			}
			switch {
			case strings.Contains(line, "/gone/") && strings.Contains(line, "\" 404 "):
				notFound++
			case strings.Contains(line, "/download/") && strings.Contains(line, "\" 200 "):
				got = true
			}
		}
		if got {
			good++
		} else {
			t.Errorf("%s: %s never fetched with 200 from the download hierarchy (its second URL)", r.label, in)
		}
	}
	msgs, _ := os.ReadFile(filepath.Join(r.dir, "rs_messages.txt"))
	failed := 0
	for _, l := range strings.Split(string(msgs), "\n") {
		if strings.Contains(l, r.inputs[0]) && strings.Contains(strings.ToLower(l), "fail") {
			failed++
		}
	}
	return fmt.Sprintf("200 %d/%d, 404 served %d, refused logged %d", good, len(r.inputs), notFound, failed)
}
