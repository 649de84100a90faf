#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The reference for behaviour (issue 13 item 6): the nested guest under
# bookworm's QEMU 7.2 with its own in-process pvrdma on rxe0, its MADs
# through rdmagate-mux, attached by the real broker (frontend qemu-pvrdma,
# broker/qemu_pvrdma.c), the guest's upstream vmw_pvrdma driver: inside the
# guest ibv_devinfo shows the device and its GID, and ibv_rc_pingpong runs
# against a native peer on the test VM's rxe1.  The same guest as
# pvrdma-tools; only the VMM and its PVRDMA device differ.
#
# Usage: qemu72-pvrdma.sh BROKER RDMAGATECTL WORKER MUX  (TAP; on the host it
# boots the test VM, which boots the nested guest: the same script runs at
# the three levels)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"
GUEST_IP=10.99.2.2 PEER_IP=10.99.0.2 PORT=18720

# ---- level 3, the nested guest: facts as key=value lines
in_guest() {
	local dev='' n idx rc
	for n in /sys/class/infiniband/*; do
		[ -e "$n" ] && dev=${n##*/}
	done
	echo "ib_device=$dev"
	[ -n "$dev" ] || return 0
	ibv_devinfo -v -d "$dev" > /tmp/devinfo 2>&1
	echo "ibv_devinfo_rc=$?"
	grep -q "hca_id:.*$dev" /tmp/devinfo && echo "devinfo_names_it=1"
	grep -q "PORT_ACTIVE" /tmp/devinfo && echo "port_active=1"
	idx=$(v2_gid "$dev" "$GUEST_IP") && echo "guest_gid_index=$idx"
	grep -q "GID\[ *$idx\]:.*10\.99\.2\.2" /tmp/devinfo &&
		echo "devinfo_shows_gid=1"
	sed 's/^/devinfo: /' /tmp/devinfo | grep -E "hca_id|transport|fw_ver|vendor_part|state|GID" | head -n 12
	[ -n "$idx" ] || return 0
	timeout 300 ibv_rc_pingpong -d "$dev" -g "$idx" -p "$PORT" -n 10 \
		"$PEER_IP" > /tmp/rc 2>&1
	rc=$?
	echo "rc_pingpong_rc=$rc"
	sed 's/^/rc_pingpong: /' /tmp/rc
}

# ---- level 2, the test VM: the broker attaches the VM, the guest runs
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4
	local T rc pidx mpid bpid spid t0 out
	T=$(mktemp -d /run/qemu72-pvrdma.XXXXXX)
	qemu72_stack "$T" "$GUEST_IP" "$BROKER" "$WORKER" "$MUX"
	mpid=$Q72_MUX_PID bpid=$Q72_BROKER_PID
	out=$("$CTL" --control "$T/control.sock" spawn --vm g72 2>&1)
	check "the broker attached g72 (frontend qemu-pvrdma): $out" \
		grep -q "QEMU pvrdma attached to the mux" <<<"$out"
	check "the mux serves its socket" \
		wait_grep "$T/mux.log" "vm g72 (worker 1): rdmacm-mux endpoint" 30
	check "the guest's $GUEST_IP is a RoCE v2 GID of $RDMAGATE_VM_DEV0" \
		eval 'v2_gid "$RDMAGATE_VM_DEV0" "$GUEST_IP" > /dev/null'
	check "the fabric and the guest GID's routes are set up" \
		bash -c '"$1/nested-guest" --setup-fabric && . "$1/lib.sh" &&
			fabric_guest_gid "$2"' _ "$here" "$GUEST_IP"
	# the native peer: rxe1 serves, the guest connects
	pidx=$(v2_gid "$RDMAGATE_VM_DEV1" "$PEER_IP")
	timeout 1500 ibv_rc_pingpong -d "$RDMAGATE_VM_DEV1" -g "${pidx:-1}" \
		-p "$PORT" -n 10 > "$T/rc-server" 2>&1 &
	spid=$!
	t0=$(now_ms)
	"$here/nested-guest" --qemu72-pvrdma "$T/vm/g72.sock" \
		-- "$here/qemu72-pvrdma.sh" --in-guest > "$T/facts" 2> "$T/err"
	rc=$?
	echo "# nested guest under QEMU 7.2: $(( $(now_ms) - t0 )) ms in total"
	grep -h 'boot-to-command' "$T/err" | diag
	check "the nested guest ran under QEMU 7.2 with pvrdma (status $rc)" [ "$rc" = 0 ]
	fact() { grep -qx "$1" "$T/facts"; }
	check "the guest has an RDMA device ($(sed -n 's/^ib_device=//p' "$T/facts"))" \
		bash -c '! grep -qx "ib_device=" "$1" && grep -q "^ib_device=" "$1"' _ "$T/facts"
	check "ibv_devinfo runs and names it" \
		bash -c 'grep -qx ibv_devinfo_rc=0 "$1" && grep -qx devinfo_names_it=1 "$1"' _ "$T/facts"
	check "its port is active" fact port_active=1
	check "ibv_devinfo shows the guest's GID ($GUEST_IP)" fact devinfo_shows_gid=1
	check "QEMU registered it through the mux" \
		grep -q "vm g72 (worker 1): QEMU registered ::ffff:$GUEST_IP" "$T/mux.log"
	check "ibv_rc_pingpong in the guest against native rxe1 (status $(sed -n 's/^rc_pingpong_rc=//p' "$T/facts"))" \
		fact rc_pingpong_rc=0
	# a guest that never connected: the peer would wait out its timeout
	grep -q '^rc_pingpong_rc=' "$T/facts" || kill "$spid" 2>/dev/null
	wait "$spid"
	rc=$?
	check "the native peer completed too (status $rc)" [ "$rc" = 0 ]
	grep -h "bytes in" "$T/facts" "$T/rc-server" | diag
	out=$("$CTL" --control "$T/control.sock" stop --vm g72 2>&1)
	check "stop g72: $out" grep -q detached <<<"$out"
	check "the guest's address left $RDMAGATE_VM_DEV0's table" \
		bash -c '! grep -qi "ffff:0a63:0202" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null' _ "$RDMAGATE_VM_DEV0"
	kill "$bpid" "$mpid" 2>/dev/null
	wait "$bpid" "$mpid" 2>/dev/null
	grep -E "refused|REG" "$T/mux.log" | diag
	if [ "$failed" != 0 ]; then
		cat "$T/facts" "$T/err" "$T/rc-server" "$T/broker.log" "$T/mux.log" 2>/dev/null | tail -n 120 | diag
	fi
	rm -rf "$T"
	tap_end
}

case ${1:-} in
--in-guest) in_guest; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host (the mux owns the CM class: no ib_cm in the VM)
[ $# = 4 ] || { echo "usage: $0 BROKER RDMAGATECTL WORKER MUX" >&2; exit 2; }
GUEST_VM_OPTS=(--no-cm)
guest_run_in_test_vm 1700 "$here/qemu72-pvrdma.sh" --in-vm "$@"
