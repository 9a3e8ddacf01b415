package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// The Computing preferences view: BOINC Manager's dialog
// (clientgui/DlgAdvPreferences.cpp) on the web. It shows the preferences
// in force (get_global_prefs_working) and saves what the form holds as
// the local override the way the dialog's OK does: every field the dialog
// has written into global_prefs_override.xml (GLOBAL_PREFS::write_subset
// with the dialog's mask), then re-read (set_global_prefs_override,
// read_global_prefs_override: guirpc.SetPrefsOverride and
// guirpc.ReadPrefsOverride, the daemon's one implementation). "Use
// defaults" is the dialog's Clear: an empty override, which deletes the
// file.

// prefField is one number of the form: its name (the prefs element's,
// and the form field's), its words, and the bounds ValidateInput holds
// it to. check names the checkbox that enables it ("" for none).
type prefField struct {
	name, label, unit string
	min, max          float64
	check             string
}

// prefFields are the dialog's numbers, in its order, with
// CDlgAdvPreferences::ValidateInput's bounds (IsValidFloatValue alone
// is taken as "not negative").
var prefFields = []prefField{
	{"max_ncpus_pct", "Use at most", "% of the CPUs", 0, 100, ""},
	{"cpu_usage_limit", "Use at most", "% of CPU time", 0, 100, ""},
	{"idle_time_to_run", "'In use' means mouse or keyboard input in the last", "minutes", 0, 10000, ""},
	{"suspend_if_no_recent_input", "Suspend when no mouse or keyboard input in the last (0 = never)", "minutes", 0, 10000, ""},
	{"suspend_cpu_usage", "Suspend when non-BOINC CPU usage is above", "%", 1, 100, "suspend_cpu_usage_on"},
	{"work_buf_min_days", "Store at least", "days of work", 0, 10, ""},
	{"work_buf_additional_days", "Store up to an additional", "days of work", 0, 10, ""},
	{"cpu_scheduling_period_minutes", "Switch between tasks every", "minutes", 1, math.Inf(1), ""},
	{"disk_interval", "Request tasks to checkpoint at most every", "seconds", 0, math.Inf(1), ""},
	{"disk_max_used_gb", "Use no more than", "GB of disk", 0, math.Inf(1), "disk_max_used_gb_on"},
	{"disk_max_used_pct", "Use no more than", "% of total disk", 0, 100, "disk_max_used_pct_on"},
	{"disk_min_free_gb", "Leave at least", "GB of disk free", 0, math.Inf(1), "disk_min_free_gb_on"},
	{"ram_max_used_busy_pct", "When computer is in use, use at most", "% of memory", 1, 100, ""},
	{"ram_max_used_idle_pct", "When computer is not in use, use at most", "% of memory", 1, 100, ""},
	{"max_bytes_sec_down", "Limit download rate to", "KB/second", 0, math.Inf(1), "max_bytes_sec_down_on"},
	{"max_bytes_sec_up", "Limit upload rate to", "KB/second", 0, math.Inf(1), "max_bytes_sec_up_on"},
	{"daily_xfer_limit_mb", "Limit usage to", "MB", 0, math.Inf(1), "daily_xfer_on"},
	{"daily_xfer_period_days", "every", "days", 0, math.Inf(1), "daily_xfer_on"},
}

// prefTimes are the dialog's daily schedule ("Compute only between"),
// HH:MM; check enables the pair.
var prefTimes = []struct{ start, end, check, label string }{
	{"start_hour", "end_hour", "cpu_window_on", "Compute only between"},
	{"net_start_hour", "net_end_hour", "net_window_on", "Transfer files only between"},
}

// prefsView is the form: each field's text as shown or as posted, each
// checkbox, and what went wrong.
type prefsView struct {
	CSRF     string
	V        map[string]string
	On       map[string]bool
	Override bool   // a local override is in force
	Error    string // the posted form's fault, naming the field
	ErrField string // the faulty field's name (focus and aria-invalid)
	Saved    string // what was done
}

// field is one number's template data.
type prefFieldView struct {
	Name, Label, Unit, Value, Check string
	Invalid                         bool
}

func (v *prefsView) Fields(names ...string) []prefFieldView {
	var out []prefFieldView
	for _, n := range names {
		for _, f := range prefFields {
			if f.name == n {
				out = append(out, prefFieldView{Name: f.name, Label: f.label, Unit: f.unit, Value: v.V[f.name], Check: f.check, Invalid: v.ErrField == f.name})
			}
		}
	}
	return out
}

// num is a preference as the dialog shows it: rounded to hundredths
// (RoundToHundredths), without trailing zeros.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64)
}

// hhmm is an hour of the day as the dialog shows it (DoubleToTimeString).
func hhmm(h float64) string {
	m := int(math.Round(h * 60))
	return fmt.Sprintf("%02d:%02d", m/60, m%60)
}

// prefsViewOf is CDlgAdvPreferences::ReadPreferenceSettings: the prefs
// in force as the dialog fills its controls.
func prefsViewOf(p boinc.Prefs, override bool) prefsView {
	v := prefsView{V: map[string]string{}, On: map[string]bool{}, Override: override}
	pct := func(f float64) float64 { // 0 means no restriction: shown as 100
		if f == 0 {
			return 100
		}
		return f
	}
	v.V["max_ncpus_pct"] = num(pct(p.MaxNCPUsPct))
	v.V["cpu_usage_limit"] = num(pct(p.CPUUsageLimit))
	v.On["suspend_on_batteries"] = !p.RunOnBatteries
	v.On["suspend_in_use"] = !p.RunIfUserActive
	v.On["suspend_gpu_in_use"] = !p.RunGPUIfUserActive
	v.V["idle_time_to_run"] = num(p.IdleTimeToRun)
	v.V["suspend_if_no_recent_input"] = num(p.SuspendIfNoRecentInput)
	v.On["suspend_cpu_usage_on"] = p.SuspendCPUUsage > 0
	v.V["suspend_cpu_usage"] = num(p.SuspendCPUUsage)
	if p.SuspendCPUUsage <= 0 {
		v.V["suspend_cpu_usage"] = "25" // the default, ready when ticked
	}
	v.V["work_buf_min_days"] = num(p.WorkBufMinDays)
	v.V["work_buf_additional_days"] = num(p.WorkBufAdditionalDays)
	v.V["cpu_scheduling_period_minutes"] = num(p.CPUSchedulingPeriodMinutes)
	v.V["disk_interval"] = num(p.DiskInterval)
	v.On["disk_max_used_gb_on"] = p.DiskMaxUsedGB > 0
	v.V["disk_max_used_gb"] = num(p.DiskMaxUsedGB)
	v.On["disk_max_used_pct_on"] = p.DiskMaxUsedPct > 0 && p.DiskMaxUsedPct < 100
	v.V["disk_max_used_pct"] = num(pct(p.DiskMaxUsedPct))
	v.On["disk_min_free_gb_on"] = p.DiskMinFreeGB > 0
	v.V["disk_min_free_gb"] = num(p.DiskMinFreeGB)
	v.V["ram_max_used_busy_pct"] = num(p.RAMMaxUsedBusyPct)
	v.V["ram_max_used_idle_pct"] = num(p.RAMMaxUsedIdlePct)
	v.On["leave_apps_in_memory"] = p.LeaveAppsInMemory
	v.On["max_bytes_sec_down_on"] = p.MaxBytesSecDown > 0
	v.V["max_bytes_sec_down"] = num(p.MaxBytesSecDown / 1024)
	v.On["max_bytes_sec_up_on"] = p.MaxBytesSecUp > 0
	v.V["max_bytes_sec_up"] = num(p.MaxBytesSecUp / 1024)
	v.On["daily_xfer_on"] = p.DailyXferLimitMB > 0 && p.DailyXferPeriodDays > 0
	v.V["daily_xfer_limit_mb"] = num(p.DailyXferLimitMB)
	v.V["daily_xfer_period_days"] = strconv.Itoa(p.DailyXferPeriodDays)
	v.On["cpu_window_on"] = p.StartHour != p.EndHour
	v.V["start_hour"], v.V["end_hour"] = hhmm(p.StartHour), hhmm(p.EndHour)
	v.On["net_window_on"] = p.NetStartHour != p.NetEndHour
	v.V["net_start_hour"], v.V["net_end_hour"] = hhmm(p.NetStartHour), hhmm(p.NetEndHour)
	return v
}

// prefsChecks are the form's checkboxes.
var prefsChecks = []string{
	"suspend_on_batteries", "suspend_in_use", "suspend_gpu_in_use", "suspend_cpu_usage_on", "leave_apps_in_memory",
	"disk_max_used_gb_on", "disk_max_used_pct_on", "disk_min_free_gb_on", "max_bytes_sec_down_on", "max_bytes_sec_up_on",
	"daily_xfer_on", "cpu_window_on", "net_window_on",
}

// prefsViewFrom is the posted form, to show again with its fault.
func prefsViewFrom(f func(string) string) prefsView {
	v := prefsView{V: map[string]string{}, On: map[string]bool{}}
	for _, pf := range prefFields {
		v.V[pf.name] = f(pf.name)
	}
	for _, t := range prefTimes {
		v.V[t.start], v.V[t.end] = f(t.start), f(t.end)
	}
	for _, c := range prefsChecks {
		v.On[c] = f(c) != ""
	}
	return v
}

// fieldError is a posted value the dialog would refuse.
type fieldError struct{ field, msg string }

func (e *fieldError) Error() string { return e.msg }

// parseHHMM reads a time of day, H:MM or HH:MM from 0:00 to 24:00, as
// hours, with the rules of the Manager dialog's IsValidTimeValue and
// TimeStringToDouble; ok is false for anything else.
func parseHHMM(s string) (float64, bool) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok || len(m) != 2 || len(h) < 1 || len(h) > 2 {
		return 0, false
	}
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh < 0 || mm < 0 || mm > 59 || hh*60+mm > 24*60 {
		return 0, false
	}
	return float64(hh) + float64(mm)/60, true
}

// prefsXML is CDlgAdvPreferences::ValidateInput and
// SavePreferencesSettings, then GLOBAL_PREFS::write_subset: the override
// the form stands for. days are the weekday schedules in force, which
// this form does not edit and the dialog would write back
// (write_day_prefs).
func prefsXML(f func(string) string, days [7]boinc.DayPrefs) (string, error) {
	on := func(name string) bool { return f(name) != "" }
	vals := map[string]float64{}
	for _, pf := range prefFields {
		if pf.check != "" && !on(pf.check) {
			continue
		}
		if pf.name == "idle_time_to_run" && !on("suspend_in_use") && !on("suspend_gpu_in_use") {
			continue // the dialog disables it then, and leaves it out
		}
		words := strings.TrimSpace(pf.label + " … " + pf.unit)
		s := strings.TrimSpace(f(pf.name))
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return "", &fieldError{pf.name, fmt.Sprintf("%q (%s): %q is not a number", pf.name, words, s)}
		}
		if v < pf.min || v > pf.max {
			rng := fmt.Sprintf("between %s and %s", num(pf.min), num(pf.max))
			if math.IsInf(pf.max, 1) {
				rng = "at least " + num(pf.min)
			}
			return "", &fieldError{pf.name, fmt.Sprintf("%q (%s): %s is out of range: the number must be %s", pf.name, words, s, rng)}
		}
		vals[pf.name] = math.Round(v*100) / 100 // RoundToHundredths
	}
	hours := map[string]float64{}
	for _, t := range prefTimes {
		if !on(t.check) {
			hours[t.start], hours[t.end] = 0, 0
			continue
		}
		for _, name := range []string{t.start, t.end} {
			h, ok := parseHHMM(f(name))
			if !ok {
				return "", &fieldError{name, fmt.Sprintf("%q (%s): %q is not a time: it must be between 0:00 and 24:00, written HH:MM", name, t.label, f(name))}
			}
			hours[name] = h
		}
		if hours[t.start] == hours[t.end] {
			return "", &fieldError{t.end, fmt.Sprintf("%q (%s): the start time must be different from the end time", t.end, t.label)}
		}
	}

	var b strings.Builder
	b.WriteString("<global_preferences>\n")
	flag := func(name string, v bool) {
		n := 0
		if v {
			n = 1
		}
		fmt.Fprintf(&b, "   <%s>%d</%s>\n", name, n, name)
	}
	float := func(name string, v float64) { fmt.Fprintf(&b, "   <%s>%f</%s>\n", name, v, name) }
	// The dialog: "suspend GPU while in use" is forced on with "suspend
	// while in use" (UpdateControlStates).
	suspendInUse := on("suspend_in_use")
	flag("run_on_batteries", !on("suspend_on_batteries"))
	flag("run_if_user_active", !suspendInUse)
	flag("run_gpu_if_user_active", !suspendInUse && !on("suspend_gpu_in_use"))
	if v, ok := vals["idle_time_to_run"]; ok {
		float("idle_time_to_run", v)
	}
	float("suspend_if_no_recent_input", vals["suspend_if_no_recent_input"])
	float("suspend_cpu_usage", vals["suspend_cpu_usage"]) // 0 when unticked
	float("start_hour", hours["start_hour"])
	float("end_hour", hours["end_hour"])
	float("net_start_hour", hours["net_start_hour"])
	float("net_end_hour", hours["net_end_hour"])
	flag("leave_apps_in_memory", on("leave_apps_in_memory"))
	float("work_buf_min_days", vals["work_buf_min_days"])
	float("work_buf_additional_days", vals["work_buf_additional_days"])
	float("max_ncpus_pct", vals["max_ncpus_pct"])
	float("cpu_scheduling_period_minutes", vals["cpu_scheduling_period_minutes"])
	float("disk_interval", vals["disk_interval"])
	float("disk_max_used_gb", vals["disk_max_used_gb"])
	pct := 100.0 // unticked: the whole disk
	if on("disk_max_used_pct_on") {
		pct = vals["disk_max_used_pct"]
	}
	float("disk_max_used_pct", pct)
	float("disk_min_free_gb", vals["disk_min_free_gb"])
	float("ram_max_used_busy_pct", vals["ram_max_used_busy_pct"])
	float("ram_max_used_idle_pct", vals["ram_max_used_idle_pct"])
	float("max_bytes_sec_up", vals["max_bytes_sec_up"]*1024)
	float("max_bytes_sec_down", vals["max_bytes_sec_down"]*1024)
	float("cpu_usage_limit", vals["cpu_usage_limit"])
	float("daily_xfer_limit_mb", vals["daily_xfer_limit_mb"])
	fmt.Fprintf(&b, "   <daily_xfer_period_days>%d</daily_xfer_period_days>\n", int(vals["daily_xfer_period_days"]))
	for i, d := range days {
		if !d.HasCPU && !d.HasNet {
			continue
		}
		fmt.Fprintf(&b, "   <day_prefs>\n      <day_of_week>%d</day_of_week>\n", i)
		if d.HasCPU {
			fmt.Fprintf(&b, "      <start_hour>%.02f</start_hour>\n      <end_hour>%.02f</end_hour>\n", d.StartHour, d.EndHour)
		}
		if d.HasNet {
			fmt.Fprintf(&b, "      <net_start_hour>%.02f</net_start_hour>\n      <net_end_hour>%.02f</net_end_hour>\n", d.NetStartHour, d.NetEndHour)
		}
		b.WriteString("   </day_prefs>\n")
	}
	b.WriteString("</global_preferences>\n")
	return b.String(), nil
}

// readPrefs is the prefs view of the preferences now in force.
func (s *Server) readPrefs(ctx context.Context) (prefsView, error) {
	st, err := s.cfg.Backend.Snapshot(ctx, guirpc.PartPrefsOverride)
	if err != nil {
		return prefsView{}, fmt.Errorf("reading the preferences: %w", err)
	}
	return prefsViewOf(st.Prefs, strings.TrimSpace(st.PrefsOverride) != ""), nil
}

// setPrefs is the dialog's OK (op "save") or Clear (op "defaults").
func (s *Server) setPrefs(ctx context.Context, f func(string) string) (string, error) {
	var body, done string
	switch f("op") {
	case "defaults":
		done = "Local preferences cleared: the defaults and the configuration's preferences are in force."
	case "save":
		st, err := s.cfg.Backend.Snapshot(ctx, 0)
		if err != nil {
			return "", fmt.Errorf("reading the preferences: %w", err)
		}
		if body, err = prefsXML(f, st.Prefs.Days); err != nil {
			return "", err
		}
		done = "Preferences saved."
	default:
		return "", fmt.Errorf("%w: preferences op %q", errBadRequest, f("op"))
	}
	if err := s.cfg.Backend.Do(ctx, guirpc.SetPrefsOverride{XML: body}); err != nil {
		return "", err
	}
	if err := s.cfg.Backend.Do(ctx, guirpc.ReadPrefsOverride{}); err != nil {
		return "", err
	}
	return done, nil
}

// prefs handles the form's post. A script's post gets the section's new
// HTML (200, or 422 with the fault shown); a plain form post is sent back
// to the view, or gets the whole page with the fault shown.
func (s *Server) prefs(w http.ResponseWriter, r *http.Request, ss session) {
	ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
	defer cancel()
	f := r.PostForm.Get
	done, err := s.setPrefs(ctx, f)
	var pv prefsView
	code := http.StatusOK
	var fe *fieldError
	switch {
	case errors.As(err, &fe):
		pv = prefsViewFrom(f)
		pv.Error, pv.ErrField = fe.msg, fe.field
		code = http.StatusUnprocessableEntity
		s.log.Info("web preferences refused", slog.String("field", fe.field), slog.String("why", fe.msg))
	case errors.Is(err, errBadRequest):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		s.log.Warn("web preferences not saved", slog.Any("err", err))
		pv = prefsViewFrom(f)
		pv.Error = "Not saved: " + err.Error()
		code = http.StatusConflict
	default:
		s.log.Info("web preferences", slog.String("op", f("op")))
		if pv, err = s.readPrefs(ctx); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		pv.Saved = done
	}
	pv.CSRF = ss.csrf
	if r.Header.Get("X-Requested-With") == "fetch" {
		s.render(w, code, "sec-prefs", &view{CSRF: ss.csrf, Prefs: pv})
		return
	}
	if code == http.StatusOK {
		http.Redirect(w, r, "/#prefs", http.StatusSeeOther)
		return
	}
	v, err := s.build(ctx, buildReq{csrf: ss.csrf, session: ss.id})
	if err != nil {
		http.Error(w, pv.Error, code)
		return
	}
	v.Prefs = pv
	s.render(w, code, "dashboard.html", v)
}
