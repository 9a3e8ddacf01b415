package taskrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/boincd/boincd/boincapi"
	"github.com/boincd/boincd/internal/atomicfile"
)

// MaxTrickleBytes bounds one trickle message, up or down: the server
// keeps msg_from_host.xml and msg_to_host.xml in blobs of this size
// (db/boinc_db_types.h MSG_FROM_HOST_BLOB_SIZE, MSG_TO_HOST_BLOB_SIZE),
// so a larger one could not arrive whole anyway.
const MaxTrickleBytes = 256 * 1024

// TrickleUpPrefix starts the names of the trickle-up files waiting in a
// project directory: trickle_up_<result>_<unix time>.xml
// (client/app.cpp ACTIVE_TASK::move_trickle_file), with ".sent" appended
// once a scheduler request carried them (cs_trickle.cpp
// read_trickle_files).
const (
	TrickleUpPrefix = "trickle_up_"
	TrickleSentExt  = ".sent"
)

// CheckTrickleResultName refuses a result name that cannot be part of a
// trickle file name: one that would name another directory or is empty.
func CheckTrickleResultName(name string) error {
	switch {
	case name == "":
		return errors.New("empty result name")
	case strings.ContainsAny(name, `/\`+"\x00"), name == "." || name == "..", strings.Contains(name, ".."):
		return fmt.Errorf("result name %q cannot be part of a file name", name)
	}
	return nil
}

// ParseTrickleUpName splits a project-directory file name of the form
// trickle_up_RESULT_TIME[…] into its result name and time, as
// read_trickle_files does: the result name runs to the last '_', the
// time is the number after it (a ".xml", ".sent" or ".N.xml" tail is
// ignored).
func ParseTrickleUpName(fname string) (result string, at int64, ok bool) {
	rest, found := strings.CutPrefix(fname, TrickleUpPrefix)
	if !found {
		return "", 0, false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 {
		return "", 0, false
	}
	result, tail := rest[:i], rest[i+1:]
	j := 0
	for j < len(tail) && tail[j] >= '0' && tail[j] <= '9' {
		j++
	}
	if j == 0 || CheckTrickleResultName(result) != nil {
		return "", 0, false
	}
	at, err := strconv.ParseInt(tail[:j], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return result, at, true
}

// moveTrickleUp moves the slot's trickle_up.xml into the project
// directory as trickle_up_<result>_<time>.xml
// (ACTIVE_TASK::move_trickle_file). What cannot be moved is deleted, as
// there: the app wrote it and will not send it again. A name already
// taken (two trickles in one second) gets a ".N" before ".xml" instead of
// overwriting the earlier trickle, which the C++ client would lose.
func moveTrickleUp(slotDir, projDir, result string, now time.Time) (string, error) {
	src := filepath.Join(slotDir, boincapi.TrickleUpFileName)
	fail := func(err error) (string, error) {
		if rmErr := os.Remove(src); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
			err = errors.Join(err, rmErr)
		}
		return "", err
	}
	if err := CheckTrickleResultName(result); err != nil {
		return fail(fmt.Errorf("trickle-up of task %q: %w", result, err))
	}
	// Lstat: an app's symlink to some other file must not get that file
	// sent to the server.
	fi, err := os.Lstat(src)
	if err != nil {
		return "", fmt.Errorf("trickle-up of task %q: %w", result, err)
	}
	if !fi.Mode().IsRegular() {
		return fail(fmt.Errorf("trickle-up of task %q: %s is not a regular file (%s)", result, src, fi.Mode().Type()))
	}
	if fi.Size() > MaxTrickleBytes {
		return fail(fmt.Errorf("trickle-up of task %q: %s is %d bytes, more than the %d a server accepts; deleted",
			result, src, fi.Size(), MaxTrickleBytes))
	}
	base := fmt.Sprintf("%s%s_%d", TrickleUpPrefix, result, now.Unix())
	name := base + ".xml"
	for n := 1; ; n++ {
		_, err1 := os.Lstat(filepath.Join(projDir, name))
		_, err2 := os.Lstat(filepath.Join(projDir, name+TrickleSentExt))
		if errors.Is(err1, fs.ErrNotExist) && errors.Is(err2, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.%d.xml", base, n)
	}
	if err := os.Rename(src, filepath.Join(projDir, name)); err != nil {
		return fail(fmt.Errorf("trickle-up of task %q: %w", result, err))
	}
	return name, nil
}

// WriteTrickleDown writes a trickle-down body into a slot as
// trickle_down_<time> (cs_trickle.cpp handle_trickle_down), where the
// app's boinc_receive_trickle_down finds it; a name already taken gets a
// ".N" suffix rather than overwriting a message the app has not read. It
// returns the file name.
func WriteTrickleDown(dataDir string, slot int, sendTime int64, body []byte) (string, error) {
	if slot < 0 {
		return "", fmt.Errorf("write trickle-down: invalid slot %d", slot)
	}
	if len(body) > MaxTrickleBytes {
		return "", fmt.Errorf("write trickle-down: %d bytes, more than %d", len(body), MaxTrickleBytes)
	}
	dir := slotDir(dataDir, slot)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write trickle-down: %w", err)
	}
	base := fmt.Sprintf("%s_%d", boincapi.TrickleDownPrefix, sendTime)
	name := base
	for n := 1; ; n++ {
		if _, err := os.Lstat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
			break
		}
		name = fmt.Sprintf("%s.%d", base, n)
	}
	// Written aside and renamed: the app may scan the slot at any moment.
	if err := atomicfile.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
		return "", fmt.Errorf("trickle-down: %w", err)
	}
	return name, nil
}

// NotifyTrickleDown tells a running task that a trickle-down waits in
// its slot: <have_trickle_down/> goes out on the trickle_down channel at
// the next Poll (ACTIVE_TASK_SET::send_trickle_downs). A task not
// running finds the file itself when it next starts.
func (r *Runner) NotifyTrickleDown(key string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, err := r.live(key)
	if err != nil {
		return err
	}
	t.trickleDown = true
	return nil
}

// takeUploadRequests collects the logical names the app asked to upload
// (boinc_ufr_<name> files, ACTIVE_TASK::handle_upload_files) and deletes
// the request files.
func takeUploadRequests(slotDir string) ([]string, error) {
	entries, err := os.ReadDir(slotDir)
	if err != nil {
		return nil, err
	}
	var names []string
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutPrefix(e.Name(), boincapi.UploadFileReqPrefix)
		if !ok {
			continue
		}
		if name != "" {
			names = append(names, name)
		}
		if err := os.Remove(filepath.Join(slotDir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return names, errors.Join(errs...)
}

// pollTrickle reads the trickle_up channel and sends pending
// trickle-down notices (get_trickle_up_msg, send_trickle_downs). Called
// with r.mu held.
func (r *Runner) pollTrickle(t *task, now time.Time) {
	msg, ok, err := t.shm.Receive(boincapi.TrickleUp)
	if err != nil {
		r.log.Warn("trickle-up channel", "result", t.name, "err", err)
	}
	if ok {
		if boincapi.HasTag(msg, boincapi.MsgHaveNewTrickleUp) {
			if name, err := moveTrickleUp(t.dir, t.projDir, t.name, now); err != nil {
				r.log.Error("cannot take the task's trickle-up message", "result", t.name, "err", err)
			} else {
				r.log.Debug("trickle-up message queued", "result", t.name, "file", name)
				t.trickleUps++
			}
		}
		if boincapi.HasTag(msg, boincapi.MsgHaveNewUploadFile) {
			names, err := takeUploadRequests(t.dir)
			if err != nil {
				r.log.Warn("upload requests", "result", t.name, "err", err)
			}
			t.uploadReqs = append(t.uploadReqs, names...)
		}
	}
	if t.trickleDown {
		if sent, err := t.shm.Send(boincapi.TrickleDown, boincapi.MsgHaveTrickleDown+"\n"); err != nil {
			r.log.Warn("trickle-down channel", "result", t.name, "err", err)
		} else if sent {
			t.trickleDown = false
		}
	} else if t.uploadStatus {
		if sent, err := t.shm.Send(boincapi.TrickleDown, boincapi.MsgUploadFileStatus+"\n"); err != nil {
			r.log.Warn("trickle-down channel", "result", t.name, "err", err)
		} else if sent {
			t.uploadStatus = false
		}
	}
}

// CheckUploadFile measures an output a running app asked to upload
// (ACTIVE_TASK::handle_upload_files computes its MD5 and size). Only a
// regular file is taken: a link the app made to some other file must not
// get that file uploaded.
func CheckUploadFile(path string) (md5 string, nbytes int64, err error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	return md5File(path)
}

// NotifyUploadStatus writes boinc_ufs_<open name> with the upload's
// status into a slot (ACTIVE_TASK::upload_notify_app) and, if the task
// runs, says so on the trickle_down channel (<upload_file_status/>).
func (r *Runner) NotifyUploadStatus(key string, slot int, openName string, status int) error {
	if err := CheckTrickleResultName(openName); err != nil {
		return fmt.Errorf("upload status: %w", err)
	}
	path := filepath.Join(slotDir(r.dataDir, slot), boincapi.UploadFileStatusPrefix+openName)
	if err := os.WriteFile(path, fmt.Appendf(nil, "<status>%d</status>\n", status), 0o644); err != nil {
		return fmt.Errorf("upload status: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, err := r.live(key); err == nil {
		t.uploadStatus = true
	}
	return nil
}
