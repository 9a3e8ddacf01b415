package daemon

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/atomicfile"
)

// PrefsOverrideFile is where BOINC Manager and boinccmd put local
// preferences (set_global_prefs_override); they win over the config file.
const PrefsOverrideFile = "global_prefs_override.xml"

// effectivePrefs is the config's preferences with the override file on
// top (the C++ client's precedence, with our config in place of the
// project's web preferences).
func (d *Daemon) effectivePrefs() boinc.Prefs {
	p := d.cfg.BoincPrefs()
	// An account manager's preferences are the web preferences.
	d.acctMgrPrefs(&p)
	raw, err := os.ReadFile(filepath.Join(d.opt.DataDir, PrefsOverrideFile))
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			d.log.Warn("cannot read preferences override", slog.Any("err", err))
		}
		return p
	}
	if err := applyPrefsXML(&p, raw); err != nil {
		d.log.Error("preferences override ignored", slog.String("file", PrefsOverrideFile), slog.Any("err", err))
		p = d.cfg.BoincPrefs()
		d.acctMgrPrefs(&p)
		return p
	}
	return p
}

// applyPrefsXML sets every preference the XML names (lib/prefs.cpp
// element names); unknown elements are skipped as the C++ client does.
func applyPrefsXML(p *boinc.Prefs, raw []byte) error {
	floats := map[string]*float64{
		"work_buf_min_days":             &p.WorkBufMinDays,
		"work_buf_additional_days":      &p.WorkBufAdditionalDays,
		"max_ncpus_pct":                 &p.MaxNCPUsPct,
		"cpu_usage_limit":               &p.CPUUsageLimit,
		"cpu_scheduling_period_minutes": &p.CPUSchedulingPeriodMinutes,
		"disk_interval":                 &p.DiskInterval,
		"disk_max_used_gb":              &p.DiskMaxUsedGB,
		"disk_max_used_pct":             &p.DiskMaxUsedPct,
		"disk_min_free_gb":              &p.DiskMinFreeGB,
		"ram_max_used_busy_pct":         &p.RAMMaxUsedBusyPct,
		"ram_max_used_idle_pct":         &p.RAMMaxUsedIdlePct,
		"suspend_cpu_usage":             &p.SuspendCPUUsage,
		"max_bytes_sec_up":              &p.MaxBytesSecUp,
		"max_bytes_sec_down":            &p.MaxBytesSecDown,
		"daily_xfer_limit_mb":           &p.DailyXferLimitMB,
	}
	ints := map[string]*int{
		"daily_xfer_period_days": &p.DailyXferPeriodDays,
	}
	bools := map[string]*bool{
		"leave_apps_in_memory": &p.LeaveAppsInMemory,
		"run_if_user_active":   &p.RunIfUserActive,
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	depth := 0
	seenRoot := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", lineOf(raw, dec.InputOffset()), err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			if depth == 1 {
				if t.Name.Local != "global_preferences" {
					return fmt.Errorf("root element is <%s>, want <global_preferences>", t.Name.Local)
				}
				seenRoot = true
				continue
			}
			if depth != 2 {
				continue
			}
			var text string
			if err := dec.DecodeElement(&text, &t); err != nil {
				return fmt.Errorf("<%s>: %w", t.Name.Local, err)
			}
			depth--
			text = strings.TrimSpace(text)
			if f, ok := floats[t.Name.Local]; ok {
				v, err := strconv.ParseFloat(text, 64)
				if err != nil {
					return fmt.Errorf("<%s>%s</%s>: not a number", t.Name.Local, text, t.Name.Local)
				}
				*f = v
			} else if n, ok := ints[t.Name.Local]; ok {
				// BOINC's parse_int reads the leading number ("3.0" is 3).
				v, err := strconv.ParseFloat(text, 64)
				if err != nil || v < math.MinInt32 || v > math.MaxInt32 {
					return fmt.Errorf("<%s>%s</%s>: not an integer", t.Name.Local, text, t.Name.Local)
				}
				*n = int(v)
			} else if b, ok := bools[t.Name.Local]; ok {
				*b = text == "" || text == "1"
			}
		case xml.EndElement:
			depth--
		}
	}
	if !seenRoot {
		return errors.New("no <global_preferences> element")
	}
	return nil
}

func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}

// setPrefsOverride writes (or, with an empty body, removes) the override
// file; it takes effect on read_global_prefs_override, as in BOINC.
func (d *Daemon) setPrefsOverride(body string) error {
	path := filepath.Join(d.opt.DataDir, PrefsOverrideFile)
	if strings.TrimSpace(body) == "" {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	var probe boinc.Prefs
	if err := applyPrefsXML(&probe, []byte(body)); err != nil {
		return fmt.Errorf("preferences override refused: %w", err)
	}
	return atomicfile.WriteFile(path, []byte(body), 0o644)
}

// prefsOverride returns the raw override file, or "" without one. It
// reads only the data directory's path, so any goroutine may call it.
func (d *Daemon) prefsOverride() string {
	b, err := os.ReadFile(filepath.Join(d.opt.DataDir, PrefsOverrideFile))
	if err != nil {
		return ""
	}
	return string(b)
}

// rereadPrefs applies the config and override preferences now.
func (d *Daemon) rereadPrefs() {
	old := d.prefs
	d.prefs = d.effectivePrefs()
	d.refreshHostPrefs()
	d.runner.SetThrottle(d.prefs.CPUUsageLimit)
	if old != d.prefs {
		d.log.Info("preferences changed",
			slog.Float64("work_buf_min_days", d.prefs.WorkBufMinDays),
			slog.Float64("work_buf_additional_days", d.prefs.WorkBufAdditionalDays),
			slog.Float64("max_ncpus_pct", d.prefs.MaxNCPUsPct))
	}
}
