#!/bin/sh
# SPDX-License-Identifier: MIT
# rdmagate-policy-check end to end: exit codes, the exact error lines of
# every golden bad file, the canonical form of every good one, stdin, and
# --strict.  Usage: test-check-cli.sh PATH-TO-rdmagate-policy-check
set -u
check=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
golden=${RDMAGATE_SRC:?run under meson test}/tests/unit/policy/golden
. "$RDMAGATE_SRC/tests/exit.sh"
tmp=$(mktemp -d) || exit 1
on_exit 'rm -rf "$tmp"'
fail() { echo "FAIL: $*"; exit 1; }

cd "$golden" || exit 1
n=0
for conf in *.conf; do
	stem=${conf%.conf}
	case $conf in
	bad-*)
		out=$("$check" "$conf" 2>&1 >/dev/null)
		rc=$?
		[ $rc -eq 1 ] || fail "$conf: exit $rc, expected 1"
		[ "$out" = "$(cat "$stem.err")" ] ||
			fail "$conf: errors differ from $stem.err:
$out"
		;;
	*)
		"$check" --canonical "$conf" > "$tmp/out" ||
			fail "$conf: exit $?, expected 0"
		cmp -s "$tmp/out" "$stem.canon" ||
			fail "$conf: canonical form differs from $stem.canon"
		out=$("$check" -q "$conf" 2>&1) || fail "$conf: -q failed"
		[ -z "$out" ] || fail "$conf: -q printed: $out"
		;;
	esac
	n=$((n + 1))
done
[ $n -ge 5 ] || fail "only $n golden files"

out=$("$check" -c - < minimal.conf) || fail "stdin: exit $?"
[ "$out" = "$(cat minimal.canon)" ] || fail "stdin: canonical differs"
out=$("$check" minimal.conf) || fail "minimal.conf: exit $?"
[ "$out" = "minimal.conf: valid, 1 VM" ] || fail "summary: $out"

out=$("$check" "$tmp/none.conf" 2>&1)
[ $? -eq 1 ] || fail "missing file: exit status"
[ "$out" = "$tmp/none.conf: cannot open: No such file or directory" ] ||
	fail "missing file: $out"

"$check" > /dev/null 2>&1
[ $? -eq 2 ] || fail "no argument: expected exit 2"
"$check" --bogus minimal.conf > /dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option: expected exit 2"

cp minimal.conf "$tmp/open.conf" && chmod 0666 "$tmp/open.conf"
"$check" -q "$tmp/open.conf" || fail "0666 without --strict refused"
out=$("$check" --strict "$tmp/open.conf" 2>&1)
[ $? -eq 1 ] || fail "0666 with --strict accepted"
case $out in
*"mode 0666 lets group or others write it"*) ;;
*) fail "--strict: $out" ;;
esac
echo "ok: $n golden files and the CLI's exits"
