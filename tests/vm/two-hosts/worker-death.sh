#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (host A of two-hosts-vm): a worker killed mid-connection, in
# TAP. On A the broker (with --mux), rdmagate-mux and worker a (fd98::10,
# a-host.sh); on B (native: ib_cm, rdma_cm) Debian's ucmatose connects to
# a listening simulated guest and waits. Worker a is killed: the mux sends
# the DREQ the guest's CM cannot (docs/mux.md, "A worker that dies"), B's
# kernel CM gets it and B's rdma_cm id leaves CONNECT, the guest learns its
# device is gone, A removes the guest's address.
# Usage: worker-death.sh BROKER RDMAGATECTL WORKER GUEST MUX
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5
. "$(dirname "$0")/a-host.sh"

elapsed "worker killed mid-connection"
# the guest listens and B's ucmatose client waits to receive first: the
# connection stays up with nothing in flight until the worker dies; the
# guest sleeps on CQ events (-e), where its device's death shows
guest -e -p 7474 -s 16 -n 1 > "$T/g.out" 2>&1 &
gp=$!
PIDS=$gp
wait_for 90 grep -q "CM: listening" "$T/g.out"
id=$(b_run "timeout 240 ucmatose -s $GA -p 7474 -C 1 -S 16")
check "B's ucmatose connected to the guest" \
	wait_for 90 grep -q "CM: ESTABLISHED" "$T/g.out"
B_IDS="rdma res show cm_id | grep -F 'fd98::10' | grep -v LISTEN"
ids0=$(b_get "$B_IDS" 60)
cm0=$(b_cm)
wpid=$(worker_pid a)
check "worker a killed (pid ${wpid:-none})" kill -9 "${wpid:-0}"
check "the mux closed its connection on its behalf" \
	wait_for 60 in_log "$T/mux.log" "closed 1 of its connections on its behalf"
in_log "$T/mux.log" "closed 1 of its connections" ||
	{ tail -n 15 "$T/mux.log"; tail -n 8 "$T/broker.log"; } | diag
b_dreq() { cm1=$(b_cm); [ "$(d rx_dreq)" -ge 1 ]; }
check "B's kernel CM got the DREQ" wait_for 90 b_dreq
# rdma_cm moves the id to DISCONNECT on the DREQ (ucmatose, polling its
# CQ, does not look at its events until it times out)
b_connected() { b_sync "$B_IDS | grep -q 'state CONNECT '" 60; }
check "B's rdma_cm id for the guest left CONNECT" wait_for 90 not b_connected
check "the guest learned its device is gone and exited" wait_for 90 gone "$gp"
wait "$gp" 2>/dev/null
rg=$?
PIDS=
check "... failing, on the hung-up device, by itself (exit $rg, 124: timeout killed it): $(grep -m1 -i 'not connected\|failed' "$T/g.out")" \
	eval '[ "$rg" != 0 ] && [ "$rg" != 124 ] && grep -q "not connected" "$T/g.out"'
check "A cleans up: fd98::10 leaves rxe0's GID table" wait_for 60 not has_gid rxe0 "$SGA"
b_wait "$id" 10
rb=$?
{ echo "B's ids before: $ids0"; echo "after:"; b_get "$B_IDS" 60
  echo "B's ucmatose (exit $rb):"; b_out "$id"; } | diag

elapsed "done"
[ "$failed" = 0 ] || for f in "$T"/*.log "$T"/*.out; do
	echo "---- $f"; tail -n 20 "$f"
done | diag
tap_end
