package daemon

import (
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/codesign"
	"github.com/boincd/boincd/rpcclient"
)

// File integrity: what a task runs and reads is what was verified.
//
// A download is verified once (size, MD5, and for app files the project's
// code signature over that MD5) and, in the same read, hashed with SHA-256;
// the hash and size go into the file's record (FileInfo.SHA256,
// VerifiedBytes). Before every task start (a first start, a resume after a
// daemon restart, a restart after preemption or a premature exit) each
// app-version file and input file of the task must exist as a regular file
// with that size and hash. At start-up every present file must exist with
// its size (the C++ client's check_file_existence). A file verified by a
// boincd that kept no hashes is verified again (size, MD5, signature) and
// hashed before the first task start that needs it. A file that fails is
// not used: it is removed, marked for download again (the normal download,
// with its MD5 and signature checks), and the event is logged as an error
// naming the project, the file and what differed. Tasks wait for it; if it
// cannot be fetched again the task fails with ERR_FILE_MISSING and is
// reported as an error.

// fileSeal is what a file held when it was read: its size and hashes.
type fileSeal struct {
	size   int64
	md5    string
	sha256 string
}

// readSeal reads path once and returns its size, SHA-256 and, when
// withMD5 is set, its MD5 (the check before a task start needs no MD5,
// which costs more than SHA-256 where the CPU has SHA instructions). Only
// a regular file is read: a link or anything else put in its place is an
// error (the file opened must be the one looked at).
func readSeal(path string, withMD5 bool) (fileSeal, error) {
	lst, err := os.Lstat(path)
	if err != nil {
		return fileSeal{}, err
	}
	if !lst.Mode().IsRegular() {
		return fileSeal{}, fmt.Errorf("%s: not a regular file (%s)", path, lst.Mode().Type())
	}
	fh, err := os.Open(path)
	if err != nil {
		return fileSeal{}, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return fileSeal{}, err
	}
	if !os.SameFile(lst, st) {
		return fileSeal{}, fmt.Errorf("%s: replaced while being opened", path)
	}
	hs := sha256.New()
	var w io.Writer = hs
	hm := md5.New()
	if withMD5 {
		w = io.MultiWriter(hm, hs)
	}
	n, err := io.Copy(w, fh)
	if err != nil {
		return fileSeal{}, fmt.Errorf("reading %s: %w", path, err)
	}
	seal := fileSeal{size: n, sha256: hex.EncodeToString(hs.Sum(nil))}
	if withMD5 {
		seal.md5 = hex.EncodeToString(hm.Sum(nil))
	}
	return seal, nil
}

// sealDownload runs in the transfer goroutine after a download passed
// rpcclient's size and MD5 checks. It reads the file once more, checks the
// MD5 of exactly the bytes it hashes and, for app files, the code
// signature over that MD5, and returns the seal to record. A file that
// fails is removed at once so it can never be run.
func sealDownload(path, wantMD5 string, checkSig bool, keyText, sigText string) (fileSeal, error) {
	seal, err := readSeal(path, true)
	if err != nil {
		_ = os.Remove(path)
		return fileSeal{}, err
	}
	if wantMD5 != "" && !strings.EqualFold(seal.md5, wantMD5) {
		// Changed between rpcclient's check and this read: retried as a
		// corrupt download.
		_ = os.Remove(path)
		return fileSeal{}, &rpcclient.VerifyError{Code: boinc.ErrMD5Failed, Path: path, Want: wantMD5, Got: seal.md5}
	}
	if checkSig {
		if err := checkSignature(seal.md5, keyText, sigText); err != nil {
			_ = os.Remove(path)
			return fileSeal{}, err
		}
	}
	return seal, nil
}

// signatureError: an app file whose code signature is missing or wrong.
// Never retried: the bytes matched what the server announced, so fetching
// them again cannot help, and running them is exactly what signing exists
// to prevent.
type signatureError struct {
	code int
	err  error
}

func (e *signatureError) Error() string { return "code signature check failed: " + e.err.Error() }
func (e *signatureError) Unwrap() error { return e.err }

// checkSignature checks the project's code signature over a file's MD5
// (hex), as codesign.VerifyFile does for a path.
func checkSignature(md5hex, keyText, sigText string) error {
	if strings.TrimSpace(keyText) == "" {
		return &signatureError{code: boinc.ErrNoSignature, err: errors.New("the project sent no code-signing key")}
	}
	var verr error
	if strings.TrimSpace(sigText) == "" {
		verr = codesign.ErrNoSignature
	} else if pub, err := codesign.ParsePublicKey(keyText); err != nil {
		verr = err
	} else {
		verr = codesign.VerifyMD5Hex(pub, md5hex, sigText)
	}
	if verr == nil {
		return nil
	}
	code := boinc.ErrRSAFailed
	if errors.Is(verr, codesign.ErrNoSignature) {
		code = boinc.ErrNoSignature
	}
	return &signatureError{code: code, err: verr}
}

// fileProblem checks a present file against its record and says what
// differs, or "" when it matches: it must be a regular file of the
// verified size and, when hash is set, have the verified SHA-256.
func (d *Daemon) fileProblem(f *boinc.FileInfo, hash bool) string {
	path := d.filePath(f)
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "cannot be checked: " + err.Error()
	case !st.Mode().IsRegular():
		return "not a regular file (" + st.Mode().Type().String() + ")"
	}
	want := int64(-1)
	switch {
	case f.Sealed():
		want = f.VerifiedBytes
	case f.NBytes > 0 && !d.cc.eff.DontCheckFileSizes:
		want = int64(f.NBytes)
	}
	if want >= 0 && st.Size() != want {
		return "wrong size: " + strconv.FormatInt(st.Size(), 10) + " bytes, verified " + strconv.FormatInt(want, 10)
	}
	if !hash || !f.Sealed() {
		return ""
	}
	seal, err := readSeal(path, false)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "cannot be checked: " + err.Error()
	case seal.size != want:
		return "wrong size: " + strconv.FormatInt(seal.size, 10) + " bytes, verified " + strconv.FormatInt(want, 10)
	case seal.sha256 != f.SHA256:
		return "content changed since it was verified (sha256 " + seal.sha256 + ", verified " + f.SHA256 + ")"
	}
	return ""
}

// sealUnsealed records the hash of a present file that has none: one
// verified by a boincd that did not record hashes, or imported. It runs
// before the first task start that needs the file; the file is verified
// again first as its download was (size, MD5, signature). It returns what
// failed, or "".
func (d *Daemon) sealUnsealed(f *boinc.FileInfo) string {
	seal, err := readSeal(d.filePath(f), true)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "missing"
	case err != nil:
		return "cannot be checked: " + err.Error()
	case f.NBytes > 0 && seal.size != int64(f.NBytes) && !d.cc.eff.DontCheckFileSizes:
		return "wrong size: " + strconv.FormatInt(seal.size, 10) + " bytes, announced " + strconv.FormatInt(int64(f.NBytes), 10)
	case f.MD5 != "" && !strings.EqualFold(seal.md5, f.MD5):
		return "MD5 mismatch: " + seal.md5 + ", announced " + f.MD5
	}
	if f.SignatureRequired {
		key := ""
		if p := d.st.projects[f.ProjectURL]; p != nil {
			key = p.CodeSignKey
		}
		if err := checkSignature(seal.md5, key, f.FileSignature); err != nil {
			return err.Error()
		}
	}
	f.SHA256, f.VerifiedBytes = seal.sha256, seal.size
	d.batch.PutFile(f)
	d.log.Info("recorded the hash of a file verified before hashes were kept",
		slog.String("project", f.ProjectURL), slog.String("file", f.Name),
		slog.Bool("md5_checked", f.MD5 != ""), slog.Bool("signature_checked", f.SignatureRequired))
	return ""
}

// refetch takes a file that failed its check out of use: it is removed,
// marked not present with the reason, and downloaded again through the
// normal path (MD5 and signature checks) when a task needs it.
func (d *Daemon) refetch(f *boinc.FileInfo, problem, when, task string) {
	if f.AnonymousPlatform {
		// Never remove the volunteer's own file (app_info.xml).
		d.log.Warn("a file of app_info.xml looks changed; it is used as it is", slog.String("project", f.ProjectURL),
			slog.String("file", f.Name), slog.String("problem", problem), slog.String("when", when))
		return
	}
	attrs := []any{slog.String("project", f.ProjectURL), slog.String("file", f.Name),
		slog.String("problem", problem), slog.String("when", when), slog.String("path", d.filePath(f))}
	if task != "" {
		attrs = append(attrs, slog.String("task", task))
	}
	d.log.Error("file does not match what was verified; it is not used and will be fetched again", attrs...)
	if err := os.Remove(d.filePath(f)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.log.Error("cannot remove the file that failed its check", slog.String("project", f.ProjectURL),
			slog.String("file", f.Name), slog.Any("err", err))
	}
	f.Status = boinc.FileNotPresent
	f.LocalError = problem
	f.SHA256, f.VerifiedBytes = "", 0
	f.Xfer = boinc.FileXfer{}
	f.ErrorMsg = ""
	d.batch.PutFile(f)
}

// checkTaskFiles runs right before r's process is started: every file it
// needs must be present, a regular file, of the verified size and hash.
// Files that fail are taken out of use (refetch); it returns false when
// the task must not start now.
func (d *Daemon) checkTaskFiles(r *boinc.Result) bool {
	start := time.Now()
	ok := true
	var total int64
	files := d.st.inputFiles(r)
	for _, f := range files {
		if f.AnonymousPlatform {
			// The volunteer's own build (app_info.xml): the C++ client
			// never verifies it (verify_app_version_files), and a
			// rebuilt app is simply what runs next.
			continue
		}
		if f.Status != boinc.FilePresent {
			ok = false
			continue
		}
		problem := ""
		if !f.Sealed() {
			problem = d.sealUnsealed(f)
		}
		if problem == "" {
			problem = d.fileProblem(f, true)
		}
		if problem != "" {
			d.refetch(f, problem, "before task start", r.Name)
			ok = false
			continue
		}
		total += f.VerifiedBytes
	}
	if ok {
		d.taskLog(r).Debug("task files verified", slog.Int("files", len(files)), slog.Int64("bytes", total),
			slog.Duration("took", time.Since(start)))
	}
	return ok
}

// checkFilesAtStartup is the start-up check (the C++ client's
// check_file_existence): every present file must exist as a regular file
// with its verified (or, before hashes were kept, its announced) size.
// It reads no file, so start-up stays quick however much data the
// projects keep here: content hashes are compared before each task start,
// and a file verified before hashes were kept is verified again (MD5,
// signature) and hashed the first time a task needs it.
func (d *Daemon) checkFilesAtStartup() {
	keys := make([]string, 0, len(d.st.files))
	for k, f := range d.st.files {
		if f.Status == boinc.FilePresent && !f.IsUpload() && !f.AnonymousPlatform {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		f := d.st.files[k]
		if problem := d.fileProblem(f, false); problem != "" {
			d.refetch(f, problem, "at start-up", "")
		}
	}
}

// absentFile returns the first file r needs that is not present, or nil.
func (d *Daemon) absentFile(r *boinc.Result) *boinc.FileInfo {
	for _, f := range d.st.inputFiles(r) {
		if f.Status != boinc.FilePresent {
			return f
		}
	}
	return nil
}

// refetchFailedMsg is the task error for a file that was present, failed
// its check and could not be fetched again.
func refetchFailedMsg(f *boinc.FileInfo) string {
	msg := "file " + f.Name + " was " + f.LocalError + " on this host and could not be fetched again"
	if f.ErrorMsg != "" {
		msg += ": " + f.ErrorMsg
	}
	return msg
}

// recheckWaitingTask handles a task that has started before (it has a
// slot and maybe a checkpoint) but is not running, while a file it needs
// is fetched again: it waits, and fails with ERR_FILE_MISSING when the
// file cannot be fetched.
func (d *Daemon) recheckWaitingTask(r *boinc.Result, now time.Time) {
	if _, running := d.active[r.Key()]; running {
		return
	}
	for _, f := range d.st.inputFiles(r) {
		if f.Status >= 0 {
			continue
		}
		msg := "download of " + f.Name + " failed"
		if f.LocalError != "" {
			msg = refetchFailedMsg(f)
		} else if f.ErrorMsg != "" {
			msg += ": " + f.ErrorMsg
		}
		d.taskLog(r).Error("task cannot run: a file it needs cannot be fetched", slog.String("file", f.Name), slog.String("reason", msg))
		d.cleanTaskSlot(r)
		d.taskFailed(r, boinc.PhaseComputeError, boinc.ErrFileMissing, msg, now)
		return
	}
}

// cleanTaskSlot removes the slot of a task that is not running and takes
// it from the task; a slot that cannot be removed is left dirty
// (slots.go), and the task goes on without it all the same.
func (d *Daemon) cleanTaskSlot(r *boinc.Result) {
	if r.Slot < 0 {
		return
	}
	d.cleanSlot(r.Slot)
	r.Slot = -1
}
