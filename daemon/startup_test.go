package daemon

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	guiclient "github.com/boincd/boincd/guirpc/client"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// TestStartupAnswersBeforeBenchmarks: on a first start GUI RPC answers
// while the CPU benchmarks still run, computing is suspended for them,
// the placeholder figures are in force, and no scheduler RPC goes out on
// them (the C++ client's order); once they end, their figures apply and
// the project is asked for work. skip_cpu_benchmarks starts on the
// placeholders at once.
func TestStartupAnswersBeforeBenchmarks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		bench time.Duration // Options.BenchmarkDuration (per kernel)
	}{
		{"first start benchmarks in the background", 2 * time.Second},
		{"skip_cpu_benchmarks", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := testsupport.StartProject(t, testproject.Config{Name: "startup"})
			started := time.Now()
			h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) { o.BenchmarkDuration = tt.bench })
			benchmarking := tt.bench >= 0

			c := dialGUI(t, h)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st, err := c.GetCCStatus(ctx)
			if err != nil {
				t.Fatalf("get_cc_status: %v", err)
			}
			hi, err := c.GetHostInfo(ctx)
			if err != nil {
				t.Fatalf("get_host_info: %v", err)
			}
			answered := time.Since(started)
			if benchmarking {
				// The proof of order: the answers came while the
				// benchmarks were still running.
				if done := h.logs.Find("CPU benchmarks done"); len(done) > 0 {
					t.Fatalf("GUI RPC answered only after the benchmarks (%s after start)", answered)
				}
				if st.TaskSuspendReason != boinc.SuspendBenchmarks {
					t.Errorf("task_suspend_reason %d during benchmarks, want %d", st.TaskSuspendReason, boinc.SuspendBenchmarks)
				}
				if hi.PFpops != 1e9 || hi.PIops != 1e9 || !hi.PCalculated.IsZero() {
					t.Errorf("during the first benchmarks: p_fpops %g p_iops %g p_calculated %v, want the 1e9 placeholders, never calculated", hi.PFpops, hi.PIops, hi.PCalculated)
				}
				if n := srv.Stats().RPCs; n != 0 {
					t.Errorf("%d scheduler RPCs before the first benchmarks ended", n)
				}
				testsupport.WaitFor(t, 30*time.Second, "the benchmarks to end", func() bool { return len(h.logs.Find("CPU benchmarks done")) > 0 })
				if hi, err = c.GetHostInfo(ctx); err != nil {
					t.Fatalf("get_host_info: %v", err)
				}
				if hi.PFpops <= 0 || hi.PFpops == 1e9 || hi.PIops <= 0 || hi.PIops == 1e9 || hi.PCalculated.IsZero() {
					t.Errorf("after the benchmarks: p_fpops %g p_iops %g p_calculated %v, want measured figures", hi.PFpops, hi.PIops, hi.PCalculated)
				}
				if st, err = c.GetCCStatus(ctx); err != nil || st.TaskSuspendReason == boinc.SuspendBenchmarks {
					t.Errorf("after the benchmarks: task_suspend_reason %v (err %v)", st, err)
				}
			} else {
				if len(h.logs.Find("running CPU benchmarks")) > 0 {
					t.Error("benchmarks ran with skip_cpu_benchmarks")
				}
				if hi.PFpops != 1e9 || hi.PCalculated.IsZero() {
					t.Errorf("skip_cpu_benchmarks: p_fpops %g p_calculated %v, want 1e9, set", hi.PFpops, hi.PCalculated)
				}
			}
			testsupport.WaitFor(t, 20*time.Second, "a scheduler RPC", func() bool { return srv.Stats().RPCs > 0 })
			if benchmarking {
				// The request carried the measured figures, not the
				// placeholders.
				if req := string(srv.Stats().LastRequest); strings.Contains(req, "<p_fpops>1000000000") {
					t.Errorf("scheduler request sent the placeholder p_fpops:\n%s", req)
				}
			}
		})
	}
}

// dialGUI connects to the harness daemon's GUI RPC port as soon as it
// listens.
func dialGUI(t *testing.T, h *harness) *guiclient.Client {
	t.Helper()
	var addr string
	testsupport.WaitFor(t, 20*time.Second, "the GUI RPC address", func() bool {
		if rs := h.logs.Find("GUI RPC listening"); len(rs) > 0 {
			addr = rs[0].Str("address")
		}
		return addr != ""
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := guiclient.Dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
