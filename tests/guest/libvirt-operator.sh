#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The PVRDMA domain under a real libvirtd (issue 27): in the test VM,
# Debian's libvirtd and virtlogd (bookworm's libvirt 9.0, installed on the
# host by ./dev and seen through the VM's read-only root), the hook
# installed as /etc/libvirt/hooks/qemu.d/rdmagate (the documented wrapper
# naming the test broker's control socket), rdmagate-mux and the broker as
# pvrdma-operator runs them (tests/vm/ops/pvrdma-lib.sh: vm-p's policy and
# checks). The domain is tests/host/hook/domains/vm-p-pvrdma.xml with QEMU
# 11.1 (tests/guest/qemu-11) as its <emulator> and type='qemu' (TCG: no
# KVM in the test VM). virsh define and start: libvirtd runs the hook, the
# broker spawns the sandboxed worker, QEMU (as the <seclabel>'s uid)
# connects to it; a second domain vm-q at the same time, with its own QEMU
# and worker uids; managedsave refused, migrate refused by the hook's
# migrate begin on the destination (this same libvirtd), the domain and its
# worker untouched; vm-q's worker killed under its QEMU (what libvirt and
# QEMU say, in diagnostics); virsh destroy: the hook's release end,
# nothing left. The refused starts are the host test hook-libvirt's.
# docs/libvirt-hook.md ("Under libvirtd").
#
# Usage: libvirt-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"
. "$here/libvirt-lib.sh"

# the second domain: vm-p's document for tap1's guest, its own QEMU uid
Q_VM=vm-q Q_ADDR=10.99.3.2 Q_VMM=64202 Q_SOCK=/run/rdmagate/vm/vm-q.sock

# ---- level 2, the test VM
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 HOOK=$5 GUEST= T0=$SECONDS
	local out rc qpid q_pid q_wpid st
	# shellcheck source=../vm/ops/lib.sh
	. "$here/../vm/ops/lib.sh"
	# shellcheck source=../vm/ops/pvrdma-lib.sh
	. "$here/../vm/ops/pvrdma-lib.sh"
	pvrdma_vm_policy "$Q_VM" "$RDMAGATE_VM_DEV1" "$Q_ADDR" "$Q_VMM"
	start_services
	if ! libvirt_up; then
		not_ok "libvirtd is up: $(tail -n 5 "$T/libvirtd.out" "$T/libvirtd.log")"
		tap_end
		exit 1
	fi
	ok "libvirtd is up: $(/usr/sbin/libvirtd --version)"
	elapsed "libvirtd up"
	"$here/nested-guest" --setup-fabric && "$here/nested-guest" --tap 1 --setup-fabric
	check "the guests' taps (tap0, tap1) exist" test $? = 0
	for vm in "$OP_VM" "$Q_VM"; do
		domain_xml "$vm" > "$T/$vm.xml"
		out=$(virsh define "$T/$vm.xml" 2>&1)
		check "virsh define $vm: $out" test $? = 0
	done

	# ---- start: libvirtd runs the hook, the broker the worker
	out=$(virsh start "$OP_VM" 2>&1)
	rc=$?
	check "virsh start $OP_VM: $out" test $rc = 0
	elapsed "$OP_VM started"
	op_worker_up
	qpid=$(qemu_pid "$OP_VM")
	check "QEMU 11.1 runs as the <seclabel>'s uid ($(awk '/^Uid:/ { print $2 }' /proc/"$qpid"/status 2>/dev/null))" \
		test "$(awk '/^Uid:/ { print $2 }' /proc/"$qpid"/status 2>/dev/null)" = "$OP_VMM"
	check "the worker accepted QEMU's vfio-user connection" \
		wait_for 120 in_log "$T/broker.log" "worker/$OP_VM: frontend connected"
	echo "QEMU's cgroup: $(cat /proc/"$qpid"/cgroup 2>/dev/null)" | diag

	# ---- a second domain at the same time, its own identities
	out=$(virsh start "$Q_VM" 2>&1)
	check "virsh start $Q_VM while $OP_VM runs: $out" test $? = 0
	q_pid=$(qemu_pid "$Q_VM")
	q_wpid=$(worker_pid "$Q_VM")
	st=$(awk '/^Uid:/ { print $2 }' /proc/"$q_wpid"/status 2>/dev/null)
	check "$Q_VM's worker (pid ${q_wpid:-none}) has its own uid ($st, $OP_VM's $(awk '/^Uid:/ { print $2 }' /proc/"$OP_PID"/status))" \
		bash -c '[ -n "$1" ] && [ "$1" != "$(awk "/^Uid:/ { print \$2 }" /proc/"$2"/status)" ]' _ "$st" "$OP_PID"
	check "$Q_VM's QEMU runs as its own uid $Q_VMM" \
		test "$(awk '/^Uid:/ { print $2 }' /proc/"$q_pid"/status 2>/dev/null)" = "$Q_VMM"
	check "$Q_VM's worker accepted its QEMU" \
		wait_for 120 in_log "$T/broker.log" "worker/$Q_VM: frontend connected"
	out=$(setpriv --reuid "$Q_VMM" --regid "$Q_VMM" --clear-groups -- \
		python3 -c 'import socket,sys; socket.socket(socket.AF_UNIX).connect(sys.argv[1])' \
		"$OP_SOCK" 2>&1)
	check "$Q_VM's QEMU identity cannot reach $OP_VM's worker: $(tail -n 1 <<< "$out")" \
		grep -q 'Permission denied' <<< "$out"

	# ---- no migration and no saved state. QEMU 11.1 would migrate
	# vfio-user-pci without any device state (measured: no migration
	# blocker), so the hook refuses migrate begin (libvirt runs it on the
	# destination, here this same libvirtd, before its QEMU starts).
	# managedsave fails earlier under libvirt 9.0: QEMU 11.1 no longer
	# takes the 'detach' argument of its migrate. Either way the domain
	# and its worker run on untouched.
	out=$(virsh managedsave "$OP_VM" 2>&1)
	rc=$?
	check "virsh managedsave $OP_VM is refused: $(tr '\n' ' ' <<< "$out")" test $rc != 0
	out=$(virsh migrate --live "$OP_VM" qemu+unix:///system 2>&1)
	rc=$?
	check "virsh migrate $OP_VM is refused by the hook: $(grep -o 'rdmagate-libvirt-hook: .*' <<< "$out")" \
		bash -c '[ "$1" != 0 ] && grep -q "rdmagate-libvirt-hook: error: vm $2: migrate refused: " <<< "$3"' \
		_ "$rc" "$OP_VM" "$out"
	check "$OP_VM still runs, with the same QEMU and worker" bash -c \
		'[ "$(virsh -q -c qemu:///system domstate "$1")" = running ] &&
			kill -0 "$2" && kill -0 "$3"' _ "$OP_VM" "$qpid" "$OP_PID"

	# ---- vm-q's worker killed under its QEMU: what libvirt and QEMU say
	kill -9 "$q_wpid"
	check "the broker reaped $Q_VM's killed worker" wait_for 30 in_log \
		"$T/broker.log" "worker/$Q_VM (pid $q_wpid) killed by SIGKILL"
	wait_for 30 not kill -0 "$q_pid" 2> /dev/null
	echo "$Q_VM after kill -9 of its worker: domstate $(virsh domstate --reason "$Q_VM" 2>&1), QEMU $(kill -0 "$q_pid" 2> /dev/null && echo running || echo gone); its log:" | diag
	tail -n 6 "/var/log/libvirt/qemu/$Q_VM.log" | diag

	# ---- destroy: the hook's release end, nothing left
	for vm in "$Q_VM" "$OP_VM"; do
		[ "$(virsh domstate "$vm")" = running ] || continue
		out=$(virsh destroy "$vm" 2>&1)
		check "virsh destroy $vm: $out" test $? = 0
	done
	check "both QEMUs are gone" not kill -0 "$qpid" "$q_pid" 2> /dev/null
	check "the broker stopped $OP_VM's worker at libvirt's release end" \
		in_log "$T/broker.log" "worker/$OP_VM (pid $OP_PID) stopped: killed by SIGTERM"
	op_gone
	check "$Q_VM: no worker, socket or state record left" bash -c \
		'! kill -0 "$1" 2> /dev/null && ! test -e "$2" && ! test -e "$3"' _ \
		"$q_wpid" "$Q_SOCK" "$T/state/workers/$Q_VM.state"
	elapsed "started, refused migration, destroyed"

	[ "$failed" = 0 ] || tail -n 30 "$T/libvirtd.log" | diag
	guest_tap_end libvirtd.out broker.log
}

case ${1:-} in
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
operator_args libvirt-operator.sh "$@"
for f in /usr/sbin/libvirtd /usr/sbin/virtlogd /usr/bin/virsh; do
	[ -x "$f" ] || skip_all "no $f: libvirt is not installed (./dev installs libvirt-daemon-driver-qemu and libvirt-clients)"
done
GUEST_VM_OPTS=(--no-cm)
guest_run_in_test_vm 1500 "$here/libvirt-operator.sh" --in-vm "$@"
