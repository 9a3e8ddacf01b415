package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/shirou/gopsutil/v3/disk"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/metrics"
	"github.com/boincd/boincd/workfetch"
)

// Health warning names: stable identifiers shown by `boincd status`, in
// the event log and as the metrics label boincd_health_warning{name}.
const (
	HealthNoProjects    = metrics.HealthNoProjects
	HealthNoGPU         = metrics.HealthNoGPUFound
	HealthBackedOff     = metrics.HealthProjectBackedOff
	HealthXferBackedOff = metrics.HealthTransferBackedOff
	HealthDiskLimit     = metrics.HealthDiskLimitReached
	HealthClockJump     = metrics.HealthClockJump
	HealthStateWrite    = metrics.HealthStateWriteFailed
	healthCheckPeriod   = 10 * time.Second
	// diskCheckPeriod: the data directory walk is the costly part.
	diskCheckPeriod = time.Minute
	// clockJumpMin is how far wall time may drift from monotonic time
	// between two checks before it counts as a jump (NTP slews, it never
	// steps by this much).
	clockJumpMin = 5 * time.Minute
	// clockJumpShown is how long a clock jump stays a warning.
	clockJumpShown = 24 * time.Hour
	backedOffLong  = 24 * time.Hour
	// xferBackedOffLong: a transfer retried for this long is a warning.
	xferBackedOffLong = 6 * time.Hour
)

type healthState struct {
	active    map[string]guirpc.HealthWarning
	lastCheck time.Time // with its monotonic reading
	lastDisk  time.Time
	diskUsed  float64 // bytes under the data directory at lastDisk
	diskFull  bool
	jumpUntil time.Time
	jumpMsg   string
}

// diskAllowed is how many bytes boincd may use under the data directory:
// the least of disk_max_used_gb, disk_max_used_pct of the disk, and what
// leaves disk_min_free_gb free (SCHEDULING §4: the C++ client's
// allowed_disk_usage, as 7.20 computes it). A 0 for either maximum means
// no such limit; the free-space limit always holds, so boincd never
// counts on more than the disk has. Its "GB" are 2^30 bytes and the
// order of operations is the C++ client's, so the share a scheduler is
// told matches the reference client's to the last digit.
func diskAllowed(total, free, used float64, p prefsView) float64 {
	// float64() keeps Go from fusing the product into the subtraction.
	allowed := free + used - float64(p.DiskMinFreeGB*giga)
	if p.DiskMaxUsedPct != 0 {
		allowed = min(allowed, p.DiskMaxUsedPct*total*0.01)
	}
	if p.DiskMaxUsedGB != 0 {
		allowed = min(allowed, p.DiskMaxUsedGB*giga)
	}
	return max(allowed, 0)
}

// clockJump is how far the wall clock moved beyond the monotonic clock
// over the same interval, or 0 if within clockJumpMin.
func clockJump(mono, wall time.Duration) time.Duration {
	if j := wall - mono; j > clockJumpMin || j < -clockJumpMin {
		return j
	}
	return 0
}

// prefsView is the part of the preferences the disk rule reads.
type prefsView struct{ DiskMaxUsedGB, DiskMaxUsedPct, DiskMinFreeGB float64 }

// checkHealth re-evaluates the warnings every healthCheckPeriod; each
// change is logged once (warning on, info off).
func (d *Daemon) checkHealth(now time.Time) {
	h := &d.health
	if !h.lastCheck.IsZero() && now.Sub(h.lastCheck) < healthCheckPeriod {
		return
	}
	if !h.lastCheck.IsZero() {
		// now and lastCheck both carry monotonic readings: Sub uses them,
		// Round(0) strips them to compare wall clocks.
		if jump := clockJump(now.Sub(h.lastCheck), now.Round(0).Sub(h.lastCheck.Round(0))); jump != 0 {
			h.jumpUntil = now.Add(clockJumpShown)
			h.jumpMsg = fmt.Sprintf("the system clock jumped by %s at %s; deadlines and backoffs were computed across it", jump.Round(time.Second), now.Format(time.RFC3339))
		}
	}
	h.lastCheck = now

	want := map[string]string{}
	if now.Before(h.jumpUntil) {
		want[HealthClockJump] = h.jumpMsg
	}
	if len(d.st.projects) == 0 {
		want[HealthNoProjects] = "no project is attached: add one to the config (README: Attach a project) or with boinccmd --project_attach"
	}
	if d.flushFailing {
		want[HealthStateWrite] = "the client state cannot be written (disk full or read-only?): nothing new is started until it can"
	}
	stuck := 0
	for _, f := range d.st.files {
		if f.Xfer.NumRetries > 0 && !f.Xfer.FirstRequestTime.IsZero() && now.Sub(f.Xfer.FirstRequestTime) > xferBackedOffLong {
			stuck++
		}
	}
	if stuck > 0 {
		want[HealthXferBackedOff] = fmt.Sprintf("%d file transfers have been failing for more than %s", stuck, xferBackedOffLong)
	}
	if name, msg := d.appPolicyProblem(); name != "" {
		want[name] = msg
	}
	if msg := d.noGPUProblem(); msg != "" {
		want[HealthNoGPU] = msg
	}
	var backedOff []string
	for _, p := range d.st.sortedProjects() {
		if p.MinRPCTime.Sub(now) > backedOffLong {
			backedOff = append(backedOff, fmt.Sprintf("%s until %s", p.DisplayName(), p.MinRPCTime.Format(time.RFC3339)))
		}
	}
	if len(backedOff) > 0 {
		want[HealthBackedOff] = fmt.Sprintf("scheduler requests backed off for more than a day: %v", backedOff)
	}
	if h.lastDisk.IsZero() || now.Sub(h.lastDisk) >= diskCheckPeriod {
		h.lastDisk = now
		h.diskUsed = dirSize(d.opt.DataDir)
		total, free := d.host.DTotal, d.host.DFree
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if du, err := disk.UsageWithContext(ctx, d.opt.DataDir); err == nil {
			total, free = float64(du.Total), float64(du.Free)
		}
		cancel()
		allowed := diskAllowed(total, free, h.diskUsed, prefsView{d.prefs.DiskMaxUsedGB, d.prefs.DiskMaxUsedPct, d.prefs.DiskMinFreeGB})
		h.diskFull = h.diskUsed >= allowed
		if h.diskFull {
			want[HealthDiskLimit] = fmt.Sprintf("boincd uses %.2f GB of the %.2f GB the disk preferences allow: no new work is fetched until space is freed or the limits raised", h.diskUsed/1e9, allowed/1e9)
		}
	} else if a, ok := h.active[HealthDiskLimit]; ok && h.diskFull {
		want[HealthDiskLimit] = a.Message
	}
	if h.active == nil {
		h.active = map[string]guirpc.HealthWarning{}
	}
	for name, msg := range want {
		if a, ok := h.active[name]; ok && a.Message == msg {
			continue
		}
		_, was := h.active[name]
		h.active[name] = guirpc.HealthWarning{Name: name, Message: msg, Since: now}
		if !was {
			lvl := slog.LevelWarn
			if name == HealthNoProjects {
				// Every client starts unattached: the C++ client says so at
				// info level. As a warning it became a user alert, which
				// boinccmd prints as "Alert from client" after an attach.
				lvl = slog.LevelInfo
			}
			d.log.Log(context.Background(), lvl, "health warning", slog.String("warning", name), slog.String("problem", msg))
		}
	}
	for name := range h.active {
		if _, ok := want[name]; !ok {
			delete(h.active, name)
			d.log.Info("health warning cleared", slog.String("warning", name))
		}
	}
	d.syncClientNotices(now)
}

func coprocType(v *boinc.AppVersion) string {
	if v.Coproc == nil {
		return ""
	}
	return v.Coproc.Type
}

// noGPUProblem: GPUs are expected (the config selects or excludes some,
// or a project has sent NVIDIA app versions) but none is usable.
func (d *Daemon) noGPUProblem() string {
	if d.gpusDisabled() || !d.gpu.probed || len(d.gpu.usable) > 0 {
		return ""
	}
	why := ""
	switch {
	case d.cfg.UseAllGPUs:
		why = "use_all_gpus is set"
	case len(d.cfg.GPUExclude) > 0:
		why = "gpu_exclude names GPUs"
	default:
		for _, v := range d.st.versions {
			if r, ok := workfetch.RscByName(coprocType(v)); ok && r == workfetch.NVIDIA {
				why = "a project sent NVIDIA app versions"
				break
			}
		}
	}
	if why == "" {
		return ""
	}
	return why + ", but no usable NVIDIA GPU was found (driver or libnvidia-ml missing?)"
}

// healthWarnings is the active list, by name.
func (d *Daemon) healthWarnings() []guirpc.HealthWarning {
	out := make([]guirpc.HealthWarning, 0, len(d.health.active))
	for _, w := range d.health.active {
		out = append(out, w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
