package guirpc

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// acctBackend answers the wizard's actions from fixed statuses and records
// the WebRPCs started.
type acctBackend struct {
	mu      sync.Mutex
	started []WebRPC
	web     map[string]WebRPCStatus
	attach  AttachStatus
	err     error
}

func (b *acctBackend) Snapshot(context.Context, Parts) (*State, error) { return &State{}, nil }

func (b *acctBackend) Do(_ context.Context, a Action) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	switch a := a.(type) {
	case WebRPC:
		b.started = append(b.started, a)
	case WebRPCPoll:
		*a.Out = b.web[a.Kind]
	case AttachPoll:
		*a.Out = b.attach
	}
	return nil
}

func (b *acctBackend) set(kind string, st WebRPCStatus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.web[kind] = st
}

func (b *acctBackend) last(t *testing.T) WebRPC {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.started) == 0 {
		t.Fatal("no WebRPC started")
	}
	return b.started[len(b.started)-1]
}

func (b *acctBackend) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.started)
}

func acctServer(t *testing.T) (*acctBackend, *client) {
	t.Helper()
	b := &acctBackend{web: map[string]WebRPCStatus{}}
	srv := startServer(t, Config{Backend: b, Password: "pw"})
	cl := dial(t, srv)
	if r := cl.auth("pw"); !strings.Contains(r, "<authorized/>") {
		t.Fatalf("auth: %q", r)
	}
	return b, cl
}

// body is a reply without its envelope.
func body(reply string) string {
	reply = strings.TrimPrefix(reply, "<boinc_gui_rpc_reply>\n")
	return strings.TrimSuffix(reply, "</boinc_gui_rpc_reply>\n")
}

func TestEscapeURLAsTheCClient(t *testing.T) {
	// What BOINC 7.20.5 put in its lookup_account.php and
	// create_account.php queries for these values.
	for in, want := range map[string]string{
		"foo.bar+x@example.com": "foo%2Ebar%2Bx%40example%2Ecom",
		"a-b_c~d@x.org":         "a%2Db%5Fc%7Ed%40x%2Eorg",
		"My Näme & co":          "My%20N%C3%A4me%20%26%20co",
		"My Team":               "My%20Team",
		"0123abcXYZ":            "0123abcXYZ",
		"":                      "",
	} {
		if got := escapeURL(in); got != want {
			t.Errorf("escapeURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGetProjectConfigOps(t *testing.T) {
	b, cl := acctServer(t)

	// Before any request: the C++ client's empty answer.
	if got := body(cl.call("<get_project_config_poll/>")); got != "<project_config/>\n" {
		t.Errorf("poll before a request: %q", got)
	}
	// The Manager's request; the URL is canonicalised.
	r := body(cl.call("<get_project_config>\n   <url>http://Example.ORG//proj</url>\n</get_project_config>\n"))
	if r != "<success/>\n" {
		t.Fatalf("get_project_config: %q", r)
	}
	if a := b.last(t); a != (WebRPC{Kind: WebRPCProjectConfig, Endpoint: "http://example.org/proj/get_project_config.php"}) {
		t.Errorf("started %+v", a)
	}
	for _, tc := range []struct{ req, want string }{
		{"<get_project_config/>", "<error>no url</error>\n"},
		{"<get_project_config><url>ftp://x/</url></get_project_config>", "<error>invalid URL: ftp://x/</error>\n"},
	} {
		if got := body(cl.call(tc.req)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.req, got, tc.want)
		}
	}
	if n := b.count(); n != 1 {
		t.Errorf("%d requests started, want 1", n)
	}

	cfg := "<project_config>\n    <name>Café &amp; co</name>\n    <min_passwd_length>6</min_passwd_length>\n" +
		"    <terms_of_use>\nBe nice.<br>\nReally.\n</terms_of_use>\n</project_config>"
	for _, tc := range []struct {
		name string
		st   WebRPCStatus
		want string
	}{
		{"in progress", WebRPCStatus{Started: true}, "<project_config>\n    <error_num>-204</error_num>\n</project_config>\n"},
		{"unknown host", WebRPCStatus{Started: true, Done: true, ErrorNum: ErrNumGetHostByName},
			"<project_config>\n    <error_num>-113</error_num>\n</project_config>\n"},
		{"as sent", WebRPCStatus{Started: true, Done: true, Reply: []byte(cfg + "\n")}, cfg + "\n"},
		// What real projects send around it: PHP notices, an XML header
		// naming ISO-8859-1 (and bytes in it), a trailer; a \003 must
		// never reach the GUI.
		{"sloppy", WebRPCStatus{Started: true, Done: true, Reply: []byte("<br />\n<b>Notice</b>: x<br />\n" +
			"<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n<project_config>\n<name>Caf\xe9\x03</name>\n</project_config>\n<!-- end -->\n")},
			"<project_config>\n<name>Café</name>\n</project_config>\n"},
		{"html page", WebRPCStatus{Started: true, Done: true, Reply: []byte("<html><body>Not a project</body></html>")},
			"<project_config>\n    <error_num>-112</error_num>\n</project_config>\n"},
		{"truncated", WebRPCStatus{Started: true, Done: true, Reply: []byte("<project_config>\n<name>x</name>\n")},
			"<project_config>\n    <error_num>-112</error_num>\n</project_config>\n"},
		{"broken", WebRPCStatus{Started: true, Done: true, Reply: []byte("<project_config><name>a < b</name></project_config>")},
			"<project_config>\n    <error_num>-112</error_num>\n</project_config>\n"},
		{"project's own error", WebRPCStatus{Started: true, Done: true, Reply: []byte("<project_config>\n<error_num>-183</error_num>\n<web_stopped>1</web_stopped>\n</project_config>")},
			"<project_config>\n<error_num>-183</error_num>\n<web_stopped>1</web_stopped>\n</project_config>\n"},
	} {
		b.set(WebRPCProjectConfig, tc.st)
		if got := body(cl.call("<get_project_config_poll/>\n")); got != tc.want {
			t.Errorf("%s: poll = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestAccountOps(t *testing.T) {
	b, cl := acctServer(t)
	hash := md5hex("secret" + "vol@example.org")

	// lookup_account as lib/gui_rpc_client_ops.cpp sends it.
	r := body(cl.call("<lookup_account>\n   <url>http://example.org/proj</url>\n   <email_addr>vol@example.org</email_addr>\n" +
		"   <passwd_hash>" + hash + "</passwd_hash>\n   <ldap_auth>0</ldap_auth>\n</lookup_account>\n"))
	if r != "<success/>\n" {
		t.Fatalf("lookup_account: %q", r)
	}
	want := WebRPC{Kind: WebRPCLookupAccount, Endpoint: "http://example.org/proj/lookup_account.php",
		Query: "email_addr=vol%40example%2Eorg&passwd_hash=" + hash}
	if a := b.last(t); a != want {
		t.Errorf("started %+v\nwant    %+v", a, want)
	}

	// create_account, without and with a team; consent needs the
	// client's name from exchange_versions first.
	create := func(extra string) string {
		return body(cl.call("<create_account>\n   <url>http://example.org/proj/</url>\n   <email_addr>vol@example.org</email_addr>\n" +
			"   <passwd_hash>" + hash + "</passwd_hash>\n   <user_name>Vol &amp; Co</user_name>\n" + extra + "</create_account>\n"))
	}
	if r := create("   <team_name></team_name>\n"); r != "<success/>\n" {
		t.Fatalf("create_account: %q", r)
	}
	want = WebRPC{Kind: WebRPCCreateAccount, Endpoint: "http://example.org/proj/create_account.php",
		Query: "email_addr=vol%40example%2Eorg&passwd_hash=" + hash + "&user_name=Vol%20%26%20Co"}
	if a := b.last(t); a != want {
		t.Errorf("started %+v\nwant    %+v", a, want)
	}
	if r := create("   <team_name>Team X</team_name>\n   <consented_to_terms/>\n"); r != "<error>&lt;name&gt; must be set in &lt;exchange_versions&gt; before using &lt;consented_to_terms/&gt;</error>\n" {
		t.Errorf("consent without a client name: %q", r)
	}
	cl.call("<exchange_versions>\n   <major>7</major>\n   <minor>20</minor>\n   <release>5</release>\n   <name>BOINC Manager</name>\n</exchange_versions>\n")
	if r := create("   <team_name>Team X</team_name>\n   <consented_to_terms/>\n"); r != "<success/>\n" {
		t.Fatalf("create_account with consent: %q", r)
	}
	if a := b.last(t); !strings.HasSuffix(a.Query, "&user_name=Vol%20%26%20Co&team_name=Team%20X&consent_flag=1&source=BOINC%20Manager") {
		t.Errorf("query %q", a.Query)
	}

	for _, req := range []string{
		"<lookup_account><url>http://x/</url><email_addr>a@b</email_addr></lookup_account>",
		"<lookup_account><email_addr>a@b</email_addr><passwd_hash>h</passwd_hash></lookup_account>",
		"<create_account><url>http://x/</url><passwd_hash>h</passwd_hash></create_account>",
	} {
		if r := body(cl.call(req)); r != "<error>missing URL, email address, or password</error>\n" {
			t.Errorf("%s: %q", req, r)
		}
	}

	for _, kind := range []string{WebRPCLookupAccount, WebRPCCreateAccount} {
		poll := "<" + kind + "_poll/>\n"
		for _, tc := range []struct {
			name string
			st   WebRPCStatus
			want string
		}{
			{"not started", WebRPCStatus{}, "<account_out/>\n"},
			{"in progress", WebRPCStatus{Started: true}, "<account_out>\n    <error_num>-204</error_num>\n</account_out>\n"},
			{"no connection", WebRPCStatus{Started: true, Done: true, ErrorNum: ErrNumConnect},
				"<account_out>\n    <error_num>-107</error_num>\n</account_out>\n"},
			{"account key", WebRPCStatus{Started: true, Done: true,
				Reply: []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n <account_out>\n   <authenticator>0123abcd</authenticator>\n</account_out>\n")},
				"<account_out>\n    <authenticator>0123abcd</authenticator>\n</account_out>\n"},
			{"wrong password", WebRPCStatus{Started: true, Done: true,
				Reply: []byte("<?xml version=\"1.0\" encoding=\"ISO-8859-1\" ?>\n<error>\n    <error_num>-206</error_num>\n    <error_msg>Invalid password</error_msg>\n</error>\n")},
				"<account_out>\n    <error_num>-206</error_num>\n    <error_msg>Invalid password</error_msg>\n</account_out>\n"},
			{"unknown account", WebRPCStatus{Started: true, Done: true,
				Reply: []byte("<br />PHP Warning<br />\n<error>\n<error_num>-136</error_num>\n<error_msg>Invalid &lt;ID&gt;</error_msg>\n</error>\n")},
				"<account_out>\n    <error_num>-136</error_num>\n    <error_msg>Invalid &lt;ID&gt;</error_msg>\n</account_out>\n"},
			{"no key in reply", WebRPCStatus{Started: true, Done: true, Reply: []byte("<html>Maintenance</html>")},
				"<account_out>\n    <error_num>-112</error_num>\n    <error_msg>the project&apos;s reply holds no account key</error_msg>\n</account_out>\n"},
			{"bad key in reply", WebRPCStatus{Started: true, Done: true, Reply: []byte("<account_out><authenticator>a b</authenticator></account_out>")},
				"<account_out>\n    <error_num>-112</error_num>\n    <error_msg>the project&apos;s reply holds no account key</error_msg>\n</account_out>\n"},
		} {
			b.set(kind, tc.st)
			if got := body(cl.call(poll)); got != tc.want {
				t.Errorf("%s %s: poll = %q, want %q", kind, tc.name, got, tc.want)
			}
		}
	}
}

func TestAttachPoll(t *testing.T) {
	b, cl := acctServer(t)
	for _, tc := range []struct {
		st   AttachStatus
		want string
	}{
		{AttachStatus{}, "<project_attach_reply>\n    <error_num>0</error_num>\n</project_attach_reply>\n"},
		{AttachStatus{ErrorNum: ErrNumInProgress}, "<project_attach_reply>\n    <error_num>-204</error_num>\n</project_attach_reply>\n"},
		{AttachStatus{ErrorNum: ErrNumAttachFailBadKey, Messages: []string{"Invalid or missing account key.  To fix, remove and add this project.", "a < b"}},
			"<project_attach_reply>\n    <message>Invalid or missing account key.  To fix, remove and add this project.</message>\n" +
				"    <message>a &lt; b</message>\n    <error_num>-212</error_num>\n</project_attach_reply>\n"},
	} {
		b.mu.Lock()
		b.attach = tc.st
		b.mu.Unlock()
		if got := body(cl.call("<project_attach_poll/>\n")); got != tc.want {
			t.Errorf("poll = %q, want %q", got, tc.want)
		}
	}
	b.mu.Lock()
	b.err = errors.New("client is busy")
	b.mu.Unlock()
	for _, op := range []string{"<project_attach_poll/>", "<lookup_account_poll/>", "<get_project_config_poll/>"} {
		if got := body(cl.call(op)); got != "<error>client is busy</error>\n" {
			t.Errorf("%s with a failing backend: %q", op, got)
		}
	}
}
