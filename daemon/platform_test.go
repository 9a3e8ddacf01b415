package daemon

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/platform"
)

// platformApp is refapp's version for plat: a script that says which
// build ran.
func platformApp(plat string) testproject.App {
	a := testproject.ShellApp("refapp", `#!/bin/sh
echo "ran the `+plat+` build" >&2
echo out > out
echo 0 > boinc_finish_called
exit 0
`)
	a.Files[0].Name = "refapp_1.00_" + plat + ".sh"
	a.Platform = plat
	return a
}

// TestPlatformChoice: the request names the primary platform and each
// alternate (CLIENT_STATE::write_platforms); a project with versions for
// two of them sends the job for the first of the client's list that it
// has (the scheduler's choice, sched_version.cpp get_app_version), the
// client runs exactly that version (handle_scheduler_reply links the
// result to its platform's version), takes an alternate's version when
// the primary has none, and refuses a version of a platform it did not
// ask for ("App version has unsupported platform"). GUI RPC's get_state
// lists the same platforms.
func TestPlatformChoice(t *testing.T) {
	t.Parallel()
	const x64, x86 = platform.LinuxX86_64, platform.LinuxI686
	tests := []struct {
		name      string
		platforms []string // the host's, primary first
		apps      []testproject.App
		ran       string // the build whose job runs; "" none
	}{
		// The i686 version is listed first: the client's order decides.
		{"primary preferred", []string{x64, x86}, []testproject.App{platformApp(x86), platformApp(x64)}, x64},
		{"alternate when the primary has none", []string{x64, x86}, []testproject.App{platformApp(x86)}, x86},
		{"32-bit build on a 64-bit system", []string{x86, x64}, []testproject.App{platformApp(x64), platformApp(x86)}, x86},
		{"unsupported platform refused", []string{x64}, []testproject.App{platformApp(x86)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := testsupport.StartProject(t, testproject.Config{
				Apps: tc.apps, TotalJobs: 1, RequestDelay: -1,
				Job: testproject.JobTemplate{ReportImmediately: true},
			})
			h := startDaemonIn(t, t.TempDir()+"/data", projectsConfig(srv), func(o *Options) { o.Platforms = tc.platforms })

			// What 7.20 sends: <platform_name>, then one <alt_platform>
			// element per alternate, in order.
			want := "    <platform_name>" + tc.platforms[0] + "</platform_name>\n"
			for _, p := range tc.platforms[1:] {
				want += "    <alt_platform>\n        <name>" + p + "</name>\n    </alt_platform>\n"
			}
			var req string
			testsupport.WaitFor(t, testLimit, "a scheduler request", func() bool {
				req = string(srv.Stats().LastRequest)
				return req != ""
			})
			if !strings.Contains(req, want) {
				t.Errorf("request's platforms: want\n%s\nin\n%s", want, req)
			}

			if tc.ran == "" {
				testsupport.WaitFor(t, testLimit, "the version refused", func() bool {
					return len(h.logs.Find("App version has unsupported platform; refused")) > 0
				})
				if v := h.snapshot(); len(v.Tasks) != 0 {
					t.Errorf("a task of a refused version was kept: %+v", v.Tasks)
				}
			} else {
				st := waitAllReported(t, srv, 1, testLimit)
				name := st.Sent[0]
				if job := st.Jobs[name]; job.Platform != tc.ran {
					t.Errorf("job sent for %s, want %s", job.Platform, tc.ran)
				}
				rr := st.ReportedResults[name]
				if rr.State != 5 || rr.ExitStatus != 0 || rr.Platform != tc.ran {
					t.Errorf("reported state %d exit %d platform %q, want 5 0 %q", rr.State, rr.ExitStatus, rr.Platform, tc.ran)
				}
				if !strings.Contains(rr.StderrOut, "ran the "+tc.ran+" build") {
					t.Errorf("stderr %q: not the %s build", rr.StderrOut, tc.ran)
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			gs, err := dialGUI(t, h).GetState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if gs.PlatformName != tc.platforms[0] || !slices.Equal(gs.Platforms, tc.platforms) {
				t.Errorf("get_state platform_name %q platforms %q, want %q", gs.PlatformName, gs.Platforms, tc.platforms)
			}
		})
	}
}
