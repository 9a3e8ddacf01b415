package webui

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// prefsForm is a filled-in form as the page posts it: the view of the
// defaults, with changes.
func prefsForm(changes map[string]string) url.Values {
	v := prefsViewOf(boinc.DefaultPrefs(), false)
	f := url.Values{}
	for k, val := range v.V {
		f.Set(k, val)
	}
	for k, on := range v.On {
		if on {
			f.Set(k, "1")
		}
	}
	for k, val := range changes {
		if val == "" {
			f.Del(k)
		} else {
			f.Set(k, val)
		}
	}
	return f
}

// TestPrefsXML: the form becomes the override the Manager's dialog
// writes (every field of its mask), and a value the dialog refuses is
// refused here, the error naming the field.
func TestPrefsXML(t *testing.T) {
	days := [7]boinc.DayPrefs{}
	days[2] = boinc.DayPrefs{HasCPU: true, StartHour: 8, EndHour: 17.5}
	for _, tc := range []struct {
		name    string
		changes map[string]string
		want    []string // substrings of the XML
		absent  []string
		errOf   string // the field named by the error
	}{
		{"defaults", nil, []string{
			"<global_preferences>\n", "<run_on_batteries>0</run_on_batteries>", "<run_if_user_active>1</run_if_user_active>",
			"<max_ncpus_pct>100.000000</max_ncpus_pct>", "<work_buf_min_days>0.100000</work_buf_min_days>",
			"<work_buf_additional_days>0.500000</work_buf_additional_days>", "<disk_max_used_pct>90.000000</disk_max_used_pct>",
			"<suspend_cpu_usage>25.000000</suspend_cpu_usage>", "<ram_max_used_busy_pct>50.000000</ram_max_used_busy_pct>",
			"<start_hour>0.000000</start_hour>", "<daily_xfer_period_days>0</daily_xfer_period_days>",
			"<day_of_week>2</day_of_week>\n      <start_hour>8.00</start_hour>\n      <end_hour>17.50</end_hour>",
			"<run_gpu_if_user_active>0</run_gpu_if_user_active>", "<idle_time_to_run>3.000000</idle_time_to_run>",
		}, nil, ""},
		{"idle time unused", map[string]string{"suspend_gpu_in_use": "", "idle_time_to_run": "junk"}, nil, []string{"<idle_time_to_run>"}, ""},
		{"changed", map[string]string{"max_ncpus_pct": "50", "cpu_usage_limit": "75.555", "suspend_in_use": "1", "idle_time_to_run": "5",
			"suspend_cpu_usage_on": "", "disk_max_used_gb_on": "1", "disk_max_used_gb": "20", "disk_max_used_pct_on": "",
			"max_bytes_sec_down_on": "1", "max_bytes_sec_down": "100", "cpu_window_on": "1", "start_hour": "22:00", "end_hour": "6:30",
			"daily_xfer_on": "1", "daily_xfer_limit_mb": "500", "daily_xfer_period_days": "3", "leave_apps_in_memory": "1"},
			[]string{"<max_ncpus_pct>50.000000</max_ncpus_pct>", "<cpu_usage_limit>75.560000</cpu_usage_limit>",
				"<run_if_user_active>0</run_if_user_active>", "<run_gpu_if_user_active>0</run_gpu_if_user_active>",
				"<idle_time_to_run>5.000000</idle_time_to_run>", "<suspend_cpu_usage>0.000000</suspend_cpu_usage>",
				"<disk_max_used_gb>20.000000</disk_max_used_gb>", "<disk_max_used_pct>100.000000</disk_max_used_pct>",
				"<max_bytes_sec_down>102400.000000</max_bytes_sec_down>", "<start_hour>22.000000</start_hour>", "<end_hour>6.500000</end_hour>",
				"<daily_xfer_limit_mb>500.000000</daily_xfer_limit_mb>", "<daily_xfer_period_days>3</daily_xfer_period_days>",
				"<leave_apps_in_memory>1</leave_apps_in_memory>"}, nil, ""},
		{"too many CPUs", map[string]string{"max_ncpus_pct": "150"}, nil, nil, "max_ncpus_pct"},
		{"not a number", map[string]string{"work_buf_min_days": "lots"}, nil, nil, "work_buf_min_days"},
		{"more than 10 days", map[string]string{"work_buf_additional_days": "11"}, nil, nil, "work_buf_additional_days"},
		{"switch under a minute", map[string]string{"cpu_scheduling_period_minutes": "0.5"}, nil, nil, "cpu_scheduling_period_minutes"},
		{"memory 0 %", map[string]string{"ram_max_used_idle_pct": "0"}, nil, nil, "ram_max_used_idle_pct"},
		{"negative disk", map[string]string{"disk_min_free_gb_on": "1", "disk_min_free_gb": "-1"}, nil, nil, "disk_min_free_gb"},
		{"unticked disk ignored", map[string]string{"disk_min_free_gb_on": "", "disk_min_free_gb": "junk"}, []string{"<disk_min_free_gb>0.000000</disk_min_free_gb>"}, nil, ""},
		{"bad time", map[string]string{"net_window_on": "1", "net_start_hour": "25:00", "net_end_hour": "6:00"}, nil, nil, "net_start_hour"},
		{"empty window", map[string]string{"cpu_window_on": "1", "start_hour": "08:00", "end_hour": "8:00"}, nil, nil, "end_hour"},
		{"infinite", map[string]string{"disk_interval": "Inf"}, nil, nil, "disk_interval"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := prefsForm(tc.changes)
			got, err := prefsXML(f.Get, days)
			if tc.errOf != "" {
				fe, ok := err.(*fieldError)
				if !ok || fe.field != tc.errOf || !strings.Contains(fe.msg, `"`+tc.errOf+`"`) {
					t.Fatalf("error %v, want one naming %s", err, tc.errOf)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("override lacks %q:\n%s", w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(got, a) {
					t.Errorf("override has %q:\n%s", a, got)
				}
			}
		})
	}
}

// TestPrefsViewShowsPrefsInForce: the dialog's way of showing the
// prefs: 0 % CPUs is 100, rates in KB/s, hours as HH:MM.
func TestPrefsViewShowsPrefsInForce(t *testing.T) {
	p := boinc.DefaultPrefs()
	p.MaxBytesSecUp = 51200
	p.StartHour, p.EndHour = 22, 6.5
	p.RunOnBatteries = true
	v := prefsViewOf(p, true)
	for k, want := range map[string]string{"max_ncpus_pct": "100", "max_bytes_sec_up": "50", "start_hour": "22:00", "end_hour": "06:30", "work_buf_min_days": "0.1"} {
		if v.V[k] != want {
			t.Errorf("%s shown as %q, want %q", k, v.V[k], want)
		}
	}
	if !v.On["max_bytes_sec_up_on"] || !v.On["cpu_window_on"] || v.On["suspend_on_batteries"] || !v.Override {
		t.Errorf("checkboxes %v override %v", v.On, v.Override)
	}
}

// TestPrefsPost: saving is SetPrefsOverride then ReadPrefsOverride, as
// the dialog's set_global_prefs_override and read_global_prefs_override;
// Use defaults is the empty override; a refused form reaches nothing and
// comes back with the field named and marked.
func TestPrefsPost(t *testing.T) {
	fb := &fakeBackend{st: testState()}
	fb.st.Prefs = boinc.DefaultPrefs()
	_, base := startServer(t, fb)
	c := newClient(t)
	login(t, c, base, "sekrit")
	r, err := c.Get(base + "/")
	if err != nil {
		t.Fatal(err)
	}
	page := body(t, r)
	if !strings.Contains(page, `id="prefs-form"`) || !strings.Contains(page, `name="max_ncpus_pct" value="100"`) {
		t.Fatal("the page has no preferences form showing the prefs in force")
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	post := func(f url.Values, fetch bool) (int, string) {
		t.Helper()
		f.Set("csrf", csrf)
		req, _ := http.NewRequest("POST", base+"/prefs", strings.NewReader(f.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if fetch {
			req.Header.Set("X-Requested-With", "fetch")
		}
		r, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode, body(t, r)
	}

	f := prefsForm(map[string]string{"max_ncpus_pct": "150", "op": "save"})
	code, b := post(f, true)
	if code != http.StatusUnprocessableEntity || !strings.Contains(b, `id="prefs-error" data-field="max_ncpus_pct"`) ||
		!strings.Contains(b, `name="max_ncpus_pct" value="150" inputmode="decimal" size="6" aria-invalid="true"`) || len(fb.actions()) != 0 {
		t.Fatalf("150 %% of the CPUs: %d, actions %v\n%s", code, fb.actions(), b)
	}
	code, b = post(f, false) // without script: the whole page, fault shown
	if code != http.StatusUnprocessableEntity || !strings.Contains(b, `<nav aria-label="Views">`) || !strings.Contains(b, "max_ncpus_pct") {
		t.Fatalf("150 %% of the CPUs, plain post: %d\n%s", code, b)
	}

	f = prefsForm(map[string]string{"max_ncpus_pct": "50", "op": "save"})
	code, b = post(f, true)
	acts := fb.actions()
	if code != http.StatusOK || len(acts) != 2 || !strings.Contains(b, "Preferences saved.") {
		t.Fatalf("save: %d, actions %#v\n%s", code, acts, b)
	}
	if set, ok := acts[0].(guirpc.SetPrefsOverride); !ok || !strings.Contains(set.XML, "<max_ncpus_pct>50.000000</max_ncpus_pct>") {
		t.Errorf("first action %#v, want the override", acts[0])
	}
	if _, ok := acts[1].(guirpc.ReadPrefsOverride); !ok {
		t.Errorf("second action %#v, want ReadPrefsOverride", acts[1])
	}

	code, _ = post(url.Values{"op": {"defaults"}}, false)
	acts = fb.actions()[2:]
	if code != http.StatusOK || len(acts) != 2 || acts[0] != (guirpc.SetPrefsOverride{}) || acts[1] != (guirpc.ReadPrefsOverride{}) {
		t.Fatalf("use defaults: %d, actions %#v", code, acts)
	}
	code, _ = post(url.Values{"op": {"format_disk"}}, true)
	if code != http.StatusBadRequest {
		t.Errorf("unknown op: %d, want 400", code)
	}
}
