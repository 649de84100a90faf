#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (inside rdmagate-vm, rxe0): the broker's cgroup quotas.
# A worker spawned on rxe0 gets <cgroup>/rdma.max from the policy's object
# quotas and holds the cgroup's one handle, memory.max and pids.max from
# max_memory and max_pids (enforced), RLIMIT_CORE 0; a second context in that cgroup
# is refused, objects beyond hca_object are refused in a VM's cgroup, and
# the same allocations outside the cgroups succeed (the host is unaffected).
# Usage: broker-quota.sh BROKER RDMAGATECTL WORKER PROBE   (TAP)
set -u

BROKER=$1 CTL=$2 WORKER=$3 PROBE=$4
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

[ "${RDMAGATE_VM:-}" = 1 ] || { echo "1..0 # SKIP not inside rdmagate-vm"; exit 0; }

T=$(mktemp -d /tmp/broker-quota.XXXXXX)
chmod 755 "$T"
CG=/sys/fs/cgroup/rdmagate
# objects: pd 2 + cq 1 + qp 1 + mr 1 + srq 0 + ah 0 + the margin 2 = 7
policy_conf "socket_dir = $T/vm" "cgroup_parent = /rdmagate" -- \
	"device = rxe0" "max_pd = 2" "max_cq = 1" "max_qp = 1" "max_mr = 1" \
	"max_srq = 0" "max_ah = 0" "max_pinned = 64M" "max_memory = 256M" \
	"max_pids = 8" <<EOF
[vm a]
[vm q]
EOF
"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" \
	--state-dir "$T/state" --stop-workers-on-exit > "$T/broker.log" 2>&1 &
BPID=$!
wait_for 5 test -S "$T/control.sock"

out=$(ctl spawn --vm a --socket "$T/a.sock" 2>&1)
check "spawn a on rxe0: $out" grep -q "worker/a: pid" <<<"$out"
# the worker opens rxe0 after exec (slow under TCG): wait for its handle
wait_for 10 grep -qs "^rxe0 hca_handle=1 " "$CG/a/rdma.current"
check "a's rdma.max is the policy's: $(cat $CG/a/rdma.max 2>&1)" \
	grep -Eq "^rxe0 hca_handle=1 hca_object=7 ?$" "$CG/a/rdma.max"
check "the worker holds a's one handle: $(cat $CG/a/rdma.current 2>&1)" \
	grep -q "^rxe0 hca_handle=1 " "$CG/a/rdma.current"
check "a's memory.max is the policy's 256M: $(cat $CG/a/memory.max 2>&1)" \
	test "$(cat $CG/a/memory.max 2>&1)" = 268435456
check "a's pids.max is the policy's 8: $(cat $CG/a/pids.max 2>&1)" \
	test "$(cat $CG/a/pids.max 2>&1)" = 8
apid=$(cat "$CG/a/cgroup.procs" 2>/dev/null | head -n 1)
check "the worker (pid ${apid:-?}) dumps no core (RLIMIT_CORE 0)" \
	grep -Eq "^Max core file size +0 +0 " "/proc/${apid:-0}/limits"
# pids.max holds: a ninth process in a's cgroup cannot be forked
out=$(sh -c 'echo $$ > '"$CG/a"'/cgroup.procs; for i in 1 2 3 4 5 6 7 8 9; do sleep 2 & done; wait' 2>&1)
check "forks beyond pids.max are refused in a's cgroup: $(tail -n 1 <<<"$out")" \
	grep -qi "resource temporarily unavailable\|cannot fork\|Cannot fork" <<<"$out"
out=$("$PROBE" --join "$CG/a" rxe0 1 2>&1)
check "a second context in a's cgroup is refused: $out" \
	grep -q "^open failed" <<<"$out"
out=$("$PROBE" rxe0 20 2>&1)
check "outside the cgroups: 20 PDs: $out" test "$out" = "pds 20 of 20"

# q runs the echo test device: its cgroup has the same limit and no handle
# in use, so a verbs process there meets hca_object itself.
out=$(ctl spawn --vm q --socket "$T/q.sock" --test-echo 2>&1)
check "spawn q (echo): $out" grep -q "worker/q: pid" <<<"$out"
# (opening the device charges the handle and no object: all 7 are PDs)
out=$("$PROBE" --join "$CG/q" rxe0 20 2>&1)
check "in q's cgroup PDs stop at hca_object 7: $out" \
	grep -q "^pds 7 of 20: Resource temporarily unavailable" <<<"$out"
out=$("$PROBE" rxe0 20 2>&1)
check "outside still 20 PDs: $out" test "$out" = "pds 20 of 20"

out=$(ctl stop --vm a 2>&1)
check "stop a: $out" grep -q "stopped\|killed by SIGTERM" <<<"$out"
check "a's cgroup removed" test ! -d "$CG/a"
kill -TERM "$BPID"; wait "$BPID"
check "broker exits 0 on SIGTERM" test $? = 0
# the probe left in q's cgroup has exited; the broker removed q's cgroup
check "q's cgroup removed" test ! -d "$CG/q"
echo "1..$n"
[ "$failed" = 0 ] || sed 's/^/# /' "$T/broker.log"
[ "$failed" = 0 ]
