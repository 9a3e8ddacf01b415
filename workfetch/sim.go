package workfetch

import (
	"math"
	"slices"
	"time"
)

// Constants of the simulation and the buffer (SCHEDULING §3.1, §7).
const (
	// EstFetchTime is the floor of the low-water mark (WF_EST_FETCH_TIME):
	// a buffer shorter than the time a fetch takes would always run dry.
	EstFetchTime = 180.0
	// idleEps is the idle-instance threshold of the saturation test.
	idleEps = 1e-6
	// maxSimSeconds caps absurd estimates so the simulation stays finite.
	maxSimSeconds = 1e12
	// maxBusyInstances bounds the busy-time estimator's per-instance array.
	maxBusyInstances = 1024
)

// Min is the low-water mark of the work buffer in seconds: BufMin, at
// least EstFetchTime. Fetching starts when a resource is saturated for
// less than this, and a job "misses its deadline" when it finishes later
// than its deadline minus this (the buffer is the assumed disconnection).
func (p Prefs) Min() float64 {
	if !(p.BufMin > EstFetchTime) { // also maps NaN to the floor
		return EstFetchTime
	}
	return p.BufMin
}

// Total is the high-water mark: max(1, Min()+BufAdditional). Shortfall is
// integrated over [now, now+Total()].
func (p Prefs) Total() float64 {
	add := p.BufAdditional
	if !(add > 0) {
		add = 0
	}
	return max(1, p.Min()+add)
}

// availability maps an availability fraction to the rate jobs progress
// at, clamped to [0.01, 1]; zero or unset (and NaN) means "unknown" and
// counts as always available.
func availability(f float64) float64 {
	if !(f > 0) {
		return 1
	}
	return min(1, max(0.01, f))
}

// instances sanitizes an instance count.
func instances(n float64) float64 {
	if !(n > 0) || math.IsInf(n, 0) {
		return 0
	}
	return n
}

// relSpeed is the speed weight of one instance of r; unset counts as a CPU.
func relSpeed(h *Host, r Rsc) float64 {
	if s := h.RelSpeed[r]; s > 0 && !math.IsInf(s, 0) {
		return s
	}
	return 1
}

// sortKey orders one group's jobs by deadline, then input order.
type sortKey struct {
	dl  float64
	idx int32
}

func cmpKey(a, b sortKey) int {
	switch {
	case a.dl < b.dl:
		return -1
	case a.dl > b.dl:
		return 1
	}
	return int(a.idx) - int(b.idx)
}

// simScratch is the simulation's working memory, kept in the SimResult so
// a steady caller allocates nothing per pass. Per job (input index):
type simScratch struct {
	grp    []int32   // (project, resource) group, -1 when not simulated
	dur    []float64 // wall seconds of running left (Remaining / availability)
	full   []float64 // the same at now, for the busy-time estimator
	start  []float64 // when it was last started in the simulation
	finish []float64 // when it finishes if it keeps running
	dl     []float64 // deadline − Min(), relative to now
	usage  []float64 // instances of its resource
	ncpu   []float64 // CPUs a GPU job also uses (0 for CPU jobs)
	next   []int32   // EDF list of its group's not-yet-finished jobs
	prev   []int32
	keys   []sortKey

	// Per group (project × NumRsc + resource):
	gstart  []int32 // counting-sort offsets
	head    []int32 // first unfinished job in EDF order
	pick    []int32 // first unfinished job not running in the simulation
	uniform []bool  // all jobs of the group use the same instances

	// Per project:
	tier  []int8    // 1 with a positive share, 0 for backup projects
	sfrac []float64 // share fraction
	pused []float64 // instances handed out in the current pick
	peff  []float64 // effective priority in the current pick
	ph    []int32   // heap of projects

	active [NumRsc][]int32   // per resource: running jobs, a min-heap on finish
	busy   [NumRsc][]float64 // busy-time estimator, per instance
	nused  [NumRsc]float64   // instances in use (the CPU's includes GPU jobs' CPUs)

	// Parameters of the current run.
	n     [NumRsc]float64
	c     [NumRsc]float64 // priority drop per (instance / share fraction)
	prio  []float64
	nproj int
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Simulate runs the round-robin simulation of the queue: what runs when
// if no more work arrives, and so how much of the buffer window each
// resource would sit idle and which jobs would finish too late.
//
// The model, which is event-driven (no time steps) and linear in the
// number of jobs apart from one sort by deadline:
//
//   - Every job in jobs is simulated, whether Runnable or not: jobs still
//     downloading will be runnable soon, and treating them as queued work
//     keeps their files' download from triggering a fetch of more work.
//     Jobs whose resource the host lacks (Instances 0), or with an invalid
//     Project or Rsc, are left out: they count nowhere.
//   - A job runs at rate CPUAvail (GPUAvail for GPU jobs), clamped to
//     [0.01, 1] (zero means unknown and counts as 1): it needs
//     Remaining/availability wall seconds. A usage of 0 counts as 1
//     instance (BOINC's default avg_ncpus); Remaining is clamped to
//     [0, 1e12].
//   - Each project runs its jobs of a resource in EDF order (deadline,
//     then input order); a zero Deadline means none.
//   - Whenever the set of jobs changes, instances of each resource are
//     handed out, GPU types first, then the CPU, to projects in priority
//     order: a heap on the effective priority
//     prio[p] − RelSpeed[r]·Total()/Instances[r] · used_p/share_p, where
//     used_p is what p already took in this hand-out and share_p its
//     share fraction. Taking its whole share of the resource lowers a
//     project by one buffer window of speed-weighted debt (the units of
//     DebtPolicy), so projects of equal priority split a resource by
//     share, a weighted round-robin, while a project owed more than a
//     window goes first. Projects with zero share come after all others.
//     Unlike the C++ client (SCHEDULING §2.6) the order is this priority,
//     not memory addresses. A resource is full once the instances in use
//     reach Instances; the last job may overshoot it, like BOINC. The
//     CPUs of running GPU jobs count toward the CPU.
//   - The hand-out depends only on which jobs are unfinished, so when a
//     job finishes and its project has a next job of the same usage, that
//     job just takes its place; otherwise the resource (and the CPU, after
//     a GPU type) is handed out again and jobs that lose their instance
//     keep their progress.
//   - A job misses its deadline when its simulated finish is later than
//     Deadline − Min() (SCHEDULING §2.2).
//
// The outputs per resource: Shortfall integrates idle instances over
// [now, now+Total()] (after the last job, all instances are idle);
// NIdleNow is the idle instances at now; SaturatedTime the seconds until
// an instance first goes idle; BusyTime is BOINC's busy-time estimator
// (every simulated job adds its duration to floor(usage) consecutive
// instances from the least busy one; the result is the least busy
// instance) and DeadlineMissedInstances sums the usage of jobs that miss.
// Per project: NRunnable and NUsed (the summed usage of its jobs; GPU
// jobs' CPUs count toward the CPU), Queue (Remaining × usage, computing
// instance-seconds, likewise) and DeadlinesMissed. prio may be shorter
// than projects (missing entries count as 0).
//
// out's slices and scratch are reused; out must not be used by two
// goroutines at once.
func Simulate(now time.Time, h Host, p Prefs, projects []Project, jobs []Job, prio []float64, out *SimResult) {
	if out.scratch == nil {
		out.scratch = &simScratch{}
	}
	out.scratch.run(now, &h, p, projects, jobs, prio, out)
}

func (s *simScratch) run(now time.Time, h *Host, p Prefs, projects []Project, jobs []Job, prio []float64, out *SimResult) {
	P, J := len(projects), len(jobs)
	G := P * NumRsc
	wbmin, wbtot := p.Min(), p.Total()

	out.Rsc = [NumRsc]RscSim{}
	out.Projects = grow(out.Projects, P)
	clear(out.Projects)
	out.MissesDeadline = grow(out.MissesDeadline, J)
	clear(out.MissesDeadline)

	s.grp, s.dur, s.full = grow(s.grp, J), grow(s.dur, J), grow(s.full, J)
	s.start, s.finish, s.dl = grow(s.start, J), grow(s.finish, J), grow(s.dl, J)
	s.usage, s.ncpu = grow(s.usage, J), grow(s.ncpu, J)
	s.next, s.prev = grow(s.next, J), grow(s.prev, J)
	s.gstart = grow(s.gstart, G+1)
	clear(s.gstart)
	s.head, s.pick, s.uniform = grow(s.head, G), grow(s.pick, G), grow(s.uniform, G)
	s.tier, s.sfrac = grow(s.tier, P), grow(s.sfrac, P)
	s.pused, s.peff = grow(s.pused, P), grow(s.peff, P)
	s.prio, s.nproj = prio, P

	for r := range NumRsc {
		s.n[r] = instances(h.Instances[r])
		s.active[r] = s.active[r][:0]
		s.nused[r] = 0
		s.c[r] = 0
		if s.n[r] > 0 {
			s.c[r] = relSpeed(h, Rsc(r)) * wbtot / s.n[r]
		}
		nb := 0
		if s.n[r] > 0 {
			nb = min(maxBusyInstances, max(1, int(s.n[r])))
		}
		s.busy[r] = grow(s.busy[r], nb)
		clear(s.busy[r])
	}

	// Share fractions; if no project has a share, all count equally.
	total := 0.0
	for i := range projects {
		if sh := projects[i].Share; sh > 0 && !math.IsInf(sh, 0) {
			total += sh
		}
	}
	for i := range projects {
		sh := projects[i].Share
		switch {
		case total == 0:
			s.tier[i], s.sfrac[i] = 1, 1/float64(P)
		case sh > 0 && !math.IsInf(sh, 0):
			s.tier[i], s.sfrac[i] = 1, sh/total
		default:
			s.tier[i], s.sfrac[i] = 0, 1/float64(P)
		}
	}

	cpuRate, gpuRate := availability(h.CPUAvail), availability(h.GPUAvail)
	for j := range jobs {
		jb := &jobs[j]
		s.grp[j] = -1
		pi, r := jb.Project, jb.Rsc
		if pi < 0 || pi >= P || r < 0 || int(r) >= NumRsc || s.n[r] == 0 {
			continue
		}
		g := pi*NumRsc + int(r)
		s.grp[j] = int32(g)
		s.gstart[g+1]++

		u := jb.Usage()
		if !(u > 0) || math.IsInf(u, 0) {
			u = 1
		}
		nc := 0.0
		rate := cpuRate
		if r.IsGPU() {
			rate = gpuRate
			if jb.NCPUs > 0 && !math.IsInf(jb.NCPUs, 0) {
				nc = jb.NCPUs
			}
		}
		rem := jb.Remaining
		if !(rem > 0) {
			rem = 0
		}
		rem = min(rem, maxSimSeconds)
		s.usage[j], s.ncpu[j] = u, nc
		s.dur[j] = rem / rate
		s.full[j] = s.dur[j]
		if jb.Deadline.IsZero() {
			s.dl[j] = math.Inf(1)
		} else {
			s.dl[j] = jb.Deadline.Sub(now).Seconds() - wbmin
		}

		ps := &out.Projects[pi]
		ps.NRunnable[r]++
		ps.NUsed[r] += u
		ps.Queue[r] += rem * u
		if nc > 0 {
			ps.NUsed[CPU] += nc
			ps.Queue[CPU] += rem * nc
		}
	}

	// Counting sort by group, then each group by deadline.
	for g := range G {
		s.gstart[g+1] += s.gstart[g]
	}
	n := int(s.gstart[G])
	s.keys = grow(s.keys, n)
	fill := s.pick // borrowed as the fill cursor per group
	copy(fill, s.gstart[:G])
	for j := range jobs {
		if g := s.grp[j]; g >= 0 {
			s.keys[fill[g]] = sortKey{s.dl[j], int32(j)}
			fill[g]++
		}
	}
	for g := range G {
		a, b := s.gstart[g], s.gstart[g+1]
		s.head[g] = -1
		s.uniform[g] = true
		if a == b {
			continue
		}
		seg := s.keys[a:b]
		slices.SortFunc(seg, cmpKey)
		s.head[g] = seg[0].idx
		first := seg[0].idx
		for k, key := range seg {
			j := key.idx
			s.prev[j], s.next[j] = -1, -1
			if k > 0 {
				s.prev[j] = seg[k-1].idx
			}
			if k+1 < len(seg) {
				s.next[j] = seg[k+1].idx
			}
			if s.usage[j] != s.usage[first] || s.ncpu[j] != s.ncpu[first] {
				s.uniform[g] = false
			}
		}
	}

	// Hand out everything at now.
	for r := NumRsc - 1; r >= 0; r-- {
		if s.n[r] > 0 {
			s.handOut(Rsc(r), 0)
		}
	}
	for r := range NumRsc {
		if s.n[r] > 0 {
			out.Rsc[r].NIdleNow = max(0, s.n[r]-s.nused[r])
		}
	}

	var satSet [NumRsc]bool
	t := 0.0
	for {
		rb, tb := -1, math.Inf(1)
		for r := range NumRsc {
			if a := s.active[r]; len(a) > 0 && s.finish[a[0]] < tb {
				rb, tb = r, s.finish[a[0]]
			}
		}
		if rb < 0 {
			break
		}
		s.integrate(out, &satSet, t, tb, wbtot)
		t = tb
		j := s.popActive(Rsc(rb))
		s.complete(out, jobs, j, t)
	}
	// Nothing runs from t on.
	for r := range NumRsc {
		if s.n[r] == 0 {
			continue
		}
		rs := &out.Rsc[r]
		if !satSet[r] {
			rs.SaturatedTime = t
		}
		if t < wbtot {
			rs.Shortfall += s.n[r] * (wbtot - t)
		}
		if len(s.busy[r]) > 0 {
			rs.BusyTime = slices.Min(s.busy[r])
		}
	}
}

// integrate accounts the idle instances of [t0, t1].
func (s *simScratch) integrate(out *SimResult, satSet *[NumRsc]bool, t0, t1, wbtot float64) {
	for r := range NumRsc {
		if s.n[r] == 0 {
			continue
		}
		idle := s.n[r] - s.nused[r]
		if idle <= idleEps {
			continue
		}
		if !satSet[r] {
			satSet[r] = true
			out.Rsc[r].SaturatedTime = t0
		}
		if t0 < wbtot {
			out.Rsc[r].Shortfall += idle * (min(t1, wbtot) - t0)
		}
	}
}

// complete finishes job j at t and lets the next job take its place.
func (s *simScratch) complete(out *SimResult, jobs []Job, j int32, t float64) {
	g := int(s.grp[j])
	pi, r := g/NumRsc, Rsc(g%NumRsc)
	if t > s.dl[j] {
		out.MissesDeadline[j] = true
		out.Projects[pi].DeadlinesMissed[r]++
		out.Rsc[r].DeadlineMissedInstances += s.usage[j]
	}
	s.busyUpdate(r, s.full[j], s.usage[j])
	if r.IsGPU() {
		s.busyUpdate(CPU, s.full[j], s.ncpu[j])
	}

	// Unlink from the group's EDF list.
	if pv := s.prev[j]; pv >= 0 {
		s.next[pv] = s.next[j]
	} else {
		s.head[g] = s.next[j]
	}
	if nx := s.next[j]; nx >= 0 {
		s.prev[nx] = s.prev[j]
	}

	if k := s.pick[g]; k >= 0 && s.uniform[g] {
		// Same jobs, same usage: the hand-out would come out the same.
		s.pick[g] = s.next[k]
		s.startJob(r, k, t)
		return
	}
	s.handOut(r, t)
	if r.IsGPU() {
		s.handOut(CPU, t)
	}
}

func (s *simScratch) busyUpdate(r Rsc, dur, nused float64) {
	b := s.busy[r]
	if len(b) == 0 || nused < 1 {
		return
	}
	best := 0
	for i := 1; i < len(b); i++ {
		if b[i] < b[best] {
			best = i
		}
	}
	k := min(int(nused), len(b))
	for i := range k {
		b[(best+i)%len(b)] += dur
	}
}

// startJob runs job j on resource r from t.
func (s *simScratch) startJob(r Rsc, j int32, t float64) {
	s.start[j] = t
	s.finish[j] = t + s.dur[j]
	a := append(s.active[r], j)
	s.active[r] = a
	s.siftUpActive(a, len(a)-1)
}

// handOut re-assigns resource r's instances at t (see Simulate).
func (s *simScratch) handOut(r Rsc, t float64) {
	a := s.active[r]
	for _, j := range a {
		s.dur[j] = max(0, s.dur[j]-(t-s.start[j]))
	}
	a = a[:0]
	nused := 0.0
	if r == CPU {
		for gr := 1; gr < NumRsc; gr++ {
			for _, j := range s.active[gr] {
				nused += s.ncpu[j]
			}
		}
	}

	ph := s.ph[:0]
	for pi := range s.nproj {
		g := pi*NumRsc + int(r)
		s.pick[g] = s.head[g]
		if s.head[g] >= 0 {
			s.pused[pi] = 0
			s.peff[pi] = s.prioOf(pi)
			ph = append(ph, int32(pi))
		}
	}
	for i := len(ph)/2 - 1; i >= 0; i-- {
		s.siftDownProj(ph, i)
	}
	limit := s.n[r] - 1e-9
	for len(ph) > 0 && nused < limit {
		pi := int(ph[0])
		g := pi*NumRsc + int(r)
		j := s.pick[g]
		s.start[j] = t
		s.finish[j] = t + s.dur[j]
		a = append(a, j)
		nused += s.usage[j]
		s.pused[pi] += s.usage[j]
		s.pick[g] = s.next[j]
		if s.pick[g] < 0 {
			last := len(ph) - 1
			ph[0] = ph[last]
			ph = ph[:last]
		} else {
			s.peff[pi] = s.prioOf(pi) - s.c[r]*s.pused[pi]/s.sfrac[pi]
		}
		if len(ph) > 0 {
			s.siftDownProj(ph, 0)
		}
	}
	s.ph = ph
	for i := len(a)/2 - 1; i >= 0; i-- {
		s.siftDownActive(a, i)
	}
	s.active[r] = a
	// After a GPU type, the CPU's total changes with the GPU jobs' CPUs;
	// callers hand out the CPU next, which recomputes it.
	s.nused[r] = nused
}

func (s *simScratch) prioOf(pi int) float64 {
	if pi < len(s.prio) {
		if v := s.prio[pi]; !math.IsNaN(v) {
			return v
		}
	}
	return 0
}

// projBefore orders the hand-out heap: positive share first, then higher
// effective priority, then lower index.
func (s *simScratch) projBefore(a, b int32) bool {
	if s.tier[a] != s.tier[b] {
		return s.tier[a] > s.tier[b]
	}
	if s.peff[a] != s.peff[b] {
		return s.peff[a] > s.peff[b]
	}
	return a < b
}

func (s *simScratch) siftDownProj(h []int32, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && s.projBefore(h[r], h[l]) {
			m = r
		}
		if !s.projBefore(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (s *simScratch) activeBefore(a, b int32) bool {
	if s.finish[a] != s.finish[b] {
		return s.finish[a] < s.finish[b]
	}
	return a < b
}

func (s *simScratch) siftDownActive(h []int32, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && s.activeBefore(h[r], h[l]) {
			m = r
		}
		if !s.activeBefore(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (s *simScratch) siftUpActive(h []int32, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.activeBefore(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *simScratch) popActive(r Rsc) int32 {
	h := s.active[r]
	j := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	if len(h) > 0 {
		s.siftDownActive(h, 0)
	}
	s.active[r] = h
	return j
}
