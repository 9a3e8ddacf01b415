package workfetch

// RscSim is the round-robin simulation's verdict for one resource type.
type RscSim struct {
	// Shortfall: idle instance-seconds within [now, now+BufMin+BufAdditional].
	Shortfall float64
	// NIdleNow: instances with nothing to run right now.
	NIdleNow float64
	// SaturatedTime: seconds from now until the first instance goes idle.
	SaturatedTime float64
	// BusyTime: how long the jobs projected to miss their deadlines keep
	// the least busy instance busy, 0 when none miss: BOINC's busy-time
	// estimator, sent as <estimated_delay> (a server adds it to a job's
	// run time to check the job's deadline).
	BusyTime float64
	// DeadlineMissedInstances: instances used by jobs projected to miss
	// their deadline.
	DeadlineMissedInstances float64
}

// ProjSim is the simulation's verdict for one project.
type ProjSim struct {
	NRunnable       [NumRsc]int     // runnable (or soon runnable) jobs per resource
	NUsed           [NumRsc]float64 // instances its queued jobs would use at once
	DeadlinesMissed [NumRsc]int     // jobs projected to miss their deadline
	Queue           [NumRsc]float64 // queued instance-seconds
	// Latency is the shortest latency bound (deadline − received) of the
	// project's jobs per resource, JobWall the longest wall time one of
	// them takes (Estimate over availability); 0 when unknown.
	Latency, JobWall [NumRsc]float64
	// Deferred: at some point of the simulation a job of the project
	// could not run on that resource, though an instance was free,
	// because its app or the project had its max_concurrent of jobs
	// running (the C++ client's has_deferred_job). Work fetch does not
	// ask the project for that resource.
	Deferred [NumRsc]bool
}

// SimResult is the output of Simulate. Its slices are reused between
// calls so a steady daemon allocates nothing per pass.
type SimResult struct {
	Rsc            [NumRsc]RscSim
	Projects       []ProjSim
	MissesDeadline []bool // per job, same order as the input

	scratch *simScratch // Simulate's working memory, reused
}

// Request is what to ask one project for.
type Request struct {
	Project   int // index; -1 = ask nobody
	Secs      [NumRsc]float64
	Instances [NumRsc]float64
	// Reason names the rule that chose it, e.g. "NVIDIA has an idle
	// instance", "CPU major shortfall".
	Reason string
}

// WorkReqSeconds is the legacy single figure old servers read: the
// largest request over resources.
func (r Request) WorkReqSeconds() float64 {
	m := 0.0
	for _, s := range r.Secs {
		m = max(m, s)
	}
	return m
}

// NotFetching explains, per project and resource, why no work is asked.
type NotFetching struct {
	Project int
	Rsc     Rsc
	Why     string
}

// Decision is the result of a work-fetch pass.
type Decision struct {
	Request Request
	// NotFetching lists a reason for every (project, resource) the host
	// has that is not part of the request.
	NotFetching []NotFetching
}

// Policy ranks projects for the CPU/GPU schedule and for work fetch:
// higher priority goes first. The default ranks by overall long-term debt;
// the emulator plugs alternatives (such as the C++ client's REC) to
// compare them.
type Policy interface {
	Name() string
	// Priorities fills out (len(projects)) and returns it.
	Priorities(projects []Project, h Host, sim *SimResult, out []float64) []float64
}
