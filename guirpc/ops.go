package guirpc

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// opFunc writes the reply body of one op to w. It may return a function
// the connection runs after the reply has been sent (quit).
type opFunc func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context)

type opHandler struct {
	// noAuth ops are allowed to unauthenticated local connections
	// (gui_rpcs[] "auth not required").
	noAuth bool
	fn     opFunc
}

// ops is the dispatch table; it is never modified.
var ops = map[string]opHandler{
	"exchange_versions":             {true, opExchangeVersions},
	"get_all_projects_list":         {true, opAllProjectsList},
	"get_cc_status":                 {true, readOp(0, func(s *Server, st *State, _ *request, w *xw) { writeCCStatus(w, &st.CCStatus, s.logCapacity()) })},
	"get_disk_usage":                {true, readOp(PartDiskUsage, func(_ *Server, st *State, _ *request, w *xw) { writeDiskUsage(w, &st.DiskUsage) })},
	"get_daily_xfer_history":        {true, readOp(0, func(_ *Server, st *State, _ *request, w *xw) { writeDailyXfers(w, st.DailyXfers) })},
	"get_file_transfers":            {true, readOp(PartTransfers, opFileTransfers)},
	"get_host_info":                 {true, readOp(0, func(_ *Server, st *State, _ *request, w *xw) { writeHostInfo(w, &st.Host) })},
	"get_messages":                  {true, opMessages},
	"get_message_count":             {true, opMessageCount},
	"get_newer_version":             {true, opNewerVersion},
	"get_notices_public":            {true, opNotices},
	"get_old_results":               {true, readOp(0, func(_ *Server, st *State, _ *request, w *xw) { writeOldResults(w, st.OldResults) })},
	"get_project_status":            {true, readOp(0, opProjectStatus)},
	"get_results":                   {true, readOp(PartResults, opResults)},
	"get_simple_gui_info":           {true, readOp(PartResults, opSimpleGUIInfo)},
	"get_state":                     {true, readOp(PartWorkunits|PartResults|PartPrefsOverride, func(_ *Server, st *State, _ *request, w *xw) { writeState(w, st) })},
	"get_statistics":                {true, readOp(0, func(_ *Server, st *State, _ *request, w *xw) { writeStatistics(w, st) })},
	"get_notices":                   {false, opNotices},
	"get_global_prefs_working":      {false, readOp(PartPrefsOverride, func(_ *Server, st *State, _ *request, w *xw) { writePrefs(w, &st.Prefs, st.PrefsOverride != "") })},
	"get_global_prefs_override":     {false, readOp(PartPrefsOverride, opPrefsOverride)},
	"get_global_prefs_file":         {false, readOp(0, opPrefsFile)},
	"acct_mgr_info":                 {false, opAcctMgrInfo},
	"get_project_init_status":       {false, opProjectInitStatus},
	"get_proxy_settings":            {false, readOp(0, opGetProxySettings)},
	"project_attach":                {false, opAttach},
	"project_attach_poll":           {false, opAttachPoll},
	"project_detach":                {false, projectOp(ProjectDetach)},
	"project_update":                {false, projectOp(ProjectUpdate)},
	"project_suspend":               {false, projectOp(ProjectSuspend)},
	"project_resume":                {false, projectOp(ProjectResume)},
	"project_nomorework":            {false, projectOp(ProjectNoMoreWork)},
	"project_allowmorework":         {false, projectOp(ProjectAllowMoreWork)},
	"project_reset":                 {false, projectOp(ProjectReset)},
	"project_detach_when_done":      {false, projectOp(ProjectDetachWhenDone)},
	"project_dont_detach_when_done": {false, projectOp(ProjectDontDetachWhenDone)},
	"suspend_result":                {false, resultOp(ResultSuspend)},
	"resume_result":                 {false, resultOp(ResultResume)},
	"abort_result":                  {false, resultOp(ResultAbort)},
	"retry_file_transfer":           {false, transferOp(TransferRetry)},
	"abort_file_transfer":           {false, transferOp(TransferAbort)},
	"set_run_mode":                  {false, modeOp("run")},
	"set_gpu_mode":                  {false, modeOp("gpu")},
	"set_network_mode":              {false, modeOp("network")},
	"set_global_prefs_override":     {false, opSetPrefsOverride},
	"read_global_prefs_override":    {false, simpleOp(ReadPrefsOverride{})},
	"read_cc_config":                {false, simpleOp(ReadCCConfig{})},
	"run_benchmarks":                {false, simpleOp(RunBenchmarks{})},
	"network_available":             {false, simpleOp(NetworkAvailable{})},
	"quit":                          {false, opQuit},

	// The Add Project wizard (account.go).
	"get_project_config":      {false, opGetProjectConfig},
	"get_project_config_poll": {false, opGetProjectConfigPoll},
	"lookup_account":          {false, opLookupAccount},
	"lookup_account_poll":     {false, opLookupAccountPoll},
	"create_account":          {false, opCreateAccount},
	"create_account_poll":     {false, opCreateAccountPoll},

	// Client set-up (settings.go).
	"get_screensaver_tasks": {true, readOp(PartResults, opScreensaverTasks)},
	"run_graphics_app":      {true, opRunGraphicsApp},
	"set_proxy_settings":    {false, opSetProxySettings},
	"set_host_info":         {false, opSetHostInfo},
	"reset_host_info":       {false, simpleOp(ResetHostInfo{})},
	"get_cc_config":         {false, opGetCCConfig},
	"set_cc_config":         {false, opSetCCConfig},
	"get_app_config":        {false, opGetAppConfig},
	"set_app_config":        {false, opSetAppConfig},
	"set_language":          {false, opSetLanguage},
	"report_device_status":  {false, opReportDeviceStatus},
	"acct_mgr_rpc":          {false, opAcctMgrRPC},
	"acct_mgr_rpc_poll":     {false, opAcctMgrRPCPoll},
}

func (s *Server) logCapacity() int {
	if s.cfg.Log == nil {
		return 0
	}
	return s.cfg.Log.Capacity()
}

// readOp wraps a writer that needs a State snapshot with the parts need.
func readOp(need Parts, fn func(s *Server, st *State, req *request, w *xw)) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		st, err := s.cfg.Backend.Snapshot(ctx, need)
		if err != nil {
			s.log.Warn("GUI RPC: cannot read client state", slog.String("op", req.op), slog.Any("err", err))
			w.str("", "error", err.Error())
			return nil
		}
		fn(s, st, req, w)
		return nil
	}
}

// do runs a, writing <success/> or the error.
func do(ctx context.Context, s *Server, req *request, w *xw, a Action) {
	if err := s.cfg.Backend.Do(ctx, a); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		if errors.Is(err, ErrMustDetachViaAM) {
			// The C++ client writes this one without a newline, and
			// boinccmd then reports "Operation failed: Error -1": the
			// same bytes give the same output.
			w.WriteString("<error>" + ErrMustDetachViaAM.Error() + "</error>")
			return
		}
		w.str("", "error", errorText(err))
		return
	}
	w.line("<success/>")
}

func simpleOp(a Action) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		do(ctx, s, req, w, a)
		return nil
	}
}

// canonicalURL canonicalises a project URL as the C++ server does before
// looking the project up; an unparsable one is passed on as given, for the
// backend to report as no such project.
func canonicalURL(u string) string {
	if c, err := boinc.CanonicalMasterURL(u); err == nil {
		return c
	}
	return u
}

func opExchangeVersions(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	writeVersion(w)
	return nil
}

func opAllProjectsList(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	// all_projects_list.xml in the data directory, as the C++ client
	// serves it (from "<projects" on): the daemon keeps it fresh from
	// BOINC's web site and gives the copy bundled in the binary until
	// then (package projectlist). Nothing at all: an empty list.
	var out []byte
	if err := s.cfg.Backend.Do(ctx, ReadConfigFile{File: AllProjectsList, Out: &out}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
	}
	if i := bytes.Index(out, []byte("<projects")); i >= 0 {
		w.line(rawReplyText(out[i:]))
		return nil
	}
	w.line("<projects>")
	w.line("</projects>")
	return nil
}

func opFileTransfers(_ *Server, st *State, _ *request, w *xw) {
	w.line("<file_transfers>")
	for i := range st.Transfers {
		writeTransfer(w, &st.Transfers[i])
	}
	w.line("</file_transfers>")
}

func opProjectStatus(_ *Server, st *State, _ *request, w *xw) {
	w.line("<projects>")
	for i := range st.Projects {
		writeProject(w, st, &st.Projects[i])
	}
	w.line("</projects>")
}

func opResults(_ *Server, st *State, req *request, w *xw) {
	w.line("<results>")
	writeResults(w, st, parseBool(req.fields["active_only"], req.has("active_only")))
	w.line("</results>")
}

func opSimpleGUIInfo(_ *Server, st *State, _ *request, w *xw) {
	w.line("<simple_gui_info>")
	for i := range st.Projects {
		writeProject(w, st, &st.Projects[i])
	}
	// write_tasks_gui(active_only=true): the tasks with an active task.
	writeResults(w, st, true)
	w.line("</simple_gui_info>")
}

// parseBool is XML_PARSER::parse_bool: <x/> or <x>N</x> with N != 0.
func parseBool(v string, present bool) bool {
	if !present {
		return false
	}
	if v == "" {
		return true
	}
	n, err := strconv.Atoi(v)
	return err == nil && n != 0
}

func parseSeqno(req *request) int64 {
	n, _ := strconv.ParseInt(req.fields["seqno"], 10, 64)
	return n
}

func opMessages(_ context.Context, s *Server, req *request, w *xw) func(context.Context) {
	if s.cfg.Log == nil {
		writeMessages(w, nil)
		return nil
	}
	writeMessages(w, s.cfg.Log.Since(parseSeqno(req)))
	return nil
}

func opMessageCount(_ context.Context, s *Server, _ *request, w *xw) func(context.Context) {
	var n int64
	if s.cfg.Log != nil {
		n = s.cfg.Log.LastSeqno()
	}
	w.int("", "seqno", n)
	return nil
}

func opNewerVersion(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.str("", "newer_version", "")
	w.str("", "download_url", "")
	return nil
}

func opProjectInitStatus(_ context.Context, _ *Server, _ *request, w *xw) func(context.Context) {
	w.line("<get_project_init_status>")
	w.str("    ", "url", "")
	w.str("    ", "name", "")
	w.str("    ", "team_name", "")
	w.str("    ", "setup_cookie", "")
	w.line("</get_project_init_status>")
	return nil
}

func opPrefsOverride(_ *Server, st *State, _ *request, w *xw) {
	if strings.TrimSpace(st.PrefsOverride) == "" {
		w.line("<error>no prefs override file</error>")
		return
	}
	w.line(strings.TrimSpace(st.PrefsOverride))
}

func opPrefsFile(_ *Server, st *State, _ *request, w *xw) {
	if strings.TrimSpace(st.PrefsFile) == "" {
		// What the C++ client answers when global_prefs.xml cannot be
		// opened (ERR_FOPEN).
		w.line("<error>-108</error>")
		return
	}
	w.line(strings.TrimSpace(st.PrefsFile))
}

func opSetPrefsOverride(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	inner, ok := req.innerXML()
	if !ok {
		w.line("<error>Missing override prefs</error>")
		return nil
	}
	if err := s.cfg.Backend.Do(ctx, SetPrefsOverride{XML: inner}); err != nil {
		s.log.Info("GUI RPC op failed", slog.String("op", req.op), slog.Any("err", err))
		w.str("", "error", errorText(err))
		return nil
	}
	w.line("<success/>")
	return nil
}

func opAttach(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
	url := req.fields["project_url"]
	auth := req.fields["authenticator"]
	if url == "" {
		// Also the answer to <use_config_file/>: boincd has no
		// project_init.xml to take the project from.
		w.line("<error>Missing URL</error>")
		return nil
	}
	if auth == "" {
		w.line("<error>Missing authenticator</error>")
		return nil
	}
	do(ctx, s, req, w, Attach{URL: canonicalURL(url), Authenticator: auth, Name: req.fields["project_name"]})
	return nil
}

func projectOp(op string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		url := req.fields["project_url"]
		if url == "" {
			w.line("<error>Missing project URL</error>")
			return nil
		}
		do(ctx, s, req, w, ProjectOp{URL: canonicalURL(url), Op: op})
		return nil
	}
}

func resultOp(op string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		url, name := req.fields["project_url"], req.fields["name"]
		if url == "" {
			w.line("<error>No such project</error>")
			return nil
		}
		if name == "" {
			w.line("<error>Missing result name</error>")
			return nil
		}
		do(ctx, s, req, w, ResultOp{URL: canonicalURL(url), Name: name, Op: op})
		return nil
	}
}

func transferOp(op string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		url, file := req.fields["project_url"], req.fields["filename"]
		if url == "" {
			w.line("<error>No such project</error>")
			return nil
		}
		if file == "" {
			w.line("<error>Missing filename</error>")
			return nil
		}
		do(ctx, s, req, w, TransferOp{URL: canonicalURL(url), File: file, Op: op})
		return nil
	}
}

// maxModeDuration bounds a run-mode duration (seconds): 100 years, far
// within time.Duration.
const maxModeDuration = 100 * 365 * 24 * 3600

func modeOp(which string) opFunc {
	return func(ctx context.Context, s *Server, req *request, w *xw) func(context.Context) {
		m := 0
		switch {
		case req.has("always"):
			m = ModeAlways
		case req.has("auto"):
			m = ModeAuto
		case req.has("never"):
			m = ModeNever
		case req.has("restore"):
			m = ModeRestore
		}
		if m == 0 {
			w.line("<error>Missing mode</error>")
			return nil
		}
		var dur float64
		if v, ok := req.fields["duration"]; ok && v != "" {
			d, err := strconv.ParseFloat(v, 64)
			// The backend turns it into a time.Duration: refuse what
			// that cannot hold (infinity, or centuries) rather than let
			// it wrap around to a negative duration.
			if err != nil || !(d >= 0 && d <= maxModeDuration) {
				w.str("", "error", "bad duration: "+v)
				return nil
			}
			dur = d
		}
		do(ctx, s, req, w, SetMode{Which: which, Mode: m, Duration: dur})
		return nil
	}
}

func opQuit(_ context.Context, s *Server, _ *request, w *xw) func(context.Context) {
	// The C++ client answers first and exits afterwards; doing it in this
	// order lets the reply out before the daemon shuts the server down.
	w.line("<success/>")
	return func(ctx context.Context) {
		// The quit itself cancels ctx as the daemon stops: that is
		// success, not a failure to report.
		if err := s.cfg.Backend.Do(ctx, Quit{}); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("GUI RPC quit failed", slog.Any("err", err))
		}
	}
}
