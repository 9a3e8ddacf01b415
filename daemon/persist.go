package daemon

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/boincd/boincd/statefile"
)

// Retrying a failing state write: the first retry comes one poll interval
// after the failure, then the wait doubles up to persistBackoffMax (capped
// by 60 poll intervals, so tests with short polls recover quickly). Every
// event still tries the write once its wait is over, so recovery is seen
// at the first event after space returns.
const persistBackoffMax = time.Minute

// The state reserve: a file of DefaultStateReserve bytes, allocated on
// disk, kept in the data directory so that a scheduler reply can always be
// saved. A reply hands over new tasks (the server counts them as sent to
// this host) and acknowledges reported results; lost before it is on disk,
// the tasks are gone and the results reported again. So:
//
//   - no scheduler request goes out unless the reserve is in place (and
//     the last commit worked): if the disk fills while the reply is on its
//     way or being saved, the commit that fails for want of space releases
//     the reserve and is retried at once into the space it freed;
//   - while a request is in flight the reserve is kept for its reply:
//     other commits failing meanwhile wait (their changes stay batched and
//     go with the reply's commit);
//   - once spent, the reserve is made again as soon as there is room, and
//     until then no request goes out.
//
// 16 MiB is the largest reply the client reads (rpcclient's cap); the
// state a reply adds is its own content re-encoded, so it fits, with
// bbolt's copy-on-write pages, unless a reply near the cap is almost all
// new entities. What the reserve cannot guarantee is that nothing else on
// the machine takes the freed space first.
const (
	ReserveFileName     = "boincd.db.reserve"
	DefaultStateReserve = 16 << 20
)

// persistState is the flush path's memory of a failure episode.
type persistState struct {
	failing   bool
	since     time.Time // start of the episode
	failures  int       // failed attempts in this episode
	nextTry   time.Time
	lastError string
	// removals wait for the commit of the changes batched before them.
	removals []string
	// journaled: the committed state lists removals (removalsMetaKey)
	// that the next commit must clear.
	journaled bool

	// reserveOK: the reserve file holds its full size (or none is
	// wanted). reserveLost: an episode without it was logged.
	reserveOK, reserveLost bool
	reserveFailures        int
	reserveNextTry         time.Time
}

// removeAfterCommit deletes path once the changes batched so far are on
// disk. A file whose record the batch drops or marks done (an uploaded
// output, the files of an acked result) must outlive that commit: removed
// before it, a crash in between leaves a state that still needs the file
// (an upload that can never finish) with the file gone. The removal is
// queued even when nothing is batched yet, because callers batch the
// record change after asking for the removal; the next flush runs it.
//
// The removals go into the same commit (removalsMetaKey), so that a kill
// between the commit and the removal (the file gone from the state, still
// on disk, and nothing left that would ever remove it) is finished by the
// next start (finishRemovals).
func (d *Daemon) removeAfterCommit(path string) {
	d.persist.removals = append(d.persist.removals, path)
	rels := make([]string, 0, len(d.persist.removals))
	for _, p := range d.persist.removals {
		if rel, err := filepath.Rel(d.opt.DataDir, p); err == nil {
			rels = append(rels, filepath.ToSlash(rel))
		}
	}
	d.batch.PutMeta(removalsMetaKey, rels)
}

// removalsMetaKey holds the removals of the last commit, data-directory
// relative, until a later commit clears them.
const removalsMetaKey = "pending_removals"

// removePending runs the removals whose changes are now committed; the
// next commit forgets them.
func (d *Daemon) removePending() {
	if len(d.persist.removals) > 0 {
		for _, p := range d.persist.removals {
			removeQuiet(p)
		}
		d.persist.removals = d.persist.removals[:0]
		d.persist.journaled = true
		return
	}
	if d.persist.journaled && d.batch.Len() == 0 {
		d.batch.DeleteMeta(removalsMetaKey)
		d.persist.journaled = false
	}
}

// finishRemovals runs, at start, the removals a killed run had committed
// but maybe not done: each path under projects/ that the loaded state no
// longer lists. Anything else in the list (a tampered state file) is
// named and left alone.
func (d *Daemon) finishRemovals(meta map[string][]byte) {
	raw, ok := meta[removalsMetaKey]
	if !ok {
		return
	}
	var rels []string
	if err := json.Unmarshal(raw, &rels); err != nil {
		d.log.Warn("state file: unreadable list of pending file removals; ignored", slog.Any("err", err))
	}
	inState := map[string]bool{}
	for _, f := range d.st.files {
		inState[filepath.Clean(d.filePath(f))] = true
	}
	for _, rel := range rels {
		clean := filepath.Clean(filepath.FromSlash(rel))
		if !filepath.IsLocal(clean) || !strings.HasPrefix(filepath.ToSlash(clean), "projects/") {
			d.log.Warn("state file: pending file removal outside the projects directory; not removed", slog.String("path", rel))
			continue
		}
		path := filepath.Join(d.opt.DataDir, clean)
		if inState[path] {
			continue
		}
		if err := os.Remove(path); err == nil {
			d.log.Info("removed a file the previous run had deleted from its state but not from disk", slog.String("path", rel))
		}
	}
	d.batch.DeleteMeta(removalsMetaKey)
}

// stateAtRisk says whether a scheduler reply arriving now might not be
// saved: the last commit failed, or the reserve is not in place. No
// scheduler request is sent while it holds.
func (d *Daemon) stateAtRisk() bool {
	return d.flushFailing || !d.persist.reserveOK
}

// commitNow drops the retry backoff of a failing state write, so that the
// next flush tries at once: a scheduler reply was just applied.
func (d *Daemon) commitNow() { d.persist.nextTry = time.Time{} }

// flush commits the pending batch. While it fails (disk full, read-only
// directory) no new action is started, so nothing is acted on that is not
// on disk; the batch is kept and retried with backoff. Each failure
// episode is logged once when it starts (naming the file and the
// operating system's error), again only if its kind changes (failureKind), and once
// when writes work again. A commit that fails because the disk is full
// spends the state reserve, unless a scheduler request is in flight and
// the reserve is kept for its reply.
func (d *Daemon) flush() bool {
	now := time.Now()
	if d.batch.Len() == 0 {
		d.removePending()
		d.keepReserve(now)
		return true
	}
	ps := &d.persist
	if ps.failing && now.Before(ps.nextTry) {
		return false
	}
	err := d.store.Commit(&d.batch)
	if err != nil && diskFull(err) && (d.rpc == nil || d.rpc.master) && d.releaseReserve() {
		pending := d.batch.Len()
		err = d.store.Commit(&d.batch)
		if err == nil {
			d.log.Warn("the disk is full: saved the client state into the space kept in reserve; no scheduler requests until the reserve can be made again",
				slog.String("file", d.store.Path()),
				slog.String("reserve", d.reservePath()),
				slog.Int("saved_changes", pending))
		}
	}
	if err == nil {
		d.removePending()
		if ps.failing {
			d.log.Info("state writes work again; resuming work",
				slog.String("file", d.store.Path()),
				slog.Int("failed_attempts", ps.failures),
				slog.Duration("failing_for", now.Sub(ps.since).Round(time.Millisecond)))
			ps.failing, ps.since, ps.failures, ps.nextTry, ps.lastError = false, time.Time{}, 0, time.Time{}, ""
			d.flushFailing = false
			// Clear the health warning now rather than at the next
			// periodic check.
			d.health.lastCheck = now.Add(-healthCheckPeriod)
		}
		d.keepReserve(now)
		return true
	}
	ps.failures++
	wait := d.opt.PollInterval << min(ps.failures-1, 16)
	ps.nextTry = now.Add(min(wait, persistBackoffMax, 60*d.opt.PollInterval))
	if msg := failureKind(err); !ps.failing || msg != ps.lastError {
		if !ps.failing {
			ps.since = now
		}
		ps.lastError = msg
		d.log.Error("cannot save client state: disk full or read-only? No new work is started until it can be saved; retrying",
			slog.String("file", d.store.Path()),
			slog.Any("err", err),
			slog.Int("pending_changes", d.batch.Len()))
	}
	if !ps.failing {
		ps.failing = true
		d.flushFailing = true
		// Raise the state_write_failed warning now rather than at the
		// next periodic check.
		d.health.lastCheck = now.Add(-healthCheckPeriod)
	}
	return false
}

// failureKind is what a failed commit's error means for the user: a new
// log line comes only when it changes within an episode. The same problem
// reaches bbolt's writes in different words (a page write, growing the
// file), which is no news.
func failureKind(err error) string {
	switch {
	case diskFull(err):
		return "disk full"
	case errors.Is(err, statefile.ErrNoSpace):
		return "no space"
	case errors.Is(err, statefile.ErrReadOnly):
		return "read-only"
	}
	return err.Error()
}

// diskFull says whether a commit failed for want of space on the file
// system (not a file size limit: freeing space does not help there).
func diskFull(err error) bool {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return true
	}
	// bbolt formats some I/O errors with %s, dropping the errno.
	msg := err.Error()
	return strings.Contains(msg, syscall.ENOSPC.Error()) || strings.Contains(msg, syscall.EDQUOT.Error())
}

func (d *Daemon) reservePath() string { return filepath.Join(d.opt.DataDir, ReserveFileName) }

func (d *Daemon) reserveSize() int64 {
	switch {
	case d.opt.StateReserve < 0:
		return 0
	case d.opt.StateReserve == 0:
		return DefaultStateReserve
	}
	return d.opt.StateReserve
}

// releaseReserve frees the reserve's space for the commit about to be
// retried; it says whether there was any.
func (d *Daemon) releaseReserve() bool {
	ps := &d.persist
	if !ps.reserveOK || d.reserveSize() == 0 {
		return false
	}
	ps.reserveOK = false
	ps.reserveNextTry = time.Time{}
	if err := os.Remove(d.reservePath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Error("cannot remove the state reserve", slog.String("file", d.reservePath()), slog.Any("err", err))
		return false
	}
	return true
}

// keepReserve makes the reserve when it is missing (at start, and after it
// was spent), retrying with the state write's backoff while there is no
// room; the first failure of an episode is logged, and the return.
func (d *Daemon) keepReserve(now time.Time) {
	ps := &d.persist
	size := d.reserveSize()
	if ps.reserveOK || now.Before(ps.reserveNextTry) {
		return
	}
	if size == 0 {
		ps.reserveOK = true
		return
	}
	path := d.reservePath()
	if err := preallocate(path, size); err != nil {
		// A partly allocated reserve would only take space from the
		// state it exists for.
		_ = os.Remove(path)
		ps.reserveFailures++
		wait := d.opt.PollInterval << min(ps.reserveFailures-1, 16)
		ps.reserveNextTry = now.Add(min(wait, persistBackoffMax, 60*d.opt.PollInterval))
		if !ps.reserveLost {
			ps.reserveLost = true
			d.log.Warn("cannot keep disk space in reserve for saving scheduler replies (disk full?): no scheduler requests until there is room",
				slog.String("file", path), slog.Int64("bytes", size), slog.Any("err", err))
		}
		return
	}
	ps.reserveOK = true
	ps.reserveFailures = 0
	if ps.reserveLost {
		ps.reserveLost = false
		d.log.Info("disk space for saving scheduler replies is in reserve again; scheduler requests resume",
			slog.String("file", path), slog.Int64("bytes", size))
	}
}
