#!/bin/sh
# SPDX-License-Identifier: MIT
# Builds the binary SELinux policy the test VM loads with --selinux: Debian's
# reference policy (selinux-policy-default: base and every module it ships)
# plus the rdmagate modules built from SRCDIR (selinux/) and the test's
# rdmagate_test_vmm (svirt_t started by the test's shell), installed into a
# SCRATCH store under OUT with `semodule -n -p OUT` (expand-check on: every
# neverallow is checked).  The machine's own store is never touched.
# Result: OUT/etc/selinux/default/ (policy/policy.NN, contexts/, seusers),
# what an operator's /etc/selinux/default holds after `semodule -i`.
#
# usage: build-policy.sh SRCDIR OUT
set -eu

[ $# -eq 2 ] || { echo "usage: $0 SRCDIR OUT" >&2; exit 2; }
src=$1
out=$2
pol=/usr/share/selinux/default
for f in "$pol/base.pp.bz2" "$pol/.modules"; do
	[ -e "$f" ] || {
		echo "build-policy.sh: no $f (apt-get install selinux-policy-default)" >&2
		exit 1
	}
done
command -v semodule >/dev/null || {
	echo "build-policy.sh: no semodule (apt-get install policycoreutils)" >&2
	exit 1
}

rm -rf "$out"
mkdir -p "$out/etc/selinux" "$out/var/lib/selinux"
"$(dirname "$0")/../../../selinux/build-module.sh" "$src" "$out/modules" >&2
# the test's svirt_t stand-in (rdmagate_test_vmm.te), against rdmagate.if
tm="$out/modules/test-vmm"
mkdir -p "$tm"
# (the Makefile reads the interfaces of the modules whose .te is beside)
cp "$src/rdmagate.te" "$src/rdmagate.fc" "$src/rdmagate.if" \
	"$(dirname "$0")/rdmagate_test_vmm.te" "$tm/"
make -s -C "$tm" -f /usr/share/selinux/devel/Makefile \
	HEADERDIR=/usr/share/selinux/devel/include rdmagate_test_vmm.pp >&2
printf 'module-store = direct\nexpand-check = 1\n' > "$out/etc/selinux/semanage.conf"
set -- -i "$pol/base.pp.bz2"
for m in $(cat "$pol/.modules"); do
	[ "$m" = base ] || set -- "$@" -i "$pol/$m.pp.bz2"
done
semodule -n -p "$out" -s default -X 100 "$@" \
	-X 400 -i "$out/modules/rdmagate.pp" -i "$out/modules/rdmagate_confine.cil" \
	-i "$tm/rdmagate_test_vmm.pp"
ls "$out"/etc/selinux/default/policy/policy.* > /dev/null
