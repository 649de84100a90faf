#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test) of the vhost-user transport alone, on the host, no
# verbs and no VM: the echo test device's round trip (rdmagate-guest echo
# against rdmagate-worker --test-device echo) against references measured
# in the same minutes (pingpong-ref: an eventfd each way between two
# processes; a shared-memory message with both sides spinning and
# yielding).  Each pair runs ROUNDS times, interleaved; the best of each is
# compared.  Ends with exactly two lines:
#   ratio echo_event VALUE
#   ratio echo_poll VALUE
# (echo round trip / reference round trip: lower is better).
# Run: ./dev build && tests/host/bench/transport-bench.sh
# Environment: N (round trips, 5000), SIZE (bytes, 64), ROUNDS (3),
# RDMAGATE_BUILD (build/), WORKER_OPTS (e.g. --poll-budget-us 0).
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${RDMAGATE_BUILD:=$here/../../../build}"
N=${N:-5000}
SIZE=${SIZE:-64}
ROUNDS=${ROUNDS:-3}
WORKER=$RDMAGATE_BUILD/worker/rdmagate-worker
GUEST=$RDMAGATE_BUILD/guest/rdmagate-guest
REF=$RDMAGATE_BUILD/tests/host/bench/pingpong-ref

for b in "$WORKER" "$GUEST" "$REF"; do
	[ -x "$b" ] || { echo "transport-bench: $b missing (./dev build)"; exit 1; }
done
. "$here/../../lib.sh" # on_exit, stop, wait_for
dir=$(mktemp -d)
wpid=
on_exit 'rm -rf "$dir"'
on_exit 'stop "$wpid"'
"$WORKER" --test-device echo --socket "$dir/w.sock" --vm transport-bench \
	${WORKER_OPTS:-} 2>"$dir/worker.log" &
wpid=$!
wait_for 10 test -S "$dir/w.sock" || { echo "worker did not listen:"; cat "$dir/worker.log"; exit 1; }

# echo_us [ECHO OPTIONS]: microseconds per round trip
echo_us() {
	"$GUEST" --socket "$dir/w.sock" echo -n "$N" -s "$SIZE" --event-idx \
		"$@" >"$dir/echo.out" 2>&1 || { cat "$dir/echo.out" >&2; return 1; }
	sed -n 's/.* \([0-9.]*\) us each.*/\1/p' "$dir/echo.out"
}
ref_us() {
	"$REF" "$1" "$N" | sed -n 's/.*, \([0-9.]*\) us each/\1/p'
}
min() { printf '%s\n' "$@" | sort -g | head -n 1; }

echo "transport benchmark: $N round trips of $SIZE B, best of $ROUNDS," \
	"$(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
	"worker options: ${WORKER_OPTS:-none}"
ee="" re="" ep="" rp="" rx=""
for r in $(seq "$ROUNDS"); do
	ee="$ee $(echo_us)" || exit 1
	re="$re $(ref_us event)" || exit 1
	ep="$ep $(echo_us --poll)" || exit 1
	rp="$rp $(ref_us poll)" || exit 1
	# not a ratio's reference: the same eventfd ping-pong with its two
	# sides pinned to CPUs 0 and 1, i.e. every wake-up crossing CPUs, as
	# when a spinning worker holds one CPU and its guest sleeps on the
	# other (the unpinned reference's sides share a CPU at their best)
	rx="$rx $(PINGPONG_SPLIT=1 ref_us event)" || exit 1
done
echo "runs (us): echo event$ee; eventfd$re; echo polled$ep; spin$rp;" \
	"eventfd across CPUs$rx"
ee=$(min $ee) re=$(min $re) ep=$(min $ep) rp=$(min $rp) rx=$(min $rx)
printf "%-40s %10s %10s %8s\n" figure echo reference ratio
awk -v ee="$ee" -v re="$re" -v ep="$ep" -v rp="$rp" 'BEGIN {
	printf "%-40s %10.2f %10.2f %8.2f\n",
		"round trip, event mode (us)", ee, re, ee / re
	printf "%-40s %10.2f %10.2f %8.2f\n",
		"round trip, polled (us)", ep, rp, ep / rp
}'
printf "%-40s %10s %10s\n" "eventfd round trip across CPUs (us)" "" "$rx"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v ee="$ee" -v re="$re" -v ep="$ep" -v rp="$rp" 'BEGIN {
	printf "ratio echo_event %.2f\nratio echo_poll %.2f\n", ee / re, ep / rp
}'
