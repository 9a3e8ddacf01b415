package workfetch

import (
	"math"
	"math/bits"
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

// Sort keys pack a job's deadline, quantized to 1/64 s over ±68 years
// (later ones tie), above its input index, so one group's jobs sort as
// plain integers: EDF, then input order.
const (
	keyIdxBits = 26
	keyDLBits  = 64 - keyIdxBits
	keyDLScale = 64.0
)

func sortKey(dl float64, idx int) uint64 {
	const half = float64(uint64(1) << (keyDLBits - 1))
	q := dl*keyDLScale + half
	switch {
	case !(q > 0): // also NaN
		q = 0
	case q >= 2*half:
		q = 2*half - 1
	}
	return uint64(q)<<keyIdxBits | uint64(idx)
}

// sjob is the simulation's state of one job. It is one cache line (64
// bytes): copying long queues into EDF order is a random access per
// job, and the event loop touches little else. A job's finish is not
// kept: after its last start it is start + dur. Concurrency limits,
// which few queues have, are kept apart (jobLimit).
type sjob struct {
	dur   float64 // wall seconds of running left (Remaining / availability)
	full  float64 // the same at now, for the busy-time estimator
	start float64 // when it was last started in the simulation
	dl    float64 // deadline − Min(), relative to now
	usage float64 // instances of its resource
	ncpu  float64 // CPUs a GPU job also uses (0 for CPU jobs)
	grp   int32   // (project, resource) group, -1 when not simulated
	next  int32   // EDF list of its group's unfinished jobs (in s.edf)
	prev  int32
	orig  int32 // its index in the input (in s.edf)
}

// jobLimit is a job's max_concurrent group (Job.App; 0 when not
// limited) and that group's limit.
type jobLimit struct {
	app, amax int32
}

// running is a running job in a resource's heap of them: its finish
// and input index (the heap's order) next to it.
type running struct {
	finish float64
	orig   int32
	j      int32 // position in simScratch.edf
}

// runBefore orders running jobs by finish, then input order.
func runBefore(a, b *running) bool {
	return runLess(a, b) != 0
}

// runLess is runBefore as 1 or 0, without branches: the (finish, orig)
// pairs compare as 96-bit integers, by the borrow of their difference.
// Finish times are finite and not negative (no −0 either), so their bit
// patterns order like their values.
func runLess(a, b *running) int {
	_, c := bits.Sub64(uint64(uint32(a.orig)), uint64(uint32(b.orig)), 0)
	_, c = bits.Sub64(math.Float64bits(a.finish), math.Float64bits(b.finish), c)
	return int(c)
}

// simScratch is the simulation's working memory, kept in the SimResult so
// a steady caller allocates nothing per pass.
type simScratch struct {
	// jobs is per input job. The simulation works on edf, the simulated
	// jobs copied in the order of keys: each group's jobs in EDF order,
	// one group after the other, so that walking a group's jobs is
	// walking memory. Job numbers below (next, prev, head, pick, active)
	// are positions in edf; orig leads back to the input. Starts and
	// finishes stay in edf: nothing outside the run reads them, and at
	// long queues copying them back costs a cache miss per job.
	jobs []sjob
	edf  []sjob
	// With limits (limited), each job's, per input job and in edf order.
	lim, elim []jobLimit
	keys      []uint64
	// The radix sort's other buffer and its digits' histograms.
	keys2 []uint64
	hist  [maxPasses][1 << maxDigit]int32

	// Per group (project × NumRsc + resource). Only gcnt and gbits are
	// kept for every group: the others are set and read for the groups
	// holding jobs (rgrp) alone, since with many projects most groups
	// are empty.
	gcnt    []int32  // jobs in the group
	gbits   []uint64 // a bit per group holding jobs
	gstart  []int32  // counting-sort offsets: the group's jobs are edf[gstart:gstart+gcnt]
	head    []int32  // first unfinished job in EDF order
	pick    []int32  // first unfinished job not running in the simulation
	uniform []bool   // all jobs of the group use the same instances
	// Per resource: its groups that hold jobs, in ascending order (the
	// hand-out heap is built in that order).
	rgrp [NumRsc][]int32

	pused []float64 // instances handed out in the current hand-out

	// Per project:
	tier  []int8    // 1 with a positive share, 0 for backup projects
	sfrac []float64 // share fraction

	// Per resource: the hand-out's heap of groups still holding jobs that
	// are not running, left as the last hand-out ended so it can go on.
	ph [NumRsc][]handEntry

	// Per resource: running jobs, a min-heap (runBefore). Beyond its
	// length, up to apad (a full binary tree, 2^k − 1), lie sentinels
	// (idle), so that every way down the tree is equally long.
	active [NumRsc][]running
	apad   [NumRsc]int
	// Busy-time estimator, per instance: a min-heap.
	busy  [NumRsc][]float64
	nused [NumRsc]float64 // instances in use (the CPU's includes GPU jobs' CPUs)

	// Parameters of the current run.
	n [NumRsc]float64
	// The resources the host has (n > 0), in ascending order: the event
	// loop looks at these alone at every event.
	rsc   [NumRsc]Rsc
	nrsc  int
	c     [NumRsc]float64 // priority drop per (instance / share fraction)
	prio  []float64
	nproj int

	// Concurrency limits (max_concurrent, project_max_concurrent):
	// running jobs per App number and per project, each project's limit
	// (0: none) and, per project, a bit per resource on which a job was
	// held back by a limit while an instance was free.
	limited  bool // some job or project has a limit
	appCnt   []int32
	projCnt  []int32
	pmax     []int32
	deferred []uint8

	// alwaysFull disables the incremental paths (tests compare the two).
	alwaysFull bool
	// sortPath forces one of sortJobs' ways (tests compare them).
	sortPath uint8
}

// sortJobs' ways: by queue length, a comparison sort per group or a
// radix sort with the group in the key; where the group does not fit,
// a radix sort that looks it up.
const (
	sortAuto uint8 = iota
	sortCompare
	sortRadix
	sortRadixLookup
)

// radixMin is the queue length from which sortJobs sorts by radix: below
// it, sorting each group's keys costs less than the radix passes.
const radixMin = 2048

// cmpJobs orders two job indexes by deadline, then index.
func (s *simScratch) cmpJobs(x, y uint64) int {
	a, b := s.jobs[x].dl, s.jobs[y].dl
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
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
// number of jobs (the sort by deadline is a radix sort for long queues;
// each event costs a few heap steps over the instances):
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
//   - Concurrency limits (app_config.xml; the C++ rr_sim's
//     max_concurrent_exceeded): a job whose app (Job.App, Job.AppMax) or
//     project (Project.MaxConcurrent) already has its limit of jobs
//     running in the simulation, whatever their resource, is passed over
//     in the hand-out while the limit holds, and its project is marked
//     as having a deferred job on its resource (ProjSim.Deferred,
//     has_deferred_job), so work fetch does not ask that project for that
//     resource: no work is fetched that the limits will not let run.
//     Instances left idle by a limit are shortfall like any other. With
//     limits, every completion hands out all resources again (GPU types,
//     then the CPU), as the C++ client's pick_jobs_to_run does, since a
//     finished job may free a limit that jobs of any resource wait on.
//
// The outputs per resource: Shortfall integrates idle instances over
// [now, now+Total()] (after the last job, all instances are idle);
// NIdleNow is the idle instances at now; SaturatedTime the seconds until
// an instance first goes idle; BusyTime is BOINC's busy-time estimator
// (every simulated job that misses its deadline adds its duration to its
// floor(usage) least busy instances; the result is the least busy
// instance) and
// DeadlineMissedInstances sums the usage of jobs that miss.
// Per project: NRunnable and NUsed (the summed usage of its jobs; GPU
// jobs' CPUs count toward the CPU), Queue (Remaining × usage, computing
// instance-seconds, likewise), DeadlinesMissed and Deferred. prio may be shorter
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

	s.jobs = grow(s.jobs, J)
	s.gstart, s.gcnt = grow(s.gstart, G), grow(s.gcnt, G)
	s.gbits = grow(s.gbits, (G+63)/64)
	clear(s.gcnt)
	clear(s.gbits)
	s.head, s.pick, s.uniform = grow(s.head, G), grow(s.pick, G), grow(s.uniform, G)
	s.tier, s.sfrac = grow(s.tier, P), grow(s.sfrac, P)
	s.pused = grow(s.pused, G)
	s.prio, s.nproj = prio, P
	s.setupLimits(projects, jobs)

	s.nrsc = 0
	for r := range NumRsc {
		s.n[r] = instances(h.Instances[r])
		if s.n[r] > 0 {
			s.rsc[s.nrsc] = Rsc(r)
			s.nrsc++
		}
		s.active[r], s.apad[r] = s.active[r][:0], 0
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
	// Per-project and per-job slices resliced to their loops' bounds, so
	// that the loops need no bounds checks.
	tier, sfrac, projSim := s.tier[:P], s.sfrac[:P], out.Projects[:P]
	for i := range projects {
		sh := projects[i].Share
		switch {
		case total == 0:
			tier[i], sfrac[i] = 1, 1/float64(P)
		case sh > 0 && !math.IsInf(sh, 0):
			tier[i], sfrac[i] = 1, sh/total
		default:
			tier[i], sfrac[i] = 0, 1/float64(P)
		}
	}

	cpuRate, gpuRate := availability(h.CPUAvail), availability(h.GPUAvail)
	nowc := newUnixTime(now)
	sjobs := s.jobs[:J]
	for j := range jobs {
		jb, sj := &jobs[j], &sjobs[j]
		sj.grp = -1
		pi, r := jb.Project, jb.Rsc
		if pi < 0 || pi >= P || r < 0 || int(r) >= NumRsc || s.n[r] == 0 {
			continue
		}
		g := pi*NumRsc + int(r)
		sj.grp = int32(g)
		s.gcnt[g]++
		s.gbits[g/64] |= 1 << (g % 64)

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
		sj.usage, sj.ncpu = u, nc
		if s.limited {
			s.lim[j] = jobLimit{}
			if jb.AppMax > 0 && jb.App > 0 && jb.App < len(s.appCnt) {
				s.lim[j] = jobLimit{int32(jb.App), int32(min(jb.AppMax, math.MaxInt32))}
			}
		}
		sj.dur = rem / rate
		sj.full = sj.dur
		if jb.Deadline.IsZero() {
			sj.dl = math.Inf(1)
		} else {
			sj.dl = nowc.secondsTo(jb.Deadline) - wbmin
		}

		ps := &projSim[pi]
		ps.NRunnable[r]++
		ps.NUsed[r] += u
		ps.Queue[r] += rem * u
		if nc > 0 {
			ps.NUsed[CPU] += nc
			ps.Queue[CPU] += rem * nc
		}
		if !jb.Received.IsZero() && !jb.Deadline.IsZero() {
			if l := wallSeconds(jb.Received, jb.Deadline); l > 0 && (ps.Latency[r] == 0 || l < ps.Latency[r]) {
				ps.Latency[r] = l
			}
		}
		if e := min(jb.Estimate, maxSimSeconds); e > 0 {
			ps.JobWall[r] = max(ps.JobWall[r], e/rate)
		}
	}

	// Counting sort by group, then each group by deadline.
	for r := range NumRsc {
		s.rgrp[r] = s.rgrp[r][:0]
	}
	var o int32
	for w, bs := range s.gbits {
		for ; bs != 0; bs &= bs - 1 {
			g := w*64 + bits.TrailingZeros64(bs)
			s.rgrp[g%NumRsc] = append(s.rgrp[g%NumRsc], int32(g))
			s.gstart[g] = o
			o += s.gcnt[g]
		}
	}
	n := int(o)
	idxMask := s.sortJobs(G, J, n)
	s.edf = grow(s.edf, n)
	for r := range NumRsc {
		for _, g := range s.rgrp[r] {
			s.copyGroup(g, idxMask)
		}
	}
	if s.limited {
		s.elim = grow(s.elim, n)
		for k := range s.edf {
			s.elim[k] = s.lim[s.edf[k].orig]
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
		for _, r := range s.rsc[:s.nrsc] {
			if a := s.active[r]; len(a) > 0 && a[0].finish < tb {
				rb, tb = int(r), a[0].finish
			}
		}
		if rb < 0 {
			break
		}
		s.integrate(out, &satSet, t, tb, wbtot)
		t = tb
		s.complete(out, Rsc(rb), t)
	}
	if s.limited {
		for pi := range P {
			for r := range NumRsc {
				out.Projects[pi].Deferred[r] = s.deferred[pi]&(1<<r) != 0
			}
		}
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
			rs.BusyTime = s.busy[r][0]
		}
	}
}

// copyGroup copies group g's jobs to edf in their sorted order (keys),
// linked, and sets the group's head and uniform.
func (s *simScratch) copyGroup(g int32, idxMask uint64) {
	a := s.gstart[g]
	b := a + s.gcnt[g]
	seg := s.keys[a:b]
	s.head[g] = a
	s.uniform[g] = true
	edf := s.edf[a:b]
	first := &s.jobs[seg[0]&idxMask]
	u0, c0 := first.usage, first.ncpu
	for i, key := range seg {
		j := int32(key & idxMask)
		k := a + int32(i)
		e := &edf[i]
		*e = s.jobs[j]
		e.orig, e.prev, e.next = j, k-1, k+1
		if e.usage != u0 || e.ncpu != c0 {
			s.uniform[g] = false
		}
	}
	edf[0].prev, edf[len(edf)-1].next = -1, -1
}

// The radix sort's digits: at most maxPasses of at most maxDigit bits
// cover a deadline key (keyDLBits).
const (
	maxDigit  = 11
	maxPasses = (keyDLBits + maxDigit - 1) / maxDigit
)

// sortJobs fills s.keys with the n simulated jobs' keys in EDF order,
// group after group (s.gstart holds the offsets of the groups that hold
// jobs, s.rgrp lists them), and returns
// the mask that takes a job's input index out of its key.
//
// Short queues (below radixMin) are sorted as packed (deadline, index)
// keys, group by group. Longer ones as packed (group, deadline, index)
// integers sorted by radix
// (least significant digit first, each pass stable): no comparisons, so
// the cost grows linearly with the queue. The index needs no pass (the
// keys start in input order) and the group is the last pass, with the
// offsets counted already; the deadline takes as many passes of at most
// 11 bits as the spread of the deadlines needs (3 for deadlines within
// 3 years). Where the group does not fit in the key it is looked up, and
// queues too long to pack the index are sorted by comparing the jobs.
func (s *simScratch) sortJobs(G, J, n int) uint64 {
	s.keys = grow(s.keys, n)
	if n == 0 {
		return 0
	}
	if J > 1<<keyIdxBits {
		fill := s.pick // borrowed as the fill cursor per group
		copy(fill, s.gstart[:G])
		for j := range J {
			if g := s.jobs[j].grp; g >= 0 {
				s.keys[fill[g]] = uint64(j)
				fill[g]++
			}
		}
		for r := range NumRsc {
			for _, g := range s.rgrp[r] {
				slices.SortFunc(s.keys[s.gstart[g]:s.gstart[g]+s.gcnt[g]], s.cmpJobs)
			}
		}
		return ^uint64(0)
	}

	if s.sortPath == sortCompare || s.sortPath == sortAuto && n < radixMin {
		fill := s.pick
		copy(fill, s.gstart[:G])
		for j := range J {
			if sj := &s.jobs[j]; sj.grp >= 0 {
				s.keys[fill[sj.grp]] = sortKey(sj.dl, j)
				fill[sj.grp]++
			}
		}
		for r := range NumRsc {
			for _, g := range s.rgrp[r] {
				if a, c := s.gstart[g], s.gcnt[g]; c > 1 { // most groups hold 1 job
					slices.Sort(s.keys[a : a+c])
				}
			}
		}
		return 1<<keyIdxBits - 1
	}

	// (Deadline, index) keys in input order, and the deadlines' spread.
	keys := s.keys
	m := 0
	qmin, qmax := ^uint64(0), uint64(0)
	for j := range J {
		if sj := &s.jobs[j]; sj.grp >= 0 {
			k := sortKey(sj.dl, j)
			keys[m] = k
			m++
			q := k >> keyIdxBits
			qmin, qmax = min(qmin, q), max(qmax, q)
		}
	}
	ib := bits.Len(uint(J - 1))
	sb := bits.Len64(qmax - qmin)
	gshift := ib + sb
	withG := gshift+bits.Len(uint(G-1)) <= 64 && s.sortPath != sortRadixLookup
	idxMask := uint64(1)<<ib - 1

	// Digits of the deadline: p passes of w bits (the last digit may
	// take in low bits of the group, which changes no group's order).
	wmax := min(maxDigit, max(4, bits.Len(uint(n))))
	p := min(maxPasses, (sb+wmax-1)/wmax)
	w := 0
	if p > 0 {
		w = (sb + p - 1) / p
	}
	nb := 1 << w
	mask := nb - 1
	for pass := range p {
		clear(s.hist[pass][:nb])
	}
	h0, h1, h2, h3 := &s.hist[0], &s.hist[1], &s.hist[2], &s.hist[3]
	for i, k := range keys {
		j := k & (1<<keyIdxBits - 1)
		k = (k>>keyIdxBits-qmin)<<ib | j
		if withG {
			k |= uint64(s.jobs[j].grp) << gshift
		}
		keys[i] = k
		d := k >> ib
		h0[int(d)&mask&(1<<maxDigit-1)]++
		if p > 1 {
			h1[int(d>>w)&mask&(1<<maxDigit-1)]++
			if p > 2 {
				h2[int(d>>(2*w))&mask&(1<<maxDigit-1)]++
				if p > 3 {
					h3[int(d>>(3*w))&mask&(1<<maxDigit-1)]++
				}
			}
		}
	}

	src, dst := keys, grow(s.keys2, n)
	for pass := range p {
		h := &s.hist[pass]
		if slices.Contains(h[:nb], int32(n)) {
			continue // one digit for all: the pass would change nothing
		}
		var o int32
		for i, c := range h[:nb] {
			h[i] = o
			o += c
		}
		shift := ib + pass*w
		for _, k := range src {
			d := int(k>>shift) & mask & (1<<maxDigit - 1)
			dst[h[d]] = k
			h[d]++
		}
		src, dst = dst, src
	}
	// Last, by group.
	fill := s.pick
	copy(fill, s.gstart[:G])
	for _, k := range src {
		var g int32
		if withG {
			g = int32(k >> gshift)
		} else {
			g = s.jobs[k&idxMask].grp
		}
		dst[fill[g]] = k
		fill[g]++
	}
	s.keys, s.keys2 = dst, src
	return idxMask
}

// integrate accounts the idle instances of [t0, t1].
func (s *simScratch) integrate(out *SimResult, satSet *[NumRsc]bool, t0, t1, wbtot float64) {
	for _, r := range s.rsc[:s.nrsc] {
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

// complete finishes r's first job to finish, at t, and lets the next
// job take its place.
func (s *simScratch) complete(out *SimResult, r Rsc, t float64) {
	j := s.active[r][0].j // popped below, or replaced by its successor
	sj := &s.edf[j]
	g := int(sj.grp)
	if s.limited {
		s.count(j, -1)
	}
	pi := g / NumRsc
	if t > sj.dl {
		out.MissesDeadline[sj.orig] = true
		out.Projects[pi].DeadlinesMissed[r]++
		out.Rsc[r].DeadlineMissedInstances += sj.usage
		// Only a job the simulation sees miss its deadline counts in
		// the busy-time estimate, as in the C++ client's rr_sim.cpp,
		// where the update sits in the missed-deadline branch. Seen
		// against a stock server: with 29 jobs queued and none late the
		// C++ client 7.20.5 sent <estimated_delay> 0, where counting
		// every job gave 587 s, and a server that checks delay + run
		// time against its latency bound would have refused work the
		// C++ client gets.
		s.busyUpdate(r, sj.full, sj.usage)
		if r.IsGPU() {
			s.busyUpdate(CPU, sj.full, sj.ncpu)
		}
	}

	// Unlink from the group's EDF list.
	if pv := sj.prev; pv >= 0 {
		s.edf[pv].next = sj.next
	} else {
		s.head[g] = sj.next
	}
	if nx := sj.next; nx >= 0 {
		s.edf[nx].prev = sj.prev
	}

	if !s.limited && s.uniform[g] && !s.alwaysFull && s.pick[g] >= 0 {
		// Same jobs, same usage: the hand-out would come out the same.
		k := s.pick[g]
		s.pick[g] = s.edf[k].next
		s.startJob(r, k, t, true)
		return
	}
	s.popActive(r)
	switch {
	case s.limited:
		// Which jobs the limits let run depends on every resource's
		// running jobs: hand everything out again.
		s.handOutAll(t)
	case !s.uniform[g] || s.alwaysFull:
		s.handOut(r, t)
		if r.IsGPU() {
			s.handOut(CPU, t)
		}
	default:
		// The project has no job left to take the instance: the hand-out
		// takes each project's next jobs in one global order (every
		// project's priority falls step by step as it takes instances),
		// as a prefix until the resource is full. With uniform usage,
		// dropping a job of the project equals dropping its last, so the
		// new hand-out is the old one, less that job, carried on.
		s.nused[r] -= sj.usage
		if !r.IsGPU() {
			s.carryOn(r, t)
			break
		}
		before := s.nused[CPU]
		s.nused[CPU] -= sj.ncpu
		s.carryOn(r, t)
		if s.nused[CPU] > before+1e-9 {
			// New GPU jobs need more CPU than was freed: CPU jobs may have
			// to give way, so start the CPU's hand-out over.
			s.handOut(CPU, t)
		} else {
			s.carryOn(CPU, t)
		}
	}
}

// busyUpdate is BOINC's busy-time estimator: the job's duration is added
// to the floor(nused) least busy instances (BOINC takes consecutive ones
// from the least busy; for the usual 1-instance jobs it is the same). The
// instances are a min-heap, so the estimate is busy[0].
func (s *simScratch) busyUpdate(r Rsc, dur, nused float64) {
	b := s.busy[r]
	if len(b) == 0 || nused < 1 {
		return
	}
	k := min(int(nused), len(b))
	if k == 1 {
		replaceMinF(b, b[0]+dur)
		return
	}
	// Take the k smallest off the heap, then put them back increased.
	n := len(b)
	for i := range k {
		last := n - 1 - i
		b[0], b[last] = b[last], b[0]
		siftDownF(b[:last], 0)
	}
	for i := n - k; i < n; i++ {
		b[i] += dur
		siftUpF(b[:i+1], i)
	}
}

// replaceMinF replaces the least element of the min-heap h with x. Like
// the running jobs' heaps it takes Floyd's way: the hole goes down to a
// leaf along the lesser children, then x goes up from there. The new
// element mostly belongs near the bottom, and the way down has no
// data-dependent branch but its end: busy times are finite and not
// negative (no −0 either), so their bit patterns order like their values
// and the lesser child is picked by the borrow of their difference.
func replaceMinF(h []float64, x float64) {
	n := len(h)
	i := 0
	for {
		l := 2*i + 1
		if l >= n-1 {
			if l == n-1 {
				h[i] = h[l]
				i = l
			}
			break
		}
		_, c := bits.Sub64(math.Float64bits(h[l+1]), math.Float64bits(h[l]), 0)
		l += int(c)
		h[i] = h[l]
		i = l
	}
	for i > 0 {
		p := (i - 1) / 2
		if !(x < h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func siftDownF(h []float64, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h[r] < h[l] {
			m = r
		}
		if !(h[m] < h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func siftUpF(h []float64, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !(h[i] < h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

// startJob runs job j on resource r from t; replace: in place of r's
// first job to finish.
func (s *simScratch) startJob(r Rsc, j int32, t float64, replace bool) {
	if s.limited {
		s.count(j, 1)
	}
	sj := &s.edf[j]
	sj.start = t
	x := running{finish: t + sj.dur, orig: sj.orig, j: j}
	if replace {
		replaceMinRunning(s.active[r][:s.apad[r]], x)
		return
	}
	a := s.active[r]
	n := len(a)
	if n == s.apad[r] {
		// Add a level of idle leaves.
		p := 2*n + 1
		if cap(a) < p {
			a = append(make([]running, 0, p), a...)
		}
		full := a[:p]
		for i := n; i < p; i++ {
			full[i] = idle
		}
		s.apad[r] = p
	}
	a = a[:n+1]
	a[n] = x
	siftUpRunning(a, n)
	s.active[r] = a
}

// handOut re-assigns resource r's instances at t (see Simulate).
func (s *simScratch) handOut(r Rsc, t float64) {
	s.release(r, t)
	s.assign(r, t)
}

// handOutAll re-assigns every resource's instances at t from scratch,
// GPU types first, then the CPU, so the limits are charged in that
// order as at the first hand-out.
func (s *simScratch) handOutAll(t float64) {
	for r := range NumRsc {
		if s.n[r] > 0 {
			s.release(Rsc(r), t)
		}
	}
	for r := NumRsc - 1; r >= 0; r-- {
		if s.n[r] > 0 {
			s.assign(Rsc(r), t)
		}
	}
}

// release takes resource r's running jobs off at t; they keep their
// progress.
func (s *simScratch) release(r Rsc, t float64) {
	a := s.active[r]
	for i := range a {
		j := a[i].j
		sj := &s.edf[j]
		sj.dur = max(0, sj.dur-(t-sj.start))
		if r != CPU {
			s.nused[CPU] -= sj.ncpu
		}
		if s.limited {
			s.count(j, -1)
		}
		a[i] = idle
	}
	s.active[r] = a[:0]
}

// assign hands out resource r's instances at t, none of its jobs
// running (release).
func (s *simScratch) assign(r Rsc, t float64) {
	nused := 0.0
	if r == CPU {
		for gr := 1; gr < NumRsc; gr++ {
			for i := range s.active[gr] {
				nused += s.edf[s.active[gr][i].j].ncpu
			}
		}
	}
	s.nused[r] = nused

	ph := s.ph[r][:0]
	for _, g := range s.rgrp[r] {
		s.pick[g] = s.head[g]
		if s.head[g] >= 0 {
			pi := int(g) / NumRsc
			s.pused[g] = 0
			ph = append(ph, handEntry{peff: s.prioOf(pi), g: g, tier: s.tier[pi]})
		}
	}
	for i := len(ph)/2 - 1; i >= 0; i-- {
		siftDownProj(ph, i)
	}
	s.ph[r] = ph
	s.carryOn(r, t)
}

// carryOn goes on handing out r's instances at t from where the last
// hand-out stopped, while the resource is not full.
func (s *simScratch) carryOn(r Rsc, t float64) {
	ph := s.ph[r]
	limit := s.n[r] - 1e-9
	for len(ph) > 0 && s.nused[r] < limit {
		g := ph[0].g
		j := s.pick[g]
		if j < 0 {
			// Its jobs all started since (they replaced finished ones).
			last := len(ph) - 1
			ph[0] = ph[last]
			ph = ph[:last]
			if len(ph) > 0 {
				siftDownProj(ph, 0)
			}
			continue
		}
		sj := &s.edf[j]
		if s.limited && s.atLimit(j) {
			// It may run once a job of its app or project finishes; until
			// then it is deferred, and the group's next job is tried.
			s.deferred[int(g)/NumRsc] |= 1 << r
			s.pick[g] = sj.next
			if s.pick[g] < 0 {
				last := len(ph) - 1
				ph[0] = ph[last]
				ph = ph[:last]
				if len(ph) > 0 {
					siftDownProj(ph, 0)
				}
			}
			continue
		}
		s.startJob(r, j, t, false)
		s.nused[r] += sj.usage
		if r.IsGPU() {
			s.nused[CPU] += sj.ncpu
		}
		s.pused[g] += sj.usage
		s.pick[g] = sj.next
		if s.pick[g] < 0 {
			last := len(ph) - 1
			ph[0] = ph[last]
			ph = ph[:last]
		} else {
			pi := int(g) / NumRsc
			ph[0].peff = s.prioOf(pi) - s.c[r]*s.pused[g]/s.sfrac[pi]
		}
		if len(ph) > 0 {
			siftDownProj(ph, 0)
		}
	}
	s.ph[r] = ph
}

// setupLimits sizes and clears the concurrency counts; s.limited tells
// whether any job or project has a limit.
func (s *simScratch) setupLimits(projects []Project, jobs []Job) {
	P, J := len(projects), len(jobs)
	s.limited = false
	napp := 0
	for j := range jobs {
		if jb := &jobs[j]; jb.AppMax > 0 && jb.App > 0 && jb.App <= J {
			s.limited = true
			napp = max(napp, jb.App)
		}
	}
	s.pmax = grow(s.pmax, P)
	for i := range projects {
		s.pmax[i] = int32(min(max(0, projects[i].MaxConcurrent), math.MaxInt32))
		if s.pmax[i] > 0 {
			s.limited = true
		}
	}
	if !s.limited {
		return
	}
	s.appCnt = grow(s.appCnt, napp+1)
	s.lim = grow(s.lim, J)
	s.projCnt = grow(s.projCnt, P)
	s.deferred = grow(s.deferred, P)
	clear(s.appCnt)
	clear(s.projCnt)
	clear(s.deferred)
}

// atLimit reports whether job j's app or project has its limit of jobs
// running (max_concurrent_exceeded).
func (s *simScratch) atLimit(j int32) bool {
	if l := s.elim[j]; l.app > 0 && s.appCnt[l.app] >= l.amax {
		return true
	}
	pi := s.edf[j].grp / NumRsc
	return s.pmax[pi] > 0 && s.projCnt[pi] >= s.pmax[pi]
}

// count adds d to job j's app and project running counts.
func (s *simScratch) count(j int32, d int32) {
	if a := s.elim[j].app; a > 0 {
		s.appCnt[a] += d
	}
	s.projCnt[s.edf[j].grp/NumRsc] += d
}

func (s *simScratch) prioOf(pi int) float64 {
	if pi < len(s.prio) {
		if v := s.prio[pi]; !math.IsNaN(v) {
			return v
		}
	}
	return 0
}

// handEntry is a group in a hand-out heap, with the keys it is ordered
// by next to it: the heap is sifted at every start and comparisons
// should not chase into per-group and per-project arrays.
type handEntry struct {
	peff float64 // effective priority of the group's next job
	g    int32
	tier int8 // its project's (see simScratch.tier)
}

// projBefore orders the hand-out heap of groups (of one resource):
// positive share first, then higher effective priority, then lower index.
func projBefore(a, b *handEntry) bool {
	if a.tier != b.tier {
		return a.tier > b.tier
	}
	if a.peff != b.peff {
		return a.peff > b.peff
	}
	return a.g < b.g
}

func siftDownProj(h []handEntry, i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && projBefore(&h[r], &h[l]) {
			m = r
		}
		if !projBefore(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// idle fills the running jobs' heaps beyond their length.
var idle = running{finish: math.Inf(1), orig: math.MaxInt32, j: -1}

// replaceMinRunning replaces the first element of h, a heap padded with
// idle to a full tree, with x (see replaceMinF).
func replaceMinRunning(h []running, x running) {
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		l += runLess(&h[l+1], &h[l])
		h[i] = h[l]
		i = l
	}
	for i > 0 {
		p := (i - 1) / 2
		if !runBefore(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

func siftUpRunning(h []running, i int) {
	x := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !runBefore(&x, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = x
}

// popActive takes r's first job to finish off its heap.
func (s *simScratch) popActive(r Rsc) {
	h := s.active[r]
	last := len(h) - 1
	x := h[last]
	h[last] = idle
	if last > 0 {
		replaceMinRunning(h[:s.apad[r]], x)
	}
	s.active[r] = h[:last]
}

// unixTime is a time as Unix seconds and nanoseconds, for subtracting
// times faster than time.Time.Sub does.
type unixTime struct {
	t    time.Time
	sec  int64
	nsec int64
	mono bool // t has a monotonic clock reading
	ok   bool // sec is sane: no wrap-around in Unix(), nor in differences
}

func newUnixTime(t time.Time) unixTime {
	sec := t.Unix()
	return unixTime{t: t, sec: sec, nsec: int64(t.Nanosecond()), mono: t != t.Round(0), ok: sec > -1<<40 && sec < 1<<40}
}

// secondsTo is exactly t.Sub(u.t).Seconds(). Sub takes the monotonic
// readings when both times have one, and checks for overflow with Add
// and Equal; here the difference is taken from Unix seconds directly
// when it surely fits a Duration (|d| < 2^33 s: 2^33 × 1e9 + 1e9 <
// 2^63; a t whose Unix() wrapped around is 2^62 s away). The common
// case, u without a monotonic reading, is inlined.
func (u *unixTime) secondsTo(t time.Time) float64 {
	if d := t.Unix() - u.sec; u.ok && !u.mono && uint64(d+secLim) < 2*secLim {
		return spanSeconds(d, int64(t.Nanosecond())-u.nsec)
	}
	return u.secondsToSlow(t)
}

// spanSeconds is time.Duration(d s + ns ns).Seconds() for |d| < secLim.
// Whole seconds apart (deadlines usually are), Seconds() would give
// float64(d) + 0/1e9: the same without the divisions.
func spanSeconds(d, ns int64) float64 {
	if ns != 0 {
		return time.Duration(d*1e9 + ns).Seconds()
	}
	return float64(d)
}

const secLim = 1 << 33

// wallSeconds is b − a in wall-clock seconds: b.Sub(a).Seconds() for
// times without monotonic clock readings, and for times with them it
// ignores the readings, as a span between two server-given wall times
// (a job's receipt and its deadline: its latency bound) should. It runs
// per job and pass, so it skips newUnixTime's monotonic test.
func wallSeconds(a, b time.Time) float64 {
	d := b.Unix() - a.Unix()
	if uint64(d+secLim) >= 2*secLim {
		return b.Round(0).Sub(a.Round(0)).Seconds()
	}
	return spanSeconds(d, int64(b.Nanosecond())-int64(a.Nanosecond()))
}

func (u *unixTime) secondsToSlow(t time.Time) float64 {
	if d := t.Unix() - u.sec; u.ok && uint64(d+secLim) < 2*secLim && !(u.mono && t != t.Round(0)) {
		return time.Duration(d*1e9 + int64(t.Nanosecond()) - u.nsec).Seconds()
	}
	return t.Sub(u.t).Seconds()
}
