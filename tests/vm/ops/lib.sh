# SPDX-License-Identifier: MIT
# Shared by the tests/vm/ops tests (sourced, inside rdmagate-vm --no-cm -n 2):
# the stack's helpers (../stack-lib.sh: a broker started with --mux,
# rdmagate-mux), two VMs a (rxe0, fd99::10) and b (rxe1, fd99::11) routed
# across the veth pair, helpers. Expects BROKER, CTL, WORKER, GUEST, MUX set.
[ "${RDMAGATE_VM:-}" = 1 ] || { echo "1..0 # SKIP not inside rdmagate-vm"; exit 0; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "1..0 # SKIP needs rdmagate-vm -n 2"; exit 0; }
STACK_NAME=ops-test
. "$(dirname "${BASH_SOURCE[0]}")/../stack-lib.sh"
. "$(dirname "${BASH_SOURCE[0]}")/../host-gid.sh" # has_v2, v2_index

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

policy_conf -- "max_pinned = 64M" <<END
[vm a]
device = rxe0
addresses = $A
[vm b]
device = rxe1
addresses = $B
END

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
