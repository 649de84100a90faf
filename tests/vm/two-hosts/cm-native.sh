#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm test (host A of two-hosts-vm): rdmagate's CM path against a Linux
# kernel CM, in TAP. On A the broker (with --mux), rdmagate-mux and one
# worker (vm a, rxe0 on the wire's NIC, fd98::10); on B (native: ib_cm,
# rdma_cm) Debian's rdmacm-utils. A simulated guest connects through CM to
# a native rdma_cm server on B, exchanges RC data, disconnects; a REQ to a
# port nobody listens on gets a REJ.
# Usage: cm-native.sh BROKER RDMAGATECTL WORKER GUEST MUX
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 MUX=$5
. "$(dirname "$0")/a-host.sh"

# native SCRIPT GUEST-ARGS...: SCRIPT on B (started first: a server) and
# cm_pingpong on A; sets rg, rb, id and fills $T/g.out
native() {
	local script=$1
	shift
	id=$(b_run "$script")
	b_listening "$PORT" || echo "# B's server is not listening on $PORT"
	guest "$@" > "$T/g.out" 2>&1
	rg=$?
	b_wait "$id" 30
	rb=$?
	[ "$rg$rb" = 00 ] || { cat "$T/g.out"; echo "---- B"; b_out "$id"; counters; } | diag
}

# ucmatose's server sends first and in bursts; rc_pingpong alternates: one
# message each way is what both agree on
elapsed "guest on A -> ucmatose server on B"
PORT=7471 native "timeout 30 stdbuf -oL ucmatose -b $B -C 1 -S 100" -p 7471 -s 100 -n 1 "$B"
check "guest -> B's ucmatose: connected, one 100-byte send each way, disconnected (guest $rg, ucmatose $rb): $(tail -n 1 "$T/g.out")" \
	test "$rg" = 0 -a "$rb" = 0
check "ucmatose counted the data" grep -q "data transfers complete" "$TWOHOSTS_DIR/out.$id"

elapsed "guest on A -> rdma_server on B"
PORT=7472 native "timeout 30 rdma_server -s $B -p 7472" -p 7472 -s 16 -n 1 "$B"
check "guest -> B's rdma_server: REQ/REP/RTU, 16 bytes each way, DREQ both ways (guest $rg, rdma_server $rb): $(tail -n 1 "$T/g.out")" \
	test "$rg" = 0 -a "$rb" = 0

elapsed "rdma_client on B -> guest on A"
guest -p 7473 -s 16 -n 1 > "$T/g.out" 2>&1 &
gp=$!
PIDS=$gp
wait_for 30 grep -q "CM: listening" "$T/g.out"
id=$(b_run "timeout 30 rdma_client -s $GA -p 7473")
b_wait "$id" 30
rb=$?
wait "$gp"
rg=$?
PIDS=
[ "$rg$rb" = 00 ] || { cat "$T/g.out"; echo "---- B"; b_out "$id"; counters; } | diag
check "B's rdma_client -> guest: connected, 16 bytes each way, B's DREQ answered (guest $rg, rdma_client $rb): $(tail -n 1 "$T/g.out")" \
	test "$rg" = 0 -a "$rb" = 0

elapsed "REJ"
guest -p 7999 -s 16 -n 1 "$B" > "$T/g2.out" 2>&1
rg=$?
check "a REQ to a port nobody listens on fails (exit $rg)" test "$rg" != 0
check "... with a REJ from B's kernel CM: $(grep -m1 -i rej "$T/g2.out")" \
	grep -qi "rej" "$T/g2.out"
elapsed "worker killed mid-connection"
# the guest listens and B's ucmatose client waits to receive first: the
# connection stays up with nothing in flight until the worker dies
guest -p 7474 -s 16 -n 1 > "$T/g3.out" 2>&1 &
gp=$!
PIDS=$gp
wait_for 30 grep -q "CM: listening" "$T/g3.out"
id=$(b_run "timeout 25 ucmatose -s $GA -p 7474 -C 1 -S 16")
check "B's ucmatose connected to the guest" \
	wait_for 30 grep -q "CM: ESTABLISHED" "$T/g3.out"
wpid=$(awk '$1 == "pid" { print $2 }' "$T"/state/workers/a.state 2>/dev/null)
check "worker a killed (pid ${wpid:-none})" kill -9 "${wpid:-0}"
gid_gone() { ! has_gid; }
check "A cleans up: fd98::10 leaves rxe0's GID table" wait_for 15 gid_gone
# Not checked (issue 17, docs/mux.md): nothing tells B; the simulator's
# guest waits on its dead device until killed
kill "$gp" 2>/dev/null
wait "$gp" 2>/dev/null
PIDS=

elapsed "done"
[ "$failed" = 0 ] || for f in "$T"/*.log "$T"/*.out; do
	echo "---- $f"; tail -n 20 "$f"
done | diag
tap_end
