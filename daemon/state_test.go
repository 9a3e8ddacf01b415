package daemon

import (
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/platform"
)

// The lookups build their keys without allocating; they must find what
// the state stored under the entities' own Key(), and the sorted result
// list must follow additions, removals and deadline changes.
func TestClientStateLookupsAndSortedResults(t *testing.T) {
	t.Parallel()
	cs := newClientState()
	const url = "https://example.org/p/"
	for _, vn := range []int{-3, 0, 7, 1234567} {
		wu := &boinc.Workunit{ProjectURL: url, Name: "wu", AppName: "app"}
		v := &boinc.AppVersion{ProjectURL: url, AppName: "app", VersionNum: vn, Platform: platform.LinuxX86_64, PlanClass: "mt"}
		f := &boinc.FileInfo{ProjectURL: url, Name: "in"}
		cs.wus[wu.Key()], cs.versions[v.Key()], cs.files[f.Key()] = wu, v, f
		r := &boinc.Result{ProjectURL: url, Name: "r", WUName: "wu", VersionNum: vn, Platform: platform.LinuxX86_64, PlanClass: "mt"}
		if cs.wuOf(r) != wu || cs.versionOf(r) != v || cs.file(url, "in") != f {
			t.Errorf("version %d: lookups missed what Key() stored", vn)
		}
	}

	t0 := time.Unix(1_800_000_000, 0)
	a := &boinc.Result{ProjectURL: url, Name: "a", ReportDeadline: t0.Add(2 * time.Hour)}
	b := &boinc.Result{ProjectURL: url, Name: "b", ReportDeadline: t0.Add(time.Hour)}
	c := &boinc.Result{ProjectURL: url + "x", Name: "a", ReportDeadline: t0.Add(time.Hour)}
	names := func() (out []string) {
		for _, r := range cs.sortedResults() {
			out = append(out, r.ProjectURL[len(url):]+r.Name)
		}
		return out
	}
	check := func(step string, want ...string) {
		t.Helper()
		got := names()
		if len(got) != len(want) {
			t.Fatalf("%s: sorted results %q, want %q", step, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: sorted results %q, want %q", step, got, want)
			}
		}
	}
	cs.putResult(a)
	cs.putResult(b)
	check("two", "b", "a")
	cs.putResult(c)
	check("three", "b", "xa", "a")
	cs.setDeadline(a, t0)
	check("deadline moved", "a", "b", "xa")
	cs.deleteResult(b.Key())
	check("one removed", "a", "xa")
}
