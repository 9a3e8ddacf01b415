//go:build unix

package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/statefile"
)

// soakAppScript is a short job that checkpoints: four steps of 0.25 s,
// each recorded in the slot's "ckpt" file (replaced atomically), so a
// task restarted in its slot carries on; then it writes its output
// slowly, a line every 50 ms, so that kills also land while an output
// file is being written.
const soakAppScript = `#!/bin/sh
# boincd soak test app; cwd = slot directory.
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in 2>/dev/null)
[ -n "$inpath" ] || inpath=in
i=$(cat ckpt 2>/dev/null)
[ -n "$i" ] || i=0
while [ "$i" -lt 4 ]; do
  sleep 0.25
  i=$((i+1))
  echo "$i" > ckpt.tmp && mv ckpt.tmp ckpt
done
md=$(md5sum < "$inpath" | cut -d' ' -f1)
: > out
for k in 1 2 3 4 5 6 7 8; do
  echo "soak line $k input md5 $md" >> out
  sleep 0.05
done
echo 0 > boinc_finish_called
exit 0
`

// soakOutput is what soakAppScript writes for a job of project p.
func soakOutput(p *project) outputFunc {
	return func(j testproject.Job) []byte {
		sum := md5.Sum(testproject.JobInput(j.N, p.cfg.Job.InputSize))
		var b bytes.Buffer
		for k := 1; k <= 8; k++ {
			fmt.Fprintf(&b, "soak line %d input md5 %s\n", k, hex.EncodeToString(sum[:]))
		}
		return b.Bytes()
	}
}

// soakFigures are the soak's results, logged at the end.
type soakFigures struct {
	kills, midCommit, midDownload, midUpload, midCompute int
	partialFiles                                         int
	reported, duplicates, protocolDuplicates, losses     int
	notReceived                                          int
}

// TestCrashSoak runs the client against two projects while killing it
// with SIGKILL over and over: at random moments after it started, and
// inside state commits (while bbolt writes pages) through the commit
// hook. After every kill the state file must open clean and every file
// it lists must be whole or a correct prefix (a resumable download);
// at the end every result must have been reported, no more often than the
// kills inside its report exchange explain, with the right output, and
// nothing may be left running or lying around.
//
// BOINCD_SOAK_SEED picks the random sequence (default fixed, logged);
// BOINCD_SOAK_KILLS the number of kills (default 50, 12 with -short).
func TestCrashSoak(t *testing.T) {
	t.Parallel()
	start := time.Now()
	seed := uint64(20250611)
	if s := os.Getenv("BOINCD_SOAK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BOINCD_SOAK_SEED=%q: %v", s, err)
		}
		seed = v
	}
	kills := 50
	if testing.Short() {
		kills = 12
	}
	if s := os.Getenv("BOINCD_SOAK_KILLS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 {
			t.Fatalf("BOINCD_SOAK_KILLS=%q: want a count", s)
		}
		kills = v
	}
	t.Logf("soak seed %d, %d kills (BOINCD_SOAK_SEED, BOINCD_SOAK_KILLS)", seed, kills)
	rng := rand.New(rand.NewPCG(seed, 0x50a6))

	app := testproject.ShellApp("soakapp", soakAppScript)
	fast := startProject(t, testproject.Config{Name: "soak fast", TotalJobs: 14, Apps: []testproject.App{app},
		Job: testproject.JobTemplate{CommandLine: "--job {n}", InputSize: 3000}})
	// 60 kB at 80 kB/s: downloads last most of a second, so random kills
	// often land in the middle of one.
	slow := startProject(t, testproject.Config{Name: "soak slow downloads", TotalJobs: 8, Apps: []testproject.App{app},
		Job:    testproject.JobTemplate{CommandLine: "--job {n}", InputSize: 60_000},
		Faults: testproject.Faults{DownloadBytesPerSec: 80_000}})
	projects := []*project{fast, slow}
	dir := newDataDir(t)
	writeConfig(t, dir, configSpec{projects: projects})

	var fig soakFigures
	acc := newSoakAccount(projects)
	for i := 1; i <= kills; i++ {
		o := childOptions{DataDir: dir, Seed: rng.Uint64()}
		// A third of the runs die inside a commit, by their own hand.
		hook := rng.IntN(3) == 0
		if hook {
			o.CrashAtCommit = 1 + rng.IntN(12)
			o.CrashAfterWrites = 1 + rng.IntN(2)
		}
		d := startDaemon(t, fmt.Sprintf("soak run %d", i), o)
		d.waitLog("boincd started", 60*time.Second)
		after := 50*time.Millisecond + time.Duration(rng.Int64N(int64(1450*time.Millisecond)))
		select {
		case <-d.exited:
		case <-time.After(after):
		}
		select {
		case <-d.exited:
		default:
			d.signal(syscall.SIGKILL)
		}
		if code := d.wait(10 * time.Second); code != -1 {
			t.Fatalf("run %d: the daemon exited with %d instead of dying by SIGKILL:\n%s", i, code, d.tail(40))
		}
		fig.kills++
		how := fmt.Sprintf("killed %v after start", after)
		if strings.Contains(d.output(), crashMarker) {
			fig.midCommit++
			how = fmt.Sprintf("killed itself in commit %d after %d write(s)", o.CrashAtCommit, o.CrashAfterWrites)
		}
		if ongoing(d, "file", "finished download", "started download") {
			fig.midDownload++
		}
		if ongoing(d, "file", "finished upload", "started upload") {
			fig.midUpload++
		}
		if ongoing(d, "task", "computation finished", "task started", "task restarted") {
			fig.midCompute++
		}
		fig.partialFiles += acc.afterKill(t, i, dir, d)
		if t.Failed() {
			t.Fatalf("run %d (%s) left a bad state; its log:\n%s", i, how, d.tail(60))
		}
		t.Logf("run %d: %s", i, how)
	}

	final := startDaemon(t, "final daemon", childOptions{DataDir: dir})
	acc.noteLog(final)
	acc.waitDone(t, final, 150*time.Second)
	waitNoLeftovers(t, dir, 20*time.Second, projects...)
	final.stop()
	acc.checkState(t, "after the final run", dir)
	fig.reported, fig.duplicates, fig.protocolDuplicates, fig.losses, fig.notReceived = acc.check(t)
	if left := leftovers(dir, projects...); len(left) > 0 {
		t.Errorf("left behind after shutdown: %v", left)
	}
	t.Logf("crash soak (seed %d): %d kills (%d inside a state commit, %d during a download, %d during an upload, %d while a task computed or wrote its output); "+
		"%d partial downloads found and resumed; %d results reported, %d duplicate reports (%d explained by a kill between the server's reply and the client's commit, %d unexplained), %d lost; "+
		"%d results the server sent into a kill before the client could save them (a real server resends these); "+
		"%d files of acked results found removed before the commit that forgot them; wall time %v",
		seed, fig.kills, fig.midCommit, fig.midDownload, fig.midUpload, fig.midCompute,
		fig.partialFiles, fig.reported, fig.duplicates, fig.protocolDuplicates, fig.duplicates-fig.protocolDuplicates, fig.losses,
		fig.notReceived, acc.removedEarly, time.Since(start).Round(time.Millisecond))
}

// ongoing says whether d's log shows something begun (a line with one of
// the begin messages) and not ended (the end message), per value of the
// attribute key.
func ongoing(d *daemonProc, key, end string, begin ...string) bool {
	open := map[string]bool{}
	for _, l := range d.snapshot() {
		k := l.str(key)
		if k == "" {
			continue
		}
		k = l.str("project") + "\x00" + k
		switch {
		case slices.Contains(begin, l.Msg):
			open[k] = true
		case l.Msg == end:
			delete(open, k)
		}
	}
	return len(open) > 0
}

// soakAccount follows what the client persisted and what the servers saw
// across the runs.
type soakAccount struct {
	projects []*project
	// persisted: results (project URL + NUL + name, as Result.Key) seen in a state file after some kill, or named
	// in some run's log (the client acts only on what it committed).
	persisted map[string]bool
	// windows counts, per result, the kills after which the server had
	// the result reported while the state still held it unacknowledged:
	// each such restart reports it again, as it must (the client cannot
	// know whether the server got the report before it died).
	windows map[string]int
	// inputs maps an input file (project dir/name) to its content.
	inputs map[string][]byte
	// removedEarly counts files found missing although the state lists
	// them as present, used only by results already uploaded.
	removedEarly int
}

func newSoakAccount(projects []*project) *soakAccount {
	return &soakAccount{projects: projects, persisted: map[string]bool{}, windows: map[string]int{}, inputs: map[string][]byte{}}
}

// noteLog records the results a run's log names.
func (a *soakAccount) noteLog(d *daemonProc) {
	for _, l := range d.snapshot() {
		if name := l.str("task"); name != "" {
			a.persisted[l.str("project")+"\x00"+name] = true
		}
	}
}

// afterKill checks the data directory left by a killed run and returns how
// many partial downloads it found.
func (a *soakAccount) afterKill(t *testing.T, run int, dir string, d *daemonProc) int {
	t.Helper()
	a.noteLog(d)
	snap := a.checkState(t, fmt.Sprintf("after kill %d", run), dir)
	if snap == nil {
		return 0
	}
	inState := map[string]bool{}
	for _, r := range snap.Results {
		inState[r.Key()] = true
		a.persisted[r.Key()] = true
	}
	for _, p := range a.projects {
		// A request the killed client had sent is still being handled:
		// its reports count as before the kill.
		if !p.Quiesce(5 * time.Second) {
			t.Errorf("%s still handling requests 5 s after the kill", p.cfg.Name)
		}
		st := p.Stats()
		for name, n := range st.Reported {
			if k := p.URL() + "\x00" + name; n > 0 && inState[k] {
				a.windows[k]++
			}
		}
		for _, j := range st.Jobs {
			if j.InputFile != "" {
				a.inputs[filepath.Join(p.dirName(), j.InputFile)] = testproject.JobInput(j.N, p.cfg.Job.InputSize)
			}
		}
	}
	return a.checkFiles(t, run, dir, snap)
}

// checkState opens the state file as the daemon would (structure walk,
// decoding every value) and returns its content.
func (a *soakAccount) checkState(t *testing.T, when, dir string) *statefile.Snapshot {
	t.Helper()
	s, err := statefile.Open(filepath.Join(dir, daemon.StateFileName), statefile.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Errorf("%s: the state file does not open clean: %v", when, err)
		return nil
	}
	defer s.Close()
	snap, err := s.Load()
	if err != nil {
		t.Errorf("%s: the state file does not load: %v", when, err)
		return nil
	}
	return snap
}

// checkFiles: every file the state says is present is whole (size and
// md5); every file still to download is absent or a correct prefix of its
// content (the client resumes it with a Range request); no file is in an
// error state. It returns the number of partial downloads.
func (a *soakAccount) checkFiles(t *testing.T, run int, dir string, snap *statefile.Snapshot) int {
	t.Helper()
	partial := 0
	for _, f := range snap.Files {
		rel := filepath.Join(boinc.EscapeProjectURL(f.ProjectURL), f.Name)
		path := filepath.Join(dir, "projects", rel)
		data, err := os.ReadFile(path)
		exists := err == nil
		if err != nil && !os.IsNotExist(err) {
			t.Errorf("kill %d: %s: %v", run, rel, err)
			continue
		}
		switch {
		case f.Status < 0:
			t.Errorf("kill %d: file %s is in error state %d (%s)", run, rel, f.Status, f.ErrorMsg)
		case f.Status == boinc.FilePresent:
			if len(f.UploadURLs) > 0 && f.Uploaded && !exists {
				continue // uploaded outputs may go before the ack
			}
			if !exists {
				if onlyDoneResultsUse(snap, f) || (len(f.UploadURLs) > 0 && a.serverHas(f.Name)) {
					// The daemon removes the files of an acked result
					// while handling the ack, and an output right after
					// its upload, before the commit that records it; a
					// kill in between leaves this. No result needs the
					// bytes again: the server has the whole output (the
					// restart learns it from the upload handler's size
					// query), the restart forgets the acked result's files.
					a.removedEarly++
					continue
				}
				t.Errorf("kill %d: the state says %s is present, but it is missing", run, rel)
				continue
			}
			if f.NBytes > 0 && float64(len(data)) != f.NBytes {
				t.Errorf("kill %d: %s has %d bytes, the state says %v", run, rel, len(data), f.NBytes)
			}
			if sum := md5.Sum(data); f.MD5 != "" && hex.EncodeToString(sum[:]) != f.MD5 {
				t.Errorf("kill %d: %s has md5 %x, the state says %s", run, rel, sum, f.MD5)
			}
		case len(f.DownloadURLs) > 0 && exists:
			if f.NBytes > 0 && float64(len(data)) > f.NBytes {
				t.Errorf("kill %d: download %s has %d bytes, more than its %v", run, rel, len(data), f.NBytes)
			}
			if want, ok := a.inputs[rel]; ok && !bytes.HasPrefix(want, data) {
				t.Errorf("kill %d: partial download %s (%d bytes) is not a prefix of the file", run, rel, len(data))
			}
			if len(data) > 0 && float64(len(data)) < f.NBytes {
				partial++
			}
		}
	}
	return partial
}

// serverHas says whether a project holds the whole uploaded file.
func (a *soakAccount) serverHas(name string) bool {
	for _, p := range a.projects {
		if _, ok := p.Stats().Uploaded[name]; ok {
			return true
		}
	}
	return false
}

// onlyDoneResultsUse says whether every result that refers to f (its
// workunit's input, or its output) has uploaded its outputs, so that
// nothing will read f again, and some result does.
func onlyDoneResultsUse(snap *statefile.Snapshot, f *boinc.FileInfo) bool {
	wus := map[string]*boinc.Workunit{}
	for _, w := range snap.Workunits {
		wus[w.ProjectURL+"\x00"+w.Name] = w
	}
	used := false
	for _, r := range snap.Results {
		if r.ProjectURL != f.ProjectURL {
			continue
		}
		refs := slices.Clone(r.OutputFiles)
		if w := wus[r.ProjectURL+"\x00"+r.WUName]; w != nil {
			refs = append(refs, w.InputFiles...)
		}
		for _, ref := range refs {
			if ref.FileName != f.Name {
				continue
			}
			if r.Phase != boinc.PhaseUploaded && r.Phase != boinc.PhaseReported {
				return false
			}
			used = true
		}
	}
	for _, v := range snap.AppVersions {
		for _, ref := range v.FileRefs {
			if v.ProjectURL == f.ProjectURL && ref.FileName == f.Name {
				return false
			}
		}
	}
	return used
}

// unreceived lists the results a server sent that the client never saved:
// the kill came between the server's reply and the client's commit.
func (a *soakAccount) unreceived(p *project, st testproject.Stats) []string {
	var out []string
	for _, name := range st.Sent {
		if st.Reported[name] == 0 && !a.persisted[p.URL()+"\x00"+name] {
			out = append(out, name)
		}
	}
	return out
}

// waitDone waits until every project handed out all its jobs and every
// result the client saved is reported, steadily for 3 s (a result just
// received shows up in the log a moment later).
func (a *soakAccount) waitDone(t *testing.T, d *daemonProc, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var since time.Time
	for {
		a.noteLog(d)
		done := true
		for _, p := range a.projects {
			st := p.Stats()
			if len(st.Sent) < p.cfg.TotalJobs {
				done = false
			}
			for _, name := range st.Sent {
				if st.Reported[name] == 0 && a.persisted[p.URL()+"\x00"+name] {
					done = false
				}
			}
		}
		switch {
		case !done:
			since = time.Time{}
		case since.IsZero():
			since = time.Now()
		case time.Since(since) > 3*time.Second:
			return
		}
		select {
		case <-d.exited:
			t.Fatalf("%s exited before every result was reported:\n%s", d.name, d.tail(60))
		default:
		}
		if time.Now().After(deadline) {
			for _, p := range a.projects {
				st := p.Stats()
				t.Errorf("%s: sent %d of %d, reported %v", p.cfg.Name, len(st.Sent), p.cfg.TotalJobs, st.Reported)
			}
			for _, l := range d.snapshot() {
				if l.Msg == "upload failed; will retry" && strings.Contains(l.str("err"), "no such file") && a.serverHas(l.str("file")) {
					t.Errorf("output %s was removed after its upload but before the commit that records the upload (daemon/xfer.go: use removeAfterCommit): the restart tries to upload a file that is gone", l.str("file"))
					break
				}
			}
			t.Fatalf("not done after %v; log:\n%s", timeout, d.tail(80))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// check compares the servers' view with the account and returns the
// figures: results reported, duplicate reports, those explained by a
// kill inside the report exchange, lost results, and results never
// received.
func (a *soakAccount) check(t *testing.T) (reported, dups, explained, lost, notReceived int) {
	t.Helper()
	for _, p := range a.projects {
		st := p.Stats()
		for _, e := range st.Errors {
			// A client killed while it sends a request leaves the server
			// a short body: that is the kill, not the protocol.
			if strings.HasPrefix(e, "scheduler request: reading body:") && strings.Contains(e, "unexpected EOF") {
				t.Logf("%s: a request cut short by a kill: %s", p.cfg.Name, e)
				continue
			}
			t.Errorf("%s saw a protocol error: %s", p.cfg.Name, e)
		}
		notReceived += len(a.unreceived(p, st))
		out := soakOutput(p)
		names := slices.Clone(st.Sent)
		slices.Sort(names)
		for _, name := range names {
			n, k := st.Reported[name], p.URL()+"\x00"+name
			if n == 0 {
				if a.persisted[k] {
					lost++
					t.Errorf("result %s was saved by the client but never reported", name)
				}
				continue
			}
			reported++
			if n > 1 {
				dups += n - 1
				explained += min(n-1, a.windows[k])
				if n-1 > a.windows[k] {
					t.Errorf("result %s reported %d times; only %d kills came between its report and the saved ack", name, n, a.windows[k])
				}
			}
			rr := st.ReportedResults[name]
			if rr.ExitStatus != 0 {
				t.Errorf("result %s reported exit status %d; stderr:\n%s", name, rr.ExitStatus, rr.StderrOut)
			}
			job := st.Jobs[name]
			for _, f := range job.OutputFiles {
				got, ok := st.Uploaded[f]
				if !ok {
					t.Errorf("result %s: output %s never uploaded", name, f)
				} else if want := out(job); !bytes.Equal(got, want) {
					t.Errorf("result %s: output %s is\n%q\nwant\n%q", name, f, got, want)
				}
			}
		}
	}
	return reported, dups, explained, lost, notReceived
}
