#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM): rdmagate-broker end to end, in TAP.  Starts the
# broker on a temporary policy, spawns a worker (the echo test device: this
# host has no verbs device), checks its uid/gid, capabilities, no_new_privs,
# seccomp, socket and cgroup, serves one vhost-user handshake, list/stop,
# policy reload (bad file kept out), refusals, then makes the worker call
# each forbidden syscall and checks that the broker reports SIGSYS and
# cleans up.
# Usage: test-broker.sh BROKER RDMAGATECTL WORKER GUEST TEST_HOOKS(true|false)
set -u

BROKER=$1 CTL=$2 WORKER=$3 GUEST=$4 HOOKS=$5
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"

needs_root_hooks "spawning sets uids, cgroups, rlimits" \
	"the echo test device and the forbidden-syscall hook"

broker_env host
ID0=62000

write_policy() { # [control_group]
	broker_policy "$ID0-$((ID0 + 99))" "control_group = ${1:-}" \
		"socket_dir = $T/vm" <<EOF
[vm a]
addresses = 10.99.0.10, fd99::/64
worker_nice = -5
[vm sys]
[vm fixed]
uid = $((ID0 + 50))
gid = $((ID0 + 51))
[vm p]
frontend = pvrdma
[vm m]
vmm_uid = 65534
vmm_gid = 65534
EOF
}


# Waits (5 s) until VM $1 is no longer listed.
wait_gone() { wait_for 5 not vm_listed "$1"; }

# Waits (3 s) for TEXT in the broker's log after line N.
log_after() { tail -n +"$(($2 + 1))" "$T/broker.log" | grep -qF -- "$1"; }
within_log() { wait_for 3 log_after "$@"; }

status_field() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
# nice is field 19 of /proc/PID/stat: the 17th after the comm's ')'
nice_of() { sed 's/.*) //' "/proc/$1/stat" | cut -d' ' -f17; }

write_policy
broker_start "$T/broker.log" --state-dir "$T/state" --stop-workers-on-exit \
	--cgroup-root "$CG_ROOT"
check "broker is up (control socket $T/control.sock)" test -S "$T/control.sock"
check "control socket is root-only (0600) without control_group" \
	test "$(stat -c %a "$T/control.sock")" = 600

# ---- spawn and what the worker got --------------------------------------
out=$(ctl spawn --vm a --socket "$T/a.sock" --address 10.99.0.10 --address fd99::7 --test-echo 2>&1)
check "spawn a: $out" grep -q "worker/a: pid" <<<"$out"
pid=$(ctl list --json | sed -n 's/.*"vm": "a", "pid": \([0-9]*\).*/\1/p')
check "list --json has a with its pid ($pid)" test -n "$pid"
pid=${pid:-0}
check "worker uid is $ID0 (real, effective, saved, fs)" \
	test "$(grep ^Uid: /proc/$pid/status | tr -s '\t ' ' ')" = "Uid: $ID0 $ID0 $ID0 $ID0"
check "worker gid is $ID0" \
	test "$(grep ^Gid: /proc/$pid/status | tr -s '\t ' ' ')" = "Gid: $ID0 $ID0 $ID0 $ID0"
check "worker has no supplementary groups" \
	test -z "$(status_field "$pid" Groups)"
for c in CapInh CapPrm CapEff CapBnd CapAmb; do
	check "worker $c is 0" test "$(status_field "$pid" $c)" = 0000000000000000
done
check "the worker is told its frontend (the policy's default)" \
	test "$(tr '\0' '\n' < "/proc/$pid/cmdline" |
		grep -A1 -x -- --frontend | tail -n 1)" = virtio-rdma
check "worker NoNewPrivs is 1" test "$(status_field "$pid" NoNewPrivs)" = 1
check "worker Seccomp is 2 (filter)" test "$(status_field "$pid" Seccomp)" = 2
check "worker has transparent huge pages off (its tables stay small)" \
	test "$(status_field "$pid" THP_enabled)" = 0
check "worker RLIMIT_MEMLOCK is max_pinned (4 MiB)" \
	grep -q "^Max locked memory *4194304 *4194304 *bytes" "/proc/$pid/limits"
check "worker RLIMIT_CORE is 0 (a core would hold guest memory)" \
	grep -q "^Max core file size *0 *0 *bytes" "/proc/$pid/limits"
check "worker nice value is the policy's worker_nice (-5)" \
	test "$(nice_of "$pid")" = -5
if [ -e "/proc/$pid/autogroup" ]; then
	check "worker's autogroup (its own session's) has nice -5: $(cat "/proc/$pid/autogroup")" \
		grep -q 'nice -5$' "/proc/$pid/autogroup"
else
	echo "# no /proc/PID/autogroup: this kernel has no autogroups"
fi
# the broker channel is up once STATS gets a fresh answer
wait_for 5 stats_fresh a || echo "# a's STATS not fresh within 5 s"
grep -o 'worker/a: ready [0-9]* ms after the spawn request' "$T/broker.log" |
	sed 's/^/# spawn-to-ready: /'
out=$(ctl stats --vm a --json)
check "stats: worker a answers over its broker channel: $(tr -d "\n" <<<"$out")" \
	grep -q '"vm": "a", "pid": '"$pid"', "fresh": true, "connects": 0' <<<"$out"
check "stats: every pvrdma-level counter is there" \
	test "$(jq '.[0] | keys | length' <<<"$out")" = 22
check "stats: host async events counted (none yet)" \
	test "$(jq '.[0].async_events' <<<"$out")" = 0
out=$(ctl stats --vm nope 2>&1)
check "stats of an unknown VM refused: $out" grep -q "no such worker" <<<"$out"
fds=$(ls "/proc/$pid/fd" | sort -n | tr '\n' ' ')
check "worker holds fds 0-6 only (stdio, the socket, its epoll, the broker channel and its connection): $fds" \
	test "$fds" = "0 1 2 3 4 5 6 "
check "fd 5 is the broker channel's listening socket" \
	grep -q '^socket:' <<<"$(readlink "/proc/$pid/fd/5")"
check "the channel is root's alone (0600 root)" \
	test "$(stat -c '%a %u' "$T/state/workers/a.channel")" = "600 0"
check "the state record names the worker" \
	grep -q "^pid $pid\$" "$T/state/workers/a.state"
check "fd 3 is the vhost-user socket" \
	grep -q '^socket:' <<<"$(readlink "/proc/$pid/fd/3")"
check "socket root's, mode 0600 (the policy names no QEMU identity for a)" \
	test "$(stat -c '%u %g %a %F' "$T/a.sock")" = "0 0 600 socket"
if [ "$CG_ROOT" != /nonexistent ]; then
	check "worker in its cgroup $CG_PARENT/a" \
		grep -qx "0::$CG_PARENT/a" "/proc/$pid/cgroup"
else
	ok "worker cgroup # SKIP no cgroup2 mount on this host"
fi
probe() { "$GUEST" --socket "$T/a.sock" probe > "$T/probe.out" 2>&1; }
check "vhost-user handshake through the broker-made socket" probe
check "the echo device answered the probe" grep -q rdmagate-echo "$T/probe.out"
out=$(ctl list)
check "list (text) shows a running" grep -Eq "^a +$pid +$ID0 .* running" <<<"$out"

# ---- the worker's own log stream -------------------------------------------
check "the worker's stderr is its own FIFO, not the broker's" \
	test "$(readlink "/proc/$pid/fd/2")" != "$(readlink "/proc/$BPID/fd/2")" -a \
	"$(stat -Lc %F "/proc/$pid/fd/2")" = fifo
check "its lines reach the broker's log under worker/a:" \
	within_log "worker/a: frontend connected" 0
# what a taken-over worker could write into its stream (root writes it here)
lines=$(wc -l < "$T/broker.log")
printf 'broker: warning: worker/b (pid 1) killed\nx\rbroker: info\033[2J\n%02000d\n' 0 \
	> "$T/state/workers/a.log"
check "a forged broker line comes out as worker/a's" \
	within_log "worker/a: broker: warning: worker/b (pid 1) killed" "$lines"
check "control bytes are escaped" \
	within_log 'worker/a: x\x0dbroker: info\x1b[2J' "$lines"
check "a long line is cut at 512 bytes" \
	within_log "worker/a: $(printf '%0512d' 0) [cut]" "$lines"
check "no line of the worker's reads as the broker's" \
	eval '! tail -n +$((lines + 1)) "$T/broker.log" | grep -q "^broker: warning: worker/b (pid 1)"'
lines=$(wc -l < "$T/broker.log")
for i in $(seq 300); do echo "flood $i"; done > "$T/state/workers/a.log"
sleep 0.5
echo after > "$T/state/workers/a.log"
check "the dropped lines are counted" \
	within_log "lines dropped: more than 20 a second)" "$lines"
flood=$(tail -n +$((lines + 1)) "$T/broker.log" | grep -c 'worker/a: flood')
check "a flood is bounded in rate: $flood lines of 300 (at most a burst of 100)" \
	test "$flood" -ge 50 -a "$flood" -le 100

# ---- the VM's QEMU identity (m: vmm_uid, vmm_gid 65534) -----------------
out=$(ctl spawn --vm m --test-echo 2>&1)
check "spawn m with its default socket name: $out" grep -q "worker/m: pid" <<<"$out"
check "m's socket belongs to its QEMU identity (65534:65534, 0660) in socket_dir" \
	test "$(stat -c '%u %g %a %F' "$T/vm/m.sock")" = "65534 65534 660 socket"
# the file mode keeps others out; open it up to reach the worker's check
chmod 666 "$T/vm/m.sock"
lines=$(wc -l < "$T/broker.log")
out=$(setpriv --reuid=1234 --regid=1234 --clear-groups "$GUEST" \
	--socket "$T/vm/m.sock" probe 2>&1)
check "the worker turns away another uid (SO_PEERCRED)" \
	eval '! grep -q rdmagate-echo <<<"$out"'
check "and says so" within_log "refused a frontend of uid 1234 gid 1234" "$lines"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$GUEST" \
	--socket "$T/vm/m.sock" probe 2>&1)
check "it serves m's QEMU identity" grep -q rdmagate-echo <<<"$out"
ctl stop --vm m > /dev/null 2>&1

# ---- the frontend: the policy's (virtio-rdma), or root's choice ----------
lines=$(wc -l < "$T/broker.log")
out=$(ctl spawn --vm sys --test-echo --frontend pvrdma 2>&1)
check "root may choose the frontend: $out" grep -q "worker/sys: pid" <<<"$out"
check "the broker spawned it with frontend pvrdma" \
	within_log "socket $T/vm/sys.sock, device echo, frontend pvrdma" "$lines"
ctl stop --vm sys > /dev/null 2>&1
wait_gone sys
lines=$(wc -l < "$T/broker.log")
out=$(ctl spawn --vm p --test-echo 2>&1)
check "a VM whose policy says frontend = pvrdma: $out" \
	grep -q "worker/p: pid" <<<"$out"
# a PVRDMA worker needs a verbs device: without one it exits, saying
# which frontend its argv named (tests/vm/broker checks that it serves)
check "its worker ran with --frontend pvrdma" \
	within_log "worker/p: error: PVRDMA serves a verbs device" "$lines"
check "and the broker says so" \
	within_log "socket $T/vm/p.sock, device echo, frontend pvrdma" "$lines"
ctl stop --vm p > /dev/null 2>&1
wait_gone p

# ---- refusals ------------------------------------------------------------
out=$(ctl spawn --vm a --socket "$T/a2.sock" --test-echo 2>&1)
check "second spawn of a refused: $out" grep -q "already has a worker" <<<"$out"
out=$(ctl spawn --vm nope --socket "$T/n.sock" --test-echo 2>&1)
check "unknown VM refused: $out" grep -q "vm nope is not in the policy" <<<"$out"
out=$(ctl spawn --vm ../x --socket "$T/n.sock" 2>&1)
check "bad VM name refused by the decoder: $out" grep -q "vm name '../x'" <<<"$out"
out=$(ctl spawn --vm sys --socket "$T/s.sock" --address 10.99.0.10 --test-echo 2>&1)
check "an address the policy does not grant refused: $out" \
	grep -q "the policy does not let vm sys claim 10.99.0.10" <<<"$out"
check "and no worker, no socket left" test ! -e "$T/s.sock"
out=$(ctl spawn --vm sys --socket "$T/s.sock" --address 10.99.0.300 2>&1)
check "a malformed address refused by rdmagatectl: $out" \
	grep -q "\-\-address 10.99.0.300: not an IPv4 or IPv6 address" <<<"$out"
out=$(ctl spawn --vm sys --socket "$T/a.sock" --test-echo 2>&1)
check "socket in use refused: $out" grep -q "something listens there" <<<"$out"
check "and the refused spawn left a's socket alone" test -S "$T/a.sock"
fds=$(ls "/proc/$BPID/fd" | wc -l)
for i in 1 2 3 4 5; do ctl spawn --vm sys --socket "$T/a.sock" --test-echo > /dev/null 2>&1; done
check "refused spawns leave the broker no fd ($fds before, $(ls "/proc/$BPID/fd" | wc -l) after)" \
	test "$(ls "/proc/$BPID/fd" | wc -l)" = "$fds"
out=$(ctl spawn --vm sys --socket "$T/policy.conf" --test-echo 2>&1)
check "existing non-socket refused: $out" grep -q "exists and is not a socket" <<<"$out"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" \
	--control "$T/control.sock" list 2>&1)
check "uid 65534 cannot use the control socket: $out" \
	grep -q "cannot reach the broker" <<<"$out"
out=$(ctl stop --vm sys 2>&1)
check "stop of a VM without worker: $out" grep -q "vm sys has no worker" <<<"$out"

# ---- hostile messages: each answered with ERROR_REPLY, the broker survives
hostile() {
	python3 - "$T/control.sock" <<'PY'
import os, random, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
def ask(b):
    s.send(b)
    r = s.recv(4096)
    v, t, n = struct.unpack("=III", r[:12])
    st, = struct.unpack("=i", r[12:16])
    return t, st, r[16:16 + 256].split(b"\0")[0].decode()
cases = [b"", b"\1", b"\0" * 11, b"\xff" * 600,
         struct.pack("=III", 5, 2, 0), struct.pack("=III", 4, 12, 0),
         struct.pack("=III", 4, 3, 0), struct.pack("=III", 4, 4, 0),
         struct.pack("=III", 4, 2, 4) + b"abcd",
         struct.pack("=III", 4, 6, 72) + b"x" * 72]
random.seed(7)
for i in range(300):
    cases.append(struct.pack("=III", 4, random.choice([2, 4, 6, 8, 10, 5]),
                 random.randrange(0, 300)) +
                 os.urandom(random.randrange(0, 560)))
bad = 0
for c in cases:
    # the empty one too: refused as malformed, not taken for the end
    t, st, text = ask(c)
    # a random LIST/HELLO/RELOAD with len 0 is valid: answered normally
    if t == 13 and (st == 0 or not text):
        bad += 1
print("errors %d/%d" % (len(cases) - bad, len(cases)), bad)
s.close()
PY
}
out=$(hostile 2>&1)
check "hostile datagrams each get a reply with a reason: $out" \
	grep -q " 0$" <<<"$out"
check "the broker still serves after them" test "$(ctl list --json)" != ""
check "the broker logged what was wrong" \
	grep -q "bad message: protocol version 5, this side speaks 4" "$T/broker.log"

# ---- fixed ids --------------------------------------------------------------
out=$(ctl spawn --vm fixed --socket "$T/f.sock" --test-echo 2>&1)
fpid=$(ctl list --json | sed -n 's/.*"vm": "fixed", "pid": \([0-9]*\).*/\1/p')
check "without worker_nice the worker keeps the broker's nice ($(nice_of "$BPID"))" \
	test "$(nice_of "${fpid:-0}")" = "$(nice_of "$BPID")"
check "fixed uid/gid from the policy: $out" \
	test "$(grep ^Uid: /proc/${fpid:-0}/status | awk '{print $2}') $(grep ^Gid: /proc/${fpid:-0}/status | awk '{print $2}')" = "$((ID0 + 50)) $((ID0 + 51))"
ctl stop --vm fixed > /dev/null 2>&1

# ---- stop -------------------------------------------------------------------
out=$(ctl stop --vm a 2>&1)
check "stop a: $out" grep -q "worker/a (pid $pid) killed by SIGTERM" <<<"$out"
check "socket removed after stop" test ! -e "$T/a.sock"
check "cgroup removed after stop" test ! -d "$CG_ROOT$CG_PARENT/a"
check "process gone" test ! -d "/proc/$pid"
check "list --json is empty" test "$(ctl list --json)" = "[]"

# ---- reload -----------------------------------------------------------------
cp "$T/policy.conf" "$T/policy.good"
printf '[vm bad\n' >> "$T/policy.conf"
out=$(ctl reload 2>&1)
check "reload of a bad file refused, naming the line: $out" \
	grep -q "policy.conf:.*section header" <<<"$out"
kill -HUP "$BPID"
sleep 0.3
check "SIGHUP with a bad file: the old policy stays (log)" \
	grep -q "reload of .* refused; the old policy stays" "$T/broker.log"
out=$(ctl spawn --vm a --socket "$T/a.sock" --test-echo 2>&1)
check "the old policy still serves: $out" grep -q "worker/a: pid" <<<"$out"
ctl stop --vm a > /dev/null 2>&1
cp "$T/policy.good" "$T/policy.conf"
printf '[vm b]\n' >> "$T/policy.conf"
out=$(ctl reload 2>&1)
check "reload of a good file: $out" grep -q "reloaded .*: 6 VMs" <<<"$out"
out=$("$CTL" policy check "$T/policy.conf" 2>&1)
check "policy check (no broker involved): $out" grep -q "valid (6 VMs)" <<<"$out"
printf 'max_qp = 100\n' >> "$T/policy.conf"
out=$("$CTL" policy check "$T/policy.conf" 2>&1)
check "policy check of a bad file names the error" grep -q "max_qp = 100" <<<"$out"

# ---- control_group: nogroup (gid 65534) ------------------------------------
write_policy nogroup
out=$(ctl reload 2>&1)
check "reload with control_group nogroup: $out" grep -q "reloaded" <<<"$out"
check "control socket is now 0660 root:nogroup" \
	test "$(stat -c '%a %U %G' "$T/control.sock")" = "660 root nogroup"
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$CTL" \
	--control "$T/control.sock" "$@"; }
out=$(nobody list --json 2>&1)
check "nobody (gid nogroup) may list: $out" test "$out" = "[]"
out=$(setpriv --reuid=65534 --regid=100 --groups=65534 "$CTL" \
	--control "$T/control.sock" list --json 2>&1)
check "a supplementary member of nogroup may list: $out" test "$out" = "[]"
# the file mode keeps others out; open it up to reach the broker's own check
chmod 666 "$T/control.sock"
out=$(setpriv --reuid=65534 --regid=100 --clear-groups "$CTL" \
	--control "$T/control.sock" list --json 2>&1)
chmod 660 "$T/control.sock"
check "uid 65534 gid 100 (not a member) is turned away by SO_PEERCRED: $out" \
	grep -q "closed the connection" <<<"$out"
check "the broker logs the refusal" \
	grep -q "refused pid [0-9]* uid 65534: not root nor in control_group" \
	"$T/broker.log"
# a member's flood of bad requests: each answered, its lines bounded (the
# peer limiter: 10 per 5 s), so it cannot push the broker's other lines
# out of journald's rate limit
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - \
	"$T/control.sock" <<'PY' 2>&1
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
n = 0
for i in range(2000):
    s.send(struct.pack("=III", 5, 2, 0))
    n += struct.unpack("=III", s.recv(4096)[:12])[1] == 13
print(n)
PY
)
flood=$(grep -c "control: pid [0-9]* uid 65534: bad message" "$T/broker.log")
check "a member's 2000 bad requests are each refused ($out) and leave $flood lines (at most 10)" \
	test "$out" = 2000 -a "$flood" -le 10
# ---- control socket stalls ---------------------------------------------------
HOG="$(dirname "$0")/control-hog.py"
setpriv --reuid=65534 --regid=65534 --clear-groups \
	/usr/bin/python3 "$HOG" slots "$T/control.sock" 40 > "$T/hog.out" 2>&1 &
HOGPID=$!
wait_for 5 grep -q served "$T/hog.out" || echo "# the hog served nothing within 5 s"
check "the control group gets $((32 - 4)) of 40 connections: $(head -n 1 "$T/hog.out")" \
	grep -q "^served 28 of 40$" "$T/hog.out"
out=$(ctl list --json 2>&1)
check "root still gets a slot while they are held: $out" test "$out" = "[]"
wait "$HOGPID"
check "idle connections are closed ($(tail -n 1 "$T/hog.out"))" \
	grep -q "^closed 28$" "$T/hog.out"
check "and the broker says so" \
	grep -q "idle for 10000 ms; closing its connection" "$T/broker.log"
python3 "$HOG" replies "$T/control.sock" > "$T/hog.out" 2>&1 &
HOGPID=$!
sleep 1
out=$(ctl list --json 2>&1)
check "the broker serves others while a client does not read: $out" \
	test "$out" = "[]"
wait "$HOGPID"
out=$(cat "$T/hog.out")
check "and that client gets every reply once it reads: $out" \
	eval '[ "$(awk "{ print \$2 }" <<<"$out")" = "$(awk "{ print \$4 }" <<<"$out")" ] && [ "$(awk "{ print \$2 }" <<<"$out")" -gt 100 ]'
out=$(nobody reload 2>&1)
check "RELOAD is root's only: $out" grep -q "RELOAD: not allowed for uid 65534" <<<"$out"
# a member acts only for the VMs whose QEMU identity it is (m: vmm_uid
# 65534), and names only a file in the broker's socket_dir
mkdir "$T/nb" && chown 65534:65534 "$T/nb"
out=$(nobody spawn --vm m --socket "$T/nb/m.sock" 2>&1)
check "a member may not name a directory, even its own: $out" \
	grep -q "a caller other than root names a file in the broker's socket_dir" <<<"$out"
out=$(nobody spawn --vm a --socket a.sock 2>&1)
check "a member may not spawn a VM it is not the QEMU of: $out" \
	grep -q "uid 65534 is not the QEMU identity of vm a" <<<"$out"
out=$(nobody spawn --vm m --socket m.sock --device rxe9 2>&1)
check "a member may not override the device: $out" \
	grep -q "only root may override" <<<"$out"
out=$(nobody spawn --vm m --frontend pvrdma 2>&1)
check "nor the frontend: $out" grep -q "only root may override" <<<"$out"
out=$(nobody spawn --vm m --socket m.sock --test-echo 2>&1)
check "test hooks are root's only: $out" grep -q "test hooks are root's only" <<<"$out"
ctl spawn --vm a --socket a.sock --test-echo > /dev/null 2>&1
out=$(nobody stop --vm a 2>&1)
check "a member may not stop another VM's worker: $out" \
	grep -q "uid 65534 is not the QEMU identity of vm a" <<<"$out"
out=$(nobody stats --vm a 2>&1)
check "nor read its counters: $out" \
	grep -q "uid 65534 is not the QEMU identity of vm a" <<<"$out"
out=$(nobody stats --json 2>&1)
check "STATS of every worker leaves out the VMs it is not the QEMU of: $out" \
	test "$out" = "[]"
ctl stop --vm a > /dev/null 2>&1
# a member's spawn on the policy's device: this host has no rxe0, so the
# worker starts and exits with status 1, which the broker reports
lines=$(wc -l < "$T/broker.log")
out=$(nobody spawn --vm m 2>&1)
check "its QEMU may spawn m, socket m.sock in socket_dir: $out" \
	grep -q "worker/m: pid" <<<"$out"
wait_gone m
check "the worker's exit status is reported" \
	grep -q "worker/m (pid [0-9]*) exited with status 1" \
	<(tail -n +"$((lines + 1))" "$T/broker.log")
check "its socket is removed" test ! -e "$T/vm/m.sock"
write_policy
ctl reload > /dev/null 2>&1
check "control_group removed: socket back to 0600" \
	test "$(stat -c %a "$T/control.sock")" = 600

# ---- forbidden syscalls -------------------------------------------------------
SYSCALLS="openat open socket connect execve execveat ptrace mount umount2 bpf
perf_event_open setuid setgid kexec_load init_module finit_module reboot chroot
pivot_root unshare setns keyctl add_key process_vm_readv userfaultfd
io_uring_setup fork kill mknodat unlinkat socketpair dup"
for s in $SYSCALLS; do
	lines=$(wc -l < "$T/broker.log")
	out=$(ctl spawn --vm sys --socket "$T/sys.sock" --test-echo \
		--test-syscall "$s" 2>&1)
	spid=$(sed -n 's/.*worker\/sys: pid \([0-9]*\).*/\1/p' <<<"$out")
	if ! wait_gone sys; then
		not_ok "$s: the worker did not die ($out)"
		ctl stop --vm sys > /dev/null 2>&1
		continue
	fi
	if tail -n +"$((lines + 1))" "$T/broker.log" |
		grep -q "worker/sys (pid $spid) killed by SIGSYS (seccomp: forbidden system call)" &&
		[ ! -e "$T/sys.sock" ] && [ ! -d "$CG_ROOT$CG_PARENT/sys" ]; then
		ok "$s: SIGSYS reported by the broker, socket and cgroup removed"
	else
		not_ok "$s: $(tail -n +"$((lines + 1))" "$T/broker.log" | grep 'worker/sys (pid' | head -1)"
	fi
done

# ---- shutdown ------------------------------------------------------------------
ctl spawn --vm a --socket "$T/a.sock" --test-echo > /dev/null 2>&1
apid=$(ctl list --json | sed -n 's/.*"vm": "a", "pid": \([0-9]*\).*/\1/p')
kill -TERM "$BPID"
rc=0
wait "$BPID" || rc=$?
BPID=
check "SIGTERM: the broker exits 0" test "$rc" = 0
check "SIGTERM: its worker (pid ${apid:-?}) is stopped" test ! -d "/proc/${apid:-0}"
check "SIGTERM: control socket and worker socket removed" \
	test ! -e "$T/control.sock" -a ! -e "$T/a.sock"
check "SIGTERM: cgroup removed" test ! -d "$CG_ROOT$CG_PARENT/a"

echo "1..$n"
if [ "$failed" != 0 ]; then
	echo "# broker log:"
	sed 's/^/# /' "$T/broker.log"
fi
[ "$failed" = 0 ]
