package statefile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"go.etcd.io/bbolt"
)

// bucketID indexes the top-level buckets; the order is the order Load reads
// them in.
type bucketID uint8

const (
	bMeta bucketID = iota
	bProjects
	bApps
	bAppVersions
	bWorkunits
	bResults
	bFiles
	numBuckets
)

// bucketNames is constant data (Go has no constant arrays).
var bucketNames = [numBuckets]string{
	bMeta:        "meta",
	bProjects:    "projects",
	bApps:        "apps",
	bAppVersions: "app_versions",
	bWorkunits:   "workunits",
	bResults:     "results",
	bFiles:       "files",
}

func (b bucketID) String() string {
	if b < numBuckets {
		return bucketNames[b]
	}
	return fmt.Sprintf("bucket(%d)", int(b))
}

func (b bucketID) name() []byte { return []byte(bucketNames[b]) }

// projectChild reports whether the bucket's keys start with a project URL
// and a NUL, i.e. whether DeleteProjectAll reaches into it.
func (b bucketID) projectChild() bool { return b >= bApps && b < numBuckets }

// schemaVersionKey is the reserved meta key holding the schema version.
const schemaVersionKey = "schema_version"

// migration upgrades a file from version-1 to version. apply runs inside
// the same transaction as every other pending migration and the version
// bump, so it either fully happens or not at all.
type migration struct {
	version int
	name    string
	apply   func(tx *bbolt.Tx) error
}

// migrations is the ordered history of the schema; append only. Versions
// are 1, 2, 3, ... without gaps (checked by a test).
var migrations = []migration{
	{version: 1, name: "create buckets", apply: createBuckets},
}

func latestVersion(ms []migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

func createBuckets(tx *bbolt.Tx) error {
	for b := bucketID(0); b < numBuckets; b++ {
		if _, err := tx.CreateBucketIfNotExists(b.name()); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	return nil
}

// readVersion returns the schema version stored in tx: 0 for a file that
// has none (a bare bbolt file). A value that is not a non-negative JSON
// integer means the file is damaged.
func readVersion(tx *bbolt.Tx) (int, error) {
	mb := tx.Bucket(bMeta.name())
	if mb == nil {
		return 0, nil
	}
	v := mb.Get([]byte(schemaVersionKey))
	if v == nil {
		return 0, nil
	}
	n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("meta/%s is %q, not a non-negative integer", schemaVersionKey, truncateForMessage(v))
	}
	return n, nil
}

func writeVersion(tx *bbolt.Tx, v int) error {
	mb, err := tx.CreateBucketIfNotExists(bMeta.name())
	if err != nil {
		return fmt.Errorf("create bucket %s: %w", bMeta, err)
	}
	enc, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode schema version: %w", err)
	}
	if err := mb.Put([]byte(schemaVersionKey), enc); err != nil {
		return fmt.Errorf("write meta/%s: %w", schemaVersionKey, err)
	}
	return nil
}

// migrate applies every migration above from, in order, and records the
// new version, all in tx. It returns the names of what it applied.
func migrate(tx *bbolt.Tx, ms []migration, from int) ([]string, error) {
	var applied []string
	v := from
	for _, m := range ms {
		if m.version <= from {
			continue
		}
		if err := m.apply(tx); err != nil {
			return nil, fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
		}
		v = m.version
		applied = append(applied, fmt.Sprintf("%d (%s)", m.version, m.name))
	}
	if v != from {
		if err := writeVersion(tx, v); err != nil {
			return nil, err
		}
	}
	return applied, nil
}

// truncateForMessage keeps error messages about garbage readable.
func truncateForMessage(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
