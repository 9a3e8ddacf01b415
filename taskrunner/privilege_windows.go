//go:build windows

package taskrunner

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
)

// errNoAppUserOnWindows: Windows apps run as the service's account (see
// winsvc/README.md); switching accounts would need a stored password.
var errNoAppUserOnWindows = errors.New("not supported on Windows: apps run as the service's account")

func LookupAccount(string) (*AppAccount, error) { return nil, errNoAppUserOnWindows }
func canSwitchUser() error                      { return errNoAppUserOnWindows }
func reachable(string, *AppAccount) error       { return errNoAppUserOnWindows }

// runAs has nothing to do: resolvePolicy never yields an account here.
func runAs(*exec.Cmd, *AppAccount) {}

// openNoFollow: Windows symbolic links need a privilege apps do not get
// from the runner, so a plain open is what there is.
func openNoFollow(path string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(path, flag, perm)
}

func fileLinks(fs.FileInfo) uint64              { return 1 }
func giveSlot(string, *AppAccount) error        { return errNoAppUserOnWindows }
func shareWithApp(string, *AppAccount) error    { return errNoAppUserOnWindows }
func shareDirWithApp(string, *AppAccount) error { return errNoAppUserOnWindows }
