package rpcclient

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// SchedulerReply is the parsed <scheduler_reply>: everything in it that
// changes client state. ProjectURL fields of the contained values are left
// empty; the caller knows which project it asked.
type SchedulerReply struct {
	SchedulerVersion int
	MasterURL        string
	ProjectName      string
	UserName         string
	TeamName         string
	CrossProjectID   string
	EmailHash        string
	ExternalCPID     string
	HostVenue        string
	// UserCreateTime, HostCreateTime and CPIDTime are Unix seconds, 0
	// when absent.
	UserCreateTime float64
	HostCreateTime float64
	CPIDTime       float64
	UserID         int64
	TeamID         int64
	// HostID is non-zero only when the server created a new host record.
	HostID int64

	UserTotalCredit  float64
	UserExpavgCredit float64
	HostTotalCredit  float64
	HostExpavgCredit float64

	// RequestDelay is the minimum wait before the next RPC, in seconds (0
	// when absent).
	RequestDelay float64
	// NextRPCDelay, when present, asks for an RPC after that many seconds;
	// a present 0 clears a previous request.
	NextRPCDelay *float64

	// ProjectPrefs and GlobalPrefs are the raw inner XML of
	// <project_preferences> and <global_preferences> ("" when absent).
	ProjectPrefs string
	GlobalPrefs  string
	// CodeSignKey and CodeSignKeySignature are trimmed of surrounding
	// whitespace ("1024\n…\n.").
	CodeSignKey          string
	CodeSignKeySignature string

	Apps        []boinc.App
	FileInfos   []boinc.FileInfo
	AppVersions []boinc.AppVersion
	Workunits   []boinc.Workunit
	Results     []boinc.Result
	// ProjectFiles are links the project wants in its directory
	// (open_name → file_name).
	ProjectFiles []boinc.FileRef

	ResultAcks               []string
	ResultAborts             []string
	ResultAbortsIfNotStarted []string
	DeleteFileInfos          []string
	Messages                 []Message
	// GUIURLs are the project's web links that BOINC Manager shows, when
	// the reply has <gui_urls> (HasGUIURLs).
	GUIURLs    []boinc.GUIURL
	HasGUIURLs bool

	// TrickleUpURLs are the project's trickle handlers (<trickle_up_urls>):
	// each trickle-up is also posted to every one of them
	// (send_replicated_trickles). A reply without the element has none.
	// RefusedTrickleUpURLs say which were left out (not http or https,
	// too many), one line each; the rest of the reply applies.
	TrickleUpURLs        []string
	RefusedTrickleUpURLs []string

	ProjectIsDown    bool
	Ended            bool
	DontUseDCF       bool
	SendFullWorkload bool
	NonCPUIntensive  bool
	// MessageAck acknowledges the trickle-up messages sent.
	MessageAck bool
	// TrickleDowns are the server's messages to running tasks
	// (<trickle_down>, the msg_to_host rows the scheduler copies into the
	// reply). RefusedTrickleDowns say, one line each, which ones were
	// dropped and why (too large, too many): the rest of the reply still
	// applies, since the server marked them handled whatever we do.
	TrickleDowns        []TrickleDown
	RefusedTrickleDowns []string
	trickleDownsSeen    int
	// NoRscApps lists processor types ("CPU", "NVIDIA", "ATI", …) the
	// project has no apps for.
	NoRscApps []string
	// RSSFeeds are the project's news feeds, when the reply has
	// <rss_feeds> (HasRSSFeeds): the list replaces the one held before,
	// and an empty one drops them all.
	RSSFeeds    []RSSFeed
	HasRSSFeeds bool
}

// Message is a <message> from the server. Priority is "low", "high" or
// "notice" as sent.
type Message struct {
	Priority string
	Text     string
}

var (
	replyStartTag = []byte("<scheduler_reply")
	replyEndTag   = []byte("</scheduler_reply>")
)

// ParseSchedulerReply parses a scheduler reply body. Anything before
// <scheduler_reply> (CGI header, XML declaration, chunk length) is skipped
// as the C++ client does. Any malformed XML, invalid number, missing
// required field or unsafe file name fails the whole reply: the caller then
// treats the RPC as failed instead of acting on half a reply.
func ParseSchedulerReply(data []byte) (*SchedulerReply, error) {
	start := findStartTag(data)
	if start < 0 {
		return nil, errors.New("scheduler reply: no <scheduler_reply> start tag")
	}
	src := data[start:]
	if !bytes.Contains(src, replyEndTag) {
		return nil, errors.New("scheduler reply: no </scheduler_reply> end tag (truncated reply)")
	}
	src = escapeOpaque(src)
	if err := checkMarkup(src); err != nil {
		return nil, fmt.Errorf("scheduler reply: %w", err)
	}
	// The fast tokenizer handles what servers actually send; whatever it
	// fails on (including genuinely bad input) gets encoding/xml's verdict.
	if r, err := parseFast(src); err == nil {
		return r, nil
	}
	r, err := parseStd(src)
	if err != nil {
		return nil, fmt.Errorf("scheduler reply: %w", err)
	}
	return r, nil
}

func parseFast(src []byte) (*SchedulerReply, error) {
	p := &rparser{d: &fastTokenizer{src: src}, src: src}
	return p.reply()
}

func parseStd(src []byte) (*SchedulerReply, error) {
	d := xml.NewDecoder(bytes.NewReader(src))
	d.Entity = xml.HTMLEntity
	// Real servers put unescaped text into replies (the stock news-feed
	// URL, user and team names substituted into gui_urls.xml): an entity
	// that is not one stays text, as in the C++ client's parser.
	d.Strict = false
	p := &rparser{d: d, src: src}
	return p.reply()
}

// findStartTag returns the offset of "<scheduler_reply>" (or with
// attributes), or -1.
func findStartTag(data []byte) int {
	off := 0
	for {
		i := bytes.Index(data[off:], replyStartTag)
		if i < 0 {
			return -1
		}
		j := off + i + len(replyStartTag)
		if j < len(data) {
			switch data[j] {
			case '>', ' ', '\t', '\r', '\n', '/':
				return off + i
			}
		}
		off = j
	}
}

// rparser walks the reply one token at a time. RawToken avoids the
// namespace bookkeeping of Token; since it does not check that end tags
// match, every consumer checks the names itself.
type rparser struct {
	d   tokenSource
	src []byte
	buf []byte
}

func (p *rparser) token() (xml.Token, error) {
	tok, err := p.d.RawToken()
	if err == io.EOF {
		return nil, fmt.Errorf("malformed XML: unexpected end of data at offset %d", p.d.InputOffset())
	}
	if err != nil {
		return nil, fmt.Errorf("malformed XML: %w", err)
	}
	return tok, nil
}

func mismatch(want, got xml.Name) error {
	return fmt.Errorf("malformed XML: element <%s> closed by </%s>", qname(want), qname(got))
}

func qname(n xml.Name) string {
	if n.Space != "" {
		return n.Space + ":" + n.Local
	}
	return n.Local
}

// skip consumes the rest of an element whose start tag was read.
func (p *rparser) skip(name xml.Name) error {
	// Most skipped elements are shallow: a fixed array keeps the stack
	// off the heap, so a flood of unknown elements allocates nothing.
	var arr [8]xml.Name
	stack := append(arr[:0], name)
	for len(stack) > 0 {
		tok, err := p.token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			stack = append(stack, t.Name)
		case xml.EndElement:
			if top := stack[len(stack)-1]; t.Name != top {
				return mismatch(top, t.Name)
			}
			stack = stack[:len(stack)-1]
		}
	}
	return nil
}

// text returns the unescaped character data of an element whose start tag
// was read; nested elements are skipped.
func (p *rparser) text(name xml.Name) (string, error) {
	p.buf = p.buf[:0]
	for {
		tok, err := p.token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			p.buf = append(p.buf, t...)
		case xml.StartElement:
			if err := p.skip(t.Name); err != nil {
				return "", err
			}
		case xml.EndElement:
			if t.Name != name {
				return "", mismatch(name, t.Name)
			}
			return string(p.buf), nil
		}
	}
}

// rawInner returns the undecoded bytes between an element's start and end
// tags, and whether it had child elements.
func (p *rparser) rawInner(name xml.Name) (string, bool, error) {
	begin := p.d.InputOffset()
	var arr [8]xml.Name
	stack := append(arr[:0], name)
	nested := false
	for {
		end := p.d.InputOffset()
		tok, err := p.token()
		if err != nil {
			return "", false, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			nested = true
			stack = append(stack, t.Name)
		case xml.EndElement:
			if top := stack[len(stack)-1]; t.Name != top {
				return "", false, mismatch(top, t.Name)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				if end < begin {
					end = begin
				}
				return string(p.src[begin:end]), nested, nil
			}
		}
	}
}

// children calls fn for each child element of the element whose start tag
// was read; fn must consume the child completely.
func (p *rparser) children(name xml.Name, fn func(t xml.StartElement) error) error {
	for {
		tok, err := p.token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := fn(t); err != nil {
				return err
			}
		case xml.EndElement:
			if t.Name != name {
				return mismatch(name, t.Name)
			}
			return nil
		}
	}
}

func (p *rparser) trimmed(t xml.StartElement) (string, error) {
	s, err := p.text(t.Name)
	return strings.TrimSpace(s), err
}

func (p *rparser) float(t xml.StartElement) (float64, error) {
	s, err := p.text(t.Name)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("<%s>: invalid number %q", t.Name.Local, s)
	}
	return f, nil
}

func (p *rparser) int64(t xml.StartElement) (int64, error) {
	s, err := p.text(t.Name)
	if err != nil {
		return 0, err
	}
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	// Some servers print integers through a double format ("100.000000").
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, fmt.Errorf("<%s>: invalid integer %q", t.Name.Local, s)
	}
	return int64(f), nil
}

func (p *rparser) int(t xml.StartElement) (int, error) {
	n, err := p.int64(t)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, fmt.Errorf("<%s>: integer %d out of range", t.Name.Local, n)
	}
	return int(n), nil
}

// bool reads a BOINC flag: <flag/> or <flag></flag> is true, otherwise the
// number inside decides (non-zero is true), as XML_PARSER::parse_bool.
func (p *rparser) bool(t xml.StartElement) (bool, error) {
	s, err := p.text(t.Name)
	if err != nil {
		return false, err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return true, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f != 0, nil
	}
	return s == "true", nil
}

// counters numbers each element kind for error messages.
type counters struct {
	app, fileInfo, appVersion, workunit, result, projectFile int
	// files maps each file_info name to its index, to catch a name
	// given twice with different contents.
	files map[string]int
}

// tooMany refuses the n-th element of a list past its limit.
func tooMany(kind string, n, limit int) error {
	if n > limit {
		return fmt.Errorf("more than %d <%s> elements", limit, kind)
	}
	return nil
}

func (p *rparser) reply() (*SchedulerReply, error) {
	// The start tag is the first token: findStartTag put it at offset 0.
	tok, err := p.token()
	if err != nil {
		return nil, err
	}
	root, ok := tok.(xml.StartElement)
	if !ok || root.Name.Local != "scheduler_reply" {
		return nil, errors.New("malformed XML: <scheduler_reply> expected")
	}
	r := &SchedulerReply{}
	var n counters
	err = p.children(root.Name, func(t xml.StartElement) error {
		return p.replyElem(r, &n, t)
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (p *rparser) replyElem(r *SchedulerReply, n *counters, t xml.StartElement) error {
	var err error
	switch t.Name.Local {
	case "scheduler_version":
		r.SchedulerVersion, err = p.int(t)
	case "master_url":
		r.MasterURL, err = p.trimmed(t)
	case "project_name":
		r.ProjectName, err = p.trimmed(t)
	case "user_name":
		r.UserName, err = p.trimmed(t)
	case "team_name":
		r.TeamName, err = p.trimmed(t)
	case "cross_project_id":
		r.CrossProjectID, err = p.trimmed(t)
	case "email_hash":
		r.EmailHash, err = p.trimmed(t)
	case "host_venue":
		r.HostVenue, err = p.trimmed(t)
	case "userid":
		r.UserID, err = p.int64(t)
	case "teamid":
		r.TeamID, err = p.int64(t)
	case "hostid":
		if r.HostID, err = p.int64(t); err == nil && r.HostID < 0 {
			err = fmt.Errorf("<hostid> %d is negative", r.HostID)
		}
	case "user_total_credit":
		r.UserTotalCredit, err = p.float(t)
	case "user_expavg_credit":
		r.UserExpavgCredit, err = p.float(t)
	case "host_total_credit":
		r.HostTotalCredit, err = p.float(t)
	case "host_expavg_credit":
		r.HostExpavgCredit, err = p.float(t)
	case "user_create_time":
		r.UserCreateTime, err = p.float(t)
	case "host_create_time":
		r.HostCreateTime, err = p.float(t)
	case "cpid_time":
		r.CPIDTime, err = p.float(t)
	case "external_cpid":
		r.ExternalCPID, err = p.trimmed(t)
	case "request_delay":
		if r.RequestDelay, err = p.float(t); err == nil {
			err = checkRange("request_delay", r.RequestDelay, math.Inf(-1), MaxReplyDelay)
		}
	case "next_rpc_delay":
		var d float64
		if d, err = p.float(t); err == nil {
			err = checkRange("next_rpc_delay", d, math.Inf(-1), MaxReplyDelay)
			r.NextRPCDelay = &d
		}
	case "project_preferences":
		r.ProjectPrefs, _, err = p.rawInner(t.Name)
	case "global_preferences":
		r.GlobalPrefs, _, err = p.rawInner(t.Name)
	case "code_sign_key":
		r.CodeSignKey, err = p.trimmed(t)
	case "code_sign_key_signature":
		r.CodeSignKeySignature, err = p.trimmed(t)
	case "app":
		n.app++
		if err = tooMany("app", n.app, MaxReplyItems); err != nil {
			return err
		}
		var a boinc.App
		if a, err = p.app(t, n.app); err == nil {
			r.Apps = append(r.Apps, a)
		}
	case "file_info":
		n.fileInfo++
		if err = tooMany("file_info", n.fileInfo, MaxReplyItems); err != nil {
			return err
		}
		var f boinc.FileInfo
		if f, err = p.fileInfo(t, n.fileInfo); err == nil {
			err = n.addFile(r, f)
		}
	case "app_version":
		n.appVersion++
		if err = tooMany("app_version", n.appVersion, MaxReplyItems); err != nil {
			return err
		}
		var av boinc.AppVersion
		if av, err = p.appVersion(t, n.appVersion); err == nil {
			r.AppVersions = append(r.AppVersions, av)
		}
	case "workunit":
		n.workunit++
		if err = tooMany("workunit", n.workunit, MaxReplyItems); err != nil {
			return err
		}
		var wu boinc.Workunit
		if wu, err = p.workunit(t, n.workunit); err == nil {
			r.Workunits = append(r.Workunits, wu)
		}
	case "result":
		n.result++
		if err = tooMany("result", n.result, MaxReplyItems); err != nil {
			return err
		}
		var res boinc.Result
		if res, err = p.result(t, n.result); err == nil {
			r.Results = append(r.Results, res)
		}
	case "project_files":
		err = p.children(t.Name, func(c xml.StartElement) error {
			if c.Name.Local != "file_ref" {
				return p.skip(c.Name)
			}
			n.projectFile++
			if err := tooMany("project_files file_ref", n.projectFile, MaxReplyItems); err != nil {
				return err
			}
			ref, err := p.fileRef(c)
			if err != nil {
				return fmt.Errorf("project_files file_ref #%d: %w", n.projectFile, err)
			}
			r.ProjectFiles = append(r.ProjectFiles, ref)
			return nil
		})
	case "result_ack":
		r.ResultAcks, err = p.appendName(r.ResultAcks, t)
	case "result_abort":
		r.ResultAborts, err = p.appendName(r.ResultAborts, t)
	case "result_abort_if_not_started":
		r.ResultAbortsIfNotStarted, err = p.appendName(r.ResultAbortsIfNotStarted, t)
	case "delete_file_info":
		var s string
		if s, err = p.trimmed(t); err == nil && s != "" {
			if err = boinc.ValidateFileName(s, false); err != nil {
				return fmt.Errorf("delete_file_info: %w", err)
			}
			if err = tooMany("delete_file_info", len(r.DeleteFileInfos)+1, MaxReplyItems); err == nil {
				r.DeleteFileInfos = append(r.DeleteFileInfos, s)
			}
		}
	case "message":
		// Past the limit messages are skipped, not fatal: they change no
		// state.
		if len(r.Messages) >= MaxReplyMessages {
			return p.skip(t.Name)
		}
		var m Message
		if m, err = p.message(t); err == nil {
			r.Messages = append(r.Messages, m)
		}
	case "gui_urls":
		var s string
		if s, err = p.opaqueText(t); err == nil {
			r.GUIURLs, r.HasGUIURLs = parseGUIURLs(s), true
		}
	case "message_ack":
		r.MessageAck, err = p.bool(t)
	case "trickle_down":
		var body string
		if body, err = p.opaqueText(t); err == nil {
			r.addTrickleDown(body)
		}
	case "trickle_up_urls":
		r.TrickleUpURLs, r.RefusedTrickleUpURLs, err = p.trickleUpURLs(t)
	case "project_is_down":
		r.ProjectIsDown, err = p.bool(t)
	case "ended":
		r.Ended, err = p.bool(t)
	case "dont_use_dcf":
		r.DontUseDCF, err = p.bool(t)
	case "send_full_workload":
		r.SendFullWorkload, err = p.bool(t)
	case "non_cpu_intensive":
		r.NonCPUIntensive, err = p.bool(t)
	case "no_rsc_apps":
		var s string
		if s, err = p.trimmed(t); err == nil && s != "" {
			r.NoRscApps = addUnique(r.NoRscApps, s)
		}
	case "rss_feeds":
		if r.RSSFeeds, err = p.rssFeeds(t); err == nil {
			r.HasRSSFeeds = true
		}
	case "no_cpu_apps", "no_cuda_apps", "no_ati_apps":
		var b bool
		if b, err = p.bool(t); err == nil && b {
			r.NoRscApps = addUnique(r.NoRscApps, deprecatedNoApps[t.Name.Local])
		}
	default:
		err = p.skip(t.Name)
	}
	return err
}

var deprecatedNoApps = map[string]string{
	"no_cpu_apps":  "CPU",
	"no_cuda_apps": "NVIDIA",
	"no_ati_apps":  "ATI",
}

func addUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// appendName reads <name> from a result_ack-like element.
func (p *rparser) appendName(list []string, t xml.StartElement) ([]string, error) {
	var name string
	err := p.children(t.Name, func(c xml.StartElement) error {
		if c.Name.Local != "name" {
			return p.skip(c.Name)
		}
		var err error
		name, err = p.trimmed(c)
		return err
	})
	if err != nil {
		return list, fmt.Errorf("%s: %w", t.Name.Local, err)
	}
	if name == "" {
		return list, fmt.Errorf("%s: no <name>", t.Name.Local)
	}
	if err := tooMany(t.Name.Local, len(list)+1, MaxReplyItems); err != nil {
		return list, err
	}
	return append(list, name), nil
}

func (p *rparser) message(t xml.StartElement) (Message, error) {
	m := Message{}
	for _, a := range t.Attr {
		if a.Name.Local == "priority" {
			m.Priority = a.Value
		}
	}
	text, err := p.opaqueText(t)
	if err != nil {
		return m, fmt.Errorf("message: %w", err)
	}
	m.Text = strings.TrimSpace(text)
	return m, nil
}

// opaqueText returns the content of an element named in opaqueElements as
// it was written: markup in it is kept (escapeOpaque made it text), while
// a body of plain text has its entities decoded.
func (p *rparser) opaqueText(t xml.StartElement) (string, error) {
	raw, nested, err := p.rawInner(t.Name)
	if err != nil || nested {
		return raw, err
	}
	return unescapeText(raw), nil
}

// unescapeText decodes entities and CDATA of element content that has no
// child elements, by running it through the XML decoder.
func unescapeText(raw string) string {
	if !strings.ContainsAny(raw, "&<") {
		return raw
	}
	d := xml.NewDecoder(strings.NewReader(raw))
	d.Entity = xml.HTMLEntity
	d.Strict = false
	var b strings.Builder
	for {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		if cd, ok := tok.(xml.CharData); ok {
			b.Write(cd)
		}
	}
	return b.String()
}

func itemErr(kind string, idx int, name string, err error) error {
	if name != "" {
		return fmt.Errorf("%s #%d %q: %w", kind, idx, name, err)
	}
	return fmt.Errorf("%s #%d: %w", kind, idx, err)
}

func (p *rparser) app(t xml.StartElement, idx int) (boinc.App, error) {
	var a boinc.App
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "name":
			a.Name, err = p.trimmed(c)
		case "user_friendly_name":
			a.UserFriendlyName, err = p.trimmed(c)
		case "non_cpu_intensive":
			a.NonCPUIntensive, err = p.bool(c)
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err == nil {
		err = checkName(a.Name, false)
	}
	if err != nil {
		return a, itemErr("app", idx, a.Name, err)
	}
	return a, nil
}

// maxTrickleUpURLs bounds <trickle_up_urls>: every trickle-up is posted
// to each, so a long list would make each one a flood.
const maxTrickleUpURLs = 8

// trickleUpURLs reads <trickle_up_urls> (parse_trickle_up_urls): <url>
// elements, duplicates dropped; a URL that is not http or https, or one
// past maxTrickleUpURLs, is left out and named in refused.
func (p *rparser) trickleUpURLs(t xml.StartElement) (urls, refused []string, err error) {
	err = p.children(t.Name, func(c xml.StartElement) error {
		if c.Name.Local != "url" {
			return p.skip(c.Name)
		}
		s, err := p.trimmed(c)
		if err != nil || s == "" || slices.Contains(urls, s) {
			return err
		}
		switch cerr := checkTransferURL("trickle_up_urls url", s); {
		case cerr != nil:
			refused = append(refused, cerr.Error())
		case len(urls) == maxTrickleUpURLs:
			refused = append(refused, fmt.Sprintf("trickle_up_urls url %q: more than %d URLs", s, maxTrickleUpURLs))
		default:
			urls = append(urls, s)
		}
		return nil
	})
	if len(refused) > MaxReplyMessages {
		refused = refused[:MaxReplyMessages]
	}
	return urls, refused, err
}

func (p *rparser) fileInfo(t xml.StartElement, idx int) (boinc.FileInfo, error) {
	var f boinc.FileInfo
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		var s string
		switch c.Name.Local {
		case "name":
			f.Name, err = p.trimmed(c)
		case "url":
			if s, err = p.trimmed(c); err == nil && s != "" {
				if err = checkTransferURL("url", s); err != nil {
					return err
				}
				// The C++ client tells upload URLs by this substring.
				if strings.Contains(s, "file_upload_handler") {
					f.UploadURLs = append(f.UploadURLs, s)
				} else {
					f.DownloadURLs = append(f.DownloadURLs, s)
				}
			}
		case "download_url":
			if s, err = p.trimmed(c); err == nil && s != "" {
				if err = checkTransferURL("download_url", s); err != nil {
					return err
				}
				f.DownloadURLs = append(f.DownloadURLs, s)
			}
		case "upload_url":
			if s, err = p.trimmed(c); err == nil && s != "" {
				if err = checkTransferURL("upload_url", s); err != nil {
					return err
				}
				f.UploadURLs = append(f.UploadURLs, s)
			}
		case "gzipped_url":
			// FILE_INFO::parse: the .gz URLs stage_file --gzip adds
			// beside <url>; the C++ client downloads only these when
			// any is given, boincd tries them first (DownloadSpec).
			if s, err = p.trimmed(c); err == nil && s != "" {
				if err = checkTransferURL("gzipped_url", s); err != nil {
					return err
				}
				f.GzippedURLs = append(f.GzippedURLs, s)
			}
		case "md5_cksum":
			f.MD5, err = p.trimmed(c)
		case "nbytes":
			f.NBytes, err = p.float(c)
		case "gzipped_nbytes":
			f.GzippedNBytes, err = p.float(c)
		case "max_nbytes":
			f.MaxNBytes, err = p.float(c)
		case "executable":
			f.Executable, err = p.bool(c)
		case "sticky":
			f.Sticky, err = p.bool(c)
		case "file_signature":
			f.FileSignature, err = p.trimmed(c)
		case "xml_signature":
			f.XMLSignature, err = p.trimmed(c)
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err == nil {
		err = checkName(f.Name, false)
	}
	if err == nil && (f.NBytes < 0 || f.MaxNBytes < 0 || f.GzippedNBytes < 0) {
		err = fmt.Errorf("negative size (<nbytes> %g, <max_nbytes> %g, <gzipped_nbytes> %g)", f.NBytes, f.MaxNBytes, f.GzippedNBytes)
	}
	if err == nil {
		err = checkRange("nbytes", f.NBytes, 0, MaxFileBytes)
	}
	if err == nil {
		err = checkRange("max_nbytes", f.MaxNBytes, 0, MaxFileBytes)
	}
	if err == nil {
		err = checkRange("gzipped_nbytes", f.GzippedNBytes, 0, MaxFileBytes)
	}
	if err != nil {
		return f, itemErr("file_info", idx, f.Name, err)
	}
	return f, nil
}

func checkName(name string, allowSubdir bool) error {
	if name == "" {
		return errors.New("no <name>")
	}
	return boinc.ValidateFileName(name, allowSubdir)
}

func (p *rparser) fileRef(t xml.StartElement) (boinc.FileRef, error) {
	var r boinc.FileRef
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "file_name":
			r.FileName, err = p.trimmed(c)
		case "open_name":
			r.OpenName, err = p.trimmed(c)
		case "main_program":
			r.MainProgram, err = p.bool(c)
		case "copy_file":
			r.CopyFile, err = p.bool(c)
		case "optional":
			r.Optional, err = p.bool(c)
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err != nil {
		return r, err
	}
	if r.FileName == "" {
		return r, errors.New("file_ref: no <file_name>")
	}
	if err := boinc.ValidateFileName(r.FileName, false); err != nil {
		return r, fmt.Errorf("file_ref: %w", err)
	}
	if r.OpenName != "" {
		if err := boinc.ValidateFileName(r.OpenName, true); err != nil {
			return r, fmt.Errorf("file_ref open_name: %w", err)
		}
	}
	return r, nil
}

func (p *rparser) appVersion(t xml.StartElement, idx int) (boinc.AppVersion, error) {
	var av boinc.AppVersion
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "app_name":
			av.AppName, err = p.trimmed(c)
		case "version_num":
			av.VersionNum, err = p.int(c)
		case "platform":
			av.Platform, err = p.trimmed(c)
		case "plan_class":
			av.PlanClass, err = p.trimmed(c)
		case "api_version":
			av.APIVersion, err = p.trimmed(c)
		case "avg_ncpus":
			av.AvgNCPUs, err = p.float(c)
		case "flops":
			av.Flops, err = p.float(c)
		case "cmdline":
			av.Cmdline, err = p.trimmed(c)
		case "file_prefix":
			av.FilePrefix, err = p.trimmed(c)
		case "coproc":
			var cu boinc.CoprocUsage
			if cu, err = p.coproc(c); err == nil && cu.Type != "" {
				av.Coproc = &cu
			}
		case "file_ref":
			var r boinc.FileRef
			if r, err = p.fileRef(c); err == nil {
				av.FileRefs = append(av.FileRefs, r)
			}
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err == nil && av.AppName == "" {
		err = errors.New("no <app_name>")
	}
	if err == nil {
		err = boinc.ValidateFileName(av.AppName, false)
	}
	if err == nil && av.AvgNCPUs < 0 {
		err = errors.New("negative avg_ncpus")
	}
	if err == nil {
		err = checkRange("avg_ncpus", av.AvgNCPUs, 0, 1<<16)
	}
	if err == nil && av.Flops != 0 {
		err = checkRange("flops", av.Flops, MinFlops, MaxFlops)
	}
	if err == nil && av.Coproc != nil {
		err = checkRange("coproc count", av.Coproc.Count, 0, 1<<10)
	}
	if err != nil {
		return av, itemErr("app_version", idx, av.AppName, err)
	}
	if av.AvgNCPUs == 0 {
		av.AvgNCPUs = 1
	}
	// An empty <platform> stays empty: it means the client's primary
	// platform, which the daemon knows (handle_scheduler_reply).
	return av, nil
}

func (p *rparser) coproc(t xml.StartElement) (boinc.CoprocUsage, error) {
	var cu boinc.CoprocUsage
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "type":
			cu.Type, err = p.trimmed(c)
		case "count":
			cu.Count, err = p.float(c)
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err != nil {
		return cu, fmt.Errorf("coproc: %w", err)
	}
	// Servers answer clients older than 7.0 with the pre-rename GPU type.
	if cu.Type == "CUDA" {
		cu.Type = "NVIDIA"
	}
	return cu, nil
}

func (p *rparser) workunit(t xml.StartElement, idx int) (boinc.Workunit, error) {
	var wu boinc.Workunit
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "name":
			wu.Name, err = p.trimmed(c)
		case "app_name":
			wu.AppName, err = p.trimmed(c)
		case "version_num":
			wu.VersionNum, err = p.int(c)
		case "command_line":
			wu.CommandLine, err = p.trimmed(c)
		case "rsc_fpops_est":
			wu.RscFpopsEst, err = p.float(c)
		case "rsc_fpops_bound":
			wu.RscFpopsBound, err = p.float(c)
		case "rsc_memory_bound":
			wu.RscMemoryBound, err = p.float(c)
		case "rsc_disk_bound":
			wu.RscDiskBound, err = p.float(c)
		case "file_ref":
			var r boinc.FileRef
			if r, err = p.fileRef(c); err == nil {
				wu.InputFiles = append(wu.InputFiles, r)
			}
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err == nil {
		err = checkName(wu.Name, false)
	}
	if err == nil && wu.AppName == "" {
		err = errors.New("no <app_name>")
	}
	if err == nil {
		err = boinc.ValidateFileName(wu.AppName, false)
	}
	if err == nil {
		err = checkRange("rsc_fpops_est", wu.RscFpopsEst, 0, MaxFpops)
	}
	if err == nil {
		err = checkRange("rsc_fpops_bound", wu.RscFpopsBound, 0, MaxFpops)
	}
	if err == nil {
		err = checkRange("rsc_memory_bound", wu.RscMemoryBound, 0, MaxFileBytes)
	}
	if err == nil {
		err = checkRange("rsc_disk_bound", wu.RscDiskBound, 0, MaxFileBytes)
	}
	if err != nil {
		return wu, itemErr("workunit", idx, wu.Name, err)
	}
	wu.ApplyDefaults()
	return wu, nil
}

func (p *rparser) result(t xml.StartElement, idx int) (boinc.Result, error) {
	var r boinc.Result
	err := p.children(t.Name, func(c xml.StartElement) error {
		var err error
		switch c.Name.Local {
		case "name":
			r.Name, err = p.trimmed(c)
		case "wu_name":
			r.WUName, err = p.trimmed(c)
		case "report_deadline":
			var f float64
			if f, err = p.float(c); err == nil {
				r.ReportDeadline = unixTime(f)
			}
		case "platform":
			r.Platform, err = p.trimmed(c)
		case "version_num":
			r.VersionNum, err = p.int(c)
		case "plan_class":
			r.PlanClass, err = p.trimmed(c)
		case "report_immediately":
			r.ReportImmediately, err = p.bool(c)
		case "file_ref":
			var fr boinc.FileRef
			if fr, err = p.fileRef(c); err == nil {
				r.OutputFiles = append(r.OutputFiles, fr)
			}
		default:
			err = p.skip(c.Name)
		}
		return err
	})
	if err == nil {
		err = checkName(r.Name, false)
	}
	if err == nil && r.WUName == "" {
		err = errors.New("no <wu_name>")
	}
	if err == nil {
		err = boinc.ValidateFileName(r.WUName, false)
	}
	if err != nil {
		return r, itemErr("result", idx, r.Name, err)
	}
	return r, nil
}

// maxUnixTime is 9999-12-31T23:59:59Z.
const maxUnixTime = 253402300799

// unixTime converts Unix seconds (possibly fractional) to a UTC time.
func unixTime(f float64) time.Time {
	if f <= 0 {
		return time.Time{}
	}
	// Far beyond any deadline: clamp to the last second of year 9999,
	// so that the time still marshals as RFC 3339 (JSON state, logs).
	if f > maxUnixTime {
		f = maxUnixTime
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC()
}

// addFile appends a file_info, refusing a name already given in this reply
// with other contents: which copy the client kept would decide what runs.
func (n *counters) addFile(r *SchedulerReply, f boinc.FileInfo) error {
	if n.files == nil {
		n.files = map[string]int{}
	}
	if i, ok := n.files[f.Name]; ok {
		old := &r.FileInfos[i]
		if old.MD5 != f.MD5 || old.NBytes != f.NBytes || old.Executable != f.Executable || old.FileSignature != f.FileSignature {
			return itemErr("file_info", n.fileInfo, f.Name,
				fmt.Errorf("given twice with different contents (md5 %q then %q, nbytes %g then %g)", old.MD5, f.MD5, old.NBytes, f.NBytes))
		}
		return nil
	}
	n.files[f.Name] = len(r.FileInfos)
	r.FileInfos = append(r.FileInfos, f)
	return nil
}

var hostIDOpen, hostIDClose = []byte("<hostid>"), []byte("</hostid>")

// SalvageHostID returns the <hostid> of a scheduler reply that was refused
// as a whole, or 0. The server created the host record and committed the
// jobs of that reply before sending it; a next request without the id
// makes it look the host up by CPID and, as the request lists no results
// in progress, mark every job it has for the host as a client error
// (sched/handle_request.cpp authenticate_user). Keeping just the id spares
// the volunteer that.
func SalvageHostID(raw []byte) int64 {
	start := findStartTag(raw)
	if start < 0 {
		return 0
	}
	body := raw[start:]
	i := bytes.Index(body, hostIDOpen)
	if i < 0 {
		return 0
	}
	body = body[i+len(hostIDOpen):]
	j := bytes.Index(body, hostIDClose)
	if j < 0 || j > 32 {
		return 0
	}
	id, err := strconv.ParseInt(strings.TrimSpace(string(body[:j])), 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}
