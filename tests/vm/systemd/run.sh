#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm suite, from the host: builds (or reuses: the host suite's package test
# built it already for this tree) the release .deb, then boots
# the test VM with systemd as PID 1 and the package installed, and runs
# units.sh there.  Usage: run.sh RDMAGATE-VM [TIMEOUT]
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
src=$(cd "$here/../../.." && pwd -P)
command -v dpkg-buildpackage > /dev/null ||
	{ echo "1..0 # SKIP no dpkg-buildpackage (Debian package dpkg-dev)"; exit 0; }
[ -x /lib/systemd/systemd ] ||
	{ echo "1..0 # SKIP no /lib/systemd/systemd on this host"; exit 0; }
t0=$SECONDS
deb=$("$src/tests/build-deb.sh" "$src") || { echo "Bail out! the .deb did not build"; exit 1; }
echo "# .deb ready in $((SECONDS - t0)) s: $deb"
exec "$1" --systemd --deb "$deb" --no-cm -n 2 -t "${2:-420}" -b 240 -- \
	"$here/units.sh"
