// Package boinc holds the BOINC domain types shared by every other package:
// projects, apps, app versions, workunits, results, files, the host and the
// preferences, plus the result state machine and the wire enumerations.
//
// It is plain data with invariants and imports only the standard library, so
// the pure scheduling core and the emulator can use it without dragging in
// I/O. Times are time.Time values supplied by the caller; nothing here reads
// the clock.
package boinc
