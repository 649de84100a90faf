#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite, TAP: `meson install --destdir` of this build directory, and
# where everything lands (prefix-aware), no rdmagate-guest, the installed
# units and manual pages naming the installed paths.
# Usage: test-install.sh SRC BUILD PREFIX SBINDIR BINDIR LIBEXECDIR MANDIR
#        DATADIR SYSCONFDIR  (Meson's options, relative to PREFIX or not)
set -u
SRC=$1 BUILD=$2 PREFIX=$3
abs() { case $1 in /*) echo "$1" ;; *) echo "$PREFIX/$1" ;; esac; }
SBIN=$(abs "$4") BIN=$(abs "$5") LIBEXEC=$(abs "$6") MAN=$(abs "$7")
DATA=$(abs "$8") ETC=$(abs "$9")
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../exit.sh"

T=$(mktemp -d /tmp/rdmagate-install.XXXXXX)
on_exit 'rm -rf "$T"'
if meson install -C "$BUILD" --no-rebuild --destdir "$T/root" > "$T/log" 2>&1; then
	ok "meson install --destdir"
else
	not_ok "meson install --destdir"
	tail -20 "$T/log" | diag
	echo "1..$n"
	exit 1
fi
R=$T/root
(cd "$R" && find . -type f -o -type l | sed 's|^\.||' | sort) > "$T/files"
mode=$(stat -c %a "$R$ETC/rdmagate" 2>&1)
check "$ETC/rdmagate (where policy.conf goes: every VM's addresses and QEMU uids) is root's alone: $mode" \
	test "$mode" = 700

# systemd's directories: its own with prefix /usr, else under the prefix
if [ "$PREFIX" = /usr ] && pkg-config --exists systemd; then
	UNITS=$(pkg-config --variable=systemdsystemunitdir systemd)
	SYSUSERS=$(pkg-config --variable=sysusersdir systemd)
	TMPFILES=$(pkg-config --variable=tmpfilesdir systemd)
else
	UNITS=$PREFIX/lib/systemd/system SYSUSERS=$PREFIX/lib/sysusers.d
	TMPFILES=$PREFIX/lib/tmpfiles.d
fi
expect=(
	"$SBIN/rdmagate-broker" "$BIN/rdmagatectl" "$BIN/rdmagate-policy-check"
	"$LIBEXEC/rdmagate/rdmagate-worker"
	"$UNITS/rdmagate-broker.service"
	"$SYSUSERS/rdmagate.conf" "$TMPFILES/rdmagate.conf"
	"$DATA/doc/rdmagate/examples/policy.conf.example"
	"$MAN/man8/rdmagate-broker.8" "$MAN/man8/rdmagatectl.8"
	"$MAN/man8/rdmagate-worker.8" "$MAN/man8/rdmagate-policy-check.8"
	"$MAN/man5/rdmagate-policy.conf.5"
)
if [ -x "$BUILD/trace/rdmagate-trace" ]; then
	expect+=("$BIN/rdmagate-trace" "$UNITS/rdmagate-trace.service"
		"$MAN/man8/rdmagate-trace.8")
fi
if [ -x "$BUILD/mux/rdmagate-mux" ]; then
	expect+=("$SBIN/rdmagate-mux" "$UNITS/rdmagate-mux.service"
		"$MAN/man8/rdmagate-mux.8")
fi
missing=()
for f in "${expect[@]}"; do
	grep -qxF -- "$f" "$T/files" || missing+=("$f")
done
if [ ${#missing[@]} = 0 ]; then
	ok "the ${#expect[@]} expected files under $PREFIX"
else
	not_ok "missing: ${missing[*]}"
	diag < "$T/files"
fi
outside=$(grep -v -e "^$PREFIX/" -e "^$ETC/" -e "^$UNITS/" "$T/files" || true)
check "nothing installed outside $PREFIX, $ETC and $UNITS" test -z "$outside"
[ -z "$outside" ] || diag <<< "$outside"
check "rdmagate-guest (a test instrument) is not installed" \
	bash -c "! grep -q rdmagate-guest '$T/files'"

U=$R$UNITS/rdmagate-broker.service
check "the broker's unit runs $SBIN/rdmagate-broker --policy $ETC/rdmagate/policy.conf --mux /run/rdmagate/mux.sock" \
	grep -qxF "ExecStart=$SBIN/rdmagate-broker --policy $ETC/rdmagate/policy.conf --mux /run/rdmagate/mux.sock" "$U"
check "no @VARIABLE@ left in the installed units and pages" \
	bash -c "! grep -l '@[A-Z_]*@' '$R$UNITS'/rdmagate-*.service '$R$MAN'/man*/rdmagate* | grep -q ."
check "rdmagate-broker(8) names the installed worker $LIBEXEC/rdmagate/rdmagate-worker" \
	grep -qF "$LIBEXEC/rdmagate/rdmagate-worker" "$R$MAN/man8/rdmagate-broker.8"
echo "1..$n"
[ $failed = 0 ]
