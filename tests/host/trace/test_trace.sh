#!/bin/bash
# SPDX-License-Identifier: MIT
# host test of rdmagate-trace (root): attaches it to probe_fire, which fires
# every probe with known arguments from two processes ("vm-a" 1x, "vm-b"
# 2x, the same wr_ids on the same QPN), then checks the pinned maps through
# `bpftool -j map dump pinned` and the tracer's own --json output, the
# semaphores, --keep / default unpinning, and the one-line errors, in TAP.
# Usage: test_trace.sh RDMAGATE_TRACE PROBE_FIRE
set -u
TRACE=$1
PF=$2
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh" # tracer_up
N=50
# our own pin directory: a test run from another build dir at the same time
# must not touch these (each traces its own probe_fire, by inode)
PIN=/sys/fs/bpf/rdmagate-test-$$
TMP=$(mktemp -d /tmp/rdmagate-trace-test.XXXXXX)
TPID=
on_exit 'rm -rf "$TMP" "$PIN"'
on_exit 'stop "$TPID"'

[ "$(id -u)" = 0 ] || skip_all "needs root (CAP_SYS_ADMIN for BPF and uprobes)"
command -v jq >/dev/null || skip_all "needs jq to read JSON"
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] ||
	skip_all "needs bpftool"
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
[ -e /sys/bus/event_source/devices/uprobe/type ] ||
	skip_all "this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)"

start_tracer() { # extra args...
	"$TRACE" --pin-dir "$PIN" --worker "$PF" --broker "$PF" --mux "$PF" "$@" \
		>"$TMP/out" 2>"$TMP/err" &
	TPID=$!
	tracer_up "$TPID" "$TMP/err"
}

stop_tracer() {
	kill -INT "$TPID"
	wait "$TPID"
	local rc=$?
	TPID=
	[ $rc = 0 ] || not_ok "tracer exit status $rc after SIGINT"
}

# Expected counters of a VM fired with multiplier m (see probe_fire.c).
expect_counters() { # m
	local n=$((N * $1))
	jq -n --argjson n "$n" '{kicks: $n, posts: (2*$n),
		post_bytes: ($n*4196), completions: (3*$n),
		completion_errors: (2*$n), unmatched: $n, cq_overflows: $n,
		ctrl_cmds: (2*$n), ctrl_errors: $n, mads_tx: $n, mads_rx: $n,
		mads_dropped: $n, workers_spawned: $n, workers_exited: $n,
		gids_added: $n, gids_removed: $n, policy_refusals: $n,
		mux_routed: $n, mux_dropped: $n}'
}

check_eq() { # what got want
	if [ "$2" = "$3" ]; then ok "$1"; else
		not_ok "$1: got $2, want $3"
	fi
}

# ---- 1. attach, fire, read ----
start_tracer --keep -i 1 --json
"$PF" sema >"$TMP/sema"
check_eq "every semaphore set while traced (one count per call site)" \
	"$(grep -vc '=0$' "$TMP/sema")" 15
check "probe_fire fire $N" "$PF" fire "$N"

for vm_m in vm-a:1 vm-b:2; do
	vm=${vm_m%:*}
	m=${vm_m#*:}
	vn=$((N * m))
	want=$(expect_counters "$m" | jq -cS .)
	# the pinned maps, with BTF: field names in "formatted"
	got=$("$BPFTOOL" -j map dump pinned "$PIN/counters" |
		jq -cS --arg vm "$vm" \
			'.[] | select(.formatted.key.vm == $vm) |
			 .formatted.value')
	check_eq "bpftool counters of $vm" "$got" "$want"
	hists=$("$BPFTOOL" -j map dump pinned "$PIN/hists")
	h() { # kind op field
		echo "$hists" | jq -c --arg vm "$vm" --arg k "$1" \
			--argjson op "$2" '.[] | .formatted |
			select(.key.vm == $vm and .key.kind == $k and
			       .key.op == $op) | .value | '"$3"
	}
	check_eq "$vm RDMA_WRITE latency samples" \
		"$(h RT_HIST_WR 1 .count)" "$vn"
	check_eq "$vm RDMA_WRITE slots sum" \
		"$(h RT_HIST_WR 1 '.slots | add')" "$vn"
	check_eq "$vm RECV latency samples" "$(h RT_HIST_WR 128 .count)" "$vn"
	# 5000 ns = 5 us: slot 2 (4..7 us); 300000 ns = 300 us: slot 8
	check_eq "$vm CREATE_CQ in slot 2" \
		"$(h RT_HIST_CTRL 2 '.slots[2]')" "$vn"
	check_eq "$vm CREATE_CQ sum_ns" \
		"$(h RT_HIST_CTRL 2 .sum_ns)" "$((vn * 5000))"
	check_eq "$vm MODIFY_QP in slot 8" \
		"$(h RT_HIST_CTRL 12 '.slots[8]')" "$vn"
done
check_eq "no entry without a VM name" \
	"$("$BPFTOOL" -j map dump pinned "$PIN/counters" | jq length)" 2
check_eq "no write left in flight (same wr_ids in two processes)" \
	"$("$BPFTOOL" -j map dump pinned "$PIN/inflight" |
		jq '[.[] | select(.formatted.value.opcode == 1)] | length')" 0

sleep 1.2 # one more summary after the firing
stop_tracer
last=$(grep '^{' "$TMP/out" | tail -n 1)
[ -n "$last" ] || not_ok "no JSON summary from the tracer"
for vm_m in vm-a:1 vm-b:2; do
	vm=${vm_m%:*}
	m=${vm_m#*:}
	want=$(expect_counters "$m" | jq -cS .)
	got=$(echo "$last" | jq -cS --arg vm "$vm" \
		'.vms[] | select(.vm == $vm) | .counters')
	check_eq "tracer JSON counters of $vm" "$got" "$want"
	got=$(echo "$last" | jq -c --arg vm "$vm" '[.vms[] |
		select(.vm == $vm) | .hists[] | "\(.kind):\(.op):\(.count)"]')
	vn=$((N * m))
	check_eq "tracer JSON histograms of $vm" "$got" \
		"[\"wr:RDMA_WRITE:$vn\",\"wr:RECV:$vn\",\"ctrl:CREATE_CQ:$vn\",\"ctrl:MODIFY_QP:$vn\"]"
done

# ---- 2. --keep left the pins; --vm filters; the default removes them ----
[ -e "$PIN/counters" ] && [ -e "$PIN/hists" ] && ok "--keep left the pins" ||
	not_ok "--keep: pins gone"
"$PF" sema >"$TMP/sema"
check_eq "semaphores cleared after detach (every probe's)" \
	"$(grep -c '=0$' "$TMP/sema")" "$(wc -l < "$TMP/sema")"
start_tracer -i 1 -c 1 --json --vm vm-b
wait "$TPID"
TPID=
got=$(jq -c '[.vms[].vm]' "$TMP/out")
check_eq "--vm vm-b prints only vm-b (fresh maps: none yet)" "$got" '[]'
[ -e "$PIN" ] && not_ok "pins left without --keep: $(ls "$PIN")" ||
	ok "pins removed at exit without --keep"
start_tracer -i 1
check "probe_fire fire 1" "$PF" fire 1
# the next 1-s summary after the fire shows it: wait for that summary (a
# loaded machine may print a few empty ones first), bounded
wait_for 20 in_log "$TMP/out" 'post->completion latency, RDMA_WRITE' || :
stop_tracer
grep -q '^VM vm-a' "$TMP/out" && grep -q 'post->completion latency, RDMA_WRITE' \
	"$TMP/out" && ok "text summary" || { diag < "$TMP/out"; not_ok "text summary"; }

# ---- 3. the real worker: every probe it places attaches ----
if [ -x "${RDMAGATE_BUILD:-}/worker/rdmagate-worker" ]; then
	W=$RDMAGATE_BUILD/worker/rdmagate-worker
	"$TRACE" -v --pin-dir "$PIN" --worker "$W" -i 1 -c 1 >"$TMP/out" \
		2>"$TMP/err"
	rc=$?
	missing=$(sed -n 's/.*rdmagate-worker has no USDT probe rdmagate:\([a-z_]*\);.*/\1/p' \
		"$TMP/err" | sort | tr '\n' ' ')
	if [ $rc = 0 ] && grep -q "^Tracing .* in $W" "$TMP/err"; then
		# the worker places every worker probe (QP1 included)
		check_eq "rdmagate-worker: every worker probe attached" \
			"$missing" ""
	else
		grep -v '^libbpf: prog' "$TMP/err" | tail -n 20 | diag
		not_ok "attach to rdmagate-worker (status $rc)"
	fi
fi

# ---- 4. one-line errors ----
out=$(setpriv --reuid 65534 --regid 65534 --clear-groups --inh-caps=-all \
	"$TRACE" --pin-dir "$PIN" --worker "$PF" 2>&1)
rc=$?
check_eq "unprivileged: status 1 and the message" \
	"$rc:$out" "1:rdmagate-trace: needs CAP_SYS_ADMIN to attach uprobes (USDT)"
out=$("$TRACE" --pin-dir "$PIN" --worker /bin/true 2>&1)
rc=$?
case "$out" in
*"/bin/true has no USDT probe rdmagate:kick"*) [ $rc = 1 ] &&
	ok "binary without probes" || not_ok "binary without probes: rc $rc" ;;
*) not_ok "binary without probes: $out" ;;
esac
[ -e "$PIN" ] && not_ok "pins left after a failed start" || ok "no pins left"
tap_end
