package guirpc

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/boincd/boincd/boinc"
)

// The Add Project wizard's ops: project web RPCs the client makes on the
// user's behalf (client/acct_setup.cpp), started by one op and collected
// by its _poll op, and project_attach_poll, which tells how the attach's
// first contact with the project went.
//
// The fetch itself is the Backend's (WebRPC): it goes through the
// client's HTTP stack, off the thread that answers here. What is built and
// read here is the C++ client's: the query strings of 7.20.5 (checked
// against it: lookup_account sends email_addr and passwd_hash, nothing
// else; create_account adds user_name, team_name when given, and
// consent_flag=1&source=NAME for consented_to_terms), and the poll
// replies' shapes. Unlike the C++ client, whose replies are raw copies of
// what the server sent (a \003 in a project's page ends its GUI RPC
// reply early), the polls answer checked, cleaned XML; and a new request
// replaces one in flight, where the C++ client answers ERR_RETRY.

// BOINC error numbers (lib/error_numbers.h) these ops answer.
const (
	ErrNumConnect            = -107 // ERR_CONNECT
	ErrNumXMLParse           = -112 // ERR_XML_PARSE
	ErrNumGetHostByName      = -113 // ERR_GETHOSTBYNAME
	ErrNumFileTooBig         = -131 // ERR_FILE_TOO_BIG
	ErrNumDBNotFound         = -136 // ERR_DB_NOT_FOUND
	ErrNumTimeout            = -182 // ERR_TIMEOUT
	ErrNumProjectDown        = -183 // ERR_PROJECT_DOWN
	ErrNumHTTPTransient      = -184 // ERR_HTTP_TRANSIENT
	ErrNumInvalidURL         = -189 // ERR_INVALID_URL
	ErrNumRetry              = -199 // ERR_RETRY
	ErrNumInProgress         = -204 // ERR_IN_PROGRESS
	ErrNumBadPasswd          = -206 // ERR_BAD_PASSWD
	ErrNumAttachFailDownload = -210 // ERR_ATTACH_FAIL_DOWNLOAD
	ErrNumAttachFailParse    = -211 // ERR_ATTACH_FAIL_PARSE
	ErrNumAttachFailBadKey   = -212 // ERR_ATTACH_FAIL_BAD_KEY
	ErrNumAttachFailServer   = -214 // ERR_ATTACH_FAIL_SERVER_ERROR
	ErrNumHTTPPermanent      = -224 // ERR_HTTP_PERMANENT
)

const (
	// maxAuthenticator bounds an account key taken from a project's
	// reply (real ones are 32 hex digits, opaque ones a little longer).
	maxAuthenticator = 256
	// maxErrorMsg bounds the project's error text passed on.
	maxErrorMsg = 1024
	// maxConfigDepth bounds the nesting of a project_config passed on.
	maxConfigDepth = 32
	// maxClientName bounds the exchange_versions name kept per
	// connection.
	maxClientName = 256
)

func clientName(s string) string {
	if len(s) > maxClientName {
		s = s[:maxClientName]
	}
	return strings.ToValidUTF8(s, "")
}

// escapeURL is lib/url.cpp escape_url as 7.20.5 applies it to each query
// value: every byte but [A-Za-z0-9] becomes %XX (upper-case hex).
func escapeURL(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// accountIn is ACCOUNT_IN::parse: the fields of lookup_account and
// create_account. ldap_auth is read and, as in 7.20.5, changes nothing in
// the request.
type accountIn struct {
	url, email, passwdHash, userName, teamName string
	consented                                  bool
}

func parseAccountIn(req *request) accountIn {
	return accountIn{
		url:        req.fields["url"],
		email:      req.fields["email_addr"],
		passwdHash: req.fields["passwd_hash"],
		userName:   req.fields["user_name"],
		teamName:   req.fields["team_name"],
		consented:  parseBool(req.fields["consented_to_terms"], req.has("consented_to_terms")),
	}
}

// lookupQuery and createQuery are LOOKUP_ACCOUNT_OP and CREATE_ACCOUNT_OP
// do_rpc's query strings; client is the connection's exchange_versions
// name.
func lookupQuery(ai accountIn) string {
	return "email_addr=" + escapeURL(ai.email) + "&passwd_hash=" + escapeURL(ai.passwdHash)
}

func createQuery(ai accountIn, client string) string {
	q := lookupQuery(ai) + "&user_name=" + escapeURL(ai.userName)
	if ai.teamName != "" {
		q += "&team_name=" + escapeURL(ai.teamName)
	}
	if ai.consented {
		q += "&consent_flag=1&source=" + escapeURL(client)
	}
	return q
}

// startWebRPC hands a WebRPC to the backend: <success/>, or the error.
func startWebRPC(ctx context.Context, s *Server, req *request, w *xw, a WebRPC) {
	do(ctx, s, req, w, a)
}

// pollWebRPC asks the backend where the last WebRPC of kind stands; false
// when the backend failed (the error reply is written).
func pollWebRPC(ctx context.Context, s *Server, req *request, w *xw, kind string) (WebRPCStatus, bool) {
	var st WebRPCStatus
	if err := s.cfg.Backend.Do(ctx, WebRPCPoll{Kind: kind, Out: &st}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return st, false
	}
	return st, true
}

// projectURL canonicalises the url field; false (with the error written)
// when it cannot be.
func projectURL(req *request, w *xw, missing string) (string, bool) {
	u := req.fields["url"]
	if u == "" {
		w.str("", "error", missing)
		return "", false
	}
	c, err := boinc.CanonicalMasterURL(u)
	if err != nil || strings.ContainsAny(c, "?#") {
		w.str("", "error", "invalid URL: "+u)
		return "", false
	}
	return c, true
}

func opGetProjectConfig(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	u, ok := projectURL(req, w, "no url")
	if !ok {
		return nil
	}
	startWebRPC(ctx, s, req, w, WebRPC{Kind: WebRPCProjectConfig, Endpoint: u + "get_project_config.php"})
	return nil
}

func opGetProjectConfigPoll(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	st, ok := pollWebRPC(ctx, s, req, w, WebRPCProjectConfig)
	if !ok {
		return nil
	}
	writeProjectConfig(w, st)
	return nil
}

// writeProjectConfig is handle_get_project_config_poll: the project's
// <project_config> as it sent it (checked and cleaned), or an error_num.
func writeProjectConfig(w *xw, st WebRPCStatus) {
	num := 0
	switch {
	case !st.Started:
		w.line("<project_config/>")
		return
	case !st.Done:
		num = ErrNumInProgress
	case st.ErrorNum != 0:
		num = st.ErrorNum
	default:
		body, ok := projectConfigXML(st.Reply)
		if ok {
			w.line(body)
			return
		}
		num = ErrNumXMLParse
	}
	w.line("<project_config>")
	w.int("    ", "error_num", int64(num))
	w.line("</project_config>")
}

func accountOp(kind string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		ai := parseAccountIn(req)
		if ai.url == "" || ai.email == "" || ai.passwdHash == "" {
			w.line("<error>missing URL, email address, or password</error>")
			return nil
		}
		u, ok := projectURL(req, w, "")
		if !ok {
			return nil
		}
		a := WebRPC{Kind: kind, Endpoint: u + kind + ".php", Query: lookupQuery(ai)}
		if kind == WebRPCCreateAccount {
			if ai.consented && req.client == "" {
				w.line("<error>&lt;name&gt; must be set in &lt;exchange_versions&gt; before using &lt;consented_to_terms/&gt;</error>")
				return nil
			}
			a.Query = createQuery(ai, req.client)
		}
		startWebRPC(ctx, s, req, w, a)
		return nil
	}
}

var (
	opLookupAccount = accountOp(WebRPCLookupAccount)
	opCreateAccount = accountOp(WebRPCCreateAccount)
)

func accountPollOp(kind string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		st, ok := pollWebRPC(ctx, s, req, w, kind)
		if !ok {
			return nil
		}
		writeAccountOut(w, st)
		return nil
	}
}

var (
	opLookupAccountPoll = accountPollOp(WebRPCLookupAccount)
	opCreateAccountPoll = accountPollOp(WebRPCCreateAccount)
)

// writeAccountOut is handle_lookup_account_poll / handle_create_account_poll
// in the shape ACCOUNT_OUT::parse reads: the account key, or error_num
// (with the project's error_msg when it sent one).
func writeAccountOut(w *xw, st WebRPCStatus) {
	r := AccountResultOf(st)
	if !r.Started {
		w.line("<account_out/>")
		return
	}
	w.line("<account_out>")
	if r.ErrorNum != 0 {
		w.int("    ", "error_num", int64(r.ErrorNum))
		if r.ErrorMsg != "" {
			w.str("    ", "error_msg", r.ErrorMsg)
		}
	} else {
		w.str("    ", "authenticator", r.Authenticator)
	}
	w.line("</account_out>")
}

// accountOut is what a lookup_account.php or create_account.php reply
// says: an account key, or the project's error.
type accountOut struct {
	auth   string
	errNum int
	errMsg string
}

// parseAccountReply reads a project's <account_out> or <error> reply the
// way BOINC's own parser does, tolerating what real servers wrap around
// it (PHP notices, an <?xml?> header naming ISO-8859-1): error_num,
// error_msg and authenticator are taken wherever they are. A reply with
// neither a valid account key nor an error is ERR_XML_PARSE.
func parseAccountReply(reply []byte) accountOut {
	text := cleanText(reply)
	if v, ok := elementText(text, "error_num"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 {
			n = ErrNumXMLParse
		}
		msg, _ := elementText(text, "error_msg")
		if len(msg) > maxErrorMsg {
			msg = strings.ToValidUTF8(msg[:maxErrorMsg], "")
		}
		return accountOut{errNum: n, errMsg: msg}
	}
	if auth, ok := elementText(text, "authenticator"); ok && validAuthenticator(auth) {
		return accountOut{auth: auth}
	}
	return accountOut{errNum: ErrNumXMLParse, errMsg: "the project's reply holds no account key"}
}

// validAuthenticator: printable ASCII without blanks or XML specials.
func validAuthenticator(s string) bool {
	if s == "" || len(s) > maxAuthenticator {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || strings.IndexByte(`<>&"'`, c) >= 0 {
			return false
		}
	}
	return true
}

// elementText is the unescaped, trimmed text of the first <name>…</name>
// in s (a CDATA section is taken as it is).
func elementText(s, name string) (string, bool) {
	open, end := "<"+name+">", "</"+name+">"
	i := strings.Index(s, open)
	if i < 0 {
		return "", false
	}
	rest := s[i+len(open):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	v := strings.TrimSpace(rest[:j])
	if c, ok := strings.CutPrefix(v, "<![CDATA["); ok {
		if k := strings.Index(c, "]]>"); k >= 0 {
			return strings.TrimSpace(c[:k]), true
		}
	}
	return strings.TrimSpace(html.UnescapeString(v)), true
}

// cleanText makes a project's reply safe to read and to pass on: text
// that is not UTF-8 is taken as ISO-8859-1 (what BOINC's PHP declares),
// and control characters other than tab and newlines are dropped (a \003
// would end the GUI RPC reply).
func cleanText(b []byte) string {
	var s string
	if utf8.Valid(b) {
		s = string(b)
	} else {
		r := make([]rune, len(b))
		for i, c := range b {
			r[i] = rune(c)
		}
		s = string(r)
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// projectConfigXML returns the <project_config> element of a
// get_project_config.php reply, cleaned (cleanText) and checked to parse;
// false when the reply holds none (an HTML page, a truncated reply) or it
// does not parse. What surrounds the element (PHP notices, the <?xml?>
// header) is dropped, as the C++ client drops what precedes it.
func projectConfigXML(reply []byte) (string, bool) {
	text := cleanText(reply)
	start := -1
	for off := 0; ; {
		i := strings.Index(text[off:], "<project_config")
		if i < 0 {
			break
		}
		i += off
		if k := i + len("<project_config"); k < len(text) && strings.IndexByte("> \t\r\n/", text[k]) >= 0 {
			start = i
			break
		}
		off = i + 1
	}
	if start < 0 {
		return "", false
	}
	text = text[start:]
	var body string
	if strings.HasPrefix(text, "<project_config/>") {
		body = "<project_config/>"
	} else {
		j := strings.LastIndex(text, "</project_config>")
		if j < 0 {
			return "", false
		}
		body = text[:j+len("</project_config>")]
	}
	if err := checkXML(body); err != nil {
		return "", false
	}
	return body, true
}

// errTooDeep is nesting past maxConfigDepth.
var errTooDeep = errors.New("elements nested too deep")

// checkXML reads s as BOINC's lenient parser would have to: unknown
// entities and HTML's unclosed elements are accepted; a syntax error or
// nesting past maxConfigDepth is not.
func checkXML(s string) error {
	d := xml.NewDecoder(strings.NewReader(s))
	d.Strict = false
	d.AutoClose = xml.HTMLAutoClose
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	depth := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if depth++; depth > maxConfigDepth {
				return errTooDeep
			}
		case xml.EndElement:
			depth--
		case xml.Directive:
			if bytes.HasPrefix(bytes.TrimSpace(t), []byte("DOCTYPE")) {
				return errors.New("document type declaration")
			}
		}
	}
}

func opAttachPoll(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	var st AttachStatus
	if err := s.cfg.Backend.Do(ctx, AttachPoll{Out: &st}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return nil
	}
	writeAttachReply(w, st)
	return nil
}

// writeAttachReply is handle_project_attach_poll.
func writeAttachReply(w *xw, st AttachStatus) {
	w.line("<project_attach_reply>")
	for _, m := range st.Messages {
		w.str("    ", "message", m)
	}
	w.int("    ", "error_num", int64(st.ErrorNum))
	w.line("</project_attach_reply>")
}
