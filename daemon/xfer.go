package daemon

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/workfetch"
)

type xferInFlight struct {
	project string
	upload  bool
	cancel  context.CancelFunc
	started time.Time
}

type xferDone struct {
	key      string
	upload   bool
	urlIndex int
	bytes    int64
	// moved and took are what crossed the network and how long it took,
	// for the measured rates.
	moved int64
	took  time.Duration
	// seal is what a verified download holds (size and hashes).
	seal fileSeal
	err  error
}

// advanceResults moves results along the pipeline when their files allow:
// inputs all present → downloaded; an input failed for good → download
// failed; outputs all uploaded → uploaded (ready to report).
func (d *Daemon) advanceResults(now time.Time) {
	for _, r := range d.st.sortedResults() {
		switch r.Phase {
		case boinc.PhaseNew, boinc.PhaseDownloading:
			d.advanceDownload(r, now)
		case boinc.PhaseDownloaded:
			// A file failed its check (checkTaskFiles, start-up): the
			// task waits for it as a download again.
			if f := d.absentFile(r); f != nil {
				if err := r.SetPhase(boinc.PhaseDownloading); err == nil {
					d.batch.PutResult(r)
					d.taskLog(r).Info("task waits for a file fetched again", slog.String("file", f.Name))
					d.advanceDownload(r, now)
				}
			}
		case boinc.PhaseComputing:
			d.recheckWaitingTask(r, now)
		case boinc.PhaseUploading:
			d.advanceUpload(r, now)
		}
	}
}

func (d *Daemon) advanceDownload(r *boinc.Result, now time.Time) {
	v, wu := d.st.versionOf(r), d.st.wuOf(r)
	if v == nil || wu == nil {
		d.taskFailed(r, boinc.PhaseDownloadFailed, boinc.ErrResultDownload, "no app version or workunit for this task", now)
		return
	}
	refs := append(append([]boinc.FileRef(nil), v.FileRefs...), wu.InputFiles...)
	all := true
	for _, ref := range refs {
		f := d.st.file(r.ProjectURL, ref.FileName)
		switch {
		case f == nil:
			d.taskFailed(r, boinc.PhaseDownloadFailed, boinc.ErrResultDownload, "the server sent no file_info for "+ref.FileName, now)
			return
		case f.Status < 0 && f.LocalError != "":
			// It was here, failed its check and the server no longer
			// gives it (the C++ client's "missing or invalid" input).
			d.taskFailed(r, boinc.PhaseDownloadFailed, boinc.ErrFileMissing, refetchFailedMsg(f), now)
			return
		case f.Status < 0:
			msg := "download of " + f.Name + " failed"
			if f.ErrorMsg != "" {
				msg += ": " + f.ErrorMsg
			}
			d.taskFailed(r, boinc.PhaseDownloadFailed, boinc.ErrResultDownload, msg, now)
			return
		case f.Status != boinc.FilePresent:
			all = false
		}
	}
	target := boinc.PhaseDownloading
	if all {
		target = boinc.PhaseDownloaded
	}
	if r.Phase != target {
		if err := r.SetPhase(target); err == nil {
			d.batch.PutResult(r)
			if target == boinc.PhaseDownloaded {
				d.taskLog(r).Info("task files downloaded; ready to run")
			}
		}
	}
}

func (d *Daemon) advanceUpload(r *boinc.Result, now time.Time) {
	done := true
	for _, ref := range r.OutputFiles {
		f := d.st.file(r.ProjectURL, ref.FileName)
		if f == nil || !f.IsUpload() || f.Uploaded {
			continue
		}
		if f.Status < 0 {
			d.taskFailed(r, boinc.PhaseUploadFailed, boinc.ErrResultUpload, "upload of "+f.Name+" failed: "+f.ErrorMsg, now)
			return
		}
		if f.Status == boinc.FilePresent {
			done = false
		}
	}
	if done {
		if err := r.SetPhase(boinc.PhaseUploaded); err == nil {
			d.batch.PutResult(r)
			d.taskLog(r).Info("task outputs uploaded; ready to report")
			d.clearJobBackoff(r)
		}
	}
}

// clearJobBackoff ends the fetch backoff of the resource a finished job
// used, as CLIENT_STATE::update_results does when a result's uploads end
// (WORK_FETCH::clear_backoffs(*rp->avp)), and as boincd also does for a
// job that ended in error (taskFailed): a project that caps jobs in
// progress (max_wus_in_progress) answers "reached a limit on tasks in
// progress" and backs the resource off, and only a finished job makes
// room. The next fetch asks at once and reports the job with it, where
// keeping the backoff left the host idle until the report deadline
// (issue 28).
func (d *Daemon) clearJobBackoff(r *boinc.Result) {
	st := d.sched[r.ProjectURL]
	if st == nil {
		return
	}
	rsc, _, _ := d.resultRsc(r)
	if st.Backoff[rsc] == (workfetch.Backoff{}) {
		return
	}
	st.Backoff[rsc].Clear()
	d.saveSchedState(r.ProjectURL)
	d.taskLog(r).Debug("a job finished; fetch backoff cleared", slog.String("resource", rsc.String()))
}

func (d *Daemon) xferCounts() (total int, per map[string]int) {
	per = map[string]int{}
	for _, x := range d.xfers {
		per[x.project]++
	}
	return len(d.xfers), per
}

// startTransfers starts downloads for files that tasks wait on and uploads
// for outputs of finished tasks, within the concurrency limits and the
// per-file backoffs.
func (d *Daemon) startTransfers(now time.Time) {
	if d.networkSuspended(now) || d.xferQuotaHolds(now) {
		return
	}
	total, per := d.xferCounts()
	maxTotal, maxPer := d.xferLimits() // max_file_xfers, max_file_xfers_per_project
	try := func(f *boinc.FileInfo, upload bool) {
		if total >= maxTotal || per[f.ProjectURL] >= maxPer {
			return
		}
		if _, busy := d.xfers[f.Key()]; busy || now.Before(f.Xfer.NextRequestTime) {
			return
		}
		if p := d.st.projects[f.ProjectURL]; p == nil || (p.DetachPending && !upload) {
			return
		}
		d.startXfer(f, upload, now)
		total++
		per[f.ProjectURL]++
	}
	for _, r := range d.st.sortedResults() {
		switch r.Phase {
		case boinc.PhaseDownloading, boinc.PhaseComputing:
			// A started task's file that failed its check is fetched
			// again too (the task keeps its slot and checkpoint).
			for _, f := range d.st.inputFiles(r) {
				if f.Status == boinc.FileNotPresent {
					try(f, false)
				}
			}
			if r.Phase == boinc.PhaseComputing {
				// Outputs the running app asked to upload
				// (boinc_upload_file): present before the task ends.
				for _, f := range d.st.outputFiles(r) {
					if f.IsUpload() && !f.Uploaded && f.Status == boinc.FilePresent {
						try(f, true)
					}
				}
			}
		case boinc.PhaseUploading:
			for _, f := range d.st.outputFiles(r) {
				if f.IsUpload() && !f.Uploaded && f.Status == boinc.FilePresent {
					try(f, true)
				}
			}
		}
	}
}

func (d *Daemon) startXfer(f *boinc.FileInfo, upload bool, now time.Time) {
	if f.Xfer.FirstRequestTime.IsZero() {
		f.Xfer.FirstRequestTime = now
		d.batch.PutFile(f)
	}
	ctx, cancel := context.WithCancel(d.ctx)
	d.xfers[f.Key()] = &xferInFlight{project: f.ProjectURL, upload: upload, cancel: cancel, started: now}
	path := d.filePath(f)
	key := f.Key()
	log := d.log.With(slog.String("project", f.ProjectURL), slog.String("file", f.Name))
	if upload {
		spec := rpcclient.UploadSpec{
			URLs: f.UploadURLs, Path: path, Name: f.Name, XMLSignature: f.XMLSignature,
			MaxNBytes: f.MaxNBytes, NBytes: int64(f.NBytes), MD5: f.MD5, Meter: &rpcclient.Meter{},
		}
		log.Info("started upload", slog.Int64("bytes", int64(f.NBytes)))
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			defer cancel()
			err := d.http.Upload(ctx, spec)
			moved, took := spec.Meter.Measured()
			d.send(xferDone{key: key, upload: true, bytes: spec.NBytes, moved: moved, took: took, err: err})
		}()
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		log.Error("cannot create project directory", slog.Any("err", err))
	}
	// A file offered gzipped (<gzipped_url>) is fetched as its .gz
	// first, the plain URLs being the fallback in the same rotation
	// (rpcclient.DownloadSpec.GzippedURLs); either way the size and MD5
	// checked are the uncompressed file's, as FILE_INFO::verify_file
	// checks NAME after FILE_INFO::gunzip.
	spec := rpcclient.DownloadSpec{
		URLs: f.DownloadURLs, GzippedURLs: f.GzippedURLs, GzippedNBytes: int64(f.GzippedNBytes),
		StartURL: f.Xfer.URLIndex, Path: path,
		NBytes: int64(f.NBytes), MD5: f.MD5, MaxBytes: downloadCap(f), Meter: &rpcclient.Meter{},
	}
	if d.cc.eff.DontCheckFileSizes {
		// dont_check_file_sizes: the announced size is neither the
		// file's cap nor checked; the MD5 and signature still are.
		spec.NBytes = 0
		spec.MaxBytes = maxUnsizedDownload
		if f.MaxNBytes > 0 {
			spec.MaxBytes = int64(f.MaxNBytes)
		}
	}
	var keyText, sigText string
	checkSig := f.SignatureRequired
	if checkSig {
		sigText = f.FileSignature
		if p := d.st.projects[f.ProjectURL]; p != nil {
			keyText = p.CodeSignKey
		}
	}
	log.Info("started download", slog.Int64("bytes", int64(f.NBytes)))
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer cancel()
		idx, err := d.http.Download(ctx, spec)
		var seal fileSeal
		if err == nil {
			// One more read: the MD5 and signature are checked on exactly
			// the bytes whose hash is recorded for the checks before
			// every task start.
			seal, err = sealDownload(path, spec.MD5, checkSig, keyText, sigText)
		}
		moved, took := spec.Meter.Measured()
		d.send(xferDone{key: key, urlIndex: int(idx), bytes: spec.NBytes, moved: moved, took: took, seal: seal, err: err})
	}()
}

// maxUnsizedDownload bounds a download whose file_info gives neither
// <nbytes> nor <max_nbytes>: without it such a server could fill the disk.
const maxUnsizedDownload = 1 << 30

// downloadCap is the most a download may write: the announced size, else
// the announced maximum, else maxUnsizedDownload. rpcclient reads at most
// one byte past it and then rejects the file.
func downloadCap(f *boinc.FileInfo) int64 {
	switch {
	case f.NBytes > 0:
		return int64(f.NBytes)
	case f.MaxNBytes > 0:
		return int64(f.MaxNBytes)
	}
	return maxUnsizedDownload
}

// verifyRetries is how many times a download that arrived corrupt (MD5 or
// size mismatch) is fetched again before the file is declared bad: a
// flaky proxy deserves a second chance, a wrong file on the server does
// not deserve a hundred.
const verifyRetries = 3

func (d *Daemon) handleXferDone(ev xferDone, now time.Time) {
	x := d.xfers[ev.key]
	delete(d.xfers, ev.key)
	f := d.st.files[ev.key]
	if f == nil {
		return // project detached meanwhile
	}
	log := d.log.With(slog.String("project", f.ProjectURL), slog.String("file", f.Name))
	if ev.err == nil {
		f.Xfer = boinc.FileXfer{}
		f.ErrorMsg = ""
		d.recordTransfer(ev.upload, ev.moved, ev.took, now)
		// An upload done may make results reportable, a download done
		// work runnable: both change what work fetch decides.
		d.fetchSoon(now)
		if ev.upload {
			f.Uploaded = true
			d.stats.Uploaded++
			d.stats.BytesUp += ev.bytes
			d.counters(f.ProjectURL).bytesUp += ev.bytes
			log.Info("finished upload")
			// The server has the bytes; the local copy has no further use.
			// Only once "uploaded" is committed: a crash in between
			// would leave a state that still needs the file.
			// An intermediate upload's file stays while its task runs:
			// the task may still write it, and must find it at the end.
			if !d.intermediateUploaded(f) && !f.Sticky {
				d.removeAfterCommit(d.filePath(f))
			}
		} else {
			f.Status = boinc.FilePresent
			f.SHA256, f.VerifiedBytes = ev.seal.sha256, ev.seal.size
			if f.LocalError != "" {
				log.Info("file fetched again and verified", slog.String("was", f.LocalError))
				f.LocalError = ""
			}
			d.stats.Downloaded++
			d.stats.BytesDown += ev.bytes
			d.counters(f.ProjectURL).bytesDown += ev.bytes
			if f.Executable {
				if err := os.Chmod(d.filePath(f), 0o755); err != nil {
					log.Error("cannot make file executable", slog.Any("err", err))
				}
			}
			log.Info("finished download")
		}
		d.batch.PutFile(f)
		if !ev.upload && !d.st.fileInUse(f) {
			// Its task was acknowledged (or dropped) while it arrived:
			// the collection then skipped it as busy.
			d.gcFiles(f.ProjectURL)
		}
		return
	}
	if errors.Is(ev.err, context.Canceled) && d.ctx.Err() != nil {
		return // shutting down: not a failure
	}
	f.Xfer.NumRetries++
	if pc := d.counters(f.ProjectURL); ev.upload {
		// A work request deferred for this upload need not wait for
		// the retry (activelyUploading).
		d.fetchSoon(now)
		pc.upFailures++
	} else {
		pc.downFailures++
	}
	f.Xfer.LastError = ev.err.Error()
	f.Xfer.URLIndex = ev.urlIndex
	permanent := rpcclient.IsPermanent(ev.err)
	var verr *rpcclient.VerifyError
	if errors.As(ev.err, &verr) {
		permanent = f.Xfer.NumRetries >= verifyRetries
	}
	var serr *signatureError
	if errors.As(ev.err, &serr) {
		permanent = true
	}
	// A local file that cannot be created will not be creatable later.
	var perr *fs.PathError
	if errors.As(ev.err, &perr) && (errors.Is(perr.Err, syscall.ENAMETOOLONG) || errors.Is(perr.Err, syscall.EISDIR)) {
		permanent = true
	}
	giveUp := now.Sub(f.Xfer.FirstRequestTime) > boinc.XferGiveUp
	what := "download"
	if x != nil && x.upload {
		what = "upload"
	}
	if permanent || giveUp {
		code := boinc.ErrHTTPPermanent
		if ev.upload {
			code = boinc.ErrUploadPermanent
		}
		if verr != nil {
			code = verr.Code
		}
		if serr != nil {
			code = serr.code
		}
		if giveUp {
			code = boinc.ErrTimeout
		}
		f.Status = code
		f.ErrorMsg = ev.err.Error()
		log.Error(what+" failed permanently", slog.Int("retries", f.Xfer.NumRetries), slog.Any("err", ev.err))
		if !ev.upload {
			_ = os.Remove(d.filePath(f))
			rpcclient.RemoveGzipParts(d.filePath(f))
		}
	} else {
		delay := boinc.ExponentialBackoff(f.Xfer.NumRetries-1, d.opt.XferBackoffMin, boinc.XferBackoffMax, d.uniform())
		f.Xfer.NextRequestTime = now.Add(delay)
		log.Warn(what+" failed; will retry", slog.Int("retries", f.Xfer.NumRetries), slog.Duration("backoff", delay.Round(time.Second)), slog.Any("err", ev.err))
	}
	d.batch.PutFile(f)
}
