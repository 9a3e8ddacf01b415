// Package deb holds the tests of boincd's Linux packages, built by nfpm
// from packaging/nfpm.yaml: the .deb and .rpm are built from a fresh
// boincd binary and inspected (control fields, conffiles, maintainer
// scripts, file list and modes, payload equal to the sources), and, where
// it is safe (root, dpkg, CI=true or BOINCD_TEST_DEB_INSTALL=1), the .deb
// is installed for real, the service started the way its unit says,
// stopped with SIGTERM and the package purged.
//
// The install harness exists because CI containers do not run systemd:
// it stands in for systemd by reading ExecStart=, User= and
// WorkingDirectory= from the installed unit and providing NOTIFY_SOCKET.
// See packaging/README.md.
package deb
