# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The rdmagate stack inside a test VM, for the vm tests that run it by
# hand (sourced by tests/vm/ops/lib.sh and tests/vm/two-hosts/a-host.sh,
# after their own skip checks): TAP, the scratch directory $T, a cleanup
# of what they start, waiting helpers, and starting rdmagate-mux and the
# broker (with --mux) on $T/policy.conf, which the caller writes.
# Expects BROKER CTL WORKER MUX set; STACK_NAME names the scratch dir.
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
T0=${T0:-$SECONDS}
elapsed() { echo "# $((SECONDS - T0)) s: $*"; }

if grep -q '^ib_cm ' /proc/modules; then
	echo "1..0 # SKIP ib_cm is loaded: the mux cannot own the CM class (rdmagate-vm --no-cm)"
	exit 0
fi

T=$(mktemp -d "/run/${STACK_NAME:-stack}.XXXXXX")
chmod 755 "$T"
BPID= MPID= PIDS= WATCHDOG=

cleanup() {
	kill "$WATCHDOG" 2>/dev/null
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	[ -n "$BPID" ] && kill "$BPID" 2>/dev/null && wait "$BPID" 2>/dev/null
	[ -n "$MPID" ] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	for f in "$T"/state/workers/*.state; do
		[ -f "$f" ] || continue
		kill -9 "$(worker_pid "${f##*/}")" 2>/dev/null
	done
	wait 2>/dev/null
}
trap cleanup EXIT

# worker_pid VM[.state]: the pid of VM's worker (its state file), or nothing
worker_pid() {
	awk '$1 == "pid" { print $2 }' "$T/state/workers/${1%.state}.state" \
		2>/dev/null
}
ctl() { "$CTL" --control "$T/control.sock" "$@"; }
# wait_for SECONDS COMMAND...: until it succeeds, SECONDS of wall time
# (under TCG a round of the command may itself take a while)
wait_for() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	while :; do
		"$@" && return 0
		(( ${EPOCHREALTIME/./} > end )) && return 1
		sleep 0.1
	done
}
not() { ! "$@"; }
in_log() { grep -qF -- "$2" "$1"; }
count() { grep -cF -- "$2" "$1"; }
start_broker() { # log
	"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" \
		--state-dir "$T/state" --mux "$T/mux.sock" > "$1" 2>&1 &
	BPID=$!
	wait_for 10 ctl list > /dev/null 2>&1
}
start_mux() { # log
	"$MUX" --control "$T/mux.sock" > "$1" 2>&1 &
	MPID=$!
	wait_for 10 in_log "$1" "control socket $T/mux.sock"
}
