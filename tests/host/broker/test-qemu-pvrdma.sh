#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM): frontend qemu-pvrdma (broker/qemu_pvrdma.c), in
# TAP, with the real broker and the real rdmagate-mux (no RDMA device here:
# its PORT_ADD fails, which the rdmacm-mux endpoint does not need).
#  - without --mux the spawn is refused, saying why; nothing is left;
#  - with it: the VM's socket is its QEMU's (vmm_uid, 0600), the mux gets
#    RDMACM_ATTACH with that socket and that uid, no worker runs;
#  - a client as root is turned away by the mux; one as vmm_uid gets EACCES
#    for a REG of a GID the broker never granted (anti-spoofing), and the
#    mux counts and logs it;
#  - a second spawn: EEXIST; an address outside the policy, and an address
#    the broker cannot add (no netdev here): refused, nothing left;
#  - kill -9 of the mux, a new one: the broker replays the attach with the
#    same listening socket, and QEMU's uid can connect again;
#  - stop: WORKER_DETACH, the connection ends, the socket is removed;
#  - the broker's exit detaches an attached VM too.
# Usage: test-qemu-pvrdma.sh BROKER RDMAGATECTL WORKER MUX
set -u

BROKER=$1 CTL=$2 WORKER=$3 MUX=$4
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh" # wait_for, ctl, in_log, not

[ "$(id -u)" = 0 ] || skip_all "needs root (the broker chowns sockets; the mux link wants a root peer)"
[ -x /usr/bin/python3 ] || skip_all "needs /usr/bin/python3 (QEMU's side, played as uid 65534)"
command -v setpriv >/dev/null || skip_all "needs setpriv (util-linux)"

broker_env qemupv
CG_PARENT= # no worker runs
MPID= HOLD=
on_exit 'stop "$MPID"'
on_exit 'stop "$HOLD" "$BPID"; BPID='
cp "$(dirname "$0")/rdmacm-client.py" "$T/client.py"
chmod 755 "$T/client.py"

# no worker runs: no worker_ids, no quotas; rxe0 is no device here
cat > "$T/policy.conf" <<END
[broker]
control_socket = $T/control.sock
socket_dir = $T/vm
[vm q]
device = rxe0
frontend = qemu-pvrdma
vmm_uid = 65534
[vm q2]
device = rxe0
frontend = qemu-pvrdma
vmm_uid = 65533
addresses = fd99::20
END
chmod 644 "$T/policy.conf"
lines_are() { test "$(grep -c -- "$2" "$1")" = "$3"; } # log regex count
# as QEMU's uid (or root with "root")
client() {
	local who=$1
	shift
	if [ "$who" = root ]; then
		/usr/bin/python3 "$T/client.py" "$@"
	else
		setpriv --reuid 65534 --regid 65534 --clear-groups \
			/usr/bin/python3 "$T/client.py" "$@"
	fi
}
start_broker() { # log [--mux]
	local log=$1
	shift
	broker_start "$log" --state-dir "$T/state" --cgroup-root /nonexistent "$@"
}
# ---- no mux -------------------------------------------------------------------
check "broker 1 (no --mux) is up" start_broker "$T/broker1.log"
out=$(ctl spawn --vm q 2>&1)
check "spawn q without a mux is refused: $out" \
	grep -q "frontend qemu-pvrdma needs rdmagate-mux" <<<"$out"
check "and leaves no socket" test ! -e "$T/vm/q.sock"
broker_stop

# ---- attached -----------------------------------------------------------------
check "the mux is up" mux_start "$T/mux1.log"
check "broker 2 (--mux) is up" start_broker "$T/broker2.log" --mux "$T/mux.sock"
check "the broker connected to the mux" \
	wait_for 30 in_log "$T/broker2.log" "mux $T/mux.sock: connected"
out=$(ctl spawn --vm q 2>&1)
check "spawn q: $out" grep -q "vm q: QEMU pvrdma attached to the mux, socket $T/vm/q.sock, 0 addresses" <<<"$out"
check "its socket is QEMU's: 65534, 0600" \
	test "$(stat -c '%u %a %F' "$T/vm/q.sock")" = "65534 600 socket"
check "the mux serves it for uid 65534 (mux worker 1)" \
	wait_for 30 in_log "$T/mux1.log" "vm q (worker 1): rdmacm-mux endpoint for QEMU's pvrdma"
check "the broker logged the attach" \
	wait_for 30 in_log "$T/broker2.log" "vm q: attached to the mux's rdmacm-mux endpoint (mux worker 1, QEMU uid 65534)"
check "no worker process: list says pid 0" \
	eval 'ctl list --json | grep -q "\"vm\": *\"q\", *\"pid\": *0"'
check "no state record (nothing to re-adopt)" test ! -e "$T/state/workers/q.state"

out=$(client root "$T/vm/q.sock" reg fd99::10 2>&1)
check "a client as root: closed by the mux ($out)" test "$out" = closed
check "the mux logged why" \
	wait_for 30 in_log "$T/mux1.log" "only uid 65534 may connect"
out=$(client qemu "$T/vm/q.sock" reg fd99::10 2>&1)
check "QEMU's uid: REG of a GID never granted gets EACCES ($out)" \
	test "$out" = "err 3"
check "the mux logged the refused spoof" \
	wait_for 30 in_log "$T/mux1.log" "QEMU's REG of fd99::10: not a GID the broker gave this VM"

out=$(ctl spawn --vm q 2>&1)
check "spawn q again: $out" grep -q "vm q is attached already (QEMU pvrdma)" <<<"$out"
out=$(ctl spawn --vm q2 --address fd99::21 2>&1)
check "q2 naming an address the policy does not grant: $out" \
	grep -q "the policy does not let vm q2 claim fd99::21" <<<"$out"
out=$(ctl spawn --vm q2 2>&1)
check "q2, whose fd99::20 cannot be added here: $out" \
	grep -q "no netdev behind rxe0 port 1" <<<"$out"
check "and leaves no socket" test ! -e "$T/vm/q2.sock"
check "nor a row" not eval 'ctl list | grep -qw q2'

# ---- the mux restarts: replayed with the same socket ----------------------------
kill -9 "$MPID"
wait "$MPID" 2>/dev/null
check "mux 2 is up" mux_start "$T/mux2.log"
check "the broker attached q again (RDMACM_ATTACH replayed)" \
	wait_for 30 in_log "$T/mux2.log" "vm q (worker 1): rdmacm-mux endpoint for QEMU's pvrdma"
out=$(client qemu "$T/vm/q.sock" reg fd99::10 2>&1)
check "QEMU's uid reaches mux 2 on the same socket file ($out)" \
	test "$out" = "err 3"

# ---- stop: detached -----------------------------------------------------------
client qemu "$T/vm/q.sock" hold > "$T/hold.out" 2>&1 &
HOLD=$!
check "a QEMU connection is held (the mux's second)" \
	wait_for 30 lines_are "$T/mux2.log" "vm q (worker 1): QEMU pid .* connected" 2
out=$(ctl stop --vm q 2>&1)
check "stop q: $out" test $? = 0
check "the mux detached worker 1" wait_for 30 in_log "$T/mux2.log" "worker 1 (q) detached"
check "QEMU's connection ended" wait_for 30 in_log "$T/hold.out" "eof"
HOLD=
check "its socket is gone" test ! -e "$T/vm/q.sock"
check "no row left" not eval 'ctl list | grep -qw q'

# ---- the broker's exit detaches -------------------------------------------------
out=$(ctl spawn --vm q 2>&1)
check "spawn q again: $out" grep -q "attached to the mux" <<<"$out"
check "mux 2 serves it" \
	wait_for 30 lines_are "$T/mux2.log" "vm q (worker 1): rdmacm-mux endpoint" 2
broker_stop
check "the broker's exit removed its socket" test ! -e "$T/vm/q.sock"
check "and said why" in_log "$T/broker2.log" "vm q: detached (QEMU pvrdma): the broker exits"
check "no broker logged an error" \
	not grep -h "error\|refused RDMACM" "$T/broker1.log" "$T/broker2.log"
if [ "$failed" != 0 ]; then
	for f in "$T"/*.log; do echo "---- $f"; cat "$f"; done | diag
fi
tap_end
