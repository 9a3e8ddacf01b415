//go:build unix

package testsupport

import "syscall"

// UID is the process's owner (its real uid), false once it is gone.
func (p Proc) UID() (int, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(p.file(""), &st); err != nil {
		return 0, false
	}
	return int(st.Uid), true
}
