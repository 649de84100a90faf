#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# host suite (root, no VM, no libvirt): rdmagate-libvirt-hook end to end, in
# TAP.  Starts a real broker on a temporary policy, then runs the hook the
# way libvirtd does (DOMAIN OPERATION SUB-OPERATION EXTRA, the domain XML on
# stdin) with the realistic documents of domains/, and checks with
# `rdmagatectl list --json` what the broker was asked, the exit codes and
# the one-line messages: prepare begin spawns (a stale worker is replaced),
# release end stops, other operations and domains without our metadata do
# nothing, refusals (policy, bad metadata, no broker, a silent broker, a
# broker not run by root) fail with one line and exit 1.
# The documents get the test-hooks-only rdmagate:test-echo attribute (this
# host has no RDMA device) and their sockets under a temporary directory.
# Usage: test-hook.sh BROKER RDMAGATECTL WORKER HOOK GUEST TEST_HOOKS DOMAINS
set -u

BROKER=$1 CTL=$2 WORKER=$3 HOOK=$4 GUEST=$5 HOOKS=$6 DOMAINS=$7
. "$(dirname "$0")/../../tap.sh"
. "$(dirname "$0")/../../lib.sh"


needs_root_hooks "the broker spawns workers under their own uids" \
	"the echo test device through rdmagate:test-echo"

broker_env hook
mkdir "$T/vm" "$T/dom"
ID0=62200
MPID=
on_exit 'stop "$MPID"'

broker_policy "$ID0-$((ID0 + 99))" "socket_dir = $T/vm" <<EOF
[vm vm-a]
addresses = 10.99.0.10, fd99::/64
[vm vm-b]
addresses = 10.99.0.11
EOF

# The documents as this test needs them: sockets in $T/vm, the echo device.
for f in "$DOMAINS"/*.xml; do
	sed -e "s|/run/rdmagate/vm/|$T/vm/|g" \
		-e 's|<rdmagate:device |<rdmagate:device rdmagate:test-echo="1" |' \
		"$f" > "$T/dom/$(basename "$f")"
done

# the system's python: root's PATH may lead into /root (closed to nobody, and
# a slow shim)
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# run_hook DOC ARGS...: the hook as libvirtd runs it, the broker's socket in
# RDMAGATE_CONTROL; sets rc, out (stdout), err (stderr), secs.
run_hook() {
	local doc=$1 t0; shift
	t0=$(date +%s%N)
	RDMAGATE_CONTROL=${CONTROL:-$T/control.sock} "$HOOK" "$@" \
		< "$doc" > "$T/out" 2> "$T/err"
	rc=$?
	secs=$(( ($(date +%s%N) - t0) / 1000000 ))ms
	out=$(cat "$T/out") err=$(cat "$T/err")
}
one_line() { [ "$(wc -l < "$T/err")" = 1 ]; }
# field VM KEY: KEY of VM in `list --json`, empty if not listed
field() {
	ctl list --json | "$PY" -c '
import json, sys
for w in json.load(sys.stdin):
    if w["vm"] == sys.argv[1]:
        print(w[sys.argv[2]])' "$1" "$2"
}

"$BROKER" --policy "$T/policy.conf" --worker "$WORKER" \
	--cgroup-root "$CG_ROOT" > "$T/broker.log" 2>&1 &
BPID=$!
check "broker is up ($T/control.sock)" wait_for 5 test -S "$T/control.sock"
check "the test documents carry rdmagate:test-echo" \
	grep -q 'rdmagate:test-echo="1"' "$T/dom/vm-a.xml"

# ---- domains and operations the hook leaves alone ------------------------
run_hook "$T/dom/plain.xml" plain prepare begin -
check "a domain without our metadata: exit 0 ($rc), silent" \
	test "$rc:$out:$err" = "0::"
check "and the broker was asked nothing" test "$(ctl list --json)" = "[]"
CONTROL=$T/nonexistent.sock run_hook "$T/dom/plain.xml" plain prepare begin -
check "without our metadata the broker is not even contacted (rc $rc)" \
	test "$rc:$err" = "0:"
for op in "start begin" "started begin" "stopped end" "reconnect begin" \
	"attach begin"; do
	# shellcheck disable=SC2086
	run_hook "$T/dom/vm-a.xml" vm-a $op -
	check "vm-a $op: exit 0, nothing printed, nothing asked" \
		test "$rc:$out:$err:$(ctl list --json)" = "0:::[]"
done
# migration and restore: refused for our domains (the worker's state does
# not move), with no broker needed; other domains' are not our business
for op in migrate restore; do
	CONTROL=$T/nonexistent.sock run_hook "$T/dom/vm-a.xml" vm-a $op begin -
	check "vm-a $op begin: refused, exit 1 ($rc), one line: $err" bash -c \
		'[ "$1" = 1 ] && [ -z "$2" ] && [ "$(wc -l <<< "$3")" = 1 ] &&
			grep -q "^rdmagate-libvirt-hook: error: vm vm-a: $4 refused: an rdmagate VM cannot migrate or be restored from a saved state" <<< "$3"' \
		_ "$rc" "$out" "$err" "$op"
	run_hook "$T/dom/plain.xml" plain $op begin -
	check "plain $op begin: exit 0 ($rc), silent" test "$rc:$out:$err" = "0::"
done
# stdin that never ends: reading it would hang until timeout kills the hook
exec 3< <(exec sleep 30 2> /dev/null)
SPID=$!
timeout 5 "$HOOK" vm-a stopped end - <&3 > /dev/null 2>&1
rc=$?
exec 3<&-
kill "$SPID" 2>/dev/null
check "an ignored operation does not even read stdin (rc $rc)" test "$rc" = 0

# ---- prepare begin: SPAWN ------------------------------------------------
run_hook "$T/dom/vm-a.xml" vm-a prepare begin -
check "vm-a prepare begin: exit 0 ($rc) in $secs: $err" test "$rc" = 0
check "it says what the broker did" grep -q "^rdmagate-libvirt-hook: vm vm-a: worker/vm-a: pid [0-9]*" <<<"$err"
check "nothing on stdout (libvirt pipes it to the next hook)" test -z "$out"
pid=$(field vm-a pid)
check "list --json: vm-a has a worker (pid ${pid:-none})" test -n "$pid"
pid=${pid:-0}
check "the broker was asked for the document's socket" \
	test "$(field vm-a socket)" = "$T/vm/vm-a.sock"
check "... and its port (1)" test "$(field vm-a port)" = 1
check "... and the test echo device (rdmagate:test-echo)" \
	test "$(field vm-a device)" = echo
check "... and the worker runs" test "$(field vm-a state)" = running
check "the worker runs as the policy's first id ($ID0)" \
	test "$(awk '$1 == "Uid:" { print $2 }' "/proc/$pid/status")" = "$ID0"
check "the vhost-user socket is there, root's (no QEMU identity in the policy)" \
	test "$(stat -c '%u %a %F' "$T/vm/vm-a.sock")" = "0 600 socket"
"$GUEST" --socket "$T/vm/vm-a.sock" probe > "$T/probe.out" 2>&1
check "a VMM can connect to it (vhost-user handshake, echo device)" \
	grep -q rdmagate-echo "$T/probe.out"

# prepare begin again: the worker left over is stale (libvirt runs one
# instance of a domain); it is replaced, with the document's new port
sed -i "s|port=\"1\"|port=\"3\"|" "$T/dom/vm-a.xml"
run_hook "$T/dom/vm-a.xml" vm-a prepare begin -
check "prepare begin with a worker left over: exit 0 ($rc): $err" test "$rc" = 0
check "it says it replaced a stale worker" \
	grep -q "it replaces a stale worker: worker/vm-a (pid $pid) killed by SIGTERM" <<<"$err"
npid=$(field vm-a pid)
check "a new worker ($npid), the old one ($pid) is gone" \
	test -n "$npid" -a "$npid" != "$pid" -a ! -d "/proc/$pid"
check "the broker was asked for port 3" test "$(field vm-a port)" = 3

# ---- refusals: one line on stderr, exit 1 ---------------------------------
run_hook "$T/dom/vm-b-bad-address.xml" vm-b prepare begin -
check "an address the policy does not give: exit 1 ($rc)" test "$rc" = 1
check "one line: $err" one_line
check "naming the VM, the address and the broker's reason" \
	test "$err" = "rdmagate-libvirt-hook: error: vm vm-b: cannot start its rdmagate worker: broker: the policy does not let vm vm-b claim 10.99.0.10 (Operation not permitted)"
check "no worker and no socket for vm-b" \
	test -z "$(field vm-b pid)" -a ! -e "$T/vm/vm-b.sock"

sed -e 's|<name>vm-a</name>|<name>vm-z</name>|' -e 's|vm-a.sock|vm-z.sock|g' \
	"$T/dom/vm-a.xml" > "$T/dom/vm-z.xml"
run_hook "$T/dom/vm-z.xml" vm-z prepare begin -
check "a VM the policy does not know: exit 1 ($rc), one line: $err" \
	test "$rc" = 1 -a "$(wc -l < "$T/err")" = 1
check "... saying so" grep -q "vm vm-z: cannot start its rdmagate worker: broker: vm vm-z is not in the policy" <<<"$err"

line=$(grep -n '<rdmagate:device ' "$T/dom/vm-a.xml" | cut -d: -f1)
sed 's|port="3"|port="0"|' "$T/dom/vm-a.xml" > "$T/dom/bad-port.xml"
run_hook "$T/dom/bad-port.xml" vm-a prepare begin -
check "bad metadata: exit 1 ($rc), one line naming the line ($line) and the value: $err" \
	test "$rc:$err" = "1:rdmagate-libvirt-hook: error: vm-a prepare begin: domain XML line $line: <rdmagate:device>: port '0': not 1..255 (leave it out for the policy's port)"
sed 's|fd99::7|fd99::7/64|' "$T/dom/vm-a.xml" > "$T/dom/bad-addr.xml"
run_hook "$T/dom/bad-addr.xml" vm-a prepare begin -
check "a prefix where an address belongs: exit 1 ($rc): $err" \
	grep -q "domain XML line $((line + 2)): <rdmagate:address> 'fd99::7/64': not an IPv4 or IPv6 address" <<<"$err"
run_hook "$T/dom/vm-a.xml" vm-x prepare begin -
check "libvirt's domain argument must match the document's <name> (rc $rc): $err" \
	test "$rc" = 1 -a -n "$(grep 'the domain XML names domain vm-a' <<<"$err")"
{ echo '<!DOCTYPE domain [<!ENTITY a "aaaaaaaa">]>'; sed 1,5d "$T/dom/vm-a.xml"; } > "$T/dom/doctype.xml"
run_hook "$T/dom/doctype.xml" vm-a prepare begin -
check "a DOCTYPE is refused: exit 1 ($rc): $err" \
	grep -q "^rdmagate-libvirt-hook: error: vm-a prepare begin: domain XML line 1: a DOCTYPE: refused" <<<"$err"
head -c $((4 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' > "$T/dom/huge.xml"
run_hook "$T/dom/huge.xml" vm-a prepare begin -
check "more than 4 MiB of XML is refused: exit 1 ($rc): $err" \
	test "$rc:$err" = "1:rdmagate-libvirt-hook: error: vm-a prepare begin: domain XML: more than 4194304 bytes"
check "after all these the broker still has exactly vm-a's worker" \
	test "$(ctl list --json | grep -c '"vm"')" = 1 -a "$(field vm-a pid)" = "$npid"

# no broker, a silent broker, a broker not run by root
CONTROL=$T/none.sock run_hook "$T/dom/vm-a.xml" vm-a prepare begin -
check "no broker: exit 1 ($rc): $err" \
	test "$rc:$err" = "1:rdmagate-libvirt-hook: error: vm vm-a: cannot start its rdmagate worker: cannot reach the broker at $T/none.sock: No such file or directory"
mute_server() { # PATH: accepts and never answers
	"$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(8)
conns = []
while True:
    c, _ = s.accept(); conns.append(c)' "$1" &
	MPID=$!
	wait_for 5 test -S "$1"
}
mute_server "$T/mute.sock"
t0=$(date +%s)
CONTROL=$T/mute.sock run_hook "$T/dom/vm-a.xml" --timeout 1 vm-a prepare begin -
took=$(( $(date +%s) - t0 ))
check "a broker that never answers: exit 1 ($rc) after ~1 s ($secs): $err" \
	test "$rc" = 1 -a "$took" -le 4
check "... saying so in one line" \
	test "$err" = "rdmagate-libvirt-hook: error: vm vm-a: cannot start its rdmagate worker: the broker did not answer within 1 s (waiting for HELLO_REPLY)"
kill "$MPID"; wait "$MPID" 2>/dev/null; MPID=
mkdir "$T/nobody" && chown 65534:65534 "$T/nobody"
setpriv --reuid=65534 --regid=65534 --clear-groups "$PY" -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept(); c.close()' "$T/nobody/s.sock" &
MPID=$!
wait_for 5 test -S "$T/nobody/s.sock"
CONTROL=$T/nobody/s.sock run_hook "$T/dom/vm-a.xml" vm-a prepare begin -
check "a socket not served by root is refused (rc $rc): $err" \
	grep -q "cannot start its rdmagate worker: $T/nobody/s.sock is not served by root: refusing to talk to it" <<<"$err"
kill "$MPID"; wait "$MPID" 2>/dev/null; MPID=

# --control wins over RDMAGATE_CONTROL
CONTROL=$T/none.sock run_hook "$T/dom/vm-a.xml" --control "$T/control.sock" \
	--timeout 10 vm-a started begin -
check "options before libvirt's four arguments are accepted (rc $rc)" test "$rc" = 0

# ---- sVirt: libvirt's dynamic SELinux label, the worker at its level -----
# (docs/libvirt-hook.md "sVirt"): libvirt writes the <label> after prepare
# begin, so such a domain is spawned at start begin with its level
svirt_doc() { # NAME LABEL-ELEMENT > document
	sed -e "s|<name>vm-a</name>|<name>$1</name>|" -e "s|vm-a.sock|$1.sock|g" \
		-e '/<rdmagate:address>/d' \
		-e "s|</domain>|<seclabel type='dynamic' model='selinux' relabel='yes'>$2</seclabel></domain>|" \
		"$T/dom/vm-a.xml"
}
argv_level() { # PID: the --selinux-level the worker was given
	tr '\0' '\n' < "/proc/$1/cmdline" | sed -n '/^--selinux-level$/{n;p}'
}
ALEVEL=$(argv_level "$npid")
check "vm-a's worker runs at its uid's pair ($ALEVEL)" \
	grep -qE '^s0:c[0-9]+,c[0-9]+$' <<<"$ALEVEL"
svirt_doc vm-b "" > "$T/dom/svirt-nolabel.xml"
svirt_doc vm-b "<label>system_u:system_r:svirt_t:s0:c123,c456</label>" \
	> "$T/dom/svirt-b.xml"
run_hook "$T/dom/svirt-nolabel.xml" vm-b prepare begin -
check "dynamic label, prepare begin: exit 0, silent, no worker yet ($rc: $err)" \
	test "$rc:$out:$err:$(field vm-b pid)" = "0:::"
run_hook "$T/dom/svirt-nolabel.xml" vm-b start begin -
check "start begin without the <label>: exit 1 ($rc), one line: $err" \
	test "$rc:$err" = "1:rdmagate-libvirt-hook: error: vm vm-b: start begin: the domain's dynamic SELinux label has no <label> yet: the worker cannot run at its QEMU's categories"
run_hook "$T/dom/svirt-b.xml" vm-b start begin -
bpid=$(field vm-b pid)
check "start begin with the label: exit 0 ($rc), a worker (${bpid:-none}): $err" \
	test "$rc" = 0 -a -n "$bpid"
check "vm-b's worker is given the QEMU's level s0:c123,c456" \
	test "$(argv_level "${bpid:-0}")" = s0:c123,c456
run_hook "$T/dom/vm-b-bad-address.xml" vm-b start begin -
check "start begin of a domain without a dynamic label: nothing ($rc: $err)" \
	test "$rc:$err:$(field vm-b pid)" = "0::$bpid"
run_hook "$T/dom/svirt-b.xml" vm-b release end -
check "vm-b release end: exit 0 ($rc)" test "$rc:$(field vm-b pid)" = "0:"
svirt_doc vm-b "<label>system_u:system_r:svirt_t:$ALEVEL</label>" \
	> "$T/dom/svirt-same.xml"
run_hook "$T/dom/svirt-same.xml" vm-b start begin -
check "vm-a's level for vm-b: refused, exit 1 ($rc): $err" \
	test "$rc:$err" = "1:rdmagate-libvirt-hook: error: vm vm-b: cannot start its rdmagate worker: broker: SELinux level $ALEVEL: vm vm-a's worker runs at it (File exists)"
check "... no worker, no socket for vm-b" \
	test -z "$(field vm-b pid)" -a ! -e "$T/vm/vm-b.sock"
svirt_doc vm-b "<label>system_u:system_r:svirt_t:s0:c456,c123</label>" \
	> "$T/dom/svirt-rev.xml"
run_hook "$T/dom/svirt-rev.xml" vm-b start begin -
check "a reversed pair in the label: exit 1 ($rc), the line and why: $err" \
	grep -q "^rdmagate-libvirt-hook: error: vm-b start begin: domain XML line [0-9]*: <seclabel model='selinux'>: selinux level 's0:c456,c123': categories not two in increasing order" <<<"$err"
# the broker's own check, without the hook's: raw SPAWNs with hostile levels
raw_spawn() { # LEVEL-BYTES (python literal): the broker's reply text
	"$PY" - "$T/control.sock" "$1" <<'PYEOF'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(struct.pack("=III", 4, 2, 0))
s.recv(1024)
level = eval(sys.argv[2]).ljust(32, b"\0")
body = (b"vm-b".ljust(72, b"\0") + bytes(108 + 64 + 32) +
        struct.pack("=III", 0, 1, 0) + bytes(160) + struct.pack("=II", 0, 0) +
        level)
s.send(struct.pack("=III", 4, 4, len(body)) + body)
r = s.recv(1024)
v, t, n = struct.unpack("=III", r[:12])
st = struct.unpack("=i", r[12:16])[0]
print(t, st, r[16:272].split(b"\0")[0].decode())
PYEOF
}
for lv in 'b"s1:c1,c2"' 'b"s0:c1,c1024"' 'b"s0:c2,c1"' 'b"s0:c1\0,c2"' \
	'b"s0:c1,c2\n"' 'b"s0:c" + b"1" * 28'; do
	r=$(raw_spawn "$lv" 2>&1)
	check "raw SPAWN level $lv: ERROR_REPLY EINVAL, with why: $r" \
		grep -qE "^13 22 (selinux level '.*': not s0:cA,cB|selinux level '.*': categories not two|selinux level: not NUL-terminated|selinux level '.*': longer than 31 bytes)" <<<"$r"
done
r=$(raw_spawn 'b"s0:c7,c9"' 2>&1)
check "raw SPAWN with a good level: SPAWN_REPLY 0 ($r)" grep -q "^5 0 " <<<"$r"
check "... its worker at s0:c7,c9" \
	test "$(argv_level "$(field vm-b pid)")" = s0:c7,c9
run_hook "$T/dom/svirt-b.xml" vm-b release end -

# ---- release end: STOP ----------------------------------------------------
CONTROL=$T/none.sock run_hook "$T/dom/vm-a.xml" --control "$T/control.sock" \
	vm-a release end -
check "vm-a release end (--control over RDMAGATE_CONTROL): exit 0 ($rc) in $secs: $err" \
	test "$rc" = 0
check "it says how the worker ended" \
	grep -q "vm vm-a: worker/vm-a (pid $npid) killed by SIGTERM" <<<"$err"
check "list --json is empty" test "$(ctl list --json)" = "[]"
check "the worker is gone" test ! -d "/proc/$npid"
check "its socket is removed" test ! -e "$T/vm/vm-a.sock"
check "its cgroup is removed" test ! -d "$CG_ROOT$CG_PARENT/vm-a"
run_hook "$T/dom/vm-a.xml" vm-a release end -
check "release end without a worker is not an error: exit 0 ($rc): $err" \
	test "$rc:$err" = "0:rdmagate-libvirt-hook: vm vm-a: vm vm-a has no worker: nothing to stop"
run_hook "$T/dom/vm-b-bad-address.xml" vm-b release end -
check "release end after a refused start (libvirt runs it then): exit 0 ($rc)" \
	test "$rc" = 0
run_hook "$T/dom/plain.xml" plain release end -
check "release end of a domain without our metadata: exit 0, silent" \
	test "$rc:$out:$err" = "0::"
CONTROL=$T/none.sock run_hook "$T/dom/vm-a.xml" vm-a release end -
check "release end with no broker: exit 1 ($rc), one line: $err" \
	test "$rc" = 1 -a "$(wc -l < "$T/err")" = 1

run_hook /dev/null
check "no arguments: usage, exit 2 ($rc)" test "$rc" = 2
check "the broker logged the refused spawn" \
	grep -q "spawn vm-b (for uid 0): the policy does not let vm vm-b claim 10.99.0.10" "$T/broker.log"

kill -TERM "$BPID"
rc=0
wait "$BPID" || rc=$?
BPID=
check "the broker exits 0 on SIGTERM" test "$rc" = 0

echo "1..$n"
if [ "$failed" != 0 ]; then
	echo "# broker log:"
	sed 's/^/# /' "$T/broker.log"
fi
[ "$failed" = 0 ]
