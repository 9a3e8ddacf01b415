package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/demoapp"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// A running app's trickle-up reaches the server in a scheduler request
// made for it, shortly after the app sent it, as a <msg_from_host> with
// the task's name and the app's text; the server's answer, a trickle-down
// (trickle_echo), lands in the task's slot where the app reads it.
func TestTrickleUpAndDown(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary is the app: demoapp.RunIfInvoked in TestMain.
	appName := demoapp.BinaryPrefix + "_1.00_" + boinc.PlatformName
	srv := testsupport.StartProject(t, testproject.Config{
		Apps: []testproject.App{{
			Name: "demoapp", APIVersion: "7.20.5",
			Files: []testproject.AppFile{{Name: appName, Path: exe, Executable: true, MainProgram: true}},
		}},
		Job:         testproject.JobTemplate{CommandLine: "--seconds 1 --trickle-up <progress>{n}</progress> --trickle-down-wait 60s"},
		TotalJobs:   1,
		TrickleEcho: true,
	})
	h := startDaemon(t, srv)

	var msg testproject.MsgFromHost
	testsupport.WaitFor(t, 60*time.Second, "the server to get the trickle-up", func() bool {
		st := srv.Stats()
		if len(st.MsgsFromHost) == 0 {
			return false
		}
		msg = st.MsgsFromHost[0]
		return true
	})
	st := srv.Stats()
	if len(st.Sent) != 1 || msg.ResultName != st.Sent[0] {
		t.Fatalf("msg_from_host for task %q, want %v", msg.ResultName, st.Sent)
	}
	if msg.Variety != "demo" || !strings.Contains(msg.Text, "<progress>1</progress>") {
		t.Fatalf("msg_from_host variety %q text %q", msg.Variety, msg.Text)
	}
	if msg.Time <= 0 || msg.Time > time.Now().Unix() {
		t.Fatalf("msg_from_host time %d", msg.Time)
	}
	if !strings.Contains(h.logs.String(), "To send trickle-up message") {
		t.Errorf("no scheduler request with the trickle-up reason in the log:\n%s", h.logs.String())
	}

	// The echo comes back as a trickle-down the app copies to its stderr;
	// the report carries it.
	testsupport.WaitFor(t, 60*time.Second, "the task to be reported", func() bool {
		_, ok := srv.Stats().ReportedResults[msg.ResultName]
		return ok
	})
	rep := srv.Stats().ReportedResults[msg.ResultName]
	if rep.ExitStatus != 0 || !strings.Contains(rep.StderrOut, "demoapp: trickle-down trickle_down_") || !strings.Contains(rep.StderrOut, "<progress>1</progress>") {
		t.Fatalf("report: exit %d, stderr:\n%s", rep.ExitStatus, rep.StderrOut)
	}

	// Acknowledged: nothing of the trickle is left, the flag is down.
	dir := filepath.Join(h.dataDir, "projects", boinc.EscapeProjectURL(srv.URL()))
	testsupport.WaitFor(t, 10*time.Second, "the acknowledged trickle file to go", func() bool {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "trickle_") {
				return false
			}
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var pending bool
	if err := h.d.peek(ctx, func() { pending = h.d.st.projects[srv.URL()].TrickleUpPending }); err != nil {
		t.Fatal(err)
	}
	if pending {
		t.Fatal("trickle_up_pending still set after the acknowledged request")
	}
	if n := len(srv.Stats().MsgsFromHost); n != 1 {
		t.Fatalf("the server got %d trickle-ups, want 1 (sent again?)", n)
	}
}
