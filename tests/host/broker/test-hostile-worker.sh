#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM): the broker under a compromised worker (issue
# 29).  VM a's "worker" is hostile-worker.py (run by the broker in its
# place: its uid, cgroup and fds); VM b's is the real one.  A flood of
# refused GID claims that never reads its replies leaves a bounded number
# of broker lines and a line about b in between; an empty datagram on the
# channel is refused as malformed, not taken for the end of the
# connection; a channel the worker closes is connected again.
# Usage: test-hostile-worker.sh BROKER RDMAGATECTL WORKER HOSTILE TEST_HOOKS
set -u

BROKER=$1 CTL=$2 REAL_WORKER=$3 HOSTILE=$4 HOOKS=$5
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

needs_root_hooks "spawning sets uids, cgroups, rlimits" \
	"the echo test device"

broker_env hostile
ID0=62200

broker_policy "$ID0-$((ID0 + 9))" "socket_dir = $T/vm" <<EOF
[vm a]
addresses = 10.99.0.10
[vm b]
EOF
OUT=$T/hostile
mkdir -m 1777 "$OUT"
# readable by the worker's uid wherever the tree is
install -m 644 "$HOSTILE" "$T/hostile-worker.py"
HOSTILE=$T/hostile-worker.py
# The broker runs this in place of the worker (an empty environment):
# vm a gets the hostile code in the mode $OUT/mode names, the others the
# real worker.
WORKER=$T/worker-wrap
cat > "$WORKER" <<EOF
#!/bin/sh
[ "\$2" = a ] && exec /usr/bin/python3 "$HOSTILE" "\$(/bin/cat "$OUT/mode")" "$OUT"
exec "$REAL_WORKER" "\$@"
EOF
chmod 755 "$WORKER"

broker_start "$T/broker.log" --state-dir "$T/state" --stop-workers-on-exit \
	--cgroup-root "$CG_ROOT"
check "broker is up" test -S "$T/control.sock"

# ---- 1. a flood of refused claims, never reading the replies -------------
echo flood > "$OUT/mode"
out=$(ctl spawn --vm a --socket "$T/a.sock" --test-echo 2>&1)
check "spawn a (hostile): $out" grep -q "worker/a: pid" <<<"$out"
check "the flood started" wait_for 10 test -e "$OUT/flooding"
out=$(ctl spawn --vm b --socket "$T/b.sock" --test-echo 2>&1)
check "spawn b during the flood: $out" grep -q "worker/b: pid" <<<"$out"
check "... while a still floods" test ! -e "$OUT/flood-done"
check "the flood ended" wait_for 30 test -e "$OUT/flood-done"
sent=$(cat "$OUT/flood-done" 2> /dev/null)
check "the broker still answers while a floods" wait_for 10 \
	eval 'ctl stats --vm b --json | grep -q "\"fresh\": true"'
check "a line about b is in the log" in_log "$T/broker.log" "worker/b: ready"
# the claim sent 6 s after the flood passes, with the count before it
check "the dropped lines are counted, naming the worker" wait_for 15 \
	eval 'grep -q "^broker: warning: worker/a: [0-9]* lines dropped" "$T/broker.log"'
alines=$(grep -c "worker/a" "$T/broker.log")
refused=$(grep -c "worker/a: GID .* refused: the policy" "$T/broker.log")
unsent=$(grep -c "worker/a: channel: cannot send" "$T/broker.log")
check "${sent:-?} refused claims left $alines broker lines about a ($refused refusals, $unsent unsent replies): at most 40" \
	test "$alines" -le 40
check "refusals are still logged (at least one)" test "$refused" -ge 1
grep "lines dropped" "$T/broker.log" | diag
out=$(ctl stop --vm a 2>&1)
check "stop a: $out" wait_for 10 not vm_listed a

# ---- 2. an empty datagram, then a closed channel --------------------------
echo empty > "$OUT/mode"
lines=$(wc -l < "$T/broker.log")
out=$(ctl spawn --vm a --socket "$T/a.sock" --test-echo 2>&1)
check "spawn a (hostile) again: $out" grep -q "worker/a: pid" <<<"$out"
check "after an empty datagram the channel still answers" \
	wait_for 10 test -s "$OUT/empty"
check "... a refused claim with EPERM (1): $(cat "$OUT/empty" 2> /dev/null)" \
	test "$(cat "$OUT/empty" 2> /dev/null)" = 1
check "the empty datagram is refused as malformed" \
	eval 'tail -n +$((lines + 1)) "$T/broker.log" |
		grep -q "worker/a (pid [0-9]*): channel: refused a message: an empty message"'
check "a channel the worker closed is connected again" \
	wait_for 10 test -s "$OUT/again"
check "... and answers: $(cat "$OUT/again" 2> /dev/null)" \
	test "$(cat "$OUT/again" 2> /dev/null)" = 1
out=$(ctl stats --vm a --json 2>&1)
check "stats of a are fresh again: $(tr -d '\n' <<<"$out")" \
	grep -q '"fresh": true' <<<"$out"
check "a is still running" eval 'ctl list | grep -Eq "^a .* running"'

echo "1..$n"
if [ "$failed" != 0 ]; then
	echo "# broker log (last 80 lines):"
	tail -n 80 "$T/broker.log" | sed 's/^/# /'
fi
[ "$failed" = 0 ]
