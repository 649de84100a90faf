#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The PVRDMA device end to end with unmodified tools: the nested guest's
# vmw_pvrdma driver on QEMU 11.1's vfio-user-pci, served by WORKER on the
# test VM's rxe0, against native peers on rxe1, in both directions.
#
# Usage: pvrdma.sh --worker 'COMMAND'  (TAP; on the host)
#   COMMAND starts the vfio-user server inside the test VM, in the
#   foreground; '{socket}' in it is replaced by the socket path QEMU 11.1
#   connects to and '{device}' by the host device (rxe0), e.g.
#   --worker "$RDMAGATE_BUILD/worker/rdmagate-worker --frontend pvrdma \
#             --device {device} --socket {socket}"
# (the option names of wip/pvrdma's worker when this was written)
# The guest's GID (its vmxnet3 address) is added to rxe0's netdev here, as
# the broker would; see fabric_guest_gid in lib.sh for the routes.
#
# Not registered in the guest suite until the PVRDMA frontend exists.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

GUEST_IP=10.99.2.2 PEER_IP=10.99.0.2 PEER_DEV=rxe1 PEER_GID=1 ITERS=20
# tool: port (one native server each, before the guest boots)
declare -A PORT=([ibv_rc_pingpong]=18515 [ibv_ud_pingpong]=18516
	[ibv_srq_pingpong]=18517 [ib_write_lat]=18518 [ib_write_bw]=18519
	[ib_send_lat]=18520)
REVERSE_PORT=18530
FORWARD=(ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong ib_write_lat
	ib_write_bw ib_send_lat)

# the verbs tools' options: device, GID index, port, iterations
tool_args() { # TOOL DEV GIDX PORT
	case $1 in
	ib_*) echo "-d $2 -x $3 -p $4 -n $ITERS" ;;
	*) echo "-d $2 -g $3 -p $4 -n $ITERS" ;;
	esac
}

# ---- level 3, the nested guest: facts as key=value lines
in_guest() {
	local T=$1 dev gidx t rc
	dev=$(ibv_devices | awk 'NR > 2 { print $1; exit }')
	echo "device=$dev"
	[ -n "$dev" ] || return 0
	ibv_devinfo -v -d "$dev" > /tmp/devinfo 2>&1
	echo "devinfo_rc=$?"
	grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo && echo "port_active=1"
	grep -q 'hca_id:.*vmw_pvrdma\|transport:.*InfiniBand' /tmp/devinfo &&
		echo "devinfo_lists=1"
	gidx=$(gid_index "$dev" "$GUEST_IP")
	echo "gid_index=$gidx"
	[ -n "$gidx" ] || { cat /tmp/devinfo >&2; return 0; }
	for t in "${FORWARD[@]}"; do
		timeout 300 "$t" $(tool_args "$t" "$dev" "$gidx" "${PORT[$t]}") \
			"$PEER_IP" > "/tmp/$t.out" 2>&1
		rc=$?
		echo "forward_$t=$rc"
		[ "$rc" = 0 ] || sed "s/^/$t: /" "/tmp/$t.out" >&2
	done
	# the reverse direction: the guest serves, the test VM's rxe1 connects
	timeout 600 ibv_rc_pingpong $(tool_args ibv_rc_pingpong "$dev" "$gidx" \
		"$REVERSE_PORT") > /tmp/reverse.out 2>&1 &
	local srv=$!
	sleep 1
	: > "$T/guest-listening"
	wait "$srv"
	rc=$?
	echo "reverse_server=$rc"
	[ "$rc" = 0 ] || sed 's/^/reverse: /' /tmp/reverse.out >&2
}

# ---- level 2, the test VM: worker, native peers, the nested guest
in_vm() {
	local cmd=$1 T S t wp rc
	T=$(mktemp -d "$RDMAGATE_BUILD/pvrdma-test.XXXXXX")
	# the socket on the test VM's own file system: bind() on the 9p share
	# fails with ENXIO
	S=$(mktemp -d /tmp/pvrdma-sock.XXXXXX)/pvrdma.sock || exit 125
	"$here/nested-guest" --setup-fabric || exit 125
	fabric_guest_gid "$GUEST_IP" || { echo "cannot route the guest's GID" >&2; exit 125; }
	# rxe adds the GID ~1 s after the address; a worker without a broker
	# reads the host's GID table once, at start, as it is then
	gid_index rxe0 "$GUEST_IP" > /dev/null ||
		{ echo "rxe0 has no GID for $GUEST_IP" >&2; exit 125; }
	cmd=${cmd//\{socket\}/$S}
	cmd=${cmd//\{device\}/rxe0}
	bash -c "exec $cmd" > "$T/worker.log" 2>&1 &
	wp=$!
	check "the vfio-user server listens" wait_file "$S" 30
	declare -A srv
	for t in "${FORWARD[@]}"; do
		timeout 1400 "$t" $(tool_args "$t" "$PEER_DEV" "$PEER_GID" \
			"${PORT[$t]}") > "$T/native-$t.out" 2>&1 &
		srv[$t]=$!
	done
	(
		wait_file "$T/guest-listening" 1400 || exit 1
		wait_cmd 60 timeout 120 ibv_rc_pingpong $(tool_args ibv_rc_pingpong \
			"$PEER_DEV" "$PEER_GID" "$REVERSE_PORT") "$GUEST_IP"
	) > "$T/native-reverse.out" 2>&1 &
	local rev=$!
	"$here/nested-guest" --vfio-user "$S" -- "$here/pvrdma.sh" --in-guest "$T" \
		> "$T/facts" 2> "$T/err"
	rc=$?
	grep -h 'boot-to-command' "$T/err" | diag
	check "the nested guest ran its command (status $rc)" [ "$rc" = 0 ]
	fact() { grep -qx "$1" "$T/facts"; }
	check "the guest lists a PVRDMA device" bash -c '! grep -qx device= "$1"' _ "$T/facts"
	check "ibv_devinfo shows it" fact devinfo_lists=1
	check "its port is ACTIVE" fact port_active=1
	check "its GID table has ::ffff:$GUEST_IP" bash -c '! grep -qx gid_index= "$1"' _ "$T/facts"
	for t in "${FORWARD[@]}"; do
		wait "${srv[$t]}"
		check "$t guest -> native rxe1: client ok, server status $?" \
			fact "forward_$t=0"
	done
	wait "$rev"
	rc=$?
	check "ibv_rc_pingpong native rxe1 -> guest: client status $rc" [ "$rc" = 0 ]
	check "ibv_rc_pingpong native rxe1 -> guest: guest server ok" fact reverse_server=0
	check "the worker is still running" kill -0 "$wp"
	kill "$wp" 2>/dev/null
	wait "$wp" 2>/dev/null
	if [ "$failed" != 0 ]; then
		for f in facts err worker.log native-reverse.out; do
			echo "# --- $f"
			diag < "$T/$f"
		done
	fi
	rm -rf "$T" "${S%/*}"
	tap_end
}

case ${1:-} in
--in-guest) in_guest "$2"; exit 0 ;;
--in-vm) in_vm "$2"; exit ;;
--worker) [ $# -ge 2 ] || { echo "usage: pvrdma.sh --worker 'COMMAND'" >&2; exit 2; } ;;
*) echo "usage: pvrdma.sh --worker 'COMMAND'" >&2; exit 2 ;;
esac

# ---- level 1, the host
guest_run_in_test_vm 2400 "$here/pvrdma.sh" --in-vm "$2"
