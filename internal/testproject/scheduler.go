package testproject

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/platform"
)

// schedRequest is the part of <scheduler_request> the server uses
// (PROTOCOLS.md §1.3). Everything else is skipped.
type schedRequest struct {
	XMLName         xml.Name `xml:"scheduler_request"`
	Authenticator   string   `xml:"authenticator"`
	HostID          int64    `xml:"hostid"`
	RPCSeqno        int64    `xml:"rpc_seqno"`
	Major           int      `xml:"core_client_major_version"`
	Minor           int      `xml:"core_client_minor_version"`
	Release         int      `xml:"core_client_release"`
	DontSendWork    xmlBool  `xml:"dont_send_work"`
	WorkReqSeconds  float64  `xml:"work_req_seconds"`
	CPUReqSecs      float64  `xml:"cpu_req_secs"`
	CPUReqInstances float64  `xml:"cpu_req_instances"`
	PlatformName    string   `xml:"platform_name"`
	// AltPlatforms are the <alt_platform> names, in the client's order.
	AltPlatforms []string       `xml:"alt_platform>name"`
	CodeSignKey  string         `xml:"code_sign_key"`
	Results      []reportResult `xml:"result"`
	// MsgsFromHost are trickle-ups, kept raw (trickle.go).
	MsgsFromHost []msgFromHostXML `xml:"msg_from_host"`
	// AppVersions are the client's versions (PROTOCOLS.md §1.3 #25);
	// with <platform_name>anonymous</platform_name> they are the only
	// versions jobs may be sent for.
	AppVersions  []reqAppVersion `xml:"app_versions>app_version"`
	OtherResults []struct {
		Name string `xml:"name"`
	} `xml:"other_results>other_result"`
	// CUDA is the NVIDIA work request: the client writes it inside the
	// <coproc_cuda> that describes its GPUs (PROTOCOLS.md §8).
	CUDA struct {
		ReqSecs      float64 `xml:"req_secs"`
		ReqInstances float64 `xml:"req_instances"`
	} `xml:"coprocs>coproc_cuda"`
}

// reqAppVersion is one <app_version> of the request (APP_VERSION::write
// without file refs).
type reqAppVersion struct {
	AppName    string  `xml:"app_name"`
	VersionNum int     `xml:"version_num"`
	Platform   string  `xml:"platform"`
	PlanClass  string  `xml:"plan_class"`
	APIVersion string  `xml:"api_version"`
	AvgNCPUs   float64 `xml:"avg_ncpus"`
	Flops      float64 `xml:"flops"`
	Cmdline    string  `xml:"cmdline"`
	Coproc     struct {
		Type  string  `xml:"type"`
		Count float64 `xml:"count"`
	} `xml:"coproc"`
}

func (v reqAppVersion) announced() AnnouncedVersion {
	return AnnouncedVersion{
		AppName: strings.TrimSpace(v.AppName), VersionNum: v.VersionNum, Platform: strings.TrimSpace(v.Platform),
		PlanClass: strings.TrimSpace(v.PlanClass), APIVersion: strings.TrimSpace(v.APIVersion),
		AvgNCPUs: v.AvgNCPUs, Flops: v.Flops, Cmdline: strings.TrimSpace(v.Cmdline),
		CoprocType: strings.TrimSpace(v.Coproc.Type), CoprocCount: v.Coproc.Count,
	}
}

// reportResult is one reported <result> (PROTOCOLS.md §1.4).
type reportResult struct {
	Name             string  `xml:"name"`
	FinalCPUTime     float64 `xml:"final_cpu_time"`
	FinalElapsedTime float64 `xml:"final_elapsed_time"`
	ExitStatus       int     `xml:"exit_status"`
	State            int     `xml:"state"`
	Platform         string  `xml:"platform"`
	VersionNum       int     `xml:"version_num"`
	StderrOut        struct {
		Text      string `xml:",chardata"`
		StderrTxt string `xml:"stderr_txt"`
		Message   string `xml:"message"`
	} `xml:"stderr_out"`
	FileInfos []struct {
		Name   string  `xml:"name"`
		NBytes float64 `xml:"nbytes"`
		MD5    string  `xml:"md5_cksum"`
	} `xml:"file_info"`
}

// xmlBool accepts BOINC's two boolean forms: <x/> (true) and <x>0|1</x>.
type xmlBool bool

func (b *xmlBool) UnmarshalXML(d *xml.Decoder, start xml.StartElement) error {
	var s string
	if err := d.DecodeElement(&s, &start); err != nil {
		return err
	}
	switch strings.TrimSpace(s) {
	case "", "1", "true":
		*b = true
	case "0", "false":
		*b = false
	default:
		return fmt.Errorf("<%s>: bad boolean %q", start.Name.Local, s)
	}
	return nil
}

// stderrText rebuilds the stderr text, whichever form the client used.
func (r *reportResult) stderrText() string {
	parts := []string{}
	for _, p := range []string{r.StderrOut.Text, r.StderrOut.StderrTxt, r.StderrOut.Message} {
		if t := strings.TrimSpace(p); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, "\n")
}

// parseSchedRequest decodes a request body, naming what is wrong.
func parseSchedRequest(body []byte) (*schedRequest, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("scheduler request: empty body")
	}
	var req schedRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("scheduler request: %w", err)
	}
	for i, r := range req.Results {
		if strings.TrimSpace(r.Name) == "" {
			return nil, fmt.Errorf("scheduler request: reported result %d has no <name>", i)
		}
	}
	return &req, nil
}

// rpcFault is the fault chosen for one scheduler RPC.
type rpcFault int

const (
	faultNone rpcFault = iota
	faultHTTP
	faultMalformed
	faultHang
	faultOversized
)

// takeRPCFaultLocked consumes the fault that applies to this RPC.
func (s *Server) takeRPCFaultLocked(body []byte) rpcFault {
	f := &s.faults
	switch {
	case f.HTTPErrors > 0:
		f.HTTPErrors--
		return faultHTTP
	case f.MalformedReplies > 0:
		f.MalformedReplies--
		return faultMalformed
	case f.HangReplies > 0 && (!f.HangReportsOnly || bytes.Contains(body, []byte("<result>"))):
		f.HangReplies--
		return faultHang
	case f.OversizedReply:
		f.OversizedReply = false
		return faultOversized
	}
	return faultNone
}

func (s *Server) handleScheduler(w http.ResponseWriter, r *http.Request) {
	// The real client posts with Content-Type
	// application/x-www-form-urlencoded: the body is still raw XML, so it
	// must never go through form parsing.
	body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, maxSchedRequestBytes))
	base := s.baseURL(r)

	s.mu.Lock()
	s.stats.RPCs++
	rpcN := s.stats.RPCs
	s.stats.LastRequest = body
	fault := s.takeRPCFaultLocked(body)
	rewrite := s.faults.RewriteReply
	s.mu.Unlock()

	switch fault {
	case faultHTTP:
		s.log.Info("testproject: scheduler RPC gets HTTP 500 (fault)")
		http.Error(w, "injected server error", http.StatusInternalServerError)
		return
	case faultOversized:
		s.log.Info("testproject: scheduler RPC gets an oversized reply (fault)")
		s.writeOversized(w, base)
		return
	}

	var reply []byte
	if fault == faultNone {
		reply = s.processRPC(body, readErr, base)
		s.mu.Lock()
		s.stats.Processed++
		s.mu.Unlock()
		if rewrite != nil {
			if out := rewrite(rpcN, reply); !bytes.Equal(out, reply) {
				s.log.Info("testproject: scheduler reply rewritten (fault)", "rpc", rpcN, "bytes", len(out))
				reply = out
			}
		}
	} else {
		// Faulted RPCs are not processed: the client must repeat them.
		reply = s.noWorkReply(base, "")
	}
	w.Header().Set("Content-Type", "text/xml")
	switch fault {
	case faultMalformed:
		s.log.Info("testproject: scheduler RPC gets a truncated reply (fault)")
		half := reply[:len(reply)/2]
		w.Header().Set("Content-Length", strconv.Itoa(len(half)))
		_, _ = w.Write(half)
	case faultHang:
		s.log.Info("testproject: scheduler RPC gets half a reply, then hangs (fault)")
		w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
		_, _ = w.Write(reply[:len(reply)/2])
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
		s.waitGone(r.Context())
	default:
		w.Header().Set("Content-Length", strconv.Itoa(len(reply)))
		if _, err := w.Write(reply); err != nil {
			s.log.Info("testproject: writing scheduler reply", "err", err)
		}
	}
}

// processRPC handles one unfaulted request and returns the reply body.
func (s *Server) processRPC(body []byte, readErr error, base string) []byte {
	if readErr != nil {
		s.mu.Lock()
		s.addErrorLocked("scheduler request: reading body: %v", readErr)
		s.mu.Unlock()
		return s.errorReply(base, "Incomplete request received.")
	}
	req, err := parseSchedRequest(body)
	if err != nil {
		s.mu.Lock()
		s.addErrorLocked("%v", err)
		s.mu.Unlock()
		return s.errorReply(base, "Incomplete request received.")
	}
	auth := strings.TrimSpace(req.Authenticator)
	if auth == "" || (s.cfg.Authenticator != "" && auth != s.cfg.Authenticator) {
		s.mu.Lock()
		s.addErrorLocked("scheduler request: invalid or missing authenticator %q", auth)
		s.mu.Unlock()
		return s.errorReply(base, "Invalid or missing account key.  To fix, remove and add this project.")
	}

	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()

	var rb replyBuilder
	hostID := req.HostID
	newHost := false
	if hostID <= 0 {
		s.nextHost++
		hostID = s.nextHost
		s.hosts[hostID] = now
		s.stats.HostIDs = append(s.stats.HostIDs, hostID)
		newHost = true
	} else if _, ok := s.hosts[hostID]; !ok {
		// A host from an earlier server life (or a replayed capture):
		// adopt it, as a real scheduler would look it up in its database.
		s.hosts[hostID] = now
		if hostID > s.nextHost {
			s.nextHost = hostID
		}
	}
	log := s.log.With("hostid", hostID, "rpc_seqno", req.RPCSeqno)

	// Reports first: the acks must cover every reported result.
	var acks []string
	for i := range req.Results {
		rr := &req.Results[i]
		name := strings.TrimSpace(rr.Name)
		s.recordReportLocked(name, rr, log)
		acks = append(acks, name)
	}
	s.checkLostJobsLocked(hostID, req, log)

	// New work.
	// As a real scheduler (sched_types.h need_proc_type): jobs are sent
	// while, for a resource with apps, either the seconds or the idle
	// instances asked for are not covered.
	cpu := &workNeed{secs: max(req.CPUReqSecs, req.WorkReqSeconds), inst: req.CPUReqInstances}
	gpu := &workNeed{secs: req.CUDA.ReqSecs, inst: req.CUDA.ReqInstances}
	// An anonymous platform client runs its own versions (app_info.xml):
	// as a real scheduler, jobs go out only for apps it has a version
	// of, the highest, named in the result as the client named it, and
	// with no app version or app file in the reply.
	anonymous := strings.TrimSpace(req.PlatformName) == "anonymous"
	var anonVersions map[string]AnnouncedVersion
	if anonymous {
		s.stats.AnonymousRPCs++
		s.stats.AnnouncedVersions = s.stats.AnnouncedVersions[:0:0]
		anonVersions = map[string]AnnouncedVersion{}
		for _, v := range req.AppVersions {
			av := v.announced()
			s.stats.AnnouncedVersions = append(s.stats.AnnouncedVersions, av)
			if old, ok := anonVersions[av.AppName]; !ok || av.VersionNum > old.VersionNum {
				anonVersions[av.AppName] = av
			}
		}
		log.Info("testproject: anonymous platform request", "app_versions", len(req.AppVersions))
	}
	usesGPU := func(a *appState) bool {
		if anonymous {
			av := anonVersions[a.Name]
			return av.CoprocType != "" && av.CoprocCount > 0
		}
		return a.NGPUs > 0
	}
	needFor := func(a *appState) *workNeed {
		if usesGPU(a) {
			return gpu
		}
		return cpu
	}
	var jobs []*Job
	inProgress := s.inProgressLocked(hostID)
	capped := false
	for !bool(req.DontSendWork) && len(jobs) < s.cfg.MaxJobsPerRPC {
		if s.cfg.TotalJobs > 0 && s.nextJob >= s.cfg.TotalJobs {
			break
		}
		if s.cfg.MaxInProgress > 0 && inProgress+len(jobs) >= s.cfg.MaxInProgress {
			capped = cpu.open() || gpu.open()
			break
		}
		app := s.nextAppLocked(func(a *appState) bool {
			if _, ok := anonVersions[a.Name]; anonymous && !ok {
				return false
			}
			return needFor(a).open()
		})
		if app == nil {
			break
		}
		var av *AnnouncedVersion
		if anonymous {
			v := anonVersions[app.Name]
			av = &v
		} else {
			app = s.versionForLocked(app.Name, req.platforms())
		}
		jobs = append(jobs, s.newJobLocked(hostID, req.PlatformName, base, now, app, av))
		n := needFor(app)
		n.covered += s.cfg.Job.FpopsEst / app.Flops
		switch {
		case av != nil && usesGPU(app):
			n.inst -= av.CoprocCount
		case av != nil:
			n.inst -= max(av.AvgNCPUs, 1)
		case app.NGPUs > 0:
			n.inst -= app.NGPUs
		default:
			n.inst -= app.AvgNCPUs
		}
	}
	log.Info("testproject: scheduler RPC",
		"work_req_seconds", req.WorkReqSeconds, "cpu_req_secs", req.CPUReqSecs,
		"cuda_req_secs", req.CUDA.ReqSecs, "cuda_req_instances", req.CUDA.ReqInstances,
		"reported", len(req.Results), "sent", len(jobs))

	rb.header(s, base, hostID, s.hosts[hostID])
	if newHost {
		rb.linef("<hostid>%d</hostid>", hostID)
	}
	if s.sign != nil && strings.TrimSpace(req.CodeSignKey) == "" {
		rb.line("<code_sign_key>")
		rb.raw(s.sign.keyText)
		rb.line("</code_sign_key>")
	} else if s.sign != nil && s.rotated && normaliseKey(req.CodeSignKey) != normaliseKey(s.sign.keyText) {
		// After RotateKey a client holding the earlier key is offered the
		// current one (a client attached to some other server is not), with
		// the rollover signature when RotateKey made one.
		log.Info("testproject: client holds another code-signing key; sending the current one", "signed", s.rollSig != "")
		rb.line("<code_sign_key>")
		rb.raw(s.sign.keyText)
		rb.line("</code_sign_key>")
		if s.rollSig != "" {
			rb.line("<code_sign_key_signature>")
			rb.raw(s.rollSig)
			rb.line("</code_sign_key_signature>")
		}
	}
	appsSent := map[string]bool{}
	for _, j := range jobs {
		s.writeJobLocked(&rb, j, appsSent, base)
	}
	for _, a := range acks {
		rb.line("<result_ack>")
		rb.linef("    <name>%s</name>", xmlEscape(a))
		rb.line("</result_ack>")
		s.stats.Acked = append(s.stats.Acked, a)
	}
	if len(jobs) == 0 {
		rb.line(`<message priority="low">No tasks sent</message>`)
	}
	if anonymous {
		// sched_send.cpp's words for an app the client has no version of.
		for _, a := range s.apps {
			if _, ok := anonVersions[a.Name]; !ok {
				rb.linef(`<message priority="low">Your app_info.xml file doesn't have a usable version of %s.</message>`, xmlEscape(a.FriendlyName))
			}
		}
	}
	if capped {
		// sched_send.cpp: the per-host limit message the real scheduler
		// sends with the reply.
		rb.line(`<message priority="low">This computer has reached a limit on tasks in progress</message>`)
	}
	s.handleMsgsLocked(&rb, hostID, req.MsgsFromHost, now)
	s.writeNoticesLocked(&rb, base, hostID)
	rb.line("</scheduler_reply>")
	return rb.Bytes()
}

func normaliseKey(k string) string { return strings.Join(strings.Fields(k), "") }

// recordReportLocked counts one reported result and checks it against
// what the server knows.
func (s *Server) recordReportLocked(name string, rr *reportResult, log interface {
	Info(string, ...any)
}) {
	s.stats.Reported[name]++
	rep := ReportedResult{
		ExitStatus:       rr.ExitStatus,
		State:            rr.State,
		StderrOut:        rr.stderrText(),
		FinalCPUTime:     rr.FinalCPUTime,
		FinalElapsedTime: rr.FinalElapsedTime,
		OutputMD5:        map[string]string{},
		Platform:         strings.TrimSpace(rr.Platform),
		VersionNum:       rr.VersionNum,
	}
	for _, fi := range rr.FileInfos {
		fn := strings.TrimSpace(fi.Name)
		rep.OutputFiles = append(rep.OutputFiles, fn)
		rep.OutputMD5[fn] = strings.TrimSpace(fi.MD5)
	}
	s.stats.ReportedResults[name] = rep
	if s.stats.Reported[name] > 1 {
		log.Info("testproject: result reported again", "result", name, "times", s.stats.Reported[name])
	}
	job, known := s.jobs[name]
	if !known {
		// Reports of results this server never sent (replayed captures,
		// an earlier server life) are acked and counted but not checked.
		log.Info("testproject: report of a result this server did not send", "result", name)
		return
	}
	const stateFilesUploaded = 5
	if rr.State != stateFilesUploaded {
		return
	}
	for _, out := range job.OutputFiles {
		data, ok := s.stats.Uploaded[out]
		if !ok {
			s.addErrorLocked("result %s reported with state 5 (files uploaded) but output %s was never uploaded", name, out)
			continue
		}
		if m, ok := rep.OutputMD5[out]; ok && m != "" && m != md5Hex(data) {
			s.addErrorLocked("result %s reports md5 %s for output %s but the uploaded file has md5 %s", name, m, out, md5Hex(data))
		}
	}
}

// inProgressLocked counts the jobs sent to hostID that are not reported
// yet (the reports of this request already counted).
func (s *Server) inProgressLocked(hostID int64) int {
	n := 0
	for name, j := range s.jobs {
		if j.HostID == hostID && s.stats.Reported[name] == 0 {
			n++
		}
	}
	return n
}

// checkLostJobsLocked logs jobs sent to this host that the client neither
// reports nor lists in <other_results> (a real server would resend them).
func (s *Server) checkLostJobsLocked(hostID int64, req *schedRequest, log interface {
	Info(string, ...any)
}) {
	listed := map[string]bool{}
	for _, o := range req.OtherResults {
		listed[strings.TrimSpace(o.Name)] = true
	}
	for _, r := range req.Results {
		listed[strings.TrimSpace(r.Name)] = true
	}
	for name, j := range s.jobs {
		if j.HostID == hostID && s.stats.Reported[name] == 0 && !listed[name] {
			log.Info("testproject: client lost a job (not reported, not in other_results)", "result", name)
		}
	}
}

// workNeed is what a request still asks of one resource.
type workNeed struct {
	secs, covered float64 // seconds asked for, and covered by the jobs so far
	inst          float64 // idle instances not yet given a job
}

// open reports whether the jobs so far leave the request unanswered.
func (n *workNeed) open() bool { return n.covered < n.secs || n.inst > 0 }

// nextAppLocked is the next app in turn that wanted accepts, or nil. With
// every app accepted, job n uses apps[(n-1) % len(apps)].
func (s *Server) nextAppLocked(wanted func(*appState) bool) *appState {
	for k := range s.apps {
		i := (s.nextApp + k) % len(s.apps)
		if wanted(s.apps[i]) {
			s.nextApp = (i + 1) % len(s.apps)
			return s.apps[i]
		}
	}
	return nil
}

// newJobLocked creates job number s.nextJob+1 of app for hostID.
// av is the client's version the job is for (anonymous platform), or nil.
func (s *Server) newJobLocked(hostID int64, reqPlatform, base string, now time.Time, app *appState, av *AnnouncedVersion) *Job {
	s.nextJob++
	n := s.nextJob
	seed := JobSeed(n)
	wu := fmt.Sprintf("%s_wu_%s_%d", app.Name, s.prefix, n)
	res := wu + "_0"
	j := &Job{
		N:           n,
		Seed:        seed,
		App:         app.Name,
		WUName:      wu,
		ResultName:  res,
		CommandLine: expandCommandLine(s.cfg.Job.CommandLine, n, seed),
		OutputFiles: []string{fmt.Sprintf("%s_r%d_0", res, seed%100000)},
		HostID:      hostID,
		Platform:    platformFor(app, reqPlatform),
		VersionNum:  app.VersionNum,
		PlanClass:   app.PlanClass,
		SentAt:      now,
		Deadline:    now.Add(s.cfg.Job.Deadline),
	}
	if av != nil {
		j.Anonymous, j.VersionNum, j.PlanClass, j.Platform = true, av.VersionNum, av.PlanClass, av.Platform
		if j.Platform == "" {
			j.Platform = platform.This()
		}
	}
	input := JobInput(n, s.cfg.Job.InputSize)
	if s.cfg.Job.InputSize > 0 || s.faults.HostileFileName != "" {
		j.InputFile = wu + "_in"
		if s.faults.HostileFileName != "" {
			j.InputFile = s.faults.HostileFileName
			s.faults.HostileFileName = ""
			s.log.Info("testproject: naming an input file with a hostile name (fault)", "name", j.InputFile)
		}
		j.InputMD5 = md5Hex(input)
		j.InputSize = len(input)
		s.files[j.InputFile] = &downloadFile{data: input, input: true}
		if s.cfg.Job.GzipInput {
			gz := gzipData(input)
			j.InputGzipFile, j.InputGzipSize = j.InputFile+".gz", len(gz)
			s.files[j.InputGzipFile] = &downloadFile{data: gz, input: true, gzip: true}
		}
	}
	for _, o := range j.OutputFiles {
		of := outputFile{result: res, maxNBytes: s.cfg.Job.MaxOutputBytes}
		if s.sign != nil {
			sig, err := s.sign.signMD5Hex([]byte(uploadSignedText(o, of.maxNBytes)))
			if err != nil {
				// Signing with a valid in-memory key does not fail; if it
				// did, the file goes out unsigned and its upload is refused.
				s.log.Error("testproject: signing output file", "name", o, "err", err)
			}
			of.xmlSignature = sig
		}
		s.outputs[o] = of
	}
	s.jobs[res] = j
	s.stats.Sent = append(s.stats.Sent, res)
	return j
}

// platforms are the request's platforms, primary first.
func (r *schedRequest) platforms() []string {
	out := []string{strings.TrimSpace(r.PlatformName)}
	for _, p := range r.AltPlatforms {
		out = append(out, strings.TrimSpace(p))
	}
	return out
}

// versionForLocked picks, among the configured apps called name (one per
// platform), the version a client with these platforms gets: the first
// platform of the client's list that has one, as a real scheduler does
// when the versions are equally fast (sched_version.cpp get_app_version
// walks the request's platforms in order and keeps the first best). An
// app for any platform ("") matches the primary. With no match the first
// configured version is sent anyway, so tests can see what a client does
// with a version for a platform it did not ask for.
func (s *Server) versionForLocked(name string, platforms []string) *appState {
	var first *appState
	for _, p := range platforms {
		for _, a := range s.apps {
			if a.Name != name {
				continue
			}
			if first == nil {
				first = a
			}
			if a.Platform == p || (a.Platform == "" && p == platforms[0]) {
				return a
			}
		}
	}
	return first
}

// platformFor is the platform a version is announced for in a reply to a
// client whose primary platform is reqPlatform.
func platformFor(app *appState, reqPlatform string) string {
	if app.Platform != "" {
		return app.Platform
	}
	if p := strings.TrimSpace(reqPlatform); p != "" && p != "anonymous" {
		return p
	}
	return platform.This()
}
