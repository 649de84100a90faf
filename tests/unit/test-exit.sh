#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tests/exit.sh, the shell tests' one EXIT trap, under each shell that runs
# tests (bash and dash): the commands run last registered first, evaluated
# at exit, each once; a failing one does not stop the rest; one reading
# stdin does not eat the list; the script's exit status is kept, for exit
# and a failing last command; stop skips empty words and reaps.
# Usage: test-exit.sh SOURCE_ROOT   (TAP)
set -u
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
EXIT_SH=${1:-$here/../..}/tests/exit.sh
[ -r "$EXIT_SH" ] || { echo "no $EXIT_SH" >&2; exit 1; }
. "$here/../exit.sh"
T=$(mktemp -d /tmp/rdmagate-exit-test.XXXXXX)
on_exit 'rm -rf "$T"'

# run SHELL SCRIPT: SCRIPT (after sourcing exit.sh) under SHELL; its
# stdout in $T/out, its status in rc
run() {
	printf '. "%s"\n%s\n' "$EXIT_SH" "$2" > "$T/script"
	"$1" "$T/script" > "$T/out" 2> "$T/err" < /dev/null
	rc=$?
}
out_is() {
	[ "$(cat "$T/out")" = "$1" ] ||
		{ printf 'got: %s\n' "$(cat "$T/out" "$T/err")" | diag; false; }
}

gone() { ! kill -0 "$1" 2> /dev/null; }

for sh in bash dash; do
	command -v "$sh" > /dev/null || { ok "# SKIP no $sh"; continue; }
	run "$sh" 'on_exit "echo first"; on_exit "echo second"; echo body'
	check "$sh: last registered runs first, after the body" \
		out_is "$(printf 'body\nsecond\nfirst')"
	check "$sh: exit status 0 kept" test "$rc" = 0

	run "$sh" 'X=early; on_exit '\''echo "$X"'\''; X=late; exit 3'
	check "$sh: evaluated at exit" out_is late
	check "$sh: exit status 3 kept" test "$rc" = 3

	run "$sh" 'on_exit "echo once"; on_exit "echo once"; on_exit "echo other"; on_exit "echo once"'
	check "$sh: the same command registered again runs once" \
		out_is "$(printf 'other\nonce')"

	run "$sh" 'on_exit "echo after"; on_exit "false"; on_exit "cat; echo before"; false'
	check "$sh: a failing or stdin-reading command stops none" \
		out_is "$(printf 'before\nafter')"
	check "$sh: a failing last command's status kept" test "$rc" = 1

	run "$sh" 'sleep 30 & P=$!; on_exit "stop \"\$P\" \"\$UNSET_EMPTY\"; echo stopped"
		UNSET_EMPTY=; echo "$P" > "'"$T"'/pid"; exit 0'
	check "$sh: stop given an empty word, then the next undo runs" \
		out_is stopped
	pid=$(cat "$T/pid")
	check "$sh: stop killed and reaped the job" gone "$pid"

done
tap_end
