package daemon

import (
	"log/slog"
	"os"
	"time"

	"github.com/boincd/boincd/taskrunner"
)

// Slot directories (slots/N) that cannot be emptied. On Windows a file in
// a slot held open by a virus scanner or an indexer cannot be deleted, and
// Wine refuses some deletions outright; the C++ client then skips the slot
// and takes the next number (ACTIVE_TASK::get_free_slot tries
// client_clean_out_dir on each unused slot and uses the first that
// empties), and carries on with the task whose slot it could not clean
// (ACTIVE_TASK::handle_exited_app). So does boincd: such a slot is
// remembered as dirty, warned about once, skipped by every start, and
// tried again at each start and periodically until it clears. No task
// fails for it.

// slotRetryInterval is how often dirty slots are retried besides at each
// task start: the periodic work-fetch check's interval (one minute).
func (d *Daemon) slotRetryInterval() time.Duration { return d.opt.WorkFetchInterval }

// removeAll removes a slot directory (Options.RemoveAll or os.RemoveAll).
func (d *Daemon) removeAll(path string) error {
	if d.opt.RemoveAll != nil {
		return d.opt.RemoveAll(path)
	}
	return os.RemoveAll(path)
}

// cleanSlot removes slots/n; a slot that cannot be removed is marked
// dirty (and warned about once) rather than failing anything.
func (d *Daemon) cleanSlot(n int) bool {
	if n < 0 {
		return true
	}
	if err := taskrunner.CleanSlot(d.opt.DataDir, n, d.removeAll); err != nil {
		d.slotDirty(n, err)
		return false
	}
	if d.dirtySlots[n] {
		delete(d.dirtySlots, n)
		d.log.Info("slot directory cleared; it is used again", slog.Int("slot", n))
	}
	return true
}

const slotDirtyMsg = "cannot clear slot directory; no task is given it until it can be cleared"

// slotDirty remembers that slots/n could not be cleared. The warning is
// given once per slot, not at every retry: a file held open for hours
// would otherwise fill the log.
func (d *Daemon) slotDirty(n int, err error) {
	if d.dirtySlots[n] {
		return
	}
	if d.dirtySlots == nil {
		d.dirtySlots = map[int]bool{}
	}
	d.dirtySlots[n] = true
	d.log.Warn(slotDirtyMsg,
		slog.Int("slot", n), slog.Any("err", err))
}

// maxSlots bounds the slot numbers tried, as the C++ client's paranoia
// limit in get_free_slot (100 per CPU).
func (d *Daemon) maxSlots() int { return max(d.usableCPUs(), 1) * 100 }

// freeSlot is the lowest slot number no task holds whose directory is
// missing, empty, or could be emptied now (ACTIVE_TASK::get_free_slot).
// A leftover directory is removed first, so the task never starts among
// another task's files; one that cannot be is marked dirty and skipped.
// ok is false when no slot up to maxSlots can be used: the task then
// stays queued.
func (d *Daemon) freeSlot() (n int, ok bool) {
	used := map[int]bool{}
	for _, r := range d.st.results {
		if r.Slot >= 0 {
			used[r.Slot] = true
		}
	}
	for n := 0; n < d.maxSlots(); n++ {
		if used[n] {
			continue
		}
		if !d.dirtySlots[n] {
			empty, err := taskrunner.SlotEmpty(d.opt.DataDir, n)
			if err == nil && empty {
				return n, true
			}
		}
		if d.cleanSlot(n) {
			return n, true
		}
	}
	return -1, false
}

// retryDirtySlots tries the dirty slots no task holds again, at most once
// per slotRetryInterval, so their disk space comes back even while no
// task starts.
func (d *Daemon) retryDirtySlots(now time.Time) {
	if len(d.dirtySlots) == 0 || now.Before(d.nextSlotRetry) {
		return
	}
	d.nextSlotRetry = now.Add(d.slotRetryInterval())
	used := map[int]bool{}
	for _, r := range d.st.results {
		if r.Slot >= 0 {
			used[r.Slot] = true
		}
	}
	for n := range d.dirtySlots {
		if !used[n] {
			d.cleanSlot(n)
		}
	}
}
