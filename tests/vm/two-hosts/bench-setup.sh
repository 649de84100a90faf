#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (host A of two-hosts-vm; prints figures, checks nothing about
# speed): rdma_cm connection set-up time, a simulated guest on A (through
# the worker's QP1 and rdmagate-mux) against native A (kernel rdma_cm,
# loaded once rdmagate is stopped), both to native B, in the same run.
# Guest: cm_pingpong's "REQ to" -> "ESTABLISHED" lines (REQ, REP, both QP
# transitions through the worker, RTU) against B's rdma_server. Native:
# cmtime's "connect" step (rdma_connect() -> ESTABLISHED) against B's
# cmtime. Usage: bench-setup.sh BROKER RDMAGATECTL WORKER GUEST MUX [ROUNDS]
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5 ROUNDS=${6:-7}
. "$(dirname "$0")/a-host.sh"

stamp() { while IFS= read -r l; do echo "${EPOCHREALTIME/./} $l"; done; }
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

guest_us=()
for ((i = 0; i < ROUNDS; i++)); do
	id=$(b_run "timeout 60 rdma_server -s $B -p 7480")
	b_listening 7480 || { echo "# B's rdma_server did not listen"; break; }
	guest -p 7480 -s 16 -n 1 "$B" 2>&1 | stamp > "$T/bench.out"
	b_wait "$id" 30 || echo "# round $i: rdma_server exit $?"
	req=$(awk '/CM: REQ to/ { print $1; exit }' "$T/bench.out")
	est=$(awk '/CM: ESTABLISHED/ { print $1; exit }' "$T/bench.out")
	if [ -z "$req" ] || [ -z "$est" ]; then
		echo "# round $i: the guest did not connect"; sed 's/^/#   /' "$T/bench.out"
		continue
	fi
	guest_us+=($((est - req)))
done

# native A: rdmagate out of the way, the kernel CM in
stack_stop
BPID= MPID=
modprobe -d "$RDMAGATE_VM_KDIR" rdma_ucm || { echo "# cannot load rdma_ucm on A"; exit 1; }
wait_for 5 test -e /dev/infiniband/rdma_cm
native_us=()
for ((i = 0; i < ROUNDS; i++)); do
	id=$(b_run "timeout 60 cmtime -b $B -p 7481 -c 1")
	b_listening 7481 || { echo "# B's cmtime did not listen"; break; }
	out=$(timeout 60 cmtime -s "$B" -p 7481 -c 1 2>&1)
	# B's server (Debian's cmtime 44) does not exit after its one
	# connection and, still listening, could take the next round's client
	# (past its one-entry array: probably the SIGSEGVs of earlier runs):
	# stop it and wait for it to go before the next round listens
	b_sync 'pkill -x cmtime; for _ in $(seq 100); do pgrep -x cmtime > /dev/null || exit 0; sleep 0.1; done; exit 1' 30 ||
		echo "# round $i: B's cmtime server did not stop"
	b_wait "$id" 10
	rc=$? # 143: timeout passed on the SIGTERM
	[ "$rc" = 0 ] || [ "$rc" = 143 ] || echo "# round $i: cmtime server exit $rc"
	us=$(awk '$1 == "connect" { printf "%d", $NF }' <<<"$out")
	[ -n "$us" ] || { echo "# round $i: cmtime failed"; sed 's/^/#   /' <<<"$out"; continue; }
	native_us+=("$us")
done

echo "# rdma_cm connection set-up, A -> B across the wire, $ROUNDS rounds (µs)"
echo "guest-on-A -> native-B: ${guest_us[*]:-none}"
echo "native-A   -> native-B: ${native_us[*]:-none}"
if [ ${#guest_us[@]} -gt 0 ] && [ ${#native_us[@]} -gt 0 ]; then
	g=$(printf '%s\n' "${guest_us[@]}" | median)
	n=$(printf '%s\n' "${native_us[@]}" | median)
	echo "median: guest $g µs, native $n µs, ratio $(awk -v g="$g" -v n="$n" 'BEGIN { printf "%.2f", g / n }')x"
fi
