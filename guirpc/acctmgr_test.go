package guirpc

import (
	"context"
	"strings"
	"sync"
	"testing"
)

func TestAcctMgrPasswordHash(t *testing.T) {
	cases := []struct{ name, pass, want string }{
		// MD5("p" + "n"): the name is lower-cased first.
		{"N", "p", "ded0804cf804b6d26e37953dc2dbc505"},
		{"n", "p", "ded0804cf804b6d26e37953dc2dbc505"},
		{"n", "hash:abc123", "abc123"},
		{"", "", "d41d8cd98f00b204e9800998ecf8427e"},
	}
	for _, c := range cases {
		if got := AcctMgrPasswordHash(c.name, c.pass); got != c.want {
			t.Errorf("AcctMgrPasswordHash(%q, %q) = %q, want %q", c.name, c.pass, got, c.want)
		}
	}
}

// amBackend answers the account manager ops as a daemon would.
type amBackend struct {
	fakeBackend
	mu   sync.Mutex
	info AcctMgrInfoOut
	poll AcctMgrStatus
	err  error
	got  []AcctMgrRPC
}

func (b *amBackend) Do(ctx context.Context, a Action) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch a := a.(type) {
	case AcctMgrInfo:
		*a.Out = b.info
	case AcctMgrPoll:
		*a.Out = b.poll
	case AcctMgrRPC:
		b.got = append(b.got, a)
		return b.err
	}
	return nil
}

func TestAcctMgrOps(t *testing.T) {
	b := &amBackend{fakeBackend: fakeBackend{st: richState()}}
	srv := startServer(t, Config{Backend: b})
	cl := dial(t, srv)
	cases := []struct {
		setup func()
		req   string
		want  string
		rpc   *AcctMgrRPC
	}{
		{nil, "<acct_mgr_info/>", "<acct_mgr_info>\n   <acct_mgr_url></acct_mgr_url>\n   <acct_mgr_name></acct_mgr_name>\n</acct_mgr_info>\n", nil},
		{func() { b.info = AcctMgrInfoOut{URL: "http://am/", Name: "Test AM", HaveCredentials: true} },
			"<acct_mgr_info/>", "<acct_mgr_info>\n   <acct_mgr_url>http://am/</acct_mgr_url>\n   <acct_mgr_name>Test AM</acct_mgr_name>\n   <have_credentials/>\n</acct_mgr_info>\n", nil},
		{func() { b.poll = AcctMgrStatus{ErrorNum: ErrNumInProgress} }, "<acct_mgr_rpc_poll/>", "<acct_mgr_rpc_reply>\n    <error_num>-204</error_num>\n</acct_mgr_rpc_reply>\n", nil},
		{func() { b.poll = AcctMgrStatus{ErrorNum: -206, Message: "bad <password>"} }, "<acct_mgr_rpc_poll/>",
			"<acct_mgr_rpc_reply>\n    <message>bad &lt;password&gt;</message>\n    <error_num>-206</error_num>\n</acct_mgr_rpc_reply>\n", nil},
		// boinccmd --acct_mgr sync
		{nil, "<acct_mgr_rpc>\n  <use_config_file/>\n</acct_mgr_rpc>\n", "<success/>", &AcctMgrRPC{UseCurrent: true}},
		// boinccmd --acct_mgr detach: all three present and empty.
		{nil, "<acct_mgr_rpc>\n  <url></url>\n  <name></name>\n  <password></password>\n</acct_mgr_rpc>\n", "<success/>", &AcctMgrRPC{}},
		{nil, "<acct_mgr_rpc>\n  <url>http://am/</url>\n  <name>Bob</name>\n  <password>hash:0123</password>\n</acct_mgr_rpc>\n", "<success/>",
			&AcctMgrRPC{URL: "http://am/", Name: "Bob", PasswordHash: "0123"}},
		{nil, "<acct_mgr_rpc>\n  <url>http://am/</url>\n</acct_mgr_rpc>\n", "<error>bad arg</error>", nil},
		{func() { b.err = ErrDifferentAM }, "<acct_mgr_rpc>\n  <url>http://other/</url>\n  <name>x</name>\n  <password>y</password>\n</acct_mgr_rpc>\n",
			"<error>attached to a different AM - detach first</error>", &AcctMgrRPC{URL: "http://other/", Name: "x", PasswordHash: AcctMgrPasswordHash("x", "y")}},
	}
	for _, c := range cases {
		b.mu.Lock()
		if c.setup != nil {
			c.setup()
		}
		before := len(b.got)
		b.mu.Unlock()
		reply := cl.call(c.req)
		if !strings.Contains(reply, c.want) {
			t.Errorf("%s\nreply %q\nlacks %q", c.req, reply, c.want)
		}
		b.mu.Lock()
		got := b.got[before:]
		b.mu.Unlock()
		switch {
		case c.rpc == nil && len(got) > 0:
			t.Errorf("%s: backend got %+v, want nothing", c.req, got)
		case c.rpc != nil && (len(got) != 1 || got[0] != *c.rpc):
			t.Errorf("%s: backend got %+v, want %+v", c.req, got, *c.rpc)
		}
	}
}
