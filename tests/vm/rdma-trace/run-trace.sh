#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test of rdmagate-trace on real traffic: the tracer attached to
# rdmagate-worker, two workers (vm-a on rxe0, vm-b on rxe1), two simulated
# guests running rc_pingpong against each other; then, per VM, the pinned
# maps (bpftool JSON) and the tracer's JSON must agree with what the guests
# did (ITERS sends and ITERS receives completed on each side) and with the
# worker's own counters (its "device stats" line at disconnect).
# Usage: run-trace.sh RDMAGATE_TRACE   (inside rdmagate-vm -n 2)
set -u
TRACE=$1
: "${RDMAGATE_BUILD:?RDMAGATE_BUILD is not set}"
# WORKER, GUEST, start_worker, host_gid; the workers in $RG_DIR
. "$(dirname "$0")/../rdma-guest/lib.sh"
ITERS=300
SIZE=4096
PIN=/sys/fs/bpf/rdmagate
DIR=$RG_DIR
TPID=""
fails=0
on_exit 'rm -rf "$PIN"'
on_exit 'stop "$TPID"'

fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check_eq() { # what got want
	if [ "$2" = "$3" ]; then echo "ok: $1 ($2)"; else
		fail "$1: got $2, want $3"
	fi
}

two_devices
[ -e /sys/bus/event_source/devices/uprobe/type ] || {
	echo "the VM kernel has no uprobe PMU"; exit 77; }
command -v jq >/dev/null || { echo "needs jq to read JSON"; exit 77; }
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)


# ---- tracer first: the workers start after it (future processes) ----
"$TRACE" --worker "$WORKER" --keep --json -i 1 >"$DIR/trace.out" \
	2>"$DIR/trace.err" &
TPID=$!
tracer_started "$TPID" "$DIR/trace.err" || {
	cat "$DIR/trace.err"; echo "FAIL: the tracer did not start"; exit 1; }
cat "$DIR/trace.err"

start_worker vm-a "$RDMAGATE_VM_DEV0" || exit 1
pid_vm_a=$RG_LAST_PID
start_worker vm-b "$RDMAGATE_VM_DEV1" || exit 1
pid_vm_b=$RG_LAST_PID

# ---- traffic: guest A serves, guest B connects ----
"$GUEST" --socket "$DIR/vm-a.sock" --gid "$gidx_a=$gid_a" rc_pingpong \
	-g "$gidx_a" -n "$ITERS" -s "$SIZE" >"$DIR/a.out" 2>&1 &
pa=$!
wait_for 10 tcp_listening 18515
"$GUEST" --socket "$DIR/vm-b.sock" --gid "$gidx_b=$gid_b" rc_pingpong \
	-g "$gidx_b" -n "$ITERS" -s "$SIZE" "$RDMAGATE_VM_IP0" \
	>"$DIR/b.out" 2>&1
rb=$?
wait $pa
ra=$?
sed 's/^/  guest a: /' "$DIR/a.out"
sed 's/^/  guest b: /' "$DIR/b.out"
[ $ra = 0 ] && [ $rb = 0 ] || {
	cat "$DIR"/vm-*.log; echo "FAIL: rc_pingpong failed ($ra, $rb)"
	exit 1; }

# the workers log their counters when the guest disconnects
for vm in vm-a vm-b; do
	wait_for 5 in_log "$DIR/$vm.log" 'device stats'
	grep 'device stats' "$DIR/$vm.log" | tail -n 1 | sed 's/^/  /'
done
sleep 1.5 # one more summary
kill -INT "$TPID"
wait "$TPID" || fail "tracer exit status $? after SIGINT"
TPID=""

# ---- checks, per VM ----
for m in counters hists inflight; do # files: too big for one argv string
	"$BPFTOOL" -j map dump pinned "$PIN/$m" >"$DIR/$m.json" ||
		fail "bpftool map dump pinned $PIN/$m"
done
last=$(grep '^{' "$DIR/trace.out" | tail -n 1)
for vm in vm-a vm-b; do
	pid=$(eval echo "\$pid_$(echo "$vm" | tr - _)")
	# "device stats: C commands (R refused), S sends, V receives, ..."
	stats=$(grep 'device stats' "$DIR/$vm.log" | tail -n 1)
	w_cmds=$(echo "$stats" | sed -n 's/.*stats: \([0-9]*\) commands.*/\1/p')
	w_ref=$(echo "$stats" | sed -n 's/.*(\([0-9]*\) refused).*/\1/p')
	w_sends=$(echo "$stats" | sed -n 's/.* \([0-9]*\) sends.*/\1/p')
	w_recvs=$(echo "$stats" | sed -n 's/.* \([0-9]*\) receives.*/\1/p')
	# one jq run per VM (each costs ~0.5 s under TCG)
	set -- $(jq -rn --arg vm "$vm" --argjson p "$pid" \
		--slurpfile c "$DIR/counters.json" \
		--slurpfile h "$DIR/hists.json" \
		--slurpfile f "$DIR/inflight.json" '
		$c[0] as $c | $h[0] as $h | $f[0] as $f |
		($c[] | .formatted | select(.key.vm == $vm) | .value) as $v |
		def hc(k; op): [$h[] | .formatted | select(.key.vm == $vm and
			.key.kind == k and (op == null or .key.op == op)) |
			.value.count] | add // 0;
		[$v.posts, $v.completions, $v.completion_errors, $v.unmatched,
		 $v.post_bytes, $v.ctrl_cmds, $v.ctrl_errors, $v.kicks,
		 hc("RT_HIST_WR"; 0), hc("RT_HIST_WR"; 128),
		 hc("RT_HIST_CTRL"; null),
		 ([$f[] | select(.formatted.key.tgid == $p)] | length)] |
		map(tostring) | join(" ")')
	[ $# = 12 ] || { fail "$vm: no counters in the pinned map"; continue; }
	posts=$1 compl=$2 cerr=$3 unmatched=$4 bytes=$5 cmds=$6 cerrs=$7
	kicks=$8 h_send=$9 h_recv=${10} h_ctrl=${11} left=${12}
	echo "== $vm (worker pid $pid)"
	check_eq "$vm: posts = the worker's sends + receives" "$posts" \
		"$((w_sends + w_recvs))"
	check_eq "$vm: SEND post->completion samples = iterations" \
		"$h_send" "$ITERS"
	check_eq "$vm: RECV post->completion samples = iterations" \
		"$h_recv" "$ITERS"
	check_eq "$vm: completions without error = 2 x iterations" \
		"$((compl - cerr))" "$((2 * ITERS))"
	check_eq "$vm: every completion matched its post" "$unmatched" 0
	check_eq "$vm: posts = completions + receives still posted" \
		"$posts" "$((compl + left))"
	check_eq "$vm: bytes posted = posts x $SIZE" "$bytes" \
		"$((posts * SIZE))"
	check_eq "$vm: control commands = the worker's" "$cmds" "$w_cmds"
	check_eq "$vm: control errors = the worker's refusals" "$cerrs" \
		"$w_ref"
	check_eq "$vm: control latency samples = commands" "$h_ctrl" \
		"$w_cmds"
	[ "$kicks" -gt 0 ] && echo "ok: $vm: kicks $kicks" ||
		fail "$vm: no kick counted"
	check_eq "$vm: the tracer's JSON counters = the pinned map" \
		"$(echo "$last" | jq -cS --arg vm "$vm" \
			'.vms[] | select(.vm == $vm) | .counters')" \
		"$(jq -cS --arg vm "$vm" '.[] |
			select(.formatted.key.vm == $vm) | .formatted.value' \
			"$DIR/counters.json")"
done
echo "---- the tracer's last summary (JSON):"
echo "$last" | jq -c '.vms[] | {vm, counters: (.counters |
	{posts, completions, post_bytes, ctrl_cmds, kicks})}'
[ $fails = 0 ] || { cat "$DIR"/vm-*.log; echo "$fails check(s) failed"
	exit 1; }
echo "all checks passed"
