package daemon

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
)

// Project reset over GUI RPC drops the tasks and files but keeps the
// project; detach over GUI RPC removes it, and a reload of the unchanged
// config does not attach it again behind the volunteer's back.
func TestProjectResetAndRPCDetach(t *testing.T) {
	t.Parallel()
	srv := testsupport.StartProject(t, testproject.Config{
		Job:       testproject.JobTemplate{CommandLine: "--seconds 60", InputSize: 1000},
		TotalJobs: 2,
	})
	cfg := projectsConfig(srv)
	h := startDaemonIn(t, t.TempDir()+"/data", cfg, nil)
	url := srv.URL()
	testsupport.WaitFor(t, 30*time.Second, "tasks to start", func() bool {
		for _, tv := range h.snapshot().Tasks {
			if tv.Running {
				return true
			}
		}
		return false
	})
	do := func(a guirpc.Action) error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return rpcBackend{h.d}.Do(ctx, a)
	}

	if err := do(guirpc.ProjectOp{URL: url, Op: guirpc.ProjectReset}); err != nil {
		t.Fatalf("reset: %v", err)
	}
	v := h.snapshot()
	if _, ok := v.project(url); !ok {
		t.Fatal("reset detached the project")
	}
	for _, tv := range v.Tasks {
		if tv.Project == url {
			t.Fatalf("task %s survived the reset", tv.Name)
		}
	}
	dir := h.dataDir + "/projects/" + boinc.EscapeProjectURL(url)
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Fatalf("reset left %d files in %s", len(entries), dir)
	}

	if err := do(guirpc.ProjectOp{URL: url, Op: guirpc.ProjectDetach}); err != nil {
		t.Fatalf("detach: %v", err)
	}
	if _, ok := h.snapshot().project(url); ok {
		t.Fatal("project still attached after detach")
	}
	if err := do(guirpc.ProjectOp{URL: url, Op: guirpc.ProjectUpdate}); err != guirpc.ErrNoSuchProject {
		t.Fatalf("update of a detached project: %v, want %v", err, guirpc.ErrNoSuchProject)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.d.query(ctx, func() { h.d.reconcile(cfg, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.snapshot().project(url); ok {
		t.Fatal("a reload of the unchanged config attached the project detached over GUI RPC")
	}
	if len(h.logs.Find("project is in the config but was detached with GUI RPC; edit its entry to attach it again")) == 0 {
		t.Fatal("the reload did not say why the project stays detached")
	}
	// Changing the entry attaches it again.
	cfg.Projects[0].ResourceShare = 50
	if err := h.d.query(ctx, func() { h.d.reconcile(cfg, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := h.snapshot().project(url); !ok {
		t.Fatal("an edited config entry did not attach the project again")
	}
}
