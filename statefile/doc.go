// Package statefile is boincd's crash-safe client state store: one bbolt
// file holding every project, app, app version, workunit, result and file
// the client knows about.
//
// The daemon's state-owning goroutine loads the whole store once at start
// (Store.Load) and afterwards, for every state change, commits exactly the
// entities that changed in one bbolt transaction (Store.Commit) before it
// acts on the change. bbolt makes each transaction atomic and durable
// (fsync), so a crash at any moment leaves either the state before or the
// state after a commit, never a mix. Writes whose encoding did not change
// are skipped, and a batch that ends up empty opens no transaction at all,
// so committing after every event costs nothing when nothing persistent
// moved.
//
// # Schema (version 1)
//
// Top-level buckets, keys and values:
//
//	meta          key: any name          value: JSON (whatever PutMeta encoded)
//	              key "schema_version"   value: JSON integer, the schema version
//	projects      key: MasterURL         value: JSON boinc.Project
//	apps          key: URL\x00name       value: JSON boinc.App
//	app_versions  key: URL\x00app\x00platform\x00plan_class\x00version
//	                                     value: JSON boinc.AppVersion
//	workunits     key: URL\x00name       value: JSON boinc.Workunit
//	results       key: URL\x00name       value: JSON boinc.Result
//	files         key: URL\x00name       value: JSON boinc.FileInfo
//
// Keys are the Key methods of the boinc types (a project's key is its
// canonical master URL). Every entity key of a project starts with its
// master URL followed by a NUL byte; a URL never contains NUL, so the
// prefix URL+"\x00" selects exactly one project's entities even when one
// project URL is a prefix of another (http://a/ and http://a/b/).
//
// # Versions and migrations
//
// meta/schema_version says which layout a file has; a file without it is
// version 0 (a bare bbolt file, as bbolt creates it). On Open, a file older
// than this binary is brought up to date by the ordered migrations list
// inside one transaction, so an interrupted migration leaves the old file.
// A file newer than this binary is refused and not modified: an older
// boincd cannot know what a newer layout means.
//
// # Damaged files
//
// A state file is never overwritten, truncated or "repaired" when it does
// not check out. Before bbolt may write to an existing file, Open opens it
// read-only and walks its page tree itself with bounds checks (bbolt trusts
// its file and can crash the process on a damaged one); Load checks that
// every value decodes and belongs under its key. Failures are reported as
// errors wrapping ErrCorrupt that name the file and tell the user it was
// left as is.
package statefile
