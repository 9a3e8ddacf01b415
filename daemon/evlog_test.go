package daemon

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/eventlog"
	"github.com/boincd/boincd/hostcond"
)

// Every slog message the event log words as the C++ client does must
// still be logged by the daemon (or a package it gives its logger to): a renamed message would silently fall
// back to the raw rendering in BOINC Manager.
func TestEventLogWordedMessagesAreLogged(t *testing.T) {
	t.Parallel()
	var src strings.Builder
	// The daemon's records, and those of the packages it gives its
	// logger to.
	var files []string
	for _, pattern := range []string{"*.go", "../statefile/*.go", "../coproc/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, msg := range eventlog.Messages() {
		lit := `"` + msg + `"`
		// Transfer failures are logged as what+" failed …".
		if w, rest, ok := strings.Cut(msg, " "); ok && (w == "download" || w == "upload") {
			lit = `" ` + rest + `"`
		}
		if !strings.Contains(src.String(), lit) {
			t.Errorf("the event log words %q, which the daemon no longer logs", msg)
		}
	}
}

// What is suspended is logged when it changes, with the C++ client's
// reason, whatever suspends it; the GPU has lines of its own only where
// there are GPUs and computing as a whole runs.
func TestSuspendChangesLogged(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	type step struct {
		run, gpu, net int
		dec           hostcond.Decision
		want          []string // event log bodies added by this step
	}
	tests := []struct {
		name  string
		gpus  int
		steps []step
	}{
		{"run mode never, then auto", 0, []step{
			{ModeAuto, ModeAuto, ModeAuto, hostcond.Decision{}, nil},
			{ModeNever, ModeAuto, ModeAuto, hostcond.Decision{}, []string{"Suspending computation - user request"}},
			{ModeNever, ModeAuto, ModeAuto, hostcond.Decision{}, nil},
			{ModeAuto, ModeAuto, ModeAuto, hostcond.Decision{}, []string{"Resuming computation"}},
		}},
		{"network", 0, []step{
			{ModeAuto, ModeAuto, ModeNever, hostcond.Decision{}, []string{"Suspending network activity - user request"}},
			{ModeAuto, ModeAuto, ModeAuto, hostcond.Decision{}, []string{"Resuming network activity"}},
		}},
		{"host condition, then a user request", 0, []step{
			{ModeAuto, ModeAuto, ModeAuto, hostcond.Decision{Computing: hostcond.ReasonCPUUsage}, []string{"Suspending computation - CPU is busy"}},
			{ModeNever, ModeAuto, ModeAuto, hostcond.Decision{Computing: hostcond.ReasonCPUUsage}, []string{"Suspending computation - user request"}},
			{ModeAlways, ModeAuto, ModeAuto, hostcond.Decision{Computing: hostcond.ReasonCPUUsage}, []string{"Resuming computation"}},
		}},
		{"no GPU: GPU mode says nothing", 0, []step{
			{ModeAuto, ModeNever, ModeAuto, hostcond.Decision{}, nil},
		}},
		{"GPU mode with a GPU", 1, []step{
			{ModeAuto, ModeNever, ModeAuto, hostcond.Decision{}, []string{"Suspending GPU computation - user request"}},
			{ModeNever, ModeNever, ModeAuto, hostcond.Decision{}, []string{"Suspending computation - user request", "Resuming GPU computation"}},
			{ModeAuto, ModeAuto, ModeAuto, hostcond.Decision{}, []string{"Resuming computation"}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			elog := eventlog.New(nil, 100)
			d := &Daemon{hostc: newHostState(), log: slog.New(elog)}
			d.host.NUsableCoprocs = tc.gpus
			for i, s := range tc.steps {
				before := elog.LastSeqno()
				d.modes.Run.Perm, d.modes.GPU.Perm, d.modes.Network.Perm = s.run, s.gpu, s.net
				d.hostc.decision = s.dec
				d.logSuspendChanges(now)
				var got []string
				for _, m := range elog.Since(before) {
					got = append(got, m.Body)
				}
				if strings.Join(got, "|") != strings.Join(s.want, "|") {
					t.Errorf("step %d: logged %q, want %q", i, got, s.want)
				}
			}
		})
	}
}
