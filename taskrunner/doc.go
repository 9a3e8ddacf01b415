// Package taskrunner runs BOINC tasks as real processes: it sets up slot
// directories exactly as the C++ client does (soft-link files,
// init_data.xml, boinc_mmap_file), starts the app in its own process
// group at low priority, talks to BOINC-API apps through the shared-memory
// channels of package boincapi (heartbeat, app_status, suspend, resume,
// quit, abort), suspends plain programs with SIGSTOP, and classifies every
// exit (success with outputs checked and moved, error, temporary exit,
// restart, aborted) into an Event for the daemon.
//
// The daemon owns all state in one goroutine; the Runner owns the child
// processes and one goroutine per process that waits for it. The Runner
// never modifies the boinc values it is given: it copies what it needs.
//
// Platforms: Linux is the reference (process groups, Pdeathsig, waitid
// WNOWAIT so a group is never killed after its id could be reused, /proc
// for CPU time, working set and orphan detection). Other Unix systems get
// the same process handling but no per-group CPU/RSS sampling and no
// orphan detection. On Windows there are no process groups and no Job
// Objects here: Kill, Quit and StopAll end only the main process
// (Process.Kill), so children an app spawns itself can survive it; plain
// programs are suspended with NtSuspendProcess; KillOrphan identifies an
// orphan by its executable lying under the data directory's projects/.
package taskrunner
