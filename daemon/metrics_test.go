package daemon

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// The Prometheus endpoint, scraped for real while the daemon computes: task
// states, per-project processing, RPC outcomes, transfers, host facts and
// health; no task names and no account key.
func TestMetricsScrape(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 3", InputSize: 1000},
		TotalJobs: 2,
	})
	cfg := projectsConfig(srv)
	cfg.Metrics.Enabled = true
	cfg.Metrics.Address = "127.0.0.1:0"
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), cfg, nil)

	var addr string
	testsupport.WaitFor(t, 30*time.Second, "the metrics endpoint", func() bool {
		for _, r := range h.logs.Records() {
			if r.Str("msg") == "metrics endpoint listening" {
				addr = "http://" + r.Str("addr") + r.Str("path")
				return true
			}
		}
		return false
	})
	scrape := func() string {
		t.Helper()
		resp, err := http.Get(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %s\n%s", addr, resp.Status, body)
		}
		return string(body)
	}
	value := func(body, series string) float64 {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		return v
	}
	url := srv.URL()
	testsupport.WaitFor(t, 60*time.Second, "both tasks reported and processing booked", func() bool {
		b := scrape()
		return value(b, `boincd_scheduler_rpcs_total{outcome="ok",project="`+url+`",project_name="`+srvName(h, url)+`"}`) >= 1 &&
			strings.Contains(b, "boincd_project_processing_seconds_total") && len(srv.Stats().Acked) == 2
	})
	body := scrape()
	for _, want := range []string{
		`boincd_tasks{resource="CPU",state="running"}`,
		`boincd_health_warning{name="no_gpu_found"} 0`,
		`boincd_host_cpus `,
		`boincd_transfer_bytes_total{direction="down"`,
		`boincd_build_info{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
	if strings.Contains(body, "test-account-key") {
		t.Error("the account key appears in the metrics")
	}
	for _, name := range srv.Stats().Sent {
		if strings.Contains(body, name) {
			t.Errorf("task name %s appears in the metrics", name)
		}
	}
}

// srvName is the project's name as the daemon shows it (the label
// project_name).
func srvName(h *harness, url string) string {
	if p, ok := h.snapshot().project(url); ok {
		return p.Name
	}
	return ""
}
