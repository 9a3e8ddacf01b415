package daemon

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/platform"
	"github.com/boincd/boincd/statefile"
)

// anonAppScript is the volunteer's own build: it says so in its output,
// with the arguments it got (the workunit's, then app_info.xml's cmdline).
const anonAppScript = `#!/bin/sh
echo "anonymous app: $*" >&2
{
  echo "anonymous app output"
  echo "args: $*"
} > out
echo 0 > boinc_finish_called
exit 0
`

// anonAppInfo lists the app, its file, version 199 of it, and two broken
// entries: a file_info with a hostile name (line 11) and a version whose
// file_ref names it (line 31). The good entries must be used all the same.
const anonAppInfo = `<app_info>
    <app>
        <name>refapp</name>
    </app>
    <file_info>
        <name>my_refapp.sh</name>
        <executable/>
    </file_info>
    <!-- a name that would leave the project directory -->
    <file_info>
        <name>../evil</name>
    </file_info>
    <app_version>
        <app_name>refapp</app_name>
        <version_num>199</version_num>
        <avg_ncpus>1</avg_ncpus>
        <cmdline>--anon-flag</cmdline>
        <file_ref>
            <file_name>my_refapp.sh</file_name>
            <main_program/>
        </file_ref>
    </app_version>
    <app_version>
        <app_name>refapp</app_name>
        <version_num>200</version_num>
        <file_ref>
            <file_name>my_refapp.sh</file_name>
            <main_program/>
        </file_ref>
        <file_ref>
            <file_name>../evil</file_name>
        </file_ref>
    </app_version>
</app_info>
`

// TestAnonymousPlatform: a project directory holding app_info.xml runs the
// volunteer's app version 199 (CLIENT_STATE::check_anonymous,
// make_scheduler_request, handle_scheduler_reply): the request announces
// it under <platform_name>anonymous</platform_name>, the job runs on the
// app_info.xml executable with its cmdline, nothing is downloaded for it,
// the broken entries are reported with file and line while the good ones
// work, and a project reset keeps it (CLIENT_STATE::reset_project).
func TestAnonymousPlatform(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Apps: []testproject.App{testproject.DefaultApp()}, TotalJobs: 1, RequestDelay: -1,
		Job: testproject.JobTemplate{ReportImmediately: true},
	})
	dataDir := filepath.Join(t.TempDir(), "data")
	esc := boinc.EscapeProjectURL(srv.URL())
	projDir := filepath.Join(dataDir, "projects", esc)
	if err := os.MkdirAll(projDir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(projDir, "my_refapp.sh")
	if err := os.WriteFile(exe, []byte(anonAppScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(projDir, AppInfoFile), []byte(anonAppInfo), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)

	st := waitAllReported(t, srv, 1, testLimit)
	name := st.Sent[0]
	if job := st.Jobs[name]; !job.Anonymous || job.VersionNum != 199 {
		t.Errorf("job %+v: want one for the client's version 199", job)
	}
	if len(st.AnnouncedVersions) != 1 {
		t.Fatalf("request announced %+v, want version 199 alone", st.AnnouncedVersions)
	}
	if av := st.AnnouncedVersions[0]; av.AppName != "refapp" || av.VersionNum != 199 || av.Platform != platform.This() ||
		av.AvgNCPUs != 1 || av.Cmdline != "--anon-flag" || av.Flops <= 0 {
		t.Errorf("announced version %+v", av)
	}
	if !bytes.Contains(st.LastRequest, []byte("<platform_name>anonymous</platform_name>")) {
		t.Errorf("request does not say platform anonymous")
	}
	rr := st.ReportedResults[name]
	if rr.State != 5 || rr.ExitStatus != 0 || rr.VersionNum != 199 || rr.Platform != platform.This() {
		t.Errorf("report %+v, want success with version 199", rr)
	}
	out := string(st.Uploaded[st.Jobs[name].OutputFiles[0]])
	if !strings.Contains(out, "anonymous app output") || !strings.Contains(out, "--seconds 1 --anon-flag") {
		t.Errorf("output %q: not from the app_info.xml app with its cmdline", out)
	}
	if len(st.Downloads) != 0 {
		t.Errorf("downloads %v: nothing may be downloaded for an app_info.xml app", st.Downloads)
	}
	if b, err := os.ReadFile(exe); err != nil || string(b) != anonAppScript {
		t.Errorf("the volunteer's executable changed or went: %v", err)
	}
	if len(h.logs.Find("Found app_info.xml; using anonymous platform", "project", srv.URL())) != 1 {
		t.Errorf("no log line saying app_info.xml was found")
	}
	file := filepath.Join("projects", esc, AppInfoFile)
	for _, want := range []string{
		fmt.Sprintf("%s line 11: <file_info>: name: file name \"../evil\" contains a path separator; entry ignored", file),
		fmt.Sprintf("%s line 31: <app_version>: <file_ref> file_name: file name \"../evil\" contains a path separator; entry ignored", file),
	} {
		if len(h.logs.Find(want)) != 1 {
			t.Errorf("no log line %q", want)
		}
	}
	if len(h.logs.Find("app_info.xml read (with problems, see above)", "project", srv.URL())) != 1 {
		t.Errorf("no summary of app_info.xml")
	}

	// A reset keeps app_info.xml, its app and its file: the next job runs
	// on it again.
	if err := h.do(guirpc.ProjectOp{URL: srv.URL(), Op: "reset"}); err != nil {
		t.Fatalf("reset: %v", err)
	}
	for _, f := range []string{exe, filepath.Join(projDir, AppInfoFile)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("after reset: %v", err)
		}
	}
	srv.AddJobs(1)
	st = waitAllReported(t, srv, 2, testLimit)
	if rr := st.ReportedResults[st.Sent[1]]; rr.State != 5 || rr.VersionNum != 199 {
		t.Errorf("after reset: report %+v, want success with version 199", rr)
	}
	if len(st.Downloads) != 0 || len(st.Errors) != 0 {
		t.Errorf("after reset: downloads %v, protocol errors %q", st.Downloads, st.Errors)
	}

	// Nothing of app_info.xml is in the state file: it is read again at
	// the next start, and the next job runs on it as well.
	if err := h.stop(testLimit); err != nil {
		t.Fatal(err)
	}
	store, err := statefile.Open(filepath.Join(dataDir, StateFileName), statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := store.Load()
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files {
		if f.Name == "my_refapp.sh" || f.AnonymousPlatform {
			t.Errorf("state file holds app_info.xml's file %+v", f)
		}
	}
	if len(snap.AppVersions) != 0 || len(snap.Apps) != 0 {
		t.Errorf("state file holds app versions %+v, apps %+v", snap.AppVersions, snap.Apps)
	}
	startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	srv.AddJobs(1)
	st = waitAllReported(t, srv, 3, testLimit)
	if rr := st.ReportedResults[st.Sent[2]]; rr.State != 5 || rr.VersionNum != 199 {
		t.Errorf("after restart: report %+v, want success with version 199", rr)
	}
	if len(st.Downloads) != 0 {
		t.Errorf("after restart: downloads %v", st.Downloads)
	}
}
