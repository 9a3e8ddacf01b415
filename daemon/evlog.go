package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/hostcond"
	"github.com/boincd/boincd/workfetch"
)

// The records here exist for the event log that BOINC Manager and
// boinccmd --get_messages show (eventlog words them as the C++ client
// does); the journal gets them with their attributes like any other.

// logStarting is the first record of a run, before the state is read: the
// C++ client's "Starting BOINC client version …" and "Data directory".
func (d *Daemon) logStarting() {
	d.log.Info("boincd starting",
		slog.String("version", boincVersion()),
		slog.String("platform", buildPlatform()),
		slog.String("data_dir", d.opt.DataDir))
}

func boincVersion() string {
	return fmt.Sprintf("%d.%d.%d", boinc.ClientMajor, boinc.ClientMinor, boinc.ClientRelease)
}

// logHost describes the probed host, as the C++ client does at start.
func (d *Daemon) logHost() {
	h := &d.host
	d.log.Info("host",
		slog.String("host_name", h.DomainName),
		slog.Int("cpus", h.PNCPUs),
		slog.String("cpu_vendor", h.PVendor),
		slog.String("cpu_model", h.PModel),
		slog.String("cpu_features", h.PFeatures),
		slog.String("os_name", h.OSName),
		slog.String("os_version", h.OSVersion),
		slog.Float64("memory_bytes", h.MNBytes),
		slog.Float64("swap_bytes", h.MSwap),
		slog.Float64("disk_total_bytes", h.DTotal),
		slog.Float64("disk_free_bytes", h.DFree),
		slog.Int("utc_offset_s", h.Timezone))
}

// suspendLog remembers the suspend reasons last logged (computing, GPU,
// network), so that only changes are logged.
type suspendLog struct {
	logged [3]uint32
}

// logSuspendChanges logs what starts or stops being suspended, with the
// reason, whatever the cause (run modes or host conditions): the C++
// client's "Suspending computation - user request" and "Resuming
// computation". The reasons are single SUSPEND_REASON values, not texts
// with countdowns, so a steady suspension is logged once.
func (d *Daemon) logSuspendChanges(now time.Time) {
	cpu, gpu, network := d.suspendReasons(now)
	// The GPU has a line of its own (suspendReasons has none without
	// GPUs) only while computing as a whole is not suspended, which says
	// it all.
	if cpu != 0 {
		gpu = 0
	}
	cur := [3]uint32{cpu, gpu, network}
	type what struct{ suspended, resumed string }
	names := [3]what{
		{"computing suspended", "computing resumed"},
		{"GPU suspended", "GPU resumed"},
		{"network suspended", "network resumed"},
	}
	for i, r := range cur {
		old := d.suspendLog.logged[i]
		switch {
		case r == old:
		case r == 0:
			d.log.Info(names[i].resumed)
		default:
			d.log.Info(names[i].suspended, slog.String("reason", hostcond.ReasonString(r)), slog.Uint64("reason_code", uint64(r)))
		}
	}
	d.suspendLog.logged = cur
}

// rscLongName is a resource as the C++ client's event log names it
// ("Requesting new tasks for CPU and NVIDIA GPU").
func rscLongName(r workfetch.Rsc) string {
	switch r {
	case workfetch.CPU:
		return "CPU"
	case workfetch.NVIDIA:
		return "NVIDIA GPU"
	case workfetch.AMD:
		return "AMD/ATI GPU"
	case workfetch.Intel:
		return "Intel GPU"
	}
	return r.String()
}

// requestAttrs say what a scheduler request asks for: the resources it
// requests work for, or why it asks for none.
func requestAttrs(p *boinc.Project, work workfetch.Request) []any {
	var rsc []string
	for r, secs := range work.Secs {
		if secs > 0 {
			rsc = append(rsc, rscLongName(workfetch.Rsc(r)))
		}
	}
	if len(rsc) > 0 {
		return []any{slog.Any("requesting", rsc)}
	}
	why := "don't need"
	switch {
	case p.Suspended:
		why = "project is suspended"
	case p.DetachPending:
		why = "project is being detached"
	case p.NoNewTasks:
		why = `"no new tasks" requested via Manager`
	}
	return []any{slog.String("not_requesting", why)}
}
