#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a test): the same operations natively (perftest on rxe0 <->
# rxe1, native-reg) and through rdmagate (two simulated guests on two
# workers, rdmagate-guest perf), each figure and the ratio rdmagate/native;
# ends with one "ratio NAME VALUE" line per figure (write_lat, send_lat,
# send_lat_event, write_bw_64k, msg_rate_64, reg_1g).
# Run it in the test VM, e.g.:
#   tests/vm/rdmagate-vm -n 2 -m 3G -t 900 -- tests/vm/rdma-guest/bench.sh
# Environment: ITERS_LAT (1000), ITERS_BW (2000), ITERS_RATE (20000),
# REG_MIB (1024), WORKER_OPTS (e.g. --busy-poll, --poll-budget-us 0; none:
# the worker's default budget), ADAPTIVE_US (1000: the budget of the extra
# adaptive-mode WRITE latency row), PROFILE (1: the WRITE latency runs again
# under perf sched, see below).
set -u
. "$(dirname "$0")/lib.sh"
NATIVE_REG=$RDMAGATE_BUILD/tests/vm/rdma-guest/native-reg
ITERS_LAT=${ITERS_LAT:-1000}
ITERS_BW=${ITERS_BW:-2000}
ITERS_RATE=${ITERS_RATE:-20000}
REG_MIB=${REG_MIB:-1024}
WORKER_OPTS=${WORKER_OPTS:-}
ADAPTIVE_US=${ADAPTIVE_US:-1000}
# the workers' polling mode, as the ratio lines say it
case " $WORKER_OPTS " in
*" --busy-poll "*) MODE=busy-poll ;;
*" --poll-budget-us 0 "*) MODE=sleep ;;
*" --poll-budget-us "*)
	MODE="adaptive $(echo "$WORKER_OPTS" |
		sed 's/.*--poll-budget-us \([0-9]*\).*/\1/')us" ;;
*) MODE="adaptive default" ;;
esac

D0=${RDMAGATE_VM_DEV0:?run me in the test VM with -n 2} D1=$RDMAGATE_VM_DEV1
set -- $(host_gid "$D0") || exit 1
x0=$1 g0=$2
set -- $(host_gid "$D1") || exit 1
x1=$1 g1=$2
start_worker a "$D0" $WORKER_OPTS || exit 1
start_worker b "$D1" $WORKER_OPTS || exit 1
RES=$RG_DIR/results
: >"$RES"

# perftest: server on D1, client on D0; prints the client's result line
perftest() {
	tool=$1
	shift
	"$tool" -d "$D1" -x "$x1" "$@" >"$RG_DIR/pt.srv" 2>&1 &
	p=$!
	sleep 1
	"$tool" -d "$D0" -x "$x0" "$@" "$RDMAGATE_VM_IP1" >"$RG_DIR/pt.cli" 2>&1
	wait $p
	awk '/^ *#bytes/ { getline; print; exit }' "$RG_DIR/pt.cli"
}

# ours: server guest on worker b, client guest on worker a
guest_perf() {
	"$GUEST" --transport "$RG_TRANSPORT" \
		--socket "$RG_DIR/b.sock" --gid "1=$g1" perf "$@" \
		>"$RG_DIR/gp.srv" 2>&1 &
	p=$!
	"$GUEST" --transport "$RG_TRANSPORT" \
		--socket "$RG_DIR/a.sock" --gid "1=$g0" perf "$@" 127.0.0.1 \
		>"$RG_DIR/gp.cli" 2>&1
	wait $p
	grep "^perf:" "$RG_DIR/gp.cli" | head -n 1
}

# ratio NATIVE RDMAGATE: rdmagate / native, or n/a
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		print (a > 0 && b > 0) ? sprintf("%.2f", b / a) : "n/a" }'
}
RATIOS=""
# keep KEY NATIVE RDMAGATE [MODE]: the figure's "ratio KEY VALUE" line
# (with "mode MODE" after it if given), printed last
keep() {
	RATIOS="${RATIOS}ratio $1 $(ratio "$2" "$3")${4:+ mode $4}
"
}

# row NAME UNIT NATIVE RDMAGATE: one line of the table, and the ratio
row() {
	awk -v n="$1" -v u="$2" -v a="$3" -v b="$4" 'BEGIN {
		r = (a > 0 && b > 0) ? sprintf("%.2f", b / a) : "n/a";
		printf "%-34s %-9s %12s %12s %8s\n", n, u, a, b, r }' |
		tee -a "$RES"
}

field() { # field N "line"
	echo "$2" | awk -v n="$1" '{ print $n }'
}
# "perf: ... avg X us, median Y us, ..." -> X or Y
perf_avg() { echo "$1" | sed -n 's/.* avg \([0-9.]*\) us.*/\1/p'; }
perf_med() { echo "$1" | sed -n 's/.* median \([0-9.]*\) us.*/\1/p'; }
perf_mpps() { echo "$1" | sed -n 's/.*, \([0-9.]*\) Mpps.*/\1/p'; }
perf_mib() { echo "$1" | sed -n 's/.*: \([0-9.]*\) MiB\/s.*/\1/p'; }

echo "rdmagate benchmark: $D0 <-> $D1, $(nproc) vCPUs, kernel $(uname -r)"
echo "worker options: ${WORKER_OPTS:-none} (mode: $MODE)"
printf "%-34s %-9s %12s %12s %8s\n" "figure" "unit" "native" "rdmagate" \
	"ratio" | tee -a "$RES"

n=$(perftest ib_write_lat -s 64 -n "$ITERS_LAT")
o=$(guest_perf -t write_lat -s 64 -n "$ITERS_LAT")
echo "  native:   $n"; echo "  rdmagate: $o"
row "RC WRITE latency 64 B, typical" us "$(field 5 "$n")" "$(perf_med "$o")"
keep write_lat "$(field 5 "$n")" "$(perf_med "$o")" "$MODE"
row "RC WRITE latency 64 B, average" us "$(field 6 "$n")" "$(perf_avg "$o")"

# PROFILE=1: both WRITE latency runs (and, below, both event-mode SEND
# latency runs) again under `perf sched record`, then per task its CPU
# time, switches and the delay from wake-up to running (perf sched
# latency): where a ping-pong's time goes on two vCPUs; and the
# registrations under `perf record`
if [ "${PROFILE:-0}" = 1 ]; then
	sched() { # NAME COMMAND...
		name=$1
		shift
		perf sched record -a -o "$RG_DIR/$name.sched" >/dev/null 2>&1 &
		pp=$!
		sleep 2
		"$@" >/dev/null
		kill -INT $pp
		wait $pp
		echo "  profile, $name (perf sched latency, top tasks by runtime):"
		perf sched latency -i "$RG_DIR/$name.sched" --sort runtime \
			2>/dev/null | sed -n '1,14p' | sed 's/^/    /'
	}
	sched native perftest ib_write_lat -s 64 -n "$ITERS_LAT"
	sched rdmagate guest_perf -t write_lat -s 64 -n "$ITERS_LAT"
fi

# the same in adaptive mode with ADAPTIVE_US, against the same native run
stop_workers
start_worker a "$D0" --poll-budget-us "$ADAPTIVE_US" || exit 1
start_worker b "$D1" --poll-budget-us "$ADAPTIVE_US" || exit 1
o=$(guest_perf -t write_lat -s 64 -n "$ITERS_LAT")
echo "  rdmagate, --poll-budget-us $ADAPTIVE_US: $o"
row "  adaptive ${ADAPTIVE_US}us, typical" us "$(field 5 "$n")" \
	"$(perf_med "$o")"
keep write_lat_adaptive "$(field 5 "$n")" "$(perf_med "$o")" \
	"adaptive ${ADAPTIVE_US}us"
row "  adaptive ${ADAPTIVE_US}us, average" us "$(field 6 "$n")" \
	"$(perf_avg "$o")"
stop_workers
start_worker a "$D0" $WORKER_OPTS || exit 1
start_worker b "$D1" $WORKER_OPTS || exit 1

n=$(perftest ib_send_lat -s 64 -n "$ITERS_LAT")
o=$(guest_perf -t send_lat -s 64 -n "$ITERS_LAT")
echo "  native:   $n"; echo "  rdmagate: $o"
row "RC SEND latency 64 B, typical" us "$(field 5 "$n")" "$(perf_med "$o")"
keep send_lat "$(field 5 "$n")" "$(perf_med "$o")"
row "RC SEND latency 64 B, average" us "$(field 6 "$n")" "$(perf_avg "$o")"

n=$(perftest ib_send_lat -s 64 -n "$ITERS_LAT" -e)
o=$(guest_perf -t send_lat -s 64 -n "$ITERS_LAT" -e)
echo "  native:   $n"; echo "  rdmagate: $o"
row "RC SEND latency 64 B events, typ." us "$(field 5 "$n")" "$(perf_med "$o")"
keep send_lat_event "$(field 5 "$n")" "$(perf_med "$o")"
row "RC SEND latency 64 B events, avg" us "$(field 6 "$n")" "$(perf_avg "$o")"

if [ "${PROFILE:-0}" = 1 ]; then
	sched native_event perftest ib_send_lat -s 64 -n "$ITERS_LAT" -e
	sched rdmagate_event guest_perf -t send_lat -s 64 -n "$ITERS_LAT" -e
fi

n=$(perftest ib_write_bw -s 65536 -n "$ITERS_BW")
o=$(guest_perf -t write_bw -s 65536 -n "$ITERS_BW")
echo "  native:   $n"; echo "  rdmagate: $o"
# perftest's MB/sec is 2^20 bytes per second
row "RC WRITE bandwidth 64 KiB" MiB/s "$(field 4 "$n")" "$(perf_mib "$o")"
keep write_bw_64k "$(field 4 "$n")" "$(perf_mib "$o")"

n=$(perftest ib_send_bw -s 64 -n "$ITERS_RATE")
o=$(guest_perf -t send_bw -s 64 -n "$ITERS_RATE")
echo "  native:   $n"; echo "  rdmagate: $o"
row "RC SEND message rate 64 B" Mpps "$(field 5 "$n")" "$(perf_mpps "$o")"
keep msg_rate_64 "$(field 5 "$n")" "$(perf_mpps "$o")"

n=$("$NATIVE_REG" "$D0" "$REG_MIB" 3 | sed -n 's/.*: \([0-9.]*\) ms/\1/p' |
	sort -n | head -n 1)
"$GUEST" --transport "$RG_TRANSPORT" \
	--socket "$RG_DIR/a.sock" --gid "1=$g0" perf -t reg \
	-s "${REG_MIB}M" -R 3 >"$RG_DIR/reg.out" 2>&1
cat "$RG_DIR/reg.out"
o=$(sed -n 's/.*: \([0-9.]*\) ms/\1/p' "$RG_DIR/reg.out" | sort -n |
	head -n 1)
row "register $REG_MIB MiB (best of 3)" ms "$n" "$o"
keep reg_1g "$n" "$o"
# PROFILE=1: where the registrations' CPU time goes, both sides (perf
# record of the whole VM, by command and symbol)
if [ "${PROFILE:-0}" = 1 ]; then
	regprof() { # NAME COMMAND...
		name=$1
		shift
		perf record -a -F 999 -o "$RG_DIR/$name.perf" >/dev/null 2>&1 &
		pp=$!
		sleep 2
		"$@" >/dev/null 2>&1
		kill -INT $pp
		wait $pp
		echo "  profile, $name (perf report, top symbols by samples):"
		perf report -i "$RG_DIR/$name.perf" --stdio --sort comm,sym \
			2>/dev/null | grep -v '^#' | grep -v '^$' | head -n 12 |
			sed 's/^/    /'
	}
	regprof native_reg "$NATIVE_REG" "$D0" "$REG_MIB" 3
	regprof rdmagate_reg "$GUEST" --transport "$RG_TRANSPORT" \
		--socket "$RG_DIR/a.sock" --gid "1=$g0" perf -t reg \
		-s "${REG_MIB}M" -R 3
	# the worker's own time per REG_USER_MR (decode to reply), against
	# what the guest measured for the same registrations: the difference
	# is the control queue's round trip and the guest's side
	TR=$RDMAGATE_BUILD/trace/rdmagate-trace
	if [ -x "$TR" ]; then
		"$TR" --worker "$WORKER" -i 1 > "$RG_DIR/reg.trace" \
			2> "$RG_DIR/reg.trace.err" &
		tp=$!
		tracer_started "$tp" "$RG_DIR/reg.trace.err"
		"$GUEST" --transport "$RG_TRANSPORT" --socket "$RG_DIR/a.sock" \
			--gid "1=$g0" perf -t reg -s "${REG_MIB}M" -R 3 \
			> "$RG_DIR/reg-traced.out" 2>&1
		sleep 2
		kill -INT "$tp"
		wait "$tp"
		echo "  traced, the guest's registrations:" \
			$(sed -n 's/.*: \([0-9.]*\) ms/\1/p' "$RG_DIR/reg-traced.out") ms
		echo "  the worker's, decode to reply (rdmagate-trace):"
		grep 'control command latency, REG_USER_MR' "$RG_DIR/reg.trace" |
			tail -n 1 | sed 's/^ */    /'
		grep -q REG_USER_MR "$RG_DIR/reg.trace" ||
			sed 's/^/    /' "$RG_DIR/reg.trace.err" | tail -n 5
	fi
fi
# the worker maps guest RAM for each MR: compare with a fresh mapping too
n=$("$NATIVE_REG" "$D0" "$REG_MIB" 3 fresh |
	sed -n 's/.*: \([0-9.]*\) ms/\1/p' | sort -n | head -n 1)
row "  native on a fresh mapping" ms "$n" "$o"

echo
echo "ratio = rdmagate / native (latency, time: lower is better;"
echo "bandwidth, rate: higher is better); the VM's load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg) (the host's: uptime around the run)"
# last, one line per figure (docs/benchmarks.md): latencies typical/median,
# reg_1g against native on the touched mapping
printf '%s' "$RATIOS"
