package guirpc

import (
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/workfetch"
)

// TestStatsWriters checks the replies of issue 15 §2 line by line against
// what the C++ client 7.20.5 sends for the same values (captured side by
// side on the in-repo test project).
func TestStatsWriters(t *testing.T) {
	day := time.Unix(1795564800, 0)
	prefs := boinc.DefaultPrefs()
	prefs.RunGPUIfUserActive = true
	prefs.NetStartHour, prefs.NetEndHour = 1, 23
	prefs.StartHour, prefs.EndHour = 2, 22
	prefs.IdleTimeToRun = 7
	prefs.SuspendIfNoRecentInput = 60
	prefs.DailyXferLimitMB, prefs.DailyXferPeriodDays = 500, 3
	prefs.Days[1] = boinc.DayPrefs{HasCPU: true, StartHour: 8, EndHour: 17.5}

	now := time.Unix(1795634000, 0)
	proj := ProjectInfo{
		Project: boinc.Project{MasterURL: testURL, ProjectName: "sbs", ResourceShare: 100},
		Work: workfetch.ProjectState{Backoff: [workfetch.NumRsc]workfetch.Backoff{
			workfetch.CPU: {Interval: 600, Until: time.Unix(1795634479, 0)},
		}},
		EmailHash:      "00000000000000000000000000000000",
		CPIDTime:       time.Unix(1795634488, 0),
		UserCreateTime: time.Unix(1795634488, 0),
		HostCreateTime: time.Unix(1795634502, 0),
		REC:            0.011439,
		NJobsSuccess:   3,
		NJobsError:     1,
		ElapsedTime:    44.158731,
		SchedPriority:  -1,
		Statistics: []DailyStats{
			{Day: day.Add(-86400 * time.Second), UserTotalCredit: 1, HostTotalCredit: 2},
			{Day: day, UserTotalCredit: 10, UserExpavgCredit: 1.5, HostTotalCredit: 20, HostExpavgCredit: 2.5},
		},
	}
	st := &State{Now: now, Projects: []ProjectInfo{proj}, DailyXfers: []DailyXfer{{When: 20782, Up: 52361, Down: 17302}}}
	running := ResultInfo{
		Result: boinc.Result{ProjectURL: testURL, Name: "r1", Phase: boinc.PhaseComputing},
		Active: &ActiveTask{ActiveState: 1, SchedulerState: 2, FractionDone: 0.25, ElapsedTime: 10, SwapSize: 11e6, ProgressRate: 0.025},
	}

	tests := []struct {
		name  string
		write func(w *xw)
		want  []string
	}{
		{"statistics", func(w *xw) { writeStatistics(w, st) }, []string{
			"<statistics>\n<project_statistics>\n    <master_url>" + testURL + "</master_url>\n    <daily_statistics>\n        <day>1795478400.000000</day>\n",
			"    <daily_statistics>\n        <day>1795564800.000000</day>\n        <user_total_credit>10.000000</user_total_credit>\n" +
				"        <user_expavg_credit>1.500000</user_expavg_credit>\n        <host_total_credit>20.000000</host_total_credit>\n" +
				"        <host_expavg_credit>2.500000</host_expavg_credit>\n    </daily_statistics>\n</project_statistics>\n</statistics>\n",
		}},
		{"daily xfers", func(w *xw) { writeDailyXfers(w, st.DailyXfers) }, []string{
			"<daily_xfers>\n<dx>\n   <when>20782</when>\n   <up>52361.000000</up>\n   <down>17302.000000</down>\n</dx>\n</daily_xfers>\n",
		}},
		{"project", func(w *xw) { writeProject(w, st, &st.Projects[0]) }, []string{
			"    <email_hash>00000000000000000000000000000000</email_hash>\n",
			"    <cpid_time>1795634488.000000</cpid_time>\n",
			"    <user_create_time>1795634488.000000</user_create_time>\n",
			"    <host_create_time>1795634502.000000</host_create_time>\n",
			"    <rec>0.011439</rec>\n",
			"    <njobs_success>3</njobs_success>\n    <njobs_error>1</njobs_error>\n    <elapsed_time>44.158731</elapsed_time>\n",
			"    <rsc_backoff_time>\n        <name>CPU</name>\n        <value>1795634479.000000</value>\n    </rsc_backoff_time>\n",
			"    <rsc_backoff_interval>\n        <name>CPU</name>\n        <value>600.000000</value>\n    </rsc_backoff_interval>\n",
			"    <sched_priority>-1.000000</sched_priority>\n",
		}},
		{"prefs", func(w *xw) { writePrefs(w, &prefs, true) }, []string{
			"   <run_gpu_if_user_active>1</run_gpu_if_user_active>\n   <suspend_if_no_recent_input>60.000000</suspend_if_no_recent_input>\n",
			"   <start_hour>2.000000</start_hour>\n   <end_hour>22.000000</end_hour>\n   <net_start_hour>1.000000</net_start_hour>\n   <net_end_hour>23.000000</net_end_hour>\n",
			"   <idle_time_to_run>7.000000</idle_time_to_run>\n",
			"   <daily_xfer_limit_mb>500.000000</daily_xfer_limit_mb>\n   <daily_xfer_period_days>3</daily_xfer_period_days>\n   <override_file_present>1</override_file_present>\n",
			"   <day_prefs>\n      <day_of_week>1</day_of_week>\n      <start_hour>8.00</start_hour>\n      <end_hour>17.50</end_hour>\n   </day_prefs>\n</global_preferences>\n",
		}},
		{"active task", func(w *xw) { writeResult(w, st, &running) }, []string{
			"    <swap_size>11000000.000000</swap_size>\n",
			"   <progress_rate>0.025000</progress_rate>\n",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w xw
			tc.write(&w)
			got := w.String()
			for _, want := range tc.want {
				if !strings.Contains(got, want) {
					t.Errorf("reply lacks %q:\n%s", want, got)
				}
			}
		})
	}
}
