#!/bin/sh
# SPDX-License-Identifier: MIT
# Every numeric option of every program, through the program itself: its
# option parsing must name the option it was given (not a neighbour of
# it in some table) with the text and the range, and exit before doing
# anything.  The messages' cases one by one are unit-opt-num's.
# Usage: test-opt-cli.sh WORKER MUX RDMAGATECTL HOOK GUEST [TRACE] (TAP)
set -u
worker=$1 mux=$2 ctl=$3 hook=$4 guest=$5 trace=${6:-}
n=0 failed=0

# check NAME EXPECTED-RC EXPECTED-FIRST-STDERR-LINE COMMAND...
check() {
	name=$1 want_rc=$2 want=$3
	shift 3
	out=$("$@" 2>&1 </dev/null >/dev/null)
	rc=$?
	first=$(printf '%s\n' "$out" | head -n 1)
	n=$((n + 1))
	if [ "$rc" = "$want_rc" ] && [ "$first" = "$want" ]; then
		echo "ok $n - $name"
	else
		echo "not ok $n - $name: exit $rc (want $want_rc): $first"
		echo "# want: $want"
		failed=1
	fi
}

range() {
	case $1 in
	fd | broker-fd) echo "(0..65535)" ;;
	port) echo "(1..255)" ;;
	poll-budget-us) echo "(0..10000)" ;;
	doorbell-poll-ms) echo "(0..1000)" ;;
	peer-uid | peer-gid) echo "(0..4294967294)" ;;
	max-*) echo "(0..1048576)" ;;
	esac
}

for o in fd broker-fd port poll-budget-us doorbell-poll-ms peer-uid \
	peer-gid max-qp max-cq max-mr max-pd max-srq max-ah max-cqe \
	max-qp-wr max-srq-wr max-sge; do
	check "rdmagate-worker --$o" 1 \
		"rdmagate: error: --$o: 'x' is not a number $(range $o)" \
		"$worker" --socket /nonexistent/s "--$o" x
done
# a value that parses, then a bad one: the second is named
check "rdmagate-worker --max-sge after --max-qp" 1 \
	"rdmagate: error: --max-sge: '1048577' is out of range (0..1048576)" \
	"$worker" --max-qp 5 --max-sge 1048577
for o in id-ttl conn-ttl; do
	check "rdmagate-mux --$o" 1 \
		"rdmagate: error: --$o: '0' is out of range (1..31536000 seconds)" \
		"$mux" "--$o" 0
done
check "rdmagatectl spawn --port" 1 \
	"rdmagatectl: --port: '256' is out of range (0..255)" \
	"$ctl" --control /nonexistent/s spawn --vm a --port 256
check "rdmagate-libvirt-hook --timeout" 1 \
	"rdmagate-libvirt-hook: error: --timeout: '5s' is not a number (1..600 seconds)" \
	"$hook" --control /nonexistent/s --timeout 5s vm-a prepare begin -
# the guest simulator: COMMAND SPELLING NAME RANGE, each with 'x'
while read -r cmd spelling name range; do
	case $spelling in
	--cm-*) set -- "$spelling=x" ;;
	*) set -- "$spelling" x ;;
	esac
	if [ "$cmd" = - ]; then
		set -- "$@" probe
	else
		set -- "$cmd" "$@"
	fi
	check "rdmagate-guest $*" 2 \
		"rdmagate-guest: --$name: 'x' is not a number $range" \
		"$guest" --socket /nonexistent/s "$@"
done <<'EOF2'
- --config-size config-size (0..256)
- --timeout timeout (1..2147483647 ms)
echo -n count (1..9223372036854775807)
echo -s size (1..67108864)
echo --queues queues (1..256)
echo --ring ring (1..32768)
rc_pingpong -p port (0..65535)
rc_pingpong -n iters (1..4294967295)
rc_pingpong -g gid-idx (-2147483648..511)
rc_pingpong -i ib-port (1..1)
rc_pingpong -s size (1..4294967295)
rc_pingpong -m mtu (256..4096)
rc_pingpong -r rx-depth (1..511)
rc_pingpong -l sl (0..15)
rc_pingpong -w wait-ms (0..10000)
srq_pingpong -q num-qp (1..64)
perf -D depth (1..512)
perf -R repeat (1..4294967295)
perf -Q cq-mod (1..4294967295)
perf --iters iters (1..4294967295)
cm_pingpong --cm-timeout cm-timeout (1..600000 ms)
cm_pingpong --cm-retries cm-retries (0..15)
EOF2
if [ -n "$trace" ] && [ -x "$trace" ]; then
	for o in "-i interval" "--interval interval" "-c count" \
		"--count count"; do
		set -- $o
		unit=
		[ "$2" = interval ] && unit=" seconds"
		check "rdmagate-trace $1" 64 \
			"rdmagate-trace: --$2: '' is not a number (1..2147483647$unit)" \
			"$trace" "$1" ""
	done
else
	n=$((n + 1))
	echo "ok $n # SKIP rdmagate-trace not built (needs clang and bpftool)"
fi
echo "1..$n"
exit $failed
