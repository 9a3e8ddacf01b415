package daemon

import (
	"log/slog"
	"time"
)

// Retrying a failing state write: the first retry comes one poll interval
// after the failure, then the wait doubles up to persistBackoffMax (capped
// by 60 poll intervals, so tests with short polls recover quickly). Every
// event still tries the write once its wait is over, so recovery is seen
// at the first event after space returns.
const persistBackoffMax = time.Minute

// persistState is the flush path's memory of a failure episode.
type persistState struct {
	failing   bool
	since     time.Time // start of the episode
	failures  int       // failed attempts in this episode
	nextTry   time.Time
	lastError string
	// removals wait for the commit of the changes batched before them.
	removals []string
}

// removeAfterCommit deletes path once the changes batched so far are on
// disk. A file whose record the batch drops or marks done (an uploaded
// output, the files of an acked result) must outlive that commit: removed
// before it, a crash in between leaves a state that still needs the file
// (an upload that can never finish) with the file gone. The removal is
// queued even when nothing is batched yet, because callers batch the
// record change after asking for the removal; the next flush runs it.
func (d *Daemon) removeAfterCommit(path string) {
	d.persist.removals = append(d.persist.removals, path)
}

// removePending runs the removals whose changes are now committed.
func (d *Daemon) removePending() {
	for _, p := range d.persist.removals {
		removeQuiet(p)
	}
	d.persist.removals = d.persist.removals[:0]
}

// flush commits the pending batch. While it fails (disk full, read-only
// directory) no new action is started, so nothing is acted on that is not
// on disk; the batch is kept and retried with backoff. Each failure
// episode is logged once when it starts (naming the file and the
// operating system's error), again only if the error changes, and once
// when writes work again.
func (d *Daemon) flush() bool {
	if d.batch.Len() == 0 {
		d.removePending()
		return true
	}
	now := time.Now()
	ps := &d.persist
	if ps.failing && now.Before(ps.nextTry) {
		return false
	}
	err := d.store.Commit(&d.batch)
	if err == nil {
		d.removePending()
		if ps.failing {
			d.log.Info("state writes work again; resuming work",
				slog.String("file", d.store.Path()),
				slog.Int("failed_attempts", ps.failures),
				slog.Duration("failing_for", now.Sub(ps.since).Round(time.Millisecond)))
			*ps = persistState{removals: ps.removals}
			d.flushFailing = false
			// Clear the health warning now rather than at the next
			// periodic check.
			d.health.lastCheck = now.Add(-healthCheckPeriod)
		}
		return true
	}
	ps.failures++
	wait := d.opt.PollInterval << min(ps.failures-1, 16)
	ps.nextTry = now.Add(min(wait, persistBackoffMax, 60*d.opt.PollInterval))
	if msg := err.Error(); !ps.failing || msg != ps.lastError {
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
