package client

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
)

// xmlBool accepts BOINC's two boolean forms: <flag/> (true) and
// <flag>0|1</flag>. An absent element leaves it false.
type xmlBool bool

func (b *xmlBool) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return fmt.Errorf("<%s>: %w", start.Name.Local, err)
	}
	s = strings.TrimSpace(s)
	switch strings.ToLower(s) {
	case "", "1", "true", "yes":
		*b = true
		return nil
	case "0", "false", "no":
		*b = false
		return nil
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("<%s>: %q is not a boolean", start.Name.Local, s)
	}
	*b = n != 0
	return nil
}

// xmlInt parses like C's strtol-based parse_int but refuses trailing
// garbage; a float is truncated, since some writers print counts as %f.
type xmlInt int64

func (n *xmlInt) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return fmt.Errorf("<%s>: %w", start.Name.Local, err)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		*n = 0
		return nil
	}
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		*n = xmlInt(v)
		return nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.Abs(f) > math.MaxInt64/2 {
		return fmt.Errorf("<%s>: %q is not an integer", start.Name.Local, s)
	}
	*n = xmlInt(f)
	return nil
}

// xmlFloat is a number that names its element when it is not one.
type xmlFloat float64

func (f *xmlFloat) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return fmt.Errorf("<%s>: %w", start.Name.Local, err)
	}
	s = strings.TrimSpace(s)
	if s == "" {
		*f = 0
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("<%s>: %q is not a number", start.Name.Local, s)
	}
	*f = xmlFloat(v)
	return nil
}

// unixTime turns BOINC's Unix seconds into a time; 0 (never) and
// nonsense become the zero time.
func unixTime(f xmlFloat) time.Time {
	v := float64(f)
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) || v > 1e11 {
		return time.Time{}
	}
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3)
}

// seconds turns BOINC's float seconds into a Duration, rounded to the
// microsecond BOINC prints and clamped to what a Duration holds.
func seconds(f xmlFloat) time.Duration {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return 0
	case v > math.MaxInt64/1e9:
		return time.Duration(math.MaxInt64)
	case v < math.MinInt64/1e9:
		return time.Duration(math.MinInt64)
	}
	return time.Duration(math.Round(v*1e6)) * time.Microsecond
}

func trim(s string) string { return strings.TrimSpace(s) }

// newDecoder is lenient the way BOINC's own parser is: bytes that are not
// UTF-8, control bytes and references to them (xml_escape writes a control
// byte in a name or message as "&#7;") become U+FFFD instead of failing
// the reply, and HTML entities and stray ampersands are tolerated.
func newDecoder(b []byte) *xml.Decoder {
	d := xml.NewDecoder(bytes.NewReader(sanitizeXML(bytes.ToValidUTF8(b, []byte("\uFFFD")))))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	return d
}

// sanitizeXML replaces what encoding/xml refuses in any mode: control
// bytes other than tab, CR and LF, and character references to code
// points XML does not allow. b must be UTF-8.
func sanitizeXML(b []byte) []byte {
	clean := true
	for i, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == '&' && i+1 < len(b) && b[i+1] == '#' {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			out = append(out, "\uFFFD"...)
			continue
		}
		if c == '&' && i+1 < len(b) && b[i+1] == '#' {
			if end := bytes.IndexByte(b[i:min(len(b), i+16)], ';'); end > 0 {
				if r, ok := charRef(string(b[i+2 : i+end])); ok && !xmlChar(r) {
					out = append(out, "\uFFFD"...)
					i += end
					continue
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// charRef reads the number of a character reference ("65" or "x41").
func charRef(s string) (rune, bool) {
	base := 10
	if strings.HasPrefix(s, "x") {
		s, base = s[1:], 16
	}
	n, err := strconv.ParseUint(s, base, 32)
	if err != nil || s == "" || s[0] == '+' {
		return 0, false
	}
	return rune(n), true
}

// xmlChar is the XML 1.0 Char production.
func xmlChar(r rune) bool {
	return r == '\t' || r == '\n' || r == '\r' || r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// eachChild finds the first <container> element in body and calls fn for
// each direct child element; fn must consume the element (DecodeElement or
// Skip). A missing container is an error naming it.
func eachChild(body []byte, container string, fn func(d *xml.Decoder, se xml.StartElement) error) error {
	d := newDecoder(body)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("reply has no <%s>: %q", container, snippet(body))
		}
		if err != nil {
			return fmt.Errorf("looking for <%s>: %w", container, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != container {
			if err := d.Skip(); err != nil {
				return fmt.Errorf("looking for <%s>: %w", container, err)
			}
			continue
		}
		break
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("in <%s>: %w", container, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := fn(d, t); err != nil {
				return fmt.Errorf("in <%s>: %w", container, err)
			}
		case xml.EndElement:
			return nil
		}
	}
}

// decodeList decodes every <item> child of <container> with conv.
func decodeList[W any, T any](body []byte, container, item string, conv func(*W) T) ([]T, error) {
	var out []T
	err := eachChild(body, container, func(d *xml.Decoder, se xml.StartElement) error {
		if se.Name.Local != item {
			return d.Skip()
		}
		var w W
		if err := d.DecodeElement(&w, &se); err != nil {
			return fmt.Errorf("<%s> #%d: %w", item, len(out)+1, err)
		}
		out = append(out, conv(&w))
		return nil
	})
	return out, err
}

// decodeOne decodes the first <name> element of body.
func decodeOne[W any](body []byte, name string) (*W, error) {
	d := newDecoder(body)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("reply has no <%s>: %q", name, snippet(body))
		}
		if err != nil {
			return nil, fmt.Errorf("looking for <%s>: %w", name, err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if se.Name.Local != name {
			if err := d.Skip(); err != nil {
				return nil, fmt.Errorf("looking for <%s>: %w", name, err)
			}
			continue
		}
		var w W
		if err := d.DecodeElement(&w, &se); err != nil {
			return nil, fmt.Errorf("<%s>: %w", name, err)
		}
		return &w, nil
	}
}

type wireVersion struct {
	Major   xmlInt `xml:"major"`
	Minor   xmlInt `xml:"minor"`
	Release xmlInt `xml:"release"`
}

type wireNameValue struct {
	Name  string   `xml:"name"`
	Value xmlFloat `xml:"value"`
}

type wireProject struct {
	MasterURL      string `xml:"master_url"`
	ProjectName    string `xml:"project_name"`
	UserName       string `xml:"user_name"`
	TeamName       string `xml:"team_name"`
	HostVenue      string `xml:"host_venue"`
	CrossProjectID string `xml:"cross_project_id"`
	ExternalCPID   string `xml:"external_cpid"`

	UserID           xmlInt   `xml:"userid"`
	TeamID           xmlInt   `xml:"teamid"`
	HostID           xmlInt   `xml:"hostid"`
	RPCSeqno         xmlInt   `xml:"rpc_seqno"`
	UserTotalCredit  xmlFloat `xml:"user_total_credit"`
	UserExpavgCredit xmlFloat `xml:"user_expavg_credit"`
	UserCreateTime   xmlFloat `xml:"user_create_time"`
	HostTotalCredit  xmlFloat `xml:"host_total_credit"`
	HostExpavgCredit xmlFloat `xml:"host_expavg_credit"`
	HostCreateTime   xmlFloat `xml:"host_create_time"`

	NRPCFailures        xmlInt   `xml:"nrpc_failures"`
	MasterFetchFailures xmlInt   `xml:"master_fetch_failures"`
	MinRPCTime          xmlFloat `xml:"min_rpc_time"`
	NextRPCTime         xmlFloat `xml:"next_rpc_time"`
	LastRPCTime         xmlFloat `xml:"last_rpc_time"`
	ResourceShare       xmlFloat `xml:"resource_share"`
	DiskUsage           xmlFloat `xml:"disk_usage"`
	DCF                 xmlFloat `xml:"duration_correction_factor"`
	SchedRPCPending     xmlInt   `xml:"sched_rpc_pending"`
	NJobsSuccess        xmlInt   `xml:"njobs_success"`
	NJobsError          xmlInt   `xml:"njobs_error"`
	ElapsedTime         xmlFloat `xml:"elapsed_time"`
	SchedPriority       xmlFloat `xml:"sched_priority"`
	ProjectDir          string   `xml:"project_dir"`
	Venue               string   `xml:"venue"`
	DownloadBackoff     xmlFloat `xml:"download_backoff"`
	UploadBackoff       xmlFloat `xml:"upload_backoff"`

	AnonymousPlatform      xmlBool `xml:"anonymous_platform"`
	MasterURLFetchPending  xmlBool `xml:"master_url_fetch_pending"`
	TrickleUpPending       xmlBool `xml:"trickle_up_pending"`
	NonCPUIntensive        xmlBool `xml:"non_cpu_intensive"`
	SuspendedViaGUI        xmlBool `xml:"suspended_via_gui"`
	DontRequestMoreWork    xmlBool `xml:"dont_request_more_work"`
	DetachWhenDone         xmlBool `xml:"detach_when_done"`
	Ended                  xmlBool `xml:"ended"`
	AttachedViaAcctMgr     xmlBool `xml:"attached_via_acct_mgr"`
	SchedulerRPCInProgress xmlBool `xml:"scheduler_rpc_in_progress"`
	DontUseDCF             xmlBool `xml:"dont_use_dcf"`

	RscBackoffTime     []wireNameValue `xml:"rsc_backoff_time"`
	RscBackoffInterval []wireNameValue `xml:"rsc_backoff_interval"`
	NoRscAMS           []string        `xml:"no_rsc_ams"`
	NoRscApps          []string        `xml:"no_rsc_apps"`
	NoRscPref          []string        `xml:"no_rsc_pref"`
	NoRscConfig        []string        `xml:"no_rsc_config"`
}

func (w *wireProject) project() Project {
	p := Project{
		MasterURL:                trim(w.MasterURL),
		ProjectName:              trim(w.ProjectName),
		UserName:                 trim(w.UserName),
		TeamName:                 trim(w.TeamName),
		HostVenue:                trim(w.HostVenue),
		CrossProjectID:           trim(w.CrossProjectID),
		ExternalCPID:             trim(w.ExternalCPID),
		UserID:                   int64(w.UserID),
		TeamID:                   int64(w.TeamID),
		HostID:                   int64(w.HostID),
		RPCSeqno:                 int64(w.RPCSeqno),
		UserTotalCredit:          float64(w.UserTotalCredit),
		UserExpavgCredit:         float64(w.UserExpavgCredit),
		UserCreateTime:           unixTime(w.UserCreateTime),
		HostTotalCredit:          float64(w.HostTotalCredit),
		HostExpavgCredit:         float64(w.HostExpavgCredit),
		HostCreateTime:           unixTime(w.HostCreateTime),
		NRPCFailures:             int(w.NRPCFailures),
		MasterFetchFailures:      int(w.MasterFetchFailures),
		MinRPCTime:               unixTime(w.MinRPCTime),
		NextRPCTime:              unixTime(w.NextRPCTime),
		LastRPCTime:              unixTime(w.LastRPCTime),
		ResourceShare:            float64(w.ResourceShare),
		DiskUsage:                float64(w.DiskUsage),
		DurationCorrectionFactor: float64(w.DCF),
		SchedRPCPending:          int(w.SchedRPCPending),
		NJobsSuccess:             int(w.NJobsSuccess),
		NJobsError:               int(w.NJobsError),
		ElapsedTime:              seconds(w.ElapsedTime),
		SchedPriority:            float64(w.SchedPriority),
		ProjectDir:               trim(w.ProjectDir),
		Venue:                    trim(w.Venue),
		DownloadBackoff:          seconds(w.DownloadBackoff),
		UploadBackoff:            seconds(w.UploadBackoff),
		AnonymousPlatform:        bool(w.AnonymousPlatform),
		MasterURLFetchPending:    bool(w.MasterURLFetchPending),
		TrickleUpPending:         bool(w.TrickleUpPending),
		NonCPUIntensive:          bool(w.NonCPUIntensive),
		SuspendedViaGUI:          bool(w.SuspendedViaGUI),
		DontRequestMoreWork:      bool(w.DontRequestMoreWork),
		DetachWhenDone:           bool(w.DetachWhenDone),
		Ended:                    bool(w.Ended),
		AttachedViaAcctMgr:       bool(w.AttachedViaAcctMgr),
		SchedulerRPCInProgress:   bool(w.SchedulerRPCInProgress),
		DontUseDCF:               bool(w.DontUseDCF),
	}
	// Backoff times and intervals come as separate lists keyed by
	// resource name; merge them in first-seen order.
	idx := map[string]int{}
	at := func(name string) *RscBackoff {
		name = trim(name)
		i, ok := idx[name]
		if !ok {
			i = len(p.RscBackoffs)
			idx[name] = i
			p.RscBackoffs = append(p.RscBackoffs, RscBackoff{Resource: name})
		}
		return &p.RscBackoffs[i]
	}
	for _, nv := range w.RscBackoffTime {
		at(nv.Name).Until = unixTime(nv.Value)
	}
	for _, nv := range w.RscBackoffInterval {
		at(nv.Name).Interval = seconds(nv.Value)
	}
	for cause, list := range map[string][]string{"ams": w.NoRscAMS, "apps": w.NoRscApps, "pref": w.NoRscPref, "config": w.NoRscConfig} {
		for _, r := range list {
			if r = trim(r); r != "" {
				if p.NoRsc == nil {
					p.NoRsc = map[string][]string{}
				}
				p.NoRsc[cause] = append(p.NoRsc[cause], r)
			}
		}
	}
	return p
}

type wireActiveTask struct {
	ActiveTaskState   xmlInt   `xml:"active_task_state"`
	AppVersionNum     xmlInt   `xml:"app_version_num"`
	Slot              xmlInt   `xml:"slot"`
	PID               xmlInt   `xml:"pid"`
	SchedulerState    xmlInt   `xml:"scheduler_state"`
	CheckpointCPUTime xmlFloat `xml:"checkpoint_cpu_time"`
	FractionDone      xmlFloat `xml:"fraction_done"`
	CurrentCPUTime    xmlFloat `xml:"current_cpu_time"`
	ElapsedTime       xmlFloat `xml:"elapsed_time"`
	SwapSize          xmlFloat `xml:"swap_size"`
	WorkingSetSize    xmlFloat `xml:"working_set_size"`
	ProgressRate      xmlFloat `xml:"progress_rate"`
	TooLarge          xmlBool  `xml:"too_large"`
	NeedsShmem        xmlBool  `xml:"needs_shmem"`
}

type wireResult struct {
	Name                      string   `xml:"name"`
	WUName                    string   `xml:"wu_name"`
	Platform                  string   `xml:"platform"`
	VersionNum                xmlInt   `xml:"version_num"`
	PlanClass                 string   `xml:"plan_class"`
	ProjectURL                string   `xml:"project_url"`
	FinalCPUTime              xmlFloat `xml:"final_cpu_time"`
	FinalElapsedTime          xmlFloat `xml:"final_elapsed_time"`
	ExitStatus                xmlInt   `xml:"exit_status"`
	State                     xmlInt   `xml:"state"`
	ReportDeadline            xmlFloat `xml:"report_deadline"`
	ReceivedTime              xmlFloat `xml:"received_time"`
	CompletedTime             xmlFloat `xml:"completed_time"`
	EstimatedCPUTimeRemaining xmlFloat `xml:"estimated_cpu_time_remaining"`
	Resources                 string   `xml:"resources"`
	SchedulerWaitReason       string   `xml:"scheduler_wait_reason"`

	GotServerAck           xmlBool `xml:"got_server_ack"`
	ReadyToReport          xmlBool `xml:"ready_to_report"`
	SuspendedViaGUI        xmlBool `xml:"suspended_via_gui"`
	ProjectSuspendedViaGUI xmlBool `xml:"project_suspended_via_gui"`
	ReportImmediately      xmlBool `xml:"report_immediately"`
	EDFScheduled           xmlBool `xml:"edf_scheduled"`
	CoprocMissing          xmlBool `xml:"coproc_missing"`
	SchedulerWait          xmlBool `xml:"scheduler_wait"`
	NetworkWait            xmlBool `xml:"network_wait"`

	ActiveTask *wireActiveTask `xml:"active_task"`
}

func (w *wireResult) result() Result {
	r := Result{
		Name:                      trim(w.Name),
		WUName:                    trim(w.WUName),
		ProjectURL:                trim(w.ProjectURL),
		Platform:                  trim(w.Platform),
		VersionNum:                int(w.VersionNum),
		PlanClass:                 trim(w.PlanClass),
		State:                     boinc.ResultState(w.State),
		ExitStatus:                int(w.ExitStatus),
		ReportDeadline:            unixTime(w.ReportDeadline),
		ReceivedTime:              unixTime(w.ReceivedTime),
		CompletedTime:             unixTime(w.CompletedTime),
		EstimatedCPUTimeRemaining: seconds(w.EstimatedCPUTimeRemaining),
		FinalCPUTime:              seconds(w.FinalCPUTime),
		FinalElapsedTime:          seconds(w.FinalElapsedTime),
		Resources:                 trim(w.Resources),
		SchedulerWaitReason:       trim(w.SchedulerWaitReason),
		GotServerAck:              bool(w.GotServerAck),
		ReadyToReport:             bool(w.ReadyToReport),
		SuspendedViaGUI:           bool(w.SuspendedViaGUI),
		ProjectSuspendedViaGUI:    bool(w.ProjectSuspendedViaGUI),
		ReportImmediately:         bool(w.ReportImmediately),
		EDFScheduled:              bool(w.EDFScheduled),
		CoprocMissing:             bool(w.CoprocMissing),
		SchedulerWait:             bool(w.SchedulerWait),
		NetworkWait:               bool(w.NetworkWait),
		Slot:                      -1,
	}
	if a := w.ActiveTask; a != nil {
		r.HasActiveTask = true
		r.ActiveTaskState = boinc.ActiveTaskState(a.ActiveTaskState)
		r.SchedulerState = boinc.SchedulerState(a.SchedulerState)
		r.AppVersionNum = int(a.AppVersionNum)
		r.Slot = int(a.Slot)
		r.PID = int(a.PID)
		r.FractionDone = float64(a.FractionDone)
		r.CheckpointCPUTime = seconds(a.CheckpointCPUTime)
		r.CurrentCPUTime = seconds(a.CurrentCPUTime)
		r.ElapsedTime = seconds(a.ElapsedTime)
		r.SwapSize = float64(a.SwapSize)
		r.WorkingSetSize = float64(a.WorkingSetSize)
		r.ProgressRate = float64(a.ProgressRate)
		r.TooLarge = bool(a.TooLarge)
		r.NeedsShmem = bool(a.NeedsShmem)
	}
	return r
}

type wireCCStatus struct {
	NetworkStatus        xmlInt   `xml:"network_status"`
	AMSPasswordError     xmlBool  `xml:"ams_password_error"`
	TaskSuspendReason    xmlInt   `xml:"task_suspend_reason"`
	TaskMode             xmlInt   `xml:"task_mode"`
	TaskModePerm         xmlInt   `xml:"task_mode_perm"`
	TaskModeDelay        xmlFloat `xml:"task_mode_delay"`
	GPUSuspendReason     xmlInt   `xml:"gpu_suspend_reason"`
	GPUMode              xmlInt   `xml:"gpu_mode"`
	GPUModePerm          xmlInt   `xml:"gpu_mode_perm"`
	GPUModeDelay         xmlFloat `xml:"gpu_mode_delay"`
	NetworkSuspendReason xmlInt   `xml:"network_suspend_reason"`
	NetworkMode          xmlInt   `xml:"network_mode"`
	NetworkModePerm      xmlInt   `xml:"network_mode_perm"`
	NetworkModeDelay     xmlFloat `xml:"network_mode_delay"`
	DisallowAttach       xmlBool  `xml:"disallow_attach"`
	SimpleGUIOnly        xmlBool  `xml:"simple_gui_only"`
	MaxEventLogLines     xmlInt   `xml:"max_event_log_lines"`
	ManagerMustQuit      xmlBool  `xml:"manager_must_quit"`
	Health               []struct {
		Name    string   `xml:"name"`
		Message string   `xml:"message"`
		Since   xmlFloat `xml:"since"`
	} `xml:"boincd_health_warning"`
}

func (w *wireCCStatus) status() *CCStatus {
	var health []HealthWarning
	for _, h := range w.Health {
		health = append(health, HealthWarning{Name: h.Name, Message: h.Message, Since: unixTime(h.Since)})
	}
	return &CCStatus{
		Health:               health,
		NetworkStatus:        NetworkStatus(w.NetworkStatus),
		AMSPasswordError:     bool(w.AMSPasswordError),
		TaskSuspendReason:    SuspendReason(w.TaskSuspendReason),
		TaskMode:             boinc.RunMode(w.TaskMode),
		TaskModePerm:         boinc.RunMode(w.TaskModePerm),
		TaskModeDelay:        seconds(w.TaskModeDelay),
		GPUSuspendReason:     SuspendReason(w.GPUSuspendReason),
		GPUMode:              boinc.RunMode(w.GPUMode),
		GPUModePerm:          boinc.RunMode(w.GPUModePerm),
		GPUModeDelay:         seconds(w.GPUModeDelay),
		NetworkSuspendReason: SuspendReason(w.NetworkSuspendReason),
		NetworkMode:          boinc.RunMode(w.NetworkMode),
		NetworkModePerm:      boinc.RunMode(w.NetworkModePerm),
		NetworkModeDelay:     seconds(w.NetworkModeDelay),
		DisallowAttach:       bool(w.DisallowAttach),
		SimpleGUIOnly:        bool(w.SimpleGUIOnly),
		MaxEventLogLines:     int(w.MaxEventLogLines),
		ManagerMustQuit:      bool(w.ManagerMustQuit),
	}
}

type wireMessage struct {
	Project string   `xml:"project"`
	Pri     xmlInt   `xml:"pri"`
	Seqno   xmlInt   `xml:"seqno"`
	Body    string   `xml:"body"`
	Time    xmlFloat `xml:"time"`
}

func (w *wireMessage) message() Message {
	return Message{
		Project: trim(w.Project),
		Pri:     int(w.Pri),
		Seqno:   int(w.Seqno),
		Body:    trim(w.Body),
		Time:    unixTime(w.Time),
	}
}

type wirePersXfer struct {
	NumRetries       xmlInt   `xml:"num_retries"`
	FirstRequestTime xmlFloat `xml:"first_request_time"`
	NextRequestTime  xmlFloat `xml:"next_request_time"`
	TimeSoFar        xmlFloat `xml:"time_so_far"`
	LastBytesXferred xmlFloat `xml:"last_bytes_xferred"`
	IsUpload         xmlBool  `xml:"is_upload"`
}

type wireXfer struct {
	BytesXferred xmlFloat `xml:"bytes_xferred"`
	XferSpeed    xmlFloat `xml:"xfer_speed"`
	URL          string   `xml:"url"`
}

type wireFileTransfer struct {
	ProjectURL     string        `xml:"project_url"`
	ProjectName    string        `xml:"project_name"`
	Name           string        `xml:"name"`
	NBytes         xmlFloat      `xml:"nbytes"`
	MaxNBytes      xmlFloat      `xml:"max_nbytes"`
	Status         xmlInt        `xml:"status"`
	IsUpload       xmlBool       `xml:"is_upload"`
	ProjectBackoff xmlFloat      `xml:"project_backoff"`
	Pers           *wirePersXfer `xml:"persistent_file_xfer"`
	Xfer           *wireXfer     `xml:"file_xfer"`
}

func (w *wireFileTransfer) transfer() FileTransfer {
	ft := FileTransfer{
		ProjectURL:     trim(w.ProjectURL),
		ProjectName:    trim(w.ProjectName),
		Name:           trim(w.Name),
		NBytes:         float64(w.NBytes),
		MaxNBytes:      float64(w.MaxNBytes),
		Status:         int(w.Status),
		IsUpload:       bool(w.IsUpload),
		ProjectBackoff: seconds(w.ProjectBackoff),
	}
	if p := w.Pers; p != nil {
		ft.IsUpload = ft.IsUpload || bool(p.IsUpload)
		ft.NumRetries = int(p.NumRetries)
		ft.FirstRequest = unixTime(p.FirstRequestTime)
		ft.NextRequestTime = unixTime(p.NextRequestTime)
		ft.TimeSoFar = seconds(p.TimeSoFar)
		ft.BytesXferred = float64(p.LastBytesXferred)
	}
	if x := w.Xfer; x != nil {
		ft.Active = true
		ft.BytesXferred = float64(x.BytesXferred)
		ft.XferSpeed = float64(x.XferSpeed)
		ft.URL = trim(x.URL)
	}
	return ft
}

// wireCoprocs keeps each <coproc_TYPE> child of <coprocs>.
type wireCoprocs struct{ list []Coproc }

func (c *wireCoprocs) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	for {
		tok, err := d.Token()
		if err != nil {
			return fmt.Errorf("<coprocs>: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			var w struct {
				Type      string   `xml:"type"`
				Count     xmlInt   `xml:"count"`
				Name      string   `xml:"name"`
				PeakFlops xmlFloat `xml:"peak_flops"`
			}
			if err := d.DecodeElement(&w, &t); err != nil {
				return fmt.Errorf("<coprocs>: %w", err)
			}
			typ := trim(w.Type)
			if typ == "" {
				typ = coprocType(t.Name.Local)
			}
			c.list = append(c.list, Coproc{Type: typ, Count: int(w.Count), Name: trim(w.Name), PeakFlops: float64(w.PeakFlops)})
		case xml.EndElement:
			return nil
		}
	}
}

// coprocType maps the element name to the processor type name of
// lib/coproc.cpp (coproc_cuda is NVIDIA, coproc_ati is ATI).
func coprocType(elem string) string {
	s := strings.TrimPrefix(elem, "coproc_")
	switch s {
	case "cuda":
		return "NVIDIA"
	case "ati":
		return "ATI"
	}
	return s
}

type wireHostInfo struct {
	Timezone       xmlInt      `xml:"timezone"`
	DomainName     string      `xml:"domain_name"`
	IPAddr         string      `xml:"ip_addr"`
	HostCPID       string      `xml:"host_cpid"`
	PNCPUs         xmlInt      `xml:"p_ncpus"`
	PVendor        string      `xml:"p_vendor"`
	PModel         string      `xml:"p_model"`
	PFeatures      string      `xml:"p_features"`
	PFpops         xmlFloat    `xml:"p_fpops"`
	PIops          xmlFloat    `xml:"p_iops"`
	PMembw         xmlFloat    `xml:"p_membw"`
	PCalculated    xmlFloat    `xml:"p_calculated"`
	MNBytes        xmlFloat    `xml:"m_nbytes"`
	MCache         xmlFloat    `xml:"m_cache"`
	MSwap          xmlFloat    `xml:"m_swap"`
	DTotal         xmlFloat    `xml:"d_total"`
	DFree          xmlFloat    `xml:"d_free"`
	OSName         string      `xml:"os_name"`
	OSVersion      string      `xml:"os_version"`
	NUsableCoprocs xmlInt      `xml:"n_usable_coprocs"`
	Coprocs        wireCoprocs `xml:"coprocs"`
	DockerVersion  string      `xml:"docker_version"`
	DockerType     xmlInt      `xml:"docker_type"`
}

func (w *wireHostInfo) hostInfo() HostInfo {
	return HostInfo{
		Timezone:       int(w.Timezone),
		DomainName:     trim(w.DomainName),
		IPAddr:         trim(w.IPAddr),
		HostCPID:       trim(w.HostCPID),
		PNCPUs:         int(w.PNCPUs),
		PVendor:        trim(w.PVendor),
		PModel:         trim(w.PModel),
		PFeatures:      trim(w.PFeatures),
		PFpops:         float64(w.PFpops),
		PIops:          float64(w.PIops),
		PMembw:         float64(w.PMembw),
		PCalculated:    unixTime(w.PCalculated),
		MNBytes:        float64(w.MNBytes),
		MCache:         float64(w.MCache),
		MSwap:          float64(w.MSwap),
		DTotal:         float64(w.DTotal),
		DFree:          float64(w.DFree),
		OSName:         trim(w.OSName),
		OSVersion:      trim(w.OSVersion),
		NUsableCoprocs: int(w.NUsableCoprocs),
		Coprocs:        w.Coprocs.list,
		DockerVersion:  trim(w.DockerVersion),
		DockerType:     boinc.DockerType(w.DockerType),
	}
}

type wireApp struct {
	Name             string  `xml:"name"`
	UserFriendlyName string  `xml:"user_friendly_name"`
	NonCPUIntensive  xmlBool `xml:"non_cpu_intensive"`
}

type wireAppVersion struct {
	AppName    string   `xml:"app_name"`
	VersionNum xmlInt   `xml:"version_num"`
	Platform   string   `xml:"platform"`
	PlanClass  string   `xml:"plan_class"`
	AvgNCPUs   xmlFloat `xml:"avg_ncpus"`
	Flops      xmlFloat `xml:"flops"`
	FileRefs   []struct {
		FileName    string  `xml:"file_name"`
		MainProgram xmlBool `xml:"main_program"`
	} `xml:"file_ref"`
}

type wireWorkunit struct {
	Name           string   `xml:"name"`
	AppName        string   `xml:"app_name"`
	VersionNum     xmlInt   `xml:"version_num"`
	RscFpopsEst    xmlFloat `xml:"rsc_fpops_est"`
	RscFpopsBound  xmlFloat `xml:"rsc_fpops_bound"`
	RscMemoryBound xmlFloat `xml:"rsc_memory_bound"`
	RscDiskBound   xmlFloat `xml:"rsc_disk_bound"`
	CommandLine    string   `xml:"command_line"`
}

type wireTimeStats struct {
	OnFrac          xmlFloat `xml:"on_frac"`
	ConnectedFrac   xmlFloat `xml:"connected_frac"`
	ActiveFrac      xmlFloat `xml:"active_frac"`
	GPUActiveFrac   xmlFloat `xml:"gpu_active_frac"`
	ClientStartTime xmlFloat `xml:"client_start_time"`
	Now             xmlFloat `xml:"now"`
}

type wireGlobalPrefs struct {
	WorkBufMinDays        xmlFloat `xml:"work_buf_min_days"`
	WorkBufAdditionalDays xmlFloat `xml:"work_buf_additional_days"`
	MaxNCPUsPct           xmlFloat `xml:"max_ncpus_pct"`
	CPUUsageLimit         xmlFloat `xml:"cpu_usage_limit"`
	SuspendCPUUsage       xmlFloat `xml:"suspend_cpu_usage"`
	RunIfUserActive       xmlBool  `xml:"run_if_user_active"`
	RunOnBatteries        xmlBool  `xml:"run_on_batteries"`
	DiskMaxUsedGB         xmlFloat `xml:"disk_max_used_gb"`
	DiskMaxUsedPct        xmlFloat `xml:"disk_max_used_pct"`
	DiskMinFreeGB         xmlFloat `xml:"disk_min_free_gb"`
}

// parseState walks <client_state> in order, because apps, app versions
// and workunits carry no project URL: they belong to the project parsed
// last (CC_STATE::parse does the same).
func parseState(body []byte) (*State, error) {
	st := &State{}
	cur := ""
	wuApp := map[string]string{}
	var counts = map[string]int{}
	err := eachChild(body, "client_state", func(d *xml.Decoder, se xml.StartElement) error {
		name := se.Name.Local
		counts[name]++
		where := func(err error) error { return fmt.Errorf("<%s> #%d: %w", name, counts[name], err) }
		decode := func(v any) error {
			if err := d.DecodeElement(v, &se); err != nil {
				return where(err)
			}
			return nil
		}
		switch name {
		case "host_info":
			var w wireHostInfo
			if err := decode(&w); err != nil {
				return err
			}
			st.HostInfo = w.hostInfo()
		case "time_stats":
			var w wireTimeStats
			if err := decode(&w); err != nil {
				return err
			}
			st.TimeStats = TimeStats{
				OnFrac:          float64(w.OnFrac),
				ConnectedFrac:   float64(w.ConnectedFrac),
				ActiveFrac:      float64(w.ActiveFrac),
				GPUActiveFrac:   float64(w.GPUActiveFrac),
				ClientStartTime: unixTime(w.ClientStartTime),
				Now:             unixTime(w.Now),
			}
		case "project":
			var w wireProject
			if err := decode(&w); err != nil {
				return err
			}
			p := w.project()
			cur = p.MasterURL
			st.Projects = append(st.Projects, p)
		case "app":
			var w wireApp
			if err := decode(&w); err != nil {
				return err
			}
			st.Apps = append(st.Apps, App{ProjectURL: cur, Name: trim(w.Name), UserFriendlyName: trim(w.UserFriendlyName), NonCPUIntensive: bool(w.NonCPUIntensive)})
		case "app_version":
			var w wireAppVersion
			if err := decode(&w); err != nil {
				return err
			}
			av := AppVersion{ProjectURL: cur, AppName: trim(w.AppName), VersionNum: int(w.VersionNum), Platform: trim(w.Platform), PlanClass: trim(w.PlanClass), AvgNCPUs: float64(w.AvgNCPUs), Flops: float64(w.Flops)}
			for _, f := range w.FileRefs {
				if f.MainProgram {
					av.Files = append([]string{trim(f.FileName)}, av.Files...)
				} else {
					av.Files = append(av.Files, trim(f.FileName))
				}
			}
			st.AppVersions = append(st.AppVersions, av)
		case "workunit":
			var w wireWorkunit
			if err := decode(&w); err != nil {
				return err
			}
			wu := Workunit{ProjectURL: cur, Name: trim(w.Name), AppName: trim(w.AppName), VersionNum: int(w.VersionNum), RscFpopsEst: float64(w.RscFpopsEst), RscFpopsBound: float64(w.RscFpopsBound), RscMemoryBound: float64(w.RscMemoryBound), RscDiskBound: float64(w.RscDiskBound), CommandLine: trim(w.CommandLine)}
			wuApp[cur+"\x00"+wu.Name] = wu.AppName
			st.Workunits = append(st.Workunits, wu)
		case "result":
			var w wireResult
			if err := decode(&w); err != nil {
				return err
			}
			r := w.result()
			if r.ProjectURL == "" {
				r.ProjectURL = cur
			}
			r.AppName = wuApp[r.ProjectURL+"\x00"+r.WUName]
			st.Results = append(st.Results, r)
		case "platform_name":
			var s string
			if err := decode(&s); err != nil {
				return err
			}
			st.PlatformName = trim(s)
		case "platform":
			var s string
			if err := decode(&s); err != nil {
				return err
			}
			st.Platforms = append(st.Platforms, trim(s))
		case "core_client_major_version", "core_client_minor_version", "core_client_release":
			var n xmlInt
			if err := decode(&n); err != nil {
				return err
			}
			switch name {
			case "core_client_major_version":
				st.CoreClientVersion.Major = int(n)
			case "core_client_minor_version":
				st.CoreClientVersion.Minor = int(n)
			default:
				st.CoreClientVersion.Release = int(n)
			}
		case "executing_as_daemon":
			var b xmlBool
			if err := decode(&b); err != nil {
				return err
			}
			st.ExecutingAsDaemon = bool(b)
		case "global_preferences":
			var w wireGlobalPrefs
			if err := decode(&w); err != nil {
				return err
			}
			st.HaveGlobalPrefs = true
			st.GlobalPrefs = GlobalPrefs{
				WorkBufMinDays:        float64(w.WorkBufMinDays),
				WorkBufAdditionalDays: float64(w.WorkBufAdditionalDays),
				MaxNCPUsPct:           float64(w.MaxNCPUsPct),
				CPUUsageLimit:         float64(w.CPUUsageLimit),
				SuspendCPUUsage:       float64(w.SuspendCPUUsage),
				RunIfUserActive:       bool(w.RunIfUserActive),
				RunOnBatteries:        bool(w.RunOnBatteries),
				DiskMaxUsedGB:         float64(w.DiskMaxUsedGB),
				DiskMaxUsedPct:        float64(w.DiskMaxUsedPct),
				DiskMinFreeGB:         float64(w.DiskMinFreeGB),
			}
		default:
			return d.Skip()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}
