#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root): `rdmagatectl stats --prometheus` against the real
# broker with two echo workers, read by a real parser (promtool check
# metrics, Debian's prometheus package) and checked against `stats --json`;
# then with rdmagate-trace's maps (pinned in a private directory, filled by
# probe_fire under hostile VM names: a double quote and a backslash, a
# newline, bytes that are not UTF-8) against bpftool's dump of the same
# map; without the tracer: the counters and a comment; with the broker
# down: one line on stderr, nothing on stdout, exit status 1.
# Usage: test-prometheus.sh BROKER RDMAGATECTL WORKER GUEST TRACE
#        PROBE_FIRE TEST_HOOKS(true|false)    (TRACE "" when not built)
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 TRACE=$5 PF=$6 HOOKS=$7
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

needs_root_hooks "spawning workers, BPF" "the echo test device"
# ./dev unpacks promtool from Debian's prometheus .deb into the VM cache
PROMTOOL=${RDMAGATE_VM_CACHE:-/var/tmp/rdmagate-vm}/promtool/usr/bin/promtool
[ -x "$PROMTOOL" ] || PROMTOOL=$(command -v promtool) ||
	skip_all "needs promtool to parse the exposition (./dev fetches it from Debian's prometheus package)"
command -v jq > /dev/null || skip_all "needs jq to read JSON"

broker_env prom
PIN=/sys/fs/bpf/rdmagate-ptest-$$
TPID=
on_exit 'rm -rf "$PIN"'
on_exit 'stop "$TPID"'

# prom ARGS...: stats --prometheus into $T/out, $T/err; status in rc
prom() {
	ctl stats --prometheus "$@" > "$T/out" 2> "$T/err"
	rc=$?
}
# the exposition has LINE, whole
has() { grep -qxF -- "$1" "$T/out"; }
parses() { "$PROMTOOL" check metrics < "$T/out" > "$T/promtool" 2>&1; }
# Every histogram series: buckets never decrease, le="+Inf" = _count.
cumulative() {
	awk '
	/^#/ { next }
	/_bucket\{/ {
		s = $1; sub(/,le="[^"]*"\}$/, "}", s); sub(/_bucket\{/, "{", s)
		if (s in last && $2 + 0 < last[s]) { print "falls: " $0; bad = 1 }
		last[s] = $2 + 0
		if ($1 ~ /le="\+Inf"\}$/) inf[s] = $2
		next
	}
	/_count\{/ { s = $1; sub(/_count\{/, "{", s); cnt[s] = $2 }
	END {
		for (s in inf) if (cnt[s] != inf[s]) { print "count: " s; bad = 1 }
		for (s in cnt) if (!(s in inf)) { print "no +Inf: " s; bad = 1 }
		exit bad
	}' "$T/out" | diag
	return "${PIPESTATUS[0]}"
}
check_parses() { # WHAT
	if parses; then
		ok "$1: promtool check metrics accepts it"
	else
		not_ok "$1: promtool check metrics: $(head -c 400 "$T/promtool")"
		diag < "$T/out"
	fi
	check "$1: cumulative buckets, +Inf = _count" cumulative
}

# ---- the broker down: one line, nothing on stdout ---------------------------
prom
check "broker down: exit status 1 ($rc)" test "$rc" = 1
check "broker down: nothing on stdout" test ! -s "$T/out"
check "broker down: one line on stderr: $(cat "$T/err")" \
	test "$(wc -l < "$T/err")" = 1 -a \
	"$(cat "$T/err")" = "rdmagatectl: cannot reach the broker at $T/control.sock: No such file or directory"

# ---- two workers, no tracer ---------------------------------------------------
# nobody (gid nogroup) is a member, and vm-b's QEMU
broker_policy 62600-62699 "control_group = nogroup" <<EOF
[vm vm-a]
[vm vm-b]
vmm_uid = 65534
vmm_gid = 65534
EOF
broker_start "$T/broker.log" --state-dir "$T/state" --stop-workers-on-exit \
	--cgroup-root "$CG_ROOT"
check "broker is up" test -S "$T/control.sock"
for vm in vm-a vm-b; do
	out=$(ctl spawn --vm $vm --socket "$T/$vm.sock" --test-echo 2>&1)
	check "spawn $vm: $out" grep -q "worker/$vm: pid" <<<"$out"
done
# a frontend's visit: vm-a's connects becomes 1
visit() { "$GUEST" --socket "$T/vm-a.sock" probe > /dev/null; }
check "vhost-user handshake with vm-a" visit
fresh() { ctl stats --json | jq -e 'length == 2 and all(.fresh)' > /dev/null; }
check "both workers answer STATS" wait_for 10 fresh

prom --pin-dir "$PIN"
check "no tracer: exit status 0 ($rc), nothing on stderr: $(cat "$T/err")" \
	test "$rc" = 0 -a ! -s "$T/err"
check_parses "no tracer"
check "no tracer: said in a comment" \
	has "# no latency histograms: rdmagate-trace's maps are not pinned in $PIN (the tracer is not running)"
check "no tracer: rdmagate_trace_up 0" has "rdmagate_trace_up 0"
check "no tracer: no histogram" not grep -q '_bucket{\| histogram$' "$T/out"
check "rdmagate_workers 2" has "rdmagate_workers 2"
# every counter of both workers, as `stats --json` has it
json=$(ctl stats --json)
want=0 same=0
for vm in vm-a vm-b; do
	check "$vm answered (rdmagate_worker_fresh 1)" \
		has "rdmagate_worker_fresh{vm=\"$vm\"} 1"
	while read -r k v; do
		want=$((want + 1))
		has "rdmagate_worker_${k}_total{vm=\"$vm\"} $v" &&
			same=$((same + 1)) ||
			echo "# $vm $k: $v in stats --json, not in the exposition"
	done < <(jq -r --arg vm $vm '.[] | select(.vm == $vm) |
		del(.vm, .pid, .fresh) | to_entries[] | "\(.key) \(.value)"' \
		<<<"$json")
done
check "all $want counters of both workers as stats --json has them ($same)" \
	test "$want" = $((2 * 19)) -a "$same" = "$want"
check "vm-a's frontend counted: connects 1" \
	has 'rdmagate_worker_connects_total{vm="vm-a"} 1'
check "counters are TYPE counter, named _total" \
	test "$(grep -c '^# TYPE rdmagate_worker_[a-z_]*_total counter$' "$T/out")" = 19

# ---- with the tracer's maps -------------------------------------------------
if [ -z "$TRACE" ]; then
	ok "histograms # SKIP rdmagate-trace not built (needs clang and bpftool)"
	tap_end
	exit
fi
"$TRACE" --pin-dir "$PIN" --worker "$PF" --broker "$PF" --mux "$PF" -i 600 \
	> "$T/trace.out" 2> "$T/trace.err" &
TPID=$!
if ! wait_for 10 grep -q '^Tracing' "$T/trace.err"; then
	if grep -q 'no BPF support\|no uprobe support' "$T/trace.err"; then
		ok "histograms # SKIP $(head -n 1 "$T/trace.err")"
	else
		not_ok "the tracer did not start: $(cat "$T/trace.err")"
	fi
	tap_end
	exit
fi
N=10
Q='vm"q\z' NL=$'nl\nx' BAD=$'bad\xff'
for vm in "$Q" "$NL" "$BAD"; do
	"$PF" as "$vm" $N || not_ok "probe_fire as $(printf %q "$vm")"
done
prom --pin-dir "$PIN"
check "tracer: exit status 0 ($rc), nothing on stderr: $(cat "$T/err")" \
	test "$rc" = 0 -a ! -s "$T/err"
check_parses "tracer"
check "tracer: rdmagate_trace_up 1" has "rdmagate_trace_up 1"
check "the name that is not UTF-8 is left out, said in a comment" \
	has "# 4 worker(s) or histogram(s) left out: their VM name is not valid UTF-8"
check "no line carries it" not grep -q 'bad' "$T/out"
# vm"q\z escaped: vm="vm\"q\\z"; the newline: vm="nl\nx"
q='vm="vm\"q\\z"'
c=rdmagate_ctrl_latency_seconds
w=rdmagate_wr_latency_seconds
both() { has "$1" && has "$2"; }
check "CREATE_CQ (5 us): none at 4 us, all $N at 8 us" \
	both "${c}_bucket{$q,command=\"CREATE_CQ\",le=\"0.000004\"} 0" \
	"${c}_bucket{$q,command=\"CREATE_CQ\",le=\"0.000008\"} $N"
check "CREATE_CQ: _count $N, _sum $N x 5 us" \
	both "${c}_count{$q,command=\"CREATE_CQ\"} $N" \
	"${c}_sum{$q,command=\"CREATE_CQ\"} 0.00005"
check "MODIFY_QP (300 us): none at 256 us, all $N at 512 us" \
	both "${c}_bucket{$q,command=\"MODIFY_QP\",le=\"0.000256\"} 0" \
	"${c}_bucket{$q,command=\"MODIFY_QP\",le=\"0.000512\"} $N"
check "MODIFY_QP: +Inf $N, _sum $N x 300 us" \
	both "${c}_bucket{$q,command=\"MODIFY_QP\",le=\"+Inf\"} $N" \
	"${c}_sum{$q,command=\"MODIFY_QP\"} 0.003"
check "the name with a newline: vm=\"nl\\nx\"" \
	has "${c}_count{vm=\"nl\\nx\",command=\"CREATE_CQ\"} $N"
for op in RDMA_WRITE RECV; do
	check "$op: $N post-to-completion samples" \
		has "${w}_count{$q,opcode=\"$op\"} $N"
done
# the RDMA writes' real latencies: the buckets are bpftool's slots, summed
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
"$BPFTOOL" -j map dump pinned "$PIN/hists" > "$T/hists.json"
# (bpftool 7.1 writes a backslash in a char array unescaped: vm"q\z reads
# as vm"q, newline, z, and its start finds it; a name with a byte it does
# not print, such as the newline, is an array of numbers: not a string)
jq -r '.[].formatted | select((.key.vm | strings | startswith("vm\"q")) and
	.key.kind == "RT_HIST_WR" and .key.op == 1) | .value.slots[0:31][]' \
	"$T/hists.json" | awk '{ s += $1; print s }' > "$T/want"
grep -F "${w}_bucket{$q,opcode=\"RDMA_WRITE\",le=\"" "$T/out" |
	grep -vF '+Inf' | awk '{ print $2 }' > "$T/got"
same_buckets() {
	[ "$(wc -l < "$T/want")" = 31 ] && cmp -s "$T/want" "$T/got" ||
		{ diff "$T/want" "$T/got" | diag; false; }
}
check "RDMA_WRITE's 31 buckets are bpftool's slots, summed" same_buckets
# --vm: one worker, and its histograms only (vm-a has none)
prom --vm vm-a --pin-dir "$PIN"
check_parses "--vm vm-a"
series=$(grep -v '^#' "$T/out" | grep -c 'vm="')
check "--vm vm-a: its 20 series alone ($series)" \
	test "$series" = 20 -a "$(grep -c 'vm="vm-a"' "$T/out")" = 20

# a member of the control group: its VM's counters, the maps are root's
setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" --control \
	"$T/control.sock" stats --prometheus --pin-dir "$PIN" > "$T/out" 2> "$T/err"
rc=$?
check "a member: exit status 0 ($rc), one warning: $(cat "$T/err")" \
	test "$rc" = 0 -a "$(cat "$T/err")" = \
	"rdmagatectl: warning: $PIN/hists: Permission denied (the maps are root's)"
check_parses "a member"
check "a member: vm-b's counters only, rdmagate_trace_up 0" \
	both 'rdmagate_worker_fresh{vm="vm-b"} 1' "rdmagate_trace_up 0"
check "a member: no other VM, no histogram" \
	not grep -q 'vm="vm-a"\|vm="vm\\"\|_bucket{' "$T/out"
check "a member: the reason in a comment" \
	has "# no latency histograms: $PIN/hists: Permission denied (the maps are root's)"

# ---- the broker down, the tracer's maps there: still nothing on stdout ------
kill "$BPID" && wait "$BPID" 2> /dev/null
BPID=
prom --pin-dir "$PIN"
check "broker gone: exit status 1, nothing on stdout, one line: $(cat "$T/err")" \
	test "$rc" = 1 -a ! -s "$T/out" -a "$(wc -l < "$T/err")" = 1
tap_end
