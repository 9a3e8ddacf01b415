package daemon

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// netStatsOf reads the daemon's measured rates on its owner goroutine.
func (h *harness) netStatsOf() boinc.NetStats {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ns boinc.NetStats
	if err := h.d.query(ctx, func() { ns = h.d.netStats }); err != nil {
		h.t.Fatalf("query: %v", err)
	}
	return ns
}

// TestNetStatsMeasuredAndPersisted: the downloads and the upload of a job
// are measured, the next scheduler request carries the rates, and a
// restarted daemon starts from them instead of from nothing.
func TestNetStatsMeasuredAndPersisted(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1})
	dataDir := filepath.Join(t.TempDir(), "data")
	cfg := projectsConfig(srv)
	start := float64(time.Now().UnixNano()) / 1e9
	h := startDaemonIn(t, dataDir, cfg, nil)
	waitAllReported(t, srv, 1, testLimit)
	ns := h.netStatsOf()
	for _, c := range []struct {
		dir string
		n   boinc.NetInfo
	}{{"down", ns.Down}, {"up", ns.Up}} {
		if !(c.n.MaxRate > 0) || !(c.n.AvgRate > 0) || c.n.AvgTime < start {
			t.Errorf("%s: %+v after a job's transfers since %f", c.dir, c.n, start)
		}
	}
	// The report went out after the upload: it carries the rates.
	req := string(srv.Stats().LastRequest)
	for _, want := range []string{
		fmt.Sprintf("<bwup>%f</bwup>", ns.Up.MaxRate),
		fmt.Sprintf("<avg_up>%f</avg_up>", ns.Up.AvgRate),
		fmt.Sprintf("<avg_time_up>%f</avg_time_up>", ns.Up.AvgTime),
		fmt.Sprintf("<bwdown>%f</bwdown>", ns.Down.MaxRate),
		fmt.Sprintf("<avg_down>%f</avg_down>", ns.Down.AvgRate),
		fmt.Sprintf("<avg_time_down>%f</avg_time_down>", ns.Down.AvgTime),
	} {
		if !strings.Contains(req, want) {
			t.Errorf("the last scheduler request lacks %s:\n%s", want, req)
		}
	}
	if err := h.stop(15 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}

	h2 := startDaemonIn(t, dataDir, cfg, nil)
	if got := h2.netStatsOf(); got != ns {
		t.Errorf("after a restart the rates are %+v, want %+v", got, ns)
	}
}
