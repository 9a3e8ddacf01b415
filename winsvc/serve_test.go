package winsvc

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeRunner blocks in Run until its context is cancelled, then waits for
// release (so the test can watch the stop-pending phase), and returns
// err. With exitAlone it returns err without being cancelled.
type fakeRunner struct {
	started   chan struct{}
	cancelled chan struct{}
	release   chan struct{}
	exitAlone bool
	err       error

	mu      sync.Mutex
	reloads int
	runs    int
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{started: make(chan struct{}), cancelled: make(chan struct{}), release: make(chan struct{})}
}

func (f *fakeRunner) Run(ctx context.Context) error {
	f.mu.Lock()
	f.runs++
	f.mu.Unlock()
	close(f.started)
	if f.exitAlone {
		return f.err
	}
	<-ctx.Done()
	close(f.cancelled)
	<-f.release
	return f.err
}

func (f *fakeRunner) Reload() {
	f.mu.Lock()
	f.reloads++
	f.mu.Unlock()
}

func (f *fakeRunner) counts() (runs, reloads int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs, f.reloads
}

// scm plays the service control manager's side of Serve: it sends
// change requests and reads statuses. The request and status types are
// not the portable ones, as on Windows, to exercise the conversions.
type changeRequest struct{ cmd uint32 }
type scmStatus struct{ st Status }

type scm struct {
	requests chan changeRequest
	statuses chan scmStatus
	final    chan Status
}

func startServe(t *testing.T, s *Service) *scm {
	t.Helper()
	c := &scm{requests: make(chan changeRequest), statuses: make(chan scmStatus), final: make(chan Status, 1)}
	go func() {
		c.final <- Serve(s, c.requests,
			func(r changeRequest) Cmd { return Cmd(r.cmd) },
			c.statuses,
			func(st Status) scmStatus { return scmStatus{st} })
	}()
	return c
}

// next is the next status Serve reports (or its final one, with done).
func (c *scm) next(t *testing.T) (st Status, done bool) {
	t.Helper()
	select {
	case s := <-c.statuses:
		return s.st, false
	case f := <-c.final:
		return f, true
	case <-time.After(10 * time.Second):
		t.Fatal("Serve reported nothing for 10 s")
	}
	return Status{}, false
}

func (c *scm) expect(t *testing.T, state State) Status {
	t.Helper()
	st, done := c.next(t)
	if done || st.State != state {
		t.Fatalf("got %+v (final %v), want a %s report", st, done, state)
	}
	return st
}

// send delivers a control and returns Serve's answer.
func (c *scm) send(t *testing.T, cmd Cmd) Status {
	t.Helper()
	select {
	case c.requests <- changeRequest{uint32(cmd)}:
	case <-time.After(10 * time.Second):
		t.Fatalf("Serve did not take %s for 10 s", cmd)
	}
	st, done := c.next(t)
	if done {
		t.Fatalf("Serve returned %+v instead of answering %s", st, cmd)
	}
	return st
}

func (c *scm) finalStatus(t *testing.T) Status {
	t.Helper()
	for {
		st, done := c.next(t)
		if done {
			return st
		}
		if st.State != StopPending {
			t.Fatalf("unexpected report %+v while waiting for the end", st)
		}
	}
}

func testLogger() (*slog.Logger, *syncBuffer) {
	var b syncBuffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestServeStop(t *testing.T) {
	tests := []struct {
		name string
		cmd  Cmd
	}{
		{"stop", CmdStop},
		{"shutdown", CmdShutdown},
		{"preshutdown", CmdPreShutdown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFakeRunner()
			log, logs := testLogger()
			c := startServe(t, &Service{Start: func() (Runner, error) { return r, nil }, Logger: log, ProgressInterval: time.Millisecond})
			c.expect(t, StartPending)
			if st := c.expect(t, Running); st.Accepts != RunningAccepts {
				t.Fatalf("running accepts %#x, want %#x", st.Accepts, RunningAccepts)
			}
			<-r.started
			if st := c.send(t, CmdInterrogate); st.State != Running {
				t.Fatalf("interrogate answered %+v", st)
			}
			if st := c.send(t, CmdParamChange); st.State != Running {
				t.Fatalf("paramchange answered %+v", st)
			}
			st := c.send(t, tt.cmd)
			if st.State != StopPending || st.Accepts != 0 {
				t.Fatalf("%s answered %+v, want StopPending accepting nothing", tt.cmd, st)
			}
			<-r.cancelled // the daemon's context was cancelled
			// A second stop while stopping is harmless: the status
			// again, no second cancel (which would panic on close).
			if st := c.send(t, CmdStop); st.State != StopPending {
				t.Fatalf("second stop answered %+v", st)
			}
			// While Run winds down, the checkpoint keeps growing.
			last := st.CheckPoint
			for i := 0; i < 3; {
				s := c.expect(t, StopPending)
				if s.CheckPoint < last {
					t.Fatalf("checkpoint went back from %d to %d", last, s.CheckPoint)
				}
				if s.CheckPoint > last {
					i++
				}
				last = s.CheckPoint
			}
			select {
			case f := <-c.final:
				t.Fatalf("Serve returned %+v before Run did", f)
			default:
			}
			close(r.release)
			if f := c.finalStatus(t); f != (Status{State: Stopped}) {
				t.Fatalf("final %+v, want Stopped with exit code 0", f)
			}
			if runs, reloads := r.counts(); runs != 1 || reloads != 1 {
				t.Fatalf("runs=%d reloads=%d, want 1 and 1", runs, reloads)
			}
			for _, want := range []string{"boincd service running", "reloading", "stopping", "control=" + tt.cmd.String(), "boincd service stopped"} {
				if !strings.Contains(logs.String(), want) {
					t.Errorf("log lacks %q:\n%s", want, logs.String())
				}
			}
		})
	}
}

func TestServeExitCodes(t *testing.T) {
	runErr := errors.New("state file locked")
	tests := []struct {
		name     string
		startErr error
		runErr   error
		alone    bool // Run returns without a stop
		want     Status
		wantLog  string
	}{
		{"start fails", errors.New("config: bad toml"), nil, false,
			Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitStartFailed}, "config: bad toml"},
		{"run fails by itself", nil, runErr, true,
			Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitRunFailed}, "state file locked"},
		{"run fails while stopping", nil, runErr, false,
			Status{State: Stopped, Win32ExitCode: ErrorServiceSpecific, ServiceSpecificExitCode: ExitRunFailed}, "state file locked"},
		{"run ends by itself (idle)", nil, nil, true, Status{State: Stopped}, "boincd service stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newFakeRunner()
			r.err, r.exitAlone = tt.runErr, tt.alone
			log, logs := testLogger()
			start := func() (Runner, error) {
				if tt.startErr != nil {
					return nil, tt.startErr
				}
				return r, nil
			}
			c := startServe(t, &Service{Start: start, Logger: log})
			c.expect(t, StartPending)
			var final Status
			switch {
			case tt.startErr != nil:
				final = c.finalStatus(t)
			case tt.alone:
				// Running may or may not be reported before Run's end
				// is seen; either way the end is the final status.
				for {
					st, done := c.next(t)
					if done {
						final = st
						break
					}
					if st.State != Running {
						t.Fatalf("unexpected report %+v", st)
					}
				}
			default:
				c.expect(t, Running)
				c.send(t, CmdStop)
				<-r.cancelled
				close(r.release)
				final = c.finalStatus(t)
			}
			if final != tt.want {
				t.Fatalf("final %+v, want %+v", final, tt.want)
			}
			if !strings.Contains(logs.String(), tt.wantLog) {
				t.Fatalf("log lacks %q:\n%s", tt.wantLog, logs.String())
			}
		})
	}
}

func TestServeUnexpectedControl(t *testing.T) {
	r := newFakeRunner()
	log, logs := testLogger()
	c := startServe(t, &Service{Start: func() (Runner, error) { return r, nil }, Logger: log})
	c.expect(t, StartPending)
	c.expect(t, Running)
	if st := c.send(t, CmdPause); st.State != Running {
		t.Fatalf("pause answered %+v", st)
	}
	if !strings.Contains(logs.String(), "control=pause") {
		t.Fatalf("pause not logged:\n%s", logs.String())
	}
	c.send(t, CmdStop)
	close(r.release)
	if f := c.finalStatus(t); f.State != Stopped {
		t.Fatalf("final %+v", f)
	}
}

func TestServeNilRunner(t *testing.T) {
	c := startServe(t, &Service{Start: func() (Runner, error) { return nil, nil }})
	c.expect(t, StartPending)
	if f := c.finalStatus(t); f.ServiceSpecificExitCode != ExitStartFailed {
		t.Fatalf("final %+v, want exit code %d", f, ExitStartFailed)
	}
}
