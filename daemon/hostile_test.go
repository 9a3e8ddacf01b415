package daemon

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// The hostile server suite: one project's scheduler turns hostile after
// handing out a first, honest job; a second, honest project runs beside
// it. Every case checks that the hostility is refused with a log line
// naming the project and what was wrong, that nothing is written outside
// the data directory, that the task the hostile project gave earlier is
// still computed and reported, and that the honest project's tasks
// complete and are reported. Memory bounds of the parser are measured in
// rpcclient (TestHostileReplyMemory); here the daemon's own limits keep
// each case to a few seconds.

// onJobReply rewrites the k-th scheduler reply that carries a job (k from
// 1); rewrite gets the reply as text.
func onJobReply(k int, rewrite func(reply string) string) func(int, []byte) []byte {
	var mu sync.Mutex
	seen := 0
	return func(_ int, reply []byte) []byte {
		if !strings.Contains(string(reply), "<result>") {
			return reply
		}
		mu.Lock()
		seen++
		n := seen
		mu.Unlock()
		if n != k {
			return reply
		}
		return []byte(rewrite(string(reply)))
	}
}

// sub replaces the first match of re's group 1 (or the whole match when
// re has no group) with repl. A pattern that no longer matches the test
// project's reply makes the case meaningless: it panics with errNoMatch,
// which TestHostileReplies recovers and reports as the case's failure.
func sub(re, repl string) func(string) string {
	rx := regexp.MustCompile(re)
	return func(s string) string {
		m := rx.FindStringSubmatchIndex(s)
		if m == nil {
			panic(errNoMatch(re))
		}
		a, b := m[0], m[1]
		if len(m) >= 4 {
			a, b = m[2], m[3]
		}
		return s[:a] + repl + s[b:]
	}
}

// errNoMatch is the panic of a rewrite whose pattern finds nothing.
type errNoMatch string

func (e errNoMatch) Error() string { return "hostile rewrite: no match for " + string(e) }

// subAll replaces every match of re's group 1 with repl.
func subAll(re, repl string) func(string) string {
	rx := regexp.MustCompile(re)
	return func(s string) string {
		if !rx.MatchString(s) {
			panic(errNoMatch(re))
		}
		return rx.ReplaceAllStringFunc(s, func(m string) string {
			sm := rx.FindStringSubmatch(m)
			return strings.Replace(m, sm[1], repl, 1)
		})
	}
}

func insertBeforeEnd(x string) func(string) string {
	return func(s string) string { return strings.Replace(s, "</scheduler_reply>", x+"</scheduler_reply>", 1) }
}

func then(fs ...func(string) string) func(string) string {
	return func(s string) string {
		for _, f := range fs {
			s = f(s)
		}
		return s
	}
}

// block returns the first <tag>…</tag> block of s.
func block(s, tag string) string {
	i := strings.Index(s, "<"+tag+">")
	j := strings.Index(s[i:], "</"+tag+">")
	return s[i : i+j+len("</"+tag+">")]
}

// cloneJobs adds n copies of the reply's job (workunit, output file_info
// and result, each renamed) before the end tag.
func cloneJobs(n int) func(string) string {
	return func(s string) string {
		wu := block(s, "workunit")
		res := block(s, "result")
		wuName := regexp.MustCompile(`<name>([^<]+)</name>`).FindStringSubmatch(wu)[1]
		resName := regexp.MustCompile(`<name>([^<]+)</name>`).FindStringSubmatch(res)[1]
		out := regexp.MustCompile(`<file_name>([^<]+)</file_name>`).FindStringSubmatch(res)[1]
		var outInfo string
		for rest := s; ; {
			fi := block(rest, "file_info")
			if strings.Contains(fi, "<name>"+out+"</name>") {
				outInfo = fi
				break
			}
			rest = rest[strings.Index(rest, fi)+len(fi):]
		}
		var b strings.Builder
		for i := range n {
			// The clones share the job's input file.
			c := fmt.Sprintf("_c%d", i)
			b.WriteString(strings.Replace(wu, "<name>"+wuName+"</name>", "<name>"+wuName+c+"</name>", 1))
			b.WriteString(strings.ReplaceAll(outInfo, out, out+c))
			b.WriteString(strings.NewReplacer("<name>"+resName+"</name>", "<name>"+resName+c+"</name>",
				"<wu_name>"+wuName+"</wu_name>", "<wu_name>"+wuName+c+"</wu_name>", out, out+c).Replace(res))
		}
		return strings.Replace(s, "</scheduler_reply>", b.String()+"</scheduler_reply>", 1)
	}
}

// hostileCase is one attack. Exactly one of failErr (the whole reply is
// refused: the RPC fails with this in its error) and msg (the reply is
// applied, the bad part refused with this log message) is set.
type hostileCase struct {
	name    string
	rewrite func(reply, outside string) string
	failErr []string // substrings of the refusal error
	msg     string   // log message of a partial refusal
	attrs   []string // and its attributes (key, substring) pairs
	// jobRuns: the hostile reply's job is still computed and reported
	// (the attack was clamped or affected something else).
	jobRuns bool
	// queueFull: the client asks for no more work afterwards, so the
	// hostile project's third job is never fetched.
	queueFull bool
}

func fixed(f func(string) string) func(string, string) string {
	return func(reply, _ string) string { return f(reply) }
}

const bombDTD = `<!DOCTYPE scheduler_reply [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;"><!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">]>`

var hostileCases = []hostileCase{
	// 1. Path traversal and absolute paths in every name field.
	{name: "file_info name traversal", rewrite: fixed(subAll(`<name>([^<]+_in)</name>`, "../evil_in")),
		failErr: []string{"file_info #", `"../evil_in"`, "path separator"}},
	{name: "file_info name absolute", rewrite: func(r, out string) string {
		return subAll(`<name>([^<]+_in)</name>`, filepath.Join(out, "evil_abs"))(r)
	}, failErr: []string{"file_info #", "absolute path"}},
	{name: "app name traversal", rewrite: fixed(sub(`<app>\s*<name>(refapp)</name>`, "../evil_app")),
		failErr: []string{"app #1", `"../evil_app"`}},
	{name: "app_version app_name traversal", rewrite: fixed(sub(`<app_version>\s*<app_name>(refapp)</app_name>`, "../evil_app")),
		failErr: []string{"app_version #1", `"../evil_app"`}},
	{name: "app_version file_ref traversal", rewrite: fixed(sub(`<app_version>[\s\S]*?<file_name>([^<]+)</file_name>`, "../../evil_exe")),
		failErr: []string{"app_version #1", "file_ref", `"../../evil_exe"`}},
	{name: "app_version open_name traversal", rewrite: fixed(sub(`<main_program/>()`, "<open_name>../evil_open</open_name>")),
		failErr: []string{"app_version #1", "open_name", `"../evil_open"`}},
	{name: "workunit name traversal", rewrite: fixed(sub(`<workunit>\s*<name>([^<]+)</name>`, "../evil_wu")),
		failErr: []string{"workunit #1", `"../evil_wu"`}},
	{name: "workunit app_name absolute", rewrite: fixed(sub(`<workunit>[\s\S]*?<app_name>([^<]+)</app_name>`, "/evil_wuapp")),
		failErr: []string{"workunit #1", "absolute path"}},
	{name: "workunit input open_name absolute", rewrite: func(r, out string) string {
		return sub(`<open_name>(in)</open_name>`, filepath.Join(out, "evil_in_open"))(r)
	}, failErr: []string{"workunit #1", "open_name", "absolute path"}},
	{name: "result name traversal", rewrite: fixed(sub(`<result>\s*<name>([^<]+)</name>`, "../../evil_result")),
		failErr: []string{"result #1", `"../../evil_result"`}},
	{name: "result wu_name traversal", rewrite: fixed(sub(`<wu_name>([^<]+)</wu_name>`, "../evil_wu")),
		failErr: []string{"result #1", `"../evil_wu"`}},
	{name: "output file name traversal", rewrite: fixed(subAll(`<(?:name|file_name)>([^<]+_r\d+_0)</(?:name|file_name)>`, "../evil_out")),
		failErr: []string{"file_info #", `"../evil_out"`}},
	{name: "output open_name traversal", rewrite: fixed(sub(`<open_name>(out)</open_name>`, "../../evil_out_open")),
		failErr: []string{"result #1", "open_name", `"../../evil_out_open"`}},
	{name: "delete_file_info traversal", rewrite: fixed(insertBeforeEnd("<delete_file_info>../../evil_del</delete_file_info>\n")),
		failErr: []string{"delete_file_info", `"../../evil_del"`}},
	// 2. XML bombs.
	// Anything before <scheduler_reply> is skipped (as the C++ client
	// does), so a DTD there declares nothing and the entity is unknown.
	// Before the root a DTD is skipped with the CGI header; &c; is then an
	// unknown entity, kept as the text "&c;" as the C++ client keeps it:
	// nothing expands, and the reply with its job is applied.
	{name: "entity expansion bomb before the root", rewrite: fixed(sub(`(<scheduler_reply>)`, bombDTD+`<scheduler_reply><project_name>&c;</project_name>`)),
		jobRuns: true},
	{name: "entity expansion bomb inside the root", rewrite: fixed(sub(`(<scheduler_reply>)`, `<scheduler_reply>`+bombDTD+`<project_name>&c;</project_name>`)),
		failErr: []string{"DTDs and entity declarations are not accepted"}},
	{name: "100k nested elements", rewrite: fixed(insertBeforeEnd(strings.Repeat("<a>", 100000) + strings.Repeat("</a>", 100000))),
		failErr: []string{"nested deeper than 64"}},
	{name: "100k attributes", rewrite: fixed(insertBeforeEnd("<junk" + strings.Repeat(` a="1"`, 100000) + "/>")),
		failErr: []string{"more than 32 attributes"}},
	// Many elements the client does not know are skipped: the reply,
	// its job included, is applied.
	{name: "500k unknown elements", rewrite: fixed(insertBeforeEnd(strings.Repeat("<junk/>", 500000))), jobRuns: true},
	{name: "20k messages (100 kept)", rewrite: fixed(insertBeforeEnd(strings.Repeat("<message priority=\"low\">spam</message>\n", 20000))), jobRuns: true},
	// 3. Numbers.
	{name: "hostid overflow", rewrite: fixed(insertBeforeEnd("<hostid>99999999999999999999999</hostid>\n")),
		failErr: []string{"<hostid>", `invalid integer "99999999999999999999999"`}},
	{name: "negative hostid", rewrite: fixed(insertBeforeEnd("<hostid>-5</hostid>\n")),
		failErr: []string{"<hostid> -5 is negative"}},
	{name: "rsc_fpops_est 1e300", rewrite: fixed(sub(`<rsc_fpops_est>([^<]+)</rsc_fpops_est>`, "1e300")),
		failErr: []string{"workunit #1", "<rsc_fpops_est> 1e+300 out of range"}},
	{name: "rsc_fpops_bound 1e309", rewrite: fixed(sub(`<rsc_fpops_bound>([^<]+)</rsc_fpops_bound>`, "1e309")),
		failErr: []string{"<rsc_fpops_bound>", `invalid number "1e309"`}},
	{name: "nbytes -1", rewrite: fixed(sub(`_in</name>[\s\S]*?<nbytes>([^<]+)</nbytes>`, "-1")),
		failErr: []string{"file_info #", "negative size (<nbytes> -1"}},
	{name: "max_nbytes negative", rewrite: fixed(sub(`<max_nbytes>([^<]+)</max_nbytes>`, "-65536")),
		failErr: []string{"file_info #", "<max_nbytes> -65536"}},
	{name: "flops 1e-300", rewrite: fixed(sub(`<flops>([^<]+)</flops>`, "1e-300")),
		failErr: []string{"app_version #1", "<flops> 1e-300 out of range"}},
	{name: "request_delay 1e300", rewrite: fixed(sub(`<request_delay>([^<]+)</request_delay>`, "1e300")),
		failErr: []string{"<request_delay> 1e+300 out of range"}},
	{name: "deadline nan", rewrite: fixed(sub(`<report_deadline>([^<]+)</report_deadline>`, "nan")),
		failErr: []string{"<report_deadline>", `invalid number "nan"`}},
	{name: "deadline inf", rewrite: fixed(sub(`<report_deadline>([^<]+)</report_deadline>`, "inf")),
		failErr: []string{"<report_deadline>", `invalid number "inf"`}},
	{name: "deadline in the past", rewrite: fixed(sub(`<report_deadline>([^<]+)</report_deadline>`, "1000000000")),
		msg: "refusing task: its report deadline has already passed"},
	{name: "deadline negative", rewrite: fixed(sub(`<report_deadline>([^<]+)</report_deadline>`, "-1")),
		msg: "refusing task: it has no report deadline"},
	{name: "deadline absurd future", rewrite: fixed(sub(`<report_deadline>([^<]+)</report_deadline>`, "1e15")),
		msg: "task's report deadline is implausibly far ahead; clamped", jobRuns: true},
	// 4. Volume.
	{name: "1e6 results (over the reply size cap)", rewrite: fixed(insertBeforeEnd(strings.Repeat("<result><name>r</name><wu_name>w</wu_name></result>\n", 1000000))),
		failErr: []string{"reply larger than"}},
	{name: "20k results (over the per-reply cap)", rewrite: fixed(insertBeforeEnd(strings.Repeat("<result><name>r</name><wu_name>w</wu_name></result>\n", 20000))),
		failErr: []string{"more than 10000 <result> elements"}},
	{name: "1100 jobs (over the queue cap)", rewrite: fixed(cloneJobs(1100)),
		msg: "refusing tasks: the project already has the most unfinished tasks the client holds", jobRuns: true, queueFull: true},
	// 5. Hostile app versions and files.
	{name: "app_version refers to a file not described", rewrite: fixed(then(
		subAll(`<version_num>(100)</version_num>`, "101"),
		sub(`<main_program/>\s*</file_ref>()`, "<file_ref><file_name>ghost_file</file_name></file_ref>"))),
		msg: "refusing app_version: it refers to a file the project never described", attrs: []string{"file", "ghost_file"}},
	{name: "workunit refers to an input not described", rewrite: fixed(subAll(`<file_name>([^<]+_in)</file_name>`, "ghost_input")),
		msg: "refusing workunit: it refers to an input file the project never described", attrs: []string{"file", "ghost_input"}},
	{name: "file given twice with different md5", rewrite: func(r, _ string) string {
		fi := block(r, "file_info")
		evil := regexp.MustCompile(`<md5_cksum>[0-9a-f]+</md5_cksum>`).ReplaceAllString(fi, "<md5_cksum>00000000000000000000000000000000</md5_cksum>")
		return strings.Replace(r, fi, fi+"\n"+evil, 1)
	}, failErr: []string{"file_info #", "given twice with different contents"}},
	{name: "held app file redefined", rewrite: fixed(sub(`\.sh</name>[\s\S]*?<md5_cksum>([0-9a-f]+)</md5_cksum>`, "00000000000000000000000000000000")),
		msg: "refusing file_info: it redefines a file the client holds", attrs: []string{"new_md5", "00000000000000000000000000000000"}, jobRuns: true},
	{name: "file:// download URL", rewrite: fixed(sub(`_in</name>\s*<url>([^<]+)</url>`, "file:///etc/passwd")),
		failErr: []string{"file_info #", `<url> "file:///etc/passwd": scheme "file" is not http or https`}},
	{name: "ftp:// download URL", rewrite: fixed(sub(`\.sh</name>\s*<url>([^<]+)</url>`, "ftp://127.0.0.1/x.sh")),
		failErr: []string{"file_info #", `scheme "ftp" is not http or https`}},
}

// TestHostileReplies runs every attack against a daemon attached to the
// hostile project and an honest one.
func TestHostileReplies(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			outside := t.TempDir() // must stay empty
			var hostileAt time.Time
			var miss error // a rewrite pattern that matched nothing
			var mu sync.Mutex
			rw := onJobReply(2, func(reply string) (out string) {
				defer func() {
					if r := recover(); r != nil {
						e, ok := r.(errNoMatch)
						if !ok {
							panic(r)
						}
						mu.Lock()
						miss = e
						mu.Unlock()
						out = reply
					}
				}()
				mu.Lock()
				hostileAt = time.Now()
				mu.Unlock()
				return tc.rewrite(reply, outside)
			})
			hostile := testsupport.StartProject(t, testproject.Config{TotalJobs: 3, MaxJobsPerRPC: 1,
				Job:    testproject.JobTemplate{InputSize: 64, CommandLine: "--seconds 2"},
				Faults: testproject.Faults{RewriteReply: rw}})
			honest := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
			h := startDaemon(t, hostile, honest)

			// Wait for the verdict on the hostile reply.
			var verdict testsupport.LogRecord
			testsupport.WaitFor(t, testLimit, "the hostile reply to be refused", func() bool {
				mu.Lock()
				sent, missed := hostileAt, miss
				mu.Unlock()
				if missed != nil {
					t.Fatalf("the case never reached the daemon: %v", missed)
				}
				if len(tc.failErr) == 0 && tc.msg == "" {
					// Accepted: the reply was applied.
					for _, r := range h.logs.Find("scheduler request completed", "project", hostile.URL()) {
						if !sent.IsZero() && r.Time().After(sent) {
							verdict = r
							return true
						}
					}
					return false
				}
				if len(tc.failErr) > 0 {
					for _, f := range h.logs.Find("scheduler request failed", "project", hostile.URL()) {
						verdict = f
						return true
					}
					return false
				}
				if rs := h.logs.Find(tc.msg, append([]string{"project", hostile.URL()}, tc.attrs...)...); len(rs) > 0 {
					verdict = rs[0]
					return true
				}
				return false
			})
			mu.Lock()
			took := verdict.Time().Sub(hostileAt)
			mu.Unlock()
			t.Logf("verdict after %s: %s %s", took.Round(time.Millisecond), verdict.Str("msg"), verdict.Str("err"))
			for _, want := range tc.failErr {
				if !strings.Contains(verdict.Str("err"), want) {
					t.Errorf("refusal %q does not mention %q", verdict.Str("err"), want)
				}
			}
			if lvl := verdict.Str("level"); (lvl != "WARN" && lvl != "ERROR") != (len(tc.failErr) == 0 && tc.msg == "") {
				t.Errorf("verdict logged at level %s", lvl)
			}

			// The honest project is unaffected; the hostile project's
			// earlier task is computed and reported, and so is its job
			// after the hostile reply.
			checkHealthy(t, honest, healthyJobs, testLimit)
			if n := len(h.logs.Find("scheduler request failed", "project", honest.URL())); n != 0 {
				t.Errorf("the honest project had %d scheduler failures", n)
			}
			st := hostile.Stats()
			want := []int{0, 2}
			switch {
			case tc.queueFull:
				want = []int{0, 1}
			case tc.jobRuns:
				want = []int{0, 1, 2}
			}
			testsupport.WaitFor(t, testLimit, "the hostile project's good jobs to be reported", func() bool {
				st = hostile.Stats()
				if len(st.Sent) <= want[len(want)-1] {
					return false
				}
				for _, i := range want {
					if st.Reported[st.Sent[i]] == 0 {
						return false
					}
				}
				return true
			})
			for _, i := range want {
				if rr := st.ReportedResults[st.Sent[i]]; rr.State != 5 || rr.ExitStatus != 0 {
					t.Errorf("hostile project's job %s reported with state %d exit %d", st.Sent[i], rr.State, rr.ExitStatus)
				}
			}
			if !tc.jobRuns {
				if st.Reported[st.Sent[1]] != 0 {
					t.Errorf("the job of the hostile reply, %s, was reported", st.Sent[1])
				}
				for _, task := range h.snapshot().Tasks {
					if task.Name == st.Sent[1] || strings.Contains(task.Name, "evil") {
						t.Errorf("the daemon holds task %s of the hostile reply", task.Name)
					}
				}
			}
			for _, task := range h.snapshot().Tasks {
				if math.IsNaN(task.RemainingSecs) || math.IsInf(task.RemainingSecs, 0) {
					t.Errorf("task %s has a NaN remaining estimate", task.Name)
				}
			}
			if got := filesNamed(t, h.root, "evil", "ghost"); len(got) > 0 {
				t.Errorf("files with hostile names exist: %q", got)
			}
			if ents, err := os.ReadDir(outside); err != nil || len(ents) > 0 {
				t.Errorf("the directory outside the data dir has %v (err %v)", ents, err)
			}
		})
	}
}

// TestHostileMasterPage: a master page naming only file:// and other
// non-web scheduler URLs is refused with the URLs named; once the page
// is fixed the project works, and the honest project never stops.
func TestHostileMasterPage(t *testing.T) {
	t.Parallel()
	evil := func(page []byte) []byte {
		return []byte(`<html><link rel="boinc_scheduler" href="file:///etc/passwd">` +
			`<scheduler>gopher://127.0.0.1/cgi</scheduler><scheduler>javascript:alert(1)</scheduler></html>`)
	}
	hostile := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Faults: testproject.Faults{RewriteMaster: evil}})
	honest := testsupport.StartProject(t, testproject.Config{TotalJobs: healthyJobs})
	h := startDaemon(t, hostile, honest)

	testsupport.WaitFor(t, testLimit, "the master page to be refused", func() bool {
		return len(h.logs.Find("the project's master page names no usable scheduler URL", "project", hostile.URL())) > 0
	})
	for _, u := range []string{"file:///etc/passwd", "gopher://127.0.0.1/cgi", "javascript:alert(1)"} {
		rs := h.logs.Find("refusing a scheduler URL from the master page", "project", hostile.URL(), "url", u)
		if len(rs) == 0 || !strings.Contains(rs[0].Str("err"), "is not http or https") {
			t.Errorf("no refusal naming %s: %v", u, rs)
		}
	}
	checkHealthy(t, honest, healthyJobs, testLimit)
	if n := len(h.logs.Find("sending scheduler request", "project", hostile.URL())); n != 0 {
		t.Errorf("%d scheduler requests went to the hostile project", n)
	}
	hostile.SetFaults(testproject.Faults{})
	checkHealthy(t, hostile, 1, testLimit)
}
