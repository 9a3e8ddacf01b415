package statefile

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/boincd/boincd/boinc"
	"go.etcd.io/bbolt"
)

// write is one planned change to the file.
type write struct {
	k    opKey
	data []byte // nil for a delete
	h    uint64
}

// Commit writes the batch in one bbolt transaction, skipping puts whose
// encoding equals what is stored and deletes of keys known to be absent. If
// nothing is left, no transaction is opened (no fsync). After success the
// batch is reset; after an error neither the file nor the batch has changed,
// so the caller may retry or Reset. Values that JSON cannot encode (a NaN or
// infinite float) make Commit fail with an error naming the key.
func (s *Store) Commit(b *Batch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("commit to state file %s: store is closed", s.path)
	}
	if b.err != nil {
		return fmt.Errorf("commit to state file %s: bad batch: %w", s.path, b.err)
	}
	if b.Len() == 0 {
		return nil
	}

	prefixes := s.livePrefixes(b)
	writes := make([]write, 0, len(b.ops))
	var skippedPuts, skippedDeletes, puts, deletes int
	for k, o := range b.ops {
		underDeleted := b.prefixDeleted(k)
		if o.del {
			_, stored := s.hashes[k]
			if underDeleted || (s.complete && !stored) {
				skippedDeletes++
				continue
			}
			deletes++
			writes = append(writes, write{k: k})
			continue
		}
		data, err := encode(k, o.val)
		if err != nil {
			return fmt.Errorf("commit to state file %s: %w", s.path, err)
		}
		h := s.hash(data)
		if old, ok := s.hashes[k]; ok && old == h && !underDeleted {
			skippedPuts++
			continue
		}
		puts++
		writes = append(writes, write{k: k, data: data, h: h})
	}

	if len(writes) == 0 && len(prefixes) == 0 {
		s.stats.SkippedPuts += skippedPuts
		s.stats.SkippedDeletes += skippedDeletes
		b.Reset()
		return nil
	}
	// Key order keeps bbolt's page splits cheap and the file layout
	// independent of map iteration order.
	slices.SortFunc(writes, func(x, y write) int {
		return cmp.Or(cmp.Compare(x.k.bucket, y.k.bucket), strings.Compare(x.k.key, y.k.key))
	})

	var removed []opKey
	err := protect(s.path, func() error {
		return s.db.Update(func(tx *bbolt.Tx) error {
			removed = removed[:0]
			for _, url := range prefixes {
				r, err := deletePrefix(tx, url+"\x00")
				if err != nil {
					return err
				}
				removed = append(removed, r...)
			}
			for _, w := range writes {
				bk := tx.Bucket(w.k.bucket.name())
				if bk == nil {
					return fmt.Errorf("bucket %q is missing", w.k.bucket)
				}
				var err error
				if w.data == nil {
					err = bk.Delete([]byte(w.k.key))
				} else {
					err = bk.Put([]byte(w.k.key), w.data)
				}
				if err != nil {
					return fmt.Errorf("%s key %q: %w", w.k.bucket, w.k.key, err)
				}
			}
			if s.inCommit != nil {
				s.inCommit()
			}
			return nil
		})
	})
	if err != nil {
		return commitError(s.path, err)
	}

	for _, k := range removed {
		delete(s.hashes, k)
	}
	for _, w := range writes {
		if w.data == nil {
			delete(s.hashes, w.k)
		} else {
			s.hashes[w.k] = w.h
		}
	}
	s.stats.Commits++
	s.stats.SkippedPuts += skippedPuts
	s.stats.SkippedDeletes += skippedDeletes
	s.stats.Puts += puts
	s.stats.Deletes += deletes
	b.Reset()
	return nil
}

// livePrefixes returns the batch's DeleteProjectAll URLs that may match
// stored keys; when the key set is fully known, URLs with nothing stored
// are dropped so they do not force a transaction.
func (s *Store) livePrefixes(b *Batch) []string {
	var out []string
	for url := range b.prefixDels {
		if !s.complete {
			out = append(out, url)
			continue
		}
		prefix := url + "\x00"
		for k := range s.hashes {
			if k.bucket.projectChild() && strings.HasPrefix(k.key, prefix) {
				out = append(out, url)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

// deletePrefix removes every key starting with prefix from the project
// child buckets and returns what it removed. Keys are collected before
// deleting because deleting under a bbolt cursor skips entries.
func deletePrefix(tx *bbolt.Tx, prefix string) ([]opKey, error) {
	var removed []opKey
	p := []byte(prefix)
	for b := bucketID(0); b < numBuckets; b++ {
		if !b.projectChild() {
			continue
		}
		bk := tx.Bucket(b.name())
		if bk == nil {
			return nil, fmt.Errorf("bucket %q is missing", b)
		}
		var keys []string
		c := bk.Cursor()
		for k, _ := c.Seek(p); k != nil && strings.HasPrefix(string(k), prefix); k, _ = c.Next() {
			keys = append(keys, string(k))
		}
		for _, k := range keys {
			if err := bk.Delete([]byte(k)); err != nil {
				return nil, fmt.Errorf("%s key %q: %w", b, k, err)
			}
			removed = append(removed, opKey{b, k})
		}
	}
	return removed, nil
}

// encode turns a batched value into its stored bytes. It refuses an entity
// whose key changed since it was put: that would store it under a key its
// content contradicts, which Load then reports as corruption.
func encode(k opKey, val any) ([]byte, error) {
	var key string
	switch v := val.(type) {
	case metaValue:
		data, err := json.Marshal(v.v)
		if err != nil {
			return nil, fmt.Errorf("encode meta key %q: %w", k.key, err)
		}
		return data, nil
	case *boinc.Project:
		key = v.MasterURL
	case *boinc.App:
		key = v.Key()
	case *boinc.AppVersion:
		key = v.Key()
	case *boinc.Workunit:
		key = v.Key()
	case *boinc.Result:
		key = v.Key()
	case *boinc.FileInfo:
		key = v.Key()
	default:
		return nil, fmt.Errorf("encode %s key %q: unexpected value type %T", k.bucket, k.key, val)
	}
	if key != k.key {
		return nil, fmt.Errorf("encode %s key %q: the entity's key changed to %q after it was put", k.bucket, k.key, key)
	}
	data, err := json.Marshal(val)
	if err != nil {
		return nil, fmt.Errorf("encode %s key %q: %w", k.bucket, k.key, err)
	}
	return data, nil
}
