package taskrunner

// Layouts of the Windows structures the Job Object code reads, declared
// here without a build constraint so their size and decoding are tested
// on every platform (golang.org/x/sys/windows has none of them).

// jobAccounting is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION. Times are in
// 100-ns units and cover every process that ever ran in the job.
type jobAccounting struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}

// cpuSeconds is the job's user plus kernel time.
func (a *jobAccounting) cpuSeconds() float64 {
	return float64(a.TotalUserTime+a.TotalKernelTime) / 1e7
}

// maxJobPIDs bounds the processes of one task that are sampled; an app
// with more has its working set undercounted, never a failed query (the
// call fills what fits and reports ERROR_MORE_DATA).
const maxJobPIDs = 256

// jobPIDList is JOBOBJECT_BASIC_PROCESS_ID_LIST with room for maxJobPIDs.
type jobPIDList struct {
	NumberOfAssignedProcesses uint32
	NumberOfProcessIdsInList  uint32
	ProcessIDList             [maxJobPIDs]uintptr
}

// pids returns the listed ids, trusting the count only as far as the
// array goes.
func (l *jobPIDList) pids() []uint32 {
	n := min(int(l.NumberOfProcessIdsInList), len(l.ProcessIDList))
	out := make([]uint32, 0, n)
	for _, p := range l.ProcessIDList[:n] {
		if p != 0 {
			out = append(out, uint32(p))
		}
	}
	return out
}

// processMemoryCounters is PROCESS_MEMORY_COUNTERS (psapi.h).
type processMemoryCounters struct {
	Cb                         uint32
	PageFaultCount             uint32
	PeakWorkingSetSize         uintptr
	WorkingSetSize             uintptr
	QuotaPeakPagedPoolUsage    uintptr
	QuotaPagedPoolUsage        uintptr
	QuotaPeakNonPagedPoolUsage uintptr
	QuotaNonPagedPoolUsage     uintptr
	PagefileUsage              uintptr
	PeakPagefileUsage          uintptr
}
