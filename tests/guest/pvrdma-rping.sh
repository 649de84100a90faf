#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two nested guests connected by rping through rdma_cm and the mux: in the
# test VM, rdmagate-mux and the broker; two PVRDMA VMs, each its own
# broker-spawned worker (a on rxe0 with 10.99.2.2, b on rxe1 with
# 10.99.3.2); two QEMU 11.1 guests at once (tests/guest/nested-guest on
# tap0 and tap1), each with the upstream vmw_pvrdma driver.  Guest a runs
# `rping -s`, guest b `rping -c -C N -v` to it: both guests' kernel CM
# speak on their device's QP1, which the workers hand to the mux, which
# routes by full GID across the wire (rxe1 -> veth pair -> rxe0 and back);
# the RC connection's QPs are the workers'.
#
# Usage: pvrdma-rping.sh BROKER RDMAGATECTL WORKER MUX
#   (TAP; on the host: it boots the test VM, which boots both nested
#   guests; the same script runs at the three levels)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

A_IP=10.99.2.2 B_IP=10.99.3.2 RPING_PORT=7472 RPING_COUNT=10

# ---- level 3, a nested guest: facts as key=value lines.  ROLE server or
# client; SYNC a directory both guests and the test VM see (the build
# directory, over 9p at each level)
in_guest() {
	local role=$1 sync=$2 i rc
	if ! pvrdma_facts "$RDMAGATE_GUEST_IP"; then
		: > "$sync/$role.failed"
		return 0
	fi
	case $role in
	server)
		timeout 2400 rping -s -v -a "$A_IP" -p "$RPING_PORT" \
			-C "$RPING_COUNT" > /tmp/rping.out 2>&1 &
		# rping listens within a second; the client retries anyway
		sleep 2
		: > "$sync/server.listening"
		wait $!
		rc=$?
		;;
	client)
		# the other guest boots at the same time, not as fast
		for ((i = 0; i < 2400; i++)); do
			[ -e "$sync/server.listening" ] && break
			[ -e "$sync/server.failed" ] && break
			sleep 1
		done
		for i in 1 2 3; do
			timeout 300 rping -c -v -a "$A_IP" -p "$RPING_PORT" \
				-C "$RPING_COUNT" > /tmp/rping.out 2>&1
			rc=$?
			[ "$rc" = 0 ] && break
			sleep 5
		done
		;;
	esac
	echo "rping=$rc"
	echo "rping_lines=$(grep -c 'ping data: ' /tmp/rping.out)"
	sed 's/^/rping: /' /tmp/rping.out >&2
}

# ---- level 2, the test VM
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 T0=$SECONDS
	local vm out rc_a rc_b pa pb sync t0
	# shellcheck source=../vm/ops/lib.sh
	. "$here/../vm/ops/lib.sh"
	cat >> "$T/policy.conf" <<-END
	[vm ga]
	device = $RDMAGATE_VM_DEV0
	frontend = pvrdma
	addresses = $A_IP
	max_pinned = 1G
	[vm gb]
	device = $RDMAGATE_VM_DEV1
	frontend = pvrdma
	addresses = $B_IP
	max_pinned = 1G
	END
	start_services
	for vm in ga gb; do
		out=$(ctl spawn --vm $vm --socket "$T/$vm.sock" 2>&1)
		check "spawn $vm: $out" grep -q "worker/$vm: pid" <<< "$out"
		check "$vm got its mux channel" wait_for 30 in_log \
			"$T/broker.log" "worker/$vm: mux channel handed over"
	done
	"$here/nested-guest" --setup-fabric &&
		"$here/nested-guest" --tap 1 --setup-fabric &&
		fabric_guest_gid "$A_IP" veth0 &&
		ip addr del "$A_IP/32" dev veth0 &&
		fabric_guest_gid "$B_IP" veth1 &&
		ip addr del "$B_IP/32" dev veth1
	check "both guests' fabric and routes are set up (tap0, tap1)" test $? = 0
	sync=$(mktemp -d "$RDMAGATE_BUILD/pvrdma-rping.XXXXXX")
	chmod 777 "$sync"
	t0=$(now_ms)
	"$here/nested-guest" -b 2400 -t 3000 --vfio-user "$T/ga.sock" -- \
		"$here/pvrdma-rping.sh" --in-guest server "$sync" \
		> "$T/a.facts" 2> "$T/a.err" &
	pa=$!
	"$here/nested-guest" -b 2400 -t 3000 --tap 1 --vfio-user "$T/gb.sock" -- \
		"$here/pvrdma-rping.sh" --in-guest client "$sync" \
		> "$T/b.facts" 2> "$T/b.err" &
	pb=$!
	PIDS="$pa $pb"
	wait "$pa"
	rc_a=$?
	wait "$pb"
	rc_b=$?
	PIDS=
	echo "# two nested guests: $(($(now_ms) - t0)) ms in total"
	grep -h 'boot-to-command' "$T/a.err" "$T/b.err" | diag
	grep -h '^rping: ' "$T/a.err" "$T/b.err" | diag
	check "guest a ran its command (status $rc_a)" [ "$rc_a" = 0 ]
	check "guest b ran its command (status $rc_b)" [ "$rc_b" = 0 ]
	for vm in a b; do
		check "guest $vm: its PVRDMA device, port ACTIVE, its GID ($(grep -h '^device=\|^gid_index=' "$T/$vm.facts" | xargs))" \
			bash -c 'grep -qx "port_active=1" "$1" &&
				grep -qx "gid_index=[0-9][0-9]*" "$1"' _ "$T/$vm.facts"
	done
	check "rping b -> a through both guests' rdma_cm and the mux: client $(sed -n 's/^rping=//p' "$T/b.facts"), $(sed -n 's/^rping_lines=//p' "$T/b.facts") of $RPING_COUNT pings; server $(sed -n 's/^rping=//p' "$T/a.facts")" \
		bash -c 'grep -qx rping=0 "$1" && grep -qx rping=0 "$2" &&
			grep -qx "rping_lines=$3" "$2"' _ "$T/a.facts" "$T/b.facts" \
		"$RPING_COUNT"
	for vm in ga gb; do
		out=$(ctl stats --vm $vm --json)
		check "$vm's worker carried its guest's CM MADs: $(jq -c '.[0] | {gid_adds, mads_sent, mads_received, mad_errors}' <<< "$out" 2>/dev/null)" \
			test "$(jq '.[0].mads_sent >= 1 and .[0].mads_received >= 1' <<< "$out")" = true
	done
	for vm in ga gb; do
		check "stop $vm" ctl stop --vm $vm
	done
	rm -rf "$sync"
	guest_tap_end a.facts a.err b.facts b.err
}

case ${1:-} in
--in-guest) shift; in_guest "$@"; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
[ $# = 4 ] || { echo "usage: pvrdma-rping.sh BROKER RDMAGATECTL WORKER MUX" >&2; exit 2; }
# the mux owns the CM MAD class: no ib_cm in the test VM
GUEST_VM_OPTS=(--no-cm)
# two nested guests at once: at a load of 16 neither had reached its
# command after 1200 s (stage 1 after ~520 s of guest time)
guest_run_in_test_vm 3400 "$here/pvrdma-rping.sh" --in-vm "$@"
