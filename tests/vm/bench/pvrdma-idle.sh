#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test; issue 25): what an idle PVRDMA device costs its
# worker.  In the test VM, a worker serves a guest (the simulator, playing
# QEMU 11.1's vfio-user client, vmw_pvrdma and its provider) whose
# rc_pingpong server has the device active, a QP made and waits for a
# client that never comes; the worker's CPU time and context switches are
# sampled over IDLE_S seconds, once with the UAR BAR mapped (doorbells in
# shared memory, the default) and once with every doorbell a message
# (RDMAGATE_GUEST_NO_BAR_MMAP=1).  Prints per mode:
#   idle MODE worker_cpu_pct N wakeups_per_s N
# Usage (host): tests/vm/rdmagate-vm -n 1 -- tests/vm/bench/pvrdma-idle.sh
# Environment: IDLE_S (60), WORKER_OPTS (e.g. --doorbell-poll-ms 20).
set -u
RG_TRANSPORT=pvrdma
. "$(dirname "$0")/../rdma-guest/lib.sh"
IDLE_S=${IDLE_S:-60}

# utime + stime ticks and context switches of PID, one line
sample() {
	echo "$(cut -d' ' -f14,15 "/proc/$1/stat")" \
		"$(awk '/ctxt_switches/ { n += $2 } END { print n }' \
			"/proc/$1/status")"
}

measure() { # MODE (mode_env: the guest's environment)
	mode=$1
	shift
	start_worker "w-$mode" "$RDMAGATE_VM_DEV0" ${WORKER_OPTS:-} || exit 1
	wp=$RG_LAST_PID
	set -- $(host_gid "$RDMAGATE_VM_DEV0") || exit 1
	env $mode_env "$GUEST" --transport pvrdma --socket "$RG_DIR/w-$mode.sock" \
		--gid "$1=$2" rc_pingpong -g "$1" > "$RG_DIR/g-$mode.out" 2>&1 &
	RG_PIDS="$RG_PIDS $!"
	# the device is up once the server listens
	wait_for 60 tcp_listening 18515
	sleep 1 # past the warm phase after the last command
	set -- $(sample "$wp")
	u0=$1 s0=$2 w0=$3 t0=$(date +%s%N)
	sleep "$IDLE_S"
	set -- $(sample "$wp")
	t1=$(date +%s%N)
	awk -v m="$mode" -v c=$(($1 + $2 - u0 - s0)) -v w=$(($3 - w0)) \
		-v ns=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN {
		printf "idle %s worker_cpu_pct %.2f wakeups_per_s %.1f\n", m,
			c * 100 * 1e9 / hz / ns, w * 1e9 / ns }'
	stop_workers
}

mode_env=""
measure shared-memory
mode_env="RDMAGATE_GUEST_NO_BAR_MMAP=1"
measure messages
