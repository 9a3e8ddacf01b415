package webui

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/mail"
	"strings"
	"time"

	"github.com/boincd/boincd/guirpc"
)

// Attach by email address and password: BOINC Manager's Add Project
// wizard (clientgui/ProjectProcessingPage.cpp) through the same Backend
// actions its GUI RPCs cause. lookup_account (create_account for a new
// account) with the password hashed as the Manager hashes it, polled
// (lookup_account_poll) until the project has answered; then
// project_attach with the account key it gave, polled
// (project_attach_poll) until the project's first contact is over. It
// runs in the background, one per session; the Projects view shows where
// it stands, live.

const (
	// accountPoll is how often the job asks where it stands, as the
	// wizard's poll loop does (it sleeps about a second).
	accountPoll = 250 * time.Millisecond
	// accountJobLimit bounds a whole job: the daemon bounds the web RPC
	// to two minutes and project_attach_poll its answer to two more.
	accountJobLimit = 5 * time.Minute
	// maxEmail and maxPassword bound the form's fields.
	maxEmail    = 254
	maxPassword = 1024
	maxUserName = 256
)

// accountJob is a session's attach by email, in flight or done.
type accountJob struct {
	URL     string
	Stage   string // what it does now, or what came of it
	Done    bool
	Failed  bool
	started time.Time
}

// accountView is the Projects view's line about it.
type accountView struct {
	Stage, URL   string
	Done, Failed bool
}

// accountStatus is the session's job as shown; ok false without one.
func (s *Server) accountStatus(session string) (accountView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[session]
	if j == nil {
		return accountView{}, false
	}
	return accountView{Stage: j.Stage, URL: j.URL, Done: j.Done, Failed: j.Failed}, true
}

func (s *Server) setJob(session string, j *accountJob, stage string, done, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j.Stage, j.Done, j.Failed = stage, done, failed
}

// accountErrorText is the wizard's words for a lookup's or creation's
// failure (clientgui/ProjectProcessingPage.cpp, AccountInfoPage.cpp),
// with the project's own message when it sent one.
func accountErrorText(r guirpc.AccountResult) string {
	var t string
	switch r.ErrorNum {
	case guirpc.ErrNumBadPasswd:
		t = "Bad password: the project does not know this password for this email address."
	case guirpc.ErrNumDBNotFound:
		t = "No such account: the project has no account with this email address."
	case -208: // ERR_ACCT_CREATION_DISABLED
		t = "The project is not accepting new accounts."
	case -137: // ERR_DB_NOT_UNIQUE
		t = "An account with this email address already exists: log in with its password instead."
	case -205: // ERR_BAD_EMAIL_ADDR
		t = "The project refused the email address."
	case guirpc.ErrNumGetHostByName, guirpc.ErrNumConnect, guirpc.ErrNumTimeout, guirpc.ErrNumHTTPTransient:
		t = fmt.Sprintf("Could not reach the project (error %d): check the URL and the network.", r.ErrorNum)
	case guirpc.ErrNumHTTPPermanent, guirpc.ErrNumInvalidURL:
		t = fmt.Sprintf("The URL is not a BOINC project's (error %d).", r.ErrorNum)
	default:
		t = fmt.Sprintf("The project refused (error %d).", r.ErrorNum)
	}
	if r.ErrorMsg != "" {
		t += " The project says: " + r.ErrorMsg
	}
	return t
}

// startAccount checks the form and starts the session's job; the error
// names what is wrong with the form.
func (s *Server) startAccount(ss session, f func(string) string) error {
	url := canonicalURL(strings.TrimSpace(f("url")))
	email := strings.TrimSpace(f("email"))
	password := f("password")
	userName := strings.TrimSpace(f("user_name"))
	kind := guirpc.WebRPCLookupAccount
	if f("op") == "create" {
		kind = guirpc.WebRPCCreateAccount
	} else if f("op") != "lookup" {
		return fmt.Errorf("%w: account op %q", errBadRequest, f("op"))
	}
	switch {
	case url == "":
		return errors.New("project URL: missing")
	case email == "" || len(email) > maxEmail:
		return errors.New("email address: missing or too long")
	case password == "" || len(password) > maxPassword:
		return errors.New("password: missing or too long")
	case kind == guirpc.WebRPCCreateAccount && (userName == "" || len(userName) > maxUserName):
		return errors.New("user name: a new account needs one")
	}
	if _, err := mail.ParseAddress(email); err != nil || strings.ContainsAny(email, "<> ") {
		return fmt.Errorf("email address %q: not an email address", email)
	}
	a, err := guirpc.AccountWebRPC(kind, url, email, guirpc.PasswdHash(password, email), userName)
	if err != nil {
		return fmt.Errorf("project URL: %w", err)
	}
	j := &accountJob{URL: a.Endpoint[:len(a.Endpoint)-len(kind+".php")], started: time.Now()}
	if kind == guirpc.WebRPCCreateAccount {
		j.Stage = "Creating the account…"
	} else {
		j.Stage = "Looking up the account…"
	}
	s.mu.Lock()
	if old := s.jobs[ss.id]; old != nil && !old.Done {
		s.mu.Unlock()
		return errors.New("an attach is already under way: wait for its result")
	}
	s.jobs[ss.id] = j
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.runAccount(ss.id, j, a)
	}()
	return nil
}

// runAccount is the wizard's sequence, polled.
func (s *Server) runAccount(session string, j *accountJob, a guirpc.WebRPC) {
	ctx, cancel := context.WithTimeout(s.bg, accountJobLimit)
	defer cancel()
	log := s.log.With(slog.String("url", j.URL), slog.String("kind", a.Kind))
	fail := func(msg string) {
		log.Info("web attach by email failed", slog.String("why", msg))
		s.setJob(session, j, msg, true, true)
	}
	if err := s.cfg.Backend.Do(ctx, a); err != nil {
		fail("Could not ask the project: " + err.Error())
		return
	}
	var r guirpc.AccountResult
	for {
		var st guirpc.WebRPCStatus
		if err := s.cfg.Backend.Do(ctx, guirpc.WebRPCPoll{Kind: a.Kind, Out: &st}); err != nil {
			fail("Could not ask the client where the request stands: " + err.Error())
			return
		}
		r = guirpc.AccountResultOf(st)
		if !r.InProgress {
			break
		}
		if !sleepCtx(ctx, accountPoll) {
			fail("The project did not answer in time.")
			return
		}
	}
	if r.ErrorNum != 0 || r.Authenticator == "" {
		fail(accountErrorText(r))
		return
	}
	s.setJob(session, j, "Account found; attaching…", false, false)
	if err := s.cfg.Backend.Do(ctx, guirpc.Attach{URL: j.URL, Authenticator: r.Authenticator}); err != nil {
		fail("Attach failed: " + err.Error())
		return
	}
	for {
		var st guirpc.AttachStatus
		if err := s.cfg.Backend.Do(ctx, guirpc.AttachPoll{Out: &st}); err != nil {
			fail("Could not ask the client where the attach stands: " + err.Error())
			return
		}
		if st.ErrorNum != guirpc.ErrNumInProgress {
			if st.ErrorNum != 0 {
				msg := fmt.Sprintf("Attached, but the project's first contact failed (error %d)", st.ErrorNum)
				if len(st.Messages) > 0 {
					msg += ": " + strings.Join(st.Messages, " ")
				}
				fail(msg)
				return
			}
			break
		}
		if !sleepCtx(ctx, accountPoll) {
			break // attached; the first contact is still to come
		}
	}
	log.Info("web attach by email")
	s.setJob(session, j, "Attached to "+j.URL+".", true, false)
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// account handles the form: the job starts and the page shows it.
func (s *Server) account(w http.ResponseWriter, r *http.Request, ss session) {
	err := s.startAccount(ss, r.PostForm.Get)
	fetch := r.Header.Get("X-Requested-With") == "fetch"
	if err != nil {
		code := http.StatusUnprocessableEntity
		if errors.Is(err, errBadRequest) {
			code = http.StatusBadRequest
		}
		s.log.Info("web attach by email refused", slog.Any("err", err))
		http.Error(w, err.Error(), code)
		return
	}
	if fetch {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	http.Redirect(w, r, "/#projects", http.StatusSeeOther)
}
