#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The PVRDMA device on the operator's path with a real VMM and a real
# guest: in the test VM, rdmagate-mux and the broker with the unit's
# options; the libvirt hook given the domain XML
# tests/host/hook/domains/vm-p-pvrdma.xml starts the VM's sandboxed worker
# (tests/vm/ops/pvrdma-lib.sh, shared with the vm test pvrdma-broker);
# QEMU 11.1 runs as the VM's QEMU identity (its <seclabel>) and boots the
# nested guest (tests/guest/nested-guest) whose upstream vmw_pvrdma binds
# its GID through the worker and the broker; in the guest, ibv_devinfo and
# ibv_rc_pingpong against a native peer on rxe1; then the hook's release
# end, and nothing of the VM is left on the host.
#
# Usage: pvrdma-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK
#   (TAP; on the host: it boots the test VM, which boots the nested guest;
#   the same script runs at the three levels). ./dev demo runs it too.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

PEER_IP=10.99.0.2 PEER_DEV=rxe1 PEER_PORT=18515 ITERS=20

# ---- level 3, the nested guest: facts as key=value lines
in_guest() {
	local rc ok=0
	pvrdma_facts "$RDMAGATE_GUEST_IP" || ok=1
	grep -E 'hca_id|state:|GID\[' /tmp/devinfo 2>/dev/null |
		sed 's/^/devinfo: /' >&2
	[ "$ok" = 0 ] || return 0
	timeout 300 ibv_rc_pingpong -d "$PV_DEV" -g "$PV_GIDX" -p "$PEER_PORT" \
		-n "$ITERS" "$PEER_IP" > /tmp/rc.out 2>&1
	rc=$?
	echo "rc_pingpong=$rc"
	sed 's/^/rc_pingpong: /' /tmp/rc.out >&2
}

# ---- level 2, the test VM: broker, mux, hook, QEMU 11.1 as the VMM
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 HOOK=$5 GUEST= T0=$SECONDS
	local rc srv t0 out
	# shellcheck source=../vm/ops/lib.sh
	. "$here/../vm/ops/lib.sh"
	# shellcheck source=../vm/ops/pvrdma-lib.sh
	. "$here/../vm/ops/pvrdma-lib.sh"
	start_services
	if ! op_started; then
		dump | diag
		tap_end
		exit 1
	fi
	elapsed "worker spawned by the hook"
	# the guest's fabric; its address goes on rxe0's netdev only when the
	# guest's driver binds its GID (the broker adds it then)
	"$here/nested-guest" --setup-fabric && fabric_guest_gid "$OP_ADDR" &&
		ip addr del "$OP_ADDR/32" dev "$RDMAGATE_VM_NETDEV0"
	check "the guest's fabric and routes are set up" test $? = 0
	timeout 1500 ibv_rc_pingpong -d "$PEER_DEV" -g 1 -p "$PEER_PORT" \
		-n "$ITERS" > "$T/native.out" 2>&1 &
	srv=$!
	PIDS=$srv
	# QEMU as the <seclabel>'s identity. CAP_NET_ADMIN (tap0) and
	# CAP_DAC_OVERRIDE (the harness's root-owned files) stand in for what
	# libvirtd prepares for its QEMU; the worker's SO_PEERCRED check sees
	# uid OP_VMM (the vm test checks the socket's mode refuses others).
	cat > "$T/qemu-vmm" <<-END
	#!/bin/sh
	exec setpriv --reuid $OP_VMM --regid $OP_VMM --clear-groups \\
		--inh-caps +net_admin,+dac_override \\
		--ambient-caps +net_admin,+dac_override \\
		sh -c 'id -u > "$T/qemu.uid" && exec "\$0" "\$@"' \\
		"$here/qemu-11" "\$@"
	END
	chmod 755 "$T/qemu-vmm"
	t0=$(now_ms)
	NESTED_GUEST_QEMU=$T/qemu-vmm "$here/nested-guest" -t 2000 \
		--vfio-user "$OP_SOCK" -- "$here/pvrdma-operator.sh" --in-guest \
		> "$T/facts" 2> "$T/err"
	rc=$?
	echo "# nested guest run: $(($(now_ms) - t0)) ms in total"
	grep -h 'boot-to-command' "$T/err" | diag
	# what the guest's tools said (the demo shows these lines)
	grep -E '^(devinfo|rc_pingpong): ' "$T/err" | diag
	check "QEMU 11.1 ran as the VM's QEMU identity (uid $(cat "$T/qemu.uid" 2>/dev/null))" \
		test "$(cat "$T/qemu.uid" 2>/dev/null)" = "$OP_VMM"
	check "the worker accepted it" in_log "$T/broker.log" "frontend connected"
	check "the nested guest ran its command (status $rc)" [ "$rc" = 0 ]
	fact() { grep -qx "$1" "$T/facts"; }
	check "the guest lists a PVRDMA device ($(sed -n 's/^device=//p' "$T/facts"))" \
		grep -qx 'device=vmw_pvrdma[0-9]*' "$T/facts"
	check "ibv_devinfo runs and its port is ACTIVE" \
		bash -c 'grep -qx devinfo_rc=0 "$1" && grep -qx port_active=1 "$1"' _ "$T/facts"
	check "its GID table has ::ffff:$OP_ADDR ($(grep '^gid_index=' "$T/facts"))" \
		grep -qx 'gid_index=[0-9][0-9]*' "$T/facts"
	wait "$srv"
	rc=$?
	PIDS=
	check "ibv_rc_pingpong guest -> native $PEER_DEV: client ok, server status $rc: $(tail -n 1 "$T/native.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx rc_pingpong=0 "$2"' _ "$rc" "$T/facts"
	out=$(ctl stats --vm "$OP_VM" --json)
	check "the worker bound the guest's GID through the broker: $(jq -c '.[0] | {connects, gid_adds, gid_errors}' <<< "$out" 2>/dev/null)" \
		test "$(jq '.[0].gid_adds >= 1' <<< "$out")" = true
	elapsed "nested guest done; release"
	# libvirt runs release end once QEMU is gone
	op_stopped
	if [ "$failed" != 0 ]; then
		for f in facts err native.out; do
			echo "--- $f"
			tail -n 40 "$T/$f"
		done | diag
		dump | diag
	fi
	tap_end
}

case ${1:-} in
--in-guest) in_guest; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
[ $# = 5 ] || { echo "usage: pvrdma-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK" >&2; exit 2; }
# the mux owns the CM MAD class: no ib_cm in the test VM
GUEST_VM_OPTS=(--no-cm)
# 2300 s: at a load of 25-30 the nested run alone took 1404 s and, once,
# more than 1500 s
guest_run_in_test_vm 2300 "$here/pvrdma-operator.sh" --in-vm "$@"
