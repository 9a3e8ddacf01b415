package eventlog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Attrs are a record's attributes (With ones included) by key, group keys
// joined by '.'; the project attribute is not among them.
type Attrs map[string]slog.Value

// Str is the attribute's text, "" when absent.
func (a Attrs) Str(key string) string {
	v, ok := a[key]
	if !ok {
		return ""
	}
	return v.String()
}

// Int is the attribute as an integer, 0 when absent or not a number.
func (a Attrs) Int(key string) int64 {
	v, ok := a[key]
	if !ok {
		return 0
	}
	switch v.Kind() {
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return int64(v.Uint64())
	case slog.KindFloat64:
		return int64(v.Float64())
	}
	n, _ := strconv.ParseInt(v.String(), 10, 64)
	return n
}

// Float is the attribute as a number, 0 when absent or not a number.
func (a Attrs) Float(key string) float64 {
	v, ok := a[key]
	if !ok {
		return 0
	}
	switch v.Kind() {
	case slog.KindFloat64:
		return v.Float64()
	case slog.KindInt64:
		return float64(v.Int64())
	case slog.KindUint64:
		return float64(v.Uint64())
	}
	f, _ := strconv.ParseFloat(v.String(), 64)
	return f
}

// List is a []string attribute (slog.Any), nil when absent.
func (a Attrs) List(key string) []string {
	v, ok := a[key]
	if !ok {
		return nil
	}
	if l, ok := v.Any().([]string); ok {
		return l
	}
	if s := v.String(); s != "" {
		return []string{s}
	}
	return nil
}

// Format is how the event log shows the records of one slog message.
type Format struct {
	// Lines renders a record as the C++ client's event log lines; none
	// keeps the record out of the event log (the journal still has it):
	// for records another one already tells the user about.
	Lines func(a Attrs) []string
	// Priority replaces the one the record's level gives, when not 0.
	Priority int
}

// line is a Format of one line built with fmt from string attributes.
func line(format string, keys ...string) Format {
	return Format{Lines: func(a Attrs) []string {
		args := make([]any, len(keys))
		for i, k := range keys {
			args[i] = a.Str(k)
		}
		return []string{fmt.Sprintf(format, args...)}
	}}
}

// errLine is a Format of one line with the record's "err" attribute in
// the C++ client's words for the common network failures (libcurl's
// error texts), after the string attribute key when key is not "".
func errLine(format, key string) Format {
	return Format{Lines: func(a Attrs) []string {
		args := []any{}
		if key != "" {
			args = append(args, a.Str(key))
		}
		return []string{fmt.Sprintf(format, append(args, errText(a["err"]))...)}
	}}
}

// errText is an error as libcurl words the common network failures
// ("Couldn't connect to server"), which volunteers and forum advice
// know; other errors read as they are. The journal keeps the full error.
func errText(v slog.Value) string {
	err, ok := v.Any().(error)
	if !ok {
		return v.String()
	}
	var dns *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "Couldn't connect to server"
	case errors.As(err, &dns):
		return "Couldn't resolve host name"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return "Timeout was reached"
	}
	return err.Error()
}

// journalOnly keeps a record out of the event log.
func journalOnly() Format { return Format{Lines: func(Attrs) []string { return nil }} }

// info is f shown as an info line whatever the record's level.
func info(f Format) Format {
	f.Priority = PriorityInfo
	return f
}

// cppFormats is the table of boincd's slog messages whose events the C++
// client's event log also shows, with its wording (client 7.20.5, checked
// against its log: testdata/boinc-7.20 and runs against the
// in-repo test project). Keys are the daemon's slog messages; a daemon
// test checks that each is still logged somewhere.
func cppFormats() map[string]Format {
	return map[string]Format{
		// Start-up and shutdown.
		"boincd starting": {Lines: func(a Attrs) []string {
			return []string{
				fmt.Sprintf("Starting BOINC client version %s for %s (boincd)", a.Str("version"), a.Str("platform")),
				"Data directory: " + a.Str("data_dir"),
			}
		}},
		"created a new state file": line("Creating new client state file"),
		"host":                     {Lines: hostLines},
		"no NVIDIA GPU":            line("No usable GPUs found"),
		"boincd started": {Lines: func(a Attrs) []string {
			if a.Int("projects") == 0 {
				return []string{"This computer is not attached to any projects"}
			}
			return nil
		}},
		"boincd stopped; running tasks will resume from their checkpoints": line("Exiting"),
		"GUI RPC listening":      journalOnly(), // the C++ client says nothing of it
		"app_config.xml read":    line("Found app_config.xml"),
		"running CPU benchmarks": line("Running CPU benchmarks"),
		"CPU benchmarks done":    {Lines: benchmarkLines},

		// Suspension: the transitions of what is suspended, whatever
		// the cause (run modes, host conditions); the causes' own
		// records are for the journal.
		"computing suspended":                   line("Suspending computation - %s", "reason"),
		"computing resumed":                     line("Resuming computation"),
		"GPU suspended":                         line("Suspending GPU computation - %s", "reason"),
		"GPU resumed":                           line("Resuming GPU computation"),
		"network suspended":                     line("Suspending network activity - %s", "reason"),
		"network resumed":                       line("Resuming network activity"),
		"mode changed":                          journalOnly(),
		"suspending by host conditions":         journalOnly(),
		"host conditions allow computing again": journalOnly(),

		// Projects.
		"attached to project":                               line("Attached to project"),
		"detached from project":                             line("Detaching from project"),
		"project reset by user: tasks and files removed":    line("Resetting project"),
		"project suspended by user":                         line("project suspended by user"),
		"project resumed by user":                           line("project resumed by user"),
		"project won't get new tasks (set by user)":         line("work fetch suspended by user"),
		"project may get new tasks again (set by user)":     line("work fetch resumed by user"),
		"project will be detached when its tasks are done":  line("detach when done set by user"),
		"project won't be detached when done (set by user)": line("detach when done cleared by user"),
		"update requested by user":                          line("update requested by user"),
		// The Add Project wizard's web RPCs (daemon/account.go): the
		// C++ client tells of the configuration fetch only.
		"project web RPC: sending request": {Lines: func(a Attrs) []string {
			if a.Str("op") == "get_project_config" {
				return []string{"Fetching configuration file from " + a.Str("url")}
			}
			return nil
		}},
		"project web RPC done": journalOnly(),

		// Scheduler requests.
		"fetching master page to find the scheduler": line("Fetching scheduler list"),
		"found scheduler":                   line("Master file download succeeded"),
		"requesting work":                   journalOnly(), // "sending scheduler request" says it
		"sending scheduler request":         {Lines: schedulerRequestLines},
		"scheduler request completed":       {Lines: schedulerReplyLines},
		"message from server":               line("%s", "text"),
		"result acknowledged by the server": journalOnly(),
		"scheduler request failed":          info(errLine("Scheduler request failed: %s", "")),

		// File transfers.
		"started download":                       line("Started download of %s", "file"),
		"finished download":                      line("Finished download of %s", "file"),
		"started upload":                         line("Started upload of %s", "file"),
		"finished upload":                        line("Finished upload of %s", "file"),
		"task files downloaded; ready to run":    journalOnly(),
		"task outputs uploaded; ready to report": journalOnly(),
		"download failed; will retry":            info(errLine("Temporarily failed download of %s: %s", "file")),
		"upload failed; will retry":              info(errLine("Temporarily failed upload of %s: %s", "file")),
		"download failed permanently":            info(errLine("Giving up on download of %s: %s", "file")),
		"upload failed permanently":              info(errLine("Giving up on upload of %s: %s", "file")),

		// Tasks.
		"task started":           line("Starting task %s", "task"),
		"task restarted":         line("Restarting task %s", "task"),
		"computation finished":   line("Computation for task %s finished", "task"),
		"computation error":      info(line("Computation for task %s finished", "task")),
		"task suspended by user": line("task %s suspended by user", "task"),
		"task resumed by user":   line("task %s resumed by user", "task"),
		// The C++ client shows preemption only with its cpu_sched flag.
		"task resumed":                        journalOnly(),
		"task preempted: suspended in memory": journalOnly(),
		"task preempted: asked to quit; it resumes from its checkpoint": journalOnly(),
		"task aborted": {Lines: func(a Attrs) []string {
			if a.Str("reason") == AbortedByUser {
				return []string{fmt.Sprintf("task %s aborted by user", a.Str("task"))}
			}
			return []string{fmt.Sprintf("Aborting task %s: %s", a.Str("task"), a.Str("reason"))}
		}},
	}
}

// Messages are the slog messages the event log words as the C++ client
// does, sorted.
func Messages() []string {
	return slices.Sorted(maps.Keys(cppFormats()))
}

// AbortedByUser is the reason of a task aborted over GUI RPC; the C++
// client words that abort differently from the others.
const AbortedByUser = "aborted by user"

// schedulerRequestLines are the C++ client's lines for one scheduler
// request (SCHEDULER_OP::init_op_project): why, what is reported, what
// is asked for.
func schedulerRequestLines(a Attrs) []string {
	out := []string{fmt.Sprintf("Sending scheduler request: %s.", a.Str("reason"))}
	if n := a.Int("reporting"); n > 0 {
		out = append(out, fmt.Sprintf("Reporting %d completed tasks", n))
	}
	if rsc := a.List("requesting"); len(rsc) > 0 {
		out = append(out, "Requesting new tasks for "+strings.Join(rsc, " and "))
	} else if why := a.Str("not_requesting"); why != "" {
		out = append(out, "Not requesting tasks: "+why)
	}
	return out
}

// schedulerReplyLines are the C++ client's lines for a scheduler reply
// (CLIENT_STATE::handle_scheduler_reply).
func schedulerReplyLines(a Attrs) []string {
	out := []string{fmt.Sprintf("Scheduler request completed: got %d new tasks", a.Int("new_tasks"))}
	if d := a.Float("request_delay_s"); d > 0 {
		out = append(out, fmt.Sprintf("Project requested delay of %.0f seconds", d))
	}
	return out
}

// hostLines are the C++ client's start-up lines about the host
// (CLIENT_STATE::show_host_info).
func hostLines(a Attrs) []string {
	tz := a.Int("utc_offset_s") / 3600
	sign := "+"
	if tz < 0 {
		sign = ""
	}
	out := []string{
		"Host name: " + a.Str("host_name"),
		fmt.Sprintf("Processor: %d %s %s", a.Int("cpus"), a.Str("cpu_vendor"), a.Str("cpu_model")),
	}
	if f := a.Str("cpu_features"); f != "" {
		out = append(out, "Processor features: "+f)
	}
	return append(out,
		fmt.Sprintf("OS: %s: %s", a.Str("os_name"), a.Str("os_version")),
		fmt.Sprintf("Memory: %s physical, %s virtual", bytesText(a.Float("memory_bytes")), bytesText(a.Float("swap_bytes"))),
		fmt.Sprintf("Disk: %s total, %s free", bytesText(a.Float("disk_total_bytes")), bytesText(a.Float("disk_free_bytes"))),
		fmt.Sprintf("Local time is UTC %s%d hours", sign, tz),
	)
}

// benchmarkLines are the C++ client's lines after the CPU benchmarks.
func benchmarkLines(a Attrs) []string {
	out := []string{"Benchmark results:"}
	if n := a.Int("cpus"); n > 0 {
		out = append(out, fmt.Sprintf("   Number of CPUs: %d", n))
	}
	return append(out,
		fmt.Sprintf("   %.0f floating point MIPS (Whetstone) per CPU", a.Float("fpops_per_cpu")/1e6),
		fmt.Sprintf("   %.0f integer MIPS (Dhrystone) per CPU", a.Float("iops_per_cpu")/1e6),
	)
}

// bytesText is the C++ client's nbytes_to_string: binary units, two
// decimals.
func bytesText(n float64) string {
	const (
		kib = 1024.0
		mib = kib * 1024
		gib = mib * 1024
		tib = gib * 1024
	)
	switch {
	case n >= tib:
		return fmt.Sprintf("%.2f TB", n/tib)
	case n >= gib:
		return fmt.Sprintf("%.2f GB", n/gib)
	case n >= mib:
		return fmt.Sprintf("%.2f MB", n/mib)
	case n >= kib:
		return fmt.Sprintf("%.2f KB", n/kib)
	}
	return fmt.Sprintf("%.0f bytes", n)
}
