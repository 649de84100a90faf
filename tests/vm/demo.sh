#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh: what rdmagate can show today, run inside the test VM with two
# Soft-RoCE devices (`./dev demo`, or: tests/vm/rdmagate-vm -n 2 --
# tests/vm/demo.sh BUILD_DIR). Every line it prints comes from a command
# that really ran; later issues add the broker and the workers as new steps.
set -u

build=${1:?usage: $0 BUILD_DIR}
build=$(cd "$build" && pwd -P) || exit 1
[ "${RDMAGATE_VM:-}" = 1 ] || { echo "demo.sh: run me inside tests/vm/rdmagate-vm -n 2" >&2; exit 1; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "demo.sh: needs two devices (rdmagate-vm -n 2)" >&2; exit 1; }

step=0
heading() {
	step=$((step + 1))
	printf '\n=== Step %d: %s ===\n' "$step" "$*"
}
# run CMD...: echoes the command, then runs it
run() {
	printf '$ %s\n' "$*"
	"$@"
}

heading "the test VM"
echo "kernel $(uname -r), $(nproc) vCPUs, Soft-RoCE devices: $RDMAGATE_VM_NDEV"
echo "$RDMAGATE_VM_DEV0 on $RDMAGATE_VM_NETDEV0 ($RDMAGATE_VM_IP0, $RDMAGATE_VM_IP6_0)," \
	"$RDMAGATE_VM_DEV1 on $RDMAGATE_VM_NETDEV1 ($RDMAGATE_VM_IP1, $RDMAGATE_VM_IP6_1)"

heading "the RDMA devices, as libibverbs sees them"
run ibv_devices || exit 1
run rdma link show || exit 1

heading "their GID tables (RoCE v2 entries carry the netdev's addresses)"
for dev in "$RDMAGATE_VM_DEV0" "$RDMAGATE_VM_DEV1"; do
	p=/sys/class/infiniband/$dev/ports/1
	for f in "$p"/gids/*; do
		i=${f##*/}
		read -r gid < "$f" 2>/dev/null || continue
		[ "$gid" != 0000:0000:0000:0000:0000:0000:0000:0000 ] || continue
		read -r type < "$p/gid_attrs/types/$i" 2>/dev/null || type='?'
		read -r ndev < "$p/gid_attrs/ndevs/$i" 2>/dev/null || ndev='?'
		printf '%s gid[%s] %s  %s on %s\n' "$dev" "$i" "$gid" "$type" "$ndev"
	done
done

heading "what the broker will use: the rdma cgroup controller and bpffs"
run cat /sys/fs/cgroup/cgroup.subtree_control || exit 1
cg=/sys/fs/cgroup/demo.$$
mkdir "$cg" || exit 1
printf '$ cat %s/rdma.max   (a fresh cgroup: no limits yet)\n' "$cg"
cat "$cg/rdma.max"
rmdir "$cg"
run findmnt -n /sys/fs/bpf || exit 1

heading "RC queue pairs: SEND and RDMA WRITE, loopback and $RDMAGATE_VM_DEV0 -> $RDMAGATE_VM_DEV1 across the veth pair"
run "$build/tests/vm/verbs-rc-check" "$RDMAGATE_VM_DEV0" "$RDMAGATE_VM_DEV1" || exit 1

heading "a worker serving a guest over vhost-user (the transport, with its test device)"
echo "rdmagate-worker is the per-VM vhost-user backend; the guest simulator plays"
echo "QEMU and the guest driver. The virtio-rdma device on verbs is the next step;"
echo "until then the worker serves only its explicit transport test device."
sock=$(mktemp -u /tmp/demo-worker.XXXXXX)
"$build/worker/rdmagate-worker" --vm demo --socket "$sock" --test-device echo &
wpid=$!
for _ in $(seq 50); do [ -S "$sock" ] && break; sleep 0.1; done
run "$build/guest/rdmagate-guest" --socket "$sock" probe || { kill $wpid; exit 1; }
run "$build/guest/rdmagate-guest" --socket "$sock" echo -n 2000 -s 4096 --queues 4 ||
	{ kill $wpid; exit 1; }
kill $wpid; wait $wpid 2>/dev/null; rm -f "$sock"

heading "not there yet"
echo "The virtio-rdma device on verbs, the broker, the MAD mux and the tracer come"
echo "with later issues; this demo gains a step for each."
