package daemon

import (
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/workfetch"
)

// A new benchmark moves every project's DCF with it (except projects
// that told us not to use one), so estimates stay where they were.
func TestRescaleDCFs(t *testing.T) {
	t.Parallel()
	d := &Daemon{st: newClientState(), sched: map[string]*workfetch.ProjectState{}}
	d.st.projects["http://a/"] = &boinc.Project{MasterURL: "http://a/"}
	d.st.projects["http://b/"] = &boinc.Project{MasterURL: "http://b/", DontUseDCF: true}
	d.schedState("http://a/").DCF = 2
	d.schedState("http://b/").DCF = 1
	d.rescaleDCFs(1e9, 2e9)
	if got := d.sched["http://a/"].DCF; got != 4 {
		t.Errorf("DCF after doubling p_fpops = %g, want 4", got)
	}
	if got := d.sched["http://b/"].DCF; got != 1 {
		t.Errorf("dont_use_dcf project's DCF changed to %g", got)
	}
}
