//go:build !unix

package testsupport

// UID is the process's owner; there is no /proc here.
func (p Proc) UID() (int, bool) { return 0, false }
