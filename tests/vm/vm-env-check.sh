#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm-env-check: runs inside the test VM and checks what the harness promised:
# modules (with or without the CM ones), cgroup2 with the rdma controller,
# bpffs, the RDMAGATE_VM_* variables against the devices, GIDs and addresses
# that really exist, the writable share, the read-only host root.
# Usage: vm-env-check.sh cm|nocm   (nocm: the VM was booted with --no-cm)
set -u
. "$(dirname "$0")/host-gid.sh" # has_gid, v4_gid

want_cm=${1:-}
case $want_cm in cm|nocm) ;; *) echo "usage: $0 cm|nocm" >&2; exit 2 ;; esac
[ "${RDMAGATE_VM:-}" = 1 ] || { echo "vm-env-check: not inside rdmagate-vm" >&2; exit 1; }

failures=0
ok() { echo "  ok  $*"; }
bad() { echo "  FAIL $*"; failures=$((failures + 1)); }
check() {	# check DESCRIPTION COMMAND...
	local what=$1; shift
	if "$@" > /dev/null 2>&1; then ok "$what"; else bad "$what"; fi
}
loaded() { [ -d "/sys/module/$1" ]; }
mounted() {	# mounted TYPE DIR
	local dev dir type rest
	while read -r dev dir type rest; do
		[ "$dir" = "$2" ] && [ "$type" = "$1" ] && return 0
	done < /proc/mounts
	return 1
}
# sysfs spelling of an IPv6 address, e.g. fd99:0000:...:0001 for fd99::1
v6_gid() {
	local head=$1 tail='' n i out='' h t
	if [[ $1 == *::* ]]; then head=${1%%::*} tail=${1#*::}; fi
	IFS=: read -ra h <<< "$head"
	IFS=: read -ra t <<< "$tail"
	n=$((8 - ${#h[@]} - ${#t[@]}))
	for i in "${h[@]}"; do out+=$(printf '%04x:' "0x$i"); done
	for ((i = 0; i < n; i++)); do out+=0000:; done
	for i in "${t[@]}"; do out+=$(printf '%04x:' "0x$i"); done
	echo "${out%:}"
}

if [ "$want_cm" = cm ]; then echo "== kernel modules (default boot: CM modules expected) =="; else echo "== kernel modules (booted with --no-cm: no CM modules expected) =="; fi
for m in ib_core ib_uverbs ib_umad rdma_rxe; do
	check "$m loaded" loaded "$m"
done
for m in ib_cm iw_cm rdma_cm rdma_ucm; do
	if [ "$want_cm" = cm ]; then
		check "$m loaded" loaded "$m"
	else
		check "$m not loaded" test ! -d "/sys/module/$m"
	fi
done
if [ "$want_cm" = nocm ]; then
	check "no /dev/infiniband/rdma_cm" test ! -e /dev/infiniband/rdma_cm
else
	check "/dev/infiniband/rdma_cm exists" test -c /dev/infiniband/rdma_cm
fi

echo "== cgroup2 and bpffs =="
check "cgroup2 mounted on /sys/fs/cgroup" mounted cgroup2 /sys/fs/cgroup
check "rdma in cgroup.controllers" grep -qw rdma /sys/fs/cgroup/cgroup.controllers
check "rdma in the root's cgroup.subtree_control" \
	grep -qw rdma /sys/fs/cgroup/cgroup.subtree_control
cg=/sys/fs/cgroup/vm-env-check.$$
if mkdir "$cg" 2>/dev/null; then
	check "a child cgroup has rdma.max" test -e "$cg/rdma.max"
	rmdir "$cg"
else
	bad "cannot create a child cgroup"
fi
check "bpffs mounted on /sys/fs/bpf" mounted bpf /sys/fs/bpf

echo "== devices, addresses, GIDs =="
ndev=${RDMAGATE_VM_NDEV:-}
have=$(ls /sys/class/infiniband 2>/dev/null | wc -l)
check "RDMAGATE_VM_NDEV=$ndev matches $have device(s) in /sys/class/infiniband" \
	test "$ndev" = "$have"
listed=$(ibv_devices 2>/dev/null | awk 'NR > 2 { print $1 }' | sort | tr '\n' ' ')
expect=
for ((i = 0; i < ndev; i++)); do
	dev=RDMAGATE_VM_DEV$i nd=RDMAGATE_VM_NETDEV$i ip=RDMAGATE_VM_IP$i ip6=RDMAGATE_VM_IP6_$i
	dev=${!dev:-} nd=${!nd:-} ip=${!ip:-} ip6=${!ip6:-}
	expect+="$dev "
	check "$dev exists, port 1 ACTIVE" grep -q ACTIVE "/sys/class/infiniband/$dev/ports/1/state"
	check "$dev is on netdev $nd" grep -qx "$nd" "/sys/class/infiniband/$dev/ports/1/gid_attrs/ndevs/0"
	check "/dev/infiniband/uverbs$i exists" test -c "/dev/infiniband/uverbs$i"
	check "$nd has $ip" bash -c "ip -o -4 addr show dev $nd | grep -q ' $ip/'"
	check "$nd has $ip6" bash -c "ip -o -6 addr show dev $nd | grep -q ' $ip6/'"
	check "$dev has the IPv4-mapped GID of $ip" has_gid "$dev" "$(v4_gid "$ip")"
	check "$dev has the GID $ip6" has_gid "$dev" "$(v6_gid "$ip6")"
done
check "ibv_devices lists exactly: ${expect:-nothing}" test "$listed" = "$expect"
[ "$ndev" -lt 2 ] || check "$RDMAGATE_VM_IP1 is routed over $RDMAGATE_VM_NETDEV0, not lo" \
	bash -c "ip route get $RDMAGATE_VM_IP1 | grep -q 'dev $RDMAGATE_VM_NETDEV0'"

echo "== file systems =="
check "the host's / is read-only" bash -c '! touch /usr/.rdmagate-vm-probe'
check "/etc is writable (copy-on-write)" bash -c 'echo x > /etc/.rdmagate-vm-probe'
check "/tmp is writable" bash -c 'echo x > /tmp/.rdmagate-vm-probe'
if [ -n "${RDMAGATE_BUILD:-}" ]; then
	probe=$RDMAGATE_BUILD/.vm-env-check.$$
	check "the build directory $RDMAGATE_BUILD is writable" bash -c "echo x > $probe && rm $probe"
else
	bad "RDMAGATE_BUILD was not passed into the VM"
fi
check "RLIMIT_MEMLOCK is unlimited" test "$(ulimit -l)" = unlimited

if [ "$failures" != 0 ]; then
	echo "vm-env-check: $failures check(s) FAILED"
	exit 1
fi
echo "vm-env-check: all checks passed"
