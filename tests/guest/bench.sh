#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test; issue 13 item 7): in one test-VM run, perftest's
# ib_write_lat, ib_send_lat, ib_write_bw, ib_send_bw (64 KiB and 64 B)
# from the nested guest (the
# upstream vmw_pvrdma driver) against a native server on the test VM's rxe1,
#   - through rdmagate: QEMU 11.1's vfio-user-pci on the worker's PVRDMA
#     device (the worker on rxe0, started directly as pvrdma-tools does),
#   - through QEMU 7.2's in-process pvrdma on rxe0 (attached by the broker,
#     its MADs through rdmagate-mux, as pvrdma.sh --qemu72 does; no
#     RDMA WRITE figures there: QEMU 7.2's pvrdma gives every user MR
#     rkey -1 and posts the guest's WRITEs as SENDs, see REF_DIFFERS in
#     pvrdma.sh),
#   - natively in the test VM (rxe0 client, rxe1 server),
# plus a fixed CPU loop timed on the machine, in the test VM and in each
# nested guest, so that a reader sees how much of a gap is nested TCG.
# Every figure is the one the native server on rxe1 printed, timed by the
# test VM's clock in all three modes: a nested guest's clock is TCG inside
# TCG, and perftest's ib_send_bw sender printed 0 Mpps there.
# Prints a table and one line per figure:
#   real NAME native N rdmagate N pvrdma N ratio_pvrdma N ratio_native N
# then issue 25's lines: "ratio pvrdma_NAME N" (rdmagate / QEMU 7.2, where
# QEMU 7.2 has the figure), "ratio pvrdma_NAME_native N" (rdmagate /
# native), and "idle worker_cpu_pct N wakeups_per_s N".  The 64 B message
# rate signals every send (-Q 1), which QEMU 7.2 does whatever the guest
# asks: with perftest's default (one in 100) its CQ overflows.
# (ratio_pvrdma = rdmagate / pvrdma, ratio_native = rdmagate / native; for
# latency lower is better, for bandwidth and rate higher).
#
# Usage: bench.sh BROKER RDMAGATECTL WORKER MUX  (on the host; it boots the
#   test VM, which boots the nested guests one after the other)
# Environment: LAT_N (500), BW_N (200), RATE_N (2000), LOOP_N (2000000),
#   MODES ("rdmagate pvrdma": either may be left out), ONLY (figure names
#   to run, e.g. "send_lat" for a profile; default all), IDLE_S (60: the
#   nested guest then keeps its device active and idle this long while the
#   test VM measures the worker: the line
#   "idle worker_cpu_pct N wakeups_per_s N"; 0: not measured),
#   WORKER_OPTS (more options for the rdmagate column's worker, e.g.
#   "--doorbell-poll-ms 0" or "--poll-budget-us 0"), WORKER_NICE (the
#   worker's nice value, 0 by default: what policy's worker_nice sets),
#   VM_SMP (the test VM's vCPUs, 2 by default: whether the worker has a
#   CPU of its own beside the nested guest's vCPU and the native peer),
#   PEER_OPTS (more perftest options for the native server of the SEND
#   figures that the nested guests run against, in both nested columns:
#   e.g. "-e", so that the peer sleeps on its CQ's events instead of
#   spinning on a vCPU the worker needs; a peer on another host would cost
#   this machine no CPU at all.  A WRITE figure's server polls its buffer,
#   not a CQ, and perftest refuses -e there: it gets none), PEER_NICE
#   (the nice value of every figure's native server, 0 by default: at 19 a
#   spinning peer still answers at once but yields its vCPU to the host
#   under test whenever that wants one, as a peer on another host would),
#   WORKER_RT (0: none; 1-99: the worker runs SCHED_FIFO at that priority,
#   under chrt, so that its every wake-up preempts the spinners at once;
#   measured worse, docs/benchmarks.md, and kept so that it can be rerun).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../tap.sh"
. "$here/lib.sh"

GUEST_IP=10.99.2.2 NATIVE_IP=10.99.0.1 PEER_IP=10.99.0.2 BASE_PORT=18800
LAT_N=${LAT_N:-500} BW_N=${BW_N:-200} RATE_N=${RATE_N:-2000}
LOOP_N=${LOOP_N:-2000000} MODES=${MODES:-rdmagate pvrdma} ONLY=${ONLY:-}
IDLE_S=${IDLE_S:-60} WORKER_OPTS=${WORKER_OPTS:-} WORKER_NICE=${WORKER_NICE:-0}
WORKER_RT=${WORKER_RT:-0}
VM_SMP=${VM_SMP:-2} PEER_OPTS=${PEER_OPTS:-} PEER_NICE=${PEER_NICE:-0}
# NAME TOOL ARGS (both sides of a perftest must agree: the guest reads
# the counts from $T/params); the figure is column COL of the result line
figs() {
	local all=("write_lat ib_write_lat -s 64 -n $LAT_N"
		"send_lat ib_send_lat -s 64 -n $LAT_N"
		"write_bw_64k ib_write_bw -s 65536 -n $BW_N"
		"send_bw_64k ib_send_bw -s 65536 -n $BW_N"
		"msg_rate_64 ib_send_bw -s 64 -n $RATE_N -Q 1") f
	FIGS=()
	for f in "${all[@]}"; do
		[ -z "$ONLY" ] || [[ " $ONLY " == *" ${f%% *} "* ]] || continue
		FIGS+=("$f")
	done
}
figs
# t_typical (us); BW average (MiB/s); MsgRate (Mpps)
declare -A COL=([write_lat]=5 [send_lat]=5 [write_bw_64k]=4 [send_bw_64k]=4
	[msg_rate_64]=5)
declare -A UNIT=([write_lat]=us [send_lat]=us [write_bw_64k]=MiB/s
	[send_bw_64k]=MiB/s [msg_rate_64]=Mpps)
# figures a mode cannot give, by design (TAG:NAME): QEMU 7.2's pvrdma gives
# guest MRs rkey -1 and posts the guest's WRITEs as SENDs (REF_DIFFERS in
# pvrdma.sh)
declare -A NOT_THERE=([pvrdma:write_lat]="no-WRITE" [pvrdma:write_bw_64k]="no-WRITE")
# a client waits this long for its server, which may have failed
CLIENT_T=600

# the same work at every level: milliseconds for LOOP_N additions in awk
cpu_loop_ms() {
	local t0
	t0=$(mono_ms)
	awk -v n="$LOOP_N" 'BEGIN { for (i = 0; i < n; i++) s += i }'
	echo $(($(mono_ms) - t0))
}

# perftest's result line (the one after its "#bytes" header) in FILE
# (none when the tool ended before its result: the header is then last)
result_line() { awk '/^ *#bytes/ { if ((getline) > 0) print; exit }' "$1"; }

# ---- level 3, a nested guest: the clients, one figure at a time, each
# once the test VM's server for it listens ($T/TAG-srv-K)
in_guest() { # T TAG
	local T=$1 tag=$2 dev gidx k name tool args rc
	. "$T/params"
	figs
	echo "cpu_loop_ms=$(cpu_loop_ms)"
	# each fact as soon as it is known: a guest that stops shows where
	dev=$(timeout 300 ibv_devices | awk 'NR > 2 { print $1; exit }')
	echo "device=$dev"
	gidx=$(ip_gid "$dev" "$GUEST_IP" 5)
	echo "gid_index=$gidx"
	[ -n "$dev" ] && [ -n "$gidx" ] || { : > "$T/$tag-abort"; return 0; }
	for k in "${!FIGS[@]}"; do
		read -r name tool args <<< "${FIGS[$k]}"
		[ -z "${NOT_THERE[$tag:$name]:-}" ] || continue
		wait_file "$T/$tag-srv-$k" 600 || break
		timeout "$CLIENT_T" "$tool" -F -d "$dev" -x "$gidx" \
			-p $((BASE_PORT + k)) $args "$PEER_IP" \
			> "$T/$tag-cli-$k.out" 2>&1
		rc=$?
		echo "${name}_rc=$rc"
		: > "$T/$tag-done-$k"
	done
	# the device active and idle (driver up, no traffic) for IDLE_S: the
	# test VM measures the worker meanwhile (idle_cost)
	[ "$IDLE_S" -gt 0 ] && [ "$tag" = rdmagate ] || return 0
	: > "$T/$tag-idle-start"
	sleep "$IDLE_S"
	: > "$T/$tag-idle-end"
}

# ---- level 2, the test VM

# The native servers on rxe1 for one nested guest's clients.
serve() { # T TAG
	local T=$1 tag=$2 k name tool args p pidx popts
	pidx=$(ip_gid "$RDMAGATE_VM_DEV1" "$PEER_IP" 30 "RoCE v2")
	for k in "${!FIGS[@]}"; do
		read -r name tool args <<< "${FIGS[$k]}"
		[ -z "${NOT_THERE[$tag:$name]:-}" ] || continue
		[ ! -e "$T/$tag-abort" ] || return 0
		popts=
		[[ $tool != ib_send_* ]] || popts=$PEER_OPTS
		timeout 1800 nice -n "$PEER_NICE" "$tool" -F \
			-d "$RDMAGATE_VM_DEV1" -x "$pidx" \
			-p $((BASE_PORT + k)) $args $popts \
			> "$T/$tag-srv-$k.out" 2>&1 &
		p=$!
		sleep 1
		: > "$T/$tag-srv-$k"
		stop_when_done "$p" "$T/$tag-done-$k" "$T/$tag-abort"
	done
}

# One nested guest: its clients against serve()'s servers.
nested() { # T TAG NESTED-GUEST-OPTIONS...
	local T=$1 tag=$2 sp t0 rc
	shift 2
	serve "$T" "$tag" &
	sp=$!
	t0=$(mono_ms)
	"$here/nested-guest" -t 2700 "$@" -- "$here/bench.sh" --in-guest "$T" \
		"$tag" > "$T/$tag.facts" 2> "$T/$tag.err"
	rc=$?
	: > "$T/$tag-abort"
	wait "$sp"
	echo "# $tag: nested guest exit $rc after $(($(mono_ms) - t0)) ms;" \
		"$(grep -h 'boot-to-command' "$T/$tag.err")"
	grep -h '_rc=\|^device=' "$T/$tag.facts" | sed 's/^/#   /'
	[ "$rc" = 0 ] || tail -n 30 "$T/$tag.err" | sed 's/^/#   /'
}

native() { # T
	local T=$1 k name tool args p x0 x1
	x0=$(ip_gid "$RDMAGATE_VM_DEV0" "$NATIVE_IP" 30 "RoCE v2")
	x1=$(ip_gid "$RDMAGATE_VM_DEV1" "$PEER_IP" 30 "RoCE v2")
	for k in "${!FIGS[@]}"; do
		read -r name tool args <<< "${FIGS[$k]}"
		timeout 600 "$tool" -F -d "$RDMAGATE_VM_DEV1" -x "$x1" \
			-p $((BASE_PORT + k)) $args > "$T/native-srv-$k.out" 2>&1 &
		p=$!
		sleep 1
		timeout 600 "$tool" -F -d "$RDMAGATE_VM_DEV0" -x "$x0" \
			-p $((BASE_PORT + k)) $args "$PEER_IP" \
			> "$T/native-cli-$k.out" 2>&1
		wait "$p"
	done
}

# PID's CPU ticks (utime + stime) and context switches, one line
proc_sample() {
	echo "$(awk '{ print $14 + $15 }' "/proc/$1/stat")" \
		"$(awk '/^(non)?voluntary_ctxt_switches/ { n += $2 } END { print n }' \
			"/proc/$1/status")"
}

# What an idle, active device costs: the worker's CPU and its wake-ups
# (context switches) a second while the guest sleeps (in_guest's IDLE_S).
idle_cost() { # T TAG PID
	local T=$1 tag=$2 pid=$3 a b t0 t1 hz
	[ "$IDLE_S" -gt 0 ] || return 0 # the guest measures no idle spell
	wait_file "$T/$tag-idle-start" 3000 || return 0
	a=$(proc_sample "$pid")
	t0=$(mono_ms)
	wait_file "$T/$tag-idle-end" $((IDLE_S * 3)) || return 0
	b=$(proc_sample "$pid")
	t1=$(mono_ms)
	hz=$(getconf CLK_TCK)
	set -- $a $b
	awk -v c0="$1" -v w0="$2" -v c1="$3" -v w1="$4" -v ms=$((t1 - t0)) \
		-v hz="$hz" 'BEGIN { printf "idle worker_cpu_pct %.2f wakeups_per_s %.1f\n",
			(c1 - c0) * 100000 / hz / ms, (w1 - w0) * 1000 / ms }' \
		> "$T/$tag-idle"
}

run_rdmagate() { # T WORKER
	local T=$1 S wp rt
	S=$(mktemp -d /tmp/bench-sock.XXXXXX)/pvrdma.sock
	rt=()
	[ "$WORKER_RT" = 0 ] || rt=(chrt -f "$WORKER_RT")
	"${rt[@]}" nice -n "$WORKER_NICE" "$2" --frontend pvrdma \
		--device "$RDMAGATE_VM_DEV0" --socket "$S" \
		$WORKER_OPTS > "$T/worker.log" 2>&1 &
	wp=$!
	wait_file "$S" 30 || { echo "# the worker did not listen"; return 0; }
	idle_cost "$T" rdmagate "$wp" &
	ip=$!
	nested "$T" rdmagate --vfio-user "$S"
	wait "$ip"
	# the worker's CPU time over the whole guest run (utime + stime)
	echo "# worker CPU: $(awk -v hz="$(getconf CLK_TCK)" \
		'{ printf "%d ms", ($14 + $15) * 1000 / hz }' /proc/$wp/stat)"
	kill "$wp" 2>/dev/null
	wait "$wp" 2>/dev/null
	grep -h "device stats" "$T/worker.log" | sed 's/^/#   /'
}

run_pvrdma() { # T BROKER CTL WORKER MUX
	local T=$1 B=$2 CTL=$3 W=$4 MUX=$5 P
	# sockets on the test VM's own file system (not the 9p build tree)
	P=$(mktemp -d /run/guest-bench.XXXXXX)
	# the broker adds the guest's address to rxe0's netdev itself
	ip addr del "$GUEST_IP/32" dev veth0 2>/dev/null
	qemu72_stack "$P" "$GUEST_IP" "$B" "$W" "$MUX"
	if "$CTL" --control "$P/control.sock" spawn --vm g72 |
		grep -q "QEMU pvrdma attached"; then
		nested "$T" pvrdma --qemu72-pvrdma "$P/vm/g72.sock"
	else
		echo "# the broker did not attach QEMU 7.2's pvrdma"
		tail -n 20 "$P/broker.log" | sed 's/^/#   /'
	fi
	"$CTL" --control "$P/control.sock" stop --vm g72 > /dev/null 2>&1
	qemu72_stop
	rm -rf "$P"
}

# FILE NAME [TAG]: NAME's figure in FILE's result line, or "-" (or why
# TAG's mode has none)
figure() {
	local v
	v=$(result_line "$1" 2>/dev/null | awk -v c="${COL[$2]}" '{ print $c }')
	[ -n "$v" ] || v=${NOT_THERE[${3:-}:$2]:-}
	echo "${v:--}"
}

# A / B, or "-" unless both are figures: perftest prints "inf" (or "nan")
# for a latency when its cycle counter's calibration failed, which once
# made a ratio of 0.00 here
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {
	num = "^[0-9]+([.][0-9]+)?$"
	if (a !~ num || b !~ num || b + 0 == 0) print "-"
	else printf "%.2f\n", a / b }'; }

report() { # T
	local T=$1 k name tool args n r p
	printf '%-14s %-6s %10s %10s %10s %14s %14s\n' figure unit native \
		rdmagate pvrdma rdmagate/pvrdma rdmagate/native
	for k in "${!FIGS[@]}"; do
		read -r name tool args <<< "${FIGS[$k]}"
		n=$(figure "$T/native-srv-$k.out" "$name")
		r=$(figure "$T/rdmagate-srv-$k.out" "$name")
		p=$(figure "$T/pvrdma-srv-$k.out" "$name" pvrdma)
		printf '%-14s %-6s %10s %10s %10s %14s %14s\n' "$name" \
			"${UNIT[$name]}" "$n" "$r" "$p" "$(ratio "$r" "$p")" \
			"$(ratio "$r" "$n")"
		echo "$name native $n rdmagate $r pvrdma $p ratio_pvrdma" \
			"$(ratio "$r" "$p") ratio_native $(ratio "$r" "$n")" \
			>> "$T/lines"
		# issue 25's figures: rdmagate / QEMU 7.2 where 7.2 gives one,
		# rdmagate / native always
		[ "$p" = - ] || [ -n "${NOT_THERE[pvrdma:$name]:-}" ] ||
			echo "ratio pvrdma_$name $(ratio "$r" "$p")" >> "$T/ratios"
		echo "ratio pvrdma_${name}_native $(ratio "$r" "$n")" \
			>> "$T/ratios"
	done
	printf '%-30s %s\n' "CPU loop ($LOOP_N awk additions), ms:" "" \
		"  the machine" "${HOST_LOOP_MS:-?}" \
		"  the test VM (TCG)" "$(cat "$T/vm-loop")" \
		"  nested guest, QEMU 11.1" "$(sed -n 's/^cpu_loop_ms=//p' "$T/rdmagate.facts" 2>/dev/null)" \
		"  nested guest, QEMU 7.2" "$(sed -n 's/^cpu_loop_ms=//p' "$T/pvrdma.facts" 2>/dev/null)"
	sed 's/^/real /' "$T/lines"
	cat "$T/ratios" "$T/rdmagate-idle" 2>/dev/null
}

in_vm() { # BROKER CTL WORKER MUX
	local T
	T=$(mktemp -d "$RDMAGATE_BUILD/guest-bench.XXXXXX")
	chmod 777 "$T"
	echo "LAT_N=$LAT_N BW_N=$BW_N RATE_N=$RATE_N LOOP_N=$LOOP_N ONLY='$ONLY'" \
		"IDLE_S=$IDLE_S" > "$T/params"
	echo "# load average (test VM): $(cut -d' ' -f1-3 /proc/loadavg)"
	cpu_loop_ms > "$T/vm-loop"
	"$here/nested-guest" --setup-fabric &&
		fabric_guest_gid "$GUEST_IP" ||
		{ echo "cannot set up the fabric" >&2; exit 1; }
	native "$T"
	[[ " $MODES " != *" rdmagate "* ]] || run_rdmagate "$T" "$3"
	[[ " $MODES " != *" pvrdma "* ]] || run_pvrdma "$T" "$@"
	report "$T"
	rm -rf "$T"
}

case ${1:-} in
--in-guest) in_guest "$2" "$3"; exit 0 ;;
--in-vm) shift; in_vm "$@"; exit 0 ;;
esac

# ---- level 1, the host (the mux owns the CM class: no ib_cm in the VM)
[ $# = 4 ] || { echo "usage: $0 BROKER RDMAGATECTL WORKER MUX" >&2; exit 2; }
: "${RDMAGATE_BUILD:=$(cd "$here/../../build" && pwd -P)}"
export RDMAGATE_BUILD
echo "# load average (machine): $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# test VM: $VM_SMP vCPUs on $(nproc) host CPUs, worker nice" \
	"$WORKER_NICE, worker SCHED_FIFO ${WORKER_RT/#0/off}, peer options" \
	"'$PEER_OPTS', peer nice $PEER_NICE"
HOST_LOOP_MS=$(cpu_loop_ms)
GUEST_VM_OPTS=(--no-cm -s "$VM_SMP" -e "HOST_LOOP_MS=$HOST_LOOP_MS" -e "LAT_N=$LAT_N"
	-e "BW_N=$BW_N" -e "RATE_N=$RATE_N" -e "LOOP_N=$LOOP_N" -e "MODES=$MODES"
	-e "ONLY=$ONLY" -e "IDLE_S=$IDLE_S" -e "WORKER_OPTS=$WORKER_OPTS" -e "WORKER_NICE=$WORKER_NICE"
	-e "WORKER_RT=$WORKER_RT"
	-e "PEER_OPTS=$PEER_OPTS" -e "PEER_NICE=$PEER_NICE")
guest_run_in_test_vm 3400 "$here/bench.sh" --in-vm "$@"
