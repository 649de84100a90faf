# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers of the guest suite's scripts (sourced after tests/tap.sh): QEMU
# 11.1 and the module cache, waits on files, PCI ids, QMP.

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
QEMU11=$GUEST_DIR/qemu-11

. "$GUEST_DIR/../clock.sh" # mono_ms, wait_for, not
. "$GUEST_DIR/../vm/host-gid.sh" # has_gid, gid_index, v4_gid

# nap SECONDS: sleep without a fork (read -t on a pipe this shell holds
# both ends of). A loop that polls for minutes would fork and exec
# /bin/sleep at every turn: under TCG each costs CPU that the nested
# guests' QEMUs lack, and inside a nested guest (its / is 9p over 9p) far
# more.
nap() {
	[ -n "${NAP_FD:-}" ] || exec {NAP_FD}<> <(:)
	read -r -t "$1" -u "$NAP_FD" || :
}

# has_text FILE TEXT: FILE has TEXT in a line (no fork: for a loop that
# polls while nested guests boot)
has_text() {
	local l
	[ -r "$1" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do
		[[ $l == *"$2"* ]] && return 0
	done < "$1"
	return 1
}

# count_text FILE TEXT: how many lines of FILE have TEXT (grep -c, no fork)
count_text() {
	local l n=0
	if [ -r "$1" ]; then
		while IFS= read -r l || [ -n "$l" ]; do
			[[ $l != *"$2"* ]] || n=$((n + 1))
		done < "$1"
	fi
	echo "$n"
}

# log_lines PREFIX FILE [ERE [N]]: FILE's lines, those that match ERE (all
# when it is empty), the last N of them (all without N), each after
# PREFIX; false when there is none.  grep, tail and sed in the shell
# itself, for the nested guest (a program started there costs seconds).
log_lines() {
	local l keep=()
	[ -r "$2" ] || return 1
	while IFS= read -r l || [ -n "$l" ]; do
		[ -z "${3:-}" ] || [[ $l =~ $3 ]] && keep+=("$1$l")
	done < "$2"
	[ -z "${4:-}" ] || [ "${#keep[@]}" -le "$4" ] || keep=("${keep[@]: -$4}")
	[ "${#keep[@]}" != 0 ] && printf '%s\n' "${keep[@]}"
}

# QEMU 11.1 from the cache, fetched on the host when missing; the whole
# test skips when it cannot be had (no Debian mirror reachable).
guest_need_qemu11() {
	local err
	err=$("$QEMU11" -q --fetch 2>&1) ||
		skip_all "QEMU 11.1 is not available: ${err##*error: }"
}

# wait_nap SECONDS COMMAND...: tests/clock.sh's wait_for, pausing with
# nap (the child processes it starts later inherit nap's pipe: not before
# a domain transition whose AVCs a test counts)
wait_nap() { WAIT_PAUSE=nap wait_for "$@"; }
# wait_file PATH SECONDS: PATH exists
wait_file() { wait_nap "$2" test -e "$1"; }
# wait_grep FILE PATTERN SECONDS: FILE has a line matching PATTERN
wait_grep() { wait_nap "$3" grep -qs -- "$2" "$1"; }

# The PCI vendor:device ids the kernel sees (upper case, as in uevent).
pci_ids() { sed -n 's/^PCI_ID=//p' /sys/bus/pci/devices/*/uevent; }
pci_has() { pci_ids | grep -qx "$1"; }

# qmp SOCKET COMMAND [KEY=VALUE...]: one QMP command; prints the reply.
# Values made of digits are sent as numbers.
qmp() {
	python3 - "$@" <<-'PY'
	import json, socket, sys
	path, cmd, args = sys.argv[1], sys.argv[2], {}
	for kv in sys.argv[3:]:
	    k, v = kv.split("=", 1)
	    args[k] = int(v) if v.isdigit() else v
	s = socket.socket(socket.AF_UNIX)
	s.connect(path)
	f = s.makefile("rw")
	def reply():
	    while True:
	        r = json.loads(f.readline())
	        if "event" not in r:
	            return r
	json.loads(f.readline())  # greeting
	for c in ({"execute": "qmp_capabilities"},
	          {"execute": cmd, "arguments": args}):
	    f.write(json.dumps(c) + "\n")
	    f.flush()
	    r = reply()
	print(json.dumps(r))
	sys.exit(0 if "return" in r else 1)
	PY
}

# fabric_guest_gid IP [NETDEV]: in the test VM (with -n 2 and the guest's
# tapN up: tap0 for 10.99.2.x, tap1 for 10.99.3.x), the routes for a nested
# guest whose address IP is also a GID on NETDEV, rxe0's veth0 by default
# or rxe1's veth1 (the broker adds it there for the PVRDMA device, so IP
# is local in the test VM; "addr replace" is harmless when the broker
# did). Locally generated packets to IP: RoCE from the other rxe (UDP with
# its veth as the output interface) crosses the veth pair to NETDEV's rxe,
# where the worker's QPs are; everything else (TCP, ICMP) goes out tapN to
# the guest's vmxnet3. Rules before the local table (at 100, moved there by
# tests/vm/rdmagate-vm). The RoCE rule has no "iif lo": rdma_cm's
# validate_net_dev() checks a REQ's source with a bare fib_lookup() (iif
# 0, oif the rxe's netdev), which must find the peer veth too, not the
# guest address's local route on NETDEV.
fabric_guest_gid() {
	local ip=$1 dev=${2:-veth0} peer src tbl tap
	case $dev in
	veth0) peer=veth1 src=10.99.0.2 tbl=103 ;;
	veth1) peer=veth0 src=10.99.0.1 tbl=105 ;;
	*) echo "fabric_guest_gid: NETDEV is veth0 or veth1, not $dev" >&2; return 1 ;;
	esac
	case $ip in
	10.99.2.*) tap=tap0 ;;
	10.99.3.*) tap=tap1 ;;
	*) echo "fabric_guest_gid: $ip is on no guest tap" >&2; return 1 ;;
	esac
	ip -batch - <<-EOT
	addr replace $ip/32 dev $dev
	rule add pref 8 oif $peer to $ip lookup $tbl
	route add $ip dev $peer src $src table $tbl
	neigh replace $ip lladdr $(cat /sys/class/net/"$dev"/address) dev $peer nud permanent
	rule add pref 9 iif lo to $ip lookup 102
	route add $ip dev $tap src ${ip%.*}.1 table 102
	EOT
}

# ip_gid DEV IPV4 SECONDS [TYPE]: the index of IPV4's mapped GID
# (::ffff:IPV4) in port 1 of DEV's table, of TYPE when given, once it is
# there (SECONDS)
ip_gid() {
	local g
	g=$(v4_gid "$2")
	wait_nap "$3" has_gid "$1" "$g" ${4:+"$4"} && gid_index "$1" "$g" ${4:+"$4"}
}

# guest_run_in_test_vm TIMEOUT SCRIPT ARG...: on the host, what a nested
# test needs before the test VM (it has no network): QEMU 11.1, the module,
# the nested initramfs, or skip saying why; then SCRIPT ARG... in the test
# VM with both rxe devices, and the rdmagate-vm options in GUEST_VM_OPTS
# (an array, e.g. (--no-cm)) if set.
guest_run_in_test_vm() {
	local t=$1 err
	shift
	guest_need_qemu11
	err=$("$GUEST_DIR/vmw-pvrdma-ko" -q 2>&1 > /dev/null) ||
		skip_all "vmw_pvrdma.ko cannot be built: ${err##*error: }"
	"$GUEST_DIR/nested-guest" --prepare > /dev/null || exit 1
	exec "$GUEST_DIR/../vm/rdmagate-vm" -n 2 -m 3G -t "$t" -b 300 \
		${GUEST_VM_OPTS[@]+"${GUEST_VM_OPTS[@]}"} -- "$@"
}

# operator_args NAME ARG...: on the host, the arguments of a test of the
# operator's path: BROKER RDMAGATECTL WORKER MUX HOOK, executable files (a
# wrong path would surface minutes later inside the test VM as a daemon
# that "is not up"), else usage and exit 2; and RDMAGATE_BUILD, the
# directory rdmagate-vm shares read-write at each level (meson sets it,
# ./dev demo runs pvrdma-operator.sh without)
operator_args() {
	local name=$1 f
	shift
	[ $# = 5 ] || { echo "usage: $name BROKER RDMAGATECTL WORKER MUX HOOK" >&2; exit 2; }
	for f in "$@"; do
		[ -f "$f" ] && [ -x "$f" ] ||
			{ echo "$name: $f: not an executable file" >&2; exit 2; }
	done
	: "${RDMAGATE_BUILD:=$(cd "$(dirname "$1")/.." && pwd -P)}"
	export RDMAGATE_BUILD
}

# pvrdma_facts IP: in the nested guest, the PVRDMA device as unmodified
# tools see it, as key=value lines: device= (ibv_devices' first),
# devinfo_rc= and port_active=1 (ibv_devinfo -v, kept in /tmp/devinfo),
# gid_index= (IP's GID in the device's table: the driver binds it when the
# address is added, through the worker and the broker, seconds under nested
# TCG). Sets PV_DEV and PV_GIDX; returns 1 without a device or that GID.
pvrdma_facts() {
	local l n=0
	PV_DEV='' PV_GIDX=''
	ibv_devices > /tmp/devices 2>&1
	# (a header, a rule, then a device per line)
	while read -r l _; do
		n=$((n + 1))
		[ "$n" -le 2 ] || { PV_DEV=$l; break; }
	done < /tmp/devices
	echo "device=$PV_DEV"
	[ -n "$PV_DEV" ] || return 1
	ibv_devinfo -v -d "$PV_DEV" > /tmp/devinfo 2>&1
	echo "devinfo_rc=$?"
	has_text /tmp/devinfo PORT_ACTIVE && echo "port_active=1"
	PV_GIDX=$(ip_gid "$PV_DEV" "$1" 60)
	echo "gid_index=$PV_GIDX"
	[ -n "$PV_GIDX" ]
}

# stop_when_done PID FILE...: in the test VM, a native server's end.  Waits
# while PID runs; once any FILE exists (the guest's client is done, or gave
# up) gives it 15 s to finish, then stops it.  Returns PID's status.
stop_when_done() {
	local p=$1 f
	shift
	while kill -0 "$p" 2>/dev/null; do
		for f in "$@"; do
			[ -e "$f" ] || continue
			wait_nap 15 eval '! kill -0 "$p" 2> /dev/null' ||
				kill "$p" 2>/dev/null
			break 2
		done
		nap 0.5
	done
	wait "$p"
}

# The nested guest's IPv6 link-local address (GID 0 of its PVRDMA device),
# from its vmxnet3 MAC on tap0 (02:00:00:00:02:02)
Q72_GUEST_LL=fe80::ff:fe00:202

# qemu72_stack DIR IP BROKER WORKER MUX: in the test VM, rdmagate-mux and
# the broker with a policy of one VM g72 whose frontend is QEMU 7.2's own
# pvrdma on rxe0 with address IP (docs/broker.md, "QEMU's own pvrdma"),
# sockets and logs in DIR; sets Q72_MUX_PID and Q72_BROKER_PID.  The VM's
# socket for QEMU is DIR/vm/g72.sock once `rdmagatectl spawn --vm g72`
# attached it.
qemu72_stack() {
	local d=$1 ip=$2 broker=$3 worker=$4 mux=$5
	# QEMU 7.2 wants every GID of its guest in the host's table, the
	# link-local one too: its management was to add them on QEMU's
	# RDMA_GID_STATUS_CHANGED events.  rdmagate's policy never grants
	# fe80::/10 (the host's own default GIDs), so we add it as libvirt
	# would have.  Without it QEMU 7.2 freezes its guest at the first RC
	# send: each send looks up the host index of the GID at the WQE's
	# ud.av.gid_index (0, the link-local, for an RC WR), and that lookup
	# never ends for a GID the host has not got (docs/real-guest.md).
	ip addr add "$Q72_GUEST_LL/128" dev "${RDMAGATE_VM_NETDEV0:-veth0}" scope link ||
		echo "# cannot add $Q72_GUEST_LL to ${RDMAGATE_VM_NETDEV0:-veth0}" >&2
	chmod 755 "$d"
	cat > "$d/policy.conf" <<-END
	[broker]
	control_socket = $d/control.sock
	socket_dir = $d/vm
	[vm g72]
	device = $RDMAGATE_VM_DEV0
	frontend = qemu-pvrdma
	addresses = $ip
	END
	chmod 644 "$d/policy.conf"
	"$mux" --control "$d/mux.sock" > "$d/mux.log" 2>&1 &
	Q72_MUX_PID=$!
	wait_grep "$d/mux.log" "mux: ready" 30
	"$broker" --policy "$d/policy.conf" --worker "$worker" \
		--state-dir "$d/state" --mux "$d/mux.sock" > "$d/broker.log" 2>&1 &
	Q72_BROKER_PID=$!
	wait_file "$d/control.sock" 30 &&
		wait_grep "$d/broker.log" "connected" 30
}

# qemu72_stop: after qemu72_stack (and the VM's stop), the broker and the
# mux stopped, the guest's link-local address gone
qemu72_stop() {
	ip addr del "$Q72_GUEST_LL/128" dev "${RDMAGATE_VM_NETDEV0:-veth0}" 2>/dev/null
	kill "$Q72_BROKER_PID" "$Q72_MUX_PID" 2>/dev/null
	wait "$Q72_BROKER_PID" "$Q72_MUX_PID" 2>/dev/null
}

# In the nested guest: what its boot gave it, as key=value lines (the
# checks are smoke_checks, in the test VM).  Each program started costs
# seconds in TCG inside TCG: builtins wherever they do.
smoke_facts() {
	local m n rest mnt fs fns=()
	while read -r m rest; do
		case $m in vmxnet3|vmw_pvrdma|ib_uverbs) echo "module_$m=1" ;; esac
	done < /proc/modules
	while read -r _ mnt fs rest; do
		[ "$mnt" != / ] || echo "root_fs=$fs"
	done < /proc/self/mounts
	for n in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_lat rping; do
		command -v "$n" > /dev/null && echo "tool_$n=1"
	done
	for n in /sys/bus/pci/devices/0000:00:10.*; do
		[ -e "$n" ] && fns+=("${n##*/}")
	done
	echo "slot_functions=${fns[*]}"
	# the harness configured eth0 as the vmxnet3 NIC (nested-guest)
	[ -e /sys/bus/pci/drivers/vmxnet3/0000:00:10.0/net/eth0 ] && echo "vmxnet3_eth0=1"
	busybox ping -c 1 -W 20 "$RDMAGATE_GUEST_GW" > /dev/null 2>&1 &&
		echo "ping_gateway=1"
	busybox ping -c 1 -W 20 10.99.0.2 > /dev/null 2>&1 && echo "ping_rxe1=1"
}

# In the test VM: smoke_facts' lines in FILE checked.  The guest's slot
# 0x10 holds vmxnet3 at .0 and the PVRDMA function (vfio-user-pci) at .1.
smoke_checks() { # FILE
	local f=$1
	_fact() { grep -qx "$1" "$f"; }
	check "vmxnet3 is loaded in the guest" _fact module_vmxnet3=1
	check "the built vmw_pvrdma.ko is loaded in the guest" _fact module_vmw_pvrdma=1
	check "the guest's / is the test VM's, over 9p" _fact root_fs=9p
	check "ibverbs-utils, perftest and rdmacm-utils are there" \
		bash -c 'grep -q tool_ibv_rc_pingpong=1 "$1" &&
			grep -q tool_ib_write_lat=1 "$1" && grep -q tool_rping=1 "$1"' _ "$f"
	check "slot 0x10: vmxnet3 at function 0, the PVRDMA device at 1" \
		_fact 'slot_functions=0000:00:10.0 0000:00:10.1'
	check "the vmxnet3 NIC is eth0, the interface the harness configured" _fact vmxnet3_eth0=1
	check "the vmxnet3 NIC reaches the test VM through tap0" _fact ping_gateway=1
	check "the guest reaches rxe1's address (10.99.0.2), routed" _fact ping_rxe1=1
}

# In the test VM, before a guest runs: RoCE to the guest's GID IP goes to
# rxe0 (the worker's device), not to the guest's vmxnet3: rxe0 serves on
# that GID, rxe1 connects (fabric_guest_gid's routes)
fabric_checks() { # IP
	local gidx rc out
	gidx=$(ip_gid rxe0 "$1" 5)
	check "the guest's address is a GID of rxe0 (index $gidx)" [ -n "$gidx" ]
	out=$(mktemp)
	timeout 60 ibv_rc_pingpong -d rxe0 -g "${gidx:-0}" -p 18600 -n 10 \
		> "$out.server" 2>&1 &
	sleep 1
	# (the tool's own TCP exchange goes to rxe0's address, 10.99.0.1)
	check "RoCE from rxe1 to the guest's GID reaches rxe0" bash -c \
		'timeout 60 ibv_rc_pingpong -d rxe1 -g 1 -p 18600 -n 10 \
			10.99.0.1 > "$1" 2>&1' _ "$out"
	wait $!
	rc=$?
	check "... and rxe0 answers from it (server status $rc)" [ "$rc" = 0 ]
	[ "$failed" = 0 ] || cat "$out" "$out.server" | diag
	rm -f "$out" "$out.server"
}

# guest_tap_end FILE...: in the test VM, on a failure, the end of each
# $T/FILE and the stack's dump (tests/vm/ops/lib.sh), so that a CI log
# alone says what went wrong; then the TAP plan
guest_tap_end() {
	local f
	if [ "$failed" != 0 ]; then
		for f in "$@"; do
			echo "--- $f"
			tail -n 40 "$T/$f"
		done | diag
		dump | diag
	fi
	tap_end
}
