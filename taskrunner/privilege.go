package taskrunner

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// AppPolicy says which account science apps run as. Apps are untrusted
// code from the projects' servers: they must never get more than they need.
type AppPolicy struct {
	// AppUser names the account apps run as (config app_user), Unix
	// only; its primary group and supplementary groups become the app's.
	// "" runs apps as the daemon's own account.
	AppUser string
	// AllowRoot lets apps run as root when the daemon itself is root and
	// AppUser is "" (config allow_root_apps).
	AllowRoot bool
}

// AppAccount is a resolved AppUser.
type AppAccount struct {
	Name     string
	UID, GID uint32
	Groups   []uint32
	Home     string
}

// ErrRootRefused: the daemon is root, no app_user is set and root apps
// are not allowed, so no app is started.
var ErrRootRefused = errors.New(`refusing to run science apps as root: set app_user = "boinc-apps" (an unprivileged account), or run boincd as an unprivileged user (the packaged systemd unit does), or allow_root_apps = true`)

// ErrAppUser: app_user is set but cannot be used (no such account, the
// daemon may not switch to it, or it cannot reach the data directory).
var ErrAppUser = errors.New("app_user cannot be used")

// SetAppPolicy resolves p and makes it the policy for the tasks started
// from now on (running tasks keep their account). It returns the reason
// no task can start under p (wrapping ErrRootRefused or ErrAppUser), or
// nil; Start returns that same error until a usable policy is set. The
// daemon calls it once at start and again when the config changes it.
//
// Until SetAppPolicy is called apps run as the runner's own account with
// no check: the policy is the daemon's decision, the runner enforces it.
func (r *Runner) SetAppPolicy(p AppPolicy) error {
	acct, err := resolvePolicy(p, r.dataDir, os.Geteuid())
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy, r.policySet, r.account, r.blocked = p, true, acct, err
	return err
}

// AppPolicy returns the policy last set and whether one was set.
func (r *Runner) AppPolicy() (AppPolicy, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.policy, r.policySet
}

// AsApp makes cmd run as the account apps run as under the current
// policy (app_user), with that account's HOME, USER and LOGNAME; it does
// nothing when apps run as the daemon's own account. A check that must
// hold for the apps, such as whether a container engine works for them
// (rootless podman keeps its storage per user), runs its commands so.
func (r *Runner) AsApp(cmd *exec.Cmd) {
	r.mu.Lock()
	acct := r.account
	r.mu.Unlock()
	if acct == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	runAs(cmd, acct)
}

// AppsBlocked returns why no task can start under the current policy, or
// nil when tasks may start.
func (r *Runner) AppsBlocked() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.blocked
}

// resolvePolicy turns p into the account apps run as (nil: the daemon's
// own) or the error that blocks them. euid is the daemon's effective uid
// (-1 on Windows, which has no root to refuse).
func resolvePolicy(p AppPolicy, dataDir string, euid int) (*AppAccount, error) {
	if p.AppUser == "" {
		if euid == 0 && !p.AllowRoot {
			return nil, ErrRootRefused
		}
		return nil, nil
	}
	acct, err := LookupAccount(p.AppUser)
	if err != nil {
		return nil, fmt.Errorf("%w: app_user %q: %w", ErrAppUser, p.AppUser, err)
	}
	if acct.UID == 0 {
		return nil, fmt.Errorf("%w: app_user %q is root (uid 0): name an unprivileged account", ErrAppUser, p.AppUser)
	}
	if err := canSwitchUser(); err != nil {
		return nil, fmt.Errorf("%w: app_user %q: %w: run boincd as root or grant it those capabilities (AmbientCapabilities= in its systemd unit), or remove app_user", ErrAppUser, p.AppUser, err)
	}
	for _, dir := range []string{filepath.Join(dataDir, "projects"), filepath.Join(dataDir, "slots")} {
		if err := reachable(dir, acct); err != nil {
			return nil, fmt.Errorf("%w: app_user %q cannot reach %s: %w", ErrAppUser, p.AppUser, dir, err)
		}
	}
	return acct, nil
}
