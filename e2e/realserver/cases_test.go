package realserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The feature cases (issue 28): what real projects use beyond the stock
// example project, each run by the C++ client and by boincd at the same
// time, on their own fresh accounts, and compared. Each client's jobs are
// created for its account alone (create_work --target_user, with
// config.xml's <enable_assignment>), so the two never take each other's
// jobs; all cases run at once, after the main cases, when no untargeted
// job is left for a feature client to take.

// featureJobs is how many jobs each client of a feature case runs: one
// per CPU, so both run at once.
const featureJobs = 2

// featureCase is one feature, as both clients meet it.
type featureCase struct {
	name string
	// about is the table's description of the case.
	about string
	// jobs creates the jobs of one client's account and returns their
	// input file names.
	jobs func(t *testing.T, s *server, r *caseRun) []string
	// prepare adds to the client's data directory before it starts.
	prepare func(t *testing.T, s *server, r *caseRun)
	// check says how the case went for one client (a table cell) and
	// fails the test where it went wrong.
	check func(t *testing.T, s *server, r *caseRun) string
	// setup, when set, prepares the project for the case once, before
	// any client runs (an app of its own).
	setup func(t *testing.T, s *server)
	// during, when set, runs beside the client from its attach until its
	// jobs are done (ctx ends), for what shows only while the tasks run.
	// It may call t.Errorf and t.Logf, not t.Fatal; check runs after it
	// has returned.
	during func(ctx context.Context, t *testing.T, s *server, r *caseRun)
	// reported: a job is done once reported as a success (server_state
	// OVER, outcome SUCCESS) rather than validated: no validator runs for
	// the case's app.
	reported bool
	// start, when set, says how to start the client (program and
	// arguments; no arguments: the C++ client's flags); it may add to
	// the data directory.
	start func(t *testing.T, s *server, r *caseRun) (bin string, args []string)
	// attachURL, when set, is the URL the client attaches (else the
	// project's master URL).
	attachURL func(s *server) string
	// want, when set, is how many jobs must be done (else all it made).
	want func(r *caseRun) int
	// finished, when set, is asked once the jobs are done whether the
	// run is over too (it runs on the run's own goroutine).
	finished func(s *server, r *caseRun) bool
	// clientErrors: every job of the case is meant to fail; a job is done
	// once reported as a client error (server_state OVER, outcome
	// CLIENT_ERROR), and one reported as a success fails the case.
	clientErrors bool
}

// caseRun is one client's run of a feature case.
type caseRun struct {
	label  string // "<case>/<client>"
	client string // "cpp" or "boincd"
	bin    string
	dir    string
	port   int
	auth   string
	userID int
	inputs []string
	t0     time.Time // the client's start
	url    string    // the project URL it attached
	// what the run measured: seconds from the client's start
	firstSent string // the first job sent to it
	done      string // all jobs validated, or reported (featureCase.reported); "-" if not
	cell      string // the case's own evidence
	passed    bool
	// watch is what the case's during saw, for its check.
	watch any
}

// featureCases are the cases run side by side: those of the stock app
// here, those of apps linked with the BOINC API (apicases_test.go), and
// those of jobs that fail or fetch through a dead URL (failcases_test.go).
func featureCases() []featureCase {
	all := append(append(append(plainFeatureCases(), httpsCase(), limitsCase(), arm64Case()), apiFeatureCases()...), failureFeatureCases()...)
	if only := onlyCases(); only != nil {
		all = slices.DeleteFunc(all, func(c featureCase) bool { return !only[c.name] })
	}
	return all
}

// onlyCases is the set of feature cases named in BOINCD_REALSERVER_CASES
// (comma-separated), for working on a case: the suite then runs those
// alone, without the main runs. nil when unset: everything runs.
func onlyCases() map[string]bool {
	v := os.Getenv(envOnlyCases)
	if v == "" {
		return nil
	}
	only := map[string]bool{}
	for _, n := range strings.Split(v, ",") {
		only[strings.TrimSpace(n)] = true
	}
	return only
}

func plainFeatureCases() []featureCase {
	return []featureCase{
		{
			name:  "gzip",
			about: "input staged with stage_file --gzip (<gzipped_url>): what was fetched",
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.targetedJobs(t, r, true)
			},
			check: checkGzip,
		},
		{
			name:  "busy",
			about: fmt.Sprintf("the scheduler answers the account's first request after %d s (a busy project): requests that failed", busySeconds),
			// The CGI stand-in goes in before any client of any case
			// runs: its swap leaves a moment without a scheduler.
			setup: func(t *testing.T, s *server) { s.installBusyCGI(t) },
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				s.makeBusyFor(t, r.auth)
				return s.targetedJobs(t, r, false)
			},
			check: checkBusy,
		},
		{
			name:  "anonymous",
			about: "app_info.xml (anonymous platform) with version 199: the version that ran",
			jobs: func(t *testing.T, s *server, r *caseRun) []string {
				return s.targetedJobs(t, r, false)
			},
			prepare: prepareAppInfo,
			check:   checkAnonymous,
		},
	}
}

// gzipTemplate is the input template of the gzip case: the stock one
// with <gzip/> in its file_info, which makes create_work offer the staged
// .gz as <gzipped_url> (process_input_template.cpp).
const gzipTemplate = "rsapp_in_gz"

// enableFeatureCases turns on what the feature cases need: assigned jobs
// in config.xml, and the gzip case's input template.
func (s *server) enableFeatureCases(t *testing.T) {
	t.Helper()
	s.editProjectFile(t, "config.xml", "<config>", "<config>\n    <enable_assignment>1</enable_assignment>")
	tmpl := filepath.Join(s.root, "projects", project, "templates")
	b, err := os.ReadFile(filepath.Join(tmpl, "rsapp_in"))
	if err != nil {
		t.Fatal(err)
	}
	gz := bytes.Replace(b, []byte("<file_info>"), []byte("<file_info>\n    <gzip/>"), 1)
	if bytes.Equal(gz, b) {
		t.Fatalf("templates/rsapp_in has no <file_info>")
	}
	if err := os.WriteFile(filepath.Join(tmpl, gzipTemplate), gz, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editProjectFile replaces old with new in a file of the project, once;
// a file that already has new (setup.sh kept the project) is left alone.
func (s *server) editProjectFile(t *testing.T, name, old, new string) {
	t.Helper()
	path := filepath.Join(s.root, "projects", project, name)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("configuring the project: %v", err)
	}
	if bytes.Contains(b, []byte(new)) {
		return
	}
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("configuring the project: %s has no %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(b, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatalf("configuring the project: %v", err)
	}
}

// targetedJobs stages featureJobs inputs for r's account (gzipped as
// well with gz) and creates a workunit for each, assigned to the
// account. An input is a job's length in seconds, then 54 KB of text that
// compresses well, as real inputs often do.
func (s *server) targetedJobs(t *testing.T, r *caseRun, gz bool) []string {
	t.Helper()
	stage, tmpl := "--copy", ""
	if gz {
		stage, tmpl = "--gzip --copy", "--wu_template templates/"+gzipTemplate
	}
	return s.assignedJobs(t, r, "rsapp", stage, tmpl, func(name string) string {
		return fmt.Sprintf("%d\n%s", wuSeconds, strings.Repeat(fmt.Sprintf("line of the input of %s, the same again and again\n", name), 600))
	})
}

// assignedJobs stages featureJobs inputs of app for r's account (input
// name holding body(name); stage: stage_file's flags) and creates a
// workunit for each (create_work's flags plus createFlags), assigned to
// the account (create_work --target_user). It returns the input names.
func (s *server) assignedJobs(t *testing.T, r *caseRun, app, stage, createFlags string, body func(name string) string) []string {
	t.Helper()
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
	var script strings.Builder
	script.WriteString("set -e\nsource \"$1\"\n")
	for i := 1; i <= featureJobs; i++ {
		name := fmt.Sprintf("%s_in_%s_%s_%d", app, strings.ReplaceAll(r.label, "/", "_"), stamp, i)
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(body(name)), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		fmt.Fprintf(&script, "as_srv bin/stage_file %s %q >/dev/null\n", stage, filepath.Join(tmp, name))
		fmt.Fprintf(&script, "as_srv bin/create_work --appname %s %s --wu_name %q --target_user %d %q >/dev/null\n",
			app, createFlags, strings.Replace(name, "_in_", "_wu_", 1), r.userID, name)
	}
	ctx, cancel := s.ctx(2 * time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, "jobs_"+strings.ReplaceAll(r.label, "/", "_")+".log")
	rc, err := s.run(ctx, logPath, nil, "bash", "-c", script.String(), "jobs", s.script("lib.sh"))
	if err != nil || rc != 0 {
		t.Fatalf("creating %s's jobs: exit %d, %v\n%s", r.label, rc, err, tail(logPath, 20))
	}
	return names
}

// busySeconds is how long the scheduler thinks over the first request of
// a busy-case account: more than the 60 s boincd once allowed a whole
// scheduler exchange, well under the C++ client's 300 s low-speed window.
const busySeconds = 65

// busyCGI stands in front of the scheduler CGI (cgi, renamed cgi.real):
// for an account listed in busy/auths it sleeps before the first request
// is handled, as a busy project's scheduler (or Apache's queue in front
// of it) does; everything else passes straight through. It logs each
// request's account and whether it came over TLS (busy/requests), for
// the https case.
const busyCGI = `#!/bin/sh
# boincd real-server suite: a scheduler that thinks before it answers
here=$(cd "$(dirname "$0")" && pwd)
busy="$here/../busy"
body=$(mktemp "$busy/request.XXXXXX") || exit 1
cat >"$body"
# when, whether over TLS (mod_ssl sets HTTPS=on), which account
printf '%%s %%s %%s\n' "$(date +%%s)" "${HTTPS:-off}" "$(sed -n 's:.*<authenticator>\([^<]*\)</authenticator>.*:\1:p' "$body" | head -n 1)" >>"$busy/requests"
while read -r auth; do
  [ -n "$auth" ] || continue
  if grep -qF "<authenticator>$auth</authenticator>" "$body" && [ ! -e "$busy/done_$auth" ]; then
    : >"$busy/done_$auth"
    sleep %d
  fi
done <"$busy/auths"
"$here/cgi.real" <"$body"
rc=$?
rm -f "$body"
exit $rc
`

// makeBusyFor puts the busy CGI in front of the scheduler (once) and
// lists auth as an account it keeps waiting.
func (s *server) makeBusyFor(t *testing.T, auth string) {
	t.Helper()
	s.installBusyCGI(t)
	s.busyMu.Lock()
	defer s.busyMu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.root, "projects", project, "busy", "auths"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, auth); err != nil {
		t.Fatal(err)
	}
}

// installBusyCGI puts the busy CGI in front of the scheduler, once.
func (s *server) installBusyCGI(t *testing.T) {
	t.Helper()
	s.busyOnce.Do(func() {
		proj := filepath.Join(s.root, "projects", project)
		cgi := filepath.Join(proj, "cgi-bin", "cgi")
		srv, err := user.Lookup("boincsrv")
		if err != nil {
			s.busyErr = err
			return
		}
		uid, _ := strconv.Atoi(srv.Uid)
		gid, _ := strconv.Atoi(srv.Gid)
		busy := filepath.Join(proj, "busy")
		if err := os.Mkdir(busy, 0o755); err != nil {
			s.busyErr = err
			return
		}
		if err := os.WriteFile(filepath.Join(busy, "auths"), nil, 0o644); err != nil {
			s.busyErr = err
			return
		}
		if err := os.Lchown(busy, uid, gid); err != nil {
			s.busyErr = err
			return
		}
		if err := os.Rename(cgi, cgi+".real"); err != nil {
			s.busyErr = err
			return
		}
		if err := os.WriteFile(cgi, fmt.Appendf(nil, busyCGI, busySeconds), 0o755); err != nil {
			s.busyErr = err
			return
		}
		if err := os.Lchown(cgi, uid, gid); err != nil {
			s.busyErr = err
			return
		}
		// Apache's own Timeout (60 s unless set) would end the silent
		// CGI first; busy projects raise it, as this one now does.
		s.busyErr = s.apacheTimeout(300)
	})
	if s.busyErr != nil {
		t.Fatalf("putting the busy scheduler in front of the CGI: %v", s.busyErr)
	}
}

// apacheTimeout sets Apache's Timeout (how long a CGI may stay silent).
func (s *server) apacheTimeout(secs int) error {
	return s.apacheConf(fmt.Sprintf("Timeout %d\n", secs))
}

// apacheConf adds text to the instance's httpd.conf and restarts Apache
// gracefully (SIGUSR1): it goes on listening, and requests in progress
// finish. Callers serialise (the cases' setups run one at a time).
func (s *server) apacheConf(text string) error {
	conf := filepath.Join(s.root, "apache", "httpd.conf")
	f, err := os.OpenFile(conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = io.WriteString(f, text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(s.root, "apache", "httpd.pid"))
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("apache pid file: %q", b)
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("graceful restart of Apache (pid %d): %w", pid, err)
	}
	// The restarted children answer the master page again.
	deadline := time.Now().Add(20 * time.Second)
	for {
		if resp, err := http.Get(s.masterURL()); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Apache did not answer within 20 s of its graceful restart")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkBusy: the first request waited out the busy scheduler (the first
// job came after busySeconds) and no scheduler request failed.
func checkBusy(t *testing.T, s *server, r *caseRun) string {
	b, err := os.ReadFile(filepath.Join(r.dir, "rs_messages.txt"))
	if err != nil {
		t.Error(err)
		return "?"
	}
	failed := bytes.Count(b, []byte("Scheduler request failed"))
	if failed > 0 {
		t.Errorf("%s: %d scheduler requests failed; the busy scheduler's first answer should have been waited for", r.label, failed)
	}
	first, _ := strconv.ParseFloat(r.firstSent, 64)
	if first < busySeconds {
		t.Errorf("%s: first job %s s after the start, before the busy scheduler answered (%d s): the case shows nothing", r.label, r.firstSent, busySeconds)
	}
	return fmt.Sprintf("failed %d, first job at %s s", failed, r.firstSent)
}

// projectDirName is the client's directory for the project
// (escape_project_url: the URL without its scheme, every other character
// than letters, digits, '.', '-' and '_' made '_', no trailing '_').
func (s *server) projectDirName() string {
	u := strings.TrimPrefix(s.masterURL(), "http://")
	b := []byte(u)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return strings.TrimRight(string(b), "_")
}

// anonVersion is the version app_info.xml gives the app: the project's is
// 100, so a result computed by 199 was computed by the volunteer's own.
const anonVersion = 199

// prepareAppInfo puts the project's app, under a name of its own, and an
// app_info.xml naming it version 199, in the client's project directory.
func prepareAppInfo(t *testing.T, s *server, r *caseRun) {
	t.Helper()
	apps, _ := filepath.Glob(filepath.Join(s.root, "projects", project, "apps", "rsapp", "*", "*", "rsapp_*"))
	if len(apps) == 0 {
		t.Fatalf("no rsapp executable under the project's apps/")
	}
	exe, err := os.ReadFile(apps[0])
	if err != nil {
		t.Fatal(err)
	}
	pdir := filepath.Join(r.dir, "projects", s.projectDirName())
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	const exeName = "rsapp_own_build"
	if err := os.WriteFile(filepath.Join(pdir, exeName), exe, 0o755); err != nil {
		t.Fatal(err)
	}
	appInfo := fmt.Sprintf(`<app_info>
    <app>
        <name>rsapp</name>
    </app>
    <file_info>
        <name>%s</name>
        <executable/>
    </file_info>
    <app_version>
        <app_name>rsapp</app_name>
        <version_num>%d</version_num>
        <file_ref>
            <file_name>%s</file_name>
            <main_program/>
        </file_ref>
    </app_version>
</app_info>
`, exeName, anonVersion, exeName)
	if err := os.WriteFile(filepath.Join(pdir, "app_info.xml"), []byte(appInfo), 0o644); err != nil {
		t.Fatal(err)
	}
	chownTree(t, filepath.Join(r.dir, "projects"), s.uid, s.gid)
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkAnonymous: every result of the account was computed by version 199
// (result.app_version_num), and the scheduler log says it saw the
// anonymous platform.
func checkAnonymous(t *testing.T, s *server, r *caseRun) string {
	out, err := s.sql(fmt.Sprintf("select app_version_num from result where userid=%d", r.userID))
	if err != nil {
		t.Error(err)
		return "?"
	}
	versions := strings.Fields(out)
	n := 0
	for _, v := range versions {
		if v == strconv.Itoa(anonVersion) {
			n++
		}
	}
	if len(versions) == 0 || n != len(versions) {
		t.Errorf("%s: results computed by versions %v, want all %d (app_info.xml)", r.label, versions, anonVersion)
	}
	return fmt.Sprintf("v%d: %d/%d", anonVersion, n, len(versions))
}

// checkGzip: each input was fetched as its .gz, and never whole (Apache's
// access log: the path and the bytes sent).
func checkGzip(t *testing.T, s *server, r *caseRun) string {
	log, err := os.ReadFile(filepath.Join(s.root, "apache", "access.log"))
	if err != nil {
		t.Error(err)
		return "?"
	}
	gz, plain := 0, 0
	var gzBytes, plainBytes int64
	for _, line := range strings.Split(string(log), "\n") {
		for _, in := range r.inputs {
			if !strings.Contains(line, "GET ") || !strings.Contains(line, "/"+in) {
				continue
			}
			n := accessLogBytes(line)
			if strings.Contains(line, "/"+in+".gz") {
				gz++
				gzBytes += n
			} else {
				plain++
				plainBytes += n
			}
		}
	}
	if gz < len(r.inputs) || plain > 0 {
		t.Errorf("%s: inputs fetched as .gz %d times, plain %d times; want each as .gz only", r.label, gz, plain)
	}
	return fmt.Sprintf(".gz %d (%d B), plain %d (%d B)", gz, gzBytes, plain, plainBytes)
}

// accessLogBytes is the response size of an access log line (the field
// after the status); 0 where there is none.
var accessStatusSize = regexp.MustCompile(`" \d{3} (\d+|-)`)

func accessLogBytes(line string) int64 {
	m := accessStatusSize.FindStringSubmatch(line)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

// runFeatures runs every feature case with both clients at once and
// returns the side-by-side table.
func (s *server) runFeatures(t *testing.T, ports []int, timeout time.Duration) string {
	cases := featureCases()
	clients := []struct{ name, bin string }{{"cpp", cppClient}, {"boincd", s.boincd}}
	if len(ports) < len(cases)*len(clients) {
		t.Fatalf("%d GUI RPC ports for %d runs", len(ports), len(cases)*len(clients))
	}
	runs := map[string]*caseRun{}
	i := 0
	t0 := time.Now()
	for _, c := range cases {
		if c.setup != nil {
			c.setup(t, s)
		}
	}
	t.Run("all", func(t *testing.T) {
		// Every run at once, each subtest started from its own goroutine:
		// t.Parallel would let only -parallel (GOMAXPROCS, 2 on the CI
		// machine) run at a time, and the block would take one round of
		// jobs per pair of runs.
		var wg sync.WaitGroup
		for _, c := range cases {
			for _, cl := range clients {
				r := &caseRun{label: c.name + "/" + cl.name, client: cl.name, bin: cl.bin, port: ports[i], done: "-", cell: "-"}
				i++
				runs[r.label] = r
				wg.Add(1)
				go func() {
					defer wg.Done()
					t.Run(r.label, func(t *testing.T) {
						checkInterrupted(t)
						s.runFeature(t, c, r, timeout)
					})
				}()
			}
		}
		wg.Wait()
	})
	var b strings.Builder
	fmt.Fprintf(&b, "real-project features: %d jobs of %d s per client, both clients at once on their own accounts (%.0f s)\n",
		featureJobs, wuSeconds, time.Since(t0).Seconds())
	fmt.Fprintf(&b, "%-14s %-22s %-46s %-46s\n", "case", "all done (s)", "cpp", "boincd")
	for _, c := range cases {
		cpp, bd := runs[c.name+"/cpp"], runs[c.name+"/boincd"]
		fmt.Fprintf(&b, "%-14s %-22s %-46s %-46s\n", c.name, cpp.done+" / "+bd.done, cpp.cell, bd.cell)
	}
	for _, c := range cases {
		done := "validated"
		switch {
		case c.clientErrors:
			done = "reported as client errors"
		case c.reported:
			done = "reported as successes (no validator for its app)"
		}
		fmt.Fprintf(&b, "  %s: %s; done: all jobs %s\n", c.name, c.about, done)
	}
	return b.String()
}

// runFeature is one client's run of one case: a fresh account, its
// jobs, a fresh data directory (plus what the case adds), the client as
// user boinc, attached with boinccmd, until the jobs are validated (or
// reported, featureCase.reported), the case's during beside it; then the
// case's check, and the client stopped.
func (s *server) runFeature(t *testing.T, c featureCase, r *caseRun, timeout time.Duration) {
	r.dir = filepath.Join(s.root, "f_"+strings.ReplaceAll(r.label, "/", "_"))
	r.auth, r.userID = s.newAccount(t, strings.ReplaceAll(r.label, "/", "-"))
	r.inputs = c.jobs(t, s, r)
	if err := s.clientDir(r.dir, ""); err != nil {
		t.Fatal(err)
	}
	if c.prepare != nil {
		c.prepare(t, s, r)
	}
	bin, args := r.bin, []string(nil)
	if c.start != nil {
		bin, args = c.start(t, s, r)
	}
	stop, exited := s.startClient(t, r.label, bin, r.dir, r.port, args...)
	defer stop()
	t0 := time.Now()
	r.t0 = t0
	if err := waitGUIRPC(r.port, exited); err != nil {
		t.Fatalf("%s: %v", r.label, err)
	}
	attach := s.masterURL()
	if c.attachURL != nil {
		attach = c.attachURL(s)
	}
	r.url = attach
	if out, err := boinccmd(r.port, "--project_attach", attach, r.auth); err != nil {
		t.Fatalf("%s: attach: %v: %s", r.label, err, out)
	}
	stopDuring := func() {}
	if c.during != nil {
		ctx, cancel := context.WithCancel(suiteCtx)
		ended := make(chan struct{})
		go func() { defer close(ended); c.during(ctx, t, s, r) }()
		stopDuring = func() { cancel(); <-ended }
		defer stopDuring()
	}
	q := fmt.Sprintf("select count(*), ifnull(sum(validate_state=1),0), ifnull(sum(server_state=5 and outcome=1),0), "+
		"ifnull(sum(outcome<>1 and server_state=5),0), ifnull(sum(server_state=5 and outcome=3),0) from result where userid=%d", r.userID)
	what, doneCol := "validated", 1
	switch {
	case c.clientErrors:
		what, doneCol = "reported as client errors", 4
	case c.reported:
		what, doneCol = "reported as successes", 2
	}
	last := ""
	var held heldWatch
	for {
		v, err := s.sqlInts(q)
		if err != nil || len(v) != 5 {
			t.Fatalf("%s: polling the DB: %v", r.label, err)
		}
		held.tick(t, s, r, time.Now())
		if v[0] > 0 && r.firstSent == "" {
			r.firstSent = fmt.Sprintf("%.1f", time.Since(t0).Seconds())
		}
		cur := fmt.Sprintf("sent=%.0f valid=%.0f success=%.0f errors=%.0f", v[0], v[1], v[2], v[3])
		if cur != last {
			t.Logf("%s t=%.1fs %s", r.label, time.Since(t0).Seconds(), cur)
			last = cur
		}
		want := len(r.inputs)
		if c.want != nil {
			want = c.want(r)
		}
		if int(v[doneCol]) >= want {
			if r.done == "-" {
				r.done = fmt.Sprintf("%.1f", time.Since(t0).Seconds())
			}
			if c.finished == nil || c.finished(s, r) {
				r.passed = true
				break
			}
		}
		if !c.clientErrors && v[3] > 0 {
			t.Errorf("%s: %.0f results ended in a client error", r.label, v[3])
			break
		}
		if c.clientErrors && v[2] > 0 {
			t.Errorf("%s: %.0f results reported as successes; every job of the case should fail", r.label, v[2])
			break
		}
		if time.Since(t0) > timeout {
			t.Errorf("%s: %.0f of %d jobs %s after %v", r.label, v[doneCol], want, what, timeout)
			break
		}
		select {
		case <-exited:
			t.Fatalf("%s: the client exited", r.label)
		case <-suiteCtx.Done():
			t.Fatalf("interrupted by a signal")
		case <-time.After(pollEvery):
		}
	}
	stopDuring()
	msgs, _ := boinccmd(r.port, "--get_messages", "0")
	_ = os.WriteFile(filepath.Join(r.dir, "rs_messages.txt"), []byte(msgs), 0o644)
	r.cell = c.check(t, s, r)
	if held.nudges > 0 {
		r.cell += fmt.Sprintf("; held %d×%v, nudged", held.nudges, heldGrace)
	}
	if t.Failed() {
		logEvidence(t, filepath.Join(r.dir, "rs_messages.txt"), filepath.Join(r.dir, "rs_client.out"))
	}
}

// heldWatch catches, in a feature run, the C++ client's held-report race
// (see runClient): every task it has ready to report for heldGrace with
// nothing else to do. The C++ client then gets the user's Update (counted
// and shown in its cell), so the case goes on to what it tests; boincd
// holding a report so is a failure.
type heldWatch struct {
	since  time.Time
	nudges int
}

func (h *heldWatch) tick(t *testing.T, s *server, r *caseRun, now time.Time) {
	n := heldTasks(r.port)
	switch {
	case n == 0:
		h.since = time.Time{}
		return
	case h.since.IsZero():
		h.since = now
		return
	case now.Sub(h.since) < heldGrace:
		return
	}
	h.since = now
	h.nudges++
	if r.client != "cpp" {
		t.Errorf("%s: every task (%d) ready to report for %v with nothing else to do: a held report", r.label, n, heldGrace)
	}
	t.Logf("%s: %d task(s) held ready to report for %v: boinccmd update", r.label, n, heldGrace)
	if out, err := boinccmd(r.port, "--project", r.url, "update"); err != nil {
		t.Logf("%s: boinccmd update: %v: %s", r.label, err, out)
	}
}

// startClient starts bin as the client user in dir, with the C++ client's
// flags (which boincd accepts too) unless args are given, as lib.sh's
// start_client does, and a pid file where teardown.sh looks. stop asks it
// to quit (boinccmd --quit), then SIGTERM, then SIGKILL; exited closes
// when it has exited. The feature runs and the boincd-by-config run use it.
func (s *server) startClient(t *testing.T, label, bin, dir string, port int, args ...string) (stop func(), exited <-chan struct{}) {
	t.Helper()
	out, err := os.OpenFile(filepath.Join(dir, "rs_client.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 {
		args = []string{"--dir", dir, "--gui_rpc_port", strconv.Itoa(port)}
	}
	cmd := exec.Command("setpriv", append([]string{"--reuid=" + clientUser, "--regid=" + clientUser, "--init-groups",
		"env", "HOME=" + dir, "USER=" + clientUser, "LOGNAME=" + clientUser, bin}, args...)...)
	// the harness environment, without BOINCD_* (boincd reads some: a
	// stray BOINCD_PROJECT_URL would attach another project), but with
	// the container opt-out: with HOME writable, podman works for the
	// client user and its rootless pause process (catatonit) would
	// outlive the suite
	for _, kv := range s.env {
		if !strings.HasPrefix(kv, "BOINCD_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "BOINCD_DONT_USE_DOCKER=true", "BOINCD_WEB_LISTEN=127.0.0.1:0")
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("%s: starting %s: %v", label, bin, err)
	}
	pidFile := filepath.Join(s.root, "clients", strconv.Itoa(port)+".pid")
	pid := strconv.Itoa(cmd.Process.Pid) + "\n"
	_ = os.WriteFile(pidFile, []byte(pid), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "client.pid"), []byte(pid), 0o644)
	done := make(chan struct{})
	go func() {
		if err := cmd.Wait(); err != nil {
			fmt.Fprintf(out, "rs harness: client exited: %v\n", err)
		}
		out.Close()
		close(done)
	}()
	t.Logf("%s: started %s %s (pid %d) as %s", label, bin, strings.Join(args, " "), cmd.Process.Pid, clientUser)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_, _ = boinccmd(port, "--quit")
			for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
				if waitClosed(done, 20*time.Second) {
					break
				}
				t.Logf("%s: client (pid %d) still running: %v", label, cmd.Process.Pid, sig)
				_ = cmd.Process.Signal(sig)
			}
			<-done
			_ = os.Remove(pidFile)
		})
	}
	return stop, done
}

// waitClosed waits up to d for c to close.
func waitClosed(c <-chan struct{}, d time.Duration) bool {
	select {
	case <-c:
		return true
	case <-time.After(d):
		return false
	}
}

// waitGUIRPC waits up to 60 s for the client's GUI RPC, as lib.sh's
// wait_gui_rpc does.
func waitGUIRPC(port int, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(suiteCtx, 60*time.Second)
	defer cancel()
	for {
		if _, err := boinccmd(port, "--get_cc_status"); err == nil {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("the client exited before its GUI RPC answered")
		case <-ctx.Done():
			return fmt.Errorf("GUI RPC did not answer within 60 s")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
