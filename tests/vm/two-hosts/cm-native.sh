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
T0=$SECONDS
here=$(dirname "$0")
. "$here/../../tap.sh"
. "$here/two-hosts-lib.sh"
elapsed() { echo "# $((SECONDS - T0)) s: $*"; }
if grep -q '^ib_cm ' /proc/modules; then
	echo "1..0 # SKIP ib_cm is loaded on host A"
	exit 0
fi

T=$(mktemp -d /run/two-hosts.XXXXXX)
chmod 755 "$T"
BPID= MPID= PIDS=
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	[ -n "$BPID" ] && kill "$BPID" 2>/dev/null && wait "$BPID" 2>/dev/null
	[ -n "$MPID" ] && kill "$MPID" 2>/dev/null && wait "$MPID" 2>/dev/null
	for f in "$T"/state/workers/*.state; do
		[ -f "$f" ] || continue
		kill -9 "$(awk '$1 == "pid" { print $2 }' "$f")" 2>/dev/null
	done
	wait 2>/dev/null
}
trap cleanup EXIT

GA=fd98::10 B=$RDMAGATE_VM_PEER_IP6
cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock

[defaults]
max_pinned = 64M

[vm a]
device = rxe0
addresses = $GA
END
chmod 644 "$T/policy.conf"
ctl() { "$CTL" --control "$T/control.sock" "$@"; }
wait_for() { # SECONDS COMMAND...
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000))
	shift
	while :; do
		"$@" && return 0
		(( ${EPOCHREALTIME/./} > end )) && return 1
		sleep 0.1
	done
}
in_log() { grep -qF -- "$2" "$1"; }
has_gid() { grep -qx "fd98:0000:0000:0000:0000:0000:0000:0010" \
	/sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null; }

"$MUX" --control "$T/mux.sock" > "$T/mux.log" 2>&1 &
MPID=$!
check "mux is up" wait_for 10 in_log "$T/mux.log" "control socket $T/mux.sock"
"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" --state-dir "$T/state" \
	--mux "$T/mux.sock" > "$T/broker.log" 2>&1 &
BPID=$!
ctl_up() { ctl list > /dev/null 2>&1; }
check "broker is up" wait_for 10 ctl_up
out=$(ctl spawn --vm a --socket "$T/a.sock" 2>&1)
check "spawn a: $out" grep -q "worker/a: pid" <<<"$out"
check "a got its mux channel" \
	wait_for 20 in_log "$T/broker.log" "worker/a: mux channel handed over"
check "host B's agent is up" b_ready 60

# rxe's packet counters on both hosts (non-zero ones), for failures
CNT='cd /sys/class/infiniband/rxe0/ports/1/hw_counters && grep -v "^0$" -H * | tr "\n" " "; echo; rdma res show qp -dd'
counters() {
	echo "A: $(bash -c "$CNT")"
	local id
	id=$(b_run "$CNT")
	b_wait "$id" 20
	echo "B: $(b_out "$id")"
}

# guest [ARGS...]: cm_pingpong from the guest of vm a (GID index 1 = $GA)
guest() {
	timeout 40 "$GUEST" --socket "$T/a.sock" --ram 16M --gid "1=$GA" \
		cm_pingpong -g 1 --cm-timeout=2000 --cm-retries=3 "$@"
}

# b_listening PORT: until an rdma_cm id listens on PORT on B (rdmatool)
b_listening() {
	wait_for 20 b_sync "rdma res show cm_id | grep LISTEN | grep -q '[]:.]$1 '" 5
}
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
elapsed "done"
[ "$failed" = 0 ] || for f in "$T"/*.log "$T"/*.out; do
	echo "---- $f"; tail -n 20 "$f"
done | diag
tap_end
