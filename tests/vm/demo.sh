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

heading "rdmagate-trace: the eBPF tracer, attached before any worker runs"
. "$(dirname "$0")/host-gid.sh"
D=$(mktemp -d /run/rdmagate-demo.XXXXXX)
chmod 755 "$D"
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$D"; }
trap cleanup EXIT
echo "\$ rdmagate-trace --worker $build/worker/rdmagate-worker --keep -i 60 &"
"$build/trace/rdmagate-trace" --worker "$build/worker/rdmagate-worker" --keep \
	-i 60 > "$D/trace.out" 2> "$D/trace.err" &
TPID=$!
PIDS="$PIDS $TPID"
for _ in $(seq 200); do grep -q '^Tracing' "$D/trace.err" && break; sleep 0.1; done
cat "$D/trace.err"

heading "rdmagate-broker: the policy authority spawns one sandboxed worker per VM"
cat > "$D/policy.conf" <<EOP
[broker]
control_socket = $D/control.sock
cgroup_parent = /rdmagate

[defaults]
max_qp = 8
max_cq = 8
max_mr = 16
max_pinned = 64M

[vm vm-a]
device = $RDMAGATE_VM_DEV0

[vm vm-b]
device = $RDMAGATE_VM_DEV1
EOP
chmod 644 "$D/policy.conf"
sed 's/^/    /' "$D/policy.conf"
"$build/broker/rdmagate-broker" --policy "$D/policy.conf" \
	--worker "$build/worker/rdmagate-worker" --state-dir "$D/state" \
	--stop-workers-on-exit > "$D/broker.log" 2>&1 &
BPID=$!
PIDS="$PIDS $BPID"
for _ in $(seq 50); do [ -S "$D/control.sock" ] && break; sleep 0.1; done
ctl() { echo "\$ rdmagatectl $*"; "$build/broker/rdmagatectl" --control "$D/control.sock" "$@"; }
ctl spawn --vm vm-a --socket "$D/vm-a.sock" || exit 1
ctl spawn --vm vm-b --socket "$D/vm-b.sock" || exit 1
ctl list || exit 1
for vm in vm-a vm-b; do
	pid=$(pgrep -f -- "--vm $vm " | head -n 1)
	for _ in $(seq 100); do grep -q '^Seccomp:.*2' /proc/$pid/status 2>/dev/null && break; sleep 0.1; done
	printf '%s worker pid %s: %s\n' "$vm" "$pid" "$(grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/$pid/status | tr -s '\t ' ' ' | paste -sd ';')"
	printf '%s cgroup rdma.max: %s\n' "$vm" "$(cat /sys/fs/cgroup/rdmagate/$vm/rdma.max)"
done

heading "two guests exchange RDMA through their workers (rc_pingpong, host QPNs on the wire)"
set -- $(host_gid "$RDMAGATE_VM_DEV0") || exit 1
ga=$1 gida=$2
set -- $(host_gid "$RDMAGATE_VM_DEV1") || exit 1
gb=$1 gidb=$2
echo "\$ rdmagate-guest --socket vm-a.sock --gid $ga=$gida rc_pingpong -g $ga -n 500 -s 4096 &"
"$build/guest/rdmagate-guest" --socket "$D/vm-a.sock" --gid "$ga=$gida" \
	rc_pingpong -g "$ga" -n 500 -s 4096 > "$D/a.out" 2>&1 &
pa=$!
for _ in $(seq 200); do grep -qi ':4853 0*:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && break; sleep 0.05; done
echo "\$ rdmagate-guest --socket vm-b.sock --gid $gb=$gidb rc_pingpong -g $gb -n 500 -s 4096 $RDMAGATE_VM_IP0"
"$build/guest/rdmagate-guest" --socket "$D/vm-b.sock" --gid "$gb=$gidb" \
	rc_pingpong -g "$gb" -n 500 -s 4096 "$RDMAGATE_VM_IP0" > "$D/b.out" 2>&1
rb=$?
wait $pa
ra=$?
sed 's/^/  guest vm-a: /' "$D/a.out"
sed 's/^/  guest vm-b: /' "$D/b.out"
[ $ra = 0 ] && [ $rb = 0 ] || { cat "$D/broker.log"; exit 1; }

heading "a native ibv_rc_pingpong on $RDMAGATE_VM_DEV1 talks to guest vm-a"
"$build/guest/rdmagate-guest" --socket "$D/vm-a.sock" --gid "$ga=$gida" \
	rc_pingpong -g "$ga" -n 200 > "$D/a2.out" 2>&1 &
pa=$!
for _ in $(seq 200); do grep -qi ':4853 0*:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && break; sleep 0.05; done
run ibv_rc_pingpong -d "$RDMAGATE_VM_DEV1" -g "$gb" -n 200 "$RDMAGATE_VM_IP0" || exit 1
wait $pa || exit 1
sed 's/^/  guest vm-a: /' "$D/a2.out"

heading "the tracer's pinned maps, read with bpftool"
kill -INT "$TPID"; wait "$TPID" 2>/dev/null
tail -n 40 "$D/trace.out"
run bpftool map show pinned /sys/fs/bpf/rdmagate/counters
echo "\$ bpftool map dump pinned /sys/fs/bpf/rdmagate/counters   (first entry)"
bpftool map dump pinned /sys/fs/bpf/rdmagate/counters | head -n 30
rm -rf /sys/fs/bpf/rdmagate

heading "stopping the workers; the broker reaps them and removes their cgroups"
ctl stop --vm vm-a
ctl stop --vm vm-b
kill -TERM "$BPID"; wait "$BPID" 2>/dev/null
sed 's/^/  /' "$D/broker.log"
ls /sys/fs/cgroup/rdmagate 2>/dev/null | sed 's/^/  left in the cgroup: /'

heading "not there yet"
echo "GID ownership by the broker, the MAD mux (rdma_cm inside guests), the"
echo "SELinux module, systemd units and the libvirt hook come with later issues."
