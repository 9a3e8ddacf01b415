//go:build linux

package container

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// remoteMagic are the statfs f_type values of network filesystems
// (linux/magic.h and the filesystems' own headers).
var remoteMagic = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xff534d42: "cifs",
	0xfe534d42: "smb2",
	0x5346414f: "afs",
	0x6b414653: "afs", // kAFS
	0x73757245: "coda",
	0x564c:     "ncp",
	0x00c36400: "ceph",
	0x01021997: "9p",
	0x0bd00bd0: "lustre",
	0x47504653: "gpfs",
	0x013111a8: "ibrix",
	0x19830326: "fhgfs",
}

// RemoteFS reports whether dir is on a network filesystem, by the
// filesystem type statfs gives.
func RemoteFS(dir string) (bool, string, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, "", fmt.Errorf("statfs %s: %w", dir, err)
	}
	name, ok := remoteMagic[int64(st.Type)&0xffffffff]
	return ok, name, nil
}
