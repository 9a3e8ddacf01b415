package hostcond

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// Prefs are the global preferences that decide suspension (lib/prefs.cpp
// GLOBAL_PREFS; the defaults are DefaultPrefs). boinc.Prefs lacks most of
// them, hence this type.
type Prefs struct {
	// RunOnBatteries is run_on_batteries: compute on battery power.
	RunOnBatteries bool
	// RunIfUserActive is run_if_user_active: compute while the user is
	// at the computer.
	RunIfUserActive bool
	// RunGPUIfUserActive is run_gpu_if_user_active: the same for GPU work.
	RunGPUIfUserActive bool
	// IdleTimeToRun is idle_time_to_run in minutes: the user counts as
	// active until this long after the last input.
	IdleTimeToRun float64
	// SuspendIfNoRecentInput is suspend_if_no_recent_input in minutes:
	// suspend once there has been no input for this long; 0 = off.
	SuspendIfNoRecentInput float64
	// SuspendCPUUsage is suspend_cpu_usage in percent: suspend while
	// non-BOINC CPU usage is above it and the user is active; 0 = off.
	SuspendCPUUsage float64
	// NIUSuspendCPUUsage is niu_suspend_cpu_usage, the same while the user
	// is not active ("not in use").
	NIUSuspendCPUUsage float64
	// CPU is start_hour/end_hour: when computing is allowed.
	CPU Window
	// Net is net_start_hour/net_end_hour: when network use is allowed.
	Net Window
	// Days are the day_prefs overrides, indexed by time.Weekday
	// (Sunday = 0, as <day_of_week>).
	Days [7]DayPrefs
}

// DayPrefs is one <day_prefs> element: the windows for that weekday that
// replace Prefs.CPU and Prefs.Net when present.
type DayPrefs struct {
	CPU, Net       Window
	HasCPU, HasNet bool
}

// Window is an allowed time-of-day span in local hours (0–24). Start ==
// End means no limit; Start > End wraps over midnight (22 → 6 allows the
// night). Start 24, End 0 is BOINC's encoding of "never".
type Window struct {
	Start, End float64
}

// DefaultPrefs are the C++ client's defaults (GLOBAL_PREFS::defaults).
func DefaultPrefs() Prefs {
	return Prefs{
		RunIfUserActive:    true,
		IdleTimeToRun:      3,
		SuspendCPUUsage:    25,
		NIUSuspendCPUUsage: 50,
	}
}

// FromBoinc is DefaultPrefs with the fields boinc.Prefs has. As in
// lib/prefs.cpp, a suspend_cpu_usage given without niu_suspend_cpu_usage
// is also the "not in use" value, and boinc.Prefs has no niu field.
func FromBoinc(bp boinc.Prefs) Prefs {
	p := DefaultPrefs()
	p.RunIfUserActive = bp.RunIfUserActive
	p.SuspendCPUUsage = bp.SuspendCPUUsage
	p.NIUSuspendCPUUsage = bp.SuspendCPUUsage
	return p
}

// Suspended reports whether hour (0–24, local) is outside the window.
// It is lib/prefs.cpp TIME_SPAN::suspended, boundaries included: a
// 8–17 window still allows 17:00:00, a 22–6 window suspends at 06:00:00.
func (w Window) Suspended(hour float64) bool {
	switch {
	case w.Start == w.End:
		return false
	case w.Start == 0 && w.End == 24:
		return false
	case w.Start == 24 && w.End == 0:
		return true
	case w.Start < w.End:
		return hour < w.Start || hour > w.End
	default:
		return hour >= w.End && hour < w.Start
	}
}

// Limited reports whether the window restricts anything at all.
func (w Window) Limited() bool {
	return !(w.Start == w.End || (w.Start == 0 && w.End == 24))
}

// String is "08:00-17:00", "always" without limit, or "never".
func (w Window) String() string {
	if !w.Limited() {
		return "always"
	}
	if w.Start == 24 && w.End == 0 {
		return "never"
	}
	return clock(w.Start) + "-" + clock(w.End)
}

func clock(h float64) string {
	m := int(math.Round(h * 60))
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// cpuWindow and netWindow are the windows in force on t's weekday
// (TIME_PREFS::suspended: a day_prefs entry replaces the general one).
func (p Prefs) cpuWindow(t time.Time) Window {
	if d := p.Days[t.Weekday()]; d.HasCPU {
		return d.CPU
	}
	return p.CPU
}

func (p Prefs) netWindow(t time.Time) Window {
	if d := p.Days[t.Weekday()]; d.HasNet {
		return d.Net
	}
	return p.Net
}

// TimeWindowsClose reports whether the computing or network time-of-day
// window will be closed at t (scheduler_rpc_poll's suspend_soon, asked
// for now + 30 minutes): finished work is then reported at once, before
// the host goes quiet.
func (p Prefs) TimeWindowsClose(t time.Time) bool {
	h := hourOf(t)
	return p.cpuWindow(t).Suspended(h) || p.netWindow(t).Suspended(h)
}

// hourOf is the local hour of t in t's own time zone, to the second as in
// TIME_PREFS::suspended.
func hourOf(t time.Time) float64 {
	return float64(t.Hour()*3600+t.Minute()*60+t.Second()) / 3600
}

// ApplyXML sets every preference of p that raw (a <global_preferences>
// document, e.g. global_prefs_override.xml) names, including day_prefs.
// Other elements, and <venue> sections, are skipped as the C++ client
// skips what it does not know. A value that is not a number, an hour
// outside 0–24 or a weekday outside 0–6 is an error naming the element
// and line, and p is left unchanged.
func (p *Prefs) ApplyXML(raw []byte) error {
	q := *p
	floats := map[string]*float64{
		"idle_time_to_run":           &q.IdleTimeToRun,
		"suspend_if_no_recent_input": &q.SuspendIfNoRecentInput,
		"suspend_cpu_usage":          &q.SuspendCPUUsage,
		"niu_suspend_cpu_usage":      &q.NIUSuspendCPUUsage,
	}
	hours := map[string]*float64{
		"start_hour":     &q.CPU.Start,
		"end_hour":       &q.CPU.End,
		"net_start_hour": &q.Net.Start,
		"net_end_hour":   &q.Net.End,
	}
	bools := map[string]*bool{
		"run_on_batteries":       &q.RunOnBatteries,
		"run_if_user_active":     &q.RunIfUserActive,
		"run_gpu_if_user_active": &q.RunGPUIfUserActive,
	}
	dec := xml.NewDecoder(bytes.NewReader(raw))
	seenRoot, niuGiven, usageGiven := false, false, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("global preferences line %d: %w", lineOf(raw, dec.InputOffset()), err)
		}
		start, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if !seenRoot {
			if start.Name.Local != "global_preferences" {
				return fmt.Errorf("global preferences: root element is <%s>, want <global_preferences>", start.Name.Local)
			}
			seenRoot = true
			continue
		}
		name := start.Name.Local
		line := lineOf(raw, dec.InputOffset())
		switch {
		case name == "day_prefs":
			if err := q.parseDay(dec, start, raw); err != nil {
				return fmt.Errorf("global preferences line %d: <day_prefs>: %w", line, err)
			}
		case floats[name] != nil || hours[name] != nil:
			v, err := elementFloat(dec, start)
			if err != nil {
				return fmt.Errorf("global preferences line %d: %w", line, err)
			}
			if f := hours[name]; f != nil {
				if v < 0 || v > 24 {
					return fmt.Errorf("global preferences line %d: <%s>%g</%s>: hour outside 0-24", line, name, v, name)
				}
				*f = v
			} else {
				if v < 0 {
					return fmt.Errorf("global preferences line %d: <%s>%g</%s>: negative", line, name, v, name)
				}
				*floats[name] = v
			}
			niuGiven = niuGiven || name == "niu_suspend_cpu_usage"
			usageGiven = usageGiven || name == "suspend_cpu_usage"
		case bools[name] != nil:
			v, err := elementBool(dec, start)
			if err != nil {
				return fmt.Errorf("global preferences line %d: %w", line, err)
			}
			*bools[name] = v
		default:
			if err := dec.Skip(); err != nil {
				return fmt.Errorf("global preferences line %d: <%s>: %w", line, name, err)
			}
		}
	}
	if !seenRoot {
		return errors.New("global preferences: no <global_preferences> element")
	}
	if usageGiven && !niuGiven {
		q.NIUSuspendCPUUsage = q.SuspendCPUUsage
	}
	*p = q
	return nil
}

// parseDay reads one <day_prefs> (lib/prefs.cpp GLOBAL_PREFS::parse_day):
// a window counts only when both of its hours are given.
func (p *Prefs) parseDay(dec *xml.Decoder, start xml.StartElement, raw []byte) error {
	day := -1
	var cpu, net Window
	var got [4]bool
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.EndElement:
			if day < 0 {
				return errors.New("no <day_of_week>")
			}
			d := &p.Days[day]
			if got[0] && got[1] {
				d.CPU, d.HasCPU = cpu, true
			}
			if got[2] && got[3] {
				d.Net, d.HasNet = net, true
			}
			return nil
		case xml.StartElement:
			targets := map[string]*float64{"start_hour": &cpu.Start, "end_hour": &cpu.End, "net_start_hour": &net.Start, "net_end_hour": &net.End}
			idx := map[string]int{"start_hour": 0, "end_hour": 1, "net_start_hour": 2, "net_end_hour": 3}
			if t.Name.Local == "day_of_week" {
				v, err := elementFloat(dec, t)
				if err != nil {
					return err
				}
				if v < 0 || v > 6 || v != math.Trunc(v) {
					return fmt.Errorf("<day_of_week>%g</day_of_week>: not a weekday 0-6", v)
				}
				day = int(v)
				continue
			}
			f, ok := targets[t.Name.Local]
			if !ok {
				if err := dec.Skip(); err != nil {
					return fmt.Errorf("<%s>: %w", t.Name.Local, err)
				}
				continue
			}
			v, err := elementFloat(dec, t)
			if err != nil {
				return err
			}
			if v < 0 || v > 24 {
				return fmt.Errorf("<%s>%g</%s>: hour outside 0-24", t.Name.Local, v, t.Name.Local)
			}
			*f = v
			got[idx[t.Name.Local]] = true
		}
	}
}

func elementText(dec *xml.Decoder, start xml.StartElement) (string, error) {
	var s string
	if err := dec.DecodeElement(&s, &start); err != nil {
		return "", fmt.Errorf("<%s>: %w", start.Name.Local, err)
	}
	return strings.TrimSpace(s), nil
}

func elementFloat(dec *xml.Decoder, start xml.StartElement) (float64, error) {
	s, err := elementText(dec, start)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("<%s>%s</%s>: not a number", start.Name.Local, s, start.Name.Local)
	}
	return v, nil
}

// elementBool follows lib/parse.cpp parse_bool: <x/> is true, otherwise
// the number inside decides.
func elementBool(dec *xml.Decoder, start xml.StartElement) (bool, error) {
	s, err := elementText(dec, start)
	if err != nil {
		return false, err
	}
	if s == "" {
		return true, nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false, fmt.Errorf("<%s>%s</%s>: not 0 or 1", start.Name.Local, s, start.Name.Local)
	}
	return v != 0, nil
}

func lineOf(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}
