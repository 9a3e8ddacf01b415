// Package e2e holds the end-to-end tests of boincd: the daemon runs as a
// separate process (the re-executed test binary) against in-process BOINC
// project servers (internal/testproject) on 127.0.0.1, with real HTTP, a
// real bbolt state file, real science-app processes and real signals,
// including SIGKILL at chosen points of a task's life.
//
// The package has no code outside its tests; this file only documents it.
package e2e
