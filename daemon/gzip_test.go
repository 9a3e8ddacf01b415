package daemon

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/internal/testproject"
	"github.com/boincd/boincd/internal/testsupport"
	"github.com/boincd/boincd/rpcclient"
)

// TestGzippedInput: an input offered gzipped (stage_file --gzip: a
// <gzipped_url> beside <url>) is fetched as its .gz, inflated and checked
// as the uncompressed file, and the task computes on the real input. A .gz
// cut off is resumed with Range; a .gz that fails (corrupt, or a bomb
// inflating past nbytes) falls back to the plain URL in the same attempt
// or, offered alone, is retried and then failed with an error naming the
// file; the bomb never fills the disk. Nothing of the compressed download
// is left in the project directory.
func TestGzippedInput(t *testing.T) {
	t.Parallel()
	const inputSize = 20000
	cases := []struct {
		name   string
		job    testproject.JobTemplate
		faults testproject.Faults
		// wantGz, wantPlain: how often the .gz and the plain file are
		// fetched; wantRanged: Range requests for the .gz.
		wantGz, wantPlain, wantRanged int
		// retryErr: the first failure is logged as a retry mentioning
		// it ("" = no failure).
		retryErr string
		// failErr: the download fails for good mentioning it, and the
		// task is reported as a download error.
		failErr string
	}{
		{name: "gz fetched", job: testproject.JobTemplate{GzipInput: true}, wantGz: 1},
		{name: "partial gz resumed", job: testproject.JobTemplate{GzipInput: true, GzipOnly: true},
			faults: testproject.Faults{CutDownloads: 1}, wantGz: 2, wantRanged: 1, retryErr: "unexpected EOF"},
		{name: "cut gz falls back to plain", job: testproject.JobTemplate{GzipInput: true},
			faults: testproject.Faults{CutDownloads: 1}, wantGz: 1, wantPlain: 1},
		{name: "corrupt gz falls back to plain", job: testproject.JobTemplate{GzipInput: true},
			faults: testproject.Faults{CorruptDownloads: 1}, wantGz: 1, wantPlain: 1},
		{name: "corrupt gz retried", job: testproject.JobTemplate{GzipInput: true, GzipOnly: true},
			faults: testproject.Faults{CorruptDownloads: 1}, wantGz: 2, retryErr: "corrupt gzip data"},
		{name: "corrupt gz fails", job: testproject.JobTemplate{GzipInput: true, GzipOnly: true},
			faults: testproject.Faults{CorruptDownloads: 10}, wantGz: verifyRetries, retryErr: "corrupt gzip data",
			failErr: "corrupt gzip data"},
		{name: "gzip bomb bounded", job: testproject.JobTemplate{GzipInput: true, GzipOnly: true},
			faults: testproject.Faults{GzipBombDownloads: 1}, wantGz: 2, retryErr: "file too big"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := tc.job
			job.InputSize = inputSize
			srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1, Job: job, Faults: tc.faults})
			h := startDaemon(t, srv)

			var st testproject.Stats
			if tc.failErr != "" {
				st = waitAllReported(t, srv, 1, testLimit)
			} else {
				checkHealthy(t, srv, 1, testLimit)
				st = srv.Stats()
			}
			name := st.Sent[0]
			j := st.Jobs[name]
			if j.InputGzipFile == "" {
				t.Fatalf("the job's input was not offered gzipped: %+v", j)
			}
			if got := st.Downloads[j.InputGzipFile]; got != tc.wantGz {
				t.Errorf("%s fetched %d times, want %d", j.InputGzipFile, got, tc.wantGz)
			}
			if got := st.Downloads[j.InputFile]; got != tc.wantPlain {
				t.Errorf("plain %s fetched %d times, want %d", j.InputFile, got, tc.wantPlain)
			}
			if got := st.RangeDownloads[j.InputGzipFile]; got != tc.wantRanged {
				t.Errorf("%s resumed with Range %d times, want %d", j.InputGzipFile, got, tc.wantRanged)
			}
			retries := h.logs.Find("download failed; will retry", "file", j.InputFile)
			if tc.retryErr == "" && len(retries) > 0 {
				t.Errorf("unexpected retries: %v", retries)
			}
			if tc.retryErr != "" {
				if len(retries) == 0 {
					t.Fatalf("no retry logged for %s", j.InputFile)
				}
				if e := retries[0].Str("err"); !strings.Contains(e, tc.retryErr) || !strings.Contains(e, j.InputFile) {
					t.Errorf("retry logged with err %q, want it to mention %q and name %s", e, tc.retryErr, j.InputFile)
				}
			}
			rr := st.ReportedResults[name]
			if tc.failErr != "" {
				bad := h.logs.Find("download failed permanently", "file", j.InputFile)
				if len(bad) != 1 || !strings.Contains(bad[0].Str("err"), tc.failErr) {
					t.Errorf("want one 'download failed permanently' mentioning %q, got %v", tc.failErr, bad)
				}
				if rr.ExitStatus != boinc.ErrResultDownload || !strings.Contains(rr.StderrOut, j.InputFile) {
					t.Errorf("result reported with exit_status %d stderr %q, want %d naming %s",
						rr.ExitStatus, rr.StderrOut, boinc.ErrResultDownload, j.InputFile)
				}
				waitForgotten(t, h, name)
				if left := filesNamed(t, h.dataDir, j.InputFile); len(left) > 0 {
					t.Errorf("left on disk after the failure: %q", left)
				}
				return
			}
			want := testproject.RefAppOutput(testproject.JobInput(j.N, inputSize), 1)
			if got := st.Uploaded[j.OutputFiles[0]]; !bytes.Equal(got, want) {
				t.Errorf("uploaded output %q, want %q (the task did not compute on the real input)", got, want)
			}
			// Neither the .gzt nor the inflation temp outlives the
			// download; the bomb never grew a file past nbytes.
			for _, p := range filesNamed(t, h.dataDir, ".gzt", "%gunzip") {
				t.Errorf("left behind: %s", p)
			}
		})
	}
}

// TestGzippedInputGUI: while a gzipped input downloads, get_file_transfers
// shows the .gz's size and progress, as FILE_INFO::write_gui writes
// gzipped_nbytes.
func TestGzippedInputGUI(t *testing.T) {
	t.Parallel()
	const inputSize = 30000
	srv := testsupport.StartProject(t, testproject.Config{TotalJobs: 1,
		Job:    testproject.JobTemplate{InputSize: inputSize, GzipInput: true},
		Faults: testproject.Faults{DownloadBytesPerSec: 10_000}})
	h := startDaemon(t, srv)
	var seen bool
	testsupport.WaitFor(t, testLimit, "the .gz download shown in progress", func() bool {
		for _, x := range guiStateOf(t, h).Transfers {
			if x.Upload || !x.Active || x.BytesXferred <= 0 {
				continue
			}
			st := srv.Stats()
			j := st.Jobs[st.Sent[0]]
			if x.Name != j.InputFile {
				// The app's own file comes through the same slow
				// server; on a loaded machine it may still be arriving.
				continue
			}
			if x.NBytes != float64(j.InputGzipSize) || x.BytesXferred > x.NBytes {
				t.Fatalf("transfer shows %g of %g bytes, want the .gz's %d", x.BytesXferred, x.NBytes, j.InputGzipSize)
			}
			seen = true
		}
		return seen
	})
	checkHealthy(t, srv, 1, testLimit)
}

// TestGzippedFileInfoMerge: a file_info sent again replaces the gzipped
// URLs with the new reply's, so a reply without <gzipped_url> turns the
// compressed download off (FILE_INFO::merge_info takes download_gzipped
// from the new file_info); one with no URL at all keeps what is known.
func TestGzippedFileInfoMerge(t *testing.T) {
	t.Parallel()
	d, _ := bareDaemon(t, "", "")
	p := &boinc.Project{MasterURL: "http://p.example/"}
	d.st.projects[p.MasterURL] = p
	apply := func(f boinc.FileInfo) *boinc.FileInfo {
		t.Helper()
		f.Name, f.NBytes, f.MD5 = "in", 100, "0123456789abcdef0123456789abcdef"
		d.applyWork(p, &rpcclient.SchedulerReply{FileInfos: []boinc.FileInfo{f}}, time.Now())
		return d.st.file(p.MasterURL, "in")
	}
	f := apply(boinc.FileInfo{DownloadURLs: []string{"http://a/in"}, GzippedURLs: []string{"http://a/in.gz"}, GzippedNBytes: 40})
	if len(f.GzippedURLs) != 1 || f.GzippedNBytes != 40 {
		t.Fatalf("first file_info: %+v", f)
	}
	f = apply(boinc.FileInfo{DownloadURLs: []string{"http://b/in"}, GzippedURLs: []string{"http://b/in.gz"}, GzippedNBytes: 41})
	if f.GzippedURLs[0] != "http://b/in.gz" || f.GzippedNBytes != 41 || f.DownloadURLs[0] != "http://b/in" {
		t.Errorf("new URLs not taken: %+v", f)
	}
	f = apply(boinc.FileInfo{})
	if len(f.GzippedURLs) != 1 {
		t.Errorf("a file_info with no download URL dropped the gzipped ones: %+v", f)
	}
	f = apply(boinc.FileInfo{DownloadURLs: []string{"http://c/in"}})
	if f.GzippedURLs != nil || f.GzippedNBytes != 0 || f.DownloadURLs[0] != "http://c/in" {
		t.Errorf("a file_info without <gzipped_url> left the compressed download on: %+v", f)
	}
}
