#!/bin/bash
# SPDX-License-Identifier: MIT
# vm test of rdmagate-mux (docs/mux.md), inside rdmagate-vm.
#   mux-vm.sh route MUX CHECK      (--no-cm -n 2)
#   mux-vm.sh cm-taken MUX CHECK   (default VM, ib_cm loaded)
#   mux-vm.sh rdmacm MUX CHECK ELF (--no-cm -n 2; CHECK is rdmacm-vm-check,
#                                   ELF pvrdma-bind)
# For "route" and "rdmacm" it gives the two workers' guests their own addresses,
# fd99::10 on veth0 (rxe0) and fd99::11 on veth1 (rxe1), routed across the
# veth pair the way rdmagate-vm routes its own two addresses (policy rules
# for locally generated packets before the local table, permanent
# neighbours), then runs mux-vm-check, which plays the broker and the
# workers.
set -eu
mode=$1 mux=$2 check=$3
if [ "$mode" = route ] || [ "$mode" = rdmacm ]; then
	n0=$RDMAGATE_VM_NETDEV0 n1=$RDMAGATE_VM_NETDEV1
	mac0=$(cat /sys/class/net/"$n0"/address)
	mac1=$(cat /sys/class/net/"$n1"/address)
	echo "setup: fd99::10 on $n0, fd99::11 on $n1, routed across the pair"
	ip -6 -batch - <<END
addr add fd99::10/64 dev $n0 nodad
addr add fd99::11/64 dev $n1 nodad
rule add pref 11 iif lo to fd99::11 lookup 110
route add fd99::11 dev $n0 src fd99::10 table 110
rule add pref 11 iif lo to fd99::10 lookup 111
route add fd99::10 dev $n1 src fd99::11 table 111
neigh replace fd99::11 lladdr $mac1 dev $n0 nud permanent
neigh replace fd99::10 lladdr $mac0 dev $n1 nud permanent
END
fi
if [ "$mode" = rdmacm ]; then
	exec "$check" "$mux" "$4"
fi
exec "$check" "$mode" "$mux"
