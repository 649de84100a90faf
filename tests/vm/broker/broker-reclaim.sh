#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm suite (rdmagate-vm -n 1): a worker re-claims an address it was granted
# as RoCE v2 with the other GID type (issue 29, finding 3).  rxe lists
# RoCE v2 GIDs only, so the v1 claim cannot be satisfied: it must be
# refused and leave the address, and its live v2 GID, alone.  VM a's
# worker is hostile-worker.py (run by the broker in its place: the same
# requests a guest's ADD_GID or pvrdma CREATE_BIND of the same address
# with the other type makes the real worker send).
# Then the same through the real worker (vm r): a guest's ADD_GID of its
# address as RoCE v2, then as v1 at another index.
# Usage: broker-reclaim.sh BROKER RDMAGATECTL HOSTILE WORKER GUEST
set -u

BROKER=$1 CTL=$2 HOSTILE=$3 REAL_WORKER=$4 GUEST=$5
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"
. "$(dirname "$0")/../host-gid.sh" # v4_gid

[ "${RDMAGATE_VM:-}" = 1 ] || skip_all "not inside rdmagate-vm"
[ "${RDMAGATE_VM_NDEV:-0}" -ge 1 ] || skip_all "needs rdmagate-vm -n 1"

# /run: a tmpfs in the test VM
T=$(mktemp -d /run/broker-reclaim.XXXXXX)
chmod 755 "$T"
BPID=
# workers outlive brokers by design: stopped after the broker
on_exit 'kill_state_workers "$T/state"'
on_exit 'stop "$BPID"'

A=10.99.0.10 R=10.99.0.20
GID=$(v4_gid "$A")
# v2_at INDEX: rxe0's GID at INDEX is $A's RoCE v2 GID (read: builtins, no
# fork per file, as sysfs has 1024 entries and a fork is slow under TCG)
v2_at() {
	local g t d=/sys/class/infiniband/rxe0/ports/1
	read -r g < "$d/gids/$1" 2> /dev/null &&
		read -r t < "$d/gid_attrs/types/$1" 2> /dev/null &&
		[ "$g" = "$GID" ] && [ "$t" = "RoCE v2" ]
}
on_veth0() { ip -4 addr show dev veth0 | grep -q "inet $A/32 "; }
policy_conf "socket_dir = $T/vm" "cgroup_parent = /rdmagate" \
	"worker_ids = 62300-62309" -- "device = rxe0" "max_pinned = 4M" <<EOF
[vm a]
addresses = $A
[vm r]
addresses = $R
EOF
OUT=$T/hostile
mkdir -m 1777 "$OUT"
install -m 644 "$HOSTILE" "$T/hostile-worker.py"
WORKER=$T/worker-wrap
cat > "$WORKER" <<EOF
#!/bin/sh
[ "\$2" = a ] && exec /usr/bin/python3 "$T/hostile-worker.py" reclaim "$OUT"
exec "$REAL_WORKER" "\$@"
EOF
chmod 755 "$WORKER"

if ! broker_start "$T/broker.log" --state-dir "$T/state"; then
	not_ok "broker is up: $(tail -n 5 "$T/broker.log")"
	tap_end
	exit 1
fi
ok "broker is up"
out=$(ctl spawn --vm a --socket "$T/a.sock" 2>&1)
check "spawn a (hostile): $out" grep -q "worker/a: pid" <<<"$out"
check "a's RoCE v2 claim of $A is answered" wait_for 20 test -s "$OUT/v2"
check "... granted: $(cat "$OUT/v2" 2> /dev/null)" grep -q "^0 " "$OUT/v2"
IDX=$(cut -d' ' -f2 "$OUT/v2" 2> /dev/null)
check "$A is on veth0" wait_for 5 on_veth0
check "its v2 GID is in rxe0's table at index ${IDX:-?}" v2_at "${IDX:-x}"
touch "$OUT/go-v1"
check "the RoCE v1 re-claim is answered" wait_for 20 test -s "$OUT/v1"
check "... refused (rxe lists no v1 GID): $(cat "$OUT/v1" 2> /dev/null)" \
	not grep -q "^0 " "$OUT/v1"
# the broker removed the address right after its (ETIMEDOUT) reply
sleep 1
check "$A is still on veth0" on_veth0
check "the live v2 GID is still in rxe0's table" v2_at "${IDX:-x}"
check "the broker did not remove the address" \
	not grep -q "^broker: .*removed $A " "$T/broker.log"
touch "$OUT/go-v2"
check "a v2 re-claim is still answered from the table" \
	wait_for 10 test -s "$OUT/v2again"
check "... granted, same index: $(cat "$OUT/v2again" 2> /dev/null)" \
	test "$(cat "$OUT/v2again" 2> /dev/null)" = "$(cat "$OUT/v2" 2> /dev/null)"
check "the state record still lists $A" \
	grep -q "^addr $A\$" "$T/state/workers/a.state"

out=$(ctl stop --vm a 2>&1)
check "stop a: $out" wait_for 10 not vm_listed a
check "stopping a removes $A" \
	wait_for 5 not on_veth0
# ---- through the real worker: a guest's ADD_GID v2, then v1 --------------
lines=$(wc -l < "$T/broker.log")
out=$(ctl spawn --vm r --socket "$T/r.sock" 2>&1)
check "spawn r (the real worker): $out" grep -q "worker/r: pid" <<<"$out"
rc=0
timeout 100 "$GUEST" --socket "$T/r.sock" --ram 16M --gid "1=::ffff:$R" \
	--gid "2=::ffff:$R,v1" rc_pingpong -g 1 -p 18700 > "$T/r.guest" 2>&1 ||
	rc=$?
check "the guest's v1 ADD_GID of its v2 address fails (exit $rc): $(grep -i gid "$T/r.guest" | head -n 1)" \
	grep -q "ADD_GID 2" "$T/r.guest"
# the broker's refusal comes after its 2 s wait for v1 (the worker waits
# 2.5 s, and keeps the address it holds as v2 if it gives up first)
check "the broker refused it and kept the address" \
	wait_for 5 eval 'tail -n +$((lines + 1)) "$T/broker.log" |
		grep -q "^broker: warning: worker/r: GID $R refused: no RoCE v1 GID .* the address stays"'
check "it did not remove the address for the failed claim" \
	not eval 'tail -n +$((lines + 1)) "$T/broker.log" |
		grep -q "^broker: .*$R did not appear"'

echo "1..$n"
if [ "$failed" != 0 ]; then
	echo "# broker log:"
	sed 's/^/# /' "$T/broker.log"
fi
[ "$failed" = 0 ]
