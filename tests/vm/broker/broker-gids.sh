#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm -n 2): the broker's GID ownership and its
# lifecycle under traffic, in TAP.  Four VMs' workers on one broker (a, c on
# rxe0; b, d on rxe1), guests played by rdmagate-guest:
#  - a guest's ADD_GID makes the broker add the address to the netdev and
#    answer the host index: visible in the device's GID table; the guests
#    exchange RC traffic on their claimed GIDs; DEL (the guest leaving)
#    removes the address;
#  - a second VM claiming the first VM's address is refused;
#  - an address removed outside the broker under traffic: the broker
#    forgets it and tells the worker, whose guest's QP fails at once;
#  - kill -9 of a worker mid-traffic: its addresses and cgroup are gone
#    within a second, and the other VMs' traffic loses no completion;
#  - the broker restarted under traffic: the traffic continues, and the new
#    broker still removes the addresses when the guest leaves.
# Usage: broker-gids.sh BROKER RDMAGATECTL WORKER GUEST
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

[ "${RDMAGATE_VM:-}" = 1 ] || { echo "1..0 # SKIP not inside rdmagate-vm"; exit 0; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "1..0 # SKIP needs rdmagate-vm -n 2"; exit 0; }
. "$(dirname "$0")/../host-gid.sh"

# /run: a tmpfs in the test VM
T=$(mktemp -d /run/broker-gids.XXXXXX)
chmod 755 "$T"
CG=/sys/fs/cgroup/rdmagate
BPID=
PIDS=
# workers outlive brokers by design: stopped after the broker
on_exit 'kill_state_workers "$T/state"'
on_exit 'stop $PIDS "$BPID"'

A=10.99.0.10 B=10.99.0.11 C=10.99.0.12 D=10.99.0.13
GA=$(v4_gid "$A") # a's GID, in sysfs form
route_pair "$A" "$B"
route_pair "$C" "$D"

write_policy() { # ADDRESSES_OF_A ADDRESSES_OF_B
	policy_conf "socket_dir = $T/vm" "cgroup_parent = /rdmagate" -- \
		"device = rxe0" "max_pinned = 64M" <<EOF
[vm a]
addresses = $1
[vm b]
device = rxe1
addresses = $2
[vm c]
addresses = $C
[vm d]
device = rxe1
addresses = $D
EOF
}
write_policy "$A, fd99::10" "$B"

start_broker() { broker_start "$1" --state-dir "$T/state"; } # log
on_netdev() { ip -4 addr show dev "$1" | grep -q "inet $2/32 "; }
# guest VM PORT GID ITERS [SERVER_ADDR]: rc_pingpong on guest index 1
guest() {
	timeout 150 "$GUEST" --socket "$T/$1.sock" --ram 16M --gid "1=::ffff:$3" \
		rc_pingpong -g 1 -p "$2" -s 64 -n "$4" ${5:-} > "$T/$1.guest" 2>&1
}

if ! start_broker "$T/broker1.log"; then
	not_ok "broker is up: $(tail -n 5 "$T/broker1.log")"
	echo "1..$n"
	exit 1
fi
ok "broker is up"
for vm in a b c d; do
	out=$(ctl spawn --vm $vm --socket "$T/$vm.sock" 2>&1)
	check "spawn $vm: $out" grep -q "worker/$vm: pid" <<<"$out"
done

# spawn-to-ready (docs/broker.md): the broker logs each worker's first HELLO.
# Its lines start "broker: "; a worker's own lines come out as "worker/<vm>:
# ...", so a worker that writes "ready 1 ms after the spawn request" itself
# matches none of these patterns (every broker line below is anchored so).
wait_for 20 eval '[ "$(grep -c "^broker: worker/[a-d]: ready [0-9]* ms after the spawn request$" "$T/broker1.log")" = 4 ]'
grep -o '^broker: worker/[a-d]: ready [0-9]* ms after the spawn request$' "$T/broker1.log" |
	sed 's/^broker: /# spawn-to-ready: /'

# ---- claim, traffic, release --------------------------------------------
guest a 18600 "$A" 300 &
ga=$!
check "a's guest claimed $A: on veth0 (added by the broker)" \
	wait_for 20 on_netdev veth0 "$A"
check "and its GID is in rxe0's GID table" wait_for 5 has_v2 rxe0 "$GA"
check "the state record lists it" grep -q "^addr $A\$" "$T/state/workers/a.state"
# b claims a's address: the policy refuses it
guest b 18601 "$A" 1 127.0.0.1
rc=$?
check "b claiming a's address is refused by the policy (guest exit $rc): $(grep -i 'gid' "$T/b.guest" | head -n 1)" \
	test "$rc" != 0
check "the broker names the policy" \
	grep -q "^broker: warning: worker/b: GID $A refused: the policy does not let this VM claim it" \
	"$T/broker1.log"
# the policy gives a's address to b while a holds it: ownership refuses it
write_policy "fd99::10" "$A, $B"
ctl reload > /dev/null
guest b 18601 "$A" 1 127.0.0.1
rc=$?
check "after a reload granting it to b, b's claim is refused: a owns it (guest exit $rc)" \
	test "$rc" != 0
check "the broker says a owns it" \
	grep -q "^broker: warning: worker/b: GID $A refused: vm a owns it" "$T/broker1.log"
check "and the address is still a's" on_netdev veth0 "$A"
write_policy "$A, fd99::10" "$B"
ctl reload > /dev/null
wait_for 20 tcp_listening 18600
guest b 18600 "$B" 300 127.0.0.1
rb=$?
wait $ga
ra=$?
check "a and b exchanged 300 RC round trips on their claimed GIDs (exit $ra $rb): $(tail -n 1 "$T/b.guest")" \
	test "$ra" = 0 -a "$rb" = 0
check "the guests left: $A removed from veth0" wait_for 5 not on_netdev veth0 "$A"
check "and $B from veth1" wait_for 5 not on_netdev veth1 "$B"
check "and from the GID table" not has_v2 rxe0 "$GA"
out=$(ctl stats --vm a --json)
check "stats: a granted 1 GID, its guest posted sends and saw completions" \
	test "$(jq '.[0] | .gid_adds >= 1 and .sends >= 300 and .completions >= 300' <<<"$out")" = true

# ---- an address removed behind the broker's back (issue 26 item 7) --------
# a's address leaves veth0 without the broker (ip addr del) while a and b
# run RC traffic on it: the broker forgets it and tells worker a, which
# kills its GID (the QP to the error state): a's guest fails at once
# instead of sending from a slot another VM's claim could take next.
guest a 18620 "$A" 100000 &
ga=$!
wait_for 30 tcp_listening 18620
# (its subshell's stderr: its timeout is stopped below, and bash would say
# "Terminated" there; the guest's own output goes to its file regardless)
guest b 18620 "$B" 100000 127.0.0.1 2> /dev/null &
gb=$!
PIDS="$ga $gb"
check "a and b run traffic" wait_for 30 eval 'grep -q "^addr $B\$" "$T/state/workers/b.state"'
sleep 1
ip addr del "$A/32" dev veth0
check "the broker saw $A removed outside it and told worker a" \
	wait_for 10 grep -q "^broker: warning: vm a: $A was removed from ifindex [0-9]* outside the broker; forgotten, the worker told\$" "$T/broker1.log"
check "worker a: the address left the host" \
	wait_for 10 grep -q "worker/a: .*address $A left the host" "$T/broker1.log"
check "worker a: its GID is dead, its QP in the error state" \
	wait_for 10 grep -q "worker/a: .*GID: host GID index [0-9]* no longer holds the guest's GID (the broker says its address went)" "$T/broker1.log"
check "a's guest failed at once (its QP in error), not after 100000 round trips" \
	wait_for 20 gone "$ga"
wait "$ga"
rc=$?
check "(with an error: exit $rc; $(tail -n 1 "$T/a.guest"))" test "$rc" != 0
check "the state record no longer lists $A" \
	wait_for 5 not grep -q "^addr $A\$" "$T/state/workers/a.state"
# b's guest (under timeout, in the function's subshell) ends too
for st in /proc/[0-9]*/stat; do
	read -r cpid _ _ ppid _ < "$st" 2>/dev/null || continue
	[ "$ppid" = "$gb" ] && kill "$cpid" 2>/dev/null
done
wait "$gb" 2>/dev/null
PIDS=
check "b's guest left: $B removed" wait_for 20 not on_netdev veth1 "$B"

# ---- kill -9 mid-traffic --------------------------------------------------
t_cd=${EPOCHREALTIME/./}
guest c 18610 "$C" 400 &
gc=$!
guest a 18611 "$A" 100000 &
ga=$!
wait_for 30 tcp_listening 18610 && wait_for 30 tcp_listening 18611
guest d 18610 "$D" 400 127.0.0.1 &
gd=$!
guest b 18611 "$B" 100000 127.0.0.1 &
gb=$!
PIDS="$gc $ga $gd $gb"
check "a's traffic runs" wait_for 30 on_netdev veth1 "$B"
sleep 1
pa=$(worker_pid a)
# the GID table entry of a's address, then read with builtins only (no
# fork), so that the time measured is the broker's, not this loop's
gfile=
i=$(v2_index rxe0 "$GA") && gfile=/sys/class/infiniband/rxe0/ports/1/gids/$i
kill -9 "$pa"
mono_ms t0
while [ -n "$gfile" ]; do
	read -r g < "$gfile" 2>/dev/null
	[ "$g" != "$GA" ] && break
	mono_ms t
	((t - t0 > 5000)) && break
done
mono_ms t
ms=$((t - t0))
check "kill -9 of worker a ($pa): its GID left rxe0's table in $ms ms (< 1000)" \
	test -n "$gfile" -a "$ms" -lt 1000
check "and $A is gone from veth0" not on_netdev veth0 "$A"
check "a's cgroup is gone" test ! -d "$CG/a"
check "the broker reports the kill" \
	grep -q "^broker: .*worker/a (pid $pa) killed by SIGKILL" "$T/broker1.log"
kill "$gb" "$ga" 2>/dev/null
wait "$gc"
rc=$?
wait "$gd"
rd=$?
# this machine's pace: the restart below needs ~8 s of traffic
per_iter_us=$(( (${EPOCHREALTIME/./} - t_cd) / 400 ))
iters=$(( 8000000 / (per_iter_us > 0 ? per_iter_us : 1) ))
(( iters < 200 )) && iters=200
(( iters > 8000 )) && iters=8000
check "c and d lost no completion: 400 round trips each, exit $rc $rd ($(tail -n 1 "$T/d.guest"))" \
	test "$rc" = 0 -a "$rd" = 0
wait "$ga" "$gb" 2>/dev/null
PIDS=

# ---- broker restart under traffic -------------------------------------------
guest c 18620 "$C" "$iters" &
gc=$!
wait_for 30 tcp_listening 18620
guest d 18620 "$D" "$iters" 127.0.0.1 &
gd=$!
PIDS="$gc $gd"
check "c and d run" wait_for 30 on_netdev veth1 "$D"
kill -TERM "$BPID"
wait "$BPID"
BPID=
check "broker 1 stopped with c's traffic running" kill -0 "$gc"
check "broker 2 is up" start_broker "$T/broker2.log"
check "it re-adopted c and d, each with its address" \
	test "$(grep -cE '^broker: worker/[cd] \(pid [0-9]+, uid [0-9]+\) re-adopted with 1 addresses' "$T/broker2.log")" = 2
wait "$gc"
rc=$?
wait "$gd"
rd=$?
PIDS=
check "c and d finished $iters round trips across the restart (exit $rc $rd)" \
	test "$rc" = 0 -a "$rd" = 0
check "broker 2 removed their addresses when the guests left" \
	wait_for 5 not on_netdev veth0 "$C"
check "(both)" wait_for 5 not on_netdev veth1 "$D"

for vm in b c d; do ctl stop --vm $vm > /dev/null; done
kill -TERM "$BPID"
wait "$BPID"
BPID=
echo "1..$n"
[ "$failed" = 0 ] || { echo "---- broker logs"; tail -n 40 "$T"/broker*.log; for f in "$T"/*.guest; do echo "---- $f"; tail -n 5 "$f"; done; }
[ "$failed" = 0 ]
