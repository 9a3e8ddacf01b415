package sim

import (
	"math"
	"sort"
)

// edfScratch is the WS2 server's screen (the BOINC server's
// sched/edf_sim.cpp, run with the queue the request lists): an EDF
// simulation of the host's queue on its instances, each job on one
// instance for its estimated wall time (a job using u instances counts
// as u times as long, as edf_sim assumes single-instance jobs). A
// candidate is admitted only if it finishes by its deadline, every job
// now on time stays on time and no late job gets later.
type edfScratch struct {
	jobs   []edfJob // sorted by deadline, then arrival
	before []float64
	after  []float64
	free   []float64
	dirty  bool // before must be recomputed
}

type edfJob struct {
	dur, deadline float64
}

func (s *edfScratch) reset() {
	s.jobs = s.jobs[:0]
	s.dirty = true
}

// add puts a job of the host's queue in, keeping deadline order (ties
// keep arrival order, so the screen is deterministic).
func (s *edfScratch) add(dur, deadline float64) int {
	i := sort.Search(len(s.jobs), func(i int) bool { return s.jobs[i].deadline > deadline })
	s.jobs = append(s.jobs, edfJob{})
	copy(s.jobs[i+1:], s.jobs[i:])
	s.jobs[i] = edfJob{dur: max(dur, 0), deadline: deadline}
	s.dirty = true
	return i
}

// finishes runs the EDF list schedule on n instances: each job in
// deadline order starts on the instance that frees first.
func (s *edfScratch) finishes(n int, out []float64) []float64 {
	s.free = s.free[:0]
	for range n {
		s.free = append(s.free, 0)
	}
	out = out[:0]
	for _, j := range s.jobs {
		k := 0
		for m := 1; m < n; m++ {
			if s.free[m] < s.free[k] {
				k = m
			}
		}
		s.free[k] += j.dur
		out = append(out, s.free[k])
	}
	return out
}

// admit screens a candidate of estimated wall time dur and deadline
// (seconds from now) for a host with instances instances; an admitted
// candidate joins the queue, so the next candidate of the same reply
// sees it.
func (s *edfScratch) admit(dur, deadline, instances float64) bool {
	n := max(1, int(math.Floor(instances+1e-9)))
	if s.dirty {
		s.before = s.finishes(n, s.before)
		s.dirty = false
	}
	c := s.add(dur, deadline)
	s.after = s.finishes(n, s.after)
	ok := s.after[c] <= deadline+1e-6
	// Walk both schedules side by side, skipping the candidate in after.
	b := 0
	for i, j := range s.jobs {
		if !ok {
			break
		}
		if i == c {
			continue
		}
		was, now := s.before[b], s.after[i]
		b++
		if was <= j.deadline+1e-6 {
			if now > j.deadline+1e-6 {
				ok = false
			}
		} else if now > was+1e-6 {
			ok = false
		}
	}
	if !ok {
		s.jobs = append(s.jobs[:c], s.jobs[c+1:]...)
		return false
	}
	s.dirty = true
	return true
}
