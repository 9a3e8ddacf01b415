package daemon

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// With the production intervals (a work-fetch check a minute, reports due
// an hour after completion), a project with a 1 s request_delay that does
// not ask for immediate reports, and sends two jobs per request as real
// servers cap them, gets its first two tasks reported and acknowledged
// within 20 s: the next request follows the end of each request_delay and
// of each task and transfer, as with the C++ client, not the next
// minute's check. The first request asks for a job per idle CPU, so both
// tasks run at once.
func TestReportsFollowTaskEnd(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		MaxJobsPerRPC: 2,
		RequestDelay:  time.Second,
		Job:           testproject.JobTemplate{CommandLine: "--seconds 3", FpopsEst: 3e9},
	})
	start := time.Now()
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) {
		o.PollInterval = time.Second
		o.WorkFetchInterval = 60 * time.Second
		o.RPCBackoffMin = 60 * time.Second
		o.FetchBackoffMin = 600 * time.Second
		o.MaxReportDelay = time.Hour
	})
	// The tasks run 3 s: a second request before they end can only come
	// from the end of the first reply's request_delay.
	testsupport.WaitFor(t, 2500*time.Millisecond, "a request as the 1 s request_delay ends", func() bool {
		return srv.Stats().RPCs >= 2
	})
	testsupport.WaitFor(t, 20*time.Second, "the first two tasks reported and acknowledged", func() bool {
		return h.snapshot().Stats.Acked >= 2
	})
	st := srv.Stats()
	for _, name := range st.Sent[:2] {
		if st.Reported[name] != 1 {
			t.Errorf("%s reported %d times", name, st.Reported[name])
		}
	}
	if len(st.HostIDs) != 1 {
		t.Errorf("hosts %v", st.HostIDs)
	}
	t.Logf("first two tasks reported and acknowledged %.1f s after start; %d RPCs", time.Since(start).Seconds(), st.RPCs)
}

// A task's end frees a CPU, but while its output is still uploading no
// request goes to its project: as with the C++ client (actively_uploading),
// the request that follows the upload asks for work and reports the
// result at once, instead of one request for work seconds before another
// for the report (seen against the real BOINC server, bench/fetchsizes).
func TestWorkFetchWaitsForUpload(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		MaxJobsPerRPC: 2,
		TotalJobs:     4,
		// The tasks (1 s) must end and their uploads start well before
		// the request delay lets the next request go, even on a loaded
		// host under -race; the uploads then outlast the delay.
		RequestDelay: 3 * time.Second,
		Job:          testproject.JobTemplate{CommandLine: "--seconds 1", FpopsEst: 1e9},
		Faults:       testproject.Faults{UploadDelay: 4 * time.Second},
	})
	h := startDaemonIn(t, filepath.Join(t.TempDir(), "data"), projectsConfig(srv), func(o *Options) {
		o.PollInterval = 200 * time.Millisecond
		o.WorkFetchInterval = 60 * time.Second
		o.RPCBackoffMin = 60 * time.Second
		o.FetchBackoffMin = 600 * time.Second
		o.MaxReportDelay = time.Hour
	})
	testsupport.WaitFor(t, 20*time.Second, "a second scheduler request processed", func() bool { return srv.Stats().Processed >= 2 })
	st := srv.Stats()
	if len(st.Sent) < 2 {
		t.Fatalf("first request got %d jobs, want 2", len(st.Sent))
	}
	for _, name := range st.Sent[:2] {
		if st.Reported[name] != 1 {
			t.Errorf("%s reported %d times by the second request, want once: it went out while the upload ran", name, st.Reported[name])
		}
	}
	if len(h.logs.Find("deferring work fetch; upload active")) == 0 {
		t.Error("no \"deferring work fetch; upload active\" in the log")
	}
}
