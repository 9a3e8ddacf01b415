// Package importer takes over the data directory of a C++ BOINC client
// (client_state.xml, account_*.xml, projects/, slots/) into a boincd data
// directory, so a volunteer can switch clients without losing work or
// credit.
//
// The BOINC directory is only read: project files are copied, never moved,
// so the old client can be started again if the volunteer goes back. The
// import refuses to run while a BOINC client holds the directory's lockfile
// and refuses to touch a project boincd already has state for.
//
// Records are built exactly as the daemon builds them from a scheduler
// reply (same field usage, phases and file layout), so the daemon cannot
// tell an imported task from one it fetched itself. Everything is staged
// first: files are copied and verified (size, MD5, code signature of app
// files) into temporary names, moved into place, and only then is the
// whole state committed in one statefile transaction. A failure before
// the commit removes what was copied; the config entry that keeps each
// project attached is renamed into place after the commit.
package importer
