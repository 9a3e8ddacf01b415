package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/boincd/boincd/guirpc/client"
)

// Fleet polling: one goroutine per other host, and only while someone
// looks. Every dashboard render (page or stream tick) marks the fleet as
// watched; a host's poller ends after fleetLinger without that, and the
// next render starts it again. Between polls each keeps one
// authenticated GUI RPC connection open, as the Manager does, and backs
// off when the host is unreachable or refuses the password (GUI RPC's
// brake slows every further attempt after a few wrong ones).
const (
	defaultFleetPoll = 3 * time.Second
	fleetLinger      = 30 * time.Second
	fleetDialTimeout = 10 * time.Second
	fleetPollTimeout = 20 * time.Second
	fleetMaxBackoff  = time.Minute
	fleetAuthBackoff = 5 * time.Minute
)

// hostStatus is what the last attempt on a host found.
type hostStatus int

const (
	hostConnecting hostStatus = iota
	hostOK
	hostUnreachable
	hostAuthFailed
)

func (s hostStatus) String() string {
	switch s {
	case hostOK:
		return "connected"
	case hostUnreachable:
		return "unreachable"
	case hostAuthFailed:
		return "password refused"
	}
	return "connecting"
}

// remoteSnap is a host's last poll: what the page shows of it.
type remoteSnap struct {
	Status  hostStatus
	Err     string // the last failure, for people; never holds the password
	Version string
	At      time.Time // of the last good poll
	Failed  time.Time // of the last failure
	CC      *client.CCStatus
	Results []client.Result
	Proj    []client.Project
}

// fleetPoller keeps the hosts' snapshots.
type fleetPoller struct {
	fleet    *Fleet
	interval time.Duration
	linger   time.Duration // fleetLinger; tests shorten it
	log      *slog.Logger

	mu      sync.Mutex
	base    context.Context // Serve's; nil before Serve: nothing is polled
	watched time.Time
	snaps   map[string]*remoteSnap
	workers map[string]*fleetWorker
	wg      sync.WaitGroup
}

type fleetWorker struct {
	host   FleetHost
	cancel context.CancelFunc
	kick   chan struct{} // poll now (after an action)
}

func newFleetPoller(f *Fleet, interval time.Duration, log *slog.Logger) *fleetPoller {
	return &fleetPoller{fleet: f, interval: interval, linger: fleetLinger, log: log, snaps: map[string]*remoteSnap{}, workers: map[string]*fleetWorker{}}
}

// start lets pollers run until ctx ends; stop waits for them.
func (p *fleetPoller) start(ctx context.Context) {
	p.mu.Lock()
	p.base = ctx
	p.mu.Unlock()
}

func (p *fleetPoller) stop() {
	p.mu.Lock()
	for id, w := range p.workers {
		w.cancel()
		delete(p.workers, id)
	}
	p.base = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// watch marks the fleet as looked at and brings the pollers in line
// with the stored hosts: one for each, none for a removed one.
func (p *fleetPoller) watch() {
	hosts := p.fleet.Hosts()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watched = time.Now()
	if p.base == nil || p.base.Err() != nil {
		return
	}
	keep := map[string]bool{}
	for _, h := range hosts {
		keep[h.ID] = true
		if _, ok := p.workers[h.ID]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(p.base)
		w := &fleetWorker{host: h, cancel: cancel, kick: make(chan struct{}, 1)}
		p.workers[h.ID] = w
		if p.snaps[h.ID] == nil {
			p.snaps[h.ID] = &remoteSnap{}
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.run(ctx, w)
		}()
	}
	for id, w := range p.workers {
		if !keep[id] {
			w.cancel()
			delete(p.workers, id)
		}
	}
	for id := range p.snaps {
		if !keep[id] {
			delete(p.snaps, id)
		}
	}
}

// snap returns a copy of a host's last snapshot (the slices are shared
// and never modified after a poll stores them).
func (p *fleetPoller) snap(id string) remoteSnap {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.snaps[id]; s != nil {
		return *s
	}
	return remoteSnap{}
}

// kick makes a host's poller poll now.
func (p *fleetPoller) kick(id string) {
	p.mu.Lock()
	w := p.workers[id]
	p.mu.Unlock()
	if w != nil {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
}

// idle: nobody has looked for fleetLinger.
func (p *fleetPoller) idle() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Since(p.watched) > p.linger
}

// retire removes w, when it is still the host's worker.
func (p *fleetPoller) retire(w *fleetWorker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.workers[w.host.ID] == w {
		delete(p.workers, w.host.ID)
	}
	w.cancel()
}

func (p *fleetPoller) update(id string, f func(s *remoteSnap)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.snaps[id]
	if s == nil {
		return // removed meanwhile
	}
	cp := *s
	f(&cp)
	p.snaps[id] = &cp
}

// run polls one host until ctx ends or nobody looks.
func (p *fleetPoller) run(ctx context.Context, w *fleetWorker) {
	defer p.retire(w)
	log := p.log.With(slog.Any("host", w.host))
	var c *client.Client
	defer func() {
		if c != nil {
			_ = c.Close()
		}
	}()
	backoff := p.interval
	var version string // asked once per connection
	for {
		if p.idle() {
			return
		}
		var err error
		if c == nil {
			c, err = connectHost(ctx, w.host)
			if err == nil {
				version, err = hostVersion(ctx, c)
			}
		}
		if err == nil {
			err = p.poll(ctx, c, w.host.ID, version)
		}
		wait := p.interval
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if c != nil {
				_ = c.Close()
				c = nil
			}
			st := hostUnreachable
			if errors.Is(err, client.ErrUnauthorized) {
				st = hostAuthFailed
				backoff = max(backoff, fleetAuthBackoff)
			}
			p.update(w.host.ID, func(s *remoteSnap) {
				if s.Status != st {
					log.Info("fleet host "+st.String(), slog.Any("err", err))
				}
				s.Status, s.Err, s.Failed = st, err.Error(), time.Now()
			})
			wait = backoff
			backoff = min(2*backoff, max(fleetMaxBackoff, backoff))
		} else {
			backoff = p.interval
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.kick:
			t.Stop()
		case <-t.C:
		}
	}
}

// connectHost dials and authorizes.
func connectHost(ctx context.Context, h FleetHost) (*client.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, fleetDialTimeout)
	defer cancel()
	c, err := client.Dial(dctx, h.Addr)
	if err != nil {
		return nil, err
	}
	if err := c.Authorize(dctx, h.Password); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// hostVersion is the client's version, as the Manager learns it on
// connecting (exchange_versions).
func hostVersion(ctx context.Context, c *client.Client) (string, error) {
	vctx, cancel := context.WithTimeout(ctx, fleetDialTimeout)
	defer cancel()
	v, err := c.ExchangeVersions(vctx)
	if err != nil {
		return "", err
	}
	return v.String(), nil
}

// poll reads what the fleet view shows of a host.
func (p *fleetPoller) poll(ctx context.Context, c *client.Client, id, version string) error {
	pctx, cancel := context.WithTimeout(ctx, fleetPollTimeout)
	defer cancel()
	cc, err := c.GetCCStatus(pctx)
	if err != nil {
		return err
	}
	rs, err := c.GetResults(pctx, false)
	if err != nil {
		return err
	}
	ps, err := c.GetProjectStatus(pctx)
	if err != nil {
		return err
	}
	p.update(id, func(s *remoteSnap) {
		*s = remoteSnap{Status: hostOK, Version: version, At: time.Now(), CC: cc, Results: rs, Proj: ps}
	})
	return nil
}

// onHost runs one action on a host over a connection of its own (the
// poller's may be mid-poll or backing off), then has the poller look
// again so the page shows the outcome at once.
func (p *fleetPoller) onHost(ctx context.Context, h FleetHost, f func(c *client.Client) error) error {
	c, err := connectHost(ctx, h)
	if err != nil {
		return fmt.Errorf("%s: %w", h.Name, err)
	}
	defer c.Close()
	if err := f(c); err != nil {
		return fmt.Errorf("%s: %w", h.Name, err)
	}
	p.kick(h.ID)
	return nil
}
