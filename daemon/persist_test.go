package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
