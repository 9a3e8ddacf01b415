package testproject

import (
	"crypto/md5"
	"crypto/rsa"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// AccountManager is a test account manager (as BAM!, Science United or
// a BoincHub): users log in with a name and password hash (or an account
// key the AM gave out), and it answers each host's <acct_mgr_request>
// with the projects the user wants, every project URL signed with the
// AM's own key. Tests change what a user wants and watch hosts follow.
type AccountManager struct {
	name string
	log  *slog.Logger
	sign *signer

	mu       sync.Mutex
	users    map[string]*AMUser // by lower-case name
	requests []AMRequest
	url      string
	srv      *http.Server
	done     chan struct{}
	closed   bool
}

// AMUser is one account of the AM and what it wants its hosts to run.
type AMUser struct {
	Name         string
	PasswordHash string // MD5(password + lowercase(name))
	// Authenticator is the account key the AM hands out; a request with
	// it logs in too.
	Authenticator string
	Projects      []AMProject
	// GlobalPrefs is the body of <global_preferences> sent to hosts
	// ("" sends none); HostVenue picks a venue.
	GlobalPrefs string
	HostVenue   string
	Messages    []string
	RSSFeeds    []string // feed URLs, polled daily
	// RepeatSec is the sync period the AM asks for (0: not sent).
	RepeatSec float64
	// ErrorText, when set, fails every login with it (error_num -1).
	ErrorText string
	// SendTasksAll asks hosts for all their tasks (send_tasks_all).
	SendTasksAll bool
	// Dynamic asks hosts for each project's work and usage (dynamic).
	Dynamic bool
	// RawReply, when set, is sent as the whole reply (a sloppy or
	// hostile AM).
	RawReply string
}

// AMProject is one project a user wants; zero fields are not sent.
type AMProject struct {
	URL             string
	Authenticator   string
	ResourceShare   float64 // > 0: sent as the host-specific share
	NoNewTasks      *bool
	Suspend         *bool
	Detach          bool
	DetachWhenDone  bool
	Update          bool
	AbortNotStarted bool
	NoRsc           []string
	// ForgeSignature signs another URL instead: the host must refuse it.
	ForgeSignature bool
}

// AMRequest is what a host sent, for tests to look at.
type AMRequest struct {
	User     string // the name logged in with ("" for an account key)
	HostCPID string
	Projects []AMRequestProject
	Opaque   string
	Body     []byte
	At       time.Time
}

// AMRequestProject is a <project> of a request.
type AMRequestProject struct {
	URL                 string  `xml:"url"`
	ResourceShare       float64 `xml:"resource_share"`
	AttachedViaAcctMgr  int     `xml:"attached_via_acct_mgr"`
	DontRequestMoreWork int     `xml:"dont_request_more_work"`
	AccountKey          string  `xml:"account_key"`
}

// NewAccountManager makes an AM named name signing with key (nil: a
// fresh 1024-bit key).
func NewAccountManager(name string, key *rsa.PrivateKey, log *slog.Logger) (*AccountManager, error) {
	s, err := newSigner(key)
	if err != nil {
		return nil, fmt.Errorf("test account manager: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &AccountManager{name: name, log: log, sign: s, users: map[string]*AMUser{}}, nil
}

// Start listens on a free port of 127.0.0.1; the AM's URL is
// http://127.0.0.1:PORT/am/ and its RPC rpc.php under it.
func (a *AccountManager) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("test account manager: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /am/rpc.php", a.handleRPC)
	// The Manager's "Use account manager" wizard reads this first.
	mux.HandleFunc("GET /am/get_project_config.php", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		fmt.Fprintf(w, "<project_config>\n    <name>%s</name>\n    <account_manager/>\n    <uses_username/>\n    <min_passwd_length>1</min_passwd_length>\n    <client_account_creation_disabled/>\n</project_config>\n", xmlEscape(a.name))
	})
	mux.HandleFunc("GET /am/{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body>account manager</body></html>\n", xmlEscape(a.name))
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.srv != nil || a.closed {
		ln.Close()
		return errors.New("test account manager: already started or closed")
	}
	a.url = "http://" + ln.Addr().String() + "/am/"
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	a.done = make(chan struct{})
	srv, done := a.srv, a.done
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return nil
}

// URL is the AM's master URL (with the trailing slash).
func (a *AccountManager) URL() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.url
}

// Close stops the server.
func (a *AccountManager) Close() error {
	a.mu.Lock()
	srv, done := a.srv, a.done
	a.closed = true
	a.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-done
	return err
}

// SigningKey is the AM's public key in BOINC's text form.
func (a *AccountManager) SigningKey() string { return a.sign.keyText }

// SetUser adds or replaces a user; password is hashed as clients do.
func (a *AccountManager) SetUser(u AMUser, password string) {
	if password != "" {
		sum := md5.Sum([]byte(password + strings.ToLower(u.Name)))
		u.PasswordHash = hex.EncodeToString(sum[:])
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[strings.ToLower(u.Name)] = &u
}

// Update changes a user's wishes under the AM's lock.
func (a *AccountManager) Update(name string, f func(*AMUser)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if u := a.users[strings.ToLower(name)]; u != nil {
		f(u)
	}
}

// Requests returns the requests received so far.
func (a *AccountManager) Requests() []AMRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]AMRequest(nil), a.requests...)
}

// amRequestXML is what the AM reads of an <acct_mgr_request>.
type amRequestXML struct {
	XMLName       xml.Name           `xml:"acct_mgr_request"`
	Authenticator string             `xml:"authenticator"`
	Name          string             `xml:"name"`
	PasswordHash  string             `xml:"password_hash"`
	HostCPID      string             `xml:"host_cpid"`
	Projects      []AMRequestProject `xml:"project"`
	Opaque        struct {
		Inner string `xml:",innerxml"`
	} `xml:"opaque"`
}

func (a *AccountManager) handleRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req amRequestXML
	if err := xml.Unmarshal(body, &req); err != nil {
		a.log.Warn("test AM: bad request", slog.Any("err", err))
		writeAMError(w, -112, "can't parse request: "+err.Error())
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, AMRequest{
		User: strings.TrimSpace(req.Name), HostCPID: strings.TrimSpace(req.HostCPID), Projects: req.Projects,
		Opaque: strings.TrimSpace(req.Opaque.Inner), Body: body, At: time.Now(),
	})
	var u *AMUser
	if auth := strings.TrimSpace(req.Authenticator); auth != "" {
		for _, c := range a.users {
			if c.Authenticator == auth {
				u = c
			}
		}
	} else if c := a.users[strings.ToLower(strings.TrimSpace(req.Name))]; c != nil && c.PasswordHash == strings.TrimSpace(req.PasswordHash) {
		u = c
	}
	if u == nil {
		writeAMError(w, -206, "Invalid password")
		return
	}
	if u.ErrorText != "" {
		writeAMError(w, -1, u.ErrorText)
		return
	}
	if u.RawReply != "" {
		_, _ = io.WriteString(w, u.RawReply)
		return
	}
	var b strings.Builder
	b.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<acct_mgr_reply>\n")
	fmt.Fprintf(&b, "    <name>%s</name>\n", xmlEscape(a.name))
	fmt.Fprintf(&b, "    <signing_key>\n%s</signing_key>\n", a.sign.keyText)
	if u.RepeatSec > 0 {
		fmt.Fprintf(&b, "    <repeat_sec>%g</repeat_sec>\n", u.RepeatSec)
	}
	fmt.Fprintf(&b, "    <user_name>%s</user_name>\n", xmlEscape(u.Name))
	// The opaque counts the host's syncs, so a test sees it echoed.
	fmt.Fprintf(&b, "    <opaque>\n<host_seq>%d</host_seq>\n    </opaque>\n", len(a.requests))
	for _, m := range u.Messages {
		fmt.Fprintf(&b, "    <message>%s</message>\n", xmlEscape(m))
	}
	if u.GlobalPrefs != "" {
		fmt.Fprintf(&b, "<global_preferences>\n%s\n</global_preferences>\n", u.GlobalPrefs)
	}
	if u.SendTasksAll {
		b.WriteString("    <send_tasks_all>1</send_tasks_all>\n")
	}
	if u.Dynamic {
		b.WriteString("    <dynamic>1</dynamic>\n")
	}
	if u.HostVenue != "" {
		fmt.Fprintf(&b, "    <host_venue>%s</host_venue>\n", xmlEscape(u.HostVenue))
	}
	if len(u.RSSFeeds) > 0 {
		b.WriteString("    <rss_feeds>\n")
		for _, f := range u.RSSFeeds {
			fmt.Fprintf(&b, "        <rss_feed>\n            <url>%s</url>\n            <poll_interval>86400</poll_interval>\n        </rss_feed>\n", xmlEscape(f))
		}
		b.WriteString("    </rss_feeds>\n")
	}
	ps := append([]AMProject(nil), u.Projects...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].URL < ps[j].URL })
	for _, p := range ps {
		if err := a.writeAccount(&b, p); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	b.WriteString("</acct_mgr_reply>\n")
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, b.String())
}

func (a *AccountManager) writeAccount(b *strings.Builder, p AMProject) error {
	signed := p.URL
	if p.ForgeSignature {
		signed = p.URL + "forged"
	}
	sig, err := a.sign.signMD5Hex([]byte(signed))
	if err != nil {
		return err
	}
	b.WriteString("    <account>\n")
	fmt.Fprintf(b, "        <url>%s</url>\n", xmlEscape(p.URL))
	fmt.Fprintf(b, "        <url_signature>\n%s</url_signature>\n", sig)
	fmt.Fprintf(b, "        <authenticator>%s</authenticator>\n", xmlEscape(p.Authenticator))
	if p.ResourceShare > 0 {
		fmt.Fprintf(b, "        <resource_share>%g</resource_share>\n", p.ResourceShare)
	}
	flag := func(tag string, v bool) { fmt.Fprintf(b, "        <%s>%d</%s>\n", tag, b2i(v), tag) }
	if p.NoNewTasks != nil {
		flag("dont_request_more_work", *p.NoNewTasks)
	}
	if p.Suspend != nil {
		flag("suspend", *p.Suspend)
	}
	if p.Detach {
		flag("detach", true)
	}
	if p.DetachWhenDone {
		flag("detach_when_done", true)
	}
	if p.Update {
		flag("update", true)
	}
	if p.AbortNotStarted {
		flag("abort_not_started", true)
	}
	for _, r := range p.NoRsc {
		fmt.Fprintf(b, "        <no_rsc>%s</no_rsc>\n", xmlEscape(r))
	}
	b.WriteString("    </account>\n")
	return nil
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

func writeAMError(w http.ResponseWriter, num int, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	fmt.Fprintf(w, "<acct_mgr_reply>\n    <error_num>%d</error_num>\n    <error_msg>%s</error_msg>\n</acct_mgr_reply>\n", num, xmlEscape(msg))
}
