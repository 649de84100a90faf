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
# ibv_rc_pingpong against a native peer on rxe1; a longer ibv_rc_pingpong
# while the broker is stopped and started again (the new broker re-adopts
# the worker: same pid, the guest's traffic goes on); rping through the
# guest kernel's rdma_cm, its QP1 on the worker and the mux, against a
# native rping whose ib_cm holds rxe1 only (the mux holds rxe0's CM
# class); then the hook's release end, and nothing of the VM is left on
# the host.
#
# Usage: pvrdma-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK
#   (TAP; on the host: it boots the test VM, which boots the nested guest;
#   the same script runs at the three levels). ./dev demo runs it too.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

PEER_IP=10.99.0.2 PEER_DEV=rxe1 PEER_PORT=18515 ITERS=20
# the broker restart's traffic: long enough to outlast the restart (a few
# seconds) on a quiet machine, where an iteration takes 4.5 ms under nested
# TCG (600 were over in 2.7 s, before the restart began), and short enough
# for the guest's 900 s at 20-200 ms per iteration under load
LONG_PORT=18516 LONG_ITERS=4000
RPING_PORT=7471 RPING_COUNT=10

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
	# the test VM restarts the broker while this runs
	timeout 900 ibv_rc_pingpong -d "$PV_DEV" -g "$PV_GIDX" -p "$LONG_PORT" \
		-n "$LONG_ITERS" "$PEER_IP" > /tmp/long.out 2>&1
	echo "long_pingpong=$?"
	sed 's/^/long_pingpong: /' /tmp/long.out >&2
	# rdma_cm: the guest kernel's CM MADs on its QP1 go to the worker,
	# the mux and the wire; the connection's QPs are the worker's
	timeout 300 rping -c -v -a "$PEER_IP" -p "$RPING_PORT" \
		-C "$RPING_COUNT" > /tmp/rping.out 2>&1
	echo "rping=$?"
	echo "rping_lines=$(grep -c '^ping data: ' /tmp/rping.out)"
	sed 's/^/rping: /' /tmp/rping.out >&2
	# what the guest kernel's MAD, CM and driver said (a MAD port that
	# did not open leaves rdma_cm without ib_cm on the device)
	dmesg | grep -E 'ib_mad|ib_cm|rdma_cm|vmw_pvrdma' | tail -n 20 |
		sed 's/^/dmesg: /' >&2
}

# ---- level 2 helpers
# load_native_cm: the kernel's CM modules for the native rping, once the
# mux holds rxe0's CM class: ib_cm then fails to register on rxe0 (the
# kernel ignores a client's failed add) and holds rxe1's only.  The test
# VM booted without them (--no-cm); they come from its kernel's cache.
load_native_cm() {
	local kd m f
	kd=${RDMAGATE_VM_CACHE:-/var/tmp/rdmagate-vm}/kernel/$(uname -r)
	for m in iw_cm ib_cm rdma_cm rdma_ucm; do
		f=$(find "$kd/lib/modules/$(uname -r)" -name "$m.ko*" | head -n 1)
		[ -n "$f" ] && insmod "$f" || return 1
	done
}

# broker_restart GUEST_PID SERVER_PID: once the long pingpong is connected
# (its native server printed the remote address) and 1 s into its
# traffic, the broker stopped and started again as its unit does (SIGTERM,
# then the same options and state directory): the new broker re-adopts the
# worker, and the guest's traffic goes on
broker_restart() {
	local guest=$1 srv=$2 t0
	while ! grep -q 'remote address' "$T/long.out" 2>/dev/null; do
		kill -0 "$guest" 2>/dev/null || break
		sleep 1
	done
	check "the guest's long ibv_rc_pingpong is connected" \
		grep -q 'remote address' "$T/long.out"
	sleep 1
	check "the guest's traffic is running as the broker stops" \
		kill -0 "$srv"
	t0=$(now_ms)
	kill -TERM "$BPID"
	wait "$BPID"
	BPID=
	check "broker stopped under the guest's traffic; its worker goes on" \
		kill -0 "$OP_PID"
	check "a new broker is up" start_broker "$T/broker2.log"
	echo "# broker restarted in $(($(now_ms) - t0)) ms"
	check "it re-adopted $OP_VM's worker: $(grep -o "worker/$OP_VM (pid .*re-adopted.*" "$T/broker2.log")" \
		grep -q "worker/$OP_VM (pid $OP_PID, uid [0-9]*) re-adopted" "$T/broker2.log"
	check "the worker pid is the same ($(op_worker_pid) = $OP_PID)" \
		test "$(op_worker_pid)" = "$OP_PID"
	check "the guest's traffic was still running with the new broker" \
		kill -0 "$srv"
	check "the new broker handed the worker a new mux channel" \
		wait_for 20 in_log "$T/broker2.log" "worker/$OP_VM: mux channel handed over"
	# the hook's release end now stops an adopted worker, whose status
	# went to its parent
	OP_STOP_WHY="exited (re-adopted after a broker restart"
}

# ---- level 2, the test VM: broker, mux, hook, QEMU 11.1 as the VMM
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 HOOK=$5 GUEST= T0=$SECONDS
	local rc srv long rping guest t0 out p
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
	timeout 2000 stdbuf -oL ibv_rc_pingpong -d "$PEER_DEV" -g 1 \
		-p "$LONG_PORT" -n "$LONG_ITERS" > "$T/long.out" 2>&1 &
	long=$!
	check "the mux holds rxe0's CM class" wait_for 20 in_log "$T/mux.log" \
		"$RDMAGATE_VM_DEV0 port 1: umad open, CM class registered"
	check "the kernel's CM for the native side (ib_cm on rxe1 only)" load_native_cm
	timeout 2000 rping -s -v -a "$PEER_IP" -p "$RPING_PORT" \
		-C "$RPING_COUNT" > "$T/rping.out" 2>&1 &
	rping=$!
	PIDS="$srv $long $rping"
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
		> "$T/facts" 2> "$T/err" &
	guest=$!
	broker_restart "$guest" "$long"
	wait "$guest"
	rc=$?
	# the guest is done: a native server still waiting has lost its
	# client and would wait for its timeout
	for p in $srv $long $rping; do
		wait_for 30 not kill -0 "$p" || kill "$p" 2> /dev/null
	done
	echo "# nested guest run: $(($(now_ms) - t0)) ms in total"
	grep -h 'boot-to-command' "$T/err" | diag
	# what the guest's tools said (the demo shows these lines)
	grep -E '^(devinfo|rc_pingpong|long_pingpong|rping|dmesg): ' "$T/err" | diag
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
	check "ibv_rc_pingpong guest -> native $PEER_DEV: client ok, server status $rc: $(tail -n 1 "$T/native.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx rc_pingpong=0 "$2"' _ "$rc" "$T/facts"
	wait "$long"
	rc=$?
	check "the long ibv_rc_pingpong across the broker restart: client ok, server status $rc: $(tail -n 1 "$T/long.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx long_pingpong=0 "$2"' _ "$rc" "$T/facts"
	wait "$rping"
	rc=$?
	PIDS=
	check "rping guest -> native $PEER_DEV through rdma_cm and the mux: client $(sed -n 's/^rping=//p' "$T/facts"), $(sed -n 's/^rping_lines=//p' "$T/facts") of $RPING_COUNT pings; server status $rc, $(grep -c 'ping data' "$T/rping.out") pings" \
		bash -c '[ "$1" = 0 ] && grep -qx rping=0 "$2" &&
			grep -qx "rping_lines=$3" "$2"' _ "$rc" "$T/facts" "$RPING_COUNT"
	out=$(ctl stats --vm "$OP_VM" --json)
	check "the worker bound the guest's GID through the broker: $(jq -c '.[0] | {connects, gid_adds, gid_errors}' <<< "$out" 2>/dev/null)" \
		test "$(jq '.[0].gid_adds >= 1' <<< "$out")" = true
	check "the guest's CM MADs went through its QP1 on the worker: $(jq -c '.[0] | {mads_sent, mads_received, mad_errors}' <<< "$out" 2>/dev/null)" \
		test "$(jq '.[0].mads_sent >= 1 and .[0].mads_received >= 1' <<< "$out")" = true
	elapsed "nested guest done; release"
	# libvirt runs release end once QEMU is gone
	op_stopped
	guest_tap_end facts err native.out long.out rping.out
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
