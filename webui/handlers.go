package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
)

// actionTimeout bounds one action's wait on the daemon.
const actionTimeout = 30 * time.Second

// snoozeSeconds is the Manager's Snooze: computing and GPU suspended for
// an hour (clientgui/BOINCTaskBar.cpp OnSnooze: set_run_mode and
// set_gpu_mode RUN_MODE_NEVER, 3600).
const snoozeSeconds = 3600

func pageParam(r *http.Request) int {
	p, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || p < 0 {
		return 0
	}
	return p
}

// alive: the session still exists (not logged out, not expired).
func (s *Server) alive(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, ok := s.sessions[id]
	return ok && time.Since(ss.used) <= sessionIdle
}

// errBadRequest marks a form the dashboard itself would never send.
var errBadRequest = errors.New("bad request")

// actions turns a posted form into the GUI RPC actions it stands for:
// the same values the GUI RPC ops build (guirpc/ops.go), so the daemon's
// one implementation carries them out.
func actions(f func(string) string) ([]guirpc.Action, error) {
	url := canonicalURL(strings.TrimSpace(f("url")))
	need := func(vals ...string) error {
		for _, v := range vals {
			if v == "" {
				return fmt.Errorf("%w: a field is missing", errBadRequest)
			}
		}
		return nil
	}
	switch f("kind") {
	case "task":
		op := f("op")
		switch op {
		case guirpc.ResultSuspend, guirpc.ResultResume, guirpc.ResultAbort:
		default:
			return nil, fmt.Errorf("%w: task op %q", errBadRequest, op)
		}
		if err := need(url, f("name")); err != nil {
			return nil, err
		}
		return []guirpc.Action{guirpc.ResultOp{URL: url, Name: f("name"), Op: op}}, nil
	case "project":
		op := f("op")
		switch op {
		case guirpc.ProjectUpdate, guirpc.ProjectSuspend, guirpc.ProjectResume, guirpc.ProjectNoMoreWork,
			guirpc.ProjectAllowMoreWork, guirpc.ProjectDetach:
		default:
			return nil, fmt.Errorf("%w: project op %q", errBadRequest, op)
		}
		if err := need(url); err != nil {
			return nil, err
		}
		return []guirpc.Action{guirpc.ProjectOp{URL: url, Op: op}}, nil
	case "transfer":
		op := f("op")
		if op != guirpc.TransferRetry && op != guirpc.TransferAbort {
			return nil, fmt.Errorf("%w: transfer op %q", errBadRequest, op)
		}
		if err := need(url, f("file")); err != nil {
			return nil, err
		}
		return []guirpc.Action{guirpc.TransferOp{URL: url, File: f("file"), Op: op}}, nil
	case "mode":
		which := f("which")
		if which != "run" && which != "gpu" && which != "network" {
			return nil, fmt.Errorf("%w: mode of %q", errBadRequest, which)
		}
		m, err := strconv.Atoi(f("mode"))
		if err != nil || m < guirpc.ModeAlways || m > guirpc.ModeRestore {
			return nil, fmt.Errorf("%w: mode %q", errBadRequest, f("mode"))
		}
		var dur float64
		if d := f("duration"); d != "" {
			dur, err = strconv.ParseFloat(d, 64)
			if err != nil || !(dur >= 0 && dur <= 100*365*24*3600) {
				return nil, fmt.Errorf("%w: duration %q", errBadRequest, d)
			}
		}
		return []guirpc.Action{guirpc.SetMode{Which: which, Mode: m, Duration: dur}}, nil
	case "snooze":
		return []guirpc.Action{
			guirpc.SetMode{Which: "run", Mode: guirpc.ModeNever, Duration: snoozeSeconds},
			guirpc.SetMode{Which: "gpu", Mode: guirpc.ModeNever, Duration: snoozeSeconds},
		}, nil
	case "attach":
		key := strings.TrimSpace(f("key"))
		if url == "" {
			return nil, guirpc.ErrMissingURL
		}
		if key == "" {
			return nil, guirpc.ErrMissingAuthenticator
		}
		return []guirpc.Action{guirpc.Attach{URL: url, Authenticator: key}}, nil
	case "benchmarks":
		return []guirpc.Action{guirpc.RunBenchmarks{}}, nil
	case "network":
		return []guirpc.Action{guirpc.NetworkAvailable{}}, nil
	}
	return nil, fmt.Errorf("%w: kind %q", errBadRequest, f("kind"))
}

// canonicalURL canonicalises a project URL as GUI RPC's ops do; an
// unparsable one goes on as given, for the daemon to refuse.
func canonicalURL(u string) string {
	if u == "" {
		return ""
	}
	if c, err := boinc.CanonicalMasterURL(u); err == nil {
		return c
	}
	return u
}

// act carries out a posted action through the Backend. Script posts get
// 204 or the error's text; a plain form post is sent back to the page.
func (s *Server) act(w http.ResponseWriter, r *http.Request, ss session) {
	acts, err := actions(r.PostForm.Get)
	if err == nil {
		ctx, cancel := context.WithTimeout(r.Context(), actionTimeout)
		for _, a := range acts {
			if err = s.cfg.Backend.Do(ctx, a); err != nil {
				break
			}
		}
		cancel()
	}
	fetch := r.Header.Get("X-Requested-With") == "fetch"
	if err != nil {
		code := http.StatusConflict
		if errors.Is(err, errBadRequest) {
			code = http.StatusBadRequest
		}
		s.log.Info("web action failed", slog.String("kind", r.PostForm.Get("kind")), slog.String("op", r.PostForm.Get("op")), slog.Any("err", err))
		http.Error(w, err.Error(), code)
		return
	}
	s.log.Info("web action", slog.String("kind", r.PostForm.Get("kind")), slog.String("op", r.PostForm.Get("op")), slog.String("url", r.PostForm.Get("url")))
	s.kick(ss.id)
	if fetch {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}
