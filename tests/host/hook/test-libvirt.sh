#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root): the hook under a real libvirtd, its refusals. In a
# private mount namespace (copy-on-write /etc, tmpfs for libvirt's state:
# nothing of the host's changes), Debian's libvirtd and virtlogd with the
# hook installed in /etc/libvirt/hooks/qemu.d (tests/guest/libvirt-lib.sh,
# shared with the guest test libvirt-operator, which runs the domains) and
# a broker on a temporary policy. `virsh start` of
# tests/host/hook/domains/vm-p-pvrdma.xml (TCG, its own emulator, never
# reached) fails with the hook's one line, and no QEMU, worker or socket is
# left: a VM the policy does not know, a worker that cannot be executed,
# no broker. docs/libvirt-hook.md ("Under libvirtd").
# Usage: test-libvirt.sh BROKER RDMAGATECTL WORKER HOOK TEST_HOOKS
set -u

BROKER=$1 CTL=$2 WORKER=$3 HOOK=$4 HOOKS=$5
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../../tap.sh"
. "$here/../../lib.sh"
. "$here/../../guest/lib.sh"

needs_root_hooks "libvirtd, a mount namespace, workers under their own uids" \
	"the broker's test build"
for f in /usr/sbin/libvirtd /usr/sbin/virtlogd /usr/bin/virsh \
	/usr/bin/qemu-system-x86_64; do
	[ -x "$f" ] || skip_all "no $f (./dev installs libvirt-daemon, libvirt-daemon-driver-qemu, libvirt-clients and qemu-system-x86)"
done

# the test itself, in its own mount namespace: /etc copy-on-write (the hook
# and libvirt's users go there), libvirt's state on tmpfs
if [ "${LV_NS:-}" != 1 ]; then
	LV_NS=1 exec unshare -m --propagation private "$0" "$@"
fi
broker_env libvirt
PIDS= BPID=
on_exit 'stop $PIDS'
mkdir "$T/vm" "$T/ov"
mount -t tmpfs tmpfs "$T/ov" && mkdir "$T/ov/u" "$T/ov/w" &&
	mount -t overlay overlay \
		-o "lowerdir=/etc,upperdir=$T/ov/u,workdir=$T/ov/w" /etc ||
	skip_all "no copy-on-write /etc (overlayfs in a mount namespace)"
for d in /run/libvirt /var/lib/libvirt /var/cache/libvirt /var/log/libvirt; do
	mkdir -p "$d" && mount -t tmpfs tmpfs "$d" || skip_all "no tmpfs on $d"
done

OP_XML=$here/domains/vm-p-pvrdma.xml OP_VM=vm-p OP_ADDR=10.99.2.2 OP_VMM=64201
LV_EMULATOR=/usr/bin/qemu-system-x86_64
. "$here/../../guest/libvirt-lib.sh" # and the second domain's Q_*
broker_policy 62300-62399 "socket_dir = $T/vm" <<END
[vm $OP_VM]
frontend = pvrdma
addresses = $OP_ADDR
vmm_uid = $OP_VMM
vmm_gid = $OP_VMM
END
check "broker is up" broker_start "$T/broker.log" --cgroup-root "$CG_ROOT" \
	--state-dir "$T/state"
if ! libvirt_up; then
	not_ok "libvirtd is up: $(tail -n 5 "$T/libvirtd.out" "$T/libvirtd.log")"
	tap_end
	exit 1
fi
ok "libvirtd is up: $(/usr/sbin/libvirtd --version)"
for vm in "$OP_VM" vm-z; do
	# the broker's sockets in $T/vm
	domain_xml "$vm" | sed "s|/run/rdmagate/vm/|$T/vm/|g" > "$T/$vm.xml"
	out=$(virsh define "$T/$vm.xml" 2>&1)
	check "virsh define $vm: $out" test $? = 0
done

# no_worker_left: the broker (if up) lists none, no socket, no state record
no_worker_left() {
	check "no worker, socket or state record is left" bash -c \
		'{ [ -z "$3" ] ||
			[ "$("$1" --control "$2/control.sock" list --json)" = "[]" ]; } &&
			[ -z "$(ls -A "$2/vm")" ] &&
			[ -z "$(ls "$2"/state/workers/ 2> /dev/null)" ]' _ "$CTL" "$T" "$BPID"
}

nothing_started vm-z "$(virsh start vm-z 2>&1)" \
	"broker: vm vm-z is not in the policy"
no_worker_left
# a worker that cannot be executed: the broker's spawn fails
kill "$BPID"
wait "$BPID"
: > "$T/not-a-worker"
WORKER=$T/not-a-worker broker_start "$T/broker-noexec.log" \
	--cgroup-root "$CG_ROOT" --state-dir "$T/state"
nothing_started "$OP_VM" "$(virsh start "$OP_VM" 2>&1)" \
	"broker: .*executing the worker.*"
no_worker_left
# no broker at all
kill "$BPID"
wait "$BPID"
BPID=
nothing_started "$OP_VM" "$(virsh start "$OP_VM" 2>&1)" \
	"cannot reach the broker at $T/control.sock"
no_worker_left
check "libvirtd ran the hook's release end after each failed start" \
	test "$(grep -c 'op=release subop=end' "$T/libvirtd.log")" -ge 3
[ "$failed" = 0 ] || tail -n 20 "$T/libvirtd.log" "$T/broker-noexec.log" | diag
tap_end
