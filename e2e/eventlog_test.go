//go:build unix

package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// evLine is one line of boinccmd --get_messages: "SEQNO: TIME (PRI)
// [PROJECT] BODY".
type evLine struct {
	pri, project, body string
}

var evLineRE = regexp.MustCompile(`^\d+: \d\d-\w{3}-\d{4} \d\d:\d\d:\d\d \(([^)]*)\) \[([^\]]*)\] (.*)$`)

func parseMessages(out string) []evLine {
	var lines []evLine
	for _, l := range strings.Split(out, "\n") {
		if m := evLineRE.FindStringSubmatch(l); m != nil {
			lines = append(lines, evLine{pri: m[1], project: m[2], body: m[3]})
		}
	}
	return lines
}

// TestEventLogReadsLikeCPPClient runs a task through the test project and
// reads the event log with the real boinccmd: the common events are in
// the C++ client's words (client 7.20.5, as in its captured log), under
// the project's name, each once, in the C++ client's order.
func TestEventLogReadsLikeCPPClient(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	const projName = "event log e2e project"
	p := startProject(t, testproject.Config{Name: projName, TotalJobs: 1,
		Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	d, c := guiDaemon(t, "daemon", dir, childOptions{})

	deadline := time.Now().Add(90 * time.Second)
	for len(p.Stats().Acked) == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	st := p.Stats()
	if len(st.Acked) != 1 || len(st.Sent) != 1 {
		t.Fatalf("the task was not sent, computed, reported and acknowledged in time (sent %v, acked %v):\n%s", st.Sent, st.Acked, d.tail(40))
	}
	task := st.Sent[0]
	out := c.run("--get_messages", "0")
	lines := parseMessages(out)
	if len(lines) == 0 {
		t.Fatalf("no messages parsed from:\n%s", out)
	}

	// The start-up lines, about the client itself (no project).
	for _, want := range []string{
		"Starting BOINC client version 7.20.5 for x86_64-pc-linux-gnu (boincd)",
		"Data directory: " + dir,
	} {
		if !slicesContainsLine(lines, "", want) {
			t.Errorf("no client line %q in:\n%s", want, out)
		}
	}
	for _, prefix := range []string{"Processor: ", "Memory: ", "Disk: ", "OS: "} {
		if !hasPrefixLine(lines, "", prefix) {
			t.Errorf("no client line starting %q in:\n%s", prefix, out)
		}
	}

	// The task's life, in order, each line once, under the project's name.
	type step struct {
		re   *regexp.Regexp
		once bool
	}
	q := regexp.QuoteMeta
	steps := []step{
		{regexp.MustCompile(`^Sending scheduler request: [A-Z][a-z ]+\.$`), false},
		{regexp.MustCompile(`^Requesting new tasks for CPU$`), false},
		{regexp.MustCompile(`^Scheduler request completed: got 1 new tasks$`), true},
		{regexp.MustCompile(`^Started download of \S+$`), false},
		{regexp.MustCompile(`^Finished download of \S+$`), false},
		{regexp.MustCompile(`^Starting task ` + q(task) + `$`), true},
		{regexp.MustCompile(`^Computation for task ` + q(task) + ` finished$`), true},
		{regexp.MustCompile(`^Started upload of ` + q(task) + `_\S+$`), true},
		{regexp.MustCompile(`^Finished upload of ` + q(task) + `_\S+$`), true},
		{regexp.MustCompile(`^Sending scheduler request: [A-Z][a-z ]+\.$`), false},
		{regexp.MustCompile(`^Reporting 1 completed tasks$`), true},
	}
	at := 0
	for i, s := range steps {
		n := 0
		found := -1
		for j, l := range lines {
			if !s.re.MatchString(l.body) {
				continue
			}
			n++
			if l.project != projName || l.pri != "low" {
				t.Errorf("%q: project %q, priority %q; want %q, low", l.body, l.project, l.pri, projName)
			}
			if found < 0 && j >= at {
				found = j
			}
		}
		if s.once && n != 1 {
			t.Errorf("%s: %d lines, want exactly one", s.re, n)
		}
		if found < 0 {
			t.Fatalf("step %d: no line matching %s after line %d of:\n%s", i, s.re, at, out)
		}
		at = found + 1
	}
	// No event twice: the task runner does not log its own start or exit
	// without the project.
	for _, l := range lines {
		if strings.Contains(strings.ToLower(l.body), "task started") || strings.Contains(strings.ToLower(l.body), "task exited") {
			t.Errorf("a second record of the task's start or exit: %+v", l)
		}
	}
}

func slicesContainsLine(lines []evLine, project, body string) bool {
	for _, l := range lines {
		if l.project == project && l.body == body {
			return true
		}
	}
	return false
}

func hasPrefixLine(lines []evLine, project, prefix string) bool {
	for _, l := range lines {
		if l.project == project && strings.HasPrefix(l.body, prefix) {
			return true
		}
	}
	return false
}
