//go:build !linux

package container

// RemoteFS: only Linux is checked (the C++ client's check is Linux-only
// too); elsewhere every directory counts as local.
func RemoteFS(string) (bool, string, error) { return false, "", nil }
