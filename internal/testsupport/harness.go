package testsupport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/boincd/boincd/internal/testproject"
)

// NewProject is a test project, not started, that is closed when the
// test ends. With no apps it serves the reference sleeper app, and with
// no request delay set it asks for none, so RPCs can follow each other
// at once.
func NewProject(t testing.TB, cfg testproject.Config) *testproject.Server {
	t.Helper()
	if len(cfg.Apps) == 0 {
		cfg.Apps = []testproject.App{testproject.DefaultApp()}
	}
	if cfg.RequestDelay == 0 {
		cfg.RequestDelay = -1
	}
	srv, err := testproject.New(cfg)
	if err != nil {
		t.Fatalf("testproject.New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("closing test project: %v", err)
		}
	})
	return srv
}

// StartProject is NewProject started.
func StartProject(t testing.TB, cfg testproject.Config) *testproject.Server {
	t.Helper()
	srv := NewProject(t, cfg)
	if err := srv.Start(); err != nil {
		t.Fatalf("testproject Start: %v", err)
	}
	return srv
}

// ErrStillRunning is Stop's error when the run did not return in time.
var ErrStillRunning = errors.New("Run did not return")

// Runner is a Run loop (a daemon's) going in the background of a test.
type Runner struct {
	cancel context.CancelFunc
	done   chan error
}

// Run calls run in a goroutine with a context that Stop cancels. When
// the test ends it is stopped, waiting up to stopLimit, and if the test
// failed the tail of logs is logged, labelled with where (its data
// directory). A cleanup registered before Run (a project's) runs after
// this stop.
func Run(t testing.TB, run func(context.Context) error, stopLimit time.Duration, logs *LogBuffer, where string) *Runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runner{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx) }()
	t.Cleanup(func() {
		if err := r.Stop(stopLimit); err != nil {
			t.Errorf("daemon stop: %v", err)
		}
		if t.Failed() {
			t.Logf("daemon log (%s):\n%s", where, Tail(logs.String(), 20000))
		}
	})
	return r
}

// Stop cancels the run (for a daemon, a graceful shutdown) and waits up
// to limit for it to return, with what it returned. Once it has
// returned, Stop returns nil; it is safe to call more than once, from
// the test's goroutine.
func (r *Runner) Stop(limit time.Duration) error {
	r.cancel()
	select {
	case err, ok := <-r.done:
		if !ok {
			return nil
		}
		close(r.done)
		return err
	case <-time.After(limit):
		return ErrStillRunning
	}
}

// WaitFor polls cond every 20 ms until it holds, and fails the test if
// limit passes first.
func WaitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	Poll(t, 20*time.Millisecond, limit, what, cond)
}

// Poll is WaitFor polling every interval.
func Poll(t testing.TB, every, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(every)
	}
}
