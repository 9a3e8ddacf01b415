// Package taskrunner runs BOINC tasks as real processes: it sets up slot
// directories exactly as the C++ client does (soft-link files,
// init_data.xml, boinc_mmap_file), starts the app in its own process
// group at low priority, talks to BOINC-API apps through the shared-memory
// channels of package boincapi (heartbeat, app_status, suspend, resume,
// quit, abort), suspends plain programs with SIGSTOP, and classifies every
// exit (success with outputs checked and moved, error, temporary exit,
// restart, aborted) into an Event for the daemon.
//
// Every task gets the shared memory and heartbeats, and every app's
// app_status is read, as the C++ client does: an app is an API app when
// its version has an api_version or, failing that, once it has written
// app_status (BOINC's wrapper often ships in versions without one). Only
// an app that never wrote status is a plain program, paused by signal and
// whose progress the daemon estimates (Status.ReportsStatus).
//
// The daemon owns all state in one goroutine; the Runner owns the child
// processes and one goroutine per process that waits for it. The Runner
// never modifies the boinc values it is given: it copies what it needs.
//
// Resource limits (TaskSpec.MaxElapsed, MaxMemory, MaxDisk) are checked
// at every Poll, as check_rsc_limits_exceeded does: a task over one is
// aborted as abort_task does it (an API app is sent <abort/> and killed
// only if it is still there Config.QuitGrace, ABORT_TIMEOUT, later; a
// plain program is killed at once), the Poll reports why in
// Status.LimitExceeded, and the exit is an Error with exit status 197,
// 198 or 196. The memory limit applies to the smoothed working set
// (WSSHalfLife), the disk limit to the slot plus outputs, measured every
// Config.DiskCheckInterval. The daemon decides the limits; the runner
// only enforces them.
//
// CPU throttling (SetThrottle, the cpu_usage_limit preference) is a duty
// cycle that Poll drives from the clock it is given: every throttleable
// task is paused and continued through the same path as Suspend and
// Resume, but the throttle's pauses are its own, so it never continues a
// task the daemon suspended. GPU tasks and DontThrottle tasks run freely.
//
// GPU tasks learn their device from init_data.xml (gpu_type,
// gpu_device_num, gpu_opencl_dev_index) and, for apps older than API 7.5,
// from `--device N` arguments, exactly as the C++ client hands them over.
// CUDA_VISIBLE_DEVICES (and its OpenCL counterparts) is deliberately not
// set: it would renumber the devices the app sees, so an app passing its
// device number to CUDA would pick the wrong GPU or none.
//
// Privilege (SetAppPolicy): apps are untrusted code. The daemon decides
// which account they run as; a policy that allows none (root without
// app_user or allow_root_apps, an app_user that cannot be used) makes
// Start fail with ErrRootRefused or ErrAppUser. With an app account
// (Unix), the process gets its uid, primary gid and groups between fork
// and exec, and its HOME, USER and LOGNAME; the slot is chowned to it
// and made 0700; the project files its slot links to are made world
// readable (apps and inputs are public); its outputs are written in the
// slot and copied out by the runner into files the daemon owns. Whatever
// the account, the runner never writes through or reads through a link
// an app planted in its slot (files are replaced, opened O_NOFOLLOW, and
// hard-linked or non-regular files are not read), and the daemon's own
// environment (BOINCD_*, systemd's NOTIFY_SOCKET, credentials) is kept
// from apps. Apps inherit the daemon's umask and resource limits
// (RLIMIT_*): Go cannot set a umask between fork and exec, and a
// process-wide change would race the daemon's own file creation; what an
// app writes is private anyway, as its slot is 0700.
//
// A task's whole process tree dies with the daemon, however the daemon
// ends (kill -9, a crash, the OOM killer). Pdeathsig reaches only the
// process the daemon started, not a wrapper's worker or a script's
// `sleep 240 &`; so on Unix the Runner also starts one task reaper (the
// running binary again, with the argument "boincd-task-reaper", in a
// process group of its own) and tells it, over a pipe, each task's
// process group as the task starts and ends. When the pipe reaches end of
// file the reaper SIGKILLs every group still registered, says so on its
// stderr (the daemon's, so the journal under systemd) and exits. If the
// reaper died too, NewRunner kills whatever still works in a slot
// directory and logs each process ("killed a process left running by a
// previous boincd", with slot, pid, process group, command line and uid).
// A process that made itself a session of its own (setsid) escapes both,
// as it escapes the group kill; cgroups would catch it, but are not
// delegated to the daemon in most containers.
//
// Platforms: Linux is the reference (process groups, Pdeathsig, waitid
// WNOWAIT so a group is never killed after its id could be reused, /proc
// for CPU time, working set and orphan detection). Other Unix systems get
// the same process handling but no per-group CPU/RSS sampling (so no
// memory limit) and no orphan detection. On Windows each task runs in a
// kill-on-close Job Object: Kill, the quit and abort timeouts, StopAll
// and the end of the task terminate the job, so the app's children never
// outlive it, and the job dies with the daemon. os/exec cannot start a
// process suspended, so the process joins its job just after it starts; a
// child it spawns in that instant escapes the job. CPU time and working
// set come from the job, plain programs are suspended with
// NtSuspendProcess on every process of the job, and KillOrphan identifies
// an orphan by its executable lying under the data directory's projects/.
package taskrunner
