#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test: adaptive polling (--poll-budget-us) lets an idle worker sleep.
# Measured by the workers' CPU time (utime + stime in /proc/PID/stat),
# never by a wall-clock timing:
#  1. a connected guest doing nothing (an rc_pingpong server waiting for
#     its peer) costs its worker (budget 10000 us, the ceiling) at most
#     IDLE_MAX ticks in 10 s;
#  2. two guests pinging every 500 ms (rc_pingpong -w 500) through two
#     workers with the ceiling's budget: each worker's CPU time stays under
#     a fifth of the run (a worker that never stopped spinning after
#     activity would use most of a CPU);
#  3. the control: the same run with --busy-poll uses more than that, so
#     the measure does tell a spinning worker.
set -u
. "$(dirname "$0")/lib.sh"

two_devices
HZ=$(getconf CLK_TCK)
IDLE_MAX=${IDLE_MAX:-5}
PINGS=16
fail=0
port=18700

# ticks PID: its CPU time so far, in clock ticks (fields after "comm)")
ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
# pingpong NAME ITERS WAIT_MS: a pair on workers NAMEb (server) and NAMEa
pingpong() {
	port=$((port + 1))
	timeout 120 "$GUEST" --socket "$RG_DIR/${1}b.sock" --gid "1=$gid_b" \
		rc_pingpong -g 1 -s 64 -n "$2" -w "$3" -e -p $port \
		>"$RG_DIR/$1.srv" 2>&1 &
	s=$!
	timeout 120 "$GUEST" --socket "$RG_DIR/${1}a.sock" --gid "1=$gid_a" \
		rc_pingpong -g 1 -s 64 -n "$2" -w "$3" -e -p $port 127.0.0.1 \
		>"$RG_DIR/$1.cli" 2>&1
	rc=$?
	wait $s
	rs=$?
	[ $rc -eq 0 ] && [ $rs -eq 0 ] && return 0
	echo "FAIL: $1: rc_pingpong exit $rc (client) $rs (server)"
	sed 's/^/  server: /' "$RG_DIR/$1.srv"
	sed 's/^/  client: /' "$RG_DIR/$1.cli"
	fail=1
	return 1
}
# run NAME WORKER_OPTS...: PINGS pings 500 ms apart; sets WALL (the run's
# length) and TA, TB (each worker's CPU time), in ticks.  Not in $(...):
# the workers would hold its pipe open.
run() {
	rn=$1
	shift
	start_worker "${rn}a" "$RDMAGATE_VM_DEV0" "$@" || exit 1
	pa=$RG_LAST_PID
	start_worker "${rn}b" "$RDMAGATE_VM_DEV1" "$@" || exit 1
	pb=$RG_LAST_PID
	TA=$(ticks "$pa") TB=$(ticks "$pb") t0=$(date +%s%N)
	pingpong "$rn" $PINGS 500
	TA=$(($(ticks "$pa") - TA)) TB=$(($(ticks "$pb") - TB))
	WALL=$((($(date +%s%N) - t0) * HZ / 1000000000))
}

echo "== 1: a connected guest at rest, worker budget 10000 us"
start_worker idle "$RDMAGATE_VM_DEV0" --poll-budget-us 10000 || exit 1
p=$RG_LAST_PID
# the server creates its objects, then waits for a peer that never comes
timeout 60 "$GUEST" --socket "$RG_DIR/idle.sock" --gid "1=$gid_a" \
	rc_pingpong -g 1 -s 64 -n 1 -p 18699 >"$RG_DIR/idle.out" 2>&1 &
RG_PIDS="$RG_PIDS $!"
wait_for 30 in_log "$RG_DIR/idle.out" "local address" ||
	{ echo "FAIL: the idle guest did not set up"; cat "$RG_DIR/idle.out"; exit 1; }
sleep 1
t=$(ticks "$p")
sleep 10
t=$(($(ticks "$p") - t))
echo "idle worker, guest connected: $t ticks of $((10 * HZ)) in 10 s"
[ "$t" -le "$IDLE_MAX" ] ||
	{ echo "FAIL: idle worker used $t ticks (> $IDLE_MAX)"; fail=1; }

echo "== 2: $PINGS pings 500 ms apart, budget 10000 us"
run ad --poll-budget-us 10000
echo "adaptive: workers used $TA and $TB ticks in a run of $WALL ticks"
for t in "$TA" "$TB"; do
	[ "$t" -le $((WALL / 5)) ] ||
		{ echo "FAIL: an adaptive worker used $t ticks (> $WALL / 5)"; fail=1; }
done

echo "== 3: the control, --busy-poll"
run bp --busy-poll
echo "busy-poll: workers used $TA and $TB ticks in a run of $WALL ticks"
[ "$TA" -gt $((WALL / 5)) ] ||
	{ echo "FAIL: the busy worker used only $TA ticks: the measure tells nothing"; fail=1; }
[ $fail -eq 0 ] || show_worker_logs
exit $fail
