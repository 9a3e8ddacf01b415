// Package systemd holds boincd's systemd service unit (boincd.service),
// the default config the unit starts the daemon with (boincd.toml,
// installed as /etc/boincd/boincd.toml) and the tests that keep them
// honest: every required directive present with its value, the hardening
// that would break science apps absent, every directive documented in
// README.md, the ExecStart flags accepted by the real binary, the default
// config valid, and `systemd-analyze verify` clean where it is installed.
//
// It has no Go code of its own; the packages (packaging/nfpm.yaml) ship
// these files.
package systemd
