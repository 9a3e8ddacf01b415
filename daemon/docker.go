package daemon

import (
	"context"
	"log/slog"
	"runtime"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/container"
	"github.com/boincd/boincd/notices"
)

// Container apps (BOINC 8.x "BUDA" apps): the engine that runs them is
// looked for off the owner goroutine, as the GPU probe is, and reported
// back as an event; until then, and when none works, host_info names no
// engine and projects send no container jobs.

// containerLookPeriod: how often the PATH is looked at again for podman
// or docker, so that an engine installed (or removed) after start is
// noticed without a restart. A lookup is a few stat calls; the full
// detection runs only when what it finds changes.
const containerLookPeriod = 10 * time.Minute

// InstallDockerURL is where the notice about a missing engine points: the
// BOINC wiki's instructions the 8.x client links to.
const InstallDockerURL = "https://boinc.berkeley.edu/wiki/Installing_Docker"

// containerState is what the daemon knows about the container engine.
type containerState struct {
	// detecting, cleaning: a detection or cleanup is in flight (never
	// both: they use the same engine).
	detecting, cleaning bool
	// detected: a detection has completed; res is its result.
	detected bool
	res      container.Result
	// redetect: detect again when the one in flight (if any) ends
	// (reset_host_info, a changed PATH).
	redetect bool
	// cleanup: a cleanup is due (start, project reset or detach).
	cleanup bool
	// lookedUp is what the PATH lookups found at the last detection;
	// nextLook is when to look again.
	lookedUp string
	nextLook time.Time
	// logged is the summary last logged, so each result is logged once.
	logged string
	// firstStart is when the first detection started.
	firstStart time.Time
}

// containerFirstWait bounds how long scheduler requests wait for the
// first detection (awaitingContainers).
const containerFirstWait = 2 * time.Minute

// awaitingContainers reports whether scheduler requests should wait for
// the first detection, still running. The C++ client finds the engine in
// HOST_INFO::get_host_info at start (get_docker_version), before its
// first request, so every request it sends says whether the host can run
// container jobs; one sent without that gets no container jobs, and the
// last request a project saw would say the host has no engine. An engine
// that hangs holds the requests containerFirstWait at most.
func (d *Daemon) awaitingContainers(now time.Time) bool {
	c := &d.ctr
	return c.detecting && !c.detected && !d.dontUseDocker() && now.Sub(c.firstStart) < containerFirstWait
}

type containerDetected struct {
	res      container.Result
	lookedUp string
}

type containerCleaned struct {
	removed []container.Removed
	err     error
}

// dontUseDocker: dont_use_docker (boincd.toml or cc_config.xml; ccopts.go).
func (d *Daemon) dontUseDocker() bool { return d.cc.eff.DontUseDocker }

// containerEngine is the working engine to report, if any.
func (d *Daemon) containerEngine() (container.Engine, bool) {
	c := &d.ctr
	if d.dontUseDocker() || !c.detected || !c.res.Found() {
		return container.Engine{}, false
	}
	return c.res.Engine, true
}

// containerRunner runs the engine's programs: the options' (tests), else
// the real ones as the account apps run as, since the engine must work
// for that account (rootless podman keeps images and storage per user).
func (d *Daemon) containerRunner() container.Runner {
	if d.opt.Containers != nil {
		return d.opt.Containers
	}
	x := container.Exec{}
	if d.runner != nil {
		x.Prepare = d.runner.AsApp
	}
	return x
}

// redetectContainers asks for a fresh detection (reset_host_info).
func (d *Daemon) redetectContainers() {
	d.ctr.redetect = true
}

// containerCleanupSoon asks for a cleanup of the images and containers no
// task uses any more (after a project reset or detach).
func (d *Daemon) containerCleanupSoon() {
	d.ctr.cleanup = true
}

// maybeContainers starts what is due: the first detection (at the first
// step, after GUI RPC answers), a re-detection, a cleanup, or the rare
// PATH lookup that notices an engine installed after start.
func (d *Daemon) maybeContainers(now time.Time) {
	c := &d.ctr
	if d.dontUseDocker() {
		if c.logged != "dont_use_docker" {
			c.logged = "dont_use_docker"
			d.log.Info(container.Result{Disabled: true}.Summary())
		}
		// Detected again when the option is dropped.
		c.detected, c.res = false, container.Result{}
		return
	}
	if c.detecting || c.cleaning || d.ctx.Err() != nil {
		return
	}
	if c.detected && !c.redetect && !now.Before(c.nextLook) {
		c.nextLook = now.Add(containerLookPeriod)
		if found := lookUpEngines(d.containerRunner()); found != c.lookedUp {
			d.log.Info("container engine programs changed; looking for a working engine again",
				slog.String("before", c.lookedUp), slog.String("now", found))
			c.redetect = true
		}
	}
	switch {
	case !c.detected || c.redetect:
		d.startContainerDetection(now)
	case c.cleanup && c.res.Found():
		d.startContainerCleanup()
	}
}

// lookUpEngines is where the engines' programs are found on the PATH,
// as one comparable string.
func lookUpEngines(run container.Runner) string {
	var b strings.Builder
	for _, name := range []string{"podman", "docker"} {
		p, _ := run.LookPath(name)
		b.WriteString(name + "=" + p + ";")
	}
	return b.String()
}

func (d *Daemon) startContainerDetection(now time.Time) {
	c := &d.ctr
	c.detecting, c.redetect = true, false
	c.nextLook = now.Add(containerLookPeriod)
	if c.firstStart.IsZero() {
		c.firstStart = now
	}
	det := &container.Detector{
		Runner:  d.containerRunner(),
		DataDir: d.opt.DataDir,
		Log:     d.log.With(slog.String("component", "container")),
	}
	d.wg.Add(1)
	go func(ctx context.Context) {
		defer d.wg.Done()
		// The PATH is read before the detection: an engine installed
		// while it runs is then seen as a change at the next lookup.
		looked := lookUpEngines(det.Runner)
		d.send(containerDetected{res: det.Detect(ctx), lookedUp: looked})
	}(d.ctx)
}

func (d *Daemon) handleContainerDetected(ev containerDetected) {
	c := &d.ctr
	c.detecting, c.detected = false, true
	c.res, c.lookedUp = ev.res, ev.lookedUp
	if s := ev.res.Summary(); s != c.logged {
		// The text alone when there is none: `boincd status` shows the
		// reason from the event log.
		c.logged = s
		if ev.res.Found() {
			d.log.Info(s, slog.String("program", ev.res.Engine.CLI))
		} else {
			d.log.Info(s)
		}
	}
	if ev.res.Found() {
		// At start and whenever an engine is (again) found: what earlier
		// runs left behind goes.
		c.cleanup = true
	}
	// The notice follows now, not at the next health check.
	d.syncClientNotices(time.Now())
}

// containerKeep names what the tasks still in the state use. It is taken
// when the cleanup starts; a task that arrives during the few seconds a
// cleanup takes cannot have built its image yet (its files are still
// downloading).
func (d *Daemon) containerKeep() container.Keep {
	tasks := make([]container.Task, 0, len(d.st.results))
	for _, r := range d.st.results {
		t := container.Task{ProjectDir: boinc.EscapeProjectURL(r.ProjectURL), Workunit: r.WUName, Result: r.Name}
		if wu := d.st.wus[entityKey(r.ProjectURL, r.WUName)]; wu != nil {
			t.App = wu.AppName
		}
		tasks = append(tasks, t)
	}
	return container.KeepFor(tasks)
}

func (d *Daemon) startContainerCleanup() {
	c := &d.ctr
	c.cleaning, c.cleanup = true, false
	run, engine, keep := d.containerRunner(), c.res.Engine, d.containerKeep()
	log := d.log.With(slog.String("component", "container"))
	d.wg.Add(1)
	go func(ctx context.Context) {
		defer d.wg.Done()
		removed, err := container.Cleanup(ctx, run, engine, keep, log)
		d.send(containerCleaned{removed: removed, err: err})
	}(d.ctx)
}

func (d *Daemon) handleContainerCleaned(ev containerCleaned) {
	d.ctr.cleaning = false
	if ev.err != nil {
		d.log.Warn("container cleanup incomplete; retried after the next project reset or detach, or at the next start",
			slog.Any("err", ev.err), slog.Int("removed", len(ev.removed)))
	}
}

// handleContainerEvent takes the detection's and the cleanup's reports.
func (d *Daemon) handleContainerEvent(ev any) bool {
	switch ev := ev.(type) {
	case containerDetected:
		d.handleContainerDetected(ev)
	case containerCleaned:
		d.handleContainerCleaned(ev)
	default:
		return false
	}
	return true
}

// containerNotice is the client notice the 8.x client shows when no
// engine works: projects with container apps send this host none of
// their work. None with dont_use_docker, none before a detection ends,
// and none off Linux, where boincd runs no container apps.
// noticeReason shortens a detection failure for the notice: the engines'
// stderr can run to several lines of their own log format, which the event
// log keeps whole ("Docker: not usable: ...").
func noticeReason(why string) string {
	const max = 200
	if i := strings.IndexAny(why, "\r\n"); i >= 0 {
		why = why[:i]
	}
	if len(why) <= max {
		return why
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut] + "… (the event log has the rest)"
}

func (d *Daemon) containerNotice() (notices.Notice, bool) {
	c := &d.ctr
	if runtime.GOOS != "linux" || d.dontUseDocker() || !c.detected || c.res.Found() {
		return notices.Notice{}, false
	}
	return notices.Notice{
		Key:   "docker:missing",
		Title: "Docker or podman not found",
		Description: "Some BOINC projects run their jobs in containers and send them only to computers that can run them. " +
			"No working container engine was found here (" + noticeReason(c.res.Reason) + "). " +
			"To get such jobs, install podman (recommended) or Docker; boincd notices it without a restart. " +
			"Instructions: " + InstallDockerURL + ". To stop this notice, set dont_use_docker.",
		Link: InstallDockerURL,
	}, true
}
