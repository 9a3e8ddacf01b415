package hostcond

import (
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
)

func TestFromBoinc(t *testing.T) {
	bp := boinc.DefaultPrefs()
	bp.RunIfUserActive = false
	bp.SuspendCPUUsage = 10
	p := FromBoinc(bp)
	want := DefaultPrefs()
	want.RunIfUserActive = false
	want.SuspendCPUUsage, want.NIUSuspendCPUUsage = 10, 10
	if p != want {
		t.Fatalf("FromBoinc = %+v, want %+v", p, want)
	}
	if d := DefaultPrefs(); d.IdleTimeToRun != 3 || d.SuspendCPUUsage != 25 || d.NIUSuspendCPUUsage != 50 || !d.RunIfUserActive || d.RunGPUIfUserActive || d.RunOnBatteries {
		t.Fatalf("DefaultPrefs = %+v, not BOINC's defaults", d)
	}
}

func TestApplyXML(t *testing.T) {
	const full = `<global_preferences>
   <source_project>http://example.com/</source_project>
   <mod_time>1724280000.000000</mod_time>
   <run_on_batteries>1</run_on_batteries>
   <run_if_user_active>0</run_if_user_active>
   <run_gpu_if_user_active/>
   <suspend_if_no_recent_input>30</suspend_if_no_recent_input>
   <suspend_cpu_usage>40.000000</suspend_cpu_usage>
   <start_hour>8.500000</start_hour>
   <end_hour>17</end_hour>
   <net_start_hour>22</net_start_hour>
   <net_end_hour>6</net_end_hour>
   <idle_time_to_run>5</idle_time_to_run>
   <venue name="home"><start_hour>1</start_hour><end_hour>2</end_hour></venue>
   <day_prefs>
      <day_of_week>0</day_of_week>
      <start_hour>0</start_hour>
      <end_hour>24</end_hour>
   </day_prefs>
   <day_prefs>
      <day_of_week>3</day_of_week>
      <start_hour>10</start_hour>
      <net_start_hour>1</net_start_hour>
      <net_end_hour>2</net_end_hour>
   </day_prefs>
</global_preferences>
`
	want := DefaultPrefs()
	want.RunOnBatteries, want.RunIfUserActive, want.RunGPUIfUserActive = true, false, true
	want.SuspendIfNoRecentInput, want.IdleTimeToRun = 30, 5
	want.SuspendCPUUsage, want.NIUSuspendCPUUsage = 40, 40
	want.CPU, want.Net = Window{8.5, 17}, Window{22, 6}
	want.Days[0] = DayPrefs{CPU: Window{0, 24}, HasCPU: true}
	want.Days[3] = DayPrefs{CPU: Window{}, Net: Window{1, 2}, HasNet: true}

	tests := []struct {
		name    string
		xml     string
		want    Prefs
		wantErr string
	}{
		{"full", full, want, ""},
		{"empty keeps defaults", `<global_preferences/>`, DefaultPrefs(), ""},
		{"niu given", `<global_preferences><niu_suspend_cpu_usage>70</niu_suspend_cpu_usage><suspend_cpu_usage>10</suspend_cpu_usage></global_preferences>`,
			func() Prefs { p := DefaultPrefs(); p.SuspendCPUUsage, p.NIUSuspendCPUUsage = 10, 70; return p }(), ""},
		{"bool zero", `<global_preferences><run_if_user_active>0</run_if_user_active></global_preferences>`,
			func() Prefs { p := DefaultPrefs(); p.RunIfUserActive = false; return p }(), ""},
		{"wrong root", `<prefs/>`, Prefs{}, "root element is <prefs>"},
		{"no root", ``, Prefs{}, "no <global_preferences>"},
		{"malformed", "<global_preferences>\n<start_hour>1</end_hour>", Prefs{}, "line 2"},
		{"not a number", "<global_preferences>\n\n<start_hour>eight</start_hour></global_preferences>", Prefs{}, "line 3: <start_hour>eight</start_hour>: not a number"},
		{"NaN", "<global_preferences><idle_time_to_run>NaN</idle_time_to_run></global_preferences>", Prefs{}, "not a number"},
		{"hour out of range", "<global_preferences><end_hour>25</end_hour></global_preferences>", Prefs{}, "<end_hour>25</end_hour>: hour outside 0-24"},
		{"negative", "<global_preferences><suspend_cpu_usage>-1</suspend_cpu_usage></global_preferences>", Prefs{}, "negative"},
		{"bad bool", "<global_preferences><run_on_batteries>yes</run_on_batteries></global_preferences>", Prefs{}, "<run_on_batteries>yes</run_on_batteries>: not 0 or 1"},
		{"bad weekday", "<global_preferences><day_prefs><day_of_week>7</day_of_week></day_prefs></global_preferences>", Prefs{}, "<day_prefs>: <day_of_week>7</day_of_week>: not a weekday 0-6"},
		{"day without weekday", "<global_preferences><day_prefs><start_hour>1</start_hour><end_hour>2</end_hour></day_prefs></global_preferences>", Prefs{}, "no <day_of_week>"},
		{"day hour out of range", "<global_preferences><day_prefs><day_of_week>1</day_of_week><start_hour>30</start_hour></day_prefs></global_preferences>", Prefs{}, "hour outside 0-24"},
		{"truncated day", "<global_preferences><day_prefs><day_of_week>1</day_of_week>", Prefs{}, "<day_prefs>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPrefs()
			err := p.ApplyXML([]byte(tc.xml))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if p != DefaultPrefs() {
					t.Fatalf("prefs changed on error: %+v", p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p != tc.want {
				t.Fatalf("got  %+v\nwant %+v", p, tc.want)
			}
		})
	}
}

func TestWindowString(t *testing.T) {
	tests := []struct {
		w    Window
		want string
	}{
		{Window{}, "always"},
		{Window{0, 24}, "always"},
		{Window{8, 17.5}, "08:00-17:30"},
		{Window{22.25, 6}, "22:15-06:00"},
		{Window{24, 0}, "never"},
	}
	for _, tc := range tests {
		if got := tc.w.String(); got != tc.want {
			t.Errorf("%v.String() = %q, want %q", tc.w, got, tc.want)
		}
	}
}

func TestTimeWindowsClose(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 11, 27, h, m, 0, 0, time.UTC) } // a Friday
	tests := []struct {
		name string
		p    Prefs
		t    time.Time
		want bool
	}{
		{"no windows", Prefs{}, at(3, 0), false},
		{"inside the computing window", Prefs{CPU: Window{8, 17}}, at(12, 0), false},
		{"computing window closed", Prefs{CPU: Window{8, 17}}, at(17, 30), true},
		{"network window closed", Prefs{Net: Window{22, 6}}, at(7, 0), true},
		{"network window open overnight", Prefs{Net: Window{22, 6}}, at(23, 0), false},
		{"the day's own window wins", Prefs{CPU: Window{8, 17}, Days: [7]DayPrefs{time.Friday: {HasCPU: true, CPU: Window{0, 24}}}}, at(20, 0), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.TimeWindowsClose(tc.t); got != tc.want {
				t.Errorf("TimeWindowsClose(%s) = %v, want %v", tc.t.Format("Mon 15:04"), got, tc.want)
			}
		})
	}
}
