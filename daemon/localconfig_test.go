package daemon

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// cc_config.xml and app_config.xml are read at start and again on
// read_cc_config; a problem is logged once with its file and line, and
// an app name the project does not have is named with the apps it has.
func TestLocalConfigRead(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 0})
	dataDir := filepath.Join(t.TempDir(), "data")
	url := srv.URL()
	projDir := filepath.Join(dataDir, "projects", boinc.EscapeProjectURL(url))
	if err := os.MkdirAll(projDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dataDir, "cc_config.xml"), "<cc_config>\n<options>\n<ncpus>1</ncpus>\n<nccpus>2</nccpus>\n<dont_use_vbox/>\n</options>\n</cc_config>\n")
	write(filepath.Join(projDir, "app_config.xml"), "<app_config>\n<app>\n<name>nosuchapp</name>\n<max_concurrent>1</max_concurrent>\n</app>\n</app_config>\n")
	h := startDaemonIn(t, dataDir, projectsConfig(srv), nil)
	testsupport.WaitFor(t, 30*time.Second, "the project's apps", func() bool { return len(h.logs.Find("scheduler request completed")) > 0 })

	if got := h.logs.Find("cc_config.xml line 4: unknown option <nccpus>"); len(got) != 1 {
		t.Errorf("unknown option logged %d times", len(got))
	}
	if got := h.logs.Find("cc_config.xml option <dont_use_vbox> is not supported by boincd; ignored"); len(got) != 1 {
		t.Errorf("unsupported option logged %d times", len(got))
	}
	if got := h.logs.Find("app_config.xml read", "project", url); len(got) != 1 {
		t.Errorf("app_config.xml read %d times at start", len(got))
	}
	if got := h.logs.Find("projects/" + boinc.EscapeProjectURL(url) + "/app_config.xml line 2: the project has no app named \"nosuchapp\" (its apps: refapp)"); len(got) != 0 {
		t.Errorf("app name checked before the project sent its apps")
	}
	// Read again: the app name is checked now that the apps are known,
	// and the known problems are not logged again.
	guiDo(t, h, guirpc.ReadCCConfig{})
	var named bool
	for _, r := range h.logs.Records() {
		if m := r.Str("msg"); m == "projects/"+boinc.EscapeProjectURL(url)+`/app_config.xml line 2: the project has no app named "nosuchapp" (its apps: refapp)` {
			named = true
		}
	}
	if !named {
		t.Errorf("unknown app name not reported:\n%s", testsupport.Tail(h.logs.String(), 4000))
	}
	if got := h.logs.Find("cc_config.xml line 4: unknown option <nccpus>"); len(got) != 1 {
		t.Errorf("unknown option logged %d times after a second read", len(got))
	}
	if ac := h.d.appConfig(url); ac == nil || len(ac.Apps) != 1 || ac.Apps[0].MaxConcurrent != 1 {
		t.Errorf("app config %+v", ac)
	}
}
