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
# KVM in the test VM); vm-p's also boots the nested guest of
# tests/guest/nested-guest (its kernel, initramfs, console, ports and 9p
# shares added by tests/guest/libvirt-vmm.sh). virsh define and start:
# libvirtd runs the hook, the broker spawns the sandboxed worker, QEMU (as
# the <seclabel>'s uid) connects to it; a second domain vm-q at the same
# time, with its own QEMU and worker uids; managedsave refused, migrate
# refused by the hook's migrate begin on the destination (this same
# libvirtd), the domain and its worker untouched; vm-q's worker killed
# under its QEMU (what libvirt and QEMU say, in diagnostics), vm-q
# destroyed, started again (a new worker) and destroyed: the hook's release
# end stops its worker. Meanwhile vm-p's nested guest boots: its upstream
# vmw_pvrdma binds its GID through the worker and the broker, and it runs
# ibv_rc_pingpong against a native peer on rxe1; `virsh reset` under a
# longer one (the host objects of the guest's traffic live): the worker
# sees the device reset and frees them, the guest boots again and runs
# ibv_rc_pingpong again; then vm-p's worker killed (-9) under the guest's
# traffic: what QEMU, the guest and libvirt do, in diagnostics
# (docs/operations.md); virsh destroy or QEMU's end: the hook's release
# end, nothing left. The refused starts are the host test hook-libvirt's.
# docs/libvirt-hook.md ("Under libvirtd").
#
# Usage: libvirt-operator.sh BROKER RDMAGATECTL WORKER MUX HOOK
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"
. "$here/libvirt-lib.sh"

# vm-p's nested guest against native ibv_rc_pingpong servers on rxe1, one
# per step: 1 traffic, 2 the reset under traffic (more iterations than it
# can finish before the reset), 3 traffic after the reset, 4 the worker
# killed under traffic
PEER_IP=10.99.0.2 PEER_DEV=rxe1 PORT0=18520 ITERS=20
LONG_ITERS=1000000 KILL_ITERS=100000000

# ---- level 3, vm-p's nested guest: facts as key=value lines, b1_ on its
# first boot, b2_ after the reset (SYNC/phase, written by the test VM
# before `virsh reset`, says which: the guest's init runs this again at
# each boot)
in_guest() {
	local sync=$1 b=b1 phase='' rc l up lines
	read -r phase 2> /dev/null < "$sync/phase"
	[ "$phase" = reset ] && b=b2
	read -r up _ < /proc/uptime
	echo "${b}_boot=1"
	echo "${b}_uptime=$up"
	pvrdma_facts "$RDMAGATE_GUEST_IP" > /tmp/facts
	rc=$?
	while read -r l; do echo "${b}_$l"; done < /tmp/facts
	log_lines "$b devinfo: " /tmp/devinfo 'hca_id|state:|GID\[' >&2
	[ "$rc" = 0 ] || { echo "${b}_end=1"; return 0; }
	pp() { # PORT ITERS TIMEOUT
		timeout "$3" ibv_rc_pingpong -d "$PV_DEV" -g "$PV_GIDX" -p "$1" \
			-n "$2" "$PEER_IP" > /tmp/pp.out 2>&1
	}
	if [ "$b" = b1 ]; then
		pp $((PORT0 + 1)) "$ITERS" 300
		echo "b1_rc_pingpong=$?"
		log_lines 'b1 rc_pingpong: ' /tmp/pp.out >&2
		# the test VM resets the domain under this one
		pp $((PORT0 + 2)) "$LONG_ITERS" 900
		echo "b1_long_pingpong=$?"
		log_lines 'b1 long_pingpong: ' /tmp/pp.out >&2
	else
		pp $((PORT0 + 3)) "$ITERS" 300
		echo "b2_rc_pingpong=$?"
		log_lines 'b2 rc_pingpong: ' /tmp/pp.out >&2
		# the test VM kills the worker under this one (3 s into its
		# traffic; a client left without completions waits for them)
		dmesg > /tmp/dmesg.0
		mapfile -t lines < /tmp/dmesg.0
		pp $((PORT0 + 4)) "$KILL_ITERS" 40
		echo "b2_kill_pingpong=$?"
		log_lines 'b2 kill_pingpong: ' /tmp/pp.out >&2
		dmesg > /tmp/dmesg.1
		mapfile -t -s "${#lines[@]}" lines < /tmp/dmesg.1
		printf '%s\n' "${lines[@]}" > /tmp/dmesg.kill
		log_lines 'b2 dmesg: ' /tmp/dmesg.kill '[Pp][Vv][Rr][Dd][Mm][Aa]' | head -n 12 >&2
	fi
	echo "${b}_end=1"
}

# ---- level 2 helpers
# worker_objects PID: the worker's verbs objects (QP, CQ, MR, PD) on any
# device, one line each, as rdma(8) lists them
worker_objects() {
	local k
	for k in qp cq mr pd; do
		rdma res show "$k" 2> /dev/null | grep " pid $1 "
	done
}

# guest_step FACT SECONDS: the nested guest printed FACT= (its facts
# stream into $T/facts), or its run ended, or SECONDS passed
guest_step() {
	local i
	for ((i = 0; i < $2; i++)); do
		has_text "$T/facts" "$1=" && return 0
		kill -0 "$NG_PID" 2> /dev/null || return 1
		nap 1
	done
	return 1
}

# traffic_up STEP: step STEP's native server is connected to the guest's
# client (its TCP exchange is done) and the worker has an RC QP in RTS
traffic_up() {
	wait_for 600 in_log "$T/native-$1.out" "remote address" &&
		wait_for 120 bash -c 'rdma res show qp | grep " pid $1 " |
			grep -q "type RC state RTS"' _ "$OP_PID"
}

# native_rc STEP: NRC, step STEP's native server's exit status once it
# ended (30 s after the guest's client, then it is stopped)
native_rc() {
	local p=${NATIVE[$1]}
	wait_for 30 gone "$p" || kill "$p" 2> /dev/null
	wait "$p"
	NRC=$?
}

# guest_checks B: the PVRDMA device as vm-p's nested guest saw it on boot B
guest_checks() {
	local b=$1 f=$T/facts
	check "$b: the guest under libvirtd lists a PVRDMA device ($(sed -n "s/^${b}_device=//p" "$f"))" \
		grep -qx "${b}_device=vmw_pvrdma[0-9]*" "$f"
	check "$b: ibv_devinfo runs, its port is ACTIVE, ::ffff:$OP_ADDR in its GID table ($(grep "^${b}_gid_index=" "$f"))" \
		bash -c 'grep -qx "$1_devinfo_rc=0" "$2" && grep -qx "$1_port_active=1" "$2" &&
			grep -qx "$1_gid_index=[0-9][0-9]*" "$2"' _ "$b" "$f"
}

# nested_steps QPID SYNC: vm-p's nested guest (QEMU pid QPID) under
# libvirtd: traffic, `virsh reset` under traffic, traffic again, the
# worker killed under traffic. Returns at the first step that cannot go on.
nested_steps() {
	local qpid=$1 sync=$2 qpns before st i
	# ---- traffic through the worker under libvirtd
	guest_step b1_rc_pingpong 2400
	echo "the guest's command began at its uptime $(sed -n 's/^b1_uptime=//p' "$T/facts") s" | diag
	guest_checks b1
	native_rc 1
	check "b1: ibv_rc_pingpong guest -> native $PEER_DEV under libvirtd: client $(sed -n 's/^b1_rc_pingpong=//p' "$T/facts"), server $NRC: $(tail -n 1 "$T/native-1.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx b1_rc_pingpong=0 "$2"' _ "$NRC" "$T/facts" ||
		return 1
	# the region the worker refuses at each start (no fd): what QEMU
	# maps that is not guest RAM
	echo "the worker's DMA_MAP refusals so far: $(grep -c "worker/$OP_VM: .*refusing DMA_MAP" "$T/broker.log"); QEMU's RAM device regions:" | diag
	virsh qemu-monitor-command "$OP_VM" --hmp 'info mtree -f' 2>&1 |
		grep -i 'ramd' | sort -u | head -n 8 | diag
	elapsed "b1 traffic"

	# ---- virsh reset under the guest's traffic, with live host objects
	check "b1: the guest's long ibv_rc_pingpong runs through the worker (an RC QP in RTS)" \
		traffic_up 2 || return 1
	sleep 1
	qpns=$(rdma res show qp | grep " pid $OP_PID " | grep -o 'lqpn [0-9]*' | xargs)
	before=$(worker_objects "$OP_PID" | wc -l)
	echo reset > "$sync/phase"
	out=$(virsh reset "$OP_VM" 2>&1)
	check "virsh reset $OP_VM under the guest's traffic ($before host objects of the worker, $qpns): $out" \
		test $? = 0 || return 1
	check "the worker saw the device reset" wait_for 60 in_log "$T/broker.log" \
		"worker/$OP_VM: vfio-user client reset the device"
	check "the reset freed the guest's host objects (none of the QPs $qpns is left)" \
		wait_for 60 bash -c '[ -n "$2" ] || exit 1; q=$(rdma res show qp | grep " pid $1 ")
			for n in ${2//lqpn /}; do grep -q "lqpn $n " <<< "$q" && exit 1; done; exit 0' \
		_ "$OP_PID" "$qpns"
	check "the same QEMU (pid $qpid) and worker (pid $OP_PID) run, the domain too" bash -c \
		'[ "$(virsh -q -c qemu:///system domstate "$1")" = running ] &&
			kill -0 "$2" && kill -0 "$3"' _ "$OP_VM" "$qpid" "$OP_PID"
	kill "${NATIVE[2]}" 2> /dev/null
	wait "${NATIVE[2]}"
	tail -n 2 "$T/native-2.out" | sed 's/^/native long server after the reset: /' | diag
	elapsed "reset"

	# ---- after the reset: the guest boots again, traffic again
	guest_step b2_rc_pingpong 2400
	echo "after the reset, the guest's command began at its uptime $(sed -n 's/^b2_uptime=//p' "$T/facts") s" | diag
	check "the guest booted again after the reset; its first command never ended ($(grep -c '^b1_long_pingpong=' "$T/facts") b1_long_pingpong)" \
		bash -c 'grep -qx b2_boot=1 "$1" && ! grep -q "^b1_long_pingpong=" "$1"' _ "$T/facts"
	guest_checks b2
	native_rc 3
	check "b2: ibv_rc_pingpong again after the reset: client $(sed -n 's/^b2_rc_pingpong=//p' "$T/facts"), server $NRC: $(tail -n 1 "$T/native-3.out")" \
		bash -c '[ "$1" = 0 ] && grep -qx b2_rc_pingpong=0 "$2"' _ "$NRC" "$T/facts" ||
		return 1
	elapsed "b2 traffic"

	# ---- vm-p's worker killed under the guest's traffic: what QEMU, the
	# guest and libvirt do (docs/operations.md)
	check "b2: the guest's traffic for the kill runs through the worker" \
		traffic_up 4 || return 1
	sleep 3
	before=$(worker_objects "$OP_PID" | wc -l)
	kill -9 "$OP_PID"
	check "kill -9 of $OP_VM's worker under the guest's traffic ($before host objects)" \
		test "$before" -gt 0
	check "the broker reaped it" wait_for 30 in_log "$T/broker.log" \
		"worker/$OP_VM (pid $OP_PID) killed by SIGKILL"
	check "no verbs object of the worker is left" \
		wait_for 30 bash -c '[ -z "$(rdma res show qp | grep " pid $1 ")" ]' _ "$OP_PID"
	nap 5
	echo "$OP_VM 5 s after: domstate $(virsh domstate --reason "$OP_VM" 2>&1), QEMU $(kill -0 "$qpid" 2> /dev/null && echo running || echo gone)" | diag
	# the guest's client gives up after 40 s, then the guest powers off;
	# QEMU may end before
	for ((i = 0; i < 240; i++)); do
		has_text "$T/facts" b2_end= && break
		kill -0 "$qpid" 2> /dev/null || break
		nap 1
	done
	elapsed "after the kill: $(has_text "$T/facts" b2_end= && echo "the guest's command ended" || echo "QEMU ended first")"
	# (a guest done powers off: wait for that, to see a settled state)
	! has_text "$T/facts" b2_end= || wait_for 60 gone "$qpid"
	st=$(virsh domstate --reason "$OP_VM" 2>&1)
	echo "$OP_VM after kill -9 of its worker under traffic: domstate $st, QEMU $(kill -0 "$qpid" 2> /dev/null && echo running || echo gone), the guest's client: $(sed -n 's/^b2_kill_pingpong=//p' "$T/facts")" | diag
	# QEMU's first lines after the kill, and its last
	sed -n '/header: EOF\|Broken pipe\|Bad address\|Assertion/p' \
		"/var/log/libvirt/qemu/$OP_VM.log" | head -n 5 | diag
	tail -n 3 "/var/log/libvirt/qemu/$OP_VM.log" | diag
	grep -h '^b2 kill_pingpong: \|^b2 dmesg: ' "$T/err" | tail -n 16 | diag
	check "libvirt's state follows QEMU's: $st" bash -c \
		'if kill -0 "$1" 2> /dev/null; then [[ $2 == running* ]];
		else [[ $2 == "shut off"* ]]; fi' _ "$qpid" "$st"
	check "the guest's traffic stopped with an error, or QEMU ended (client $(sed -n 's/^b2_kill_pingpong=//p' "$T/facts"))" \
		bash -c '! kill -0 "$1" 2> /dev/null && ! grep -qx b2_kill_pingpong=0 "$2" ||
			{ grep -q "^b2_kill_pingpong=" "$2" && ! grep -qx b2_kill_pingpong=0 "$2"; }' \
		_ "$qpid" "$T/facts"
}

# ---- level 2, the test VM
in_vm() {
	local BROKER=$1 CTL=$2 WORKER=$3 MUX=$4 HOOK=$5 GUEST= T0=$SECONDS
	local out rc qpid q_pid q_wpid st sync i qpns before grc NG_PID=
	local -a NATIVE
	# shellcheck source=../vm/ops/lib.sh
	. "$here/../vm/ops/lib.sh"
	# shellcheck source=../vm/ops/pvrdma-lib.sh
	. "$here/../vm/ops/pvrdma-lib.sh"
	pvrdma_vm_policy "$Q_VM" "$RDMAGATE_VM_DEV1" "$Q_ADDR" "$Q_VMM"
	start_services
	# the guests' taps; vm-p's guest's routes (its address goes on
	# veth0 only when its driver binds the GID: the broker adds it then)
	"$here/nested-guest" --setup-fabric && "$here/nested-guest" --tap 1 --setup-fabric &&
		fabric_guest_gid "$OP_ADDR" "$RDMAGATE_VM_NETDEV0" &&
		ip addr del "$OP_ADDR/32" dev "$RDMAGATE_VM_NETDEV0"
	check "the guests' taps (tap0, tap1) and vm-p's guest's routes are set up" test $? = 0
	for i in 1 2 3 4; do
		st=$ITERS
		[ "$i" != 2 ] || st=$LONG_ITERS
		[ "$i" != 4 ] || st=$KILL_ITERS
		timeout 3000 stdbuf -oL ibv_rc_pingpong -d "$PEER_DEV" -g 1 \
			-p $((PORT0 + i)) -n "$st" > "$T/native-$i.out" 2>&1 &
		NATIVE[i]=$!
		PIDS="$PIDS $!"
	done

	# ---- vm-p's document: the nested guest's harness (rdmagate-vm,
	# one level down) hands its QEMU arguments to libvirt-vmm.sh, which
	# completes the document and waits while libvirt runs the domain.
	# The worker's socket appears only when libvirtd's hook starts it.
	# (Its preparation runs while libvirtd starts.)
	sync=$(mktemp -d "${RDMAGATE_BUILD:?the build directory, shared with the guest}/libvirt-operator.XXXXXX")
	chmod 755 "$sync"
	domain_xml "$OP_VM" > "$T/$OP_VM.base.xml"
	LV_NESTED_IN=$T/$OP_VM.base.xml LV_NESTED_OUT=$T/$OP_VM.xml \
		LV_NESTED_VM=$OP_VM LV_NESTED_ID=$OP_VMM:$OP_VMM \
		NESTED_GUEST_QEMU=$here/libvirt-vmm.sh NESTED_GUEST_SOCKET_LATER=1 \
		"$here/nested-guest" -b 2400 -t 3000 --vfio-user "$OP_SOCK" -- \
		"$here/libvirt-operator.sh" --in-guest "$sync" \
		> "$T/facts" 2> "$T/err" &
	NG_PID=$!
	PIDS="$PIDS $NG_PID"
	if ! libvirt_up; then
		not_ok "libvirtd is up: $(tail -n 5 "$T/libvirtd.out" "$T/libvirtd.log")"
		tap_end
		exit 1
	fi
	ok "libvirtd is up: $(/usr/sbin/libvirtd --version)"
	elapsed "libvirtd up"
	wait_for 300 test -s "$T/$OP_VM.xml"
	check "vm-p's document boots the nested guest (its kernel, initramfs, ports and shares)" \
		bash -c 'grep -q "<kernel>" "$1" && grep -q rdmagate.status "$1"' _ "$T/$OP_VM.xml" ||
		tail -n 5 "$T/err" | diag
	domain_xml "$Q_VM" > "$T/$Q_VM.xml"
	for vm in "$OP_VM" "$Q_VM"; do
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
	wait_for 10 gone "$q_pid"
	echo "$Q_VM after kill -9 of its worker: domstate $(virsh domstate --reason "$Q_VM" 2>&1), QEMU $(kill -0 "$q_pid" 2> /dev/null && echo running || echo gone); its log:" | diag
	tail -n 6 "/var/log/libvirt/qemu/$Q_VM.log" | diag
	if [ "$(virsh domstate "$Q_VM")" = running ]; then
		out=$(virsh destroy "$Q_VM" 2>&1)
		check "virsh destroy $Q_VM: $out" test $? = 0
	fi
	check "$Q_VM: no worker, socket or state record left" bash -c \
		'! kill -0 "$1" 2> /dev/null && ! test -e "$2" && ! test -e "$3"' _ \
		"$q_wpid" "$Q_SOCK" "$T/state/workers/$Q_VM.state"
	# ---- vm-q again: a new worker; destroy: the hook's release end
	# stops it
	out=$(virsh start "$Q_VM" 2>&1)
	check "virsh start $Q_VM again after its worker's death: $out" test $? = 0
	q_pid=$(qemu_pid "$Q_VM") st=$(worker_pid "$Q_VM")
	wait_for 60 bash -c '[ "$(grep -c "worker/$1: frontend connected" "$2")" -ge 2 ]' _ \
		"$Q_VM" "$T/broker.log"
	check "$Q_VM has a new worker (pid ${st:-none}, was $q_wpid), which accepted its QEMU" \
		bash -c '[ -n "$1" ] && [ "$1" != "$2" ] &&
			[ "$(grep -c "worker/$3: frontend connected" "$4")" -ge 2 ]' _ \
		"$st" "$q_wpid" "$Q_VM" "$T/broker.log"
	out=$(virsh destroy "$Q_VM" 2>&1)
	check "virsh destroy $Q_VM: $out" test $? = 0
	check "$Q_VM's QEMU is gone" gone "$q_pid"
	check "the broker stopped $Q_VM's worker at libvirt's release end" \
		wait_for 30 in_log "$T/broker.log" "worker/$Q_VM (pid $st) stopped: killed by SIGTERM"
	check "$Q_VM: no worker, socket or state record left" bash -c \
		'! kill -0 "$1" 2> /dev/null && ! test -e "$2" && ! test -e "$3"' _ \
		"$st" "$Q_SOCK" "$T/state/workers/$Q_VM.state"
	elapsed "vm-q done; vm-p's nested guest boots"

	nested_steps "$qpid" "$sync"

	# ---- destroy, if the guest did not power off: the hook's release
	# end, nothing left
	if [ "$(virsh domstate "$OP_VM")" = running ]; then
		out=$(virsh destroy "$OP_VM" 2>&1)
		check "virsh destroy $OP_VM: $out" test $? = 0
	fi
	elapsed "after the kill: QEMU $(kill -0 "$qpid" 2> /dev/null && echo running || echo gone)"
	# the nested guest's harness ends with its QEMU (libvirt-vmm.sh once
	# missed libvirt's pid file and waited out its 600 s): if it does not
	# within 30 s, what its processes do
	if ! wait_for 30 gone "$NG_PID"; then
		ps -eo pid,ppid,stat,etimes,wchan:24,args |
			grep -E 'libvirt-vmm|rdmagate-vm|qemu-system|nested-guest|PID' |
			grep -v grep | cut -c1-200 | sed 's/^/30 s after: /' | diag
	fi
	wait "$NG_PID"
	grc=$?
	elapsed "the nested guest's harness ended"
	echo "the nested guest's harness: exit $grc; $(grep -h 'rdmagate-vm: .*boot-to-command\|rdmagate-vm: error' "$T/err" | tail -n 2 | tr '\n' ' ')" | diag
	check "both QEMUs are gone" gone "$qpid" "$q_pid"
	op_gone
	rm -rf "$sync"
	elapsed "reset, worker killed, destroyed"

	[ "$failed" = 0 ] || tail -n 30 "$T/libvirtd.log" | diag
	[ "$failed" = 0 ] || grep -h '^b[12] ' "$T/err" | tail -n 40 | diag
	guest_tap_end libvirtd.out broker.log facts err
}

case ${1:-} in
--in-guest) shift; in_guest "$@"; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit ;;
esac

# ---- level 1, the host
operator_args libvirt-operator.sh "$@"
for f in /usr/sbin/libvirtd /usr/sbin/virtlogd /usr/bin/virsh; do
	[ -x "$f" ] || skip_all "no $f: libvirt is not installed (./dev installs libvirt-daemon, libvirt-daemon-driver-qemu and libvirt-clients)"
done
GUEST_VM_OPTS=(--no-cm)
# a nested guest booted twice (the reset): ~2 min each on a quiet machine,
# far more under load (pvrdma-operator's 3400 s)
guest_run_in_test_vm 3400 "$here/libvirt-operator.sh" --in-vm "$@"
