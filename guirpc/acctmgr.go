package guirpc

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"log/slog"
	"strings"
)

// Account manager ops (client/gui_rpc_server_ops.cpp handle_acct_mgr_*):
// acct_mgr_rpc starts a join, a sync (use_config_file) or, with an empty
// URL, a leave; acct_mgr_rpc_poll follows the RPC it started;
// acct_mgr_info says which AM the client is in. The RPC itself is the
// Backend's.

// AcctMgrRPC asks the backend to contact an account manager: join URL
// with Name and PasswordHash, sync with the current one (UseCurrent), or
// leave it (URL empty, UseCurrent false).
type AcctMgrRPC struct {
	URL, Name, PasswordHash string
	UseCurrent              bool
}

// AcctMgrPoll reads into Out where the last account manager RPC stands.
type AcctMgrPoll struct{ Out *AcctMgrStatus }

// AcctMgrStatus is acct_mgr_rpc_poll's answer: ErrorNum is
// ErrNumInProgress while the RPC runs, then 0 or why it failed; Message
// is the AM's error text, when it sent one.
type AcctMgrStatus struct {
	ErrorNum int
	Message  string
}

// AcctMgrInfo reads into Out which account manager the client is in.
type AcctMgrInfo struct{ Out *AcctMgrInfoOut }

// AcctMgrInfoOut is acct_mgr_info's answer; URL is "" outside an AM.
type AcctMgrInfoOut struct {
	URL, Name       string
	HaveCredentials bool
}

// ErrDifferentAM is acct_mgr_rpc's refusal to join a second AM.
var ErrDifferentAM error = wireError("attached to a different AM - detach first")

func (AcctMgrRPC) action()  {}
func (AcctMgrPoll) action() {}
func (AcctMgrInfo) action() {}

// AcctMgrPasswordHash is how the C++ client keeps an AM password:
// MD5(password + lowercase(name)) in hex, or the text after "hash:" when
// the caller hashed it already.
func AcctMgrPasswordHash(name, password string) string {
	if h, ok := strings.CutPrefix(password, "hash:"); ok {
		return h
	}
	sum := md5.Sum([]byte(password + strings.ToLower(name)))
	return hex.EncodeToString(sum[:])
}

// ResultsXML is the <results> block of an account manager request whose
// AM asked for the host's tasks (send_tasks_active: those with a process,
// send_tasks_all: every one), each in its GUI form (RESULT::write_gui).
func ResultsXML(s *State, activeOnly bool) string {
	var w xw
	w.line("<results>")
	writeResults(&w, s, activeOnly)
	w.line("</results>")
	return w.String()
}

func opAcctMgrInfo(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	var out AcctMgrInfoOut
	if err := s.cfg.Backend.Do(ctx, AcctMgrInfo{Out: &out}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return nil
	}
	w.line("<acct_mgr_info>")
	w.str("   ", "acct_mgr_url", out.URL)
	w.str("   ", "acct_mgr_name", out.Name)
	if out.HaveCredentials {
		w.line("   <have_credentials/>")
	}
	w.line("</acct_mgr_info>")
	return nil
}

// opAcctMgrRPC is handle_acct_mgr_rpc: url, name and password must all be
// there (any may be empty: an empty url leaves the AM), or
// use_config_file asks for a sync with the AM the client is in.
func opAcctMgrRPC(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	a := AcctMgrRPC{UseCurrent: parseBool(req.fields["use_config_file"], req.has("use_config_file"))}
	if !a.UseCurrent {
		if !req.has("url") || !req.has("name") || !req.has("password") {
			w.line("<error>bad arg</error>")
			return nil
		}
		a.URL, a.Name = req.fields["url"], req.fields["name"]
		if a.URL != "" {
			a.PasswordHash = AcctMgrPasswordHash(a.Name, req.fields["password"])
		}
	}
	do(ctx, s, req, w, a)
	return nil
}

func opAcctMgrRPCPoll(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	var st AcctMgrStatus
	if err := s.cfg.Backend.Do(ctx, AcctMgrPoll{Out: &st}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return nil
	}
	w.line("<acct_mgr_rpc_reply>")
	if st.Message != "" {
		w.str("    ", "message", st.Message)
	}
	w.int("    ", "error_num", int64(st.ErrorNum))
	w.line("</acct_mgr_rpc_reply>")
	return nil
}
