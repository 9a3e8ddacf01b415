//go:build unix

package e2e

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
)

// TestReportedJobsInGUI: once tasks were reported, boinccmd shows the
// project's jobs succeeded, and get_statistics (which boinccmd has no
// command for; BOINC Manager graphs it) has a daily_statistics row, each
// element on its own line as the C++ client writes it.
func TestReportedJobsInGUI(t *testing.T) {
	boinccmdPath(t)
	t.Parallel()
	dir := newDataDir(t)
	p := startProject(t, testproject.Config{Name: "statistics e2e", TotalJobs: 2,
		Job: testproject.JobTemplate{CommandLine: "--seconds 1", InputSize: 1000, ReportImmediately: true}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	_, c := guiDaemon(t, "daemon", dir, childOptions{MaxReportDelay: time.Second})

	succeeded := regexp.MustCompile(`jobs succeeded: (\d+)`)
	if !c.until("two jobs succeeded", 90*time.Second, func(out string) bool {
		m := succeeded.FindStringSubmatch(out)
		if m == nil {
			return false
		}
		n, _ := strconv.Atoi(m[1])
		return n == 2 && strings.Contains(out, "jobs failed: 0")
	}, "--get_project_status") {
		t.FailNow()
	}
	out := c.run("--get_project_status")
	if m := regexp.MustCompile(`elapsed time: ([0-9.]+)`).FindStringSubmatch(out); m == nil || m[1] == "0.000000" {
		t.Errorf("--get_project_status shows no elapsed time for the reported jobs:\n%s", out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cl, err := client.Dial(ctx, c.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Authorize(ctx, c.pass); err != nil {
		t.Fatal(err)
	}
	body, err := cl.Call(ctx, "<get_statistics/>")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`\n<project_statistics>\n    <master_url>` + regexp.QuoteMeta(p.URL()) + `</master_url>\n` +
		`    <daily_statistics>\n        <day>\d+\.000000</day>\n        <user_total_credit>[0-9.]+</user_total_credit>\n`)
	if !row.Match(body) {
		t.Errorf("get_statistics has no daily_statistics row for %s:\n%s", p.URL(), body)
	}
	body, err = cl.Call(ctx, "<get_daily_xfer_history/>")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<dx>\n   <when>\d+</when>\n   <up>[1-9][0-9.]*</up>\n`).Match(body) {
		t.Errorf("get_daily_xfer_history shows no upload after the outputs were uploaded:\n%s", body)
	}
}
