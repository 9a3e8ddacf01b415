package statefile

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkCommitOneResult is the daemon's common case: one result changed
// (a checkpoint, a phase move) and is committed on its own. "fsync" is the
// production setting; "nosync" shows the cost without the disk flush.
func BenchmarkCommitOneResult(b *testing.B) {
	for _, noSync := range []bool{false, true} {
		name := "fsync"
		if noSync {
			name = "nosync"
		}
		b.Run(name, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "boincd.db"), Options{NoSync: noSync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var batch Batch
			for i := 0; i < 200; i++ { // a realistic neighbourhood of other results
				batch.PutResult(fullResult("http://p/", fmt.Sprintf("other_%03d", i)))
			}
			if err := s.Commit(&batch); err != nil {
				b.Fatal(err)
			}
			if _, err := s.Load(); err != nil {
				b.Fatal(err)
			}
			r := fullResult("http://p/", "r1")
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				r.CheckpointCPUTime = float64(i)
				batch.PutResult(r)
				if err := s.Commit(&batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCommitUnchanged is a commit whose only put matches the stored
// value: it must not open a transaction.
func BenchmarkCommitUnchanged(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "boincd.db"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	r := fullResult("http://p/", "r1")
	var batch Batch
	batch.PutResult(r)
	if err := s.Commit(&batch); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		batch.PutResult(r)
		if err := s.Commit(&batch); err != nil {
			b.Fatal(err)
		}
	}
	if st := s.Stats(); st.Commits != 1 {
		b.Fatalf("unchanged puts opened %d transactions", st.Commits-1)
	}
}

func BenchmarkLoad10000Results(b *testing.B) {
	path := filepath.Join(b.TempDir(), "boincd.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var batch Batch
	for i := 0; i < 10000; i++ {
		batch.PutResult(fullResult("http://p/", fmt.Sprintf("result_%05d", i)))
		if batch.Len() == 1000 {
			if err := s.Commit(&batch); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		snap, err := s.Load()
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Results) != 10000 {
			b.Fatalf("%d results", len(snap.Results))
		}
	}
}

// BenchmarkOpen10000Results includes the structural check of the file.
func BenchmarkOpen10000Results(b *testing.B) {
	path := filepath.Join(b.TempDir(), "boincd.db")
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	var batch Batch
	for i := 0; i < 10000; i++ {
		batch.PutResult(fullResult("http://p/", fmt.Sprintf("result_%05d", i)))
	}
	if err := s.Commit(&batch); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		s, err := Open(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
