package bce

import (
	"fmt"
	"path"
	"strings"

	"github.com/boincd/boincd/sim"
)

// Case is one scenario of the comparison set: its name (a row of
// bench/emulator's table), the TOML that boincd-sim runs, and that TOML
// parsed, from which the BCE input is made. Both emulators run from the
// same bytes, so the two can never drift apart.
type Case struct {
	Name     string
	TOML     []byte
	Scenario *sim.Scenario
}

// ComparisonSet is issue 19's comparison set: every committed scenario
// (sim/scenarios, embedded in package sim) and the policy study's project
// mix at 5, 10 and 20 projects.
func ComparisonSet() ([]Case, error) {
	var cs []Case
	for _, name := range sim.BuiltinScenarios() {
		data, err := sim.BuiltinScenarioTOML(name)
		if err != nil {
			return nil, err
		}
		cs = append(cs, Case{Name: name, TOML: data})
	}
	for _, m := range []int{5, 10, 20} {
		cs = append(cs, Case{Name: fmt.Sprintf("mix_%d", m), TOML: []byte(MixTOML(m))})
	}
	for i := range cs {
		sc, err := sim.ParseScenario(path.Join("sim/scenarios", cs[i].Name+".toml"), cs[i].TOML)
		if err != nil {
			return nil, err
		}
		cs[i].Scenario = sc
	}
	return cs, nil
}

// MixTOML is the policy study's project mix (sim/study: mix, Baseline,
// Default) at m projects: 2 CPUs of 1 GFLOPS on 80 % of the time (mean
// on 1000 s, off 250 s), buffer 0.1 + 0.25 day, 60-minute slices,
// CS2-WF2-WS2-JC2 with debts; project i has i× the base job (1.3e13
// FLOPs), latency bound (9 days) and share (100). The projects are
// named p1..pm as in the study (BCE considers them in name order,
// p1, p10, p11, ..., p2: write_recs sorts them at every step).
func MixTOML(m int) string {
	var b strings.Builder
	b.WriteString(`duration_days = 100
step_seconds = 60
seed = 1

[host]
cpus = 2
cpu_flops = 1e9
availability = { on_mean_s = 1000, off_mean_s = 250 }

[prefs]
work_buf_min_days = 0.1
work_buf_additional_days = 0.25
cpu_scheduling_period_minutes = 60

[policies]
priority = "debt"
cpu_sched = "cs2"
work_fetch = "wf2"
work_send = "ws2"
estimate = "jc2"
`)
	for i := 1; i <= m; i++ {
		fmt.Fprintf(&b, "\n[[project]]\nname = \"p%d\"\nshare = %d\nlatency_bound_days = %d\napps = [{ resource = \"CPU\", flops_mean = %g }]\n",
			i, 100*i, 9*i, 1.3e13*float64(i))
	}
	return b.String()
}
