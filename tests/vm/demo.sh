#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh: what rdmagate can show today, run inside the test VM with two
# Soft-RoCE devices (`./dev demo`, or: tests/vm/rdmagate-vm -n 2 --
# tests/vm/demo.sh BUILD_DIR). Every line it prints comes from a command
# that really ran: the tracer, the broker as its unit starts it, two
# workers spawned through the libvirt hook, guests claiming addresses and
# exchanging RDMA, the broker's stats, bpftool on the pinned maps; and last,
# from the host, a real guest under QEMU 11.1 (--real-guest).
set -u

# pvrdma-operator.sh's arguments for BUILD_DIR, one per line (the host
# test demo-paths checks each is a file the build made: --real-guest-args)
real_guest_args() {
	printf '%s\n' "$1/broker/rdmagate-broker" "$1/ctl/rdmagatectl" \
		"$1/worker/rdmagate-worker" "$1/mux/rdmagate-mux" \
		"$1/hook/rdmagate-libvirt-hook"
}

# The last step, on the host once the VM part is over (./dev demo runs
# `demo.sh --real-guest BUILD_DIR` then): the guest test pvrdma-operator,
# which boots its own test VM and, in it, QEMU 11.1 with real guests.
real_guest() {
	local t args
	mapfile -t args < <(real_guest_args "$1")
	printf '\n=== Last step: real guests on the operator'"'"'s path ===\n'
	echo "In a new test VM: rdmagate-mux and the broker as their units start them;"
	echo "the libvirt hook given tests/host/hook/domains/vm-p-pvrdma.xml starts the"
	echo "VM's sandboxed PVRDMA worker; QEMU 11.1, as the VM's QEMU identity, boots a"
	echo "nested guest whose upstream vmw_pvrdma driver uses it, and rdmagatectl a"
	echo "second VM's worker and guest beside it; in the first guest, ibv_devinfo and"
	echo "ibv_rc_pingpong against a native peer on rxe1, the broker restarted under"
	echo "its traffic, then rping to the second guest through both guests' rdma_cm"
	echo "and the mux; then both VMs stop and the host is checked clean. TCG inside"
	echo "TCG: 7-40 minutes."
	t=$(mktemp)
	"$(dirname "$0")/../guest/pvrdma-operator.sh" "${args[@]}" 2>&1 |
		tee "$t"
	local rc=${PIPESTATUS[0]}
	if grep -q '^1\.\.0 # SKIP' "$t"; then
		echo "(skipped this step: $(sed -n 's/^1\.\.0 # SKIP //p' "$t"))"
		rc=0
	fi
	rm -f "$t"
	return "$rc"
}

build=${1:?usage: $0 [--real-guest|--real-guest-args] BUILD_DIR}
if [ "$build" = --real-guest-args ]; then
	real_guest_args "${2:?usage: $0 --real-guest-args BUILD_DIR}"
	exit
fi
if [ "$build" = --real-guest ]; then
	build=$(cd "${2:?usage: $0 --real-guest BUILD_DIR}" && pwd -P) || exit 1
	real_guest "$build"
	exit
fi
build=$(cd "$build" && pwd -P) || exit 1
[ "${RDMAGATE_VM:-}" = 1 ] || { echo "demo.sh: run me inside tests/vm/rdmagate-vm -n 2" >&2; exit 1; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "demo.sh: needs two devices (rdmagate-vm -n 2)" >&2; exit 1; }

. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/two-vms.sh"
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
D=$(mktemp -d /run/rdmagate-demo.XXXXXX)
chmod 755 "$D"
PIDS=""
on_exit 'rm -rf "$D"'
on_exit 'stop $PIDS'
echo "\$ rdmagate-trace --worker $build/worker/rdmagate-worker --keep -i 60 &"
"$build/trace/rdmagate-trace" --worker "$build/worker/rdmagate-worker" --keep \
	-i 60 > "$D/trace.out" 2> "$D/trace.err" &
TPID=$!
PIDS="$PIDS $TPID"
wait_for 20 grep -q '^Tracing' "$D/trace.err"
cat "$D/trace.err"

heading "rdmagate-broker, started as its systemd unit starts it"
unit=$build/systemd/rdmagate-broker.service
[ -f "$unit" ] && grep -E '^(Type|ExecStart|RuntimeDirectory|KillMode|CapabilityBoundingSet)=' "$unit" | sed 's/^/    (unit) /'
{
	printf '[broker]\ncontrol_socket = /run/rdmagate/control\n'
	printf 'cgroup_parent = /rdmagate\n\n'
	two_vm_policy
} > "$D/policy.conf"
chmod 644 "$D/policy.conf"
sed 's/^/    /' "$D/policy.conf"
mkdir -p /run/rdmagate/vm
echo "\$ rdmagate-broker --policy $D/policy.conf --worker $build/worker/rdmagate-worker &"
"$build/broker/rdmagate-broker" --policy "$D/policy.conf" \
	--worker "$build/worker/rdmagate-worker" > "$D/broker.log" 2>&1 &
BPID=$!
PIDS="$PIDS $BPID"
ctl() { echo "\$ rdmagatectl $*"; "$build/ctl/rdmagatectl" "$@"; }
wait_for 10 "$build/ctl/rdmagatectl" list > /dev/null 2>&1
sed 's/^/  /' "$D/broker.log"

heading "libvirt starts two VMs: its hook asks the broker for their workers"
for vm in vm-a vm-b; do
	domain_xml $vm > "$D/$vm.xml"
done
sed 's/^/    /' "$D/vm-a.xml"
for vm in vm-a vm-b; do
	echo "\$ /etc/libvirt/hooks/qemu.d/rdmagate $vm prepare begin - < $vm.xml"
	"$build/hook/rdmagate-libvirt-hook" "$vm" prepare begin - < "$D/$vm.xml" || exit 1
done
ctl list || exit 1
for vm in vm-a vm-b; do
	pid=$("$build/ctl/rdmagatectl" list --json | jq -r ".[] | select(.vm == \"$vm\") | .pid")
	wait_for 10 grep -q '^Seccomp:.*2' /proc/$pid/status 2> /dev/null
	printf '%s worker pid %s: %s\n' "$vm" "$pid" "$(grep -E '^(Uid|CapEff|NoNewPrivs|Seccomp):' /proc/$pid/status | tr -s '\t ' ' ' | paste -sd ';')"
	printf '%s cgroup rdma.max: %s\n' "$vm" "$(cat /sys/fs/cgroup/rdmagate/$vm/rdma.max)"
done
grep 'ready [0-9]* ms after' "$D/broker.log" | sed 's/^/  /'

heading "two guests claim their addresses and exchange RDMA (rc_pingpong, host QPNs on the wire)"
route_pair "$A" "$B"
echo "(the fabric routes $A <-> $B across the veth pair, as an operator would)"
echo "\$ rdmagate-guest --socket vm-a.sock --gid 1=::ffff:$A rc_pingpong -g 1 -n 500 -s 4096 &"
guest_pingpong "$build/guest/rdmagate-guest" vm-a 500 "$D/a.out" &
pa=$!
wait_for 10 tcp_listening 18515
echo "(the broker added the guests' addresses to the netdevs:)"
run ip -4 -o addr show dev "$RDMAGATE_VM_NETDEV0"
echo "\$ rdmagate-guest --socket vm-b.sock --gid 1=::ffff:$B rc_pingpong -g 1 -n 500 -s 4096 127.0.0.1"
guest_pingpong "$build/guest/rdmagate-guest" vm-b 500 "$D/b.out" 127.0.0.1
rb=$?
wait $pa
ra=$?
sed 's/^/  guest vm-a: /' "$D/a.out"
sed 's/^/  guest vm-b: /' "$D/b.out"
[ $ra = 0 ] && [ $rb = 0 ] || { cat "$D/broker.log"; exit 1; }
grep -E 'added|removed' "$D/broker.log" | sed 's/^/  /'

heading "the workers' counters, gathered by the broker"
ctl stats --vm vm-a || exit 1

heading "the tracer's pinned maps, read with bpftool"
kill -INT "$TPID"; wait "$TPID" 2>/dev/null
tail -n 40 "$D/trace.out"
run bpftool map show pinned /sys/fs/bpf/rdmagate/counters
echo "\$ bpftool map dump pinned /sys/fs/bpf/rdmagate/counters   (first entry)"
bpftool map dump pinned /sys/fs/bpf/rdmagate/counters | head -n 30
rm -rf /sys/fs/bpf/rdmagate

heading "libvirt stops the VMs: the hook stops their workers; the broker cleans up"
for vm in vm-a vm-b; do
	echo "\$ /etc/libvirt/hooks/qemu.d/rdmagate $vm release end - < $vm.xml"
	"$build/hook/rdmagate-libvirt-hook" "$vm" release end - < "$D/$vm.xml"
done
kill -TERM "$BPID"; wait "$BPID" 2>/dev/null
sed 's/^/  /' "$D/broker.log"
ls /sys/fs/cgroup/rdmagate 2>/dev/null | sed 's/^/  left in the cgroup: /'

heading "not in this demo"
echo "rdma_cm between guests (CM MADs through the workers' QP1 and rdmagate-mux)"
echo "needs a VM without the kernel's ib_cm: meson test -C build --suite vm ops-cm-e2e"
