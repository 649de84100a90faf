# SPDX-License-Identifier: MIT
# Shared by the rdma-guest vm tests, bench.sh and rdma-trace: start workers,
# find GIDs.
# Sourced by bash, with tests/lib.sh (wait_for, tcp_listening, on_exit,
# stop). RDMAGATE_BUILD (meson's test_env sets it) defaults to the
# repository's build/ (what ./dev build makes).

: "${RDMAGATE_BUILD:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)/build}"
WORKER=$RDMAGATE_BUILD/worker/rdmagate-worker
GUEST=$RDMAGATE_BUILD/guest/rdmagate-guest
# The device the simulated guests drive: virtio-rdma (the workers' default
# vhost-user frontend) or pvrdma (the workers' vfio-user frontend); the
# tests of tests/vm/pvrdma-guest run these scripts with RG_TRANSPORT=pvrdma.
: "${RG_TRANSPORT:=virtio-rdma}"
# /run: a tmpfs in the test VM (/tmp is the host's when run from /tmp)
RG_DIR=$(mktemp -d /run/rdma-guest.XXXXXX)
RG_PIDS=""
. "$(dirname "${BASH_SOURCE[0]}")/../../lib.sh"
on_exit 'rm -rf "$RG_DIR"'
on_exit 'stop $RG_PIDS'

. "$(dirname "${BASH_SOURCE[0]}")/../host-gid.sh"

# start_worker [-t TRANSPORT] NAME DEV [WORKER OPTIONS]: a worker on DEV
# listening on $RG_DIR/NAME.sock for a guest of TRANSPORT ($RG_TRANSPORT by
# default), its log in $RG_DIR/NAME.log, its pid in RG_LAST_PID.
start_worker() {
	t=$RG_TRANSPORT
	[ "$1" != -t ] || { t=$2; shift 2; }
	name=$1 dev=$2
	shift 2
	[ "$t" != pvrdma ] || set -- --frontend vfio-user "$@"
	"$WORKER" --vm "$name" --device "$dev" --socket "$RG_DIR/$name.sock" \
		"$@" 2>"$RG_DIR/$name.log" &
	RG_LAST_PID=$!
	RG_PIDS="$RG_PIDS $!"
	wait_for 10 test -S "$RG_DIR/$name.sock" && return 0
	echo "FAIL: worker $name on $dev did not listen; its log:"
	cat "$RG_DIR/$name.log"
	return 1
}

# stop_workers: every worker (and guest) started so far, their sockets gone
stop_workers() {
	stop $RG_PIDS
	wait 2>/dev/null
	RG_PIDS=""
	rm -f "$RG_DIR"/*.sock
}

# two_devices: gid_a and gid_b (at host indexes gidx_a, gidx_b), the host
# GIDs of RDMAGATE_VM_DEV0 and RDMAGATE_VM_DEV1 (host_gid); exits 77
# without two devices, 1 without a GID
two_devices() {
	[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || {
		echo "needs two rxe devices (rdmagate-vm -n 2)"; exit 77; }
	set -- $(host_gid "$RDMAGATE_VM_DEV0") || exit 1
	gidx_a=$1 gid_a=$2
	set -- $(host_gid "$RDMAGATE_VM_DEV1") || exit 1
	gidx_b=$1 gid_b=$2
}

show_worker_logs() {
	for f in "$RG_DIR"/*.log; do
		[ -s "$f" ] || continue
		echo "---- $f"
		tail -n 40 "$f"
	done
}
