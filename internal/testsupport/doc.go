// Package testsupport is the test harness shared by the packages whose
// tests run the real daemon in-process (apptest, daemon): a searchable
// sink for the daemon's JSON log, a test project started and closed with
// the test, a background runner stopped at the end of the test, polling
// until a condition holds, and the accounts and directories a test needs
// to run apps as another user. It also runs a command's main for the
// commands' table tests (CheckCommand).
//
// Its helpers take a testing.TB and fail or skip the test themselves, and
// every server and goroutine one starts is ended by a cleanup of the
// test, in the manner of Nomad's exported testing.go helpers. It must not
// import the daemon: the daemon's own tests use it.
package testsupport
