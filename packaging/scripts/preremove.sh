#!/bin/sh
# boincd package: before the files are removed (deb prerm, rpm %preun).
#
# On removal (not on upgrade) stops the service, which asks running tasks
# to quit at their next checkpoint, and disables it.
#
# Arguments: deb "remove", "upgrade NEW-VERSION", "deconfigure ...",
# "failed-upgrade ..."; rpm "0" (erase) or "1" (upgrade).
set -e

case "$1" in
remove | deconfigure | 0) ;;
*) exit 0 ;;
esac

if command -v systemctl >/dev/null 2>&1; then
	if [ -d /run/systemd/system ]; then
		systemctl stop boincd.service || true
	fi
	systemctl disable boincd.service >/dev/null 2>&1 || true
fi
exit 0
