#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite, TAP: rdmagate's systemd units.  For each unit configured for
# this build (BUILD_SYSTEMD/test-NAME.service: ExecStart= in the build tree,
# which `systemd-analyze verify` insists exists):
#  - `systemd-analyze verify` prints nothing and succeeds (the man pages of
#    Documentation= are found through MANPATH, from this build);
#  - `systemd-analyze security --offline=true`: its exposure is printed and
#    must stay at or below the ceiling docs/operations.md records;
#  - the install copy (BUILD_SYSTEMD/NAME.service) is the same text with the
#    installed paths under PREFIX;
# and the broker's CapabilityBoundingSet= is what broker/broker.c keeps.
# Usage: test-units.sh SRC BUILD_SYSTEMD PREFIX MANPAGE,MANPAGE,...
set -u
SRC=$1 DIR=$2 PREFIX=$3 PAGES=$4
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../exit.sh"

command -v systemd-analyze > /dev/null ||
	skip_all "no systemd-analyze (Debian package systemd)"

# exposure ceilings (docs/operations.md has the measured figures)
declare -A CEILING=([rdmagate-broker.service]=3.0 [rdmagate-mux.service]=1.7
	[rdmagate-trace.service]=1.8)

T=$(mktemp -d /tmp/rdmagate-units.XXXXXX)
on_exit 'rm -rf "$T"'
mkdir -p "$T/man/man5" "$T/man/man8"
IFS=, read -r -a pages <<< "$PAGES"
for p in "${pages[@]}"; do
	cp "$p" "$T/man/man${p##*.}/"
done
export MANPATH=$T/man

units=()
for f in "$DIR"/test-*.service; do
	[ -e "$f" ] && units+=("$(basename "$f")")
done
[ ${#units[@]} -gt 0 ] || { not_ok "no configured units in $DIR"; echo "1..$n"; exit 1; }

for t in "${units[@]}"; do
	u=${t#test-}
	# verify looks at the file under its own name: copy it as NAME.service
	mkdir -p "$T/$u.d"
	cp "$DIR/$t" "$T/$u.d/$u"
	out=$(cd "$T/$u.d" && systemd-analyze verify "./$u" 2>&1)
	rc=$?
	if [ $rc = 0 ] && [ -z "$out" ]; then
		ok "$u: systemd-analyze verify: no warning"
	else
		not_ok "$u: systemd-analyze verify (exit $rc)"
		diag <<< "$out"
	fi

	out=$(cd "$T/$u.d" && systemd-analyze security --offline=true "./$u" 2>&1)
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<< "$out")
	max=${CEILING[$u]:-}
	if [ -z "$level" ]; then
		not_ok "$u: systemd-analyze security gave no exposure level"
		diag <<< "$out"
	elif [ -z "$max" ]; then
		not_ok "$u: exposure $level, but no ceiling recorded for it"
	elif awk -v l="$level" -v m="$max" 'BEGIN { exit !(l <= m) }'; then
		ok "$u: systemd-analyze security exposure $level (ceiling $max)"
	else
		not_ok "$u: exposure $level above its ceiling $max"
		grep '✗' <<< "$out" | diag
	fi

	# the install copy: the same unit, its paths under the prefix
	inst=$DIR/$u
	if [ ! -f "$inst" ]; then
		not_ok "$u: no install copy"
		continue
	fi
	bad=$(grep -E '^Exec[A-Za-z]*=' "$inst" | grep -oE '(^|[ =])/[^ ]+' |
		tr -d ' =' | grep -v -e "^$PREFIX/" -e '^/bin/kill$' -e '^/etc/' -e '^/run/rdmagate/' || true)
	same=$(diff <(grep -v -E '^Exec' "$DIR/$t") <(grep -v -E '^Exec' "$inst"))
	if [ -z "$bad" ] && [ -z "$same" ] && ! grep -q '@[A-Z_]*@' "$inst"; then
		ok "$u: the install copy runs the installed programs under $PREFIX"
	else
		not_ok "$u: the install copy's paths"
		diag <<< "outside $PREFIX: $bad
$same"
	fi
done

# The broker's bounding set is what it keeps (broker/broker.c's keep[]).
# CAP_NET_ADMIN is in the unit for the broker's address management
# (rtnetlink); until broker.c keeps it too it is the one allowed extra.
unit=$DIR/rdmagate-broker.service
if [ -f "$unit" ]; then
	in_unit=$(sed -n 's/^CapabilityBoundingSet=//p' "$unit" | tr ' ' '\n' | sort -u)
	kept=$(sed -n '/keep\[\] = {/,/};/p' "$SRC/broker/broker.c" |
		grep -oE 'CAP_[A-Z_]+' | sort -u)
	missing=$(comm -13 <(echo "$in_unit") <(echo "$kept"))
	extra=$(comm -23 <(echo "$in_unit") <(echo "$kept") | grep -v -x CAP_NET_ADMIN)
	if [ -n "$kept" ] && [ -z "$missing" ] && [ -z "$extra" ]; then
		ok "rdmagate-broker.service: CapabilityBoundingSet= is what broker.c keeps ($(echo $kept))"
	else
		not_ok "rdmagate-broker.service: CapabilityBoundingSet= against broker.c"
		diag <<< "kept by broker.c, not in the unit: $(echo $missing)
in the unit, not kept by broker.c: $(echo $extra)"
	fi
fi

# Every system call of the worker's own allow-list, and seccomp(2) to
# install it, passes the broker unit's SystemCallFilter=, which the workers
# inherit (a call refused there fails with EPERM under systemd only).
expand() { # a filter set: names and @groups, one name per line
	local w
	for w in "$@"; do
		case $w in
		@*) systemd-analyze syscall-filter "$w" 2>/dev/null |
			sed -e 's/#.*//' | tr -s ' \t' '\n' | sed -e '/^$/d' -e "/^$w\$/d" |
			while read -r x; do expand "$x"; done ;;
		*) echo "$w" ;;
		esac
	done
}
if [ -f "$unit" ]; then
	allow=() deny=()
	while IFS= read -r line; do
		case $line in
		'~'*) read -r -a w <<< "${line#\~}"; deny+=("${w[@]}") ;;
		*) read -r -a w <<< "$line"; allow+=("${w[@]}") ;;
		esac
	done < <(sed -n 's/^SystemCallFilter=//p' "$unit")
	expand "${allow[@]}" | sort -u > "$T/allow"
	expand "${deny[@]}" | sort -u > "$T/deny"
	comm -23 "$T/allow" "$T/deny" > "$T/effective"
	{ grep -oE '# filter for syscall "[a-z0-9_]+"' \
		"$SRC/tests/host/sandbox/worker-filter.pfc" | cut -d'"' -f2
	  echo seccomp; } | sort -u > "$T/worker"
	refused=$(comm -23 "$T/worker" "$T/effective")
	if [ "$(wc -l < "$T/worker")" -gt 20 ] && [ -z "$refused" ]; then
		ok "rdmagate-broker.service: SystemCallFilter= passes the worker's $(wc -l < "$T/worker") calls (its allow-list and seccomp)"
	else
		not_ok "rdmagate-broker.service: SystemCallFilter= refuses calls a worker needs"
		diag <<< "refused: $(echo $refused)"
	fi
fi
echo "1..$n"
[ $failed = 0 ]
