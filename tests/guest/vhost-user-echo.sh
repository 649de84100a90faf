#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The worker's vhost-user transport under stock QEMU 11.1: the echo test
# device behind vhost-user-test-device-pci, its realize session, the guest's
# view, and QEMU's reconnect after the worker restarts.
#
# Usage: vhost-user-echo.sh WORKER  (TAP; runs on the host, QEMU under TCG)
#
# virtio-id=38 stands in for virtio-rdma (42), which QEMU 11.1 cannot name
# (docs/real-guest.md). With reconnect-ms the chardev connects in the
# background, so a device given with -device fails to realize ("Failed to
# set msg fds"): it is hot-plugged over QMP once the chardev is connected,
# as libvirt would. QEMU 11.1 aborts when the backend of a realized
# vhost-user-test-device that no guest driver started goes away
# (vub_disconnect stops a device that never started: an assertion in
# memory_region_del_eventfd), and its reconnect path never repeats
# vhost_dev_init; so the worker restart is done as an operator must do it
# with this QEMU: unplug, restart the worker, let the chardev reconnect,
# plug again.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"
. "$here/../exit.sh" # on_exit, stop

# ---- inside the VM: report the device, then wait for the host's steps
if [ "${1:-}" = --in-guest ]; then
	D=$2
	: > "$D/guest-up"
	wait_file "$D/plugged" 120 || exit 3
	for ((i = 0; i < 100; i++)); do
		pci_has 1AF4:1066 && break
		sleep 0.1
	done
	pci_ids > "$D/pci-plugged"
	wait_file "$D/unplugged" 120 || exit 4
	pci_ids > "$D/pci-unplugged"
	wait_file "$D/replugged" 120 || exit 5
	for ((i = 0; i < 100; i++)); do
		pci_has 1AF4:1066 && break
		sleep 0.1
	done
	pci_ids > "$D/pci-replugged"
	exit 0
fi

WORKER=${1:?usage: vhost-user-echo.sh WORKER}
[ -x "$WORKER" ] || { echo "no worker at $WORKER" >&2; exit 1; }
guest_need_qemu11

D=$(mktemp -d /tmp/rg-guest-vu.XXXXXX)
WP='' VP=''
on_exit 'rm -rf "$D"'
on_exit 'stop "$WP" "$VP"'

start_worker() {
	"$WORKER" -v --test-device echo --socket "$D/vu.sock" 2> "$D/$1" &
	WP=$!
	wait_file "$D/vu.sock" 10
}
# the messages of QEMU's realize session, in the order the worker logged them
session() { sed -n 's/^worker: debug: //p' "$D/$1" | tr '\n' ' '; }
# plug LOG WHAT: device_add on the chardev; the worker logging to LOG must
# see the whole realize session
plug() {
	local s
	qmp "$D/qmp.sock" device_add driver=vhost-user-test-device-pci id=vu0 \
		chardev=vu virtio-id=38 > "$D/qmp-$1" 2>&1
	check "device_add vhost-user-test-device-pci,virtio-id=38 $2" \
		grep -q '"return"' "$D/qmp-$1"
	wait_grep "$D/$1" SET_VRING_ERR 20
	s=$(session "$1")
	echo "# $1: $s"
	check "the worker saw QEMU's whole realize session" [ "$s" = "$REALIZE" ]
}
REALIZE="GET_FEATURES GET_PROTOCOL_FEATURES SET_PROTOCOL_FEATURES"
REALIZE+=" GET_QUEUE_NUM GET_MAX_MEM_SLOTS SET_OWNER GET_FEATURES"
REALIZE+=" SET_VRING_CALL SET_VRING_ERR "

check "worker 1 listens on its socket" start_worker worker1.log
t0=$(mono_ms)
RDMAGATE_VM_QEMU=$QEMU11 "$here/../vm/rdmagate-vm" -n 0 -s 1 \
	-m 512M --memfd -t 200 -S "$D" \
	-Q -chardev -Q "socket,id=vu,path=$D/vu.sock,reconnect-ms=200" \
	-Q -qmp -Q "unix:$D/qmp.sock,server=on,wait=off" \
	-- "$here/vhost-user-echo.sh" --in-guest "$D" > "$D/vm.out" 2> "$D/vm.err" &
VP=$!

check "the guest booted under QEMU 11.1" wait_file "$D/guest-up" 150
echo "# boot to the guest's command: $(( $(mono_ms) - t0 )) ms"
check "QEMU's chardev connected to worker 1" \
	wait_grep "$D/worker1.log" 'frontend connected' 20
plug worker1.log "succeeds"
: > "$D/plugged"
check "the guest lists PCI 1af4:1066" wait_grep "$D/pci-plugged" 1AF4:1066 30

# the device goes first: QEMU 11.1 cannot survive its backend's exit
qmp "$D/qmp.sock" device_del id=vu0 > "$D/qmp-del" 2>&1
check "device_del vu0 succeeds" grep -q '"return"' "$D/qmp-del"
# QEMU answers, and no longer knows the device
vu0_gone() {
	local r
	r=$(qmp "$D/qmp.sock" qom-list path=/machine/peripheral/vu0)
	[[ $r == *'"error"'*DeviceNotFound* ]]
}
check "the guest ejected the device (ACPI hotplug)" wait_nap 30 vu0_gone
: > "$D/unplugged"
kill "$WP"
wait "$WP"
rc=$?
WP=
check "worker 1 stops on SIGTERM (status $rc)" test "$rc" = 143
t1=$(mono_ms)
check "worker 2 listens on the same socket" start_worker worker2.log
check "QEMU's chardev reconnects to worker 2 (reconnect-ms=200)" \
	wait_grep "$D/worker2.log" 'frontend connected' 20
echo "# reconnected after $(( $(mono_ms) - t1 )) ms"
plug worker2.log "on the reconnected chardev succeeds"
check "the worker logged no protocol violation" \
	bash -c '! grep -q "refused\|dropping the connection" "$1"/worker*.log' _ "$D"
: > "$D/replugged"
wait "$VP"
rc=$?
VP=
check "the guest command exited 0 (status $rc)" [ "$rc" = 0 ]
check "the guest saw the device leave" bash -c '! grep -q 1AF4:1066 "$1"' _ "$D/pci-unplugged"
check "the guest lists PCI 1af4:1066 again" grep -q 1AF4:1066 "$D/pci-replugged"
if [ "$failed" != 0 ]; then
	for f in vm.err worker1.log worker2.log; do
		echo "# --- $f"
		diag < "$D/$f"
	done
fi
tap_end
