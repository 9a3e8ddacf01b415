package rpcclient

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// Account manager RPC (client/acct_mgr.cpp): the client POSTs an
// <acct_mgr_request> describing the host and its projects to the AM's
// rpc.php, and the AM answers with the projects the host should have.

// AcctMgrRequest is everything one <acct_mgr_request> carries, in the
// order ACCT_MGR_OP::do_rpc of 7.20 writes it.
type AcctMgrRequest struct {
	// Authenticator, when set, is sent instead of Name and PasswordHash.
	Authenticator    string
	Name             string
	PasswordHash     string
	HostCPID         string
	DomainName       string
	RunMode          string // always, auto, never
	Platform         string
	AltPlatforms     []string
	PreviousHostCPID string
	// GUIRPCPort > 0 sends the GUI RPC port and password (the AM asked
	// with send_gui_rpc_info).
	GUIRPCPort     int
	GUIRPCPassword string
	Projects       []AcctMgrProject
	// Dynamic adds the work and usage counters of each project.
	Dynamic bool
	Prefs   boinc.Prefs
	// GlobalPrefsXML is the raw global_prefs.xml the client keeps (the
	// AM's last preferences), copied after the working preferences.
	GlobalPrefsXML string
	Host           boinc.Host
	// CoprocsXML is the body of <coprocs> inside <host_info>.
	CoprocsXML string
	// Opaque is the AM's <opaque> contents, echoed back raw.
	Opaque    string
	TimeStats TimeStats
	NetStats  NetStats
	// ResultsXML is the <results> block (GUI form), sent when the AM asked
	// with send_tasks_active or send_tasks_all.
	ResultsXML string
}

// AcctMgrProject is one <project> of the request.
type AcctMgrProject struct {
	URL, Name                      string
	Suspended                      bool
	HostID                         int64
	NotStartedDur, InProgressDur   float64
	AttachedViaAcctMgr             bool
	DontRequestMoreWork            bool
	DetachWhenDone, Ended          bool
	ResourceShare                  float64
	DiskUsage, DiskShare           float64
	NRPCFailures                   int
	CPUEC, CPUTime, GPUEC, GPUTime float64
	NJobsSuccess, NJobsError       int
	SchedReqNoWork                 []string
	// AccountKey is sent only for projects attached via the AM.
	AccountKey string
}

// WriteTo writes the request XML to w.
func (r *AcctMgrRequest) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: w}
	x := &xw{w: bufio.NewWriterSize(cw, 16*1024)}
	r.write(x)
	if x.err == nil {
		x.err = x.w.Flush()
	}
	if x.err != nil {
		return cw.n, fmt.Errorf("write account manager request: %w", x.err)
	}
	return cw.n, nil
}

func (r *AcctMgrRequest) write(x *xw) {
	x.raw("<?xml version=\"1.0\" encoding=\"UTF-8\" ?>\n<acct_mgr_request>\n")
	if r.Authenticator != "" {
		x.elemS("   <authenticator>", r.Authenticator, "</authenticator>\n")
	} else {
		x.elemS("   <name>", r.Name, "</name>\n")
		x.elemS("   <password_hash>", r.PasswordHash, "</password_hash>\n")
	}
	x.elemS("   <host_cpid>", r.HostCPID, "</host_cpid>\n")
	x.elemS("   <domain_name>", r.DomainName, "</domain_name>\n")
	x.elemS("   <client_version>", clientVersionString(), "</client_version>\n")
	x.elemS("   <run_mode>", r.RunMode, "</run_mode>\n")
	writePlatforms(x, r.Platform, r.AltPlatforms)
	if r.PreviousHostCPID != "" {
		x.elemS("   <previous_host_cpid>", r.PreviousHostCPID, "</previous_host_cpid>\n")
	}
	if r.GUIRPCPort > 0 {
		x.elemI("   <gui_rpc_port>", int64(r.GUIRPCPort), "</gui_rpc_port>\n")
		if r.GUIRPCPassword != "" {
			x.elemS("   <gui_rpc_password>", r.GUIRPCPassword, "</gui_rpc_password>\n")
		}
	}
	for i := range r.Projects {
		writeAcctMgrProject(x, &r.Projects[i], r.Dynamic)
	}
	writePrefs(x, &r.Prefs)
	if r.GlobalPrefsXML != "" {
		x.raw(r.GlobalPrefsXML)
		if !strings.HasSuffix(r.GlobalPrefsXML, "\n") {
			x.raw("\n")
		}
	}
	writeHostCoprocs(x, &r.Host, true, r.CoprocsXML)
	if r.Opaque != "" {
		x.raw("   <opaque>\n")
		x.raw(r.Opaque)
		x.raw("\n   </opaque>\n")
	}
	sr := SchedulerRequest{TimeStats: r.TimeStats, NetStats: r.NetStats}
	sr.writeTimeStats(x)
	sr.writeNetStats(x)
	x.raw(r.ResultsXML)
	x.raw("</acct_mgr_request>\n")
}

func b01(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func writeAcctMgrProject(x *xw, p *AcctMgrProject, dynamic bool) {
	x.raw("   <project>\n")
	x.elemS("      <url>", p.URL, "</url>\n")
	x.elemS("      <project_name>", p.Name, "</project_name>\n")
	x.elemI("      <suspended_via_gui>", b01(p.Suspended), "</suspended_via_gui>\n")
	x.elemI("      <hostid>", p.HostID, "</hostid>\n")
	x.elemF("      <not_started_dur>", p.NotStartedDur, "</not_started_dur>\n")
	x.elemF("      <in_progress_dur>", p.InProgressDur, "</in_progress_dur>\n")
	x.elemI("      <attached_via_acct_mgr>", b01(p.AttachedViaAcctMgr), "</attached_via_acct_mgr>\n")
	x.elemI("      <dont_request_more_work>", b01(p.DontRequestMoreWork), "</dont_request_more_work>\n")
	x.elemI("      <detach_when_done>", b01(p.DetachWhenDone), "</detach_when_done>\n")
	x.elemI("      <ended>", b01(p.Ended), "</ended>\n")
	x.elemF("      <resource_share>", p.ResourceShare, "</resource_share>\n")
	x.elemF("      <disk_usage>", p.DiskUsage, "</disk_usage>\n")
	x.elemF("      <disk_share>", p.DiskShare, "</disk_share>\n")
	if dynamic {
		x.elemI("      <nrpc_failures>", int64(p.NRPCFailures), "</nrpc_failures>\n")
		x.elemF("      <cpu_ec>", p.CPUEC, "</cpu_ec>\n")
		x.elemF("      <cpu_time>", p.CPUTime, "</cpu_time>\n")
		x.elemF("      <gpu_ec>", p.GPUEC, "</gpu_ec>\n")
		x.elemF("      <gpu_time>", p.GPUTime, "</gpu_time>\n")
		x.elemI("      <njobs_success>", int64(p.NJobsSuccess), "</njobs_success>\n")
		x.elemI("      <njobs_error>", int64(p.NJobsError), "</njobs_error>\n")
		for _, r := range p.SchedReqNoWork {
			x.elemS("    <sched_req_no_work>", r, "</sched_req_no_work>\n")
		}
	}
	if p.AttachedViaAcctMgr {
		x.elemS("      <account_key>", p.AccountKey, "</account_key>\n")
	}
	x.raw("   </project>\n")
}

// AcctMgrRPC POSTs an account manager request to rpcURL (the AM's URL
// followed by rpc.php) and returns the raw reply, at most maxBytes.
func (c *Client) AcctMgrRPC(ctx context.Context, rpcURL string, body []byte, maxBytes int64) ([]byte, error) {
	if err := checkTransferURL("account manager URL", rpcURL); err != nil {
		return nil, fmt.Errorf("account manager RPC: %w", err)
	}
	raw, err := c.fetch(ctx, http.MethodPost, rpcURL, body)
	if err != nil {
		return nil, fmt.Errorf("account manager RPC: %w", err)
	}
	if maxBytes > 0 && int64(len(raw)) > maxBytes {
		return nil, &ReplyTooLargeError{URL: rpcURL, Limit: maxBytes}
	}
	return raw, nil
}

// Bounds on what an AM reply may hold; real ones list a few dozen
// projects and a few KiB of preferences.
const (
	MaxAcctMgrAccounts = 1000
	MaxAcctMgrMessages = 50
	maxAcctMgrText     = 64 * 1024
)

// AcctMgrReply is ACCT_MGR_OP::parse's result.
type AcctMgrReply struct {
	Name          string
	UserName      string
	TeamName      string
	Authenticator string
	SigningKey    string
	ErrorNum      int
	Error         string // error or error_msg
	RepeatSec     float64
	Dynamic       bool
	SendGUIRPC    bool
	// SendTasksActive and SendTasksAll ask for the host's tasks in the
	// next requests.
	SendTasksActive bool
	SendTasksAll    bool
	Messages        []string
	// Opaque is the raw contents of <opaque>, to echo back; HasOpaque
	// tells an empty one from none.
	Opaque    string
	HasOpaque bool
	// GlobalPrefs is the whole <global_preferences> element, raw.
	GlobalPrefs      string
	HostVenue        string
	HasRSSFeeds      bool
	RSSFeeds         []RSSFeed
	NoProjectNotices bool
	Accounts         []AcctMgrAccount
}

// AcctMgrAccount is one <account> of the reply. Pointer fields are the
// C++ client's OPTIONAL_BOOL / OPTIONAL_DOUBLE: nil when not sent.
type AcctMgrAccount struct {
	URL                 string
	URLSignature        string
	Authenticator       string
	Detach              bool
	Update              bool
	DontRequestMoreWork *bool
	DetachWhenDone      *bool
	ResourceShare       *float64
	Suspend             *bool
	AbortNotStarted     bool
	// NoRsc are the processor types the host must not ask work for
	// (no_rsc, and the deprecated no_cpu, no_cuda, no_ati).
	NoRsc []string
}

// amBool is a BOINC flag: <x/>, <x>1</x> or <x>0</x>.
type amBool bool

func (b *amBool) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return err
	}
	s = strings.TrimSpace(s)
	switch s {
	case "", "1", "true":
		*b = true
	case "0", "false":
		*b = false
	default:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("<%s>%s</%s>: not a flag", start.Name.Local, s, start.Name.Local)
		}
		*b = n != 0
	}
	return nil
}

type amInner struct {
	Inner string `xml:",innerxml"`
}

type amAccountXML struct {
	URL                 string   `xml:"url"`
	URLSignature        string   `xml:"url_signature"`
	Authenticator       string   `xml:"authenticator"`
	Detach              amBool   `xml:"detach"`
	Update              amBool   `xml:"update"`
	DontRequestMoreWork *amBool  `xml:"dont_request_more_work"`
	DetachWhenDone      *amBool  `xml:"detach_when_done"`
	ResourceShare       *string  `xml:"resource_share"`
	Suspend             *amBool  `xml:"suspend"`
	AbortNotStarted     amBool   `xml:"abort_not_started"`
	NoRsc               []string `xml:"no_rsc"`
	NoCPU               amBool   `xml:"no_cpu"`
	NoCUDA              amBool   `xml:"no_cuda"`
	NoATI               amBool   `xml:"no_ati"`
}

type amReplyXML struct {
	XMLName          xml.Name       `xml:"acct_mgr_reply"`
	Name             string         `xml:"name"`
	UserName         string         `xml:"user_name"`
	TeamName         string         `xml:"team_name"`
	Authenticator    string         `xml:"authenticator"`
	SigningKey       string         `xml:"signing_key"`
	ErrorNum         string         `xml:"error_num"`
	Error            string         `xml:"error"`
	ErrorMsg         string         `xml:"error_msg"`
	RepeatSec        string         `xml:"repeat_sec"`
	Dynamic          amBool         `xml:"dynamic"`
	SendGUIRPC       amBool         `xml:"send_gui_rpc_info"`
	SendTasksActive  amBool         `xml:"send_tasks_active"`
	SendTasksAll     amBool         `xml:"send_tasks_all"`
	Messages         []string       `xml:"message"`
	Opaque           *amInner       `xml:"opaque"`
	GlobalPrefs      *amInner       `xml:"global_preferences"`
	HostVenue        string         `xml:"host_venue"`
	RSSFeeds         *rssFeedsXML   `xml:"rss_feeds"`
	NoProjectNotices amBool         `xml:"no_project_notices"`
	Accounts         []amAccountXML `xml:"account"`
}

type rssFeedsXML struct {
	Feeds []struct {
		URL          string `xml:"url"`
		PollInterval string `xml:"poll_interval"`
	} `xml:"rss_feed"`
}

// ParseAcctMgrReply reads an <acct_mgr_reply>. Malformed XML, a bad
// number or a reply past the bounds is an error that says what and where;
// nothing of such a reply is applied.
func ParseAcctMgrReply(raw []byte) (*AcctMgrReply, error) {
	var x amReplyXML
	dec := xml.NewDecoder(bytes.NewReader(raw))
	dec.Strict = true
	if err := dec.Decode(&x); err != nil {
		var se *xml.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("account manager reply: line %d: %s", se.Line, se.Msg)
		}
		return nil, fmt.Errorf("account manager reply: %w", err)
	}
	r := &AcctMgrReply{
		Name:             strings.TrimSpace(x.Name),
		UserName:         strings.TrimSpace(x.UserName),
		TeamName:         strings.TrimSpace(x.TeamName),
		Authenticator:    strings.TrimSpace(x.Authenticator),
		SigningKey:       strings.TrimSpace(x.SigningKey),
		Error:            strings.TrimSpace(x.Error),
		Dynamic:          bool(x.Dynamic),
		SendGUIRPC:       bool(x.SendGUIRPC),
		SendTasksActive:  bool(x.SendTasksActive),
		SendTasksAll:     bool(x.SendTasksAll),
		HostVenue:        strings.TrimSpace(x.HostVenue),
		NoProjectNotices: bool(x.NoProjectNotices),
	}
	if r.Error == "" {
		r.Error = strings.TrimSpace(x.ErrorMsg)
	}
	if s := strings.TrimSpace(x.ErrorNum); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("account manager reply: <error_num>%s</error_num>: not an integer", s)
		}
		r.ErrorNum = n
	}
	if s := strings.TrimSpace(x.RepeatSec); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("account manager reply: <repeat_sec>%s</repeat_sec>: not a number", s)
		}
		r.RepeatSec = v
	}
	if len(x.Messages) > MaxAcctMgrMessages {
		return nil, fmt.Errorf("account manager reply: %d messages, at most %d taken", len(x.Messages), MaxAcctMgrMessages)
	}
	for _, m := range x.Messages {
		if m = strings.TrimSpace(m); m != "" {
			r.Messages = append(r.Messages, m)
		}
	}
	if x.Opaque != nil {
		if len(x.Opaque.Inner) > maxAcctMgrText {
			return nil, fmt.Errorf("account manager reply: <opaque> of %d bytes, at most %d taken", len(x.Opaque.Inner), maxAcctMgrText)
		}
		r.Opaque, r.HasOpaque = strings.TrimSpace(x.Opaque.Inner), true
	}
	if x.GlobalPrefs != nil {
		if len(x.GlobalPrefs.Inner) > maxAcctMgrText {
			return nil, fmt.Errorf("account manager reply: <global_preferences> of %d bytes, at most %d taken", len(x.GlobalPrefs.Inner), maxAcctMgrText)
		}
		r.GlobalPrefs = "<global_preferences>" + x.GlobalPrefs.Inner + "</global_preferences>\n"
	}
	if x.RSSFeeds != nil {
		r.HasRSSFeeds = true
		for i, f := range x.RSSFeeds.Feeds {
			if i >= MaxReplyRSSFeeds {
				break
			}
			u := strings.TrimSpace(f.URL)
			pi, err := strconv.ParseFloat(strings.TrimSpace(f.PollInterval), 64)
			if u == "" || err != nil || !(pi > 0) {
				continue
			}
			r.RSSFeeds = append(r.RSSFeeds, RSSFeed{URL: u, PollInterval: pi})
		}
	}
	if len(x.Accounts) > MaxAcctMgrAccounts {
		return nil, fmt.Errorf("account manager reply: %d accounts, at most %d taken", len(x.Accounts), MaxAcctMgrAccounts)
	}
	for i, a := range x.Accounts {
		acct := AcctMgrAccount{
			URL:             strings.TrimSpace(a.URL),
			URLSignature:    strings.TrimSpace(a.URLSignature),
			Authenticator:   strings.TrimSpace(a.Authenticator),
			Detach:          bool(a.Detach),
			Update:          bool(a.Update),
			AbortNotStarted: bool(a.AbortNotStarted),
		}
		if acct.URL == "" {
			return nil, fmt.Errorf("account manager reply: <account> %d has no <url>", i+1)
		}
		if a.DontRequestMoreWork != nil {
			v := bool(*a.DontRequestMoreWork)
			acct.DontRequestMoreWork = &v
		}
		if a.DetachWhenDone != nil {
			v := bool(*a.DetachWhenDone)
			acct.DetachWhenDone = &v
		}
		if a.Suspend != nil {
			v := bool(*a.Suspend)
			acct.Suspend = &v
		}
		if a.ResourceShare != nil {
			s := strings.TrimSpace(*a.ResourceShare)
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("account manager reply: account %s: <resource_share>%s</resource_share>: not a share", acct.URL, s)
			}
			acct.ResourceShare = &v
		}
		for _, n := range a.NoRsc {
			if n = strings.TrimSpace(n); n != "" {
				acct.NoRsc = append(acct.NoRsc, n)
			}
		}
		if a.NoCPU {
			acct.NoRsc = append(acct.NoRsc, "CPU")
		}
		if a.NoCUDA {
			acct.NoRsc = append(acct.NoRsc, "NVIDIA")
		}
		if a.NoATI {
			acct.NoRsc = append(acct.NoRsc, "ATI")
		}
		r.Accounts = append(r.Accounts, acct)
	}
	return r, nil
}
