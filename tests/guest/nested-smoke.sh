#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The nested guest's smoke test: QEMU 11.1 inside the test VM boots Debian's
# kernel with vmxnet3 and the built vmw_pvrdma, the 9p root and the verbs
# tools work, and the vmxnet3 NIC reaches the test VM's rxe addresses.
#
# Usage: nested-smoke.sh  (TAP; on the host, it boots the test VM, which
# boots the nested guest: the same script runs at the three levels)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

# ---- level 3, the nested guest: facts as key=value lines. Each program
# started costs seconds in TCG inside TCG: builtins wherever they do.
in_guest() {
	local m n rest mnt fs devs=() fns=()
	while read -r m rest; do
		case $m in vmxnet3|vmw_pvrdma|ib_uverbs) echo "module_$m=1" ;; esac
	done < /proc/modules
	while read -r _ mnt fs rest; do
		[ "$mnt" != / ] || echo "root_fs=$fs"
	done < /proc/self/mounts
	for n in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_lat rping; do
		command -v "$n" > /dev/null && echo "tool_$n=1"
	done
	ibv_devices > /tmp/devs 2>&1
	echo "ibv_devices_rc=$?"
	for n in /sys/class/infiniband/*; do
		[ -e "$n" ] && devs+=("${n##*/}")
	done
	echo "ib_devices=${devs[*]}"
	for n in /sys/bus/pci/devices/0000:00:10.*; do
		[ -e "$n" ] && fns+=("${n##*/}")
	done
	echo "slot_functions=${fns[*]}"
	echo "netdev=$RDMAGATE_GUEST_NETDEV"
	busybox ping -c 1 -W 20 "$RDMAGATE_GUEST_GW" > /dev/null 2>&1 &&
		echo "ping_gateway=1"
	busybox ping -c 1 -W 20 10.99.0.2 > /dev/null 2>&1 && echo "ping_rxe1=1"
	read -r n rest < /proc/uptime
	echo "guest_uptime=$n"
}

# ---- level 2, the test VM: boot the nested guest, check its facts
in_vm() {
	local t0 rc f gidx
	f=$(mktemp -d)
	# the guest's address is a GID on rxe0's netdev, as with the PVRDMA
	# device; the guest must still be reachable (fabric_guest_gid)
	check "the fabric and the guest GID's routes are set up" \
		bash -c '"$1/nested-guest" --setup-fabric && . "$1/lib.sh" &&
			fabric_guest_gid 10.99.2.2' _ "$here"
	t0=$(now_ms)
	"$here/nested-guest" -- "$here/nested-smoke.sh" --in-guest \
		> "$f/facts" 2> "$f/err"
	rc=$?
	echo "# nested guest run: $(( $(now_ms) - t0 )) ms in total"
	grep -h 'boot-to-command' "$f/err" | diag
	check "the nested guest ran its command (status $rc)" [ "$rc" = 0 ]
	fact() { grep -qx "$1" "$f/facts"; }
	check "vmxnet3 is loaded in the guest" fact module_vmxnet3=1
	check "the built vmw_pvrdma.ko is loaded in the guest" fact module_vmw_pvrdma=1
	check "the guest's / is the test VM's, over 9p" fact root_fs=9p
	check "ibverbs-utils, perftest and rdmacm-utils are there" \
		bash -c 'grep -q tool_ibv_rc_pingpong=1 "$1" &&
			grep -q tool_ib_write_lat=1 "$1" && grep -q tool_rping=1 "$1"' _ "$f/facts"
	check "ibv_devices runs in the guest" fact ibv_devices_rc=0
	# no vfio-user server: function 1 and so the PVRDMA device are absent
	check "without a vfio-user server the guest has no RDMA device" fact 'ib_devices='
	check "slot 0x10 holds only the vmxnet3 function" fact 'slot_functions=0000:00:10.0'
	check "the vmxnet3 NIC reaches the test VM through tap0" fact ping_gateway=1
	check "the guest reaches rxe1's address (10.99.0.2), routed" fact ping_rxe1=1
	# RoCE to the guest's GID goes to rxe0 (the worker's device), not to
	# the guest's vmxnet3: rxe0 serves on that GID, rxe1 connects
	gidx=$(gid_index rxe0 10.99.2.2)
	check "the guest's address is a GID of rxe0 (index $gidx)" [ -n "$gidx" ]
	timeout 60 ibv_rc_pingpong -d rxe0 -g "${gidx:-0}" -p 18600 -n 10 \
		> "$f/rc-server" 2>&1 &
	sleep 1
	check "RoCE from rxe1 to the guest's GID reaches rxe0" bash -c \
		'timeout 60 ibv_rc_pingpong -d rxe1 -g 1 -p 18600 -n 10 10.99.0.1 \
			> "$1" 2>&1' _ "$f/rc-client"
	wait $!
	rc=$?
	check "... and rxe0 answers from it (server status $rc)" [ "$rc" = 0 ]
	if [ "$failed" != 0 ]; then
		cat "$f/facts" "$f/err" "$f"/rc-* 2>/dev/null | diag
	fi
	rm -rf "$f"
	tap_end
}

case ${1:-} in
--in-guest) in_guest; exit 0 ;;
--in-vm) in_vm; exit ;;
esac

# ---- level 1, the host
guest_run_in_test_vm 1100 "$here/nested-smoke.sh" --in-vm
