package daemon

import (
	"sort"
	"time"
)

// schedJob is what the CPU scheduler needs to know about a runnable task.
type schedJob struct {
	Key      string
	Deadline time.Time
	NCPUs    float64
	Running  bool
}

// scheduleEDF picks the run set: tasks already running keep their CPUs
// (no preemption in this first policy), then the earliest deadlines fill
// what is left. A task wider than the free CPUs still runs when nothing
// else is running, so a multi-threaded job can't starve. Pure and
// deterministic: same input, same output.
func scheduleEDF(jobs []schedJob, ncpus float64) []string {
	sorted := append([]schedJob(nil), jobs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Running != sorted[j].Running {
			return sorted[i].Running
		}
		if !sorted[i].Deadline.Equal(sorted[j].Deadline) {
			return sorted[i].Deadline.Before(sorted[j].Deadline)
		}
		return sorted[i].Key < sorted[j].Key
	})
	var out []string
	used := 0.0
	for _, j := range sorted {
		n := j.NCPUs
		if n <= 0 {
			n = 1
		}
		if used+n > ncpus+1e-9 && used > 0 {
			continue
		}
		used += n
		out = append(out, j.Key)
	}
	return out
}

// cpuWork summarises the CPU queue for the work-fetch decision.
type cpuWork struct {
	// Busy is how long the usable CPUs stay busy with queued work.
	BusySecs float64
	// IdleInstances are CPUs with nothing to run now.
	IdleInstances float64
}

type queuedJob struct {
	RemainingSecs float64
	NCPUs         float64
	Runnable      bool
}

func summarizeQueue(jobs []queuedJob, ncpus int) cpuWork {
	var total, runnableCPUs float64
	for _, j := range jobs {
		n := j.NCPUs
		if n <= 0 {
			n = 1
		}
		total += j.RemainingSecs * n
		if j.Runnable {
			runnableCPUs += n
		}
	}
	w := cpuWork{BusySecs: total / float64(max(ncpus, 1))}
	if idle := float64(ncpus) - runnableCPUs; idle > 0 {
		w.IdleInstances = idle
	}
	return w
}

// workRequest decides how many CPU instance-seconds to ask for: nothing
// while the queue lasts longer than work_buf_min, otherwise enough to fill
// min+additional (BOINC's hysteresis, so RPCs come in bursts, not a
// trickle); always something when a CPU is idle.
func workRequest(w cpuWork, ncpus int, minDays, addDays float64) (secs, instances float64) {
	minSecs := minDays * 86400
	maxSecs := (minDays + addDays) * 86400
	if w.BusySecs >= minSecs && w.IdleInstances == 0 {
		return 0, 0
	}
	secs = (maxSecs - w.BusySecs) * float64(ncpus)
	if secs < 1 {
		secs = 1
	}
	return secs, w.IdleInstances
}
