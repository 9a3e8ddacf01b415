package daemon

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/boincd/boincd/boinc"
	"github.com/boincd/boincd/logflags"
	"github.com/boincd/boincd/rpcclient"
	"github.com/boincd/boincd/taskrunner"
)

// Trickle messages (client/cs_trickle.cpp). A task's trickle-up waits in
// its project directory as trickle_up_<result>_<time>.xml (taskrunner
// moves it there and reports it at a Poll), marks the project
// trickle_up_pending, which makes a scheduler RPC of reason "To send
// trickle-up message"; every request carries all waiting trickle-ups,
// renamed *.sent, and an acknowledged reply deletes the *.sent ones. A
// reply's trickle-downs go into the task's slot as trickle_down_<time>.

// maxTrickleRequestBytes bounds the trickle-ups one request carries; the
// rest wait for the next (the project stays trickle_up_pending).
const maxTrickleRequestBytes = 4 << 20

// pendingTrickleDownPrefix names a trickle-down kept in the project
// directory for a task that has no slot yet: it moves into the slot when
// the task starts (the C++ client drops these).
const pendingTrickleDownPrefix = "trickle_down_"

// readTrickleFiles collects the project's waiting trickle-ups for a
// scheduler request and marks them sent (CLIENT_STATE::read_trickle_files).
// more says some were left for the next request. Files that cannot be
// sent (unreadable, too large, a body that would break the request) are
// left where they are, with an error naming them.
func (d *Daemon) readTrickleFiles(p *boinc.Project) (msgs []rpcclient.MsgFromHost, more bool) {
	dir := d.projectDir(p.MasterURL)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.projectLog(p).Error("cannot read the project directory for trickle-up messages", slog.String("dir", dir), slog.Any("err", err))
		}
		return nil, false
	}
	log := d.projectLog(p)
	total := 0
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, taskrunner.TrickleUpPrefix) {
			continue
		}
		result, at, ok := taskrunner.ParseTrickleUpName(name)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, name)
		body, err := readTrickleBody(path)
		if err != nil {
			log.Error("cannot send trickle-up message", slog.String("file", path), slog.Any("err", err))
			continue
		}
		if total+len(body) > maxTrickleRequestBytes && len(msgs) > 0 {
			more = true
			break
		}
		total += len(body)
		msgs = append(msgs, rpcclient.MsgFromHost{ResultName: result, Time: at, Body: string(body)})
		log.Debug("read trickle file", slog.String(logflags.CategoryAttr, "trickle_debug"), slog.String("file", path))
		if !strings.HasSuffix(name, taskrunner.TrickleSentExt) {
			// Marked, so that only these are deleted when the reply
			// acknowledges them: others may arrive meanwhile.
			if err := os.Rename(path, path+taskrunner.TrickleSentExt); err != nil {
				log.Warn("cannot mark trickle-up message sent; it may be sent again", slog.String("file", path), slog.Any("err", err))
			}
		}
	}
	return msgs, more
}

// readTrickleBody reads one trickle-up file, refusing what a server
// could not store or what would end the <msg_from_host> early.
func readTrickleBody(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Size() > taskrunner.MaxTrickleBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d a server accepts", fi.Size(), taskrunner.MaxTrickleBytes)
	}
	body, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(body) > taskrunner.MaxTrickleBytes {
		return nil, fmt.Errorf("%d bytes, more than the %d a server accepts", len(body), taskrunner.MaxTrickleBytes)
	}
	// The server reads the request line by line (MSG_FROM_HOST_DESC::
	// parse): these would end the message or the request inside it.
	for _, tag := range []string{"</msg_from_host>", "</scheduler_request>", "\x00"} {
		if bytes.Contains(body, []byte(tag)) {
			return nil, fmt.Errorf("the message contains %q", tag)
		}
	}
	return body, nil
}

// removeTrickleFiles deletes the trickle-ups a reply acknowledged: the
// *.sent ones (CLIENT_STATE::remove_trickle_files).
func (d *Daemon) removeTrickleFiles(p *boinc.Project) {
	dir := d.projectDir(p.MasterURL)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, taskrunner.TrickleUpPrefix) && strings.HasSuffix(name, taskrunner.TrickleSentExt) {
			if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				d.projectLog(p).Warn("cannot delete acknowledged trickle-up message", slog.String("file", name), slog.Any("err", err))
			}
		}
	}
}

// trickleUpQueued: a running task sent a trickle-up (ACTIVE_TASK::
// get_trickle_up_msg sets trickle_up_pending).
func (d *Daemon) trickleUpQueued(r *boinc.Result, n int) {
	p := d.st.projects[r.ProjectURL]
	if p == nil {
		return
	}
	d.taskLog(r).Info("task sent a trickle-up message", slog.Int("messages", n))
	if !p.TrickleUpPending {
		p.TrickleUpPending = true
		d.batch.PutProject(p)
	}
}

// handleTrickleDowns delivers a reply's trickle-downs
// (CLIENT_STATE::handle_trickle_down): into the slot of the task they
// are for, announced to it if it runs; for a task not started yet, kept
// in the project directory until it starts. One for a task the client
// does not hold, or holds finished, is logged and dropped, as there.
func (d *Daemon) handleTrickleDowns(p *boinc.Project, rep *rpcclient.SchedulerReply) {
	log := d.projectLog(p)
	for _, why := range rep.RefusedTrickleDowns {
		log.Error("refusing trickle-down message from the server", slog.String("why", why))
	}
	for _, td := range rep.TrickleDowns {
		if err := d.deliverTrickleDown(p, td); err != nil {
			log.Error("cannot deliver trickle-down message", slog.String("task", td.ResultName), slog.Int64("time", td.Time), slog.Any("err", err))
		}
	}
}

func (d *Daemon) deliverTrickleDown(p *boinc.Project, td rpcclient.TrickleDown) error {
	r := d.st.results[entityKey(p.MasterURL, td.ResultName)]
	if r == nil {
		return errors.New("no such task")
	}
	if err := taskrunner.CheckTrickleResultName(r.Name); err != nil {
		return err
	}
	log := d.taskLog(r)
	switch {
	case r.Slot >= 0 && r.Phase == boinc.PhaseComputing:
		name, err := taskrunner.WriteTrickleDown(d.opt.DataDir, r.Slot, td.Time, []byte(td.Body))
		if err != nil {
			return err
		}
		if _, running := d.active[r.Key()]; running {
			if err := d.runner.NotifyTrickleDown(r.Key()); err != nil {
				log.Debug("trickle-down not announced; the task finds it when it next looks", slog.Any("err", err))
			}
		}
		log.Info("trickle-down message delivered", slog.String("file", name), slog.Int("slot", r.Slot))
	case r.Phase.Runnable():
		// Not started: kept beside the project's files until it is.
		dir := d.projectDir(p.MasterURL)
		name := fmt.Sprintf("%s%s_%d", pendingTrickleDownPrefix, r.Name, td.Time)
		path := filepath.Join(dir, name)
		for n := 1; ; n++ {
			if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
				break
			}
			path = filepath.Join(dir, fmt.Sprintf("%s.%d", name, n))
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(td.Body), 0o644); err != nil {
			os.Remove(path)
			return err
		}
		log.Info("trickle-down message kept until the task starts", slog.String("file", filepath.Base(path)))
	default:
		return fmt.Errorf("the task is no longer running (%s)", r.Phase)
	}
	return nil
}

// pendingTrickleDowns lists the kept trickle-downs of r, oldest first,
// with the time each carries.
func (d *Daemon) pendingTrickleDowns(r *boinc.Result) []string {
	dir := d.projectDir(r.ProjectURL)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	prefix := pendingTrickleDownPrefix + r.Name + "_"
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' && !strings.Contains(rest, "_") && e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

// movePendingTrickleDowns moves r's kept trickle-downs into its slot,
// now that it has one.
func (d *Daemon) movePendingTrickleDowns(r *boinc.Result) {
	names := d.pendingTrickleDowns(r)
	if len(names) == 0 || r.Slot < 0 {
		return
	}
	dir := d.projectDir(r.ProjectURL)
	prefix := pendingTrickleDownPrefix + r.Name + "_"
	for _, name := range names {
		path := filepath.Join(dir, name)
		body, err := os.ReadFile(path)
		if err != nil {
			d.taskLog(r).Error("cannot read kept trickle-down message", slog.String("file", path), slog.Any("err", err))
			continue
		}
		var at int64
		fmt.Sscanf(strings.TrimPrefix(name, prefix), "%d", &at)
		slotName, err := taskrunner.WriteTrickleDown(d.opt.DataDir, r.Slot, at, body)
		if err != nil {
			d.taskLog(r).Error("cannot deliver kept trickle-down message", slog.String("file", path), slog.Any("err", err))
			continue
		}
		_ = os.Remove(path)
		d.taskLog(r).Info("trickle-down message delivered", slog.String("file", slotName), slog.Int("slot", r.Slot))
	}
	if _, running := d.active[r.Key()]; running {
		_ = d.runner.NotifyTrickleDown(r.Key())
	}
}

// dropPendingTrickleDowns deletes kept trickle-downs of a task that will
// never run.
func (d *Daemon) dropPendingTrickleDowns(r *boinc.Result) {
	for _, name := range d.pendingTrickleDowns(r) {
		path := filepath.Join(d.projectDir(r.ProjectURL), name)
		if err := os.Remove(path); err == nil {
			d.taskLog(r).Warn("dropping a trickle-down message the task never got to read", slog.String("file", name))
		}
	}
}

// uploadChecked reports the measure of an output a running task asked to
// upload.
type uploadChecked struct {
	file, result string // keys
	md5          string
	nbytes       int64
	err          error
}

// uploadRequested: the app asked for outputs to be uploaded before it
// ends (boinc_upload_file; ACTIVE_TASK::handle_upload_files). Each is
// measured beside the loop; handleUploadChecked marks it present, and
// startTransfers uploads it while the task runs.
func (d *Daemon) uploadRequested(r *boinc.Result, names []string) {
	log := d.taskLog(r)
	for _, name := range names {
		var f *boinc.FileInfo
		for _, ref := range r.OutputFiles {
			if ref.OpenName == name || (ref.OpenName == "" && ref.FileName == name) {
				f = d.st.file(r.ProjectURL, ref.FileName)
			}
		}
		if f == nil {
			// As the C++ client: "Can't find uploadable file".
			log.Error("task asked to upload a file that is not one of its outputs", slog.String("file", name))
			continue
		}
		if !f.IsUpload() || f.Uploaded {
			log.Warn("task asked to upload a file that has no upload URL or is uploaded already", slog.String("file", name))
			continue
		}
		path, fkey, rkey := d.filePath(f), f.Key(), r.Key()
		d.wg.Add(1)
		go func() {
			defer d.wg.Done()
			sum, n, err := taskrunner.CheckUploadFile(path)
			d.send(uploadChecked{file: fkey, result: rkey, md5: sum, nbytes: n, err: err})
		}()
	}
}

func (d *Daemon) handleUploadChecked(ev uploadChecked) {
	f, r := d.st.files[ev.file], d.st.results[ev.result]
	if f == nil || r == nil {
		return
	}
	log := d.taskLog(r).With(slog.String("file", f.Name))
	if ev.err != nil {
		log.Error("cannot upload the file the task asked to upload", slog.Any("err", ev.err))
		return
	}
	if f.MaxNBytes > 0 && float64(ev.nbytes) > f.MaxNBytes {
		log.Error("cannot upload the file the task asked to upload: larger than its max_nbytes",
			slog.Int64("bytes", ev.nbytes), slog.Float64("max_nbytes", f.MaxNBytes))
		return
	}
	f.NBytes, f.MD5, f.Status = float64(ev.nbytes), ev.md5, boinc.FilePresent
	d.batch.PutFile(f)
	log.Info("task asked to upload a file before it ends", slog.Int64("bytes", ev.nbytes))
}

// computingOwner is the result, still computing, that f is an output
// of; nil if none.
func (d *Daemon) computingOwner(f *boinc.FileInfo) (*boinc.Result, string) {
	for _, r := range d.st.projectResults(f.ProjectURL) {
		if r.Phase != boinc.PhaseComputing {
			continue
		}
		for _, ref := range r.OutputFiles {
			if ref.FileName == f.Name {
				open := ref.OpenName
				if open == "" {
					open = ref.FileName
				}
				return r, open
			}
		}
	}
	return nil, ""
}

// intermediateUploaded tells a running task its upload is done
// (ACTIVE_TASK_SET::upload_notify_app); it reports whether f belongs to
// a task still computing, whose file must stay.
func (d *Daemon) intermediateUploaded(f *boinc.FileInfo) bool {
	r, open := d.computingOwner(f)
	if r == nil {
		return false
	}
	if r.Slot >= 0 {
		if err := d.runner.NotifyUploadStatus(r.Key(), r.Slot, open, 0); err != nil {
			d.taskLog(r).Warn("cannot tell the task its upload is done", slog.String("file", f.Name), slog.Any("err", err))
		}
	}
	return true
}

// setTrickleUpURLs keeps the trickle handlers a reply named
// (update_trickle_up_urls): every reply says the whole list, and one
// without <trickle_up_urls> has none. Kept in memory only, as in the C++
// client: the next reply names them again.
func (d *Daemon) setTrickleUpURLs(p *boinc.Project, urls []string) {
	if slices.Equal(d.trickleURLs[p.MasterURL], urls) {
		return
	}
	if len(urls) == 0 {
		delete(d.trickleURLs, p.MasterURL)
		return
	}
	if d.trickleURLs == nil {
		d.trickleURLs = map[string][]string{}
	}
	d.trickleURLs[p.MasterURL] = slices.Clone(urls)
	d.projectLog(p).Info("the project has trickle handlers; trickle-up messages also go to them", slog.Any("urls", urls))
}

// replicateTrickles posts each trickle-up going out with a request to
// every trickle handler of the project as well (send_replicated_trickles),
// without waiting: the scheduler request carries them anyway, so a
// handler's failure is only logged, as the C++ client logs it.
func (d *Daemon) replicateTrickles(p *boinc.Project, platform string, msgs []rpcclient.MsgFromHost) {
	urls := d.trickleURLs[p.MasterURL]
	if len(urls) == 0 || len(msgs) == 0 {
		return
	}
	log := d.projectLog(p)
	for _, m := range msgs {
		body := rpcclient.TrickleUpRequest(p.Authenticator, p.HostID, p.RPCSeqno, platform, m)
		for _, u := range urls {
			log.Debug("sending replicated trickle", slog.String(logflags.CategoryAttr, "trickle_debug"), slog.String("url", u), slog.String("result", m.ResultName))
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				if err := d.http.PostTrickleUp(d.ctx, u, body); err != nil && d.ctx.Err() == nil {
					log.Warn("trickle-up post failed", slog.String("url", u), slog.Any("err", err))
				}
			}()
		}
	}
}
