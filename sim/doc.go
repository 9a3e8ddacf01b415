// Package sim is boincd's client emulator: it drives the very same
// scheduling core the daemon runs (workfetch's round-robin simulation,
// debts, backoffs, estimates and project choice, and taskrunner/schedule)
// with a simulated clock, a simulated host and simulated project servers,
// and measures scheduling quality. It is the Go counterpart of BOINC's
// client emulator (BCE, client/sim.cpp); see sim/README.md for the
// scenario format and /work/shared/reference/SCHEDULING.md §6.
//
// # The loop
//
// The clock advances in steps (step_seconds, default 60); with
// event_driven a step also ends at the first event inside it (a job
// completing, the host going on or off, a reply arriving, a project
// attaching). Each step:
//
//  1. the host's availability process (an alternating renewal process
//     with exponential on and off periods) gives the seconds of the step
//     the host was on; running jobs compute only then, at
//     ncpus × cpu_flops (CPU jobs) or ngpus × relative_speed × cpu_flops
//     (GPU jobs);
//  2. jobs that reach their size finish: deadline met or missed, and the
//     project's DCF is updated (workfetch.UpdateDCF) unless the project
//     says dont_use_dcf; the instance-seconds and peak FLOPs each
//     project used are booked;
//  3. projects whose attach time has come are attached; a pending
//     scheduler reply arrives once its rpc_delay_seconds have passed;
//  4. the Accounter (workfetch.UpdateDebts) books the step's use;
//  5. if the host is on: workfetch.Simulate, the Policy's priorities,
//     the Scheduler (taskrunner/schedule) and the run set applied
//     (preempting the rest); then the Fetcher (workfetch.Choose). If it
//     picks a project whose server is up, the server "replies": for each
//     resource asked for, jobs of its apps for that resource (chosen at
//     random) until the request's seconds and instances are covered,
//     each job's duration judged as the server does (estimated FLOPs /
//     speed / availability) and, with deadline_check, only jobs that can
//     finish within the latency bound after the estimated delay (BCE's
//     plain screen); then workfetch.HandleReply sets the
//     per-resource backoffs. A server that is down makes the RPC fail
//     and the project back off (boinc.ExponentialBackoff, 1 min to 4 h).
//     A reply within the step is scheduled at once.
//
// Job sizes are normal(flops_mean, flops_stddev), truncated at 1% of the
// mean; the server's estimate is flops_mean / estimate_factor. Running
// jobs' remaining time is workfetch.Remaining of that estimate (× DCF)
// and the true progress. Jobs are always runnable and always just
// checkpointed (as in BCE), so preemption loses nothing. Randomness comes
// from PCG streams derived from the seed (one for availability, one for
// backoff jitter, one per project), so a run is reproducible and adding
// a project does not change the others' draws.
//
// # Metrics
//
// With T_on the seconds the host was on, peak = Σ_r instances_r ×
// relative_speed_r × cpu_flops (relative_speed_CPU = 1), U_p the FLOPs
// project p's jobs computed, U = Σ_p U_p, and W the FLOPs of jobs that
// finished after their deadline:
//
//	flops_total     = peak × T_on
//	idle fraction   = max(0, flops_total − U) / flops_total
//	wasted fraction = W / flops_total
//	share violation = Σ_p |U_p − U × share_p/Σ_q share_q| / U   (0 when U = 0)
//	monotony        = X / (1 + X),  X = mean_p(S_p) / (slice × n)
//	RPCs per job    = rpcs / (2 × jobs)
//
// where, for monotony, R_p is the time since project p last had a running
// job (reset to 0 in a step where it ran, else increased by the step's
// on seconds), SS_p = Σ on_secs × R_p², S_p = sqrt(SS_p / T_on), n the
// number of projects and slice the CPU scheduling period. RPCs count
// successful scheduler RPCs (failed ones, to servers that are down, are
// reported apart) and jobs the jobs servers sent.
//
// These are BCE's definitions (SCHEDULING.md §6.2) with three deliberate
// differences, because BCE's own choices are artefacts (§6.4): jobs do
// not compute while the host is off, so flops_total and monotony use
// T_on, not the total time; waste is counted when a job finishes, not
// when it is reported (there is no reporting delay to model); and peak
// FLOPs of a GPU job count only its GPU part (its CPU fraction is not
// booked to the CPU). RPCs per job keeps BCE's factor 2 so numbers
// compare with BCE's.
//
// # Decision points
//
// Policy (workfetch.Policy), Scheduler, Fetcher and Accounter are
// interfaces in Options; the defaults are the core's. Variants (the C++
// client's REC, the 2007 paper's CPU scheduling and work-fetch policies)
// plug in there and by name in PolicyByName, SchedulerByName and
// FetcherByName, without a fork of the loop. A variant that keeps its own
// accounting implements Observer (fed each step's use); a policy whose
// priorities are not in instance-seconds implements Charger (the
// schedule's Input.Charge); one that comes with its own client's work
// fetch implements PairedFetcher (REC and the C++ client's REC-era fetch,
// used when the scenario names no work_fetch).
package sim
