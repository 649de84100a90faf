#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite, TAP: the Debian package.  tests/build-deb.sh builds it (once
# per tree content: `dpkg-buildpackage -us -uc -b` on a copy of the tree,
# never in it; the release build: -Dtest_hooks=false, only the unit suite),
# then this checks what the .deb holds and what it must not hold, its
# maintainer scripts, and runs lintian when it is installed (errors fail;
# warnings are listed).
# Usage: test-package.sh SRC BUILD
set -u
SRC=$1 BUILD=$2
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../exit.sh"

for c in dpkg-buildpackage:dpkg-dev dh:debhelper; do
	command -v "${c%%:*}" > /dev/null ||
		skip_all "no ${c%%:*} (Debian package ${c#*:})"
done

T=$(mktemp -d /tmp/rdmagate-package.XXXXXX)
on_exit 'rm -rf "$T"'

# The .deb of this tree, built once per tree content (the vm suite's
# systemd-units-vm and the sanitizer run reuse it).
deb=$("$SRC/tests/build-deb.sh" "$SRC" 2> "$T/build-deb.err")
rc=$?
out=$(dirname "${deb:-/nonexistent/x}")
secs=$(cat "$out/seconds" 2>/dev/null || echo "?")
if [ $rc = 0 ] && [ -f "$deb" ]; then
	ok "dpkg-buildpackage -us -uc -b of a copy of the tree (no .git, no build directory): ${secs}s ($(cat "$T/build-deb.err"))"
else
	not_ok "dpkg-buildpackage -us -uc -b failed (exit $rc)"
	diag < "$T/build-deb.err"
	echo "1..$n"
	exit 1
fi
grep -q -- '-Dtest_hooks=false' "$out/build.log" &&
	ok "configured with -Dtest_hooks=false" ||
	not_ok "configured with -Dtest_hooks=false"
if grep -q 'meson test .*--suite unit' "$out/build.log"; then
	ok "the unit suite ran at package build: $(grep -oE 'Ok: +[0-9]+' "$out/build.log" | tail -1 | tr -s ' ')"
else
	not_ok "the unit suite ran at package build"
fi

ok "built $(basename "$deb") ($(stat -c %s "$deb") bytes)"
dpkg -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' > "$T/contents"

has() { grep -qx -- "$1" "$T/contents"; }
etc=$(dpkg -c "$deb" | awk '$6 == "./etc/rdmagate/" { print $1 " " $2 }')
check "/etc/rdmagate (where policy.conf goes: every VM's addresses and QEMU uids) is root's alone: $etc" \
	test "$etc" = "drwx------ root/root"
expect=(
	/usr/sbin/rdmagate-broker
	/usr/bin/rdmagatectl
	/usr/bin/rdmagate-policy-check
	/usr/bin/rdmagate-trace
	/usr/libexec/rdmagate/rdmagate-worker
	/lib/systemd/system/rdmagate-broker.service
	/lib/systemd/system/rdmagate-trace.service
	/usr/lib/sysusers.d/rdmagate.conf
	/usr/lib/tmpfiles.d/rdmagate.conf
	/usr/share/doc/rdmagate/examples/policy.conf.example
	/usr/share/doc/rdmagate/copyright
	/usr/share/man/man8/rdmagate-broker.8.gz
	/usr/share/man/man8/rdmagatectl.8.gz
	/usr/share/man/man8/rdmagate-worker.8.gz
	/usr/share/man/man8/rdmagate-policy-check.8.gz
	/usr/share/man/man8/rdmagate-trace.8.gz
	/usr/share/man/man5/rdmagate-policy.conf.5.gz
)
# what the tree's other folders add once they exist
if [ -f "$SRC/mux/meson.build" ]; then
	expect+=(/usr/sbin/rdmagate-mux /lib/systemd/system/rdmagate-mux.service
		/usr/share/man/man8/rdmagate-mux.8.gz)
fi
if [ -f "$SRC/hook/meson.build" ]; then
	expect+=(/etc/libvirt/hooks/qemu.d/rdmagate
		/usr/share/man/man8/rdmagate-libvirt-hook.8.gz)
fi
missing=()
for f in "${expect[@]}"; do
	has "$f" || missing+=("$f")
done
if [ ${#missing[@]} = 0 ]; then
	ok "the .deb holds the ${#expect[@]} expected files"
else
	not_ok "the .deb lacks: ${missing[*]}"
	diag < "$T/contents"
fi
if grep -q 'rdmagate-guest' "$T/contents"; then
	not_ok "the .deb holds the guest simulator"
	grep 'rdmagate-guest' "$T/contents" | diag
else
	ok "no rdmagate-guest (a test instrument) in the .deb"
fi
unexpected=$(grep -v -E '/$' "$T/contents" | grep -v -E \
	'^/(usr/(s?bin|libexec/rdmagate|share/(man|doc(-base)?|selinux|lintian|rdmagate/selinux))/|lib/systemd/system/|usr/lib/(sysusers|tmpfiles)\.d/|etc/(libvirt|rdmagate|selinux)/)' || true)
if [ -z "$unexpected" ]; then
	ok "nothing outside the usual places"
else
	not_ok "files outside the usual places"
	diag <<< "$unexpected"
fi

mkdir "$T/x" "$T/ctl"
dpkg-deb -x "$deb" "$T/x"
dpkg-deb -e "$deb" "$T/ctl"
W=$T/x/usr/libexec/rdmagate/rdmagate-worker
if [ -x "$W" ] && ! strings "$W" | grep -q 'test-forbidden-syscall'; then
	ok "the worker has no test hook (no 'test-forbidden-syscall')"
else
	not_ok "the worker is missing or has the test hook"
fi
out=$("$T/x/usr/bin/rdmagatectl" --help 2>&1)
if ! grep -q -e '--test-' <<< "$out" &&
   ! strings "$T/x/usr/sbin/rdmagate-broker" | grep -q 'TEST HOOKS BUILD'; then
	ok "rdmagatectl --help offers no test option, the broker is no test build"
else
	not_ok "rdmagatectl --help offers test options or the broker is a test build"
fi
out=$("$T/x/usr/bin/rdmagatectl" spawn --vm a --socket /nonexistent/a --test-echo 2>&1)
rc=$?
check "rdmagatectl spawn --test-echo is refused as an unknown option (exit $rc)" \
	test $rc = 2
# the packaged programs run (dynamic libraries from Depends)
out=$("$T/x/usr/bin/rdmagate-policy-check" \
	"$T/x/usr/share/doc/rdmagate/examples/policy.conf.example" 2>&1)
check "the packaged rdmagate-policy-check accepts the packaged example ($out)" \
	test $? = 0
out=$("$T/x/usr/sbin/rdmagate-broker" --help 2>&1)
check "the packaged broker's default worker is /usr/libexec/rdmagate/rdmagate-worker" \
	grep -q '(/usr/libexec/rdmagate/rdmagate-worker)' <<< "$out"
U=$T/x/lib/systemd/system/rdmagate-broker.service
check "the broker's unit runs /usr/sbin/rdmagate-broker with /etc/rdmagate/policy.conf" \
	grep -qx 'ExecStart=/usr/sbin/rdmagate-broker --policy /etc/rdmagate/policy.conf --mux /run/rdmagate/mux.sock' "$U"
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends has the libraries ($depends)" \
	grep -q -e libibverbs -e libseccomp <<< "$depends"

# maintainer scripts: the group, /run/rdmagate, the broker enabled, the
# others not
P=$T/ctl/postinst
check "postinst creates the rdmagate group (systemd-sysusers)" \
	grep -q 'systemd-sysusers.*rdmagate.conf' "$P"
check "postinst creates /run/rdmagate (systemd-tmpfiles)" \
	grep -q 'systemd-tmpfiles.*rdmagate.conf' "$P"
check "postinst enables rdmagate-broker.service" \
	grep -q "deb-systemd-helper.*enable.*'rdmagate-broker.service'" "$P"
# (enabled again only where the admin had enabled it: debian-installed)
check "postinst neither enables nor starts rdmagate-trace.service on install" \
	bash -c "grep -q \"debian-installed 'rdmagate-trace.service'\" '$P' &&
		! grep -q \"deb-systemd-invoke.*'rdmagate-trace.service'\" '$P'"
# prerm stops the broker only on removal: an upgrade restarts it after
# the new files are in place (postinst: restart when $2, the old version,
# is set)
prerm_ok() {
	grep -B2 "deb-systemd-invoke stop 'rdmagate-broker.service'" "$T/ctl/prerm" |
		grep -qF '"$1" = remove' &&
		grep -q '_dh_action=restart' "$P"
}
check "prerm stops the broker only on removal; postinst restarts it after an upgrade" \
	prerm_ok

if command -v lintian > /dev/null; then
	lintian -I --tag-display-limit 0 "$out"/rdmagate_*.changes > "$T/lintian.log" 2>&1
	errors=$(grep -c '^E:' "$T/lintian.log")
	warnings=$(grep -c '^W:' "$T/lintian.log")
	if [ "$errors" = 0 ]; then
		ok "lintian: no error, $warnings warnings"
	else
		not_ok "lintian: $errors errors, $warnings warnings"
	fi
	grep -E '^(E|W|I):' "$T/lintian.log" | diag
else
	ok "lintian not installed: not run # SKIP (Debian package lintian)"
fi
echo "# dpkg-buildpackage took ${secs}s"
echo "1..$n"
[ $failed = 0 ]
