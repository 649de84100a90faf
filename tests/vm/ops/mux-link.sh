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
n=0 failed=0
T0=$SECONDS
ok() { n=$((n + 1)); echo "ok $n - $*"; }
elapsed() { echo "# $((SECONDS - T0)) s: $*"; }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
check() {
	local d=$1; shift
	if "$@"; then ok "$d"; else not_ok "$d"; fi
}

[ "${RDMAGATE_VM:-}" = 1 ] || { echo "1..0 # SKIP not inside rdmagate-vm"; exit 0; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "1..0 # SKIP needs rdmagate-vm -n 2"; exit 0; }
if grep -q '^ib_cm ' /proc/modules; then
	echo "1..0 # SKIP ib_cm is loaded: the mux cannot own the CM class (rdmagate-vm --no-cm)"
	exit 0
fi

T=$(mktemp -d /run/mux-link.XXXXXX)
chmod 755 "$T"
BPID= MPID= PIDS= WATCHDOG=

cleanup() {
	kill "$WATCHDOG" 2>/dev/null
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	[ -n "$BPID" ] && kill "$BPID" 2>/dev/null && wait "$BPID" 2>/dev/null
	[ -n "$MPID" ] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	for f in "$T"/state/workers/*.state; do
		[ -f "$f" ] || continue
		kill -9 "$(awk '$1 == "pid" { print $2 }' "$f")" 2>/dev/null
	done
	wait 2>/dev/null
}
trap cleanup EXIT

A=fd99::10 B=fd99::11
SA=fd99:0000:0000:0000:0000:0000:0000:0010 # as sysfs writes them
SB=fd99:0000:0000:0000:0000:0000:0000:0011
# routed across the veth pair as the harness routes its own addresses (and
# tests/vm/mux/mux-vm.sh its IPv6 ones); the broker adds the addresses
n0=$RDMAGATE_VM_NETDEV0 n1=$RDMAGATE_VM_NETDEV1
ip -6 -batch - <<END
rule add pref 11 iif lo to $B lookup 110
route add $B dev $n0 table 110
rule add pref 11 iif lo to $A lookup 111
route add $A dev $n1 table 111
neigh replace $B lladdr $(cat /sys/class/net/"$n1"/address) dev $n0 nud permanent
neigh replace $A lladdr $(cat /sys/class/net/"$n0"/address) dev $n1 nud permanent
END

cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock

[defaults]
max_pinned = 64M

[vm a]
device = rxe0
addresses = $A
[vm b]
device = rxe1
addresses = $B
END
chmod 644 "$T/policy.conf"

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
# the RoCE v2 index of GID (in sysfs form) on DEV port 1
v2_index() {
	local f i g t
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		# read: a builtin, no fork per file (slow under TCG)
		read -r g < "$f" 2>/dev/null || continue
		[ "$g" = "$2" ] || continue
		read -r t < /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" \
			2>/dev/null || continue
		[ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
	done
	return 1
}
dump() {
	for f in "$T"/*.log "$T"/*.guest; do
		echo "---- $f"
		tail -n 30 "$f"
	done
	echo "---- processes"
	ps -eo pid,stat,wchan:24,args | grep -E 'rdmagate|cat|sleep' | grep -v grep
	echo "---- kernel"
	dmesg | tail -n 20
}
# a test that hangs still says why, before the harness kills the VM
( sleep "${MUX_LINK_WATCHDOG:-170}"; echo "# watchdog: still running"; dump | sed 's/^/# /' ) &
WATCHDOG=$!
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
check "mux 1 is up" start_mux "$T/mux1.log"
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
has_v2() { v2_index "$@" > /dev/null; }
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
check "mux 2 is up" start_mux "$T/mux2.log"
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
	wait_for 3 test "$(count "$T/broker1.log" "worker/b: mux channel handed over")" = 2

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
	wait_for 5 test "$(count "$T/mux2.log" "worker 1 (a) attached")" = 2
check "with its GID" \
	wait_for 5 test "$(count "$T/mux2.log" "$A (rxe0 port 1 index $ia) is worker 1's")" = 2
check "a got a new mux channel from broker 2" \
	wait_for 5 in_log "$T/broker2.log" "worker/a: mux channel handed over (mux worker 1)"
check "no refusal from the mux" not in_log "$T/broker2.log" "refused"

kill "$ga" 2>/dev/null
wait "$ga" 2>/dev/null
PIDS=
ctl stop --vm a > /dev/null
check "mux 2: worker 1 (a) detached at its stop" \
	wait_for 3 test "$(count "$T/mux2.log" "worker 1 (a) detached")" = 2
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
