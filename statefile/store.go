package statefile

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// DefaultLockTimeout is how long Open waits for another process to let go
// of the state file.
const DefaultLockTimeout = time.Second

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for bbolt's file lock; <= 0 means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Logger receives migration and lifecycle messages; nil discards them.
	Logger *slog.Logger
	// NoSync skips fsync on commit. Only for tests and benchmarks: a
	// power failure can then lose or tear committed state.
	NoSync bool
	// InCommit, when set, is called inside every Commit's write
	// transaction once all its changes are staged, right before bbolt
	// writes the pages, syncs and writes the meta page. It exists so that
	// crash tests can kill the process at that precise point (a kill then
	// lands while the commit's bytes go to disk); production leaves it nil.
	InCommit func()
}

// Stats counts what Commit did, for tests and diagnostics.
type Stats struct {
	// Commits is the number of bbolt write transactions committed.
	Commits int
	// SkippedPuts counts puts dropped because the stored value was
	// identical.
	SkippedPuts int
	// SkippedDeletes counts deletes of keys known to be absent.
	SkippedDeletes int
	// Puts and Deletes count the writes that reached the file.
	Puts, Deletes int
}

// Store is an open state file. Its methods are safe for concurrent use,
// though the daemon calls them from one goroutine.
type Store struct {
	path     string
	log      *slog.Logger
	inCommit func()

	mu     sync.Mutex
	db     *bbolt.DB
	closed bool
	// hashes mirrors what is on disk: key → hash of the stored bytes. It
	// is complete (every stored key present) once Load succeeded; before
	// that, absent keys are "unknown" rather than "not stored".
	hashes   map[opKey]uint64
	complete bool
	seed     maphash.Seed
	stats    Stats
}

// Open opens the store at path, creating the file (mode 0600) if it does not
// exist, and migrates it to the current schema. An existing file is checked
// read-only first and left untouched if it is damaged or too new. If another
// process holds the file for longer than opts.LockTimeout, the error wraps
// ErrLocked.
func Open(path string, opts Options) (*Store, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = DefaultLockTimeout
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("path", path)

	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		// A first start: the file is made whole elsewhere and only then
		// appears under its name (or another process got there first).
		if err := create(path, opts, log); err != nil {
			return nil, err
		}
		fi, err = os.Stat(path)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	case fi.IsDir():
		return nil, fmt.Errorf("open state file %s: is a directory", path)
	case fi.Size() == 0:
		// bbolt would take an empty file for a new one and the daemon
		// would start as a brand-new client, forgetting every task. Open
		// never leaves an empty file behind (create), so one was
		// truncated by something else: it is damage like any other.
		return nil, newCorrupt(path, nil, "it is empty (0 bytes), though boincd only ever puts a complete state file in place: something truncated it")
	}
	if err := preflight(path, opts.LockTimeout); err != nil {
		return nil, err
	}

	db, err := openBolt(path, &bbolt.Options{Timeout: opts.LockTimeout, NoSync: opts.NoSync})
	if err != nil {
		return nil, err
	}
	s := &Store{
		path:     path,
		log:      log,
		inCommit: opts.InCommit,
		db:       db,
		hashes:   make(map[opKey]uint64),
		seed:     maphash.MakeSeed(),
	}
	if err := s.upgrade(migrations); err != nil {
		_ = db.Close()
		return nil, err
	}
	removeStaleInits(path)
	return s, nil
}

// initInfix names the temporary files create builds new state files in.
const initInfix = ".init-"

// create makes a new, current-schema state file at path without ever
// showing a partial one under that name: bbolt initialises and the
// migrations fill a temporary file in the same directory, which is synced
// and then linked into place, and the directory is synced. A process
// killed (or a machine losing power) at any moment leaves either no state
// file, so the next start is a first start again, or a complete one; an
// empty or half-initialised file under the state file's name is therefore
// always damage. If another process creates the file meanwhile, its file
// wins and create returns nil.
func create(path string, opts Options, log *slog.Logger) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+initInfix+"*")
	if err != nil {
		return ioError("open", path, err)
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp) // after the link only the temporary name goes
	db, err := openBolt(tmp, &bbolt.Options{Timeout: opts.LockTimeout, NoSync: opts.NoSync})
	if err != nil {
		return fmt.Errorf("create state file %s: %w", path, err)
	}
	s := &Store{path: tmp, log: slog.New(slog.DiscardHandler), db: db}
	err = s.upgrade(migrations)
	if cerr := db.Close(); err == nil && cerr != nil {
		err = ioError("open", path, cerr)
	}
	if err != nil {
		return fmt.Errorf("create state file %s: %w", path, err)
	}
	// Link, unlike rename, never replaces a file another process put
	// there first. A file system without hard links gets a rename.
	if err := os.Link(tmp, path); err != nil {
		if _, serr := os.Stat(path); errors.Is(err, fs.ErrExist) || serr == nil {
			return nil
		}
		if err := os.Rename(tmp, path); err != nil {
			return ioError("open", path, err)
		}
	}
	syncDir(dir)
	log.Info("created a new state file")
	return nil
}

// syncDir makes a new directory entry durable where the system allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// removeStaleInits removes temporary files left by a create that was
// killed. Called with the state file's lock held; a create running in
// another process at that moment finds the state file and gives up anyway.
func removeStaleInits(path string) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return
	}
	prefix := filepath.Base(path) + initInfix
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			_ = os.Remove(filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
}

// openBolt opens the file with bbolt, turning its panics and its error
// values into this package's errors. If bbolt panics halfway, the file it
// opened is closed so the lock does not outlive the failed attempt.
func openBolt(path string, bo *bbolt.Options) (db *bbolt.DB, err error) {
	var opened *os.File
	bo.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		opened = f
		return f, err
	}
	err = protect(path, func() error {
		var err error
		db, err = bbolt.Open(path, 0o600, bo)
		return err
	})
	if err == nil {
		return db, nil
	}
	if errors.Is(err, ErrCorrupt) { // a recovered panic
		if opened != nil {
			_ = opened.Close()
		}
		return nil, err
	}
	return nil, classifyOpenError(path, err)
}

func classifyOpenError(path string, err error) error {
	var pathErr *fs.PathError
	var errno syscall.Errno
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return &lockedError{path: path}
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum):
		return newCorrupt(path, err, "not a bbolt database, or both of its meta pages are damaged: %v", err)
	case errors.Is(err, berrors.ErrVersionMismatch):
		return newCorrupt(path, err, "bbolt file format version is not 2: %v", err)
	case errors.As(err, &pathErr), errors.As(err, &errno):
		return ioError("open", path, err)
	default:
		// bbolt reports the remaining structural problems (e.g. "file
		// size too small") as plain errors.
		return newCorrupt(path, err, "not a usable bbolt database: %v", err)
	}
}

// preflight opens an existing file read-only (a shared lock, so no writer
// can change it meanwhile), walks its structure with bounds checks, and
// checks its schema version. Nothing is written.
func preflight(path string, timeout time.Duration) error {
	db, err := openBolt(path, &bbolt.Options{ReadOnly: true, Timeout: timeout})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := verifyFile(path); err != nil {
		return newCorrupt(path, err, "%v", err)
	}
	var version int
	err = protect(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			var err error
			version, err = readVersion(tx)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		return newCorrupt(path, err, "%v", err)
	}
	if highest := latestVersion(migrations); version > highest {
		return &tooNewError{path: path, have: version, highest: highest}
	}
	return nil
}

// upgrade brings the file to the latest version of ms in one transaction.
func (s *Store) upgrade(ms []migration) error {
	var from int
	err := protect(s.path, func() error {
		return s.db.View(func(tx *bbolt.Tx) error {
			var err error
			from, err = readVersion(tx)
			return err
		})
	})
	if err != nil {
		if errors.Is(err, ErrCorrupt) {
			return err
		}
		return newCorrupt(s.path, err, "%v", err)
	}
	highest := latestVersion(ms)
	if from > highest {
		return &tooNewError{path: s.path, have: from, highest: highest}
	}
	if from == highest {
		return nil
	}
	var applied []string
	err = protect(s.path, func() error {
		return s.db.Update(func(tx *bbolt.Tx) error {
			// Re-read inside the write transaction: it is the
			// authoritative view.
			v, err := readVersion(tx)
			if err != nil {
				return err
			}
			if v > highest {
				return &tooNewError{path: s.path, have: v, highest: highest}
			}
			from = v
			applied, err = migrate(tx, ms, v)
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("migrate state file %s from schema version %d to %d (the file is unchanged): %w", s.path, from, highest, err)
	}
	s.log.Info("state file migrated", "from", from, "to", highest, "migrations", applied)
	return nil
}

// protect runs fn, turning a panic or a memory fault inside bbolt (which
// trusts its file) into an ErrCorrupt error instead of a crash.
func protect(path string, fn func() error) (err error) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if r := recover(); r != nil {
			err = newCorrupt(path, nil, "the storage engine failed reading it: %v", r)
		}
	}()
	return fn()
}

// Path is the file the store was opened at.
func (s *Store) Path() string { return s.path }

// Close releases the file and its lock. Closing twice is harmless.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("close state file %s: %w", s.path, err)
	}
	return nil
}

// Stats returns commit counters since Open.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Store) hash(b []byte) uint64 { return maphash.Bytes(s.seed, b) }
