//go:build !linux

package metrics

// collectProcess adds nothing: the process series are read from /proc and
// exported on Linux only.
func collectProcess(*batch) {}
