#!/bin/bash
# SPDX-License-Identifier: MIT
# host test (root) of the broker's USDT probes: rdmagate-trace attaches to
# the real rdmagate-broker and rdmagate-worker; the broker spawns two echo
# workers, stops one, refuses an unknown VM and a duplicate; the pinned
# counters map must hold exactly workers_spawned, workers_exited and
# policy_refusals per VM, before and after the broker's own exit. In TAP.
# Usage: test_broker_trace.sh RDMAGATE_TRACE BROKER RDMAGATECTL WORKER
#        TEST_HOOKS(true|false)
set -u
TRACE=$1 BROKER=$2 CTL=$3 WORKER=$4 HOOKS=$5
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh" # (its ctl is redefined below: 2>&1)
PIN=/sys/fs/bpf/rdmagate-btest-$$
broker_env trace
ID0=62400
TPID=
on_exit 'rm -rf "$PIN"'
on_exit 'stop "$TPID"'

[ "$(id -u)" = 0 ] || skip_all "needs root (BPF, uprobes, spawning workers)"
[ "$HOOKS" = true ] ||
	skip_all "needs a -Dtest_hooks=true build (the echo test device)"
command -v jq >/dev/null || skip_all "needs jq to read JSON"
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
[ -x "$BPFTOOL" ] || skip_all "needs bpftool"
[ -e /sys/bus/event_source/devices/uprobe/type ] ||
	skip_all "this kernel has no uprobe PMU (CONFIG_UPROBE_EVENTS)"

# ---- the tracer first: it covers the broker it has not seen start -------
"$TRACE" --pin-dir "$PIN" --worker "$WORKER" --broker "$BROKER" -i 60 \
	>"$T/trace.out" 2>"$T/trace.err" &
TPID=$!
tracer_up "$TPID" "$T/trace.err"
# worker: its 8 probes; broker: worker_spawn, worker_exit, policy_refuse,
# gid_add, gid_del (an error if one were missing: --broker was given); the
# mux's mad_route and mad_route_drop when the tracer finds the build's mux
# by default
want=13
[ -x "$(dirname "$TRACE")/../mux/rdmagate-mux" ] && want=15
grep -q "^Tracing $want rdmagate USDT probes" "$T/trace.err" &&
	ok "tracer attached $want probes (8 worker, 5 broker, the mux's)" ||
	not_ok "tracer (want $want probes): $(cat "$T/trace.err")"

# ---- the broker and its requests -----------------------------------------
broker_policy "$ID0-$((ID0 + 99))" <<EOF
[vm vm-a]
[vm vm-b]
EOF
broker_start "$T/broker.log" --state-dir "$T/state" --stop-workers-on-exit \
	--cgroup-root "$CG_ROOT"
if [ ! -S "$T/control.sock" ]; then
	diag < "$T/broker.log"
	not_ok "the broker is up"
	tap_end
	exit 1
fi

ctl() { "$CTL" --control "$T/control.sock" "$@" 2>&1; }
expect() { # DESCRIPTION PATTERN OUTPUT
	grep -q "$2" <<<"$3" && ok "$1" || not_ok "$1: $3"
}

expect "spawn vm-a" "worker/vm-a: pid" \
	"$(ctl spawn --vm vm-a --socket "$T/a.sock" --test-echo)"
expect "spawn vm-b" "worker/vm-b: pid" \
	"$(ctl spawn --vm vm-b --socket "$T/b.sock" --test-echo)"
expect "stop vm-a" "worker/vm-a (pid [0-9]*) killed by SIGTERM" \
	"$(ctl stop --vm vm-a)"
expect "unknown VM refused" "vm vm-nope is not in the policy" \
	"$(ctl spawn --vm vm-nope --socket "$T/n.sock" --test-echo)"
# not a policy refusal: the table's state, no policy_refuse
expect "second vm-b refused" "already has a worker" \
	"$(ctl spawn --vm vm-b --socket "$T/b2.sock" --test-echo)"

# Each probe fires before the broker's reply: the map is complete now.
counters() { # VM -> "spawned exited refusals" (0 0 0 without an entry)
	local v
	v=$("$BPFTOOL" -j map dump pinned "$PIN/counters" | jq -r --arg vm "$1" \
		'[.[] | select(.formatted.key.vm == $vm) | .formatted.value |
		  "\(.workers_spawned) \(.workers_exited) \(.policy_refusals)"]
		 | .[0] // "0 0 0"')
	echo "$v"
}
check_vm() { # VM "spawned exited refusals" WHEN
	local got
	got=$(counters "$1")
	[ "$got" = "$2" ] &&
		ok "$3: $1 spawned/exited/refused = $got" ||
		not_ok "$3: $1 spawned/exited/refused = $got, want $2"
}
check_vm vm-a "1 1 0" "broker running"
check_vm vm-b "1 0 0" "broker running"
check_vm vm-nope "0 0 1" "broker running"
nvm=$("$BPFTOOL" -j map dump pinned "$PIN/counters" | jq length)
[ "$nvm" = 3 ] && ok "3 VMs in the counters map" ||
	not_ok "$nvm VMs in the counters map, want 3: $("$BPFTOOL" map dump pinned "$PIN/counters")"

# ---- the broker's exit stops vm-b: one more worker_exit ---------------------
kill -TERM "$BPID"
wait "$BPID"
rc=$?
BPID=
[ $rc = 0 ] && ok "broker exited 0" || not_ok "broker exit status $rc"
check_vm vm-a "1 1 0" "broker gone"
check_vm vm-b "1 1 0" "broker gone"
check_vm vm-nope "0 0 1" "broker gone"

kill -INT "$TPID"
wait "$TPID"
rc=$?
TPID=
[ $rc = 0 ] && ok "tracer exit status 0" || not_ok "tracer exit status $rc"
[ -d "$PIN" ] && not_ok "pins left without --keep" || ok "pins removed"

[ "$failed" = 0 ] || {
	echo "--- broker log"
	cat "$T/broker.log"
	echo "--- tracer stderr"
	cat "$T/trace.err"
} | diag
tap_end
