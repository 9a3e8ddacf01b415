package eventlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func newTestLog(capacity int) (*Log, *bytes.Buffer, *slog.Logger) {
	var journal bytes.Buffer
	l := New(slog.NewTextHandler(&journal, &slog.HandlerOptions{Level: slog.LevelInfo}), capacity)
	return l, &journal, slog.New(l)
}

func TestRingBoundAndSeqno(t *testing.T) {
	tests := []struct {
		name     string
		capacity int
		logged   int
		since    int64
		want     []int64
	}{
		{"empty", 3, 0, 0, nil},
		{"under capacity", 3, 2, 0, []int64{1, 2}},
		{"wrapped", 3, 7, 0, []int64{5, 6, 7}},
		{"since inside", 3, 7, 5, []int64{6, 7}},
		{"since newest", 3, 7, 7, nil},
		{"since future", 3, 7, 100, nil},
		{"since negative", 3, 2, -5, []int64{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _, log := newTestLog(tc.capacity)
			for i := 1; i <= tc.logged; i++ {
				log.Info(fmt.Sprintf("message %d", i))
			}
			got := l.Since(tc.since)
			var seqs []int64
			for _, m := range got {
				seqs = append(seqs, m.Seqno)
				if m.Body != fmt.Sprintf("Message %d", m.Seqno) {
					t.Errorf("seqno %d has body %q", m.Seqno, m.Body)
				}
			}
			if fmt.Sprint(seqs) != fmt.Sprint(tc.want) {
				t.Errorf("Since(%d) seqnos = %v, want %v", tc.since, seqs, tc.want)
			}
			if l.LastSeqno() != int64(tc.logged) {
				t.Errorf("LastSeqno = %d, want %d", l.LastSeqno(), tc.logged)
			}
		})
	}
}

func TestDefaultCapacity(t *testing.T) {
	l := New(nil, 0)
	if l.Capacity() != DefaultCapacity {
		t.Fatalf("capacity %d, want %d", l.Capacity(), DefaultCapacity)
	}
}

func TestBodyPriorityAndProject(t *testing.T) {
	const url = "http://127.0.0.1:18080/"
	l, journal, log := newTestLog(10)
	l.SetProjectNamer(func(u string) string {
		if u == url {
			return "Fake Project"
		}
		return ""
	})
	plog := log.With(slog.String("project", url), slog.String("component", "client"))
	plog.Info("contacting scheduler", slog.String("reason", "To fetch work"), slog.Int("reporting", 0))
	plog.Warn("scheduler is slow", slog.Any("err", errors.New("connection refused")))
	log.Error("cannot save", slog.Duration("retry_in", 90*time.Second))
	log.Log(context.Background(), LevelInternal, "bug")
	log.With("project", "http://other/").WithGroup("xfer").Info("download done", "file", "a b")
	log.Debug("not in the event log: the journal is at Info")

	want := []Message{
		{Seqno: 1, Priority: 1, Project: "Fake Project", ProjectURL: url, Body: `Contacting scheduler reason="To fetch work" reporting=0`},
		{Seqno: 2, Priority: 2, Project: "Fake Project", ProjectURL: url, Body: `Scheduler is slow err="connection refused"`},
		{Seqno: 3, Priority: 3, Body: `[error] Cannot save retry_in=1m30s`},
		{Seqno: 4, Priority: 3, Body: `[error] Bug`},
		{Seqno: 5, Priority: 1, Project: "http://other/", ProjectURL: "http://other/", Body: `Download done xfer.file="a b"`},
	}
	got := l.Since(0)
	if len(got) != len(want) {
		t.Fatalf("got %d messages, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g := got[i]
		g.Time = time.Time{}
		if g != want[i] {
			t.Errorf("message %d:\n got %+v\nwant %+v", i, g, want[i])
		}
		if got[i].Time.IsZero() {
			t.Errorf("message %d has no time", i)
		}
	}
	// The journal still gets everything, including the hidden attributes.
	for _, s := range []string{"component=client", "project=" + url, "xfer.file=\"a b\""} {
		if !strings.Contains(journal.String(), s) {
			t.Errorf("journal lacks %q:\n%s", s, journal.String())
		}
	}
}

func TestEventLogIndependentOfJournalLevel(t *testing.T) {
	var journal bytes.Buffer
	l := New(slog.NewTextHandler(&journal, &slog.HandlerOptions{Level: slog.LevelError}), 10)
	log := slog.New(l)
	log.Info("started")
	if journal.Len() != 0 {
		t.Errorf("journal got an Info record: %s", journal.String())
	}
	if got := l.Since(0); len(got) != 1 || got[0].Body != "Started" {
		t.Errorf("event log = %+v", got)
	}
}

func TestConcurrentLogging(t *testing.T) {
	l, _, log := newTestLog(500)
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pl := log.With("project", fmt.Sprintf("http://p%d/", w))
			for i := 0; i < each; i++ {
				pl.Info("tick", "i", i)
				if i%50 == 0 {
					_ = l.Since(l.LastSeqno() - 10)
				}
			}
		}()
	}
	wg.Wait()
	if l.LastSeqno() != workers*each {
		t.Fatalf("LastSeqno = %d, want %d", l.LastSeqno(), workers*each)
	}
	got := l.Since(0)
	if len(got) != 500 {
		t.Fatalf("kept %d messages, want 500", len(got))
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seqno != got[i-1].Seqno+1 {
			t.Fatalf("seqnos not consecutive at %d: %d then %d", i, got[i-1].Seqno, got[i].Seqno)
		}
	}
	if got[len(got)-1].Seqno != workers*each {
		t.Fatalf("newest seqno %d", got[len(got)-1].Seqno)
	}
}
