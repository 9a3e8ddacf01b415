package winsvc

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Runner is what the service runs: boincd's daemon. Run blocks until its
// context is cancelled (graceful stop) or it ends by itself; Reload asks
// it to re-read its config.
type Runner interface {
	Run(ctx context.Context) error
	Reload()
}

// DefaultProgressInterval is how often StopPending is reported again with
// a higher CheckPoint while the daemon stops.
const DefaultProgressInterval = 5 * time.Second

// Service is how Serve runs a Runner under the SCM.
type Service struct {
	// Start builds the Runner while the service reports StartPending; an
	// error ends the service with ExitStartFailed.
	Start  func() (Runner, error)
	Logger *slog.Logger
	// Zero values mean DefaultStartWaitHint, DefaultStopWaitHint and
	// DefaultProgressInterval.
	StartWaitHint, StopWaitHint, ProgressInterval time.Duration
}

// Serve is the body of svc.Handler.Execute, written against portable
// types: it reports StartPending, builds the Runner, runs it, reports
// Running, then answers control requests from requests until Run returns,
// and returns the final Stopped status (which the caller hands back to
// the SCM as Execute's exit code; x/sys/windows/svc reports Stopped
// itself). cmdOf and statusOf convert between the channel element types
// (svc.ChangeRequest, svc.Status on Windows) and the portable ones, so no
// goroutine is needed to translate.
//
// Every status goes to statuses with a blocking send, as the svc package
// expects; its dispatcher always receives.
func Serve[R, S any](s *Service, requests <-chan R, cmdOf func(R) Cmd, statuses chan<- S, statusOf func(Status) S) Status {
	log := s.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	every := s.ProgressInterval
	if every <= 0 {
		every = DefaultProgressInterval
	}
	m := NewMachine(s.StartWaitHint, s.StopWaitHint)
	report := func(st Status) { statuses <- statusOf(st) }

	report(m.Starting())
	r, err := s.Start()
	if err == nil && r == nil {
		err = errors.New("service start returned no runner")
	}
	if err != nil {
		log.Error("boincd service cannot start", slog.Any("err", err))
		return m.Stopped(ExitStartFailed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	report(m.Started())
	log.Info("boincd service running")

	var tick <-chan time.Time
	for {
		select {
		case req := <-requests:
			c := cmdOf(req)
			d := m.Handle(c)
			switch {
			case d.Stop:
				log.Info("boincd service stopping: asking tasks to checkpoint and quit", slog.String("control", c.String()))
				cancel()
				t := time.NewTicker(every)
				defer t.Stop()
				tick = t.C
			case d.Reload:
				log.Info("boincd service reloading its config", slog.String("control", c.String()))
				r.Reload()
			case d.Unexpected:
				log.Warn("boincd service got a control it does not accept", slog.String("control", c.String()))
			}
			report(d.Status)
		case <-tick:
			report(m.Progress())
		case err := <-done:
			if err != nil {
				log.Error("boincd stopped with an error", slog.Any("err", err))
				return m.Stopped(ExitRunFailed)
			}
			log.Info("boincd service stopped")
			return m.Stopped(ExitOK)
		}
	}
}
