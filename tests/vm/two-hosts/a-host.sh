# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# Host A of two-hosts-vm, sourced by its tests and benchmark: the broker
# (with --mux), rdmagate-mux and one worker (vm a: rxe0 on the wire's NIC,
# guest address fd98::10), TAP checks that they are up, and helpers to run
# the simulated guest and to wait for B. Expects BROKER CTL WORKER GUEST MUX.
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
