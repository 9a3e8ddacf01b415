package statefile

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fixMetaChecksums rewrites the checksum of each meta page that still has
// the bbolt magic, so that mutations reach the page tree behind the meta
// pages instead of all stopping at their checksum.
func fixMetaChecksums(data []byte, pageSize int) {
	for _, off := range []int{0, pageSize} {
		m := off + pageHeaderSize
		if m+metaSize > len(data) || ne.Uint32(data[m:]) != boltMagic {
			continue
		}
		h := fnv.New64a()
		h.Write(data[m : m+metaSumLen])
		ne.PutUint64(data[m+metaSumLen:], h.Sum64())
	}
}

// FuzzOpenDamaged damages a real state file (a base store with a project
// and enough results for branch pages) by the patches in the input, fixes
// the meta checksums, and opens and loads it. Whatever the damage, Open
// and Load return a store or an error; bbolt, which trusts its file, must
// never be reached with a page that would make it fault or loop. The
// input is a list of patches: 3 bytes of offset (modulo the file size),
// one length byte (low 4 bits), then that many bytes.
func FuzzOpenDamaged(f *testing.F) {
	base := buildDB(f, filepath.Join(f.TempDir(), "base.db"), 30)
	psz := os.Getpagesize()
	patch := func(off, n int, b ...byte) []byte {
		return append([]byte{byte(off), byte(off >> 8), byte(off >> 16), byte(n)}, b...)
	}
	u64 := func(v uint64) []byte { b := make([]byte, 8); ne.PutUint64(b, v); return b }
	f.Add([]byte{}, uint32(0))
	f.Add(patch(pageHeaderSize+16, 8, u64(1)...), uint32(0))                             // root is a meta page
	f.Add(patch(pageHeaderSize+16, 8, u64(1<<40)...), uint32(0))                         // root far outside
	f.Add(patch(psz+pageHeaderSize+40, 8, u64(2)...), uint32(0))                         // high-water mark too low
	f.Add(append(patch(3*psz+10, 2, 0xff, 0xff), patch(3*psz+8, 2, 1, 0)...), uint32(0)) // a page claiming 65535 elements
	f.Add(patch(4*psz+12, 4, 0xff, 0xff, 0xff, 0x7f), uint32(0))                         // huge overflow
	f.Add([]byte{}, uint32(2*psz+7))                                                     // truncated
	path := filepath.Join(f.TempDir(), "state.db")
	f.Fuzz(func(t *testing.T, patches []byte, truncate uint32) {
		data := append([]byte(nil), base...)
		for len(patches) >= 4 {
			off := (int(patches[0]) | int(patches[1])<<8 | int(patches[2])<<16) % len(data)
			n := min(int(patches[3]&15), len(patches)-4)
			copy(data[off:], patches[4:4+n])
			patches = patches[4+n:]
		}
		fixMetaChecksums(data, psz)
		if truncate > 0 && int(truncate) < len(data) {
			data = data[:truncate]
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		hang := time.AfterFunc(20*time.Second, func() { panic(fmt.Sprintf("hang: Open/Load still running after 20s (%d patches)", len(patches))) })
		defer hang.Stop()
		s, err := Open(path, Options{NoSync: true, LockTimeout: time.Second})
		if err != nil {
			if errors.Is(err, ErrLocked) {
				t.Fatalf("damaged file reported as locked: %v", err)
			}
			return
		}
		if _, err := s.Load(); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Logf("load: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
