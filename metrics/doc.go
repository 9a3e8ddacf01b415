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
// address unless AllowRemote(true) is given.
package metrics
