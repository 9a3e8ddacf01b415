package statefile

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/boincd/boincd/boinc"
	"go.etcd.io/bbolt"
)

// Snapshot is the whole stored client state, in key order per kind.
type Snapshot struct {
	Projects    []*boinc.Project
	Apps        []*boinc.App
	AppVersions []*boinc.AppVersion
	Workunits   []*boinc.Workunit
	Results     []*boinc.Result
	Files       []*boinc.FileInfo
	// Meta holds the raw JSON values of the meta bucket, except the
	// schema version.
	Meta map[string][]byte
}

// Load reads every entity. Each value must decode and sit under the key its
// content implies; anything else is reported as corruption (wrapping
// ErrCorrupt) and nothing is changed. A successful Load also primes the
// unchanged-write detection of Commit.
func (s *Store) Load() (*Snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("load state file %s: store is closed", s.path)
	}
	snap := &Snapshot{Meta: make(map[string][]byte)}
	hashes := make(map[opKey]uint64, len(s.hashes))
	err := protect(s.path, func() error {
		return s.db.View(func(tx *bbolt.Tx) error {
			for b := bucketID(0); b < numBuckets; b++ {
				if err := s.loadBucket(tx, b, snap, hashes); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		var ce *corruptError
		if errors.As(err, &ce) {
			return nil, err
		}
		return nil, fmt.Errorf("load state file %s: %w", s.path, err)
	}
	s.hashes = hashes
	s.complete = true
	return snap, nil
}

func (s *Store) loadBucket(tx *bbolt.Tx, b bucketID, snap *Snapshot, hashes map[opKey]uint64) error {
	bk := tx.Bucket(b.name())
	if bk == nil {
		return newCorrupt(s.path, nil, "bucket %q is missing", b)
	}
	return bk.ForEach(func(k, v []byte) error {
		key := string(k)
		if v == nil {
			return newCorrupt(s.path, nil, "bucket %q holds a nested bucket %q where values belong", b, key)
		}
		if err := decodeInto(b, key, v, snap); err != nil {
			return newCorrupt(s.path, err, "bucket %q, key %q: %v", b, key, err)
		}
		if b != bMeta || key != schemaVersionKey {
			hashes[opKey{b, key}] = s.hash(v)
		}
		return nil
	})
}

// decodeInto decodes one stored value into snap, checking that its
// identifying fields reproduce the key it is stored under. Values are
// copied out of bbolt's memory map.
func decodeInto(b bucketID, key string, v []byte, snap *Snapshot) error {
	var gotKey string
	switch b {
	case bMeta:
		if !json.Valid(v) {
			return fmt.Errorf("value is not valid JSON: %q", truncateForMessage(v))
		}
		if key != schemaVersionKey {
			snap.Meta[key] = append([]byte(nil), v...)
		}
		return nil
	case bProjects:
		p := new(boinc.Project)
		if err := json.Unmarshal(v, p); err != nil {
			return err
		}
		gotKey = p.MasterURL
		snap.Projects = append(snap.Projects, p)
	case bApps:
		a := new(boinc.App)
		if err := json.Unmarshal(v, a); err != nil {
			return err
		}
		gotKey = a.Key()
		snap.Apps = append(snap.Apps, a)
	case bAppVersions:
		av := new(boinc.AppVersion)
		if err := json.Unmarshal(v, av); err != nil {
			return err
		}
		gotKey = av.Key()
		snap.AppVersions = append(snap.AppVersions, av)
	case bWorkunits:
		w := new(boinc.Workunit)
		if err := json.Unmarshal(v, w); err != nil {
			return err
		}
		gotKey = w.Key()
		snap.Workunits = append(snap.Workunits, w)
	case bResults:
		r := new(boinc.Result)
		if err := json.Unmarshal(v, r); err != nil {
			return err
		}
		gotKey = r.Key()
		snap.Results = append(snap.Results, r)
	case bFiles:
		f := new(boinc.FileInfo)
		if err := json.Unmarshal(v, f); err != nil {
			return err
		}
		gotKey = f.Key()
		snap.Files = append(snap.Files, f)
	default:
		return fmt.Errorf("unknown bucket %s", b)
	}
	if gotKey != key {
		return fmt.Errorf("value belongs under key %q", gotKey)
	}
	return nil
}
