#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm --no-cm -n 2): the broker's link to
# rdmagate-mux (broker/mux_link.c), in TAP.  Two VMs' workers, a on rxe0 and
# b on rxe1, on a broker started with --mux; the guests (rdmagate-guest)
# claim fd99::10 and fd99::11.  Checked in the mux's own log (it logs every
# port opened, worker attached and detached, GID added and removed):
#  - the broker connects to a mux that starts after it (retry every second),
#    adds both ports, attaches both workers (ids 1 and 2) and hands each its
#    mux channel over the broker channel;
#  - each guest's claimed GID reaches the mux with its RoCE v2 host index;
#  - kill -9 of the mux, then a new mux: the broker replays ports, workers
#    and GIDs within 3 s;
#  - stopping b: WORKER_DETACH (and GID_DEL of its GID);
#  - a broker restart with the mux alive: the new broker detaches what the
#    old one attached and replays the re-adopted worker a.
# No CM traffic: that needs the worker's QP1 emulation (not checked here).
# Usage: mux-link.sh BROKER RDMAGATECTL WORKER GUEST MUX
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5
T0=$SECONDS
. "$(dirname "$0")/lib.sh"

# a test that hangs still says why, before the harness kills the VM
start_watchdog "${MUX_LINK_WATCHDOG:-170}"
# guest VM PORT GID: claims GID at index 1, then waits as an rc_pingpong
# server nobody connects to (until killed)
guest() {
	timeout 150 "$GUEST" --socket "$T/$1.sock" --ram 16M --gid "1=$3" \
		rc_pingpong -g 1 -p "$2" -n 1 > "$T/$1.guest" 2>&1
}

# ---- the broker first: it retries until the mux is there -------------------
if ! start_broker "$T/broker1.log"; then
	not_ok "broker is up: $(tail -n 5 "$T/broker1.log")"
	echo "1..$n"
	exit 1
fi
ok "broker is up (no mux yet)"
check "it says it retries" \
	wait_for 3 in_log "$T/broker1.log" "retrying every 1000 ms"
for vm in a b; do
	out=$(ctl spawn --vm $vm --socket "$T/$vm.sock" 2>&1)
	check "spawn $vm without a mux: $out" grep -q "worker/$vm: pid" <<<"$out"
done
check "mux 1 is up" mux_start "$T/mux1.log"
check "the broker connected within 2 s" \
	wait_for 2 in_log "$T/broker1.log" "mux $T/mux.sock: connected"
check "rxe0 port 1 added" \
	wait_for 3 in_log "$T/mux1.log" "rxe0 port 1: umad open, CM class registered"
check "rxe1 port 1 added" \
	wait_for 3 in_log "$T/mux1.log" "rxe1 port 1: umad open, CM class registered"
check "worker 1 (a) attached" wait_for 3 in_log "$T/mux1.log" "worker 1 (a) attached"
check "worker 2 (b) attached" wait_for 3 in_log "$T/mux1.log" "worker 2 (b) attached"
check "a got its mux channel over its broker channel" \
	wait_for 3 in_log "$T/broker1.log" "worker/a: mux channel handed over (mux worker 1)"
check "b too" \
	wait_for 3 in_log "$T/broker1.log" "worker/b: mux channel handed over (mux worker 2)"

# ---- GIDs ---------------------------------------------------------------------
elapsed "GIDs"
guest a 18700 "$A" &
ga=$!
guest b 18701 "$B" &
gb=$!
PIDS="$ga $gb"
check "a's guest claimed $A: in rxe0's table" wait_for 20 has_v2 rxe0 "$SA"
check "b's guest claimed $B: in rxe1's table" wait_for 20 has_v2 rxe1 "$SB"
ia=$(v2_index rxe0 "$SA") ib=$(v2_index rxe1 "$SB")
check "the mux was told $A at rxe0's RoCE v2 index $ia is worker 1's" \
	wait_for 3 in_log "$T/mux1.log" "$A (rxe0 port 1 index $ia) is worker 1's"
check "and $B at rxe1's index $ib is worker 2's" \
	wait_for 3 in_log "$T/mux1.log" "$B (rxe1 port 1 index $ib) is worker 2's"
check "no refusal from the mux" not in_log "$T/broker1.log" "refused"

# ---- kill -9 of the mux, a new one: the replay --------------------------------
elapsed "kill -9 of the mux"
kill -9 "$MPID"
wait "$MPID" 2>/dev/null
MPID=
check "the broker saw the mux go" \
	wait_for 3 in_log "$T/broker1.log" "connection closed; retrying every 1000 ms"
sleep 1.5
check "mux 2 is up" mux_start "$T/mux2.log"
t0=$EPOCHREALTIME
replayed() {
	in_log "$T/mux2.log" "$A (rxe0 port 1 index $ia) is worker 1's" &&
		in_log "$T/mux2.log" "$B (rxe1 port 1 index $ib) is worker 2's"
}
wait_for 5 replayed
rc=$?
ms=$(( (${EPOCHREALTIME/./} - ${t0/./}) / 1000 ))
check "the broker replayed both GIDs to mux 2 in $ms ms (< 3000)" \
	test "$rc" = 0 -a "$ms" -lt 3000
check "mux 2: rxe0 port 1" in_log "$T/mux2.log" "rxe0 port 1: umad open"
check "mux 2: rxe1 port 1" in_log "$T/mux2.log" "rxe1 port 1: umad open"
check "mux 2: worker 1 (a) attached" in_log "$T/mux2.log" "worker 1 (a) attached"
check "mux 2: worker 2 (b) attached" in_log "$T/mux2.log" "worker 2 (b) attached"
check "the workers got new mux channels" \
	wait_for 3 count_is "$T/broker1.log" "worker/b: mux channel handed over" 2

# ---- a worker stops: GID_DEL, WORKER_DETACH ------------------------------------
elapsed "a worker stops"
kill "$gb" 2>/dev/null
wait "$gb" 2>/dev/null
out=$(ctl stop --vm b 2>&1)
check "stop b: $out" test $? = 0
check "mux 2: $B removed from worker 2" \
	wait_for 3 in_log "$T/mux2.log" "$B removed from worker 2"
check "mux 2: worker 2 (b) detached" \
	wait_for 3 in_log "$T/mux2.log" "worker 2 (b) detached"
check "a is still attached with its GID (no detach of worker 1)" \
	not in_log "$T/mux2.log" "worker 1 (a) detached"
PIDS=$ga

# ---- a broker restart with the mux alive ------------------------------------------
elapsed "a broker restart"
kill -TERM "$BPID"
wait "$BPID"
BPID=
check "broker 1 stopped; a's guest keeps running" kill -0 "$ga"
check "broker 2 is up" start_broker "$T/broker2.log"
check "it re-adopted a" in_log "$T/broker2.log" "worker/a (pid"
check "and connected to mux 2" \
	wait_for 5 in_log "$T/broker2.log" "mux $T/mux.sock: connected"
check "broker 2 detached what broker 1 had attached" \
	wait_for 5 in_log "$T/mux2.log" "worker 1 (a) detached"
check "and attached a again" \
	wait_for 5 count_is "$T/mux2.log" "worker 1 (a) attached" 2
check "with its GID" \
	wait_for 5 count_is "$T/mux2.log" "$A (rxe0 port 1 index $ia) is worker 1's" 2
check "a got a new mux channel from broker 2" \
	wait_for 5 in_log "$T/broker2.log" "worker/a: mux channel handed over (mux worker 1)"
check "no refusal from the mux" not in_log "$T/broker2.log" "refused"

kill "$ga" 2>/dev/null
wait "$ga" 2>/dev/null
PIDS=
ctl stop --vm a > /dev/null
check "mux 2: worker 1 (a) detached at its stop" \
	wait_for 3 count_is "$T/mux2.log" "worker 1 (a) detached" 2
kill -TERM "$BPID"
wait "$BPID"
BPID=
kill -TERM "$MPID"
wait "$MPID"
rc=$?
MPID=
check "mux 2 exits 0 on SIGTERM" test "$rc" = 0
echo "1..$n"
[ "$failed" = 0 ] || dump | sed 's/^/# /'
[ "$failed" = 0 ]
