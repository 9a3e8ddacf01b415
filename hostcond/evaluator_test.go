package hostcond

import (
	"reflect"
	"testing"
	"time"
)

// base is a Monday noon in a zone two hours east of UTC.
var base = time.Date(2024, 1, 1, 12, 0, 0, 0, time.FixedZone("UTC+2", 2*3600))

type step struct {
	at   float64 // seconds after base
	cpu  float64
	want uint32 // Computing
}

func runSteps(t *testing.T, p Prefs, idle float64, steps []step) {
	t.Helper()
	var e Evaluator
	for i, s := range steps {
		in := Inputs{Now: base.Add(time.Duration(s.at * float64(time.Second))), IdleSecs: idle, NonBOINCCPU: s.cpu}
		d := e.Evaluate(in, p)
		if d.Computing != s.want {
			t.Fatalf("step %d (t=%gs, cpu %g%%): Computing = %d, want %d (reasons %q)", i, s.at, s.cpu, d.Computing, s.want, d.Reasons)
		}
	}
}

func TestCPUUsageHysteresis(t *testing.T) {
	p := DefaultPrefs()
	p.SuspendCPUUsage, p.NIUSuspendCPUUsage = 25, 25
	const busy = ReasonCPUUsage
	tests := []struct {
		name  string
		steps []step
	}{
		{"below threshold never suspends", []step{{0, 10, 0}, {60, 25, 0}, {120, 0, 0}}},
		{"load dropping before the hold does nothing", []step{
			{0, 60, 0}, {10, 60, 0}, {20, 10, 0}, {25, 60, 0}, {50, 60, 0}, {55, 60, busy},
		}},
		{"load held suspends, and resuming needs its own hold", []step{
			{0, 60, 0}, {29, 60, 0}, {30, 60, busy},
			{31, 10, busy}, {60, 10, busy}, {61, 10, 0}, {62, 10, 0},
		}},
		{"load returning during the resume hold restarts it", []step{
			{0, 60, 0}, {30, 60, busy},
			{31, 10, busy}, {50, 40, busy}, {55, 10, busy}, {84, 10, busy}, {85, 10, 0},
		}},
		{"unknown load counts as idle", []step{
			{0, 60, 0}, {30, 60, busy}, {31, -1, busy}, {61, -1, 0}, {62, -1, 0},
		}},
		{"clock stepping back restarts the hold", []step{
			{100, 60, 0}, {10, 60, 0}, {39, 60, 0}, {40, 60, busy},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, p, -1, tc.steps) })
	}
}

func TestCPUUsageThresholds(t *testing.T) {
	tests := []struct {
		name           string
		inUse, niu     float64
		idle           float64
		cpu            float64
		want           uint32
		wantReasonPart string
	}{
		{"disabled", 0, 0, -1, 100, 0, ""},
		{"user active uses suspend_cpu_usage", 25, 50, 5, 30, ReasonCPUUsage, "CPU is busy (non-BOINC CPU usage 30%; suspend_cpu_usage 25%)"},
		{"user idle uses niu_suspend_cpu_usage", 25, 50, 600, 30, 0, ""},
		{"user idle above niu", 25, 50, 600, 51, ReasonCPUUsage, "CPU is busy (non-BOINC CPU usage 51%; niu_suspend_cpu_usage 50%)"},
		{"unknown idle is not in use", 25, 50, -1, 40, 0, ""},
		{"niu disabled while idle", 25, 0, 600, 100, 0, ""},
		{"equal to the limit is not above", 25, 25, -1, 25, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPrefs()
			p.SuspendCPUUsage, p.NIUSuspendCPUUsage = tc.inUse, tc.niu
			p.RunGPUIfUserActive = true
			var e Evaluator
			var d Decision
			for s := 0; s <= 30; s += 5 {
				d = e.Evaluate(Inputs{Now: base.Add(time.Duration(s) * time.Second), IdleSecs: tc.idle, NonBOINCCPU: tc.cpu}, p)
			}
			if d.Computing != tc.want {
				t.Fatalf("Computing = %d, want %d (%q)", d.Computing, tc.want, d.Reasons)
			}
			if tc.wantReasonPart != "" && !reflect.DeepEqual(d.Reasons, []string{tc.wantReasonPart}) {
				t.Fatalf("Reasons = %q, want [%q]", d.Reasons, tc.wantReasonPart)
			}
		})
	}
}

func TestCPUUsageResumingReason(t *testing.T) {
	p := DefaultPrefs()
	var e Evaluator
	e.Evaluate(Inputs{Now: base, IdleSecs: -1, NonBOINCCPU: 90}, p)
	e.Evaluate(Inputs{Now: base.Add(CPUUsageSuspendHold), IdleSecs: -1, NonBOINCCPU: 90}, p)
	d := e.Evaluate(Inputs{Now: base.Add(CPUUsageSuspendHold + time.Second), IdleSecs: -1, NonBOINCCPU: 12}, p)
	want := []string{"CPU is busy (non-BOINC CPU usage 12%; niu_suspend_cpu_usage 50%; resuming after 30s below it)"}
	if d.Computing != ReasonCPUUsage || !reflect.DeepEqual(d.Reasons, want) {
		t.Fatalf("Computing %d, Reasons %q; want %d, %q", d.Computing, d.Reasons, ReasonCPUUsage, want)
	}
}

func TestCPUUsageDisabledResumesAtOnce(t *testing.T) {
	p := DefaultPrefs()
	p.NIUSuspendCPUUsage = 20
	var e Evaluator
	in := Inputs{Now: base, IdleSecs: -1, NonBOINCCPU: 90}
	e.Evaluate(in, p)
	in.Now = base.Add(CPUUsageSuspendHold)
	if d := e.Evaluate(in, p); d.Computing != ReasonCPUUsage {
		t.Fatalf("Computing = %d, want CPU usage", d.Computing)
	}
	p.NIUSuspendCPUUsage = 0
	in.Now = in.Now.Add(time.Second)
	if d := e.Evaluate(in, p); d.Computing != 0 {
		t.Fatalf("after disabling: Computing = %d, want 0", d.Computing)
	}
	// Re-enabling starts from scratch: the full hold again.
	p.NIUSuspendCPUUsage = 20
	in.Now = in.Now.Add(time.Second)
	if d := e.Evaluate(in, p); d.Computing != 0 {
		t.Fatalf("after re-enabling: Computing = %d, want 0 until the hold passes", d.Computing)
	}
}

func TestTimeOfDay(t *testing.T) {
	zone := base.Location()
	at := func(day, h, m, s int) time.Time { return time.Date(2024, 1, day, h, m, s, 0, zone) } // Jan 1 2024 = Monday
	monday, tuesday := 1, 2
	tests := []struct {
		name string
		cpu  Window
		days map[time.Weekday]DayPrefs
		now  time.Time
		want bool
	}{
		{"no limit", Window{0, 0}, nil, at(monday, 3, 0, 0), false},
		{"equal hours", Window{5, 5}, nil, at(monday, 3, 0, 0), false},
		{"0-24", Window{0, 24}, nil, at(monday, 3, 0, 0), false},
		{"24-0 never", Window{24, 0}, nil, at(monday, 12, 0, 0), true},
		{"day before start", Window{8, 17}, nil, at(monday, 7, 59, 59), true},
		{"day at start", Window{8, 17}, nil, at(monday, 8, 0, 0), false},
		{"day at end", Window{8, 17}, nil, at(monday, 17, 0, 0), false},
		{"day after end", Window{8, 17}, nil, at(monday, 17, 0, 1), true},
		{"half hours", Window{8.5, 17.25}, nil, at(monday, 8, 29, 0), true},
		{"wrap late evening", Window{22, 6}, nil, at(monday, 23, 0, 0), false},
		{"wrap at start", Window{22, 6}, nil, at(monday, 22, 0, 0), false},
		{"wrap after midnight", Window{22, 6}, nil, at(monday, 3, 0, 0), false},
		{"wrap at end", Window{22, 6}, nil, at(monday, 6, 0, 0), true},
		{"wrap midday", Window{22, 6}, nil, at(monday, 12, 0, 0), true},
		{"day_prefs override on its day", Window{0, 0}, map[time.Weekday]DayPrefs{time.Monday: {CPU: Window{9, 12}, HasCPU: true}}, at(monday, 13, 0, 0), true},
		{"day_prefs not on other days", Window{0, 0}, map[time.Weekday]DayPrefs{time.Monday: {CPU: Window{9, 12}, HasCPU: true}}, at(tuesday, 13, 0, 0), false},
		{"day_prefs can lift the limit", Window{8, 17}, map[time.Weekday]DayPrefs{time.Tuesday: {CPU: Window{0, 24}, HasCPU: true}}, at(tuesday, 20, 0, 0), false},
		{"day_prefs with net only keep the general cpu window", Window{8, 17}, map[time.Weekday]DayPrefs{time.Monday: {Net: Window{18, 23}, HasNet: true}}, at(monday, 20, 0, 0), true},
		{"local zone of Now decides: 06:30 UTC is 08:30 here", Window{8, 17}, nil, time.Date(2024, 1, 1, 6, 30, 0, 0, time.UTC).In(zone), false},
		{"same instant in UTC is before 08:00", Window{8, 17}, nil, time.Date(2024, 1, 1, 6, 30, 0, 0, time.UTC), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPrefs()
			p.CPU = tc.cpu
			for d, dp := range tc.days {
				p.Days[d] = dp
			}
			var e Evaluator
			d := e.Evaluate(Inputs{Now: tc.now, IdleSecs: -1, NonBOINCCPU: -1}, p)
			if got := d.Computing == ReasonTimeOfDay; got != tc.want {
				t.Fatalf("at %s: suspended = %v, want %v (Computing %d, %q)", tc.now, got, tc.want, d.Computing, d.Reasons)
			}
			if d.GPU != d.Computing || d.Network != 0 {
				t.Fatalf("GPU = %d, Network = %d; want GPU = Computing, no network reason", d.GPU, d.Network)
			}
		})
	}
}

func TestNetworkWindow(t *testing.T) {
	p := DefaultPrefs()
	p.Net = Window{22, 6}
	p.Days[time.Saturday] = DayPrefs{Net: Window{0, 24}, HasNet: true}
	tests := []struct {
		now  time.Time
		want uint32
	}{
		{time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC), ReasonTimeOfDay}, // Monday
		{time.Date(2024, 1, 1, 23, 0, 0, 0, time.UTC), 0},
		{time.Date(2024, 1, 6, 12, 0, 0, 0, time.UTC), 0}, // Saturday
	}
	for _, tc := range tests {
		var e Evaluator
		d := e.Evaluate(Inputs{Now: tc.now, IdleSecs: -1, NonBOINCCPU: -1}, p)
		if d.Network != tc.want || d.Computing != 0 {
			t.Errorf("%s: Network = %d, Computing = %d; want %d, 0", tc.now, d.Network, d.Computing, tc.want)
		}
	}
}

func TestBatteryAndUserActive(t *testing.T) {
	tests := []struct {
		name           string
		prefs          func(*Prefs)
		idle           float64
		battery        bool
		computing, gpu uint32
		active         bool
		primary        uint32
	}{
		{"defaults, on mains, idle unknown", nil, -1, false, 0, 0, false, 0},
		{"on batteries", nil, -1, true, ReasonBatteries, ReasonBatteries, false, ReasonBatteries},
		{"run_on_batteries", func(p *Prefs) { p.RunOnBatteries = true }, -1, true, 0, 0, false, 0},
		{"defaults, user active: GPU waits", nil, 10, false, 0, ReasonUserActive, true, 0},
		{"run_gpu_if_user_active", func(p *Prefs) { p.RunGPUIfUserActive = true }, 10, false, 0, 0, true, 0},
		{"run_if_user_active off", func(p *Prefs) { p.RunIfUserActive = false }, 10, false, ReasonUserActive, ReasonUserActive, true, ReasonUserActive},
		{"run_if_user_active off, both allowed for GPU", func(p *Prefs) { p.RunIfUserActive, p.RunGPUIfUserActive = false, true }, 10, false, ReasonUserActive, ReasonUserActive, true, ReasonUserActive},
		{"active until idle_time_to_run", func(p *Prefs) { p.RunIfUserActive = false }, 179.9, false, ReasonUserActive, ReasonUserActive, true, ReasonUserActive},
		{"idle at idle_time_to_run", func(p *Prefs) { p.RunIfUserActive = false }, 180, false, 0, 0, false, 0},
		{"longer idle_time_to_run", func(p *Prefs) { p.RunIfUserActive, p.IdleTimeToRun = false, 10 }, 500, false, ReasonUserActive, ReasonUserActive, true, ReasonUserActive},
		{"unknown idle is not active", func(p *Prefs) { p.RunIfUserActive = false }, -1, false, 0, 0, false, 0},
		{"batteries and user active", func(p *Prefs) { p.RunIfUserActive = false }, 0, true, ReasonBatteries | ReasonUserActive, ReasonBatteries | ReasonUserActive, true, ReasonBatteries},
		{"no recent input", func(p *Prefs) { p.SuspendIfNoRecentInput = 15 }, 900, false, ReasonNoRecentInput, ReasonNoRecentInput, false, ReasonNoRecentInput},
		{"recent input", func(p *Prefs) { p.SuspendIfNoRecentInput = 15 }, 899, false, 0, 0, false, 0},
		{"no recent input, idle unknown", func(p *Prefs) { p.SuspendIfNoRecentInput = 15 }, -1, false, 0, 0, false, 0},
		{"no recent input off", nil, 1e6, false, 0, 0, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := DefaultPrefs()
			if tc.prefs != nil {
				tc.prefs(&p)
			}
			var e Evaluator
			d := e.Evaluate(Inputs{Now: base, IdleSecs: tc.idle, OnBattery: tc.battery, NonBOINCCPU: -1}, p)
			if d.Computing != tc.computing || d.GPU != tc.gpu || d.UserActive != tc.active {
				t.Fatalf("Computing %d GPU %d UserActive %v, want %d %d %v (%q)", d.Computing, d.GPU, d.UserActive, tc.computing, tc.gpu, tc.active, d.Reasons)
			}
			if got := Primary(d.Computing); got != tc.primary {
				t.Fatalf("Primary = %d, want %d", got, tc.primary)
			}
			if len(d.Reasons) != countBits(d.Computing)+countBits(d.GPU&^d.Computing)+countBits(d.Network) {
				t.Fatalf("Reasons %q do not match the masks", d.Reasons)
			}
		})
	}
}

func countBits(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func TestReasonsText(t *testing.T) {
	p := DefaultPrefs()
	p.RunIfUserActive = false
	p.SuspendCPUUsage = 25
	p.CPU = Window{8, 17}
	p.Net = Window{22.5, 6}
	var e Evaluator
	now := time.Date(2024, 1, 1, 7, 15, 0, 0, time.UTC)
	in := Inputs{Now: now, IdleSecs: 42, OnBattery: true, NonBOINCCPU: 80}
	e.Evaluate(in, p)
	in.Now = now.Add(CPUUsageSuspendHold)
	in.IdleSecs += CPUUsageSuspendHold.Seconds()
	d := e.Evaluate(in, p)
	want := []string{
		"on batteries",
		"computer is in use (last input 1m12s ago; computing waits for 3m without input)",
		"time of day (computing allowed 08:00-17:00 on Monday, now 07:15)",
		"CPU is busy (non-BOINC CPU usage 80%; suspend_cpu_usage 25%)",
		"network: time of day (network allowed 22:30-06:00 on Monday, now 07:15)",
	}
	if !reflect.DeepEqual(d.Reasons, want) {
		t.Fatalf("Reasons:\n got %q\nwant %q", d.Reasons, want)
	}
	wantMask := ReasonBatteries | ReasonUserActive | ReasonTimeOfDay | ReasonCPUUsage
	if d.Computing != wantMask || d.GPU != wantMask || d.Network != ReasonTimeOfDay {
		t.Fatalf("masks %d %d %d", d.Computing, d.GPU, d.Network)
	}

	p = DefaultPrefs()
	var fresh Evaluator
	d = fresh.Evaluate(Inputs{Now: now, IdleSecs: 5, NonBOINCCPU: -1}, p)
	if want := []string{"GPU: computer is in use (last input 5s ago; computing waits for 3m without input)"}; !reflect.DeepEqual(d.Reasons, want) {
		t.Fatalf("GPU reasons: got %q, want %q", d.Reasons, want)
	}
	p.SuspendIfNoRecentInput = 90
	d = fresh.Evaluate(Inputs{Now: now, IdleSecs: 2 * 3600, NonBOINCCPU: -1}, p)
	if want := []string{"no recent user activity (no input for 2h; limit 1h30m)"}; !reflect.DeepEqual(d.Reasons, want) {
		t.Fatalf("no-input reasons: got %q, want %q", d.Reasons, want)
	}
}

func TestPrimaryAndReasonString(t *testing.T) {
	tests := []struct {
		mask    uint32
		primary uint32
		text    string
	}{
		{0, 0, ""},
		{ReasonBatteries, ReasonBatteries, "on batteries"},
		{ReasonUserActive, ReasonUserActive, "computer is in use"},
		{ReasonUserReq, ReasonUserReq, "user request"},
		{ReasonTimeOfDay, ReasonTimeOfDay, "time of day"},
		{ReasonBenchmarks, ReasonBenchmarks, "CPU benchmarks in progress"},
		{ReasonDiskSize, ReasonDiskSize, "need disk space - check preferences"},
		{ReasonCPUThrottle, ReasonCPUThrottle, "CPU throttled"},
		{ReasonNoRecentInput, ReasonNoRecentInput, "no recent user activity"},
		{ReasonInitialDelay, ReasonInitialDelay, "initial delay"},
		{ReasonExclusiveApp, ReasonExclusiveApp, "an exclusive app is running"},
		{ReasonCPUUsage, ReasonCPUUsage, "CPU is busy"},
		{ReasonNetworkQuota, ReasonNetworkQuota, "network transfer limit exceeded"},
		{ReasonCPUUsage | ReasonTimeOfDay, ReasonTimeOfDay, "time of day, CPU is busy"},
		{ReasonCPUUsage | ReasonUserReq | ReasonBatteries, ReasonUserReq, "user request, on batteries, CPU is busy"},
		{4096 | ReasonCPUUsage, ReasonCPUUsage, "CPU is busy, unknown reason 4096"},
		{8192, 8192, "unknown reason 8192"},
	}
	for _, tc := range tests {
		if got := Primary(tc.mask); got != tc.primary {
			t.Errorf("Primary(%d) = %d, want %d", tc.mask, got, tc.primary)
		}
		if got := ReasonString(tc.mask); got != tc.text {
			t.Errorf("ReasonString(%d) = %q, want %q", tc.mask, got, tc.text)
		}
	}
}

func TestNeedsIdle(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	def := DefaultPrefs() // run_if_user_active, no GPU runs while active, CPU limits 25 % / 50 %
	with := func(f func(*Prefs)) Prefs { p := def; f(&p); return p }
	tests := []struct {
		name  string
		p     Prefs
		load  float64
		gpus  bool
		hold  bool // the CPU-usage latch is holding (load was over a limit)
		wants bool
	}{
		{"defaults, quiet host without GPUs", def, 3, false, false, false},
		{"defaults, load unknown", def, -1, false, false, false},
		{"defaults, load between the limits", def, 30, false, false, true},
		{"defaults, load above both limits", def, 80, false, false, true},
		{"defaults, hold in progress", def, 3, false, true, true},
		{"defaults, GPUs: GPU work waits for an idle user", def, 3, true, false, true},
		{"GPUs that run while the user is active", with(func(p *Prefs) { p.RunGPUIfUserActive = true }), 3, true, false, false},
		{"run_if_user_active off", with(func(p *Prefs) { p.RunIfUserActive = false }), 3, false, false, true},
		{"suspend_if_no_recent_input", with(func(p *Prefs) { p.SuspendIfNoRecentInput = 60 }), 3, false, false, true},
		{"equal CPU limits", with(func(p *Prefs) { p.NIUSuspendCPUUsage = 25 }), 80, false, false, false},
		{"no CPU limits", with(func(p *Prefs) { p.SuspendCPUUsage, p.NIUSuspendCPUUsage = 0, 0 }), 80, false, false, false},
		{"one CPU limit, load below it", with(func(p *Prefs) { p.SuspendCPUUsage = 0 }), 40, false, false, false},
		{"one CPU limit, load above it", with(func(p *Prefs) { p.SuspendCPUUsage = 0 }), 60, false, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e Evaluator
			if tc.hold {
				e.Evaluate(Inputs{Now: now, IdleSecs: -1, NonBOINCCPU: 90}, def)
			}
			if got := e.NeedsIdle(tc.p, tc.load, tc.gpus); got != tc.wants {
				t.Fatalf("NeedsIdle = %v, want %v", got, tc.wants)
			}
		})
	}
}

// Where NeedsIdle says no, the decision with the idle time unknown is the
// decision with any idle time.
func TestNeedsIdleFalseMeansSameDecision(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, load := range []float64{-1, 0, 10, 25, 26, 49, 50, 51, 99} {
		for _, p := range []Prefs{DefaultPrefs(), {RunIfUserActive: true, RunGPUIfUserActive: true, SuspendCPUUsage: 40}} {
			var probe Evaluator
			if probe.NeedsIdle(p, load, false) {
				continue
			}
			for _, idle := range []float64{0, 10, 600} {
				var a, b Evaluator
				da := a.Evaluate(Inputs{Now: now, IdleSecs: -1, NonBOINCCPU: load}, p)
				db := b.Evaluate(Inputs{Now: now, IdleSecs: idle, NonBOINCCPU: load}, p)
				if da.Computing != db.Computing || da.GPU&^db.GPU&^ReasonUserActive != 0 || da.Network != db.Network {
					t.Errorf("load %g idle %g prefs %+v: %+v vs %+v", load, idle, p, da, db)
				}
			}
		}
	}
}
