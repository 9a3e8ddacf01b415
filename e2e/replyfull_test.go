//go:build linux

package e2e

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/boincd/boincd/daemon"
	"github.com/boincd/boincd/internal/testproject"
)

// mountTmpfs mounts a tmpfs of the given size ("20m") on a new directory
// and returns it; it is unmounted at cleanup. The test skips, saying why,
// where it cannot mount (not root, no CAP_SYS_ADMIN, no tmpfs).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	mnt, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0755"); err != nil {
		t.Skipf("cannot mount a %s tmpfs for a real full disk here (needs root or CAP_SYS_ADMIN): %v", size, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount the test's tmpfs %s: %v (detaching it)", mnt, err)
			_ = unix.Unmount(mnt, unix.MNT_DETACH)
		}
	})
	return mnt
}

// replyStep is where, in the handling of a scheduler reply, the disk
// fills.
type replyStep int

const (
	// fullBeforeCommit: the disk fills while the reply is on its way (the
	// server fills it before answering).
	fullBeforeCommit replyStep = iota
	// fullMidCommit: the daemon's own commit hook fills the disk, one page
	// left, right before bbolt writes, so the commit runs out of space
	// part-way through its pages.
	fullMidCommit
	// fullAfterCommit: the disk fills once the reply is saved.
	fullAfterCommit
	numReplySteps
)

func (s replyStep) String() string {
	return [...]string{"full before the reply's commit", "full in the middle of a commit", "full after the reply's commit"}[s]
}

// fullReplyAppScript: a short job whose output is its input's md5.
const fullReplyAppScript = `#!/bin/sh
inpath=$(sed -n 's:.*<soft_link>\(.*\)</soft_link>.*:\1:p' in 2>/dev/null)
[ -n "$inpath" ] || inpath=in
sleep 0.3
echo "input md5 $(md5sum < "$inpath" | cut -d' ' -f1)" > out
echo 0 > boinc_finish_called
exit 0
`

func fullReplyOutput(p *project) outputFunc {
	return func(j testproject.Job) []byte {
		sum := md5.Sum(testproject.JobInput(j.N, p.cfg.Job.InputSize))
		return []byte("input md5 " + hex.EncodeToString(sum[:]) + "\n")
	}
}

var (
	replyResultName = regexp.MustCompile(`<result>\s*<name>([^<]*)</name>`)
	replyAckName    = regexp.MustCompile(`<result_ack>\s*<name>([^<]*)</name>`)
)

// replyTrap waits, inside the test project's scheduler, for the first
// reply that both acknowledges results and hands out new tasks, remembers
// them, and fills the disk (or arms the daemon's commit hook) as its step
// says before the reply leaves.
//
// It also checks the request it answers: every task an earlier trapped
// reply handed out (prev) that the server has not seen reported must be
// reported or listed in <other_results>, so the server knows the client
// holds it (a task missing from both is one the server would resend, or
// let time out, as lost).
type replyTrap struct {
	step            replyStep
	filler, trigger string
	p               *project
	prev            []string
	fired           chan struct{}

	mu           sync.Mutex
	armed        bool
	acked, tasks []string
	unlisted     []string
	fillErr      error
}

func newReplyTrap(step replyStep, filler, trigger string, p *project, prev []string) *replyTrap {
	return &replyTrap{step: step, filler: filler, trigger: trigger, p: p, prev: prev, fired: make(chan struct{}), armed: true}
}

var requestOtherResult = regexp.MustCompile(`<other_result>\s*<name>([^<]*)</name>`)

func (tr *replyTrap) rewrite(_ int, reply []byte) []byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.armed {
		return reply
	}
	var acked, tasks []string
	for _, m := range replyAckName.FindAllSubmatch(reply, -1) {
		acked = append(acked, string(m[1]))
	}
	for _, m := range replyResultName.FindAllSubmatch(reply, -1) {
		tasks = append(tasks, string(m[1]))
	}
	if len(acked) == 0 || len(tasks) == 0 {
		return reply
	}
	tr.armed, tr.acked, tr.tasks = false, acked, tasks
	st := tr.p.Stats()
	listed := map[string]bool{}
	for _, re := range []*regexp.Regexp{requestOtherResult, replyResultName} {
		for _, m := range re.FindAllSubmatch(st.LastRequest, -1) {
			listed[string(m[1])] = true
		}
	}
	for _, name := range tr.prev {
		if !listed[name] && st.Reported[name] == 0 {
			tr.unlisted = append(tr.unlisted, name)
		}
	}
	switch tr.step {
	case fullBeforeCommit:
		_, tr.fillErr = fillDisk(tr.filler, 0)
	case fullMidCommit:
		tr.fillErr = os.WriteFile(tr.trigger, fmt.Appendf(nil, "%s %d", tr.filler, 4096), 0o600)
	}
	close(tr.fired)
	return reply
}

// TestDiskFullReplySoak: the data directory is on a 20 MB tmpfs. Round
// after round, the disk fills at one step of applying a scheduler reply
// that acknowledges results and hands out new tasks (before its commit,
// in the middle of a commit, after it), and the daemon is killed with
// SIGKILL right after it handled the reply. After every kill the state
// file must hold the reply: its new tasks, and none of the acknowledged
// results. Then the space is freed and the daemon restarted. At the end
// every task the server handed out has been reported exactly once, with
// the right output: nothing lost, nothing reported twice.
//
// Before the state reserve, the reply's commit failed on the full disk,
// the kill lost it: the new tasks were gone (never reported, not listed
// in <other_results>) and the acknowledged results were reported again.
func TestDiskFullReplySoak(t *testing.T) {
	t.Parallel()
	mnt := mountTmpfs(t, "20m")
	dir := filepath.Join(mnt, "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { checkNoProcessesUnder(t, filepath.Join(dir, "slots")) })
	filler, trigger := filepath.Join(mnt, "filler"), filepath.Join(mnt, "fill-trigger")
	rounds := 6
	if testing.Short() {
		rounds = 3
	}
	const perReply = 4
	total := perReply*rounds + 2*perReply
	app := testproject.ShellApp("fullapp", fullReplyAppScript)
	// request_delay 5 s: no other scheduler request can be on the wire
	// when a round's kill comes, so a duplicate report could only come
	// from a lost ack.
	p := startProject(t, testproject.Config{Name: "full disk", TotalJobs: total, MaxJobsPerRPC: perReply,
		RequestDelay: 5 * time.Second, Apps: []testproject.App{app},
		Job: testproject.JobTemplate{CommandLine: "--job {n}", InputSize: 2000}})
	writeConfig(t, dir, configSpec{projects: []*project{p}})
	// A 20 MB disk is below the default disk_min_free_gb: let it all be
	// used, so only the full disk itself stops anything.
	writeFile(t, filepath.Join(dir, "global_prefs_override.xml"), []byte("<global_preferences>\n"+
		"<disk_max_used_gb>0</disk_max_used_gb>\n<disk_max_used_pct>100</disk_max_used_pct>\n<disk_min_free_gb>0</disk_min_free_gb>\n"+
		"</global_preferences>\n"))

	var lost, reacked, reserveUsed, hookFilled, acks, tasks int
	var prev []string
	for round := 1; round <= rounds; round++ {
		step := replyStep((round - 1) % int(numReplySteps))
		tr := newReplyTrap(step, filler, trigger, p, prev)
		p.SetFaults(testproject.Faults{RewriteReply: tr.rewrite})
		d := startDaemon(t, fmt.Sprintf("round %d (%s)", round, step), childOptions{DataDir: dir, FillTrigger: trigger})
		select {
		case <-tr.fired:
		case <-d.exited:
			t.Fatalf("round %d: the daemon exited:\n%s", round, d.tail(40))
		case <-time.After(90 * time.Second):
			t.Fatalf("round %d: no reply both acknowledged results and sent tasks within 90 s:\n%s", round, d.tail(60))
		}
		if tr.fillErr != nil {
			t.Fatalf("round %d: filling the disk: %v", round, tr.fillErr)
		}
		for _, name := range tr.unlisted {
			lost++
			t.Errorf("round %d: task %s, handed out before the last kill, is neither reported nor in <other_results>: the server would count it lost", round, name)
		}
		prev = tr.tasks
		applied := d.waitFor("the trapped reply applied", 30*time.Second, func(l logLine) bool {
			return l.Msg == "scheduler request completed" && l.num("acked") > 0 && l.num("new_tasks") > 0
		})
		// The reply's commit: it logs using the reserve, or failing, or
		// (a commit into free pages inside the file needs no new space)
		// nothing, and the step goes on to start the new downloads.
		waitAfter(d, applied, 3*time.Second, func(l logLine) bool {
			return strings.Contains(l.Msg, "space kept in reserve") || strings.Contains(l.Msg, "cannot save client state") || l.Msg == "started download"
		})
		if step == fullAfterCommit {
			if _, err := fillDisk(filler, 0); err != nil {
				t.Fatalf("round %d: filling the disk: %v", round, err)
			}
			// Let the daemon meet the full disk before it dies.
			waitAfter(d, applied, 2*time.Second, func(l logLine) bool {
				return strings.Contains(l.Msg, "space kept in reserve") || strings.Contains(l.Msg, "cannot save client state")
			})
		}
		d.kill9()
		out := d.output()
		if strings.Contains(out, "space kept in reserve") {
			reserveUsed++
		}
		if strings.Contains(out, "e2e fill hook: filled") {
			hookFilled++
		}
		acks += len(tr.acked)
		tasks += len(tr.tasks)

		snap := newSoakAccount(nil).checkState(t, fmt.Sprintf("round %d", round), dir)
		if snap == nil {
			t.Fatalf("round %d: no state to check:\n%s", round, d.tail(40))
		}
		held := map[string]bool{}
		for _, r := range snap.Results {
			held[r.Name] = true
		}
		for _, name := range tr.tasks {
			if !held[name] {
				lost++
				t.Errorf("round %d (%s): task %s, handed out by the reply, is not in the state file after the kill: it is lost", round, step, name)
			}
		}
		for _, name := range tr.acked {
			if held[name] {
				reacked++
				t.Errorf("round %d (%s): result %s, acknowledged by the reply, is still in the state file after the kill: it will be reported again", round, step, name)
			}
		}
		if t.Failed() {
			t.Fatalf("round %d (%s): acked %v, sent %v; daemon log:\n%s", round, step, tr.acked, tr.tasks, d.tail(60))
		}
		for _, f := range []string{filler, trigger} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		t.Logf("round %d (%s): reply acked %d results and sent %d tasks; killed after it; the state holds it", round, step, len(tr.acked), len(tr.tasks))
	}

	p.SetFaults(testproject.Faults{})
	final := startDaemon(t, "final daemon", childOptions{DataDir: dir})
	waitAllReported(t, final, p, total, 120*time.Second)
	waitNoLeftovers(t, dir, 15*time.Second, p)
	final.stop()
	twice, couldntStart := checkReportedOnceOrFull(t, p, total, fullReplyOutput(p))
	if _, err := os.Stat(filepath.Join(dir, daemon.ReserveFileName)); err != nil {
		t.Errorf("no state reserve after the run: %v", err)
	}
	t.Logf("disk-full reply soak: %d kills (%d per step), %d replies trapped carrying %d acks and %d new tasks; "+
		"reserve used in %d rounds, disk filled from inside a commit in %d; %d tasks lost, %d acked results left to report again; "+
		"%d results reported, %d reported more than once; %d tasks could not start on the full disk and were reported as errors",
		rounds, rounds/int(numReplySteps), rounds, acks, tasks, reserveUsed, hookFilled, lost, reacked, len(p.Stats().Reported), twice, couldntStart)
}

// checkReportedOnceOrFull is checkReportedOnce for a run with full disks:
// every result the server sent was reported and acked exactly once (it
// returns the reports beyond the first, which fail the test), and
// computed right, except the tasks whose start met the full disk: the
// daemon reports those as errors ("couldn't start", as the C++ client
// does), which the server reissues; they are counted and returned.
func checkReportedOnceOrFull(t *testing.T, p *project, want int, output outputFunc) (twice, couldntStart int) {
	t.Helper()
	st := p.Stats()
	if len(st.Sent) != want {
		t.Errorf("server sent %d results, want %d", len(st.Sent), want)
	}
	for _, e := range st.Errors {
		t.Errorf("server saw a protocol error: %s", e)
	}
	acks := map[string]int{}
	for _, a := range st.Acked {
		acks[a]++
	}
	for _, name := range st.Sent {
		if n := st.Reported[name]; n != 1 {
			twice += max(n-1, 0)
			t.Errorf("result %s reported %d times, want exactly once", name, n)
		}
		if acks[name] != 1 {
			t.Errorf("result %s acked %d times, want once", name, acks[name])
		}
		rr := st.ReportedResults[name]
		if rr.ExitStatus != 0 {
			if strings.Contains(rr.StderrOut, "couldn't start") && strings.Contains(rr.StderrOut, "no space left on device") {
				// A full disk holds task starts; it must not fail a task.
				couldntStart++
				t.Errorf("result %s failed to start on the full disk: %s", name, strings.TrimSpace(rr.StderrOut))
				continue
			}
			t.Errorf("result %s reported exit status %d; stderr:\n%s", name, rr.ExitStatus, rr.StderrOut)
			continue
		}
		job := st.Jobs[name]
		for _, out := range job.OutputFiles {
			got, ok := st.Uploaded[out]
			switch {
			case !ok:
				t.Errorf("result %s: output %s never uploaded", name, out)
			case bytes.Equal(got, output(job)):
			case otherJobsOutput(st, name, got, output) != "":
				// A slot left by a task whose start failed must be set up
				// again for the next task given it (taskrunner's setup
				// marker names its task).
				t.Errorf("result %s was computed from the input of %s: a slot set up for that task was reused as it was", name, otherJobsOutput(st, name, got, output))
			default:
				t.Errorf("result %s: output %s is %q, want %q", name, out, got, output(job))
			}
		}
	}
	return twice, couldntStart
}

// otherJobsOutput names the job, other than name, whose correct output is
// got ("" if none).
func otherJobsOutput(st testproject.Stats, name string, got []byte, output outputFunc) string {
	for other, j := range st.Jobs {
		if other != name && bytes.Equal(got, output(j)) {
			return other
		}
	}
	return ""
}

// waitAfter waits up to timeout for a line after the line from that
// matches pred; it says whether one came.
func waitAfter(d *daemonProc, from logLine, timeout time.Duration, pred func(logLine) bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		lines := d.snapshot()
		at := slices.IndexFunc(lines, func(l logLine) bool { return l.Raw == from.Raw })
		if at >= 0 && slices.ContainsFunc(lines[at+1:], pred) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-d.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}
