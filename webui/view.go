package webui

import (
	"context"
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/guirpc"
	"github.com/boincd/boincd/guirpc/client"
)

// pageSize bounds the tasks on one page: a queue of 10,000 tasks is
// paged, so that neither the server's render nor the browser's layout
// grows with the queue.
const pageSize = 200

// Log lines and notices shown.
const (
	logShown     = 100
	noticesShown = 50
)

// sections are the parts of the page the stream replaces, by id. The
// Preferences view is not among them: a form being edited is not
// replaced under the user's hands.
var sections = []string{"modes", "tasks", "projects", "account", "transfers", "notices", "log", "host", "stats", "fleet"}

// sectionsFor is what a stream keeps current for a page showing tab:
// the run modes (always on screen) and the tab's own sections. A hidden
// tab's sections are brought up to date when the page switches to it
// (its stream starts again), so that an open tab costs the daemon only
// what it shows. "" is every section.
func sectionsFor(tab string) []string {
	switch tab {
	case "":
		return sections
	case "projects":
		return []string{"modes", "projects", "account"}
	case "tasks", "transfers", "notices", "log", "host", "stats", "fleet":
		return []string{"modes", tab}
	}
	return []string{"modes"}
}

// buildReq says what a view is built for.
type buildReq struct {
	csrf, session string
	page          int
	// need names the sections to fill; nil fills every one, and the
	// Preferences view (the page itself).
	need map[string]bool
	// noCards leaves the task cards unrendered (view.TaskCards nil):
	// the stream renders only those it sends (taskPatch).
	noCards bool
}

// view is what the templates show, built from one Snapshot.
type view struct {
	CSRF   string
	Page   int    // of tasks, from 0
	ViewID string // the page's id for its stream (pageState)

	Modes  []modeView
	Health []guirpc.HealthWarning

	Tasks                []taskView
	TaskCards            []template.HTML // Tasks rendered (renderCards)
	TasksTotal, From, To int
	PrevPage, NextPage   int // -1: none

	Projects  []projectView
	Transfers []transferView
	Notices   []noticeView
	Log       []logLine
	Host      hostView
	Stats     []statView
	Fleet     fleetView
	Prefs     prefsView
	Account   accountView
	HasJob    bool
}

// statView is one project's credit history, plotted as an inline SVG
// (the Manager's Statistics tab: user and host total credit by day).
type statView struct {
	Name                   string
	UserPoints, HostPoints string // SVG polyline points in a chartW×chartH box
	From, To               string
	UserTotal, HostTotal   string
	Max                    string
	Days                   int
}

// The chart's box (SVG user units).
const (
	chartW = 300
	chartH = 100
)

type modeView struct {
	Which, Label   string
	Mode           int
	ModeText, Note string
}

type taskView struct {
	URL, Name, Project, State, Resources string
	Fraction                             float64
	Percent, Elapsed, Remaining          string
	Deadline                             string
	Key                                  string
	CanSuspend, CanResume, CanAbort      bool
	Running                              bool
}

type projectView struct {
	URL, Name, Status, User, Team string
	Share                         float64
	TotalCredit, AvgCredit        string
	Suspended, NoNewTasks         bool
	Key                           string
}

// projOp is one project button's form.
type projOp struct{ CSRF, URL, Name, Op, Label, Confirm string }

type transferView struct {
	URL, Project, File, Direction, Status, Progress, Key string
}

type noticeView struct {
	Title, Text, Project, Category, When string
	Link                                 string
}

type logLine struct {
	When, Project, Body string
	Alert               bool
}

type hostView struct {
	Name, OS, CPU, Memory, Disk, Benchmarks, Coprocs, OnFrac string
	NCPUs                                                    int
}

// build reads the state through the Backend, as GUI RPC's read ops do,
// and fills what r needs: only the parts of the state (guirpc.Parts),
// notices and log lines that the sections shown need.
func (s *Server) build(ctx context.Context, r buildReq) (*view, error) {
	want := func(name string) bool { return r.need == nil || r.need[name] }
	var parts guirpc.Parts
	if want("tasks") || want("fleet") {
		parts |= guirpc.PartResults // the fleet's card of this host counts tasks
	}
	if want("transfers") {
		parts |= guirpc.PartTransfers
	}
	if r.need == nil {
		parts |= guirpc.PartPrefsOverride
	}
	st, err := s.cfg.Backend.Snapshot(ctx, parts)
	if err != nil {
		return nil, fmt.Errorf("reading the client state: %w", err)
	}
	v := &view{CSRF: r.csrf, Page: r.page, Health: st.CCStatus.Health}
	cc := st.CCStatus
	v.Modes = []modeView{
		modeOf("run", "Computing", cc.TaskMode, cc.TaskModePerm, cc.TaskModeDelay, cc.TaskSuspendReason),
		modeOf("gpu", "GPU", cc.GPUMode, cc.GPUModePerm, cc.GPUModeDelay, cc.GPUSuspendReason),
		modeOf("network", "Network", cc.NetworkMode, cc.NetworkModePerm, cc.NetworkModeDelay, cc.NetworkSuspendReason),
	}
	if want("tasks") {
		names := make(map[string]string, len(st.Projects))
		suspendedProj := make(map[string]bool, len(st.Projects))
		for i := range st.Projects {
			p := &st.Projects[i]
			names[p.MasterURL] = p.DisplayName()
			suspendedProj[p.MasterURL] = p.Suspended
		}
		v.TasksTotal = len(st.Results)
		nPages := max(1, (v.TasksTotal+pageSize-1)/pageSize)
		v.Page = min(max(r.page, 0), nPages-1)
		v.From = v.Page * pageSize
		v.To = min(v.From+pageSize, v.TasksTotal)
		v.PrevPage, v.NextPage = v.Page-1, v.Page+1
		if v.NextPage >= nPages {
			v.NextPage = -1
		}
		for i := v.From; i < v.To; i++ {
			v.Tasks = append(v.Tasks, taskOf(&st.Results[i], names, suspendedProj, &cc))
		}
		if !r.noCards {
			if _, err := s.renderCards(v, nil); err != nil {
				return nil, err
			}
		}
	}
	if want("projects") {
		for i := range st.Projects {
			v.Projects = append(v.Projects, projectOf(&st.Projects[i]))
		}
	}
	if want("account") && r.session != "" {
		v.Account, v.HasJob = s.accountStatus(r.session)
	}
	if want("transfers") {
		names := make(map[string]string, len(st.Projects))
		for i := range st.Projects {
			names[st.Projects[i].MasterURL] = st.Projects[i].DisplayName()
		}
		for _, t := range st.Transfers {
			v.Transfers = append(v.Transfers, transferOf(t, names))
		}
	}
	if src, ok := s.cfg.Backend.(guirpc.NoticeSource); ok && want("notices") {
		if list, err := src.Notices(ctx); err == nil {
			ns := list.Notices
			for i := len(ns) - 1; i >= 0 && len(v.Notices) < noticesShown; i-- {
				v.Notices = append(v.Notices, noticeOf(ns[i]))
			}
		}
	}
	if s.cfg.Log != nil && want("log") {
		for _, m := range s.cfg.Log.Since(max(0, s.cfg.Log.LastSeqno()-logShown)) {
			v.Log = append(v.Log, logLine{When: m.Time.Local().Format("Jan 2 15:04:05"), Project: m.Project, Body: m.Body, Alert: m.Priority > 1})
		}
		// newest first, as a live log reads best at the top
		for i, j := 0, len(v.Log)-1; i < j; i, j = i+1, j-1 {
			v.Log[i], v.Log[j] = v.Log[j], v.Log[i]
		}
	}
	if want("host") {
		v.Host = hostOf(st)
	}
	if want("stats") {
		for i := range st.Projects {
			if sv, ok := statsOf(&st.Projects[i]); ok {
				v.Stats = append(v.Stats, sv)
			}
		}
	}
	if want("fleet") {
		// fleetOf keeps the other hosts' pollers going while the Fleet
		// view is looked at (fleetPoller.watch)
		v.Fleet = s.fleetOf(st, v)
	}
	if r.need == nil {
		v.Prefs = prefsViewOf(st.Prefs, strings.TrimSpace(st.PrefsOverride) != "")
		v.Prefs.CSRF = r.csrf
	}
	return v, nil
}

// cardCache holds task cards rendered, by what they show: an update
// renders again only the cards that changed (the running tasks' few), so
// that a page of 200 tasks costs a stream little more than its changes.
type cardCache map[taskView]template.HTML

// renderCards renders v's task cards, taking unchanged ones from cache
// (nil: none), and returns the cache for the next update: this one's
// cards, so that it holds no more than a page.
func (s *Server) renderCards(v *view, cache cardCache) (cardCache, error) {
	next := make(cardCache, len(v.Tasks))
	v.TaskCards = make([]template.HTML, len(v.Tasks))
	for i, t := range v.Tasks {
		h, err := s.renderCard(v.CSRF, t, cache)
		if err != nil {
			return nil, err
		}
		v.TaskCards[i] = h
		next[t] = h
	}
	return next, nil
}

// renderCard is one task's card, from cache when it holds the card.
func (s *Server) renderCard(csrf string, t taskView, cache cardCache) (template.HTML, error) {
	if h, ok := cache[t]; ok {
		return h, nil
	}
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, "task-card", struct {
		CSRF string
		T    taskView
	}{csrf, t}); err != nil {
		return "", fmt.Errorf("rendering task %s: %w", t.Name, err)
	}
	return template.HTML(b.String()), nil // rendered, and so escaped, by html/template
}

// modeText is the Manager's words for a run mode (clientgui's Activity
// menu: Run always, Run based on preferences, Suspend).
func modeText(m int) string {
	switch m {
	case guirpc.ModeAlways:
		return "Always"
	case guirpc.ModeAuto:
		return "Based on preferences"
	case guirpc.ModeNever:
		return "Suspended"
	}
	return "Unknown"
}

func modeOf(which, label string, mode, perm int, delay float64, reason int) modeView {
	m := modeView{Which: which, Label: label, Mode: mode, ModeText: modeText(mode)}
	var notes []string
	if delay > 0 {
		notes = append(notes, fmt.Sprintf("for %s more, then %s", duration(delay), strings.ToLower(modeText(perm))))
	}
	if reason != 0 {
		notes = append(notes, "suspended: "+client.SuspendReason(reason).String())
	}
	m.Note = strings.Join(notes, "; ")
	return m
}

// EXIT_* codes the task state names (lib/error_numbers.h).
const (
	exitAbortedViaGUI     = boinc.ExitAbortedViaGUI    // 203
	exitAbortedByProject  = boinc.ExitAbortedByProject // 202
	exitUnstartedLate     = 200
	exitDiskLimitExceeded = 196
	exitTimeLimitExceeded = 197
	exitMemLimitExceeded  = 198
)

// taskState follows clientgui/MainDocument.cpp result_description.
func taskState(r *guirpc.ResultInfo, projSuspended bool, cc *guirpc.CCStatus) string {
	var b strings.Builder
	if r.CoprocMissing {
		b.WriteString("GPU missing, ")
	}
	executing := r.Active != nil && r.Active.ActiveState == 1
	switch r.Phase {
	case boinc.PhaseNew:
		b.WriteString("New")
	case boinc.PhaseDownloading:
		b.WriteString("Downloading")
		if cc.NetworkSuspendReason != 0 {
			b.WriteString(" (suspended - " + client.SuspendReason(cc.NetworkSuspendReason).String() + ")")
		}
	case boinc.PhaseDownloadFailed:
		b.WriteString("Download failed")
	case boinc.PhaseDownloaded, boinc.PhaseComputing:
		const cpuThrottle = 64 // SUSPEND_REASON_CPU_THROTTLE
		switch {
		case projSuspended:
			b.WriteString("Project suspended by user")
		case r.SuspendedViaGUI:
			b.WriteString("Task suspended by user")
		case cc.TaskSuspendReason != 0 && cc.TaskSuspendReason&cpuThrottle == 0 && !executing:
			b.WriteString("Suspended - " + client.SuspendReason(cc.TaskSuspendReason).String())
		case r.Active != nil && r.Active.TooLarge:
			b.WriteString("Waiting for memory")
		case r.Active != nil && r.Active.NeedsShmem:
			b.WriteString("Waiting for shared memory")
		case r.Active != nil && r.Active.SchedulerState == 2:
			b.WriteString("Running")
		case r.Active != nil && r.Active.SchedulerState == 1:
			b.WriteString("Waiting to run")
		default:
			b.WriteString("Ready to start")
		}
		if r.SchedulerWait {
			b.Reset()
			b.WriteString("Postponed")
			if r.SchedulerWaitWhy != "" {
				b.WriteString(": " + r.SchedulerWaitWhy)
			}
		}
		if r.NetworkWait {
			b.Reset()
			b.WriteString("Waiting for network access")
		}
	case boinc.PhaseComputeError:
		b.WriteString("Computation error")
	case boinc.PhaseUploading:
		b.WriteString("Uploading")
		if cc.NetworkSuspendReason != 0 {
			b.WriteString(" (suspended - " + client.SuspendReason(cc.NetworkSuspendReason).String() + ")")
		}
	case boinc.PhaseUploadFailed:
		b.WriteString("Upload failed")
	case boinc.PhaseAborted:
		switch r.ExitStatus {
		case exitAbortedViaGUI:
			b.WriteString("Aborted by user")
		case exitAbortedByProject:
			b.WriteString("Aborted by project")
		case exitUnstartedLate:
			b.WriteString("Aborted: not started by deadline")
		case exitDiskLimitExceeded:
			b.WriteString("Aborted: task disk limit exceeded")
		case exitTimeLimitExceeded:
			b.WriteString("Aborted: run time limit exceeded")
		case exitMemLimitExceeded:
			b.WriteString("Aborted: memory limit exceeded")
		default:
			b.WriteString("Aborted")
		}
	case boinc.PhaseAcked:
		b.WriteString("Acknowledged")
	default:
		b.WriteString("Ready to report")
	}
	return b.String()
}

func taskOf(r *guirpc.ResultInfo, names map[string]string, projSuspended map[string]bool, cc *guirpc.CCStatus) taskView {
	t := taskView{
		URL: r.ProjectURL, Name: r.Name, Project: names[r.ProjectURL],
		State:     taskState(r, projSuspended[r.ProjectURL], cc),
		Resources: r.Resources,
		Key:       r.ProjectURL + " " + r.Name,
	}
	if t.Project == "" {
		t.Project = r.ProjectURL
	}
	frac, elapsed := r.FractionDone, r.ElapsedTime
	if r.Active != nil {
		frac, elapsed = r.Active.FractionDone, r.Active.ElapsedTime
		t.Running = r.Active.SchedulerState == 2
	}
	if r.Phase >= boinc.PhaseUploading && r.Phase != boinc.PhaseDownloadFailed {
		elapsed = r.FinalElapsedTime
		if r.Phase != boinc.PhaseComputeError && r.Phase != boinc.PhaseAborted {
			frac = 1
		}
	}
	t.Fraction = min(max(frac, 0), 1)
	t.Percent = fmt.Sprintf("%.1f%%", 100*t.Fraction)
	t.Elapsed = clock(elapsed)
	t.Remaining = clock(r.EstimatedRemaining)
	if !r.ReportDeadline.IsZero() {
		t.Deadline = r.ReportDeadline.Local().Format("Jan 2 15:04")
	}
	active := r.Phase <= boinc.PhaseComputing
	t.CanSuspend = active && !r.SuspendedViaGUI
	t.CanResume = active && r.SuspendedViaGUI
	t.CanAbort = active
	return t
}

func projectOf(p *guirpc.ProjectInfo) projectView {
	v := projectView{
		URL: p.MasterURL, Name: p.DisplayName(), User: p.UserName, Team: p.TeamName,
		Share: p.ResourceShare, Suspended: p.Suspended, NoNewTasks: p.NoNewTasks, Key: p.MasterURL,
		TotalCredit: fmt.Sprintf("%.0f", p.UserTotalCredit), AvgCredit: fmt.Sprintf("%.1f", p.UserExpavgCredit),
	}
	var st []string
	if p.Suspended {
		st = append(st, "Suspended by user")
	}
	if p.NoNewTasks {
		st = append(st, "Won't get new tasks")
	}
	if p.SchedulerRPCInProgress {
		st = append(st, "Scheduler request in progress")
	}
	if p.DetachWhenDone {
		st = append(st, "Will detach when tasks are done")
	}
	v.Status = strings.Join(st, ", ")
	return v
}

func transferOf(t guirpc.TransferInfo, names map[string]string) transferView {
	v := transferView{URL: t.ProjectURL, Project: t.ProjectName, File: t.Name, Key: t.ProjectURL + " " + t.Name}
	if v.Project == "" {
		v.Project = names[t.ProjectURL]
	}
	v.Direction = "Download"
	if t.Upload {
		v.Direction = "Upload"
	}
	switch {
	case t.Active:
		v.Status = "Active"
		if t.XferSpeed > 0 {
			v.Status += fmt.Sprintf(", %s/s", sizeOf(t.XferSpeed))
		}
	case t.NextRequestTime.After(time.Now()):
		v.Status = "Retry in " + duration(time.Until(t.NextRequestTime).Seconds())
	case t.ProjectBackoff > 0:
		v.Status = "Project backoff " + duration(t.ProjectBackoff)
	default:
		v.Status = "Pending"
	}
	v.Progress = sizeOf(t.BytesXferred) + " of " + sizeOf(t.NBytes)
	return v
}

func noticeOf(n guirpc.Notice) noticeView {
	v := noticeView{Title: n.Title, Text: textOf(n.Description), Project: n.ProjectName, Category: n.Category}
	if !n.CreateTime.IsZero() {
		v.When = n.CreateTime.Local().Format("Jan 2 15:04")
	}
	// Only web links: html/template would defuse a javascript: URL
	// anyway, but a link that does nothing helps nobody.
	if l := strings.ToLower(n.Link); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
		v.Link = n.Link
	}
	return v
}

func hostOf(st *guirpc.State) hostView {
	h := st.Host
	v := hostView{
		Name: h.DomainName, OS: strings.TrimSpace(h.OSName + " " + h.OSVersion),
		CPU: strings.TrimSpace(h.PVendor + " " + h.PModel), NCPUs: h.PNCPUs,
		Memory: sizeOf(h.MNBytes),
		Disk:   fmt.Sprintf("%s free of %s", sizeOf(h.DFree), sizeOf(h.DTotal)),
	}
	if h.PCalculated > 0 {
		v.Benchmarks = fmt.Sprintf("%.2f GFLOPS and %.2f GIOPS per CPU, measured %s", h.PFpops/1e9, h.PIops/1e9,
			time.Unix(int64(h.PCalculated), 0).Local().Format("Jan 2 2006 15:04"))
	} else {
		v.Benchmarks = "not run yet"
	}
	var gp []string
	for _, c := range h.Coprocs {
		gp = append(gp, fmt.Sprintf("%d × %s %s (%s)", c.Count, c.Type, c.Name, sizeOf(c.AvailableRAM)))
	}
	v.Coprocs = strings.Join(gp, "; ")
	if v.Coprocs == "" {
		v.Coprocs = "none"
	}
	v.OnFrac = fmt.Sprintf("%.0f%% of the time on, %.0f%% of that allowed to compute", 100*st.TimeStats.OnFrac, 100*st.TimeStats.ActiveFrac)
	return v
}

// statsOf plots a project's daily totals; ok false when it has none.
func statsOf(p *guirpc.ProjectInfo) (statView, bool) {
	days := p.Statistics
	if len(days) == 0 {
		return statView{}, false
	}
	first, last := days[0].Day, days[len(days)-1].Day
	span := last.Sub(first).Seconds()
	top := 0.0
	for _, d := range days {
		top = max(top, d.UserTotalCredit, d.HostTotalCredit)
	}
	pts := func(val func(guirpc.DailyStats) float64) string {
		var b strings.Builder
		for i, d := range days {
			x := 0.0
			if span > 0 {
				x = chartW * d.Day.Sub(first).Seconds() / span
			}
			y := float64(chartH)
			if top > 0 {
				y = chartH * (1 - val(d)/top)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%.1f,%.1f", x, y)
		}
		if len(days) == 1 { // a point is drawn as a short flat line
			fmt.Fprintf(&b, " %d,%s", chartW, strings.SplitN(b.String(), ",", 2)[1])
		}
		return b.String()
	}
	end := days[len(days)-1]
	return statView{
		Name:       p.DisplayName(),
		UserPoints: pts(func(d guirpc.DailyStats) float64 { return d.UserTotalCredit }),
		HostPoints: pts(func(d guirpc.DailyStats) float64 { return d.HostTotalCredit }),
		From:       first.Local().Format("Jan 2 2006"), To: last.Local().Format("Jan 2 2006"),
		UserTotal: fmt.Sprintf("%.0f", end.UserTotalCredit), HostTotal: fmt.Sprintf("%.0f", end.HostTotalCredit),
		Max: fmt.Sprintf("%.0f", top), Days: len(days),
	}, true
}

// textOf is a notice's HTML as plain text: tags (and what script and
// style elements hold) dropped, entities decoded; html/template then
// escapes the result, so a project's markup can neither run nor style
// the page.
func textOf(h string) string {
	var b strings.Builder
	lower := strings.ToLower(h)
	for i := 0; i < len(h); {
		c := h[i]
		if c != '<' {
			b.WriteByte(c)
			i++
			continue
		}
		unclosed := false
		for _, skip := range []string{"script", "style"} {
			if strings.HasPrefix(lower[i+1:], skip) {
				end := strings.Index(lower[i:], "</"+skip)
				if end < 0 {
					unclosed = true // the rest is its content
					break
				}
				i += end
			}
		}
		if unclosed {
			break
		}
		end := strings.IndexByte(h[i:], '>')
		if end < 0 {
			break
		}
		tag := lower[i : i+end]
		if strings.HasPrefix(tag, "<br") || strings.HasPrefix(tag, "<p") || strings.HasPrefix(tag, "</p") || strings.HasPrefix(tag, "<li") {
			b.WriteByte('\n')
		}
		i += end + 1
	}
	return strings.TrimSpace(unescapeEntities(b.String()))
}

func unescapeEntities(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&nbsp;", " ", "&amp;", "&").Replace(s)
}

// clock is seconds as H:MM:SS, as the Manager's Tasks tab shows times.
func clock(sec float64) string {
	if !(sec > 0) || math.IsInf(sec, 0) {
		return "—"
	}
	n := int64(sec)
	return fmt.Sprintf("%d:%02d:%02d", n/3600, n/60%60, n%60)
}

func duration(sec float64) string {
	d := time.Duration(sec * float64(time.Second)).Round(time.Second)
	if d >= time.Hour {
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	if d >= time.Minute {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return d.String()
}

func sizeOf(n float64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%.0f B", n)
	}
	div, exp := float64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", n/div, "KMGTP"[exp])
}

func parseTemplates() (*template.Template, error) {
	funcs := template.FuncMap{
		"add1": func(i int) int { return i + 1 },
		"pcheck": func(p prefsView, name, label string) struct {
			Name, Label string
			On          bool
		} {
			return struct {
				Name, Label string
				On          bool
			}{name, label, p.On[name]}
		},
		"projop": func(csrf string, p projectView, op, label, confirm string) projOp {
			return projOp{CSRF: csrf, URL: p.URL, Name: p.Name, Op: op, Label: label, Confirm: confirm}
		},
		"fleettask": fleetTaskOp,
	}
	t, err := template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html")
	if err != nil {
		return nil, fmt.Errorf("webui: templates: %w", err)
	}
	return t, nil
}
