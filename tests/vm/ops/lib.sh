# SPDX-License-Identifier: MIT
# Shared by the tests/vm/ops tests (sourced, inside rdmagate-vm --no-cm -n 2):
# a broker started with --mux, rdmagate-mux, two VMs a (rxe0, fd99::10) and
# b (rxe1, fd99::11) routed across the veth pair, helpers. Expects BROKER,
# CTL, WORKER, GUEST, MUX set.
. "$(dirname "${BASH_SOURCE[0]}")/../../tap.sh"
elapsed() { echo "# $((SECONDS - T0)) s: $*"; }

[ "${RDMAGATE_VM:-}" = 1 ] || { echo "1..0 # SKIP not inside rdmagate-vm"; exit 0; }
[ "${RDMAGATE_VM_NDEV:-0}" -ge 2 ] || { echo "1..0 # SKIP needs rdmagate-vm -n 2"; exit 0; }
if grep -q '^ib_cm ' /proc/modules; then
	echo "1..0 # SKIP ib_cm is loaded: the mux cannot own the CM class (rdmagate-vm --no-cm)"
	exit 0
fi

T=$(mktemp -d /run/ops-test.XXXXXX)
chmod 755 "$T"
BPID= MPID= PIDS= WATCHDOG=

cleanup() {
	kill "$WATCHDOG" 2>/dev/null
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

A=fd99::10 B=fd99::11
SA=fd99:0000:0000:0000:0000:0000:0000:0010 # as sysfs writes them
SB=fd99:0000:0000:0000:0000:0000:0000:0011
# routed across the veth pair as the harness routes its own addresses (and
# tests/vm/mux/mux-vm.sh its IPv6 ones); the broker adds the addresses
n0=$RDMAGATE_VM_NETDEV0 n1=$RDMAGATE_VM_NETDEV1
ip -6 -batch - <<END
rule add pref 11 iif lo to $B lookup 110
route add $B dev $n0 table 110
rule add pref 11 iif lo to $A lookup 111
route add $A dev $n1 table 111
neigh replace $B lladdr $(cat /sys/class/net/"$n1"/address) dev $n0 nud permanent
neigh replace $A lladdr $(cat /sys/class/net/"$n0"/address) dev $n1 nud permanent
END

cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock

[defaults]
max_pinned = 64M

[vm a]
device = rxe0
addresses = $A
[vm b]
device = rxe1
addresses = $B
END
chmod 644 "$T/policy.conf"

ctl() { "$CTL" --control "$T/control.sock" "$@"; }
# wait_for SECONDS COMMAND...: until it succeeds, SECONDS of wall time
# (under TCG a round of the command may itself take a while) and at least
# SECONDS * 10 rounds: under a heavy host load the test VM's clock jumps
# ahead by minutes (measured: 1283 s of uptime 45 s into a boot), which
# alone would end a wall-time wait at once
wait_for() {
	local end=$((${EPOCHREALTIME/./} + $1 * 1000000)) tries=$(($1 * 10))
	shift
	while :; do
		"$@" && return 0
		((--tries > 0 || ${EPOCHREALTIME/./} <= end)) || return 1
		sleep 0.1
	done
}
not() { ! "$@"; }
in_log() { grep -qF -- "$2" "$1"; }
count() { grep -cF -- "$2" "$1"; }
# The start-up bounds are generous: they cost nothing when the daemon is
# quick, and at a load of 30 on two cores (TCG) 10 s was measured too short
# for the broker to answer its first request.
start_broker() { # log
	"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" \
		--state-dir "$T/state" --mux "$T/mux.sock" > "$1" 2>&1 &
	BPID=$!
	wait_for 60 ctl list > /dev/null 2>&1
}
start_mux() { # log
	"$MUX" --control "$T/mux.sock" > "$1" 2>&1 &
	MPID=$!
	wait_for 60 in_log "$1" "control socket $T/mux.sock"
}
# start_services: the mux, then the broker (logs mux.log, broker.log), as
# TAP results; a broker that does not start ends the test
start_services() {
	check "mux is up" start_mux "$T/mux.log"
	if ! start_broker "$T/broker.log"; then
		not_ok "broker is up: $(tail -n 5 "$T/broker.log")"
		tap_end
		exit 1
	fi
	ok "broker is up"
}
# start_watchdog SECONDS: a test still running by then says where it is
start_watchdog() {
	( sleep "$1"; echo "# watchdog: still running"; dump | sed 's/^/# /' ) &
	WATCHDOG=$!
}
# the RoCE v2 index of GID (in sysfs form) on DEV port 1
v2_index() {
	local f i g t
	for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
		i=${f##*/}
		# read: a builtin, no fork per file (slow under TCG)
		read -r g < "$f" 2>/dev/null || continue
		[ "$g" = "$2" ] || continue
		read -r t < /sys/class/infiniband/"$1"/ports/1/gid_attrs/types/"$i" \
			2>/dev/null || continue
		[ "$t" = "RoCE v2" ] && { echo "$i"; return 0; }
	done
	return 1
}
dump() {
	for f in "$T"/*.log "$T"/*.guest; do
		echo "---- $f"
		tail -n 30 "$f"
	done
	echo "---- processes"
	ps -eo pid,stat,wchan:24,args | grep -E 'rdmagate|cat|sleep' | grep -v grep
	echo "---- kernel"
	dmesg | tail -n 20
}
