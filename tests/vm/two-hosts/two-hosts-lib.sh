# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Host A's helpers for tests run by two-hosts-vm (sourced): the requests to
# host B's peer-agent.sh through the shared directory $TWOHOSTS_DIR.
#   b_run SCRIPT      starts SCRIPT (bash) on B, prints its id
#   b_wait ID [S]     waits up to S seconds (60) for it; returns its status
#                     (124 on timeout); b_out ID prints its output,
#                     b_done ID says whether it ended
#   b_sync SCRIPT [S] both
#   b_get SCRIPT [S]  both, and prints its output
[ -n "${TWOHOSTS_DIR:-}" ] || { echo "1..0 # SKIP not run by two-hosts-vm"; exit 0; }
. "$(dirname "${BASH_SOURCE[0]}")/../../clock.sh" # wait_for
b_ready() { wait_for "$1" test -e "$TWOHOSTS_DIR/ready"; } # S: B's agent
b_run() {
	# unique without shell state: b_run runs in $(...) subshells (a name,
	# not a time: the wall clock's microseconds and the subshell's pid)
	local id=${EPOCHREALTIME/./}.$BASHPID
	printf '%s\n' "$1" > "$TWOHOSTS_DIR/tmp.$id"
	mv "$TWOHOSTS_DIR/tmp.$id" "$TWOHOSTS_DIR/req.$id"
	echo "$id"
}
b_wait() {
	local rc
	wait_for "${2:-60}" test -e "$TWOHOSTS_DIR/rc.$1" || return 124
	read -r rc < "$TWOHOSTS_DIR/rc.$1"
	return "$rc"
}
b_out() { cat "$TWOHOSTS_DIR/out.$1" 2>/dev/null; }
b_done() { [ -e "$TWOHOSTS_DIR/rc.$1" ]; }
b_sync() { local id; id=$(b_run "$1"); b_wait "$id" "${2:-60}"; }
b_get() {
	local id rc
	id=$(b_run "$1")
	b_wait "$id" "${2:-60}"
	rc=$?
	b_out "$id"
	return "$rc"
}
