// Package metrics exports boincd's state to Prometheus.
//
// The daemon keeps all client state in one owner goroutine, so this package
// holds no counters of its own that other code would increment. Instead, at
// each scrape the Collector asks a Source (the daemon) for a Snapshot: plain
// data copied out of the owner loop, including the cumulative totals the
// daemon keeps in its state. The Collector turns that into constant metrics.
// A scrape therefore never sees half-updated state, and a scrape that cannot
// get a snapshot in time exports boincd_scrape_error 1 and nothing stale.
//
// Two rules shape the Snapshot type:
//
//   - Nothing is labelled by task (result) name. Task names are unbounded
//     and short-lived, and a series per task would outlive the task in
//     Prometheus' storage. Tasks are counted by state and resource only.
//   - No secret has a place in it: there is no field for a project's
//     authenticator, the GUI RPC password or any key, and project URLs
//     are stripped of user info, query and fragment before they become
//     label values.
//
// Server serves the metrics over HTTP at /metrics. It is meant to be off
// unless configured, and it refuses to listen anywhere but on a loopback
// address unless AllowRemote(true) is given. At most two scrapes run at
// once; a third gets 503.
//
// The package writes the Prometheus text exposition format 0.0.4 itself
// and imports nothing from Prometheus: github.com/prometheus/client_golang
// pulls protobuf into the binary and registers descriptors and collectors
// in package init whether or not the endpoint is enabled, which cost the
// idle daemon about 2.7 MB of RSS and 3.4 MB of binary. The output is what
// client_golang's registry and expfmt wrote (families sorted by name,
// series by label values, the same escaping and number formatting); the
// tests check it with Prometheus' own parser, writer and linter, which are
// test dependencies only.
//
// Beside the boincd_* metrics, a scrape has the most used series of
// client_golang's Go and process collectors, under the same names and
// types: go_goroutines, go_threads (the threads the Go runtime owns),
// go_info{version}, go_memstats_alloc_bytes, go_memstats_heap_inuse_bytes
// and go_memstats_sys_bytes, read from runtime/metrics (no stop-the-world);
// and, on Linux only, process_cpu_seconds_total,
// process_resident_memory_bytes, process_virtual_memory_bytes,
// process_start_time_seconds, process_open_fds and process_max_fds, read
// from /proc/self and getrlimit. Not exported: go_gc_duration_seconds (it
// needs debug.ReadGCStats), the other go_memstats_* series,
// go_gc_gogc_percent, go_gc_gomemlimit_bytes, go_sched_gomaxprocs_threads,
// process_virtual_memory_max_bytes and process_network_*, and the process
// series on other systems.
package metrics
