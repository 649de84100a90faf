#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm --no-cm -n 2): a PVRDMA VM on the operator's
# path, in TAP.  rdmagate-mux and the broker with the unit's options
# (--policy, --mux); the libvirt hook given the domain XML
# tests/host/hook/domains/vm-p-pvrdma.xml spawns the VM's worker (policy
# frontend = pvrdma: vfio-user, sandboxed, its own uid, its socket the VM's
# QEMU identity's); the guest simulator as that identity plays QEMU's
# vfio-user-pci and vmw_pvrdma: its GID added by the broker, connected RC
# ping-pong with a native peer on rxe1 both ways; another uid is refused;
# the hook's release end leaves no worker, socket, cgroup, address or GID.
# Usage: pvrdma-broker.sh BROKER RDMAGATECTL WORKER GUEST MUX HOOK
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5 HOOK=$6
T0=$SECONDS
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pvrdma-lib.sh"
for t in ibv_rc_pingpong setpriv; do
	command -v $t > /dev/null || skip_all "no $t"
done

start_watchdog 330
start_services
if ! op_started; then
	dump | diag
	tap_end
	exit 1
fi
check "$OP_VM's worker got its mux channel" \
	wait_for 60 in_log "$T/broker.log" "worker/$OP_VM: mux channel handed over"
elapsed "worker spawned by the hook"

# the native peer: its own address B on rxe1's netdev, routed to the
# guest's across the veth pair
B=10.99.0.11
ip addr add "$B/32" dev "$RDMAGATE_VM_NETDEV1"
route_pair "$OP_ADDR" "$B"
GB=$(v4_gid "$B")
wait_for 10 has_v2 "$RDMAGATE_VM_DEV1" "$GB"
gidx_n=$(v2_index "$RDMAGATE_VM_DEV1" "$GB")
check "the native peer's GID $B is index ${gidx_n:-none} of $RDMAGATE_VM_DEV1" \
	test -n "$gidx_n"

# guest ARGS...: the simulated PVRDMA guest as the VM's QEMU identity
guest() {
	op_as_vmm timeout 150 "$GUEST" --transport pvrdma --socket "$OP_SOCK" \
		--gid "1=::ffff:$OP_ADDR" "$@"
}
out=$(setpriv --reuid $((OP_VMM + 1)) --regid $((OP_VMM + 1)) \
	--clear-groups -- timeout 60 "$GUEST" --transport pvrdma \
	--socket "$OP_SOCK" probe 2>&1)
check "another uid cannot reach the worker: $(tail -n 1 <<< "$out")" \
	grep -q 'Permission denied' <<< "$out"

# pingpong SERVER SIZE: rc_pingpong, 200 round trips of SIZE bytes between
# the guest and the native peer, SERVER (guest or native) serving; the
# client reaches a guest server at the guest's address (the broker adds it
# to rxe0's netdev), the native one at B
pingpong() {
	local srv=$1 f=$T/rc-$1-$2 rs rc client
	local g=(guest rc_pingpong -g 1 -n 200 -s "$2")
	local nat=(timeout 120 ibv_rc_pingpong -d "$RDMAGATE_VM_DEV1"
		-g "${gidx_n:-0}" -n 200 -s "$2")
	if [ "$srv" = guest ]; then
		"${g[@]}" > "$f.server" 2>&1 &
		client=("${nat[@]}" "$OP_ADDR")
	else
		"${nat[@]}" > "$f.server" 2>&1 &
		client=("${g[@]}" "$B")
	fi
	PIDS=$!
	wait_for 60 tcp_listening 18515
	if [ "$srv" = guest ]; then
		check "the broker added the guest's GID to $RDMAGATE_VM_DEV0 (index $(v2_index "$RDMAGATE_VM_DEV0" "$OP_GID"))" \
			has_v2 "$RDMAGATE_VM_DEV0" "$OP_GID"
		check "... as an address of $RDMAGATE_VM_NETDEV0" \
			grep -q "inet $OP_ADDR/32" < <(ip -4 -o addr show dev "$RDMAGATE_VM_NETDEV0")
	fi
	"${client[@]}" > "$f.client" 2>&1
	rc=$?
	wait "$PIDS"
	rs=$?
	PIDS=
	check "rc: $srv serving, 200 x $2 B (exit: server $rs, client $rc): $(tail -n 1 "$f.client")" \
		test "$rs" = 0 -a "$rc" = 0
	check "... both sides did 200 round trips" bash -c \
		'grep -q "200 iters" "$1.server" && grep -q "200 iters" "$1.client"' _ "$f"
}
elapsed "guest server"
pingpong guest 4096
elapsed "guest client"
pingpong native 8192
out=$(ctl stats --vm "$OP_VM" --json)
check "the worker counted its VMM connections: $(jq -c '.[0] | {connects, gid_adds}' <<< "$out" 2>/dev/null)" \
	test "$(jq '.[0].connects >= 2' <<< "$out")" = true

elapsed "release"
op_stopped
elapsed "done"
[ "$failed" = 0 ] || dump | diag
tap_end
