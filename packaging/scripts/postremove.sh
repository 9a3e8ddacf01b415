#!/bin/sh
# boincd package: after the files are removed (deb postrm, rpm %postun).
#
# A plain remove keeps the volunteer's data (/var/lib/boincd: attached
# projects' state, unreported results, the GUI RPC password) so that a
# reinstall picks up where it left off. Only a deb purge deletes it. The
# boincd user and group are kept even then, as Debian does for system
# users: files it owned elsewhere must not pass to a later user that
# reuses its uid.
#
# Arguments: deb "remove", "purge", "upgrade ...", "abort-*", ...;
# rpm "0" (erase) or "1" (upgrade).
set -e

case "$1" in
purge)
	rm -rf /var/lib/boincd
	;;
esac

case "$1" in
remove | purge | 0)
	if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	;;
esac
exit 0
