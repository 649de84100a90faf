#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm --no-cm -n 2): rdma_cm between two guests end
# to end, in TAP.  The broker (with --mux), rdmagate-mux and two workers
# (a on rxe0, b on rxe1); each guest (rdmagate-guest) claims its IPv6
# address through the broker, then the two connect as a guest kernel's
# ib_cm/rdma_cm would: REQ (with the RDMA-CM IP private data) from b to a's
# address and port, REP, RTU through the guests' QP1 (the worker's QP1
# emulation, the mux routing by full GID), RC traffic, DREQ/DREP; then the
# mux is killed and started again, and a new connection works.
# Usage: cm-e2e.sh BROKER RDMAGATECTL WORKER GUEST MUX
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5
T0=$SECONDS
. "$(dirname "$0")/lib.sh"

start_watchdog 200
start_services
for vm in a b; do
	out=$(ctl spawn --vm $vm --socket "$T/$vm.sock" 2>&1)
	check "spawn $vm: $out" grep -q "worker/$vm: pid" <<<"$out"
done
check "a got its mux channel" \
	wait_for 20 in_log "$T/broker.log" "worker/a: mux channel handed over"
check "b got its mux channel" \
	wait_for 20 in_log "$T/broker.log" "worker/b: mux channel handed over"

# guest VM GID [SERVER]: cm_pingpong on rdma_cm port 7471, guest GID index 1
cm() {
	timeout 150 "$GUEST" --socket "$T/$1.sock" --ram 16M --gid "1=$2" \
		cm_pingpong -g 1 -p 7471 -s 1024 -n 200 --cm-timeout=2000 \
		--cm-retries=5 ${3:-} > "$T/$1.guest" 2>&1
}
# cm_pair: a listens, b connects once a's GID is in rxe0's table; ra and rb
# are their exit statuses
cm_pair() {
	local ga
	cm a "$A" &
	ga=$!
	PIDS=$ga
	check "a's guest claimed $A (its GID is in rxe0's table)" \
		wait_for 30 has_v2 rxe0 "$SA"
	cm b "$B" "$A"
	rb=$?
	wait "$ga"
	ra=$?
	PIDS=
}
elapsed "connect"
cm_pair
check "b connected to a through CM and they exchanged 200 round trips (exit $ra $rb): $(tail -n 1 "$T/b.guest")" \
	test "$ra" = 0 -a "$rb" = 0
check "the mux routed their MADs" \
	test "$(count "$T/mux.log" "refused")" = 0
for vm in a b; do
	out=$(ctl stats --vm $vm --json)
	check "$vm: the worker sent and received MADs for its guest: $(jq -c '.[0] | {mads_sent, mads_received, mad_errors}' <<<"$out")" \
		test "$(jq '.[0] | .mads_sent > 0 and .mads_received > 0' <<<"$out")" = true
done

# the mux dies (kill -9) and comes back (systemd's Restart= does that): the
# broker replays ports, workers and GIDs, and a new connection works
elapsed "mux restart"
kill -9 "$MPID"
wait "$MPID" 2>/dev/null
MPID=
check "mux 2 is up" mux_start "$T/mux2.log"
both_attached() { [ "$(count "$T/mux2.log" ") attached")" -ge 2 ]; }
check "the broker replayed both workers into it" wait_for 10 both_attached
cm_pair
check "after the mux restart b connects to a again (exit $ra $rb): $(tail -n 1 "$T/b.guest")" \
	test "$ra" = 0 -a "$rb" = 0
elapsed "done"
[ "$failed" = 0 ] || dump | diag
tap_end
