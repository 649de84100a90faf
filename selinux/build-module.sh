#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the rdmagate SELinux modules from the sources in SRCDIR into
# OUTDIR, against the reference policy headers (Debian: selinux-policy-dev):
#   OUTDIR/rdmagate.pp          the policy module (rdmagate.te/.fc/.if)
#   OUTDIR/rdmagate_confine.cil its constraints (gen-confine-cil.py)
# The sources are copied into OUTDIR/module/ first: the reference policy's
# Makefile writes next to them, and the source tree stays untouched.
# Used by selinux/meson.build and by the selinux host test.
#
# usage: build-module.sh SRCDIR OUTDIR
# env:   SELINUX_DEVEL (default /usr/share/selinux/devel), PYTHON (python3)
set -eu

[ $# -eq 2 ] || { echo "usage: $0 SRCDIR OUTDIR" >&2; exit 2; }
src=$1
out=$2
devel=${SELINUX_DEVEL:-/usr/share/selinux/devel}
python=${PYTHON:-python3}

[ -f "$devel/Makefile" ] || {
	echo "build-module.sh: no $devel/Makefile (install selinux-policy-dev)" >&2
	exit 1
}
mkdir -p "$out"
work="$out/module"
rm -rf "$work"
mkdir "$work"
cp "$src/rdmagate.te" "$src/rdmagate.fc" "$src/rdmagate.if" "$work/"
# the reference Makefile's output on failure is what the caller needs
if ! make -s -C "$work" -f "$devel/Makefile" HEADERDIR="$devel/include" \
		rdmagate.pp > "$work/make.log" 2>&1; then
	cat "$work/make.log" >&2
	echo "build-module.sh: building rdmagate.pp failed" >&2
	exit 1
fi
cp "$work/rdmagate.pp" "$out/rdmagate.pp.tmp"
mv "$out/rdmagate.pp.tmp" "$out/rdmagate.pp"
"$python" "$src/gen-confine-cil.py" "$devel/include/support" > "$out/rdmagate_confine.cil.tmp"
mv "$out/rdmagate_confine.cil.tmp" "$out/rdmagate_confine.cil"
