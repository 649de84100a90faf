#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm --no-cm -n 2), in TAP: bookworm's QEMU 7.2
# with its in-process pvrdma, attached to rdmagate-mux by the real broker
# (frontend qemu-pvrdma, broker/qemu_pvrdma.c), as an operator runs it:
#  - the policy grants vm pv1 fd99::10 on rxe0 and vm b fd99::11; spawn of
#    pv1 adds fd99::10 to rxe0's netdev, makes pv1's socket (QEMU's uid
#    65534, 0600) and attaches it to the mux with its GID;
#  - QEMU 7.2, run as uid 65534 with -device pvrdma on that socket, boots
#    pvrdma-bind (tests/vm/mux/pvrdma_bind.c, standing in for the guest
#    driver): its CREATE_BIND of fd99::10 is REGistered, its CREATE_BIND
#    of b's fd99::11 (a spoof) is refused with the mux's clear line and
#    QEMU's "error code 3", its DESTROY_BINDs UNREGister;
#  - stop pv1: the mux forgets its GID and detaches it, the address leaves
#    rxe0's table, the socket goes (a QEMU without its socket does not
#    start: mux-rdmacm checks that).
# Usage: broker-qemu72.sh BROKER RDMAGATECTL WORKER MUX PVRDMA_BIND_ELF
set -u

BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 ELF=$5 GUEST=
T0=$SECONDS
. "$(dirname "$0")/../ops/lib.sh"
QEMU=/usr/bin/qemu-system-x86_64
[ -x "$QEMU" ] || { echo "1..0 # SKIP no $QEMU (bookworm's QEMU 7.2) in the test VM"; exit 0; }

( sleep 580; echo "# watchdog: still running"; dump | sed 's/^/# /' ) &
WATCHDOG=$!

# QEMU runs as uid 65534: its files live where that uid may write
Q=$T/qemu
mkdir -m 0777 "$Q"
cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock
socket_dir = $T/vm

[defaults]
max_pinned = 64M

[vm pv1]
device = rxe0
frontend = qemu-pvrdma
vmm_uid = 65534
addresses = $A
[vm b]
device = rxe1
addresses = $B
END
# the GIDs as pvrdma-bind takes them: 32 hex digits (sysfs form, no ':';
# no python: a program started under TCG in TCG costs seconds)
HA=${SA//:/} HB=${SB//:/}
# run_qemu APPEND: QEMU 7.2 as uid 65534 with vmxnet3 + pvrdma on rxe0,
# its mad-chardev on pv1's socket, pvrdma-bind as its kernel; its status
run_qemu() {
	rm -f "$Q/debugcon.txt"
	timeout 150 setpriv --reuid 65534 --regid 65534 --clear-groups \
		"$QEMU" -machine pc,accel=tcg,memory-backend=mem \
		-object memory-backend-ram,id=mem,size=128M,share=on -m 128M \
		-nodefaults -no-user-config -display none \
		-kernel "$ELF" -append "$1" -debugcon "file:$Q/debugcon.txt" \
		-device isa-debug-exit,iobase=0xf4,iosize=4 \
		-chardev "socket,id=mad,path=$T/vm/pv1.sock" \
		-device vmxnet3,addr=3.0,multifunction=on \
		-device "pvrdma,addr=3.1,ibdev=rxe0,ibport=1,netdev=$RDMAGATE_VM_NETDEV0,mad-chardev=mad" \
		> "$Q/qemu.err" 2>&1
}

# ---- attach ---------------------------------------------------------------------
elapsed "attach"
check "the mux is up" mux_start "$T/mux.log"
check "the broker is up (--mux)" start_broker "$T/broker.log"
check "the broker connected" \
	wait_for 5 in_log "$T/broker.log" "mux $T/mux.sock: connected"
out=$(ctl spawn --vm pv1 2>&1)
check "spawn pv1: $out" \
	grep -q "vm pv1: QEMU pvrdma attached to the mux, socket $T/vm/pv1.sock, 1 addresses" <<<"$out"
check "pv1's socket is its QEMU's: 65534, 0600" \
	test "$(stat -c '%u %a' "$T/vm/pv1.sock")" = "65534 600"
check "the broker added $A: in rxe0's table" wait_for 5 has_v2 rxe0 "$SA"
ia=$(v2_index rxe0 "$SA")
check "the mux serves pv1's socket for uid 65534" \
	wait_for 5 in_log "$T/mux.log" "vm pv1 (worker 1): rdmacm-mux endpoint for QEMU's pvrdma (uid 65534)"
check "the mux was told $A (rxe0 index $ia) is pv1's" \
	wait_for 5 in_log "$T/mux.log" "$A (rxe0 port 1 index $ia) is worker 1's"
check "the broker logged the attach" \
	wait_for 5 in_log "$T/broker.log" "vm pv1: attached to the mux's rdmacm-mux endpoint (mux worker 1, QEMU uid 65534)"

# ---- QEMU 7.2 -------------------------------------------------------------------
elapsed "QEMU 7.2"
run_qemu "b:0:$HA b:1:$HB u:1 u:0"
st=$?
# isa-debug-exit: 1 is pvrdma-bind's "done"
check "QEMU 7.2 (uid 65534) started with pvrdma on the broker's socket, ran pvrdma-bind, exited (status $st)" \
	test "$st" = 1
check "pvrdma-bind: done" in_log "$Q/debugcon.txt" "pvrdma-bind: done"
check "the guest's CREATE_BIND of $A completed" \
	in_log "$Q/debugcon.txt" "CREATE_BIND index 00 err 0000"
check "QEMU REGistered $A: the mux accepted it" \
	wait_for 5 in_log "$T/mux.log" "vm pv1 (worker 1): QEMU registered $A"
check "QEMU's REG of b's $B (a spoof): refused with a clear line" \
	wait_for 5 in_log "$T/mux.log" "QEMU's REG of $B: not a GID the broker gave this VM"
check "QEMU logged the refusal (EACCES, its error code 3)" \
	in_log "$Q/qemu.err" "error code 3"
check "DESTROY_BIND: QEMU UNREGistered $A" \
	wait_for 5 in_log "$T/mux.log" "vm pv1 (worker 1): QEMU unregistered $A"
check "QEMU's connection ended with it" \
	wait_for 5 in_log "$T/mux.log" "disconnected"
check "the broker refused nothing" not in_log "$T/broker.log" "refused"

# ---- teardown -------------------------------------------------------------------
elapsed "teardown"
out=$(ctl stop --vm pv1 2>&1)
check "stop pv1: $out" grep -q "vm pv1: detached" <<<"$out"
check "the mux removed $A from pv1" \
	wait_for 5 in_log "$T/mux.log" "$A removed from worker 1"
check "the mux detached pv1" \
	wait_for 5 in_log "$T/mux.log" "worker 1 (pv1) detached"
check "$A left rxe0's table" wait_for 5 not has_v2 rxe0 "$SA"
check "pv1's socket is gone" test ! -e "$T/vm/pv1.sock"
elapsed "done"
if [ "$failed" != 0 ]; then
	dump | diag
	diag < "$Q/qemu.err"
	[ -f "$Q/debugcon.txt" ] && diag < "$Q/debugcon.txt"
fi
tap_end
