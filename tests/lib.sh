# SPDX-License-Identifier: MIT
# Process and log helpers for the bash shell tests, host and vm (sourced,
# after tests/tap.sh when the test reports TAP; not for #!/bin/sh ones),
# with tests/clock.sh's mono_ms and wait_for and tests/exit.sh's on_exit
# and stop (so a test that sources this sets no EXIT trap of its own):
#   wait_for SECONDS COMMAND...   until COMMAND succeeds (tests/clock.sh)
#   not COMMAND...                succeeds when COMMAND fails (tests/clock.sh)
#   gone PID...                   every PID has ended
#   in_log FILE TEXT              FILE has TEXT (fixed string)
#   count FILE TEXT               the lines of FILE with TEXT
#   elapsed WHAT                  "# N s: WHAT", N since the test started
#   tcp_listening PORT            something listens on TCP PORT (v4 or v6)
#   ctl ARGS...                   rdmagatectl ($CTL) on $T/control.sock
#   worker_pid VM                 the pid of VM's worker, from `ctl list`
#   vm_listed VM                  `ctl list` has VM
#   stats_fresh VM                VM's worker answers STATS (fresh counters)
#   broker_start LOG [ARGS...]    $BROKER on $T/policy.conf with $WORKER
#                                 and ARGS, in the background (pid in
#                                 BPID); fails unless it answers in 60 s
#                                 (10 s was measured too short at a
#                                 load of 30 on two cores, TCG)
#   kill_state_workers STATE_DIR  SIGKILL the workers a broker recorded
#                                 there (they outlive brokers by design)
#   cgroup2_root                  where cgroup v2 is mounted, else
#                                 /nonexistent
#   needs_root_hooks ROOT HOOKS   skip_all (tap.sh) unless root and a
#                                 test-hooks build ($HOOKS), saying why
#                                 each is needed (ROOT, HOOKS)
#   broker_env NAME               a host broker test's ground: $T (a 0755
#                                 folder: workers under their own uids
#                                 read it), CG_PARENT, CG_ROOT, BPID=;
#                                 at exit (on_exit) stops $BPID, removes
#                                 $T and the cgroups (none when CG_PARENT
#                                 is empty)
#   tracer_started PID ERR        waits (20 s) for rdmagate-trace PID's
#                                 "Tracing" line in its stderr ERR, less
#                                 if PID ends first; fails without it
#   tracer_up PID ERR             tracer_started, else shows ERR (TAP
#                                 comments) and skips the test (skip_all,
#                                 before any result: the kernel lacks BPF
#                                 or uprobes) or fails it
#   policy_conf [LINE...] [-- DEFAULT...]
#                                 $T/policy.conf (0644): [broker] with the
#                                 control socket in $T and the LINEs,
#                                 [defaults] with the DEFAULTs, then stdin
#                                 (the [vm] sections)
#   broker_policy IDS [LINE...]   policy_conf for the host broker tests:
#                                 worker_ids IDS, cgroup_parent when
#                                 CG_PARENT is set, the LINEs; rxe0 and
#                                 max_pinned 4M
. "$(dirname "${BASH_SOURCE[0]}")/clock.sh"
. "$(dirname "${BASH_SOURCE[0]}")/exit.sh"
T0=${T0:-$SECONDS}

# gone PID...: every PID has ended (kill -0 fails for each, quietly)
gone() {
	local p
	for p; do ! kill -0 "$p" 2> /dev/null || return 1; done
}
in_log() { grep -qF -- "$2" "$1"; }
count() { grep -cF -- "$2" "$1"; }
# count_is FILE TEXT N: TEXT is in FILE on exactly N lines (for wait_for,
# which runs it afresh at each try)
count_is() { [ "$(count "$1" "$2")" = "$3" ]; }
elapsed() { echo "# $((SECONDS - T0)) s: $*"; }
# state 0A (LISTEN) in /proc/net/tcp{,6}, the port in upper-case hex
tcp_listening() {
	grep -qi ":$(printf %04X "$1") 0*:0000 0A" /proc/net/tcp /proc/net/tcp6 \
		2> /dev/null
}
ctl() { "$CTL" --control "$T/control.sock" "$@"; }
worker_pid() { ctl list --json | jq -r ".[] | select(.vm == \"$1\") | .pid"; }
vm_listed() { ctl list --json | grep -q "\"vm\": \"$1\""; }
# stats_fresh VM: VM's worker answers STATS over its channel now
stats_fresh() { ctl stats --vm "$1" --json 2> /dev/null | grep -q '"fresh": true'; }
broker_start() {
	local log=$1
	shift
	"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" "$@" > "$log" 2>&1 &
	BPID=$!
	wait_for 60 ctl list > /dev/null 2>&1
}
# mux_start LOG: rdmagate-mux on $T/mux.sock, up once it says so; MPID
mux_start() {
	"$MUX" --control "$T/mux.sock" > "$1" 2>&1 &
	MPID=$!
	wait_for 60 in_log "$1" "control socket $T/mux.sock"
}
# broker_stop [SIGNAL]: the broker of broker_start, signalled (TERM) and
# reaped; its workers live on (a broker's end does not stop them)
broker_stop() {
	kill "-${1:-TERM}" "$BPID" && wait "$BPID" 2>/dev/null
	BPID=
}
kill_state_workers() {
	local f
	for f in "$1"/workers/*.state; do
		[ -f "$f" ] || continue
		kill -9 "$(awk '$1 == "pid" { print $2 }' "$f")" 2> /dev/null
	done
}
# /sys/fs/cgroup on most hosts and in the VM; .../unified in hybrid mode
cgroup2_root() {
	local d
	for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ "$(stat -fc %T "$d" 2> /dev/null)" = cgroup2fs ] &&
			{ echo "$d"; return 0; }
	done
	echo /nonexistent
}
needs_root_hooks() {
	[ "$(id -u)" = 0 ] || skip_all "needs root ($1)"
	[ "$HOOKS" = true ] || skip_all "needs a -Dtest_hooks=true build ($2)"
}
broker_env() {
	T=$(mktemp -d "/tmp/rdmagate-$1-test.XXXXXX") || exit 1
	chmod 755 "$T"
	CG_PARENT=/rdmagate-$1test-$$
	CG_ROOT=$(cgroup2_root)
	BPID=
	on_exit _broker_env_undo
}
_broker_env_undo() {
	stop "$BPID"
	# never with CG_PARENT empty: that would be every cgroup of the host
	[ -z "${CG_PARENT:-}" ] ||
		rmdir "$CG_ROOT$CG_PARENT"/* "$CG_ROOT$CG_PARENT" 2> /dev/null
	rm -rf "$T"
}
# max_pinned: below this host's hard RLIMIT_MEMLOCK, for the broker may
# lack CAP_SYS_RESOURCE
broker_policy() {
	policy_conf "worker_ids = $1" \
		${CG_PARENT:+"cgroup_parent = $CG_PARENT"} "${@:2}" \
		-- "device = rxe0" "max_pinned = 4M"
}
policy_conf() {
	{
		echo "[broker]"
		echo "control_socket = $T/control.sock"
		while [ $# -gt 0 ] && [ "$1" != -- ]; do
			echo "$1"
			shift
		done
		shift # --
		echo
		echo "[defaults]"
		[ $# = 0 ] || printf '%s\n' "$@"
		echo
		cat
	} > "$T/policy.conf"
	chmod 644 "$T/policy.conf"
}
tracing() { grep -q '^Tracing' "$2"; }
tracing_or_gone() { tracing "$@" || gone "$1"; }
tracer_started() {
	wait_for 20 tracing_or_gone "$1" "$2"
	tracing "$1" "$2"
}
tracer_up() {
	tracer_started "$1" "$2" && return 0
	diag < "$2"
	grep -q 'no BPF support\|no uprobe support' "$2" &&
		skip_all "the kernel lacks BPF or uprobes (above)"
	not_ok "the tracer started"
	tap_end
	exit 1
}
