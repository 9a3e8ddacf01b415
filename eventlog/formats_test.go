package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestCPPWording renders daemon-style records (message and attributes as
// the daemon logs them) and compares them with the C++ client 7.20.5's
// event log lines for the same events.
func TestCPPWording(t *testing.T) {
	const url = "http://127.0.0.1:18080/"
	type line struct {
		pri  int
		body string
	}
	tests := []struct {
		name  string
		level slog.Level
		msg   string
		attrs []any
		want  []line
	}{
		{"start", slog.LevelInfo, "boincd starting",
			[]any{"version", "7.20.5", "platform", "x86_64-pc-linux-gnu", "data_dir", "/var/lib/boinc-client"},
			[]line{{1, "Starting BOINC client version 7.20.5 for x86_64-pc-linux-gnu (boincd)"}, {1, "Data directory: /var/lib/boinc-client"}}},
		{"host", slog.LevelInfo, "host",
			[]any{"host_name", "vm", "cpus", 2, "cpu_vendor", "GenuineIntel", "cpu_model", "Intel(R) Xeon(R) Processor [Family 6 Model 207 Stepping 2]",
				"cpu_features", "fpu vme", "os_name", "Linux Debian", "os_version", "Debian GNU/Linux 12 (bookworm) [6.18.44|libc 2.36]",
				"memory_bytes", 23.54 * (1 << 30), "swap_bytes", 0.0, "disk_total_bytes", 251.97 * (1 << 30), "disk_free_bytes", 78.91 * (1 << 30), "utc_offset_s", 0},
			[]line{{1, "Host name: vm"},
				{1, "Processor: 2 GenuineIntel Intel(R) Xeon(R) Processor [Family 6 Model 207 Stepping 2]"},
				{1, "Processor features: fpu vme"},
				{1, "OS: Linux Debian: Debian GNU/Linux 12 (bookworm) [6.18.44|libc 2.36]"},
				{1, "Memory: 23.54 GB physical, 0 bytes virtual"},
				{1, "Disk: 251.97 GB total, 78.91 GB free"},
				{1, "Local time is UTC +0 hours"}}},
		{"west of UTC", slog.LevelInfo, "host", []any{"utc_offset_s", -5 * 3600, "memory_bytes", 512.0 * 1024},
			[]line{{1, "Host name: "}, {1, "Processor: 0  "}, {1, "OS: : "}, {1, "Memory: 512.00 KB physical, 0 bytes virtual"},
				{1, "Disk: 0 bytes total, 0 bytes free"}, {1, "Local time is UTC -5 hours"}}},
		{"no projects", slog.LevelInfo, "boincd started", []any{"projects", 0},
			[]line{{1, "This computer is not attached to any projects"}}},
		{"projects: journal only", slog.LevelInfo, "boincd started", []any{"projects", 1}, nil},
		{"fetch", slog.LevelInfo, "sending scheduler request",
			[]any{"reason", "To fetch work", "reporting", 0, "requesting", []string{"CPU"}},
			[]line{{1, "Sending scheduler request: To fetch work."}, {1, "Requesting new tasks for CPU"}}},
		{"report", slog.LevelInfo, "sending scheduler request",
			[]any{"reason", "To report completed tasks", "reporting", 2, "requesting", []string{"CPU", "NVIDIA GPU"}},
			[]line{{1, "Sending scheduler request: To report completed tasks."}, {1, "Reporting 2 completed tasks"},
				{1, "Requesting new tasks for CPU and NVIDIA GPU"}}},
		{"user, no work", slog.LevelInfo, "sending scheduler request",
			[]any{"reason", "Requested by user", "reporting", 1, "not_requesting", `"no new tasks" requested via Manager`},
			[]line{{1, "Sending scheduler request: Requested by user."}, {1, "Reporting 1 completed tasks"},
				{1, `Not requesting tasks: "no new tasks" requested via Manager`}}},
		{"completed", slog.LevelInfo, "scheduler request completed", []any{"new_tasks", 1, "acked", 0},
			[]line{{1, "Scheduler request completed: got 1 new tasks"}}},
		{"completed, delay", slog.LevelInfo, "scheduler request completed", []any{"new_tasks", 0, "acked", 0, "request_delay_s", 5.0},
			[]line{{1, "Scheduler request completed: got 0 new tasks"}, {1, "Project requested delay of 5 seconds"}}},
		{"server message", slog.LevelInfo, "message from server", []any{"text", "No tasks sent"}, []line{{1, "No tasks sent"}}},
		{"server notice", slog.LevelWarn, "message from server", []any{"text", "Your app is old"}, []line{{2, "Your app is old"}}},
		{"ack: journal only", slog.LevelInfo, "result acknowledged by the server", []any{"task", "x"}, nil},
		{"new state file", slog.LevelInfo, "created a new state file", []any{"path", "/d/boincd.db"}, []line{{1, "Creating new client state file"}}},
		{"no GPU", slog.LevelInfo, "no NVIDIA GPU", []any{"reason", "driver not installed"}, []line{{1, "No usable GPUs found"}}},
		{"failed: info, not alert", slog.LevelWarn, "scheduler request failed", []any{"err", errors.New("Couldn't connect to server")},
			[]line{{1, "Scheduler request failed: Couldn't connect to server"}}},
		{"master", slog.LevelInfo, "fetching master page to find the scheduler", nil, []line{{1, "Fetching scheduler list"}}},
		{"master done", slog.LevelInfo, "found scheduler", []any{"url", "http://x/cgi"}, []line{{1, "Master file download succeeded"}}},
		{"download", slog.LevelInfo, "started download", []any{"file", "refwu_1_in", "bytes", 1000},
			[]line{{1, "Started download of refwu_1_in"}}},
		{"downloaded", slog.LevelInfo, "finished download", []any{"file", "refwu_1_in"}, []line{{1, "Finished download of refwu_1_in"}}},
		{"upload", slog.LevelInfo, "started upload", []any{"file", "refwu_1_0_r1_0"}, []line{{1, "Started upload of refwu_1_0_r1_0"}}},
		{"uploaded", slog.LevelInfo, "finished upload", []any{"file", "refwu_1_0_r1_0"}, []line{{1, "Finished upload of refwu_1_0_r1_0"}}},
		{"upload retry", slog.LevelWarn, "upload failed; will retry", []any{"file", "out", "err", "HTTP 500"},
			[]line{{1, "Temporarily failed upload of out: HTTP 500"}}},
		{"download given up", slog.LevelError, "download failed permanently", []any{"file", "in", "err", "HTTP 404"},
			[]line{{1, "Giving up on download of in: HTTP 404"}}},
		{"start", slog.LevelInfo, "task started", []any{"task", "refwu_1_0", "slot", 0, "pid", 42},
			[]line{{1, "Starting task refwu_1_0"}}},
		{"restart", slog.LevelInfo, "task restarted", []any{"task", "refwu_1_0"}, []line{{1, "Restarting task refwu_1_0"}}},
		{"finished", slog.LevelInfo, "computation finished", []any{"task", "refwu_1_0", "elapsed_s", 30.1},
			[]line{{1, "Computation for task refwu_1_0 finished"}}},
		{"error", slog.LevelWarn, "computation error", []any{"task", "refwu_1_0", "exit_status", 1},
			[]line{{1, "Computation for task refwu_1_0 finished"}}},
		{"suspend task", slog.LevelInfo, "task suspended by user", []any{"task", "refwu_2_0"},
			[]line{{1, "task refwu_2_0 suspended by user"}}},
		{"resume task", slog.LevelInfo, "task resumed by user", []any{"task", "refwu_2_0"},
			[]line{{1, "task refwu_2_0 resumed by user"}}},
		{"abort by user", slog.LevelInfo, "task aborted", []any{"task", "refwu_3_0", "reason", AbortedByUser},
			[]line{{1, "task refwu_3_0 aborted by user"}}},
		{"abort by limit", slog.LevelInfo, "task aborted", []any{"task", "refwu_3_0", "reason", "exceeded elapsed time limit 10.00"},
			[]line{{1, "Aborting task refwu_3_0: exceeded elapsed time limit 10.00"}}},
		{"run mode never", slog.LevelInfo, "computing suspended", []any{"reason", "user request"},
			[]line{{1, "Suspending computation - user request"}}},
		{"run mode auto", slog.LevelInfo, "computing resumed", nil, []line{{1, "Resuming computation"}}},
		{"network never", slog.LevelInfo, "network suspended", []any{"reason", "user request"},
			[]line{{1, "Suspending network activity - user request"}}},
		{"network auto", slog.LevelInfo, "network resumed", nil, []line{{1, "Resuming network activity"}}},
		{"gpu never", slog.LevelInfo, "GPU suspended", []any{"reason", "user request"},
			[]line{{1, "Suspending GPU computation - user request"}}},
		{"mode: journal only", slog.LevelInfo, "mode changed", []any{"switch", "run", "mode", 3}, nil},
		{"host conditions: journal only", slog.LevelInfo, "suspending by host conditions", []any{"reasons", "CPU is busy"}, nil},
		{"project suspend", slog.LevelInfo, "project suspended by user", nil, []line{{1, "project suspended by user"}}},
		{"project resume", slog.LevelInfo, "project resumed by user", nil, []line{{1, "project resumed by user"}}},
		{"nomorework", slog.LevelInfo, "project won't get new tasks (set by user)", nil, []line{{1, "work fetch suspended by user"}}},
		{"allowmorework", slog.LevelInfo, "project may get new tasks again (set by user)", nil, []line{{1, "work fetch resumed by user"}}},
		{"detach when done", slog.LevelInfo, "project will be detached when its tasks are done", nil, []line{{1, "detach when done set by user"}}},
		{"dont detach when done", slog.LevelInfo, "project won't be detached when done (set by user)", nil,
			[]line{{1, "detach when done cleared by user"}}},
		{"update", slog.LevelInfo, "update requested by user", nil, []line{{1, "update requested by user"}}},
		{"reset", slog.LevelInfo, "project reset by user: tasks and files removed", nil, []line{{1, "Resetting project"}}},
		{"detach", slog.LevelInfo, "detached from project", nil, []line{{1, "Detaching from project"}}},
		{"benchmarks", slog.LevelInfo, "CPU benchmarks done", []any{"cpus", 2, "fpops_per_cpu", 2818.4e6, "iops_per_cpu", 9207e6},
			[]line{{1, "Benchmark results:"}, {1, "   Number of CPUs: 2"}, {1, "   2818 floating point MIPS (Whetstone) per CPU"}, {1, "   9207 integer MIPS (Dhrystone) per CPU"}}},
		{"preempt: journal only", slog.LevelInfo, "task preempted: suspended in memory", []any{"task", "x"}, nil},
		{"exit", slog.LevelInfo, "boincd stopped; running tasks will resume from their checkpoints", nil, []line{{1, "Exiting"}}},
		// Not in the table: the message, capitalized, and its attributes;
		// an Error is the C++ client's "[error]" line.
		{"other info", slog.LevelInfo, "found the task's files", []any{"task", "refwu_1_0"},
			[]line{{1, "Found the task's files task=refwu_1_0"}}},
		{"other warning", slog.LevelWarn, "cannot clean slot", []any{"slot", 3}, []line{{2, "Cannot clean slot slot=3"}}},
		{"other error", slog.LevelError, "cannot start task", []any{"task", "x", "err", "no such file"},
			[]line{{3, `[error] Cannot start task task=x err="no such file"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var journal bytes.Buffer
			l := New(slog.NewJSONHandler(&journal, nil), 100)
			l.SetProjectNamer(func(string) string { return "Fake Project" })
			slog.New(l).With(slog.String("project", url), slog.String("component", "client")).Log(t.Context(), tc.level, tc.msg, tc.attrs...)
			got := l.Since(0)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d lines, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Body != w.body || g.Priority != w.pri || g.Project != "Fake Project" || g.Seqno != int64(i+1) {
					t.Errorf("line %d: got pri %d seqno %d [%s] %q, want pri %d [Fake Project] %q", i, g.Priority, g.Seqno, g.Project, g.Body, w.pri, w.body)
				}
			}
			// The journal keeps the slog message and the attributes.
			if !strings.Contains(journal.String(), `"msg":"`+tc.msg+`"`) || !strings.Contains(journal.String(), `"project":"`+url+`"`) {
				t.Errorf("journal lacks the message or the project: %s", journal.String())
			}
		})
	}
}

func TestMessagesListsTheTable(t *testing.T) {
	msgs := Messages()
	if len(msgs) != len(cppFormats()) {
		t.Fatalf("Messages() has %d entries, the table %d", len(msgs), len(cppFormats()))
	}
	for i := 1; i < len(msgs); i++ {
		if msgs[i-1] >= msgs[i] {
			t.Fatalf("not sorted at %d: %q, %q", i, msgs[i-1], msgs[i])
		}
	}
}

// Network failures read as libcurl words them in the C++ client's log.
func TestErrText(t *testing.T) {
	refused := fmt.Errorf("scheduler RPC: POST http://x/cgi: %w", &url.Error{Op: "Post", URL: "http://x/cgi",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})
	tests := []struct {
		name string
		v    slog.Value
		want string
	}{
		{"refused", slog.AnyValue(refused), "Couldn't connect to server"},
		{"dns", slog.AnyValue(fmt.Errorf("get: %w", &net.DNSError{Err: "no such host", Name: "x.invalid"})), "Couldn't resolve host name"},
		{"timeout", slog.AnyValue(fmt.Errorf("stalled: %w", context.DeadlineExceeded)), "Timeout was reached"},
		{"other error", slog.AnyValue(errors.New("HTTP 500")), "HTTP 500"},
		{"string", slog.StringValue("upload handler said no"), "upload handler said no"},
	}
	for _, tc := range tests {
		if got := errText(tc.v); got != tc.want {
			t.Errorf("%s: errText = %q, want %q", tc.name, got, tc.want)
		}
	}
	// In a record, the journal keeps the whole error.
	var journal bytes.Buffer
	l := New(slog.NewJSONHandler(&journal, nil), 10)
	slog.New(l).Warn("scheduler request failed", slog.Any("err", refused))
	if got := l.Since(0); len(got) != 1 || got[0].Body != "Scheduler request failed: Couldn't connect to server" || got[0].Priority != PriorityInfo {
		t.Errorf("event log: %+v", got)
	}
	if !strings.Contains(journal.String(), "connection refused") {
		t.Errorf("journal lost the error: %s", journal.String())
	}
}

func TestBytesText(t *testing.T) {
	tests := []struct {
		n    float64
		want string
	}{
		{0, "0 bytes"},
		{1023, "1023 bytes"},
		{1024, "1.00 KB"},
		{1.5 * (1 << 20), "1.50 MB"},
		{25275473510, "23.54 GB"},
		{3 * (1 << 40), "3.00 TB"},
	}
	for _, tc := range tests {
		if got := bytesText(tc.n); got != tc.want {
			t.Errorf("bytesText(%v) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
