# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# The rdmagate stack inside a test VM, for the vm tests that run it by
# hand (sourced by tests/vm/ops/lib.sh and tests/vm/two-hosts/a-host.sh,
# after their own skip checks): TAP, the scratch directory $T, stopping
# what they start (stack_stop, at exit too), waiting helpers, and
# starting rdmagate-mux and the broker (with --mux) on $T/policy.conf,
# which the caller writes.
# Expects BROKER CTL WORKER MUX set; STACK_NAME names the scratch dir.
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh" # wait_for, not, in_log, count, ctl, elapsed, broker_start

if grep -q '^ib_cm ' /proc/modules; then
	echo "1..0 # SKIP ib_cm is loaded: the mux cannot own the CM class (rdmagate-vm --no-cm)"
	exit 0
fi

T=$(mktemp -d "/run/${STACK_NAME:-stack}.XXXXXX")
chmod 755 "$T"
BPID= MPID= PIDS= WATCHDOG=
# stack_stop: what the test started, the broker, the mux, then the workers
# (they outlive brokers by design); at exit, or earlier by the test
stack_stop() {
	stop "$WATCHDOG" $PIDS "$BPID"
	stop "$MPID"
	kill_state_workers "$T/state"
}
on_exit stack_stop

# worker_pid VM[.state]: the pid of VM's worker from its state file, or
# nothing (replaces tests/lib.sh's, which asks the broker: these tests
# also look for workers while the broker is down)
worker_pid() {
	awk '$1 == "pid" { print $2 }' "$T/state/workers/${1%.state}.state" \
		2>/dev/null
}
start_broker() { broker_start "$1" --state-dir "$T/state" --mux "$T/mux.sock"; } # log
# start_services: the mux, then the broker (logs mux.log, broker.log), as
# TAP results; a broker that does not start ends the test
start_services() {
	check "mux is up" mux_start "$T/mux.log"
	if ! start_broker "$T/broker.log"; then
		not_ok "broker is up: $(tail -n 5 "$T/broker.log")"
		tap_end
		exit 1
	fi
	ok "broker is up"
}
# start_watchdog SECONDS: a test still running by then says where it is
start_watchdog() {
	( sleep "$1"; echo "# watchdog: still running"; dump | sed 's/^/# /' ) &
	WATCHDOG=$!
}
