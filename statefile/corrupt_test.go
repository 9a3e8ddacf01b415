package statefile

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/boincd/boincd/boinc"
	"go.etcd.io/bbolt"
)

// buildDB writes a store with n results (each value a few hundred bytes,
// so the results bucket spans many pages) and returns its bytes.
func buildDB(t testing.TB, path string, n int) []byte {
	t.Helper()
	s, err := Open(path, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	b.PutProject(fullProject("http://x/"))
	for i := 0; i < n; i++ {
		r := fullResult("http://x/", fmt.Sprintf("result_%05d", i))
		r.StderrOut = strings.Repeat("line of stderr output\n", 10)
		b.PutResult(r)
	}
	b.PutMeta("seq", 1)
	if err := s.Commit(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// leafPages lists the in-use leaf pages of the file and its page size.
func leafPages(t testing.TB, path string) (ids []int, pageSize int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, PreLoadFreelist: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		for id := 2; ; id++ {
			info, err := tx.Page(id)
			if err != nil {
				return err
			}
			if info == nil {
				return nil
			}
			if info.Type == "leaf" {
				ids = append(ids, id)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids, db.Info().PageSize
}

func flip(data []byte, off, n int) {
	for i := off; i < off+n && i < len(data); i++ {
		data[i] ^= 0xFF
	}
}

// openAndLoad is what the daemon does at start; an error from either step
// is the outcome.
func openAndLoad(path string) error {
	s, err := Open(path, Options{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = s.Load()
	return err
}

func TestCorruptFilesAreReportedAndLeftAlone(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	valid := buildDB(t, good, 400)
	leaves, psz := leafPages(t, good)
	if len(leaves) < 5 {
		t.Fatalf("test database too small: %d leaf pages", len(leaves))
	}
	mid := leaves[len(leaves)/2] * psz
	rng := rand.New(rand.NewPCG(1, 2))

	tests := []struct {
		name string
		make func() []byte
		want string // part of the detail
	}{
		{"random garbage", func() []byte {
			b := make([]byte, 64<<10)
			for i := range b {
				b[i] = byte(rng.UintN(256))
			}
			return b
		}, "not a bbolt database"},
		{"short garbage", func() []byte { return []byte("this is not a database\n") }, "not a bbolt database"},
		{"text file", func() []byte { return bytes.Repeat([]byte("<client_state>\n"), 1000) }, "not a bbolt database"},
		{"flipped page header in a middle leaf", func() []byte {
			b := bytes.Clone(valid)
			flip(b, mid, 4)
			return b
		}, "says it is page"},
		{"flipped element table in middle leaves", func() []byte {
			b := bytes.Clone(valid)
			for _, id := range leaves[len(leaves)/3 : len(leaves)/3+3] {
				flip(b, id*psz+pageHeaderSize+4, 3)
			}
			return b
		}, "outside its page"},
		{"flipped type flags of a middle page", func() []byte {
			b := bytes.Clone(valid)
			flip(b, mid+8, 1)
			return b
		}, "type flags"},
		{"value is not JSON", func() []byte {
			b := bytes.Clone(valid)
			i := bytes.Index(b[mid:], []byte(`{"project_url":"http://x/"`))
			if i < 0 {
				t.Fatal("no result value in the middle page")
			}
			b[mid+i] = 'X'
			return b
		}, "invalid character"},
		{"truncated to 60%", func() []byte { return bytes.Clone(valid[:len(valid)*6/10]) }, "truncated"},
		{"truncated inside the first page", func() []byte { return bytes.Clone(valid[:3000]) }, "too small"},
		{"truncated to 0 bytes", func() []byte { return nil }, "empty (0 bytes)"},
		{"truncated after the meta pages", func() []byte { return bytes.Clone(valid[:2*psz+100]) }, ""},
		{"both meta pages damaged", func() []byte {
			b := bytes.Clone(valid)
			flip(b, 40, 2)
			flip(b, psz+40, 2)
			return b
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boincd.db")
			if err := os.WriteFile(path, tc.make(), 0o600); err != nil {
				t.Fatal(err)
			}
			before := fileSum(t, path)
			err := openAndLoad(path)
			if err == nil {
				t.Fatal("damaged file opened and loaded without error")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			msg := err.Error()
			for _, want := range []string{"state file " + path + " is corrupt (", "left as is", tc.want} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if fileSum(t, path) != before {
				t.Fatal("damaged file was modified")
			}
			t.Log(msg)
			// A second attempt (the user retrying) behaves the same.
			if err2 := openAndLoad(path); err2 == nil || err2.Error() != msg {
				t.Fatalf("second attempt: %v", err2)
			}
		})
	}
}

func TestLoadChecksEveryValue(t *testing.T) {
	tests := []struct {
		name string
		fill func(tx *bbolt.Tx) error
		want string
	}{
		{"value under the wrong key", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("results")).Put([]byte("http://x/\x00a"), []byte(`{"project_url":"http://x/","name":"b"}`))
		}, `belongs under key "http://x/\x00b"`},
		{"wrong JSON type", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("projects")).Put([]byte("http://x/"), []byte(`{"master_url":42}`))
		}, "cannot unmarshal number"},
		{"meta not JSON", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte("seq"), []byte(`{`))
		}, "not valid JSON"},
		{"nested bucket", func(tx *bbolt.Tx) error {
			_, err := tx.Bucket([]byte("files")).CreateBucket([]byte("sub"))
			return err
		}, "nested bucket"},
		{"missing bucket", func(tx *bbolt.Tx) error {
			return tx.DeleteBucket([]byte("workunits"))
		}, `bucket "workunits" is missing`},
		{"schema version not a number", func(tx *bbolt.Tx) error {
			return tx.Bucket([]byte("meta")).Put([]byte(schemaVersionKey), []byte(`"one"`))
		}, "not a non-negative integer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "boincd.db")
			s := openT(t, path)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			writeRawBolt(t, path, tc.fill)
			before := fileSum(t, path)
			err := openAndLoad(path)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error = %v, want ErrCorrupt mentioning %q", err, tc.want)
			}
			if fileSum(t, path) != before {
				t.Fatal("file was modified")
			}
		})
	}
}

// TestRandomDamageNeverPanics flips random bytes anywhere in a valid file
// many times. Damage in free or unused space may go unnoticed (and then
// the file may be used), but Open and Load must never crash, and a file
// they reject must be left exactly as it was.
func TestRandomDamageNeverPanics(t *testing.T) {
	dir := t.TempDir()
	valid := buildDB(t, filepath.Join(dir, "good.db"), 200)
	rounds := 150
	if testing.Short() {
		rounds = 30
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var rejected int
	for i := 0; i < rounds; i++ {
		b := bytes.Clone(valid)
		for j := 0; j < 1+rng.IntN(8); j++ {
			off := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[off] ^= byte(1 + rng.IntN(255))
			case 1:
				flip(b, off, 1+rng.IntN(16))
			default:
				b[off] = 0
			}
		}
		path := filepath.Join(dir, fmt.Sprintf("damaged%d.db", i))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		before := fileSum(t, path)
		err := openAndLoad(path)
		if err != nil {
			rejected++
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("round %d: error does not wrap ErrCorrupt: %v", i, err)
			}
			if fileSum(t, path) != before {
				t.Fatalf("round %d: rejected file was modified (%v)", i, err)
			}
		}
		_ = os.Remove(path)
	}
	t.Logf("%d of %d damaged files rejected", rejected, rounds)
}

// A file the store accepts after damage still works for writing.
func TestCorruptValueDoesNotBlockOthers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "boincd.db")
	s := openT(t, path)
	var b Batch
	b.PutResult(&boinc.Result{ProjectURL: "http://x/", Name: "ok"})
	commitT(t, s, &b)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	writeRawBolt(t, path, func(tx *bbolt.Tx) error {
		return tx.Bucket([]byte("results")).Put([]byte("http://x/\x00bad"), []byte("not json"))
	})
	s2 := openT(t, path) // structure is fine, so Open succeeds
	if _, err := s2.Load(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `key "http://x/\x00bad"`) {
		t.Fatalf("Load = %v, want ErrCorrupt naming the key", err)
	}
}
