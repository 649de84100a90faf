# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Helpers of the guest suite's scripts (sourced after tests/tap.sh): QEMU
# 11.1 and the module cache, waits on files, PCI ids, QMP.

GUEST_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
QEMU11=$GUEST_DIR/qemu-11

now_ms() { local t=${EPOCHREALTIME/./}; echo $((t / 1000)); }

# QEMU 11.1 from the cache, fetched on the host when missing; the whole
# test skips when it cannot be had (no Debian mirror reachable).
guest_need_qemu11() {
	local err
	err=$("$QEMU11" -q --fetch 2>&1) ||
		skip_all "QEMU 11.1 is not available: ${err##*error: }"
}

# wait_file PATH SECONDS: PATH exists
wait_file() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# wait_grep FILE PATTERN SECONDS: FILE has a line matching PATTERN
wait_grep() {
	local i
	for ((i = 0; i < $3 * 10; i++)); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

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

# wait_cmd SECONDS COMMAND...: COMMAND succeeds within SECONDS
wait_cmd() {
	local i n=$(($1 * 5))
	shift
	for ((i = 0; i < n; i++)); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}

# fabric_guest_gid IP: in the test VM (with -n 2 and tap0 up), the routes
# for a nested guest whose address IP is also a GID on rxe0's netdev (the
# broker adds it there for the PVRDMA device, so IP is local in the test
# VM; "addr replace" is harmless when the broker did). Locally generated
# packets to IP: RoCE from rxe1 (UDP with rxe1's veth1 as the output
# interface) crosses the veth pair to rxe0, where the worker's QPs are;
# everything else (TCP, ICMP) goes out tap0 to the guest's vmxnet3. Rules
# before the local table (at 100, moved there by tests/vm/rdmagate-vm).
fabric_guest_gid() {
	ip -batch - <<-EOT
	addr replace $1/32 dev veth0
	rule add pref 8 iif lo oif veth1 to $1 lookup 103
	route add $1 dev veth1 src 10.99.0.2 table 103
	neigh replace $1 lladdr 02:00:00:00:00:01 dev veth1 nud permanent
	rule add pref 9 iif lo to $1 lookup 102
	route add $1 dev tap0 src 10.99.2.1 table 102
	EOT
}

# gid_index DEV IPV4: the index of IPV4's RoCE GID (::ffff:IPV4) in port 1
# of DEV's table, from sysfs (full hex form), once it is there (5 s)
gid_index() {
	local hex f i
	hex=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
	for ((i = 0; i < 50; i++)); do
		f=$(grep -lx "$hex" /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null)
		[ -z "$f" ] || { echo "${f##*/}"; return 0; }
		sleep 0.1
	done
	return 1
}

# guest_run_in_test_vm TIMEOUT SCRIPT ARG...: on the host, what a nested
# test needs before the test VM (it has no network): QEMU 11.1, the module,
# the nested initramfs, or skip saying why; then SCRIPT ARG... in the test
# VM with both rxe devices (and GUEST_TEST_VM_OPTS, e.g. --no-cm).
guest_run_in_test_vm() {
	local t=$1 err
	shift
	guest_need_qemu11
	err=$("$GUEST_DIR/vmw-pvrdma-ko" -q 2>&1 > /dev/null) ||
		skip_all "vmw_pvrdma.ko cannot be built: ${err##*error: }"
	"$GUEST_DIR/nested-guest" --prepare > /dev/null || exit 1
	# shellcheck disable=SC2086 # options, split on purpose
	exec "$GUEST_DIR/../vm/rdmagate-vm" -n 2 -m 3G -t "$t" -b 300 \
		${GUEST_TEST_VM_OPTS:-} -- "$@"
}
