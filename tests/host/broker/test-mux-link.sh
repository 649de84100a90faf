#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM): the broker's link to the mux converges after a
# lost link, in TAP.  A stand-in mux (fake-mux.py) drops the link, without
# an answer, at the WORKER_DETACH of a stopped worker: on the next link the
# broker must detach every worker id the mux may still hold (the stopped
# one among them) before it replays the running ones.
# Usage: test-mux-link.sh BROKER RDMAGATECTL WORKER TEST_HOOKS(true|false)
set -u

BROKER=$1 CTL=$2 WORKER=$3 HOOKS=$4
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

needs_root_hooks "spawning sets uids; the mux link wants a root peer" \
	"the echo test device"
command -v python3 >/dev/null || skip_all "needs python3 (the stand-in mux)"

broker_env muxlink
CG_PARENT= # the broker runs with --cgroup-root /nonexistent
MPID=
on_exit 'stop "$MPID"'
on_exit 'stop "$BPID"; BPID='

broker_policy 62300-62399 "socket_dir = $T/vm" <<EOF
[vm a]
[vm b]
EOF

python3 "$(dirname "$0")/fake-mux.py" "$T/mux.sock" "$T/mux.log" &
MPID=$!
wait_for 5 test -S "$T/mux.sock"
"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" --state-dir "$T/state" \
	--cgroup-root /nonexistent --mux "$T/mux.sock" \
	--stop-workers-on-exit > "$T/broker.log" 2>&1 &
BPID=$!
check "broker is up" wait_for 5 test -S "$T/control.sock"
ctl spawn --vm a --socket "$T/a.sock" --test-echo >/dev/null
ctl spawn --vm b --socket "$T/b.sock" --test-echo >/dev/null
check "the mux got both workers on link 1" \
	wait_for 10 grep -q "^link 1 WORKER_ATTACH 2$" "$T/mux.log"
ctl stop --vm b >/dev/null
check "the link went at b's DETACH" \
	wait_for 5 grep -q "^link 1 dropped$" "$T/mux.log"
check "the broker connected again" \
	wait_for 5 grep -q "^link 2 WORKER_ATTACH 1$" "$T/mux.log"
link2=$(grep "^link 2 " "$T/mux.log" | cut -d' ' -f3- | tr '\n' ',')
check "link 2 detaches b (id 2), whose DETACH was lost: $link2" \
	grep -q "WORKER_DETACH 2," <<<"$link2"
check "and a (id 1) before attaching it again" \
	grep -q "WORKER_DETACH 1,.*WORKER_ATTACH 1," <<<"$link2"
check "b is not attached again" eval '! grep -q "WORKER_ATTACH 2" <<<"$link2"'
check "no third link was needed" eval '! grep -q "^link 3" "$T/mux.log"'
tap_end
