package realserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The limits case: the two job limits real projects set besides
// max_wus_in_progress, which only apply to jobs a project hands out to
// any host (not to jobs assigned to an account, which the other feature
// cases use): a per-app <max_jobs_in_progress> and <daily_result_quota>.
//
// Each client run gets an app of its own (rslimit_cpp, rslimit_boincd),
// with one version in a plan class that only an account whose project
// preferences hold <rslimit>CLIENT</rslimit> may use
// (plan_class_spec.xml's project_prefs_tag): its jobs, created for no
// account in particular, reach that run's client alone, so both runs go
// at once, as the other cases do.
//
// What the server does with the limits (BOINC server 1.6.2): the per-app
// limit counts, for a host that is not on the anonymous platform, only
// the jobs of the reply being built (send_work_setup registers the
// client's in-progress jobs without their app), so it caps the jobs of
// the app per reply; the daily quota is per host and app version,
// daily_result_quota times the host's CPUs (scaled_max_jobs_per_day),
// after which each reply says "This computer has finished a daily quota
// of N tasks" and sends nothing of the app until the next day. Neither
// reply asks for a delay (DELAY_NO_WORK_CACHE is 0): what a client does
// next is its own backoff, which is what the case compares.

const (
	// limitsPrefix + client is a run's app and plan class.
	limitsPrefix = "rslimit_"
	// limitsPrefsTag is the project preference the plan classes test.
	limitsPrefsTag = "rslimit"
	// appJobLimit is the per-app <max_jobs_in_progress> of the limits
	// apps (cpu_limit, not per CPU).
	appJobLimit = 1
	// dailyQuota is the project's daily_result_quota while the feature
	// cases run (the stock project has 500; the main runs have ended).
	dailyQuota = 2
	// limitsObserve is how long a run goes on after its quota jobs are
	// reported and the quota reply has come, counting the client's
	// scheduler requests: a client that backs off sends at most one or
	// two.
	limitsObserve = 30 * time.Second
	// limitsMaxRequests bounds those requests.
	limitsMaxRequests = 3
)

// limitsClients are the clients the limits apps are made for.
var limitsClients = []string{"cpp", "boincd"}

// quotaJobs is the daily quota of a host of this machine: the server
// scales daily_result_quota by the CPUs the client reports.
func quotaJobs() int {
	if dailyQuota == 1 {
		return 1
	}
	return dailyQuota * runtime.NumCPU()
}

// limitsCase is the limits feature case.
func limitsCase() featureCase {
	return featureCase{
		name: "limits",
		about: fmt.Sprintf("per-app max_jobs_in_progress %d and daily_result_quota %d (%d jobs a day on this %d-CPU host), %d untargeted "+
			"jobs of an app only the run's account may get: jobs per reply (at most), quota reply seen, scheduler requests in the %v after "+
			"the quota jobs were reported", appJobLimit, dailyQuota, quotaJobs(), runtime.NumCPU(), quotaJobs()+1, limitsObserve),
		setup: installLimitsApps,
		jobs: func(t *testing.T, s *server, r *caseRun) []string {
			if _, err := s.sql(fmt.Sprintf("update user set project_prefs='<project_preferences>\\n<%s>%s</%s>\\n</project_preferences>\\n' where id=%d",
				limitsPrefsTag, r.client, limitsPrefsTag, r.userID)); err != nil {
				t.Fatalf("%s: the account's project preferences: %v", r.label, err)
			}
			return s.openJobs(t, r, limitsPrefix+r.client, quotaJobs()+1)
		},
		prepare: func(t *testing.T, s *server, r *caseRun) { r.watch = &limitsWatch{} },
		during:  watchQuota,
		want:    func(r *caseRun) int { return quotaJobs() },
		// no validator runs for the limits apps
		reported: true,
		finished: limitsFinished,
		check:    checkLimits,
	}
}

// installLimitsApps adds the limits apps (rsapp's script as their only
// version, in their plan class), the plan classes, the per-app limit and
// the daily quota, once.
func installLimitsApps(t *testing.T, s *server) {
	t.Helper()
	// the front CGI's request log counts the runs' requests
	s.installBusyCGI(t)
	proj := filepath.Join(s.root, "projects", project)
	apps, _ := filepath.Glob(filepath.Join(proj, "apps", "rsapp", "*", "*", "rsapp_*"))
	if len(apps) == 0 {
		t.Fatalf("no rsapp executable under the project's apps/")
	}
	exe, err := os.ReadFile(apps[0])
	if err != nil {
		t.Fatal(err)
	}
	var specs, limits strings.Builder
	for _, c := range limitsClients {
		app := limitsPrefix + c
		dir := filepath.Join(proj, "apps", app, apiAppVersion, apiPlatform+"__"+app)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s_%s_%s__%s", app, apiAppVersion, apiPlatform, app)), exe, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, tmpl := range []struct{ from, to string }{{"rsapp_in", app + "_in"}, {"rsapp_out", app + "_out"}} {
			b, err := os.ReadFile(filepath.Join(proj, "templates", tmpl.from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(proj, "templates", tmpl.to), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		s.editProjectFile(t, "project.xml", "</boinc>", fmt.Sprintf(
			"<app>\n        <name>%s</name>\n        <user_friendly_name>Real-server harness limits app for %s</user_friendly_name>\n    </app>\n</boinc>", app, c))
		fmt.Fprintf(&specs, "    <plan_class>\n        <name>%s</name>\n        <avg_ncpus>1</avg_ncpus>\n"+
			"        <project_prefs_tag>%s</project_prefs_tag>\n        <project_prefs_regex>^%s$</project_prefs_regex>\n    </plan_class>\n",
			app, limitsPrefsTag, c)
		fmt.Fprintf(&limits, "        <app>\n            <app_name>%s</app_name>\n            <cpu_limit>\n                <jobs>%d</jobs>\n"+
			"            </cpu_limit>\n        </app>\n", app, appJobLimit)
	}
	spec := filepath.Join(proj, "plan_class_spec.xml")
	if fileExists(spec) {
		s.editProjectFile(t, "plan_class_spec.xml", "</plan_classes>", specs.String()+"</plan_classes>")
	} else if err := os.WriteFile(spec, []byte("<plan_classes>\n"+specs.String()+"</plan_classes>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Job limits are read from config_aux.xml alone
	// (SCHED_CONFIG::parse_aux); make_project writes none.
	aux := filepath.Join(proj, "config_aux.xml")
	if fileExists(aux) {
		s.editProjectFile(t, "config_aux.xml", "<config>", "<config>\n    <max_jobs_in_progress>\n"+limits.String()+"    </max_jobs_in_progress>")
	} else if err := os.WriteFile(aux, []byte("<config>\n    <max_jobs_in_progress>\n"+limits.String()+"    </max_jobs_in_progress>\n</config>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// the scheduler log says when a limit or the quota stops a job
	s.editProjectFile(t, "config.xml", "<config>", "<config>\n    <debug_quota/>")
	const stockQuota = "<daily_result_quota>500</daily_result_quota>"
	s.editProjectFile(t, "config.xml", stockQuota, fmt.Sprintf("<daily_result_quota>%d</daily_result_quota>", dailyQuota))

	logPath := s.addVersions(t, "limits_apps", true, "apps", "templates", "project.xml", "plan_class_spec.xml", "config_aux.xml")
	for _, c := range limitsClients {
		pc, err := s.sql(fmt.Sprintf("select av.plan_class from app_version av join app a on a.id=av.appid where a.name='%s%s'", limitsPrefix, c))
		if err != nil || strings.TrimSpace(pc) != limitsPrefix+c {
			t.Fatalf("app_version of %s%s: plan class %q (%v), want %s%s\n%s", limitsPrefix, c, pc, err, limitsPrefix, c, tail(logPath, 30))
		}
	}
	s.awaitReread(t, "the limits apps")
}

// openJobs stages n inputs of app (rsapp's kind: the job's length, then
// text) and creates a workunit for each, assigned to nobody.
func (s *server) openJobs(t *testing.T, r *caseRun, app string, n int) []string {
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
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("%s_in_%s_%d", app, stamp, i)
		if err := os.WriteFile(filepath.Join(tmp, name), fmt.Appendf(nil, "%d\nthe input of %s\n", wuSeconds, name), 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
		fmt.Fprintf(&script, "as_srv bin/stage_file --copy %q >/dev/null\n", filepath.Join(tmp, name))
		fmt.Fprintf(&script, "as_srv bin/create_work --appname %s --wu_name %q %q >/dev/null\n", app, strings.Replace(name, "_in_", "_wu_", 1), name)
	}
	ctx, cancel := s.ctx(2 * time.Minute)
	defer cancel()
	logPath := filepath.Join(s.logs, "jobs_"+strings.ReplaceAll(r.label, "/", "_")+".log")
	if rc, err := s.run(ctx, logPath, nil, "bash", "-c", script.String(), "jobs", s.script("lib.sh")); err != nil || rc != 0 {
		t.Fatalf("creating %s's jobs: exit %d, %v\n%s", r.label, rc, err, tail(logPath, 20))
	}
	return names
}

// limitsWatch is what watchQuota and limitsFinished saw, for
// checkLimits.
type limitsWatch struct {
	mu      sync.Mutex
	quotaAt time.Time // the quota reply first in the client's event log
	readyAt time.Time // the quota jobs reported (quota reply seen)
}

func (w *limitsWatch) quota() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quotaAt
}

const quotaMessage = "finished a daily quota"

// watchQuota notes when the quota reply first shows in the client's
// event log (boinccmd --get_messages, every 0.5 s).
func watchQuota(ctx context.Context, t *testing.T, s *server, r *caseRun) {
	w := r.watch.(*limitsWatch)
	watchTicker(ctx, func(now time.Time) {
		if !w.quota().IsZero() {
			return
		}
		if msgs, err := boinccmd(r.port, "--get_messages", "0"); err == nil && strings.Contains(msgs, quotaMessage) {
			w.mu.Lock()
			w.quotaAt = now
			w.mu.Unlock()
		}
	})
}

// limitsFinished (called once the quota jobs are reported): the quota
// reply has come, and limitsObserve has passed since both.
func limitsFinished(s *server, r *caseRun) bool {
	w := r.watch.(*limitsWatch)
	if w.quota().IsZero() {
		return false
	}
	if w.readyAt.IsZero() {
		w.readyAt = time.Now()
	}
	return time.Since(w.readyAt) >= limitsObserve
}

// checkLimits: no reply carried more jobs of the app than the per-app
// limit, the quota reply reached the client, every job it got was
// reported as a success and the rest never sent, and it sent at most
// limitsMaxRequests scheduler requests while observed after that.
func checkLimits(t *testing.T, s *server, r *caseRun) string {
	w, _ := r.watch.(*limitsWatch)
	if w == nil || w.quota().IsZero() || w.readyAt.IsZero() {
		t.Errorf("%s: the quota reply never showed in the event log", r.label)
		return "?"
	}
	perReply, err := s.sqlInts(fmt.Sprintf("select ifnull(max(n),0), count(*), ifnull(sum(n),0) from "+
		"(select count(*) n from result where userid=%d and sent_time>0 group by sent_time) x", r.userID))
	if err != nil || len(perReply) != 3 {
		t.Errorf("%s: jobs per reply: %v", r.label, err)
		return "?"
	}
	maxPer, replies, sent := int(perReply[0]), int(perReply[1]), int(perReply[2])
	if maxPer > appJobLimit {
		t.Errorf("%s: a reply carried %d jobs of the app, over its limit of %d", r.label, maxPer, appJobLimit)
	}
	if sent != quotaJobs() {
		t.Errorf("%s: %d jobs sent, want the daily quota, %d", r.label, sent, quotaJobs())
	}
	after := 0
	b, err := os.ReadFile(filepath.Join(s.root, "projects", project, "busy", "requests"))
	if err != nil {
		t.Error(err)
	}
	for _, l := range bytes.Split(b, []byte("\n")) {
		f := strings.Fields(string(l))
		if len(f) != 3 || f[2] != r.auth {
			continue
		}
		if at, err := strconv.ParseInt(f[0], 10, 64); err == nil && !time.Unix(at, 0).Before(w.readyAt.Truncate(time.Second)) {
			after++
		}
	}
	if after > limitsMaxRequests {
		t.Errorf("%s: %d scheduler requests in the %v after its quota jobs were reported; want at most %d (a client backs off when a project sends nothing)",
			r.label, after, limitsObserve, limitsMaxRequests)
	}
	return fmt.Sprintf("%d jobs in %d replies (max %d), quota reply +%.0f s, %d requests in %v after",
		sent, replies, maxPer, w.quota().Sub(r.t0).Seconds(), after, limitsObserve)
}
