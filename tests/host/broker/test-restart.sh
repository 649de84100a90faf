#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM): a broker restart does not take guests down, in
# TAP.  Workers (the echo test device) keep serving a guest's traffic while
# the broker is stopped and started again; the new broker re-adopts them
# from its state directory (same pids, channels reconnected, counters
# readable), notices a re-adopted worker's death within a second and cleans
# up after it, and cleans up after a worker that died while no broker ran.
# Usage: test-restart.sh BROKER RDMAGATECTL WORKER GUEST TEST_HOOKS(true|false)
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 HOOKS=$5
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"


needs_root_hooks "spawning sets uids, cgroups, rlimits" \
	"the echo test device"

broker_env restart
GPID=
# workers outlive brokers by design: stop what is left, after the broker
on_exit 'kill_state_workers "$T/state"; sleep 0.2'
on_exit 'stop "$GPID" "$BPID"; BPID='

broker_policy 62200-62299 "socket_dir = $T/vm" <<EOF
[vm a]
[vm b]
[vm c]
EOF

start_broker() { # log file
	broker_start "$1" --state-dir "$T/state" --cgroup-root "$CG_ROOT"
}

fresh() { wait_for 5 stats_fresh "$1"; } # VM: within 5 s

# (its pid may linger as a zombie: a worker whose broker died is reparented
# to init, which reaps it, or to whatever subreaper this test runs under)
gone_within_1s() { wait_for 1 not vm_listed "$1"; } # vm

check "broker 1 is up" start_broker "$T/broker1.log"
ctl spawn --vm a --socket "$T/a.sock" --test-echo >/dev/null
ctl spawn --vm b --socket "$T/b.sock" --test-echo >/dev/null
pa=$(worker_pid a) pb=$(worker_pid b)
check "two workers run (a $pa, b $pb)" test -n "$pa" -a -n "$pb"
check "their channels are up" fresh a

# a guest's traffic through worker a, across the restart
"$GUEST" --socket "$T/a.sock" echo -n 400000 -s 64 > "$T/guest.log" 2>&1 &
GPID=$!
sleep 0.5
broker_stop TERM
check "broker 1 exits on SIGTERM and leaves the workers running" \
	kill -0 "$pa" "$pb"
check "and says so" grep -q "2 workers keep running" "$T/broker1.log"
check "the guest's traffic is still flowing with no broker" kill -0 "$GPID"
# a's log stream while no broker runs (root writes what a would)
echo "said with no broker" > "$T/state/workers/a.log"
check "broker 2 is up" start_broker "$T/broker2.log"
check "broker 2 re-adopted a: $(grep -c 're-adopted' "$T/broker2.log") re-adoptions" \
	grep -q "worker/a (pid $pa, uid [0-9]*) re-adopted" "$T/broker2.log"
check "list shows both with their pids" \
	test "$(worker_pid a) $(worker_pid b)" = "$pa $pb"
check "a's channel is reconnected (fresh counters)" fresh a
check "a's log line from the gap reaches broker 2" \
	grep -q "^worker/a: said with no broker$" "$T/broker2.log"
check "b's channel is reconnected (fresh counters)" fresh b
argv_of() { # PID OPTION: the value the worker was given
	tr '\0' '\n' < "/proc/$1/cmdline" | sed -n "/^$2\$/{n;p}"
}
rec_of() { sed -n "s/^$2 //p" "$T/state/workers/$1.state"; } # vm key
ALEVEL=$(argv_of "$pa" --selinux-level)
check "a's record, rewritten by broker 2, keeps its SELinux level ($(rec_of a level)) and frontend" \
	test "$(rec_of a level):$(rec_of a frontend)" = "$ALEVEL:$(argv_of "$pa" --frontend)" -a -n "$ALEVEL"
check "a counts its guest's connection" \
	test "$(ctl stats --vm a --json | jq '.[0].connects')" = 1
wait "$GPID"
rc=$?
GPID=
check "the guest's 400000 round trips completed across the restart (exit $rc): $(tail -n 1 "$T/guest.log")" \
	test "$rc" = 0

# a re-adopted worker dies: noticed through its pidfd
kill -9 "$pb"
check "killed re-adopted worker b is cleaned up within 1 s" gone_within_1s b
check "its socket is gone" test ! -e "$T/b.sock"
check "its state record and channel are gone" \
	test ! -e "$T/state/workers/b.state" -a ! -e "$T/state/workers/b.channel"
check "the broker says how it ended" \
	grep -q "worker/b (pid $pb) exited (re-adopted after a broker restart" \
	"$T/broker2.log"
check "worker a is untouched" kill -0 "$pa"

# a worker dies while no broker runs (the broker crashed)
ctl spawn --vm c --socket "$T/c.sock" --test-echo >/dev/null
pc=$(worker_pid c)
broker_stop KILL
kill -9 "$pc"
sleep 0.2
# records that must never make a broker signal or adopt a process: an old
# (v1) record, as a newline in a socket path once forged one; a v2 record
# naming a live process whose start time is not the record's (a reused
# pid); a record naming a channel this broker does not make
sleep 100 &
VICTIM=$!
printf '%s\n' '# forged' 'version 1' 'vm v1' "pid $VICTIM" 'starttime 0' \
	'uid 0' 'gid 0' 'device echo' 'port 1' "socket $T/v1.sock" 'cgroup -' \
	'start 0' "channel $T/state/workers/v1.channel" > "$T/state/workers/v1.state"
record() { # vm pid starttime channel
	printf '%s\n' 'rdmagate-broker-state 2' "vm $1" "pid $2" \
		"starttime $3" 'uid 0' 'gid 0' 'device echo' 'port 1' \
		"socket $T/$1.sock" 'cgroup -' 'start 0' "channel $4" \
		> "$T/state/workers/$1.state"
}
record reuse "$VICTIM" 1 "$T/state/workers/reuse.channel"
record chan "$VICTIM" "$(awk '{ print $22 }' /proc/$VICTIM/stat)" /tmp/elsewhere
# a's record as a broker of version 2 wrote it: no frontend, no level
sed -i -e '1s/ 3$/ 2/' -e '/^frontend /d' -e '/^level /d' "$T/state/workers/a.state"
check "broker 3 is up" start_broker "$T/broker3.log"
check "the v1 record is refused" \
	grep -q "v1.state: not a version 2 to 3 record" "$T/broker3.log"
check "a reused pid is not adopted" \
	grep -q "worker/reuse (pid $VICTIM) ended while no broker" "$T/broker3.log"
check "a record naming a foreign channel is ignored" \
	grep -q "vm chan: its record names a channel or cgroup" "$T/broker3.log"
check "none of them is listed" test -z "$(worker_pid reuse)$(worker_pid chan)$(worker_pid v1)"
check "the process they named was never signalled" kill -0 "$VICTIM"
kill "$VICTIM"
wait "$VICTIM" 2>/dev/null
rm -f "$T/state/workers/v1.state" "$T/state/workers/chan.state"
check "it cleaned up after c, which died meanwhile" \
	grep -q "worker/c (pid $pc) ended while no broker was running" \
	"$T/broker3.log"
check "c is not listed, its socket and record are gone" \
	test -z "$(worker_pid c)" -a ! -e "$T/c.sock" -a ! -e "$T/state/workers/c.state"
check "a was re-adopted again" test "$(worker_pid a)" = "$pa"
# the level of a version 2 record's worker: its SELinux context's, else
# (no SELinux here) its uid's, which its spawn used
if grep -q "worker/a: its record has no SELinux level" "$T/broker3.log"; then
	how="its uid's"
else
	how="its context's"
fi
check "a's version 2 record comes back as version 3 with its level ($how): $(head -n 1 "$T/state/workers/a.state"), $(rec_of a level)" \
	test "$(head -n 1 "$T/state/workers/a.state"):$(rec_of a level)" = "rdmagate-broker-state 3:$ALEVEL"

# STOP of a re-adopted worker
out=$(ctl stop --vm a 2>&1)
check "stop of re-adopted a: $out" grep -q "worker/a (pid $pa) exited" <<<"$out"
check "a is gone" test ! -e "$T/a.sock" -a -z "$(worker_pid a)"

broker_stop TERM
echo "1..$n"
[ "$failed" = 0 ]
