package testproject

import (
	"net/http"
	"net/mail"
	"strconv"
	"strings"

	"github.com/boincd/boincd/platform"
)

// The project's web RPCs for the Add Project wizard, as a BOINC project's
// html/user/get_project_config.php, lookup_account.php and
// create_account.php answer them (checked against BOINC server 1.6.2, down
// to the uneven indentation): an XML header naming ISO-8859-1, then
// <project_config>, <account_out> or xml_error's <error>.

// Account is one user account of the project.
type Account struct {
	Email    string
	Password string // the password; the project keeps md5(Password + lower-case Email)
	UserName string
	// Authenticator is the account key lookup_account.php returns.
	// Default: Config.Authenticator when set (the one key the scheduler
	// accepts), else a key made from the email address.
	Authenticator string
}

// AccountRPC is one request to lookup_account.php or create_account.php,
// as the server received it.
type AccountRPC struct {
	Path  string // "lookup_account.php" or "create_account.php"
	Query string // the raw query string
	// ErrorNum is the error the server answered, 0 for an account key.
	ErrorNum int
}

// BOINC error numbers the web RPCs answer (lib/error_numbers.h).
const (
	errDBNotFound           = -136 // ERR_DB_NOT_FOUND
	errDBNotUnique          = -137 // ERR_DB_NOT_UNIQUE
	errBadUserName          = -188 // ERR_BAD_USER_NAME
	errBadEmailAddr         = -205 // ERR_BAD_EMAIL_ADDR
	errBadPasswd            = -206 // ERR_BAD_PASSWD
	errAcctCreationDisabled = -208 // ERR_ACCT_CREATION_DISABLED
)

// xmlErrorText is xml_error's text for a number, as BOINC server 1.6.2
// answers.
func xmlErrorText(num int) string {
	switch num {
	case errDBNotFound:
		return "Not found"
	case errDBNotUnique:
		return "Name or email address is not unique"
	case errBadEmailAddr:
		return "Email address has invalid syntax"
	case errBadPasswd:
		return "Invalid password"
	case errAcctCreationDisabled:
		return "Account creation is disabled"
	}
	return "Unknown error"
}

// account is a stored account.
type account struct {
	email, passwdHash, userName, teamName, auth string
	consent                                     bool
}

// accountStore is the project's account table; guarded by Server.mu.
type accountStore struct {
	byEmail map[string]*account // lower-case email → account
	rpcs    []AccountRPC
}

// PasswdHash is the hash a BOINC client sends for a password:
// md5(password + lower-case email).
func PasswdHash(password, email string) string {
	return md5Hex([]byte(password + strings.ToLower(email)))
}

// accountsLocked returns the account table, filled from Config.Accounts
// on first use.
func (s *Server) accountsLocked() *accountStore {
	if s.accts.byEmail == nil {
		s.accts.byEmail = map[string]*account{}
		for _, a := range s.cfg.Accounts {
			email := strings.ToLower(strings.TrimSpace(a.Email))
			s.accts.byEmail[email] = &account{
				email: email, passwdHash: PasswdHash(a.Password, email), userName: a.UserName,
				auth: a.Authenticator,
			}
			if a.Authenticator == "" {
				s.accts.byEmail[email].auth = s.newAccountKey(email)
			}
		}
	}
	return &s.accts
}

// newAccountKey is a new account's key: Config.Authenticator when set,
// else one made from the email (stable across server restarts).
func (s *Server) newAccountKey(email string) string {
	if s.cfg.Authenticator != "" {
		return s.cfg.Authenticator
	}
	return md5Hex([]byte("account key\x00" + s.cfg.Name + "\x00" + email))
}

// AccountRPCs lists the lookup_account.php and create_account.php
// requests received so far, oldest first.
func (s *Server) AccountRPCs() []AccountRPC {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]AccountRPC(nil), s.accts.rpcs...)
}

// AccountKey returns the account key of the account with this email, if
// there is one.
func (s *Server) AccountKey(email string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := s.accountsLocked().byEmail[strings.ToLower(strings.TrimSpace(email))]
	if a == nil {
		return "", false
	}
	return a.auth, true
}

func writeXML(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/xml")
	body = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n" + body
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	_, _ = w.Write([]byte(body))
}

// xmlError is xml_error(): <error> with the number and its text.
func xmlError(num int, msg string) string {
	if msg == "" {
		msg = xmlErrorText(num)
	}
	return "<error>\n    <error_num>" + strconv.Itoa(num) + "</error_num>\n    <error_msg>" + xmlEscape(msg) + "</error_msg>\n</error>\n"
}

// lookupOut and createOut are the two scripts' replies with a key.
func lookupOut(auth string) string {
	return "<account_out>\n<authenticator>" + xmlEscape(auth) + "</authenticator>\n</account_out>\n"
}

func createOut(auth string) string {
	return " <account_out>\n   <authenticator>" + xmlEscape(auth) + "</authenticator>\n</account_out>\n"
}

// handleProjectConfig is get_project_config.php.
func (s *Server) handleProjectConfig(w http.ResponseWriter, r *http.Request) {
	base := s.baseURL(r)
	var b replyBuilder
	b.line("<project_config>")
	b.linef("    <name>%s</name>", xmlEscape(s.cfg.Name))
	b.linef("    <master_url>%s</master_url>", xmlEscape(base))
	b.linef("    <web_rpc_url_base>%s</web_rpc_url_base>", xmlEscape(base))
	b.line("    <web_stopped>0</web_stopped>")
	if s.cfg.AccountCreationDisabled {
		b.line("    <account_creation_disabled/>")
	}
	b.line("    <min_passwd_length>6</min_passwd_length>")
	b.line("    <sched_stopped>0</sched_stopped>")
	if s.cfg.TermsOfUse != "" {
		b.linef("    <terms_of_use>\n%s\n</terms_of_use>", xmlEscape(s.cfg.TermsOfUse))
	}
	b.line("    <platforms>")
	seen := map[string]bool{}
	for _, a := range s.cfg.Apps {
		p := a.Platform
		if p == "" {
			p = platform.This()
		}
		if seen[p] {
			continue
		}
		seen[p] = true
		b.line("        <platform>")
		b.linef("            <platform_name>%s</platform_name>", xmlEscape(p))
		b.linef("            <user_friendly_name>%s</user_friendly_name>", xmlEscape(p))
		b.line("        </platform>")
	}
	b.line("    </platforms>")
	b.line("</project_config>")
	writeXML(w, b.String())
}

// handleLookupAccount is lookup_account.php: the account key for an
// email address and password hash (or md5(key + email), which BOINC also
// accepts); ERR_DB_NOT_FOUND for an unknown address, ERR_BAD_PASSWD for a
// wrong password.
func (s *Server) handleLookupAccount(w http.ResponseWriter, r *http.Request) {
	email := strings.ToLower(strings.TrimSpace(r.FormValue("email_addr")))
	hash := r.FormValue("passwd_hash")
	s.mu.Lock()
	a := s.accountsLocked().byEmail[email]
	var reply string
	num := 0
	var msg string
	switch {
	case email == "":
		num, msg = -1, "missing or bad parameter: email_addr"
	case a == nil:
		num = errDBNotFound
	case hash == "":
		reply = "<account_out>\n    <success/>\n</account_out>\n"
	case hash == a.passwdHash || hash == md5Hex([]byte(a.auth+a.email)):
		reply = lookupOut(a.auth)
	default:
		num = errBadPasswd
	}
	if num != 0 {
		reply = xmlError(num, msg)
	}
	s.accts.rpcs = append(s.accts.rpcs, AccountRPC{Path: "lookup_account.php", Query: r.URL.RawQuery, ErrorNum: num})
	s.mu.Unlock()
	writeXML(w, reply)
}

// handleCreateAccount is create_account.php: a new account, or the key of
// an existing one with the same password hash.
func (s *Server) handleCreateAccount(w http.ResponseWriter, r *http.Request) {
	email := strings.ToLower(strings.TrimSpace(r.FormValue("email_addr")))
	hash := r.FormValue("passwd_hash")
	name := strings.TrimSpace(r.FormValue("user_name"))
	s.mu.Lock()
	st := s.accountsLocked()
	var reply, msg string
	num := 0
	_, mailErr := mail.ParseAddress(email)
	switch {
	case s.cfg.AccountCreationDisabled:
		num = errAcctCreationDisabled
	case name == "":
		num, msg = errBadUserName, "user name must be nonempty"
	case mailErr != nil || !strings.Contains(email, "@"):
		num = errBadEmailAddr
	case len(hash) != 32:
		num, msg = -1, "password hash length not 32"
	}
	if num == 0 {
		if a := st.byEmail[email]; a != nil {
			if a.passwdHash != hash {
				num = errDBNotUnique
			} else {
				reply = createOut(a.auth)
			}
		} else {
			a := &account{
				email: email, passwdHash: hash, userName: name, teamName: r.FormValue("team_name"),
				consent: r.FormValue("consent_flag") == "1", auth: s.newAccountKey(email),
			}
			st.byEmail[email] = a
			reply = createOut(a.auth)
		}
	}
	if num != 0 {
		reply = xmlError(num, msg)
	}
	st.rpcs = append(st.rpcs, AccountRPC{Path: "create_account.php", Query: r.URL.RawQuery, ErrorNum: num})
	s.mu.Unlock()
	writeXML(w, reply)
}
