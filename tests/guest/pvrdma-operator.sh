#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The PVRDMA device on the operator's path with a real VMM and two real
# guests: in the test VM, rdmagate-mux and the broker with the unit's
# options; the libvirt hook given the domain XML
# tests/host/hook/domains/vm-p-pvrdma.xml starts VM vm-p's sandboxed worker
# (tests/vm/ops/pvrdma-lib.sh, shared with the vm test pvrdma-broker) on
# rxe0, and `rdmagatectl spawn` a second VM's, vm-q on rxe1; QEMU 11.1 runs
# vm-p as its QEMU identity and boots the nested guest a
# (tests/guest/nested-guest, tap0) while a second QEMU 11.1 boots guest b
# (tap1); each guest's upstream vmw_pvrdma binds its GID through its worker
# and the broker. In guest a, ibv_devinfo and ibv_rc_pingpong against a
# native peer on rxe1; a longer ibv_rc_pingpong while the broker is
# stopped and started again (the new broker re-adopts both workers: same
# pids, the guest's traffic goes on); then rping from guest a to guest b:
# both guest kernels' rdma_cm, their QP1s on the workers, the mux (which
# holds both devices' CM class) and the wire. Then vm-q stopped, the
# hook's release end, and nothing of either VM is left on the host.
#
# Usage: pvrdma-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK
#   (TAP; on the host: it boots the test VM, which boots both nested
#   guests; the same script runs at the three levels). ./dev demo runs it
#   too.
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
# the second VM: guest b on tap1, its worker on rxe1 (spawned by
# rdmagatectl, its socket in the broker's socket_dir)
Q_VM=vm-q Q_ADDR=10.99.3.2 Q_SOCK=/run/rdmagate/vm/vm-q.sock

# what each guest logs of its kernel's MAD, CM and driver lines
DMESG_ERE='ib_mad|ib_cm|rdma_cm|vmw_pvrdma'

# ---- level 3, the nested guests: facts as key=value lines.  ROLE a (vm-p:
# the pingpongs against native rxe1, then rping's client) or b (vm-q:
# rping's server); SYNC a directory both guests and the test VM see (in
# the build directory, over 9p at each level)
in_guest() {
	local role=$1 sync=$2 rc i pid ok=0
	# the test VM made it before the guests booted: without it neither
	# guest would ever see the other's files
	if [ ! -d "$sync" ]; then
		echo "pvrdma-operator.sh: $sync is not shared with this guest" >&2
		return 0
	fi
	pvrdma_facts "$RDMAGATE_GUEST_IP" || ok=1
	log_lines 'devinfo: ' /tmp/devinfo 'hca_id|state:|GID\[' >&2
	if [ "$role" = b ]; then
		if [ "$ok" = 0 ]; then
			# one connection (-C pings), then it exits; guest a
			# comes after its own steps and the broker restart
			timeout 2700 rping -s -v -a "$Q_ADDR" -p "$RPING_PORT" \
				-C "$RPING_COUNT" > /tmp/rping.out 2>&1 &
			pid=$!
			# rping listens within a second; the client retries
			nap 2
			: > "$sync/b.listening"
			# until its client is done, or guest a is (the test VM
			# says so) and never came
			while kill -0 "$pid" 2> /dev/null; do
				[ -e "$sync/a.done" ] && { nap 10; kill "$pid"; }
				nap 2
			done 2> /dev/null
			wait "$pid"
			echo "rping=$?"
			echo "rping_lines=$(count_text /tmp/rping.out 'ping data: ')"
			log_lines 'rping b: ' /tmp/rping.out >&2
		else
			: > "$sync/b.failed"
		fi
		dmesg > /tmp/dmesg
		log_lines 'dmesg b: ' /tmp/dmesg "$DMESG_ERE" 20 >&2
		return 0
	fi
	[ "$ok" = 0 ] || return 0
	timeout 300 ibv_rc_pingpong -d "$PV_DEV" -g "$PV_GIDX" -p "$PEER_PORT" \
		-n "$ITERS" "$PEER_IP" > /tmp/rc.out 2>&1
	rc=$?
	echo "rc_pingpong=$rc"
	log_lines 'rc_pingpong: ' /tmp/rc.out >&2
	# the test VM restarts the broker while this runs
	timeout 900 ibv_rc_pingpong -d "$PV_DEV" -g "$PV_GIDX" -p "$LONG_PORT" \
		-n "$LONG_ITERS" "$PEER_IP" > /tmp/long.out 2>&1
	echo "long_pingpong=$?"
	log_lines 'long_pingpong: ' /tmp/long.out >&2
	# rdma_cm: each guest kernel's CM MADs on its QP1 go to its worker,
	# the mux and the wire; the connection's QPs are the workers'. Guest
	# b boots at the same time as a, not always as fast.
	for ((i = 0; i < 2400; i++)); do
		[ -e "$sync/b.listening" ] || [ -e "$sync/b.failed" ] ||
			[ -e "$sync/b.gone" ] && break
		nap 1
	done
	for i in 1 2 3; do
		timeout 300 rping -c -v -a "$Q_ADDR" -p "$RPING_PORT" \
			-C "$RPING_COUNT" > /tmp/rping.out 2>&1
		rc=$?
		[ "$rc" = 0 ] && break
		nap 5
	done
	echo "rping=$rc"
	echo "rping_lines=$(count_text /tmp/rping.out 'ping data: ')"
	log_lines 'rping: ' /tmp/rping.out >&2
	# what the guest kernel's MAD, CM and driver said (a MAD port that
	# did not open leaves rdma_cm without ib_cm on the device)
	dmesg > /tmp/dmesg
	log_lines 'dmesg: ' /tmp/dmesg "$DMESG_ERE" 20 >&2
}

# ---- level 2 helpers
# broker_restart GUEST_PID SERVER_PID: once the long pingpong is connected
# (its native server printed the remote address) and 1 s into its
# traffic, the broker stopped and started again as its unit does (SIGTERM,
# then the same options and state directory): the new broker re-adopts
# both workers (vm-q's guest is booting or waiting meanwhile), and the
# guest's traffic goes on
broker_restart() {
	local guest=$1 srv=$2 t0
	while ! has_text "$T/long.out" 'remote address'; do
		kill -0 "$guest" 2>/dev/null || break
		nap 1
	done
	check "the guest's long ibv_rc_pingpong is connected" \
		grep -q 'remote address' "$T/long.out"
	sleep 1
	check "the guest's traffic is running as the broker stops" \
		kill -0 "$srv"
	t0=$(mono_ms)
	kill -TERM "$BPID"
	wait "$BPID"
	BPID=
	check "broker stopped under the guest's traffic; its worker goes on" \
		kill -0 "$OP_PID"
	check "a new broker is up" start_broker "$T/broker2.log"
	echo "# broker restarted in $(($(mono_ms) - t0)) ms"
	check "it re-adopted $OP_VM's worker: $(grep -o "worker/$OP_VM (pid .*re-adopted.*" "$T/broker2.log")" \
		grep -q "worker/$OP_VM (pid $OP_PID, uid [0-9]*) re-adopted" "$T/broker2.log"
	check "the worker pid is the same ($(op_worker_pid) = $OP_PID)" \
		test "$(op_worker_pid)" = "$OP_PID"
	check "the guest's traffic was still running with the new broker" \
		kill -0 "$srv"
	check "the new broker handed the worker a new mux channel" \
		wait_for 20 in_log "$T/broker2.log" "worker/$OP_VM: mux channel handed over"
	check "it re-adopted $Q_VM's worker too (pid $Q_PID), with its own new mux channel" \
		bash -c 'grep -q "worker/$1 (pid $2, uid [0-9]*) re-adopted" "$3" &&
			grep -q "worker/$1: mux channel handed over" "$3"' _ \
		"$Q_VM" "$Q_PID" "$T/broker2.log"
	# the hook's release end now stops an adopted worker, whose status
	# went to its parent
	OP_STOP_WHY="exited (re-adopted after a broker restart"
}

# q_stopped: vm-q stopped as rdmagatectl stops it, and nothing of it is
# left (the hook's release end does the same for vm-p: op_stopped)
q_stopped() {
	local out
	out=$(ctl stop --vm "$Q_VM" 2>&1)
	check "rdmagatectl stop --vm $Q_VM: $out" test $? = 0
	check "$Q_VM's worker is gone, with its socket" bash -c \
		'! test -e /proc/"$1" && ! test -e "$2"' _ "$Q_PID" "$Q_SOCK"
	check "$Q_VM's address is gone from $RDMAGATE_VM_NETDEV1" \
		not grep -q "inet $Q_ADDR/" < <(ip -4 -o addr show dev "$RDMAGATE_VM_NETDEV1")
	check "its GID is gone from $RDMAGATE_VM_DEV1's table" \
		not has_v2 "$RDMAGATE_VM_DEV1" "$(v4_gid "$Q_ADDR")"
}

# ---- level 2, the test VM: broker, mux, hook, QEMU 11.1 as the VMMs
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 HOOK=$5 GUEST= T0=$SECONDS
	local rc rc_b srv long guest guest_b watch t0 out p vm sync
	# shellcheck source=../vm/ops/lib.sh
	. "$here/../vm/ops/lib.sh"
	# shellcheck source=../vm/ops/pvrdma-lib.sh
	. "$here/../vm/ops/pvrdma-lib.sh"
	pvrdma_vm_policy "$Q_VM" "$RDMAGATE_VM_DEV1" "$Q_ADDR"
	start_services
	if ! op_started; then
		dump | diag
		tap_end
		exit 1
	fi
	elapsed "worker spawned by the hook"
	out=$(ctl spawn --vm "$Q_VM" 2>&1)
	check "rdmagatectl spawn --vm $Q_VM: $out" grep -q "worker/$Q_VM: pid" <<< "$out"
	Q_PID=$(worker_pid "$Q_VM")
	# the mux opens each VM's port as the broker assigns it: rxe0 for
	# vm-p, rxe1 for vm-q (no ib_cm in the test VM: --no-cm)
	for p in "$RDMAGATE_VM_DEV0" "$RDMAGATE_VM_DEV1"; do
		check "the mux holds $p's CM class" wait_for 20 in_log \
			"$T/mux.log" "$p port 1: umad open, CM class registered"
	done
	for vm in "$OP_VM" "$Q_VM"; do
		check "$vm got its mux channel" wait_for 30 in_log \
			"$T/broker.log" "worker/$vm: mux channel handed over"
	done
	# the guests' fabric; each address goes on its rxe's netdev only when
	# its guest's driver binds the GID (the broker adds it then)
	"$here/nested-guest" --setup-fabric &&
		"$here/nested-guest" --tap 1 --setup-fabric &&
		fabric_guest_gid "$OP_ADDR" "$RDMAGATE_VM_NETDEV0" &&
		ip addr del "$OP_ADDR/32" dev "$RDMAGATE_VM_NETDEV0" &&
		fabric_guest_gid "$Q_ADDR" "$RDMAGATE_VM_NETDEV1" &&
		ip addr del "$Q_ADDR/32" dev "$RDMAGATE_VM_NETDEV1"
	check "both guests' fabric and routes are set up (tap0, tap1)" test $? = 0
	timeout 3000 ibv_rc_pingpong -d "$PEER_DEV" -g 1 -p "$PEER_PORT" \
		-n "$ITERS" > "$T/native.out" 2>&1 &
	srv=$!
	timeout 3000 stdbuf -oL ibv_rc_pingpong -d "$PEER_DEV" -g 1 \
		-p "$LONG_PORT" -n "$LONG_ITERS" > "$T/long.out" 2>&1 &
	long=$!
	PIDS="$srv $long"
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
	sync=$(mktemp -d "${RDMAGATE_BUILD:?the build directory, shared with the guests}/pvrdma-operator.XXXXXX")
	chmod 777 "$sync"
	t0=$(mono_ms)
	# both guests boot at once (two TCG-in-TCG guests on the test VM's
	# two vCPUs: ~170 s each on a quiet machine)
	NESTED_GUEST_QEMU=$T/qemu-vmm "$here/nested-guest" -b 2400 -t 3000 \
		--vfio-user "$OP_SOCK" -- "$here/pvrdma-operator.sh" --in-guest \
		a "$sync" > "$T/facts" 2> "$T/err" &
	guest=$!
	"$here/nested-guest" -b 2400 -t 3000 --tap 1 --vfio-user "$Q_SOCK" -- \
		"$here/pvrdma-operator.sh" --in-guest b "$sync" \
		> "$T/facts.b" 2> "$T/err.b" &
	guest_b=$!
	# each guest learns when the other is gone (its boot or command
	# failed), so that neither waits for the other until its timeout
	( while kill -0 "$guest_b" 2> /dev/null; do nap 2; done
	  : > "$sync/b.gone" ) &
	watch=$!
	PIDS="$srv $long $guest $guest_b $watch"
	broker_restart "$guest" "$long"
	wait "$guest"
	rc=$?
	: > "$sync/a.done"
	wait "$guest_b"
	rc_b=$?
	wait "$watch"
	# the guest is done: a native server still waiting has lost its
	# client and would wait for its timeout
	for p in $srv $long; do
		wait_for 30 gone "$p" || kill "$p" 2> /dev/null
	done
	echo "# nested guests' run: $(($(mono_ms) - t0)) ms in total"
	grep -h 'boot-to-command' "$T/err" "$T/err.b" | diag
	# what the guests' tools said (the demo shows these lines)
	grep -hE '^(devinfo|rc_pingpong|long_pingpong|rping|rping b|dmesg|dmesg b): ' \
		"$T/err" "$T/err.b" | diag
	check "QEMU 11.1 ran as the VM's QEMU identity (uid $(cat "$T/qemu.uid" 2>/dev/null))" \
		test "$(cat "$T/qemu.uid" 2>/dev/null)" = "$OP_VMM"
	check "the worker accepted it" in_log "$T/broker.log" "frontend connected"
	check "nested guest a ($OP_VM) ran its command (status $rc)" [ "$rc" = 0 ]
	check "nested guest b ($Q_VM) ran its command (status $rc_b)" [ "$rc_b" = 0 ]
	check "guest a lists a PVRDMA device ($(sed -n 's/^device=//p' "$T/facts"))" \
		grep -qx 'device=vmw_pvrdma[0-9]*' "$T/facts"
	check "ibv_devinfo runs and its port is ACTIVE" \
		bash -c 'grep -qx devinfo_rc=0 "$1" && grep -qx port_active=1 "$1"' _ "$T/facts"
	check "its GID table has ::ffff:$OP_ADDR ($(grep '^gid_index=' "$T/facts"))" \
		grep -qx 'gid_index=[0-9][0-9]*' "$T/facts"
	check "guest b: its PVRDMA device, port ACTIVE, ::ffff:$Q_ADDR in its GID table ($(grep -h '^device=\|^gid_index=' "$T/facts.b" | xargs))" \
		bash -c 'grep -qx "device=vmw_pvrdma[0-9]*" "$1" &&
			grep -qx "port_active=1" "$1" &&
			grep -qx "gid_index=[0-9][0-9]*" "$1"' _ "$T/facts.b"
	wait "$srv"
	rc=$?
	check "ibv_rc_pingpong guest -> native $PEER_DEV: client ok, server status $rc: $(tail -n 1 "$T/native.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx rc_pingpong=0 "$2"' _ "$rc" "$T/facts"
	wait "$long"
	rc=$?
	PIDS=
	check "the long ibv_rc_pingpong across the broker restart: client ok, server status $rc: $(tail -n 1 "$T/long.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx long_pingpong=0 "$2"' _ "$rc" "$T/facts"
	check "rping guest a -> guest b through both kernels' rdma_cm, their workers and the mux: client $(sed -n 's/^rping=//p' "$T/facts"), $(sed -n 's/^rping_lines=//p' "$T/facts") of $RPING_COUNT pings; server $(sed -n 's/^rping=//p' "$T/facts.b")" \
		bash -c 'grep -qx rping=0 "$1" && grep -qx rping=0 "$2" &&
			grep -qx "rping_lines=$3" "$1"' _ "$T/facts" "$T/facts.b" \
		"$RPING_COUNT"
	out=$(ctl stats --vm "$OP_VM" --json)
	check "the worker bound the guest's GID through the broker: $(jq -c '.[0] | {connects, gid_adds, gid_errors}' <<< "$out" 2>/dev/null)" \
		test "$(jq '.[0].gid_adds >= 1' <<< "$out")" = true
	for vm in "$OP_VM" "$Q_VM"; do
		out=$(ctl stats --vm "$vm" --json)
		check "$vm's guest CM MADs went through its QP1 on its worker: $(jq -c '.[0] | {mads_sent, mads_received, mad_errors}' <<< "$out" 2>/dev/null)" \
			test "$(jq '.[0].mads_sent >= 1 and .[0].mads_received >= 1' <<< "$out")" = true
	done
	rm -rf "$sync"
	elapsed "nested guests done; stop and release"
	q_stopped
	# libvirt runs release end once QEMU is gone
	op_stopped
	guest_tap_end facts err facts.b err.b native.out long.out
}

case ${1:-} in
--in-guest) shift; in_guest "$@"; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
operator_args pvrdma-operator.sh "$@"
# the mux owns the CM MAD class: no ib_cm in the test VM
GUEST_VM_OPTS=(--no-cm)
# 3400 s: at a load of 25-30 one nested guest's run alone took 1404 s and,
# once, more than 1500 s; two nested guests at once, at a load of 16,
# had not reached their command after 1200 s
guest_run_in_test_vm 3400 "$here/pvrdma-operator.sh" --in-vm "$@"
