package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/guirpc/client"
)

// The Fleet tab's handlers. Actions are parsed by the same actions() as
// this host's, into guirpc.Action values: this host carries them out
// through the Backend, another host through GUI RPC (remoteDo), so a
// fleet may mix boincd hosts and C++ clients.

// openFleet opens the fleet file of cfg.DataDir; without a data
// directory there is no Fleet tab.
func (s *Server) openFleet() error {
	if s.cfg.DataDir == "" {
		return nil
	}
	f, err := OpenFleet(s.cfg.DataDir)
	if f == nil {
		return err
	}
	if err != nil {
		// Set aside and started afresh: say so on the page, not only here.
		s.log.Error("fleet file unreadable", slog.Any("err", err))
		s.fleetProblem = err.Error()
	}
	s.fleet = f
	interval := s.cfg.FleetPollInterval
	if interval <= 0 {
		interval = defaultFleetPoll
	}
	s.fleetp = newFleetPoller(f, interval, s.log.With(slog.String("part", "fleet")))
	return nil
}

// fleetDone answers a fleet form: 204 to the page's script, or back to
// the Fleet tab for a plain form post.
func fleetDone(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Requested-With") == "fetch" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/#fleet", http.StatusSeeOther)
}

func (s *Server) fleetAdd(w http.ResponseWriter, r *http.Request, _ session) {
	if s.fleet == nil {
		http.Error(w, "no fleet: the dashboard has no data directory", http.StatusNotFound)
		return
	}
	h, err := s.fleet.Add(r.PostForm.Get("name"), r.PostForm.Get("addr"), r.PostForm.Get("password"))
	if err != nil {
		s.log.Info("fleet host not added", slog.Any("err", err))
		http.Error(w, "host not added: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.log.Info("fleet host added", slog.Any("host", h))
	s.fleetp.watch()
	fleetDone(w, r)
}

func (s *Server) fleetRemove(w http.ResponseWriter, r *http.Request, _ session) {
	if s.fleet == nil {
		http.Error(w, "no fleet: the dashboard has no data directory", http.StatusNotFound)
		return
	}
	h, ok := s.fleet.Host(r.PostForm.Get("host"))
	if !ok {
		http.Error(w, "no such host in the fleet", http.StatusNotFound)
		return
	}
	if _, err := s.fleet.Remove(h.ID); err != nil {
		s.log.Warn("fleet host not removed", slog.Any("host", h), slog.Any("err", err))
		http.Error(w, "host not removed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	s.log.Info("fleet host removed", slog.Any("host", h))
	s.fleetp.watch()
	fleetDone(w, r)
}

// fleetAct carries out a task, project or mode action on one host.
func (s *Server) fleetAct(w http.ResponseWriter, r *http.Request, ss session) {
	kind := r.PostForm.Get("kind")
	acts, err := actions(r.PostForm.Get)
	if err == nil && !fleetActionOK(kind) {
		err = fmt.Errorf("%w: %s is not a fleet action", errBadRequest, kind)
	}
	hostID := r.PostForm.Get("host")
	var host FleetHost
	if err == nil && hostID != localHostID {
		var ok bool
		if s.fleet != nil {
			host, ok = s.fleet.Host(hostID)
		}
		if !ok {
			err = fmt.Errorf("%w: no such host in the fleet", errBadRequest)
		}
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		if hostID == localHostID {
			for _, a := range acts {
				if err = s.cfg.Backend.Do(ctx, a); err != nil {
					break
				}
			}
		} else {
			err = s.fleetp.onHost(ctx, host, func(c *client.Client) error {
				for _, a := range acts {
					if err := remoteDo(ctx, c, a); err != nil {
						return err
					}
				}
				return nil
			})
		}
		cancel()
	}
	attrs := []any{slog.String("host", hostID), slog.String("kind", kind), slog.String("op", r.PostForm.Get("op"))}
	if err != nil {
		code := http.StatusConflict
		if errors.Is(err, errBadRequest) {
			code = http.StatusBadRequest
		}
		s.log.Info("web fleet action failed", append(attrs, slog.Any("err", err))...)
		http.Error(w, err.Error(), code)
		return
	}
	s.log.Info("web fleet action", attrs...)
	s.kick(ss.id)
	fleetDone(w, r)
}

// remoteDo sends one action to another host as the GUI RPC op that
// causes it there (the op boinccmd sends).
func remoteDo(ctx context.Context, c *client.Client, a guirpc.Action) error {
	switch a := a.(type) {
	case guirpc.ResultOp:
		return c.ResultOp(ctx, a.URL, a.Name, a.Op)
	case guirpc.ProjectOp:
		return c.ProjectOp(ctx, a.URL, a.Op)
	case guirpc.SetMode:
		m, d := boinc.RunMode(a.Mode), time.Duration(a.Duration*float64(time.Second))
		switch a.Which {
		case "run":
			return c.SetRunMode(ctx, m, d)
		case "gpu":
			return c.SetGPUMode(ctx, m, d)
		case "network":
			return c.SetNetworkMode(ctx, m, d)
		}
	}
	return fmt.Errorf("%w: %T is not a fleet action", errBadRequest, a)
}
