package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/metrics"
	"github.com/boincd/boincd/workfetch"
)

// metricsSource serves scrapes: every snapshot is built on the owner
// goroutine, like a GUI RPC, so the exporter reads no shared state.
type metricsSource struct{ d *Daemon }

func (m metricsSource) Snapshot(ctx context.Context) (*metrics.Snapshot, error) {
	var s *metrics.Snapshot
	err := m.d.peek(ctx, func() { s = m.d.metricsSnapshot(time.Now()) })
	return s, err
}

// startMetrics runs the Prometheus endpoint when the config enables it;
// the server stops with ctx and d.wg waits for it.
func (d *Daemon) startMetrics(ctx context.Context) {
	c := d.cfg.Metrics
	if !c.Enabled {
		return
	}
	log := d.opt.Logger.With(slog.String("component", "metrics"))
	srv, err := metrics.NewServer(c.Address, metricsSource{d}, log, metrics.AllowRemote(c.AllowRemote))
	if err != nil {
		d.log.Error("metrics endpoint not started", slog.Any("err", err))
		return
	}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := srv.Serve(ctx); err != nil {
			log.Error("metrics endpoint failed", slog.String("address", c.Address), slog.Any("err", err))
		}
	}()
}

// taskState maps a result to the metrics' task states ("" = not shown:
// reported and acknowledged results are gone for the volunteer).
func (d *Daemon) taskState(r *boinc.Result) string {
	at := d.active[r.Key()]
	switch r.Phase {
	case boinc.PhaseNew, boinc.PhaseDownloading:
		return metrics.TaskDownloading
	case boinc.PhaseDownloaded, boinc.PhaseComputing:
		switch {
		case at != nil && at.suspended:
			return metrics.TaskSuspended
		case at != nil:
			return metrics.TaskRunning
		}
		return metrics.TaskReady
	case boinc.PhaseUploading:
		return metrics.TaskUploading
	case boinc.PhaseUploaded:
		return metrics.TaskReadyToReport
	case boinc.PhaseComputeError, boinc.PhaseDownloadFailed, boinc.PhaseUploadFailed:
		return metrics.TaskFailed
	case boinc.PhaseAborted:
		return metrics.TaskAborted
	}
	return ""
}

func (d *Daemon) metricsSnapshot(now time.Time) *metrics.Snapshot {
	cpu, gpu, network := d.suspendReasons(now)
	s := &metrics.Snapshot{
		Build: metrics.BuildInfo{
			Version:       fmt.Sprintf("%d.%d.%d", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease),
			ClientVersion: fmt.Sprintf("%d.%d.%d", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease),
			Platform:      d.primaryPlatform(),
		},
		Daemon: metrics.DaemonState{
			StartTime:            d.startTime,
			RunMode:              d.modes.Run.Current(now),
			GPUMode:              d.modes.GPU.Current(now),
			NetworkMode:          d.modes.Network.Current(now),
			TaskSuspendReason:    cpu,
			GPUSuspendReason:     gpu,
			NetworkSuspendReason: network,
		},
		Host: metrics.HostFacts{
			OSName: d.host.OSName, OSVersion: d.host.OSVersion,
			CPUVendor: d.host.PVendor, CPUModel: d.host.PModel,
			LogicalCPUs: d.host.PNCPUs, UsableCPUs: float64(d.usableCPUs()),
			MemoryBytes: d.host.MNBytes, SwapBytes: d.host.MSwap,
			DiskTotalBytes: d.host.DTotal, DiskFreeBytes: d.host.DFree,
			FPOPS: d.host.PFpops, IOPS: d.host.PIops,
		},
	}
	if d.host.PCalculated > 0 {
		s.Host.BenchmarkTime = time.Unix(int64(d.host.PCalculated), 0)
	}
	models := map[string]int{}
	for _, g := range d.gpu.usable {
		models[g.Name]++
	}
	for m, n := range models {
		s.Host.GPUs = append(s.Host.GPUs, metrics.GPUCount{Type: workfetch.NVIDIA.String(), Model: m, Count: n})
	}
	sort.Slice(s.Host.GPUs, func(i, j int) bool { return s.Host.GPUs[i].Model < s.Host.GPUs[j].Model })
	for _, w := range d.healthWarnings() {
		s.HealthWarnings = append(s.HealthWarnings, w.Name)
	}

	type tk struct{ state, rsc string }
	tasks := map[tk]int{}
	inProgress := map[string]int{}
	for _, r := range d.st.sortedResults() {
		st := d.taskState(r)
		if st == "" {
			continue
		}
		rsc, _, _ := d.resultRsc(r)
		tasks[tk{st, rsc.String()}]++
		if r.Phase.Unfinished() {
			inProgress[r.ProjectURL]++
		}
	}
	for k, n := range tasks {
		s.Tasks = append(s.Tasks, metrics.TaskCount{State: k.state, Resource: k.rsc, Count: n})
	}
	sort.Slice(s.Tasks, func(i, j int) bool {
		if s.Tasks[i].State != s.Tasks[j].State {
			return s.Tasks[i].State < s.Tasks[j].State
		}
		return s.Tasks[i].Resource < s.Tasks[j].Resource
	})

	activeUp, activeDown := map[string]int{}, map[string]int{}
	for _, x := range d.xfers {
		if x.upload {
			activeUp[x.project]++
		} else {
			activeDown[x.project]++
		}
	}
	h := d.coreHost()
	for _, p := range d.st.sortedProjects() {
		sched := d.schedState(p.MasterURL)
		pc := d.counters(p.MasterURL)
		ps := metrics.ProjectStats{
			URL: p.MasterURL, Name: p.DisplayName(),
			ResourceShare: p.ResourceShare, Suspended: p.Suspended, NoNewTasks: p.NoNewTasks,
			TasksInProgress: inProgress[p.MasterURL], DCF: sched.DCF,
			RPCBackoff:      max(p.MinRPCTime.Sub(now), 0),
			UserTotalCredit: p.UserTotalCredit, UserExpavgCredit: p.UserExpavgCredit,
			HostTotalCredit: p.HostTotalCredit, HostExpavgCredit: p.HostExpavgCredit,
			Transfers: metrics.TransferStats{
				UploadedBytesTotal: float64(pc.bytesUp), DownloadedBytesTotal: float64(pc.bytesDown),
				ActiveUploads: activeUp[p.MasterURL], ActiveDownloads: activeDown[p.MasterURL],
				FailedUploadsTotal: pc.upFailures, FailedDownloadsTotal: pc.downFailures,
			},
		}
		for r := range workfetch.NumRsc {
			if h.Instances[r] <= 0 {
				continue
			}
			pr := metrics.ProjectResource{
				Resource:               workfetch.Rsc(r).String(),
				ProcessingSecondsTotal: pc.processing[r],
				Debt:                   sched.Debt[r],
			}
			if b := sched.Backoff[r]; b.Active(now) {
				pr.FetchBackoff = b.Until.Sub(now)
			}
			ps.Resources = append(ps.Resources, pr)
		}
		outcomes := make([]string, 0, len(pc.rpcs))
		for o := range pc.rpcs {
			outcomes = append(outcomes, o)
		}
		sort.Strings(outcomes)
		for _, o := range outcomes {
			ps.SchedulerRPCsTotal = append(ps.SchedulerRPCsTotal, metrics.RPCCount{Outcome: o, Count: uint64(pc.rpcs[o])})
		}
		s.Projects = append(s.Projects, ps)
	}
	return s
}
