package rpcclient

import (
	"bytes"
	"strings"
	"testing"

	"github.com/boincd/boincd/boinc"
)

func TestAcctMgrRequestXML(t *testing.T) {
	base := AcctMgrRequest{
		Name: "alice", PasswordHash: "0123abcd", HostCPID: "cpid", DomainName: "host1", RunMode: "auto",
		Projects: []AcctMgrProject{
			{URL: "http://a/", Name: "A", HostID: 7, ResourceShare: 50, AttachedViaAcctMgr: true, AccountKey: "key-a", DontRequestMoreWork: true},
			{URL: "http://b/", Name: "B & co", ResourceShare: 100},
		},
		Host:   boinc.Host{HostCPID: "cpid", DomainName: "host1"},
		Opaque: "<host_seq>3</host_seq>",
	}
	cases := []struct {
		name    string
		mod     func(*AcctMgrRequest)
		want    []string // in this order
		notWant []string
	}{
		{"login by name", nil, []string{
			"<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<acct_mgr_request>\n   <name>alice</name>\n   <password_hash>0123abcd</password_hash>\n   <host_cpid>cpid</host_cpid>\n   <domain_name>host1</domain_name>\n   <client_version>7.20.5</client_version>\n   <run_mode>auto</run_mode>\n    <platform_name>",
			"   <project>\n      <url>http://a/</url>\n      <project_name>A</project_name>\n      <suspended_via_gui>0</suspended_via_gui>\n      <hostid>7</hostid>\n",
			"      <attached_via_acct_mgr>1</attached_via_acct_mgr>\n      <dont_request_more_work>1</dont_request_more_work>\n",
			"      <resource_share>50.000000</resource_share>\n",
			"      <account_key>key-a</account_key>\n   </project>\n",
			"<project_name>B &amp; co</project_name>",
			"<working_global_preferences>", "<host_info>", "    <coprocs>\n    </coprocs>\n</host_info>\n",
			"   <opaque>\n<host_seq>3</host_seq>\n   </opaque>\n<time_stats>", "<net_stats>", "</acct_mgr_request>\n",
		}, []string{"<authenticator>", "<nrpc_failures>", "<previous_host_cpid>", "<gui_rpc_port>"}},
		{"account key, dynamic, GUI RPC info", func(r *AcctMgrRequest) {
			r.Authenticator, r.Dynamic, r.GUIRPCPort, r.GUIRPCPassword, r.PreviousHostCPID = "amkey", true, 31416, "pw", "old"
			r.Projects[0].SchedReqNoWork = []string{"CPU"}
			r.GlobalPrefsXML = "<global_preferences><work_buf_min_days>1</work_buf_min_days></global_preferences>"
		}, []string{
			"<acct_mgr_request>\n   <authenticator>amkey</authenticator>\n   <host_cpid>",
			"   <previous_host_cpid>old</previous_host_cpid>\n   <gui_rpc_port>31416</gui_rpc_port>\n   <gui_rpc_password>pw</gui_rpc_password>\n   <project>",
			"      <nrpc_failures>0</nrpc_failures>\n      <cpu_ec>0.000000</cpu_ec>", "    <sched_req_no_work>CPU</sched_req_no_work>\n      <account_key>key-a</account_key>",
			"</working_global_preferences>\n<global_preferences><work_buf_min_days>1</work_buf_min_days></global_preferences>\n<host_info>",
		}, []string{"<name>alice</name>", "<password_hash>"}},
		{"no opaque", func(r *AcctMgrRequest) { r.Opaque = "" }, []string{"</host_info>\n<time_stats>"}, []string{"<opaque>"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := base
			r.Projects = append([]AcctMgrProject(nil), base.Projects...)
			if c.mod != nil {
				c.mod(&r)
			}
			var buf bytes.Buffer
			if _, err := r.WriteTo(&buf); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			at := 0
			for _, w := range c.want {
				i := strings.Index(out[at:], w)
				if i < 0 {
					t.Fatalf("request lacks %q after byte %d:\n%s", w, at, out)
				}
				at += i + len(w)
			}
			for _, w := range c.notWant {
				if strings.Contains(out, w) {
					t.Errorf("request has %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestParseAcctMgrReply(t *testing.T) {
	good := `<?xml version="1.0" encoding="UTF-8" ?>
<acct_mgr_reply>
  <name>BAM!</name>
  <signing_key>
1024
abcd
.
</signing_key>
  <repeat_sec>3600</repeat_sec>
  <send_tasks_active/>
  <opaque>
<host_id>12</host_id>
  </opaque>
  <message>hello</message>
  <message>  </message>
  <global_preferences>
    <work_buf_min_days>0.5</work_buf_min_days>
  </global_preferences>
  <host_venue>home</host_venue>
  <rss_feeds><rss_feed><url>http://am/feed.xml</url><poll_interval>86400</poll_interval></rss_feed><rss_feed><url>x</url></rss_feed></rss_feeds>
  <account>
    <url>http://a/</url>
    <url_signature>
0011
.
</url_signature>
    <authenticator>k</authenticator>
    <resource_share>25</resource_share>
    <dont_request_more_work/>
    <suspend>0</suspend>
    <no_rsc>NVIDIA</no_rsc>
    <no_cpu>1</no_cpu>
  </account>
  <account>
    <url>http://b/</url>
    <detach>1</detach>
    <update/>
  </account>
</acct_mgr_reply>
`
	r, err := ParseAcctMgrReply([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if !r.SendTasksActive || r.SendTasksAll {
		t.Errorf("send_tasks flags %v %v", r.SendTasksActive, r.SendTasksAll)
	}
	if r.Name != "BAM!" || r.SigningKey != "1024\nabcd\n." || r.RepeatSec != 3600 || !r.HasOpaque || r.Opaque != "<host_id>12</host_id>" {
		t.Errorf("reply %+v", r)
	}
	if len(r.Messages) != 1 || r.Messages[0] != "hello" {
		t.Errorf("messages %q", r.Messages)
	}
	if !strings.HasPrefix(r.GlobalPrefs, "<global_preferences>") || !strings.Contains(r.GlobalPrefs, "<work_buf_min_days>0.5</work_buf_min_days>") || r.HostVenue != "home" {
		t.Errorf("prefs %q venue %q", r.GlobalPrefs, r.HostVenue)
	}
	if !r.HasRSSFeeds || len(r.RSSFeeds) != 1 || r.RSSFeeds[0].URL != "http://am/feed.xml" {
		t.Errorf("feeds %+v", r.RSSFeeds)
	}
	if len(r.Accounts) != 2 {
		t.Fatalf("accounts %+v", r.Accounts)
	}
	a, b := r.Accounts[0], r.Accounts[1]
	if a.URL != "http://a/" || a.Authenticator != "k" || a.ResourceShare == nil || *a.ResourceShare != 25 ||
		a.DontRequestMoreWork == nil || !*a.DontRequestMoreWork || a.Suspend == nil || *a.Suspend || a.DetachWhenDone != nil ||
		strings.Join(a.NoRsc, ",") != "NVIDIA,CPU" || a.URLSignature != "0011\n." {
		t.Errorf("account a %+v", a)
	}
	if !b.Detach || !b.Update || b.ResourceShare != nil || b.DontRequestMoreWork != nil {
		t.Errorf("account b %+v", b)
	}

	bad := []struct{ name, xml, want string }{
		{"not XML", "<acct_mgr_reply><name>x</acct_mgr_reply>", "line 1"},
		{"other root", "<scheduler_reply/>", "acct_mgr_reply"},
		{"error_num", "<acct_mgr_reply><error_num>x</error_num></acct_mgr_reply>", "<error_num>x</error_num>: not an integer"},
		{"repeat_sec", "<acct_mgr_reply><repeat_sec>soon</repeat_sec></acct_mgr_reply>", "<repeat_sec>soon</repeat_sec>"},
		{"share", "<acct_mgr_reply><account><url>http://a/</url><resource_share>-1</resource_share></account></acct_mgr_reply>", "account http://a/: <resource_share>-1</resource_share>"},
		{"no url", "<acct_mgr_reply><account><detach/></account></acct_mgr_reply>", "<account> 1 has no <url>"},
		{"flag", "<acct_mgr_reply><account><url>http://a/</url><detach>maybe</detach></account></acct_mgr_reply>", "<detach>maybe</detach>: not a flag"},
		{"messages", "<acct_mgr_reply>" + strings.Repeat("<message>m</message>", MaxAcctMgrMessages+1) + "</acct_mgr_reply>", "messages"},
	}
	for _, c := range bad {
		_, err := ParseAcctMgrReply([]byte(c.xml))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one with %q", c.name, err, c.want)
		}
	}

	e, err := ParseAcctMgrReply([]byte("<acct_mgr_reply>\n<error_num>-206</error_num>\n<error_msg>Invalid password</error_msg>\n</acct_mgr_reply>"))
	if err != nil || e.ErrorNum != -206 || e.Error != "Invalid password" {
		t.Errorf("error reply: %+v, %v", e, err)
	}
}
