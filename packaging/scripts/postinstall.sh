#!/bin/sh
# boincd package: after the files are unpacked (deb postinst, rpm %post).
#
# Creates the boincd system user, its data directory and the config
# directory's group, then enables (but does not start) the service: the
# shipped config attaches no project, so there is nothing to run until the
# volunteer adds one (see /etc/boincd/boincd.toml).
#
# Arguments: deb "configure OLD-VERSION" (OLD-VERSION empty on a first
# install) or "abort-*"; rpm "1" (install) or "2" (upgrade).
set -e

user=boincd
home=/var/lib/boincd
confdir=/etc/boincd

case "$1" in
configure) first=true; [ -n "$2" ] && first=false ;;
1) first=true ;;
2) first=false ;;
*) exit 0 ;; # deb abort-upgrade, abort-remove, abort-deconfigure: nothing was undone
esac

nologin=/usr/sbin/nologin
[ -x "$nologin" ] || nologin=/sbin/nologin
[ -x "$nologin" ] || nologin=/bin/false

# systemd's StateDirectory= would create the home too, but the service
# can also be started without systemd (containers), and adduser warns
# about a missing home.
mkdir -p "$home"

if ! getent passwd "$user" >/dev/null; then
	if [ -e /etc/debian_version ] && command -v adduser >/dev/null 2>&1; then
		# Debian's adduser; elsewhere "adduser" may be useradd under another name.
		adduser --system --group --home "$home" --no-create-home \
			--shell "$nologin" "$user" >/dev/null
	else
		getent group "$user" >/dev/null || groupadd --system "$user"
		useradd --system --gid "$user" --home-dir "$home" --no-create-home \
			--shell "$nologin" --comment "boincd BOINC client" "$user"
	fi
elif ! getent group "$user" >/dev/null; then
	groupadd --system "$user"
fi

# GPU device nodes (/dev/dri/*, and /dev/nvidia* on some distributions)
# belong to these groups; science apps run as boincd.
for g in video render; do
	if getent group "$g" >/dev/null; then
		usermod -a -G "$g" "$user"
	fi
done

chown "$user:$user" "$home"
chmod 0750 "$home"

# The config may hold account keys: only root and the service may read it.
if [ -d "$confdir" ]; then
	chown root:"$user" "$confdir"
	chmod 0750 "$confdir"
fi

if command -v systemctl >/dev/null 2>&1; then
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	if $first; then
		# Works offline too (image builds): it only creates the wants link.
		systemctl enable boincd.service >/dev/null 2>&1 || true
	elif [ -d /run/systemd/system ]; then
		# Upgrade: a running daemon picks up the new binary; a stopped one stays stopped.
		systemctl try-restart boincd.service || true
	fi
fi
exit 0
