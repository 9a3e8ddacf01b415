package daemon

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/statefile"
)

// persistDaemon is a daemon with just what the flush path uses: a real
// store in a temporary directory and a logger writing to logs.
func persistDaemon(t *testing.T, logs *bytes.Buffer) *Daemon {
	t.Helper()
	dir := t.TempDir()
	s, err := statefile.Open(filepath.Join(dir, StateFileName), statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &Daemon{
		opt:   Options{DataDir: dir, PollInterval: 10 * time.Millisecond},
		log:   slog.New(slog.NewTextHandler(logs, nil)),
		store: s,
	}
}

func TestRemoveAfterCommit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		failing   bool // the commit fails (closed store)
		wantGone  bool
		wantFlush bool
	}{
		{name: "commit succeeds: file removed after it", wantGone: true, wantFlush: true},
		{name: "commit fails: file kept", failing: true, wantGone: false, wantFlush: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			d := persistDaemon(t, &logs)
			path := filepath.Join(d.opt.DataDir, "output")
			if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			// As the callers do: the removal first, the record change after.
			d.removeAfterCommit(path)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("removed before the record change was even batched: %v", err)
			}
			d.batch.PutMeta("uploaded", true)
			if tc.failing {
				d.store.Close()
			}
			if got := d.flush(); got != tc.wantFlush {
				t.Errorf("flush = %v, want %v", got, tc.wantFlush)
			}
			_, err := os.Stat(path)
			if gone := os.IsNotExist(err); gone != tc.wantGone {
				t.Errorf("file gone = %v (%v), want %v", gone, err, tc.wantGone)
			}
		})
	}
}

// TestFlushFailureEpisode: a failing commit is logged once with the file,
// sets flushFailing, is not retried before its backoff, and the recovery
// is logged as "state writes work again".
func TestFlushFailureEpisode(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := persistDaemon(t, &logs)
	path := d.store.Path()
	// Commits fail on a closed store; the open one comes back later.
	good := d.store
	bad, err := statefile.Open(filepath.Join(t.TempDir(), StateFileName), statefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad.Close()
	d.store = bad
	d.batch.PutMeta("k", 1)
	for range 5 {
		if d.flush() {
			t.Fatal("flush succeeded on a closed store")
		}
	}
	if !d.flushFailing {
		t.Error("flushFailing not set")
	}
	if n := strings.Count(logs.String(), "cannot save client state"); n != 1 {
		t.Errorf("failure logged %d times, want once:\n%s", n, logs.String())
	}
	if d.persist.failures != 1 {
		t.Errorf("%d attempts within the backoff, want 1", d.persist.failures)
	}
	d.store = good
	time.Sleep(2 * d.opt.PollInterval)
	if !d.flush() {
		t.Fatalf("flush failed after recovery:\n%s", logs.String())
	}
	if d.flushFailing {
		t.Error("flushFailing still set after recovery")
	}
	if !strings.Contains(logs.String(), "state writes work again") || !strings.Contains(logs.String(), path) {
		t.Errorf("no recovery message naming %s:\n%s", path, logs.String())
	}
}

// TestReserveGatesRequests: without the state reserve in place no
// scheduler request may go out (stateAtRisk); the daemon says so once,
// retries, and says when the reserve is back.
func TestReserveGatesRequests(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := persistDaemon(t, &logs)
	d.opt.StateReserve = 64 << 10
	// A directory under the reserve's name: the reserve cannot be made,
	// as on a full disk.
	blocker := filepath.Join(d.opt.DataDir, ReserveFileName)
	if err := os.MkdirAll(filepath.Join(blocker, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		d.flush()
		time.Sleep(15 * time.Millisecond)
	}
	if !d.stateAtRisk() {
		t.Fatal("no reserve, yet requests are allowed")
	}
	if n := strings.Count(logs.String(), "cannot keep disk space in reserve"); n != 1 {
		t.Errorf("the missing reserve was logged %d times, want once:\n%s", n, logs.String())
	}
	if err := os.RemoveAll(blocker); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for d.stateAtRisk() && time.Now().Before(deadline) {
		d.flush()
		time.Sleep(5 * time.Millisecond)
	}
	if d.stateAtRisk() {
		t.Fatalf("the reserve was not made again:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "in reserve again; scheduler requests resume") {
		t.Errorf("the reserve's return was not logged:\n%s", logs.String())
	}
	if fi, err := os.Stat(blocker); err != nil || fi.Size() != 64<<10 {
		t.Fatalf("reserve file: %v %v", fi, err)
	}
	// Released for a commit, it is gone and requests wait again.
	if !d.releaseReserve() || !d.stateAtRisk() {
		t.Fatal("releaseReserve did not release")
	}
	if _, err := os.Stat(blocker); !os.IsNotExist(err) {
		t.Fatalf("the released reserve is still there: %v", err)
	}
}

// TestReserveFitsFullQueueReply measures what saving a reply that fills a
// project's queue to the client's cap (maxQueuedJobs new tasks, each with
// its workunit, three input files and an output file, sizes as real
// projects send) adds to the state file, and checks that it fits in the
// default reserve.
func TestReserveFitsFullQueueReply(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := persistDaemon(t, &logs)
	const url = "https://einstein.phys.uwm.edu/"
	pad := strings.Repeat("x", 200)
	d.batch.PutProject(&boinc.Project{MasterURL: url, ProjectName: "Einstein@Home", ProjectPrefs: pad})
	if !d.flush() {
		t.Fatal("first commit failed")
	}
	before := allocSizeOf(t, d.store.Path())
	for i := range maxQueuedJobs {
		wu := fmt.Sprintf("h1_1474.55_O3aC01Cl1In0__O3ASHF1d_1475.00Hz_%d", 100000+i)
		var inputs []boinc.FileRef
		for k := range 3 {
			name := fmt.Sprintf("%s_in%d_%s", wu, k, pad[:40])
			d.batch.PutFile(&boinc.FileInfo{ProjectURL: url, Name: name,
				DownloadURLs: []string{"https://einstein-dl.phys.uwm.edu/download/" + name, "https://einstein-dl2.aei.uni-hannover.de/download/" + name},
				MD5:          "0123456789abcdef0123456789abcdef", NBytes: 4e6, FileSignature: pad})
			inputs = append(inputs, boinc.FileRef{FileName: name, OpenName: fmt.Sprintf("in%d", k)})
		}
		out := wu + "_1_0"
		d.batch.PutFile(&boinc.FileInfo{ProjectURL: url, Name: out, UploadURLs: []string{"https://einsteinathome.org/cgi-bin/file_upload_handler"},
			MaxNBytes: 1e8, XMLSignature: pad + pad})
		d.batch.PutWorkunit(&boinc.Workunit{ProjectURL: url, Name: wu, AppName: "einstein_O3AS",
			CommandLine: "--Freq=1475.0 --FreqBand=0.05 --dFreq=6.7e-7 " + pad, InputFiles: inputs,
			RscFpopsEst: 1.5e14, RscFpopsBound: 3e15, RscMemoryBound: 1e9, RscDiskBound: 1e9})
		d.batch.PutResult(&boinc.Result{ProjectURL: url, Name: wu + "_1", WUName: wu, VersionNum: 106, PlanClass: "GW-opencl-nvidia",
			OutputFiles: []boinc.FileRef{{FileName: out, OpenName: "out"}}, Slot: -1,
			ReportDeadline: time.Now().Add(14 * 24 * time.Hour), ReceivedTime: time.Now()})
	}
	if !d.flush() {
		t.Fatalf("commit failed:\n%s", logs.String())
	}
	grew := allocSizeOf(t, d.store.Path()) - before
	t.Logf("a reply of %d new tasks (4 files each) grew the state file by %.1f MiB; the reserve is %d MiB", maxQueuedJobs, float64(grew)/(1<<20), DefaultStateReserve>>20)
	if grew >= DefaultStateReserve {
		t.Errorf("a full-queue reply needs %d bytes, more than the %d-byte reserve", grew, DefaultStateReserve)
	}
}

func allocSizeOf(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int64(allocSize(fi))
}

// A kill between the commit that forgets a file and the file's removal
// leaves it on disk with nothing that would ever remove it: the removal
// is in that commit (pending_removals), and the next start finishes it,
// sparing files the state lists and paths outside projects/.
func TestRemovalsSurviveAKill(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := persistDaemon(t, &logs)
	proj := filepath.Join(d.opt.DataDir, "projects", "example.org_p")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	gone, kept, outside := filepath.Join(proj, "wu_1_in"), filepath.Join(proj, "wu_2_in"), filepath.Join(d.opt.DataDir, "cc_config.xml")
	for _, p := range []string{gone, kept, outside} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d.removeAfterCommit(gone)
	d.batch.DeleteFile("whatever")
	// The commit, then the "kill": the removal never runs.
	if err := d.store.Commit(&d.batch); err != nil {
		t.Fatal(err)
	}
	d.persist.removals = nil
	snap, err := d.store.Load()
	if err != nil {
		t.Fatal(err)
	}
	// A tampered list, and a file the state still has.
	snap.Meta[removalsMetaKey] = []byte(`["projects/example.org_p/wu_1_in","projects/example.org_p/wu_2_in","cc_config.xml","projects/../../etc/passwd"]`)
	d.st = &clientState{files: map[string]*boinc.FileInfo{"k": {ProjectURL: "https://example.org/p/", Name: "wu_2_in"}}}
	d.finishRemovals(snap.Meta)
	if _, err := os.Stat(gone); !os.IsNotExist(err) {
		t.Errorf("%s not removed at the next start: %v", gone, err)
	}
	for _, p := range []string{kept, outside} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
	if !strings.Contains(logs.String(), "outside the projects directory") {
		t.Errorf("the tampered entries were not named:\n%s", logs.String())
	}
}
