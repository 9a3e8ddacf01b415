// Package boincapi is a small pure-Go implementation of the application
// side of the BOINC app API (api/boinc_api.cpp): it reads init_data.xml,
// maps the slot's boinc_mmap_file, answers the client's control messages
// (suspend, resume, quit, abort), watches that the client is alive, reports
// progress and checkpoints through app_status, and writes the finish and
// temporary-exit files the client uses to classify an exit.
//
// The shared-memory channel layout (shmem.go) and the message helpers are
// also used by the client side (package taskrunner), so both ends agree on
// one definition; this package must therefore never import the client.
//
// Unlike the C++ API, which suspends the worker from a SIGALRM handler, a Go
// worker is suspended cooperatively: it blocks at its next Wait or
// TimeToCheckpoint call. Apps call Wait often (every few milliseconds of
// work) so a suspend takes effect promptly.
package boincapi
