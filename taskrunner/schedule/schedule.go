// Package schedule decides which tasks run on the CPUs and GPUs right now:
// the pure part of boincd's CPU/GPU scheduler, modelled on the C++
// client's make_run_list and enforce_run_list (client/cpu_sched.cpp) and
// assign_coprocs (client/coproc_sched.cpp); see SCHEDULING.md §1.
//
// Plain data in, a decision out: no I/O, no clock (Input.Now is the time),
// no randomness, no goroutines. The same Input always gives the same
// Decision; nothing depends on map iteration order, and ties are broken
// by project index, Task.Order and finally the task's index.
//
// # Rules
//
// One pass claims CPUs and GPU instances in this order:
//
//  1. EDF (make_run_list's earliest_deadline_result loops), GPU types
//     first, then the CPU: tasks the round-robin simulation says will miss
//     their deadline, and tasks started as EDF whose project still has a
//     projected miss on that resource (promote_once_ran_edf), in
//     earliest-deadline order (equal deadlines: started before unstarted,
//     then less remaining time), until the resource is full.
//  2. Tasks in an unfinished time slice (enforce_run_list's
//     append_unfinished_time_slice): a running task keeps running until
//     it has run Slice AND checkpointed after that (finished_time_slice),
//     so work is never thrown away for the round robin; only EDF work
//     preempts it. GPU tasks, then CPU tasks with more CPUs first.
//  3. Weighted round robin, GPU types first, then the CPU: the project
//     with the highest current priority that has a candidate gets its best
//     task (running, then started before, then new; then EDF order), and
//     its priority drops by the task's usage in CPU equivalents times
//     Input.Charge divided by the project's share fraction
//     (adjust_rec_sched, share-weighted), so within a pass equal-priority
//     projects get tasks in proportion to their shares. Zero-share
//     projects come last. For the CPU, candidates are selected up to twice
//     the CPUs (stop_scan_cpu) and then run with more CPUs first
//     (more_important), so that multi-thread tasks get in.
//
// CPU accounting (enforce_run_list): every task's NCPUs count, GPU tasks'
// too. Once Instances[CPU] are in use no CPU task starts and a GPU task
// starts only if usage stays within Instances[CPU]+1; before that any task
// starts, so a multi-thread task may overcommit, unless Input.NoOvercommit.
//
// Concurrency limits (app_config.xml max_concurrent and
// project_max_concurrent, max_concurrent_exceeded in the C++ client): a
// task whose app or project already has its limit of tasks chosen is
// skipped, in every phase, counting tasks as they are chosen (CPU and GPU
// tasks of an app together). The CPU round robin counts at selection, so
// the selection of twice the CPUs does not fill up with tasks that could
// not run; the limits are also checked again when a selected task runs.
//
// GPU instances (assign_coprocs): running tasks keep their instances or do
// not run; fractional tasks pack onto partly used instances first;
// integral tasks take whole unused instances, preferring ones that no
// running EDF or mid-slice task holds. A GPU task without instances does
// not run.
//
// # Deliberate differences from the C++ client
//
//   - Mid-slice tasks outrank round-robin GPU tasks for CPUs. C++ sorts
//     every GPU job ahead of mid-slice CPU jobs, so a new GPU job can
//     preempt a CPU job that has not checkpointed; here only EDF work can.
//     New GPU tasks still get the one-CPU overcommit allowance.
//   - EDF tasks run strictly in deadline order. C++ lets a mid-slice EDF
//     job that made its list outrank an earlier-deadline one, and caps a
//     project's EDF picks at its projected miss count.
//   - Mid-slice tasks are charged to their project's priority like picked
//     ones, so the round robin fills the rest of the host knowing what
//     they use. CPU EDF tasks are charged before GPU round robin picks (in
//     C++ after).
//   - A GPU task is given instances only if it also passes the CPU test,
//     so no instance stays reserved for a task that then does not run.
//   - Only running EDF and mid-slice tasks reserve their instances
//     (pending_usage); a fractional task that finds no partly used
//     instance prefers an unreserved unused one (C++: the first unused).
//   - A project's best round-robin task is chosen in EDF order among
//     equals, not arrival order.
//
// # What the caller applies (not this package's job)
//
//   - max_ncpus_pct and <ncpus> arrive as Host.Instances[CPU], the usable
//     CPU count (set_n_usable_cpus: floor(n × pct/100), at least 1);
//     Input.NoOvercommit says the user capped it.
//   - cpu_usage_limit is duty-cycle throttling: the runner suspends and
//     resumes the tasks this package chose; a throttled task still counts
//     as running here.
//   - Suspended projects and tasks, tasks still downloading, tasks in a
//     schedule backoff, RAM and swap limits are filtered by the caller:
//     every Task given is runnable.
//   - app_config.xml's resource usage (gpu_usage, cpu_usage, avg_ncpus,
//     ngpus) arrives as NCPUs and NGPUs; its limits as Task.App,
//     Task.AppMax and Input.ProjectMax.
//   - Anti-thrashing rule (b) of promote_once_ran_edf (a task the
//     simulation marked a miss less than one period ago stays EDF) and
//     the "DCF ≥ 90: every job EDF" rule are folded into
//     Task.MissesDeadline by the caller.
package schedule

import (
	"math"
	"slices"
	"time"

	"github.com/boincd/boincd/workfetch"
)

// DefaultSlice is the time slice used when Input.Slice is not positive
// (cpu_scheduling_period_minutes defaults to 60; prefs.cpp maps values
// under 0.0001 minutes to 60).
const DefaultSlice = time.Hour

// MaxGPUInstances bounds the instances of one GPU type
// (MAX_COPROC_INSTANCES in lib/coproc.h); larger counts are clamped.
const MaxGPUInstances = 64

// eps absorbs float rounding when fractional usages are summed
// (three 1/3-GPU tasks fill an instance).
const eps = 1e-9

// Task is one runnable task as the scheduler sees it.
type Task struct {
	Project int           // index into Input.Priority / Input.Shares
	Rsc     workfetch.Rsc // CPU or the GPU type it uses
	// NCPUs is avg_ncpus; it may exceed 1 (multi-thread). A CPU task with
	// NCPUs not above zero (or NaN) counts as 1 CPU, as the C++ client
	// defaults avg_ncpus to 1; a negative or NaN NCPUs of a GPU task
	// counts as 0.
	NCPUs float64
	// NGPUs is the number of instances of Rsc when Rsc is a GPU type;
	// below 1 is fractional, 1 or more takes ceil(NGPUs) whole
	// instances. A GPU task with NGPUs not above zero is never run.
	NGPUs    float64
	Deadline time.Time // report deadline; zero: none (sorts last)
	// MissesDeadline is the round-robin simulation's verdict.
	MissesDeadline bool
	// Running: the task has a live process that is not preempted now
	// (a task suspended only by cpu_usage_limit throttling is running).
	Running bool
	// RunStart is when its current run began (Running tasks).
	RunStart time.Time
	// LastCheckpoint is the wall time of its last checkpoint; zero: it
	// never checkpointed.
	LastCheckpoint time.Time
	// GPUs are the instances it holds now (Running GPU tasks). A running
	// task whose list does not match its NGPUs (wrong length, index out
	// of range, duplicate) is placed afresh like a task that is not
	// running.
	GPUs []int
	// OnceRanEDF: it was started while marked EDF (anti-thrashing §1.7).
	OnceRanEDF bool
	// Started: it ran before (it has an active task, a slot, possibly a
	// checkpoint) even if it is not Running now. Running implies it.
	Started bool
	// Remaining is the estimated seconds left: among equal deadlines the
	// smaller goes first.
	Remaining float64
	Order     int // arrival order, the final tie-break
	// App and AppMax are app_config.xml's max_concurrent: the tasks that
	// share an App number (1..len(Input.Tasks); the caller numbers the
	// limited apps of all projects) are at most AppMax running at once,
	// whatever their resource. App 0 or AppMax not above 0: no limit.
	App    int
	AppMax int
}

// Input is everything one decision depends on.
type Input struct {
	Now time.Time
	// Host.Instances[CPU] is the number of usable CPUs (after
	// max_ncpus_pct), Instances[gpu] the number of GPU instances of each
	// type, numbered 0..Instances[gpu]-1. Host.RelSpeed weighs GPU usage
	// against CPU usage when a project's priority is lowered (0 counts
	// as 1).
	Host workfetch.Host
	// Slice is cpu_scheduling_period; not positive means DefaultSlice.
	Slice time.Duration
	// Priority is each project's priority, higher first (from a
	// workfetch.Policy). Its length is the number of projects: a task
	// whose Project is outside it is never run. NaN counts as -Inf.
	Priority []float64
	// Shares are the projects' resource shares. Missing entries (a short
	// or nil slice) count as 1; negative or NaN ones as 0. Projects with
	// share 0 are backup projects: they get work only when no project
	// with a share wants it (C++: priority −1000 − rec_frac).
	Shares []float64
	Tasks  []Task
	// Charge is how much one CPU-equivalent of usage lowers a project's
	// priority within the pass, before dividing by the project's share
	// fraction. It must be in the Policy's priority units. Not positive
	// means Slice in seconds, right for debt-like priorities in
	// instance-seconds; for the C++ REC priority (−rec_frac/rs_frac) use
	// 1/(24 × Σ Instances[r]·RelSpeed[r]), which reproduces
	// adjust_rec_sched.
	Charge float64
	// NoOvercommit: the user capped the CPU count (max_ncpus_pct < 100
	// or <ncpus>), so no task may push CPU usage over Instances[CPU],
	// not even a multi-thread or GPU task (enforce_run_list).
	NoOvercommit bool
	// ProjectMax is each project's project_max_concurrent: at most that
	// many of its tasks run at once. Missing entries (a short or nil
	// slice) and ones not above 0 mean no limit.
	ProjectMax []int
}

// Assignment is one task that is to run.
type Assignment struct {
	Task int   // index into Input.Tasks
	GPUs []int // instances of its GPU type; empty for CPU tasks
	EDF  bool  // chosen by the EDF phase (sets OnceRanEDF when started)
}

// Decision lists the tasks that are to run, in the order they claimed
// processors (start them in this order). Every task not listed must not
// run: preempt it if it is running.
type Decision struct {
	Run []Assignment
}

// Schedule makes one decision with fresh scratch space. Out's backing
// arrays (Run and each Run[i].GPUs) are reused, so a caller that keeps a
// Decision across calls must copy what it keeps. A daemon that decides
// often should keep a Scheduler, which also reuses its scratch space.
func Schedule(in *Input, out *Decision) {
	var s Scheduler
	s.Schedule(in, out)
}

// Scheduler holds scratch space reused between decisions; its zero value
// is ready. It is not safe for concurrent use.
type Scheduler struct {
	in     *Input
	nproj  int
	ncpu   float64
	slice  time.Duration
	charge float64

	// Per task.
	kind []uint8
	// Per project.
	cur    []float64 // current priority within this pass
	weight []float64 // 1 / share fraction
	backup []bool    // share 0
	miss   []uint8   // bit r: some task on resource r misses its deadline
	has    []bool    // has a valid task

	// edf[r] holds the EDF tasks of resource r not yet taken (see
	// prepEDF): edf[r][edfHead[r]:edfSorted[r]] the least of them in
	// edfLess order, then the rest, a heap once edfHeaped[r].
	edf       [workfetch.NumRsc][]cand
	edfHead   [workfetch.NumRsc]int
	edfSorted [workfetch.NumRsc]int
	edfHeaped [workfetch.NumRsc]bool
	// keep[r] lists the running non-EDF tasks whose slice is unfinished.
	keep [workfetch.NumRsc][]cand
	// rr holds the round-robin candidates bucketed by (resource,
	// project); bucket b spans rr[off[b]:off[b]+n[b]] and is a heap
	// (rrLess).
	rr  []cand
	off []int32
	n   []int32

	picks []cand // CPU round-robin selections

	ngpu    [workfetch.NumRsc]int
	usage   [workfetch.NumRsc][MaxGPUInstances]float64
	pending [workfetch.NumRsc][MaxGPUInstances]float64
	used    float64 // CPUs claimed so far
	gpuTmp  [MaxGPUInstances]int
	ngpuTmp int

	// Concurrency limits: tasks chosen so far per App number and per
	// project, and the same counts for the CPU round robin's selection.
	limited bool // some task has a limit; otherwise none is counted
	appCnt  []int32
	projCnt []int32
	selApp  []int32
	selProj []int32
}

// Task kinds after classification.
const (
	kInvalid uint8 = iota
	kEDF
	kKeep
	kRR
)

// cand is a task with its sort keys unpacked, so heaps compare
// contiguous values instead of chasing into Task.
type cand struct {
	dl    int64 // deadline, Unix seconds (math.MaxInt64: none)
	dlns  int32
	cls   uint8 // 0 running, 1 started before, 2 new
	idx   int32 // index into Input.Tasks
	rem   float64
	order int
	ncpus float64
}

// Schedule fills out with the tasks to run now; see the package comment
// for the rules. Out's backing arrays are reused.
func (s *Scheduler) Schedule(in *Input, out *Decision) {
	out.Run = out.Run[:0]
	s.setup(in)
	s.classify()

	// 1. EDF: GPU types, then the CPU.
	for r := workfetch.Rsc(1); r < workfetch.NumRsc; r++ {
		for s.edfLeft(r) > 0 && s.gpuRoom(r) {
			c := s.popEDF(r)
			if s.tryRun(c.idx, true, out) {
				s.chargeTask(c.idx)
			}
		}
	}
	for s.edfLeft(workfetch.CPU) > 0 && !s.cpuFull() {
		c := s.popEDF(workfetch.CPU)
		if s.tryRun(c.idx, true, out) {
			s.chargeTask(c.idx)
		}
	}

	// 2. Unfinished time slices: GPU tasks, then CPU tasks, larger
	// NCPUs first (the C++ more_important order).
	for i := 1; i <= workfetch.NumRsc; i++ {
		k := s.keep[i%workfetch.NumRsc] // GPU types 1..3, then the CPU
		slices.SortFunc(k, keepCmp)
		for j := range k {
			if s.tryRun(k[j].idx, false, out) {
				s.chargeTask(k[j].idx)
			}
		}
	}

	// 3. Weighted round robin: GPU types, then the CPU.
	for r := workfetch.Rsc(1); r < workfetch.NumRsc; r++ {
		for s.gpuRoom(r) {
			p := s.nextProject(r)
			if p < 0 {
				break
			}
			if s.projAtLimit(p, s.projCnt) {
				s.n[int(r)*s.nproj+p] = 0 // none of its tasks can run now
				continue
			}
			c := s.popRR(r, p)
			if s.tryRun(c.idx, false, out) {
				s.chargeTask(c.idx)
			}
		}
	}
	s.roundRobinCPU(out)
	s.in = nil // do not keep the caller's tasks alive
}

// setup sanitises the scalar inputs and sizes the per-project scratch.
func (s *Scheduler) setup(in *Input) {
	s.in = in
	s.nproj = len(in.Priority)
	s.ncpu = in.Host.Instances[workfetch.CPU]
	switch {
	case math.IsNaN(s.ncpu) || s.ncpu < 0:
		s.ncpu = 0
	case math.IsInf(s.ncpu, 1):
		s.ncpu = math.MaxFloat64
	}
	s.slice = in.Slice
	if s.slice <= 0 {
		s.slice = DefaultSlice
	}
	s.charge = in.Charge
	if !(s.charge > 0) || math.IsInf(s.charge, 0) {
		s.charge = s.slice.Seconds()
	}
	s.used = 0
	for r := workfetch.Rsc(1); r < workfetch.NumRsc; r++ {
		m := in.Host.Instances[r]
		switch {
		case !(m >= 1): // also NaN
			s.ngpu[r] = 0
		case m > MaxGPUInstances:
			s.ngpu[r] = MaxGPUInstances
		default:
			s.ngpu[r] = int(m)
		}
		// Only instances below ngpu[r] are ever read or written.
		clear(s.usage[r][:s.ngpu[r]])
		clear(s.pending[r][:s.ngpu[r]])
	}
	s.ngpu[workfetch.CPU] = 0

	np := s.nproj
	s.cur = resize(s.cur, np)
	s.weight = resize(s.weight, np)
	s.backup = resize(s.backup, np)
	s.miss = resize(s.miss, np)
	s.has = resize(s.has, np)
	// Resliced to np: the loop needs no bounds checks.
	prio, cur, miss, has := in.Priority[:np], s.cur[:np], s.miss[:np], s.has[:np]
	for p := range np {
		v := prio[p]
		if math.IsNaN(v) {
			v = math.Inf(-1)
		}
		cur[p] = v
		miss[p] = 0
		has[p] = false
	}
	nt := len(in.Tasks)
	s.kind = resize(s.kind, nt)
	s.setupLimits()
	for r := range s.edf {
		s.edf[r] = s.edf[r][:0]
		s.keep[r] = s.keep[r][:0]
	}
	s.picks = s.picks[:0]
}

// setupLimits sizes and clears the concurrency counts; with no limit in
// the input nothing is counted.
func (s *Scheduler) setupLimits() {
	in := s.in
	nt := len(in.Tasks)
	s.limited = false
	napp := 0
	for i := range in.Tasks {
		if t := &in.Tasks[i]; t.AppMax > 0 && t.App > 0 && t.App <= nt {
			s.limited = true
			napp = max(napp, t.App)
		}
	}
	for p := range min(s.nproj, len(in.ProjectMax)) {
		if in.ProjectMax[p] > 0 {
			s.limited = true
		}
	}
	if !s.limited {
		s.appCnt, s.selApp = s.appCnt[:0], s.selApp[:0]
		return
	}
	s.appCnt = resize(s.appCnt, napp+1)
	s.selApp = resize(s.selApp, napp+1)
	s.projCnt = resize(s.projCnt, s.nproj)
	s.selProj = resize(s.selProj, s.nproj)
	clear(s.appCnt)
	clear(s.projCnt)
}

// classify validates every task, decides which are EDF, which keep their
// slice and which are round-robin candidates, and builds the heaps.
func (s *Scheduler) classify() {
	in := s.in
	tasks := in.Tasks
	kind := s.kind[:len(tasks)] // resliced: no bounds checks in the passes
	// Pass 1: validity, projects with projected misses per resource.
	for i := range tasks {
		t := &tasks[i]
		if !s.valid(t) {
			kind[i] = kInvalid
			continue
		}
		kind[i] = kRR
		s.has[t.Project] = true
		if t.MissesDeadline {
			s.miss[t.Project] |= 1 << uint(t.Rsc)
		}
	}
	s.shareWeights()

	// Pass 2: classify; count the round-robin buckets.
	nb := int(workfetch.NumRsc) * s.nproj
	s.off = resize(s.off, nb+1)
	s.n = resize(s.n, nb)
	clear(s.n)
	// Round-robin candidates per resource: the buckets of a resource
	// without any (often all GPU types, with many projects) are skipped
	// below; their offsets are never read.
	var nrr [workfetch.NumRsc]int32
	for i := range tasks {
		if kind[i] == kInvalid {
			continue
		}
		t := &tasks[i]
		switch {
		case t.MissesDeadline || (t.OnceRanEDF && s.miss[t.Project]&(1<<uint(t.Rsc)) != 0):
			// §1.7 (a), promote_once_ran_edf: a task started as EDF
			// stays EDF while its project still has a projected miss on
			// that resource, so EDF work is not started and dropped.
			kind[i] = kEDF
			s.edf[t.Rsc] = append(s.edf[t.Rsc], s.cand(i))
		case t.Running && !finishedSlice(t, s.in.Now, s.slice):
			kind[i] = kKeep
			s.keep[t.Rsc] = append(s.keep[t.Rsc], s.cand(i))
		default:
			s.n[int(t.Rsc)*s.nproj+t.Project]++
			nrr[t.Rsc]++
		}
	}
	var o int32
	for r, c := range nrr {
		if c == 0 {
			continue
		}
		bs := s.n[r*s.nproj : (r+1)*s.nproj]
		offs := s.off[r*s.nproj : (r+1)*s.nproj]
		for b, c := range bs {
			offs[b] = o
			o += c
		}
		clear(bs)
	}
	s.off[nb] = o
	s.rr = resize(s.rr, int(o))
	// Pass 3: fill the buckets.
	for i := range tasks {
		if kind[i] != kRR {
			continue
		}
		t := &tasks[i]
		b := int(t.Rsc)*s.nproj + t.Project
		s.rr[s.off[b]+s.n[b]] = s.cand(i)
		s.n[b]++
	}
	for r, c := range nrr {
		if c < 2 {
			continue // a heap of one is one already
		}
		for b := r * s.nproj; b < (r+1)*s.nproj; b++ {
			if s.n[b] > 1 {
				heapify(s.rr[s.off[b]:s.off[b]+s.n[b]], true)
			}
		}
	}
	for r := range s.edf {
		s.prepEDF(r)
	}

	// Running GPU tasks that will be considered ahead of the round robin
	// reserve their instances (pending_usage in assign_coprocs), so new
	// work avoids them. Running round-robin candidates (slice over) do
	// not: their instances are fair game, which C++ only approximates by
	// leaving unselected jobs out of its list.
	for i := range tasks {
		if k := kind[i]; k != kEDF && k != kKeep {
			continue
		}
		t := &tasks[i]
		if t.Rsc.IsGPU() && s.holds(t) {
			u := min(t.NGPUs, 1)
			for _, j := range t.GPUs {
				s.pending[t.Rsc][j] += u
			}
		}
	}
}

// valid reports whether t can be scheduled at all.
func (s *Scheduler) valid(t *Task) bool {
	if t.Project < 0 || t.Project >= s.nproj || t.Rsc < 0 || t.Rsc >= workfetch.NumRsc {
		return false
	}
	if t.Rsc.IsGPU() {
		u := t.NGPUs
		if !(u > 0) || need(u) > s.ngpu[t.Rsc] {
			return false
		}
	}
	return true
}

// shareWeights sets each project's weight (1/share fraction) over the
// projects that have a task, as project_priority_init sums shares over
// projects with a runnable job.
func (s *Scheduler) shareWeights() {
	np := s.nproj
	has, backup, weight := s.has[:np], s.backup[:np], s.weight[:np] // no bounds checks below
	var sum float64
	for p := range np {
		if has[p] {
			sum += s.share(p)
		}
	}
	for p := range np {
		sh := s.share(p)
		backup[p] = sh == 0
		if sh > 0 && sum > 0 {
			weight[p] = sum / sh
		} else {
			weight[p] = 1
		}
	}
}

func (s *Scheduler) share(p int) float64 {
	if p >= len(s.in.Shares) {
		return 1
	}
	switch v := s.in.Shares[p]; {
	case math.IsNaN(v) || v <= 0:
		return 0
	case math.IsInf(v, 1):
		return math.MaxFloat64
	default:
		return v
	}
}

// finishedSlice is finished_time_slice (cpu_sched.cpp): the slice is over
// only once it has run a full slice AND checkpointed after the slice
// ended, so a task is never preempted while work since its last
// checkpoint would be lost (overdue_checkpoint in C++: the checkpoint
// that finally comes triggers the reschedule). A task that never
// checkpointed thus keeps running until EDF work needs its processors.
func finishedSlice(t *Task, now time.Time, slice time.Duration) bool {
	sliceEnd := t.RunStart.Add(slice)
	return now.After(sliceEnd) && t.LastCheckpoint.After(sliceEnd)
}

func (s *Scheduler) cand(i int) cand {
	t := &s.in.Tasks[i]
	c := cand{idx: int32(i), order: t.Order, rem: t.Remaining, ncpus: ncpus(t)}
	if math.IsNaN(c.rem) {
		c.rem = math.Inf(1)
	}
	if t.Deadline.IsZero() {
		c.dl = math.MaxInt64
	} else {
		c.dl, c.dlns = t.Deadline.Unix(), int32(t.Deadline.Nanosecond())
	}
	switch {
	case t.Running:
		c.cls = 0
	case t.Started:
		c.cls = 1
	default:
		c.cls = 2
	}
	return c
}

// ncpus is t's CPU usage after sanitising.
func ncpus(t *Task) float64 {
	v := t.NCPUs
	if t.Rsc.IsGPU() {
		if !(v > 0) {
			return 0
		}
	} else if !(v > 0) {
		return 1
	}
	return min(v, math.MaxFloat64)
}

// need is the number of instances a task using u of a GPU type occupies.
func need(u float64) int {
	if u < 1 {
		return 1
	}
	if u > MaxGPUInstances {
		return MaxGPUInstances + 1
	}
	return int(math.Ceil(u - eps))
}

// edfLess is earliest_deadline_result's order: earliest deadline; among
// equal deadlines a started task beats an unstarted one, then the smaller
// remaining time wins; then arrival order.
func edfLess(a, b *cand) bool {
	if a.dl != b.dl {
		return a.dl < b.dl
	}
	if a.dlns != b.dlns {
		return a.dlns < b.dlns
	}
	if as, bs := a.cls < 2, b.cls < 2; as != bs {
		return as
	}
	if a.rem != b.rem {
		return a.rem < b.rem
	}
	if a.order != b.order {
		return a.order < b.order
	}
	return a.idx < b.idx
}

// rrLess is a project's best task for the round robin
// (assign_results_to_projects): running, then started before (a
// preempted task with state to resume), then new; then EDF order, which
// C++ does not use (it takes arrival order) but which lets the task
// most at risk go first.
func rrLess(a, b *cand) bool {
	if a.cls != b.cls {
		return a.cls < b.cls
	}
	return edfLess(a, b)
}

func less(a, b *cand, rr bool) bool {
	if rr {
		return rrLess(a, b)
	}
	return edfLess(a, b)
}

// keepCmp orders tasks in mid slice: more CPUs first (more_important
// helps multi-thread jobs get their CPUs), then EDF order.
func keepCmp(a, b cand) int {
	if a.ncpus != b.ncpus {
		if a.ncpus > b.ncpus {
			return -1
		}
		return 1
	}
	if edfLess(&a, &b) {
		return -1
	}
	if edfLess(&b, &a) {
		return 1
	}
	return 0
}

func heapify(h []cand, rr bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, rr)
	}
}

func siftDown(h []cand, i int, rr bool) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l], rr) {
			m = r
		}
		if !less(&h[m], &h[i], rr) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func popHeap(h *[]cand, rr bool) cand {
	x := *h
	top := x[0]
	last := len(x) - 1
	x[0] = x[last]
	x = x[:last]
	siftDown(x, 0, rr)
	*h = x
	return top
}

// edfPrefix is how many EDF tasks per resource prepEDF sorts ahead: as
// many as usually fill a host's instances, so that the others (often
// most of a long queue, when the simulation sees many misses) are only
// compared once each, not heapified.
const edfPrefix = 32

// prepEDF readies resource r's EDF tasks for popEDF: the edfPrefix least
// (edfLess) go to the front, sorted, chosen in one pass with a bounded
// max-heap; the rest are heapified only if the prefix runs out. The
// tasks come out in the same order as from a heap of all of them.
func (s *Scheduler) prepEDF(r int) {
	h := s.edf[r]
	if len(h) == 0 {
		s.edfHead[r], s.edfSorted[r], s.edfHeaped[r] = 0, 0, false
		return
	}
	k := min(len(h), edfPrefix)
	if len(h) > k {
		top := h[:k]
		for i := k/2 - 1; i >= 0; i-- {
			siftDownMax(top, i)
		}
		for i := k; i < len(h); i++ {
			if edfLess(&h[i], &top[0]) {
				top[0], h[i] = h[i], top[0]
				siftDownMax(top, 0)
			}
		}
	}
	slices.SortFunc(h[:k], edfCmp)
	s.edfHead[r], s.edfSorted[r], s.edfHeaped[r] = 0, k, false
}

// edfLeft is how many EDF tasks of r are left to pop.
func (s *Scheduler) edfLeft(r workfetch.Rsc) int { return len(s.edf[r]) - s.edfHead[r] }

// popEDF takes r's earliest EDF task (edfLess).
func (s *Scheduler) popEDF(r workfetch.Rsc) cand {
	if s.edfHead[r] < s.edfSorted[r] {
		s.edfHead[r]++
		return s.edf[r][s.edfHead[r]-1]
	}
	rest := s.edf[r][s.edfSorted[r]:]
	if !s.edfHeaped[r] {
		heapify(rest, false)
		s.edfHeaped[r] = true
	}
	c := popHeap(&rest, false)
	s.edf[r] = s.edf[r][:s.edfSorted[r]+len(rest)]
	return c
}

func edfCmp(a, b cand) int {
	switch {
	case edfLess(&a, &b):
		return -1
	case edfLess(&b, &a):
		return 1
	}
	return 0
}

// siftDownMax keeps h a heap with the last task in edfLess order on top.
func siftDownMax(h []cand, i int) {
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && edfLess(&h[l], &h[r]) {
			m = r
		}
		if !edfLess(&h[i], &h[m]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

func (s *Scheduler) popRR(r workfetch.Rsc, p int) cand {
	b := int(r)*s.nproj + p
	h := s.rr[s.off[b] : s.off[b]+s.n[b]]
	c := popHeap(&h, true)
	s.n[b]--
	return c
}

// nextProject is the project with the highest current priority that
// still has a round-robin candidate on r; backup (zero-share) projects
// come after all others; ties go to the lower index. -1: none.
func (s *Scheduler) nextProject(r workfetch.Rsc) int {
	// The best so far is kept in registers: it is called for every
	// round-robin pick and scans every project.
	best, bBackup, bCur := -1, false, 0.0
	np := s.nproj
	n := s.n[int(r)*np : (int(r)+1)*np]
	backup, cur := s.backup[:np], s.cur[:np]
	for p := range np {
		if n[p] == 0 {
			continue
		}
		if best < 0 || (bBackup && !backup[p]) ||
			(bBackup == backup[p] && cur[p] > bCur) {
			best, bBackup, bCur = p, backup[p], cur[p]
		}
	}
	return best
}

// chargeTask lowers the priority of the task's project by what the task
// uses, in CPU equivalents (C++ peak_flops(job) / p_fpops), divided by
// the project's share fraction: adjust_rec_sched's in-pass bump, with
// the share applied so that within a pass projects of equal priority
// get tasks in proportion to their shares.
func (s *Scheduler) chargeTask(i int32) {
	t := &s.in.Tasks[i]
	h := &s.in.Host
	use := ncpus(t) * relSpeed(h, workfetch.CPU)
	if t.Rsc.IsGPU() {
		use += t.NGPUs * relSpeed(h, t.Rsc)
	}
	if d := s.charge * use * s.weight[t.Project]; !math.IsNaN(d) {
		s.cur[t.Project] -= d
	}
}

func relSpeed(h *workfetch.Host, r workfetch.Rsc) float64 {
	v := h.RelSpeed[r]
	if !(v > 0) || math.IsInf(v, 1) {
		return 1
	}
	return v
}

func (s *Scheduler) cpuFull() bool { return s.used >= s.ncpu-eps }

// cpuFits is enforce_run_list's CPU test. Once the CPUs are fully used, a
// CPU task does not run and a GPU task runs only if it stays within one
// CPU of overcommitment; before that any task runs, so a multi-thread
// task may overcommit the CPUs (it would never start otherwise), unless
// the user capped the CPU count.
func (s *Scheduler) cpuFits(nc float64, gpu bool) bool {
	if s.in.NoOvercommit && s.used+nc > s.ncpu+eps {
		return false
	}
	if s.cpuFull() {
		return gpu && s.used+nc <= s.ncpu+1+eps
	}
	return true
}

// gpuRoom reports whether some instance of r is not fully used
// (make_run_list's loop condition).
func (s *Scheduler) gpuRoom(r workfetch.Rsc) bool {
	for j := range s.ngpu[r] {
		if s.usage[r][j] < 1-eps {
			return true
		}
	}
	return false
}

// holds reports whether t is a running GPU task whose GPUs are a valid
// assignment for its NGPUs.
func (s *Scheduler) holds(t *Task) bool {
	if !t.Running || len(t.GPUs) != need(t.NGPUs) {
		return false
	}
	var seen uint64
	for _, j := range t.GPUs {
		if j < 0 || j >= s.ngpu[t.Rsc] || seen&(1<<uint(j)) != 0 {
			return false
		}
		seen |= 1 << uint(j)
	}
	return true
}

// tryRun runs task i if it gets its GPU instances and its CPUs; on
// success it is appended to out.
func (s *Scheduler) tryRun(i int32, edf bool, out *Decision) bool {
	t := &s.in.Tasks[i]
	nc := ncpus(t)
	gpu := t.Rsc.IsGPU()
	held := gpu && s.holds(t)
	reserved := held && (s.kind[i] == kEDF || s.kind[i] == kKeep)
	if s.atLimit(t, s.appCnt, s.projCnt) || gpu && !s.findGPUs(t, held) || !s.cpuFits(nc, gpu) {
		if reserved {
			// It will not run: stop steering others off its instances.
			u := min(t.NGPUs, 1)
			for _, j := range t.GPUs {
				s.pending[t.Rsc][j] -= u
			}
		}
		return false
	}
	s.used += nc
	if gpu {
		u := min(t.NGPUs, 1)
		for _, j := range s.gpuTmp[:s.ngpuTmp] {
			s.usage[t.Rsc][j] += u
			if reserved {
				s.pending[t.Rsc][j] -= u
			}
		}
	}
	s.count(t, s.appCnt, s.projCnt)
	s.emit(out, i, gpu, edf)
	return true
}

// appOf is t's App number when it has an app limit, else 0.
func (s *Scheduler) appOf(t *Task) int {
	if t.AppMax > 0 && t.App > 0 && t.App < len(s.appCnt) {
		return t.App
	}
	return 0
}

// projMax is project p's limit; 0: none.
func (s *Scheduler) projMax(p int) int {
	if p < len(s.in.ProjectMax) {
		return max(0, s.in.ProjectMax[p])
	}
	return 0
}

// projAtLimit reports whether project p has its limit of tasks in cnt.
func (s *Scheduler) projAtLimit(p int, cnt []int32) bool {
	m := s.projMax(p)
	return s.limited && m > 0 && int(cnt[p]) >= m
}

// atLimit reports whether t's app or project has its limit of tasks in
// the counts given (max_concurrent_exceeded).
func (s *Scheduler) atLimit(t *Task, app, proj []int32) bool {
	if !s.limited {
		return false
	}
	if a := s.appOf(t); a > 0 && int(app[a]) >= t.AppMax {
		return true
	}
	return s.projAtLimit(t.Project, proj)
}

// count charges t to its app's and project's counts (max_concurrent_inc).
func (s *Scheduler) count(t *Task, app, proj []int32) {
	if !s.limited {
		return
	}
	if a := s.appOf(t); a > 0 {
		app[a]++
	}
	proj[t.Project]++
}

// findGPUs chooses instances for t into gpuTmp (assign_coprocs, §1.5):
//   - a running task keeps its instances if each still has room for it,
//     else it does not run (a GPU task is never moved while running);
//   - a fractional task goes on an instance already partly used or
//     reserved, where it fits with the reservations; failing that on an
//     unused instance, preferring one no running task reserves (C++
//     takes the first unused one);
//   - an integral task needs ceil(NGPUs) unused instances, preferring
//     ones no running task reserves.
func (s *Scheduler) findGPUs(t *Task, held bool) bool {
	r := t.Rsc
	m := s.ngpu[r]
	use := &s.usage[r]
	pend := &s.pending[r]
	s.ngpuTmp = 0
	u := t.NGPUs
	if held {
		for _, j := range t.GPUs {
			if use[j]+min(u, 1) > 1+eps {
				return false
			}
		}
		s.ngpuTmp = copy(s.gpuTmp[:], t.GPUs)
		return true
	}
	if u < 1 {
		for j := range m {
			if (use[j] > 0 || pend[j] > 0) && use[j]+pend[j]+u <= 1+eps {
				s.gpuTmp[0], s.ngpuTmp = j, 1
				return true
			}
		}
		for pass := range 2 {
			for j := range m {
				if use[j] == 0 && (pass == 1 || pend[j] == 0) {
					s.gpuTmp[0], s.ngpuTmp = j, 1
					return true
				}
			}
		}
		return false
	}
	k := need(u)
	for pass := range 2 {
		for j := range m {
			if s.ngpuTmp == k {
				break
			}
			if use[j] == 0 && (pass == 0) == (pend[j] == 0) {
				s.gpuTmp[s.ngpuTmp] = j
				s.ngpuTmp++
			}
		}
	}
	if s.ngpuTmp < k {
		s.ngpuTmp = 0
		return false
	}
	slices.Sort(s.gpuTmp[:k])
	return true
}

// emit appends task i to out.Run, reusing the GPUs array that was at
// that position before.
func (s *Scheduler) emit(out *Decision, i int32, gpu bool, edf bool) {
	n := len(out.Run)
	var buf []int
	if n < cap(out.Run) {
		buf = out.Run[:n+1][n].GPUs[:0]
	}
	if gpu {
		buf = append(buf, s.gpuTmp[:s.ngpuTmp]...)
	}
	out.Run = append(out.Run, Assignment{Task: int(i), GPUs: buf, EDF: edf})
}

// roundRobinCPU is the CPU round robin. As in make_run_list it first
// selects candidates, lowering each project's priority per pick, until
// twice the usable CPUs are selected (single- and multi-thread counted
// separately, stop_scan_cpu), then runs them with more CPUs first
// (more_important), so that a selected multi-thread task is not starved
// by single-thread tasks that would fill the CPUs before it; ties keep
// the selection order.
func (s *Scheduler) roundRobinCPU(out *Decision) {
	if s.cpuFull() {
		return // no CPU task can run; C++ would select and then skip them all
	}
	var st, mt float64
	for _, a := range out.Run {
		if t := &s.in.Tasks[a.Task]; t.Rsc == workfetch.CPU {
			if nc := ncpus(t); nc > 1 {
				mt += nc
			} else {
				st += nc
			}
		}
	}
	if s.limited {
		copy(s.selApp, s.appCnt)
		copy(s.selProj, s.projCnt)
	}
	limit := 2 * s.ncpu
	for st < limit && mt < limit {
		p := s.nextProject(workfetch.CPU)
		if p < 0 {
			break
		}
		if s.projAtLimit(p, s.selProj) {
			s.n[int(workfetch.CPU)*s.nproj+p] = 0 // none of its tasks can run now
			continue
		}
		c := s.popRR(workfetch.CPU, p)
		t := &s.in.Tasks[c.idx]
		if s.atLimit(t, s.selApp, s.selProj) {
			continue // its app has its limit selected: it cannot run
		}
		s.count(t, s.selApp, s.selProj)
		s.chargeTask(c.idx)
		if c.ncpus > 1 {
			mt += c.ncpus
		} else {
			st += c.ncpus
		}
		s.picks = append(s.picks, c)
	}
	slices.SortStableFunc(s.picks, func(a, b cand) int {
		switch {
		case a.ncpus > b.ncpus:
			return -1
		case a.ncpus < b.ncpus:
			return 1
		}
		return 0
	})
	for i := range s.picks {
		if s.cpuFull() {
			break
		}
		s.tryRun(s.picks[i].idx, false, out)
	}
}

func resize[T any](x []T, n int) []T {
	if cap(x) < n {
		return make([]T, n)
	}
	return x[:n]
}
