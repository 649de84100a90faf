#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Benchmark (not a CI test at its default size; see meson.build for the
# small variant): VMS VMs on one broker in the test VM.  The broker spawns
# VMS sandboxed workers (rdmagatectl spawn), half on rxe0 and half on rxe1;
# VMS simulated guests (rdmagate-guest rc_pingpong, events mode) attach in
# pairs, each claiming its policy address through the broker and holding a
# connected RC QP that pings every PING_MS ms.  Once every guest is
# connected, a WINDOW-second sample at rest; then the guests are stopped.
# Prints
# spawn-to-ready per VM (the broker's log: median, max), the broker's RSS
# and CPU, the workers' RSS and CPU at rest (between pings), the errors, and
# ends with exactly
#   scale vms N spawn_ms_median N spawn_ms_max N worker_rss_kib N broker_rss_kib N errors N
# (worker_rss_kib: the largest worker's VmRSS between pings).  Errors: a
# spawn refused, a worker never ready or not sandboxed (seccomp filter,
# no_new_privs, a worker uid), a guest that never connected or that exited
# before the end, a VM whose worker delivered no completion in the window.
# Run (docs/benchmarks.md, "Scale"):
#   ./dev build
#   tests/vm/rdmagate-vm -n 2 -m 3G -t 3000 -- tests/vm/bench/scale.sh
# Environment: VMS (64, even), PING_MS (1000), WINDOW (10), GUEST_RAM (8M),
# CHECK (1: exit 1 unless errors is 0).
# Arguments (meson passes them; default: the build's): BROKER CTL WORKER GUEST
set -u
here=$(cd "$(dirname "$0")" && pwd)
: "${RDMAGATE_BUILD:=$here/../../../build}"
BROKER=${1:-$RDMAGATE_BUILD/broker/rdmagate-broker}
CTL=${2:-$RDMAGATE_BUILD/ctl/rdmagatectl}
WORKER=${3:-$RDMAGATE_BUILD/worker/rdmagate-worker}
GUEST=${4:-$RDMAGATE_BUILD/guest/rdmagate-guest}
VMS=${VMS:-64}
WINDOW=${WINDOW:-10}
PING_MS=${PING_MS:-1000}
GUEST_RAM=${GUEST_RAM:-8M}
CHECK=${CHECK:-0}
. "$here/../../lib.sh"
. "$here/../host-gid.sh"

[ "${RDMAGATE_VM:-}" = 1 ] || { echo "scale: run me in rdmagate-vm"; exit 77; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "scale: needs rdmagate-vm -n 2"; exit 77; }
[ $((VMS % 2)) = 0 ] && [ "$VMS" -ge 2 ] && [ "$VMS" -le 200 ] ||
	{ echo "scale: VMS must be even, 2..200"; exit 2; }

T=$(mktemp -d /run/scale.XXXXXX) # /run: a tmpfs in the test VM
chmod 755 "$T"
BPID=
GPIDS=()
errors=0
# workers outlive brokers by design: stopped after the broker
on_exit 'kill_state_workers "$T/state"'
on_exit 'stop "${GPIDS[@]}" "$BPID"'
err() { echo "ERROR: $*"; errors=$((errors + 1)); }

addr() { echo "10.99.$((1 + $1 / 200)).$((10 + $1 % 200))"; } # VM i
{
	printf '[broker]\ncontrol_socket = %s\nsocket_dir = %s\n' \
		"$T/control.sock" "$T/vm"
	printf 'cgroup_parent = /rdmagate\n\n[defaults]\ndevice = rxe0\n'
	printf 'max_pinned = 64M\nmax_qp = 2\nmax_cq = 2\n'
	for ((i = 0; i < VMS; i++)); do
		printf '[vm v%d]\naddresses = %s\n' $i "$(addr $i)"
		((i % 2)) && echo "device = rxe1"
	done
} > "$T/policy.conf"
chmod 644 "$T/policy.conf"
for ((i = 0; i < VMS; i += 2)); do
	route_pair "$(addr $i)" "$(addr $((i + 1)))"
done

ticks() { sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'; }
rss_kib() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
# VmRSS's three parts, KiB: anonymous (the worker's own heap and stacks),
# file (the program's and libraries' pages), shmem (guest RAM the worker's
# mappings touched: the VMM's memfd, not the worker's allocation)
rss_parts() {
	awk '$1 == "RssAnon:" { a = $2 } $1 == "RssFile:" { f = $2 }
		$1 == "RssShmem:" { s = $2 } END { print a + 0, f + 0, s + 0 }' \
		"/proc/$1/status"
}
HZ=$(getconf CLK_TCK)
median() { sort -n | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : 0 }'; }
max() { sort -n | tail -n 1; }

echo "scale: $VMS VMs, a ping every ${PING_MS} ms each, guest RAM" \
	"$GUEST_RAM; $(nproc) vCPUs; load average (VM) $(cut -d' ' -f1-3 /proc/loadavg)"
broker_start "$T/broker.log" --state-dir "$T/state" --stop-workers-on-exit ||
	{ echo "scale: the broker did not start:"; cat "$T/broker.log"; exit 1; }
bt0=$(ticks "$BPID")
s0=${EPOCHREALTIME/./}
for ((i = 0; i < VMS; i++)); do
	out=$(ctl spawn --vm v$i --socket "$T/v$i.sock" 2>&1)
	grep -q "worker/v$i: pid" <<<"$out" || err "spawn v$i: $out"
done
ready() { [ "$(grep -c 'ready [0-9]* ms after the spawn request' "$T/broker.log")" -ge "$VMS" ]; }
wait_for $((30 + VMS * 5)) ready || err "not every worker became ready"
s1=${EPOCHREALTIME/./}
spawn_ms=$(grep -o 'worker/v[0-9]*: ready [0-9]* ms' "$T/broker.log" |
	awk '{ print $3 }')
echo "spawned $VMS workers in $(((s1 - s0) / 1000)) ms (wall, serial spawn requests)"

# every worker sandboxed: a seccomp filter, no_new_privs, not root
declare -A WPID
while read -r v p; do WPID[${v#v}]=$p; done < <(ctl list --json | jq -r '.[] | "\(.vm) \(.pid)"')
for ((i = 0; i < VMS; i++)); do
	p=${WPID[$i]:-}
	st=/proc/${p:-0}/status
	[ -r "$st" ] || { err "v$i: no worker process"; continue; }
	grep -q "^Seccomp:[[:space:]]*2" "$st" || err "v$i (pid $p): no seccomp filter"
	grep -q "^NoNewPrivs:[[:space:]]*1" "$st" || err "v$i (pid $p): no no_new_privs"
	uid=$(awk '$1 == "Uid:" { print $3 }' "$st")
	[ "${uid:-0}" -ge 60000 ] || err "v$i (pid $p): runs as uid $uid"
	grep -qz -- "--poll-budget-us" "/proc/$p/cmdline" ||
		err "v$i (pid $p): spawned without --poll-budget-us"
done

# the guests: v(2j+1) on rxe1 serves, v(2j) on rxe0 connects; they ping
# until stopped (-n large), so every one must be alive at the end
g0=${EPOCHREALTIME/./}
for ((i = 0; i < VMS; i += 2)); do
	for k in 1 0; do
		v=$((i + k))
		# replies wait on 64 busy workers and on the broker (ADD_GID)
		"$GUEST" --socket "$T/v$v.sock" --ram "$GUEST_RAM" --timeout 120000 \
			--gid "1=::ffff:$(addr $v)" rc_pingpong -g 1 -s 64 -e \
			-n 1000000 -w "$PING_MS" -p $((19000 + i / 2)) \
			$([ $k = 0 ] && echo 127.0.0.1) > "$T/g$v.out" 2>&1 &
		GPIDS[$v]=$!
	done
	sleep 0.5 # a pair at a time: the setup of all at once starves each
done
alive() { kill -0 "${GPIDS[$1]}" 2>/dev/null; }
nconnected() { cat "$T"/g*.out 2>/dev/null | grep -c "remote address"; }
for ((k = 0; k < 60 + VMS * 10; k++)); do
	[ "$(nconnected)" -ge "$VMS" ] && break
	n=0
	for ((i = 0; i < VMS; i++)); do alive $i && n=$((n + 1)); done
	[ $n -lt "$VMS" ] && break # one gave up: it will not connect
	sleep 1
done
echo "$(nconnected) of $VMS guests connected after" \
	"$(((${EPOCHREALTIME/./} - g0) / 1000)) ms"
completions() { ctl stats --json | jq -r '.[] | "\(.vm) \(.completions)"'; }
declare -A WT C0
sleep 2
# the counters first: a STATS request makes every worker work
while read -r v c; do C0[${v#v}]=$c; done < <(completions)
# the window: from before the first read to after the last (reading 64
# workers takes a while under TCG), so that the CPU figures fit in it
w0=${EPOCHREALTIME/./}
bta=$(ticks "$BPID")
for ((i = 0; i < VMS; i++)); do
	WT[$i]=$(ticks "${WPID[$i]:-0}" 2>/dev/null || echo 0)
done
sleep "$WINDOW"
wrss=() wcpu=() wanon=() wfile=() wshm=()
for ((i = 0; i < VMS; i++)); do
	p=${WPID[$i]:-0}
	wrss+=("$(rss_kib "$p" 2>/dev/null || echo 0)")
	read -r a f m < <(rss_parts "$p" 2>/dev/null || echo 0 0 0)
	wanon+=("$a") wfile+=("$f") wshm+=("$m")
	wcpu+=($(($(ticks "$p" 2>/dev/null || echo 0) - ${WT[$i]})))
done
btb=$(ticks "$BPID")
w1=${EPOCHREALTIME/./}
# the largest worker, and where its anonymous memory is (its mappings with
# the most, from smaps) while its guest still runs
big=0
for ((i = 1; i < VMS; i++)); do
	[ "${wrss[$i]}" -le "${wrss[$big]}" ] || big=$i
done
big_maps=$(awk '/^[0-9a-f]+-[0-9a-f]+ / { m = $1 " " $2 " " ($6 == "" ? "[anon]" : $6) }
	$1 == "Anonymous:" && $2 > 0 { print $2, m }' \
	"/proc/${WPID[$big]:-0}/smaps" 2>/dev/null | sort -rn | head -n 5)
heavy=0
for a in "${wanon[@]}"; do [ "$a" -lt 1024 ] || heavy=$((heavy + 1)); done
brss=$(rss_kib "$BPID")
win=$(((w1 - w0) * HZ / 1000000))
while read -r v c; do
	[ "$c" -gt "${C0[${v#v}]:-0}" ] ||
		err "$v: no completion in the window (still $c)"
done < <(completions)
for ((i = 0; i < VMS; i++)); do
	grep -q "remote address" "$T/g$i.out" ||
		err "guest v$i never connected: $(tail -n 2 "$T/g$i.out" | tr '\n' ' ')"
	alive $i && continue
	wait "${GPIDS[$i]}"
	err "guest v$i exited ($?): $(tail -n 2 "$T/g$i.out" | tr '\n' ' ')"
done
for p in "${GPIDS[@]}"; do kill "$p" 2>/dev/null; done
wait "${GPIDS[@]}" 2>/dev/null
GPIDS=()
bt1=$(ticks "$BPID")

sm=$(echo "$spawn_ms" | median) sx=$(echo "$spawn_ms" | max)
rm_=$(printf '%s\n' "${wrss[@]}" | median) rx=$(printf '%s\n' "${wrss[@]}" | max)
cm=$(printf '%s\n' "${wcpu[@]}" | median) cx=$(printf '%s\n' "${wcpu[@]}" | max)
# each part's median and max
parts() { echo "$(printf '%s\n' "$@" | median) $(printf '%s\n' "$@" | max)"; }
printf '%-44s %s\n' \
	"spawn-to-ready, ms (median, max)" "${sm:-?} ${sx:-?}" \
	"broker RSS, KiB (pinging)" "$brss" \
	"broker CPU, ticks of $HZ/s: all, pinging" "$((bt1 - bt0)), $((btb - bta)) in $win" \
	"worker RSS at rest, KiB (median, max)" "$rm_ $rx" \
	"  of which anon / file / shmem (median, max)" \
	"$(parts "${wanon[@]}") / $(parts "${wfile[@]}") / $(parts "${wshm[@]}")" \
	"  the largest (v$big): anon / file / shmem" \
	"${wanon[$big]} / ${wfile[$big]} / ${wshm[$big]}" \
	"workers with 1 MiB anon or more" "$heavy of $VMS" \
	"worker CPU while pinging, ticks (median, max)" "$cm $cx in $win" \
	"errors" "$errors"
echo "the largest worker's mappings with the most anonymous KiB:"
sed 's/^/  /' <<< "$big_maps"
echo "load average (VM) after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$errors" = 0 ] || { echo "---- broker log (tail)"; tail -n 30 "$T/broker.log"; }
echo "scale vms $VMS spawn_ms_median ${sm:-0} spawn_ms_max ${sx:-0}" \
	"worker_rss_kib ${rx:-0} broker_rss_kib ${brss:-0} errors $errors"
[ "$CHECK" = 1 ] && [ "$errors" != 0 ] && exit 1
exit 0
