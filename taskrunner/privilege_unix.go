//go:build unix

package taskrunner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lookupAppUser resolves a user name (or numeric uid) from the system's
// account database.
func LookupAccount(name string) (*AppAccount, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if !errors.As(err, &unknown) {
			return nil, fmt.Errorf("look up account: %w", err)
		}
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("no such account (create it, e.g. useradd --system --no-create-home %s)", name)
		}
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account has a non-numeric uid %q", u.Uid)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("account has a non-numeric gid %q", u.Gid)
	}
	acct := &AppAccount{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	ids, err := u.GroupIds()
	if err != nil {
		// Without the group list the app gets its primary group only:
		// less, never more.
		ids = nil
	}
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil && uint32(g) != acct.GID {
			acct.Groups = append(acct.Groups, uint32(g))
		}
	}
	acct.Groups = append([]uint32{acct.GID}, acct.Groups...)
	return acct, nil
}

// Capabilities the daemon needs to run apps as another account: switch
// to it, hand it its slot, read and move what it wrote, and signal it.
// The bit numbers are Linux's (linux/capability.h), the only system
// whose capabilities are read; they are spelled out because x/sys/unix
// defines them for Linux builds only.
var neededCaps = []struct {
	bit  uint
	name string
}{
	{7, "CAP_SETUID"},
	{6, "CAP_SETGID"},
	{0, "CAP_CHOWN"},
	{1, "CAP_DAC_OVERRIDE"},
	{5, "CAP_KILL"},
}

// canSwitchUser checks that the daemon may run processes as another
// user: on Linux by its effective capabilities (root without them, as
// under a systemd CapabilityBoundingSet, cannot), elsewhere by being root.
func canSwitchUser() error {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		if os.Geteuid() == 0 {
			return nil
		}
		return fmt.Errorf("boincd runs as uid %d, not root", os.Geteuid())
	}
	var eff uint64
	found := false
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			eff, err = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			found = err == nil
		}
	}
	if !found {
		return errors.New("cannot read the daemon's capabilities from /proc/self/status")
	}
	var missing []string
	for _, c := range neededCaps {
		if eff&(1<<c.bit) == 0 {
			missing = append(missing, c.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("boincd (uid %d) lacks %s", os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// reachable checks that acct may search dir and every directory above
// it, as the app must to open ../../projects/... from its slot.
func reachable(dir string, acct *AppAccount) error {
	dir = filepath.Clean(dir)
	for {
		st, err := os.Stat(dir)
		if err != nil {
			return err
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if ok && !mayAccess(acct, uint32(sys.Uid), uint32(sys.Gid), st.Mode().Perm(), 0o1) {
			return fmt.Errorf("%s (mode %04o, owner %d:%d) is not searchable by it: chmod o+x %s", dir, st.Mode().Perm(), sys.Uid, sys.Gid, dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return nil
		}
		dir = parent
	}
}

// mayAccess applies the owner/group/other permission bits (want is the
// "other" bit: 4 read, 1 search/execute) for acct.
func mayAccess(acct *AppAccount, uid, gid uint32, perm fs.FileMode, want fs.FileMode) bool {
	switch {
	case uid == acct.UID:
		return perm&(want<<6) != 0
	case acct.inGroup(gid):
		return perm&(want<<3) != 0
	}
	return perm&want != 0
}

func (a *AppAccount) inGroup(gid uint32) bool {
	for _, g := range a.Groups {
		if g == gid {
			return true
		}
	}
	return false
}

// runAs makes cmd start as acct: credentials set in the child between
// fork and exec, and the account's own HOME, USER and LOGNAME.
func runAs(cmd *exec.Cmd, acct *AppAccount) {
	if acct == nil {
		return
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: acct.UID, Gid: acct.GID, Groups: acct.Groups}
	home := acct.Home
	if home == "" {
		home = "/"
	}
	cmd.Env = setEnv(cmd.Env, "HOME", home)
	cmd.Env = setEnv(cmd.Env, "USER", acct.Name)
	cmd.Env = setEnv(cmd.Env, "LOGNAME", acct.Name)
}

// openNoFollow opens path without following a final symbolic link, and
// without blocking on a FIFO planted in its place.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, perm)
}

// fileLinks is the hard-link count of a regular file.
func fileLinks(st fs.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

// giveSlot hands the slot directory and what the runner put in it to
// acct, and makes it private to that account. It walks through directory
// descriptors (openat with O_NOFOLLOW), so a symbolic link planted by an
// app never leads the walk out of the slot, and it leaves alone files
// with more than one hard link, which could be files from elsewhere.
func giveSlot(dir string, acct *AppAccount) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("slot %s: %w", dir, err)
	}
	if err := unix.Fchmod(fd, 0o700); err != nil {
		unix.Close(fd)
		return fmt.Errorf("slot %s: chmod: %w", dir, err)
	}
	return chownTree(fd, dir, int(acct.UID), int(acct.GID), 0)
}

// chownTree chowns the open directory fd and what is below it, then
// closes fd.
func chownTree(fd int, path string, uid, gid, depth int) error {
	dir := os.NewFile(uintptr(fd), path)
	defer dir.Close()
	if _, err := chownFD(fd, uid, gid); err != nil {
		return fmt.Errorf("chown %s: %w", path, err)
	}
	if depth > 32 {
		return fmt.Errorf("chown %s: directories nested too deep", path)
	}
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	for _, name := range names {
		p := filepath.Join(path, name)
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			// A symbolic link (ELOOP), a socket: the app made it, it owns it.
			continue
		}
		isDir, err := chownFD(cfd, uid, gid)
		if err != nil {
			unix.Close(cfd)
			return fmt.Errorf("chown %s: %w", p, err)
		}
		if !isDir {
			unix.Close(cfd)
			continue
		}
		if err := chownTree(cfd, p, uid, gid, depth+1); err != nil {
			return err
		}
	}
	return nil
}

func chownFD(fd, uid, gid int) (isDir bool, err error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, err
	}
	isDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	if !isDir && st.Nlink > 1 {
		return false, nil
	}
	if int(st.Uid) == uid && int(st.Gid) == gid {
		return isDir, nil
	}
	return isDir, unix.Fchown(fd, uid, gid)
}

// shareWithApp lets acct read a project file its slot links to (apps and
// inputs are public) and search the directories up to the data
// directory, whatever umask the daemon created them under. Executables
// get o+x too.
func shareWithApp(path string, acct *AppAccount) error {
	st, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", path)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || mayAccess(acct, uint32(sys.Uid), uint32(sys.Gid), st.Mode().Perm(), 0o4) &&
		(st.Mode().Perm()&0o100 == 0 || mayAccess(acct, uint32(sys.Uid), uint32(sys.Gid), st.Mode().Perm(), 0o1)) {
		return nil
	}
	mode := st.Mode().Perm() | 0o044
	if mode&0o100 != 0 {
		mode |= 0o011
	}
	return os.Chmod(path, mode)
}

// shareDirWithApp gives a project directory o+rx when acct cannot search it.
func shareDirWithApp(dir string, acct *AppAccount) error {
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || mayAccess(acct, uint32(sys.Uid), uint32(sys.Gid), st.Mode().Perm(), 0o1) {
		return nil
	}
	return os.Chmod(dir, st.Mode().Perm()|0o055)
}
