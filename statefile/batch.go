package statefile

import (
	"fmt"
	"strings"

	"github.com/boincd/boincd/boinc"
)

// opKey names one entry of the store.
type opKey struct {
	bucket bucketID
	key    string
}

// op is the last thing a batch said about a key: a value to encode at
// Commit (a pointer to a boinc type, or a metaValue) or a deletion.
type op struct {
	val any
	del bool
}

// metaValue wraps PutMeta's argument so it cannot be confused with an
// entity pointer.
type metaValue struct{ v any }

// Batch collects the changes of one state transition. The zero value is
// ready to use. Within a batch the last Put or Delete of a key wins, and
// values are encoded only at Commit, so putting the same pointer after
// every small change is cheap. A Batch is not safe for concurrent use; it
// belongs to the state-owning goroutine.
type Batch struct {
	ops map[opKey]op
	// prefixDels holds project URLs whose entities are all deleted. They
	// are applied before ops, which by construction only hold changes made
	// after the DeleteProjectAll call.
	prefixDels map[string]struct{}
	// err is the first misuse (nil pointer, empty key); Commit reports it
	// rather than the Put methods panicking or silently dropping data.
	err error
}

func (b *Batch) set(k opKey, o op) {
	if b.ops == nil {
		b.ops = make(map[opKey]op)
	}
	b.ops[k] = o
}

func (b *Batch) fail(format string, args ...any) {
	if b.err == nil {
		b.err = fmt.Errorf(format, args...)
	}
}

// PutProject stores p under its master URL.
func (b *Batch) PutProject(p *boinc.Project) {
	if p == nil {
		b.fail("PutProject(nil)")
		return
	}
	if p.MasterURL == "" {
		b.fail("PutProject: project has an empty master URL")
		return
	}
	b.set(opKey{bProjects, p.MasterURL}, op{val: p})
}

// DeleteProject deletes the project record only; see DeleteProjectAll.
func (b *Batch) DeleteProject(url string) { b.set(opKey{bProjects, url}, op{del: true}) }

// PutApp stores a under a.Key().
func (b *Batch) PutApp(a *boinc.App) {
	if a == nil {
		b.fail("PutApp(nil)")
		return
	}
	b.set(opKey{bApps, a.Key()}, op{val: a})
}

// DeleteApp deletes the app with the given key.
func (b *Batch) DeleteApp(key string) { b.set(opKey{bApps, key}, op{del: true}) }

// PutAppVersion stores v under v.Key().
func (b *Batch) PutAppVersion(v *boinc.AppVersion) {
	if v == nil {
		b.fail("PutAppVersion(nil)")
		return
	}
	b.set(opKey{bAppVersions, v.Key()}, op{val: v})
}

// DeleteAppVersion deletes the app version with the given key.
func (b *Batch) DeleteAppVersion(key string) { b.set(opKey{bAppVersions, key}, op{del: true}) }

// PutWorkunit stores w under w.Key().
func (b *Batch) PutWorkunit(w *boinc.Workunit) {
	if w == nil {
		b.fail("PutWorkunit(nil)")
		return
	}
	b.set(opKey{bWorkunits, w.Key()}, op{val: w})
}

// DeleteWorkunit deletes the workunit with the given key.
func (b *Batch) DeleteWorkunit(key string) { b.set(opKey{bWorkunits, key}, op{del: true}) }

// PutResult stores r under r.Key().
func (b *Batch) PutResult(r *boinc.Result) {
	if r == nil {
		b.fail("PutResult(nil)")
		return
	}
	b.set(opKey{bResults, r.Key()}, op{val: r})
}

// DeleteResult deletes the result with the given key.
func (b *Batch) DeleteResult(key string) { b.set(opKey{bResults, key}, op{del: true}) }

// PutFile stores f under f.Key().
func (b *Batch) PutFile(f *boinc.FileInfo) {
	if f == nil {
		b.fail("PutFile(nil)")
		return
	}
	if f.AnonymousPlatform {
		// app_info.xml is read again at every start; its files are never
		// written to the state (CLIENT_STATE::write_state_file skips
		// anonymous_platform_file), so a stale record can never stand in
		// for the volunteer's file.
		return
	}
	b.set(opKey{bFiles, f.Key()}, op{val: f})
}

// DeleteFile deletes the file record with the given key.
func (b *Batch) DeleteFile(key string) { b.set(opKey{bFiles, key}, op{del: true}) }

// PutMeta stores v, JSON-encoded at Commit, under key in the meta bucket.
// The key schema_version is reserved.
func (b *Batch) PutMeta(key string, v any) {
	switch key {
	case "":
		b.fail("PutMeta: empty key")
		return
	case schemaVersionKey:
		b.fail("PutMeta: meta key %q is reserved for the store", key)
		return
	}
	b.set(opKey{bMeta, key}, op{val: metaValue{v}})
}

// DeleteMeta deletes a meta key.
func (b *Batch) DeleteMeta(key string) {
	if key == schemaVersionKey {
		b.fail("DeleteMeta: meta key %q is reserved for the store", key)
		return
	}
	b.set(opKey{bMeta, key}, op{del: true})
}

// DeleteProjectAll deletes the project and every app, app version,
// workunit, result and file whose key starts with url+"\x00". Changes to
// such keys made earlier in this batch are dropped; later ones are kept.
func (b *Batch) DeleteProjectAll(url string) {
	prefix := url + "\x00"
	for k := range b.ops {
		if k.bucket.projectChild() && strings.HasPrefix(k.key, prefix) {
			delete(b.ops, k)
		}
	}
	if b.prefixDels == nil {
		b.prefixDels = make(map[string]struct{})
	}
	b.prefixDels[url] = struct{}{}
	b.set(opKey{bProjects, url}, op{del: true})
}

// Len is the number of distinct changes in the batch (a DeleteProjectAll
// counts for the project record and once for its entities).
func (b *Batch) Len() int { return len(b.ops) + len(b.prefixDels) }

// Reset empties the batch, including a recorded misuse error.
func (b *Batch) Reset() {
	clear(b.ops)
	clear(b.prefixDels)
	b.err = nil
}

// prefixDeleted reports whether k lies under one of the batch's
// DeleteProjectAll prefixes.
func (b *Batch) prefixDeleted(k opKey) bool {
	if !k.bucket.projectChild() {
		return false
	}
	for url := range b.prefixDels {
		if strings.HasPrefix(k.key, url+"\x00") {
			return true
		}
	}
	return false
}
