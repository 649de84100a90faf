#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm suite, TAP, inside `rdmagate-vm --systemd --deb rdmagate_*.deb --no-cm
# -n 2` (run.sh): the packaged units under systemd as PID 1.  The broker
# reaches READY through sd_notify, the mux and the tracer start, the libvirt
# hook spawns two workers, a restart under guest traffic keeps them (no
# failed completion), each worker logs under its own journal identifier,
# the watchdog restarts a stopped broker, the hook's release and
# `systemctl stop` leave no worker, address or cgroup.
here=$(cd "$(dirname "$0")" && pwd -P)
. "$here/../../tap.sh"
. "$here/../../lib.sh"
. "$here/../two-vms.sh"
[ "${RDMAGATE_VM:-}" = 1 ] || skip_all "not inside rdmagate-vm"
[ "$(cat /proc/1/comm)" = systemd ] || skip_all "PID 1 is not systemd (rdmagate-vm --systemd)"
[ -x /usr/sbin/rdmagate-broker ] || skip_all "the .deb is not installed (--deb)"
GUEST=${RDMAGATE_BUILD:-$here/../../../build}/guest/rdmagate-guest
[ -x "$GUEST" ] || skip_all "no $GUEST (the guest simulator is not packaged)"
T0=$SECONDS
D=$(mktemp -d /run/systemd-test.XXXXXX)
prop() { systemctl show -P "$2" "$1"; }
j() { journalctl -b --no-pager -o cat "$@"; }
# jhas JOURNALCTL-ARGS... REGEX: a line of the selection matches
jhas() { j "${@:1:$#-1}" | grep -qE -- "${@: -1}"; }
ctl() { rdmagatectl "$@"; } # the packaged one, on its default socket
HOOK=/etc/libvirt/hooks/qemu.d/rdmagate

install -d -m 0755 /etc/rdmagate
two_vm_policy > /etc/rdmagate/policy.conf
chmod 0644 /etc/rdmagate/policy.conf

# ---- the broker, READY through sd_notify
systemctl start rdmagate-broker.service
rc=$?
check "systemctl start rdmagate-broker (Type=notify) returns 0" test $rc = 0
check "active, with the status text it sent with READY=1" \
	test "$(prop rdmagate-broker ActiveState)/$(prop rdmagate-broker StatusText)" = "active/0 workers"
BPID=$(prop rdmagate-broker MainPID)
check "the watchdog is on (WatchdogUSec $(prop rdmagate-broker WatchdogUSec))" \
	jhas -u rdmagate-broker 'systemd watchdog: [0-9]+ ms'
j -u rdmagate-broker | tail -n 3 | diag
elapsed "broker ready"

# ---- the mux (no ib_cm in this VM) and the tracer
systemctl start rdmagate-mux.service rdmagate-trace.service
check "rdmagate-mux.service active" wait_for 30 systemctl -q is-active rdmagate-mux
check "rdmagate-trace.service active and attached" \
	wait_for 90 test -e /sys/fs/bpf/rdmagate/counters
check "the broker connected to the mux" wait_for 30 jhas -u rdmagate-mux 'broker connected'
j -u rdmagate-mux -u rdmagate-trace | tail -n 4 | diag
elapsed "mux and tracer"

# ---- two VMs through the libvirt hook
for vm in vm-a vm-b; do
	domain_xml $vm > "$D/$vm.xml"
	check "hook: $vm prepare begin spawns its worker" \
		"$HOOK" "$vm" prepare begin - < "$D/$vm.xml"
done
pids() { ctl list --json | jq -r 'map(.vm + ":" + (.pid|tostring)) | sort | join(" ")'; }
P1=$(pids)
check "two workers listed ($P1)" test "$(wc -w <<< "$P1")" = 2
for vm in vm-a vm-b; do
	check "$vm's worker in its own cgroup /rdmagate/$vm" \
		grep -qx "0::/rdmagate/$vm" /proc/"$(worker_pid $vm)"/cgroup
done
elapsed "workers"

# ---- a restart under traffic
route_pair "$A" "$B"
guest_pingpong "$GUEST" vm-a 400 "$D/a.out" &
pa=$!
wait_for 60 tcp_listening 18515
guest_pingpong "$GUEST" vm-b 400 "$D/b.out" 127.0.0.1 &
pb=$!
sleep 3
systemctl restart rdmagate-broker.service
rc=$?
check "systemctl restart rdmagate-broker under traffic returns 0" test $rc = 0
check "a new broker (pid $BPID -> $(prop rdmagate-broker MainPID))" \
	test "$(prop rdmagate-broker MainPID)" != "$BPID"
check "the same workers, re-adopted ($(pids))" test "$(pids)" = "$P1"
check "the new broker says it adopted them" jhas -u rdmagate-broker 're-adopted'
check "the guests' traffic went on: vm-a's rc_pingpong completed" wait $pa
check "vm-b's rc_pingpong completed" wait $pb
tail -n 2 "$D/a.out" "$D/b.out" | diag
elapsed "restart under traffic"

# ---- each worker's lines under its own identifier
for vm in vm-a vm-b; do
	nw=$(j -t "rdmagate-worker/$vm" | wc -l)
	check "journal: $nw lines with SYSLOG_IDENTIFIER=rdmagate-worker/$vm" test "$nw" -gt 0
	check "journal: none of them under the broker's identifier" \
		test -z "$(j -t rdmagate-broker | grep -F "$(j -t "rdmagate-worker/$vm" | head -n 1)")"
	j -t "rdmagate-worker/$vm" | head -n 2 | diag
done

# ---- the watchdog restarts a wedged broker
BPID=$(prop rdmagate-broker MainPID)
kill -STOP "$BPID"
check "SIGSTOPped broker $BPID replaced by systemd's watchdog" \
	wait_for 90 eval 'p=$(prop rdmagate-broker MainPID); [ "$p" != 0 ] && [ "$p" != "$BPID" ] && systemctl -q is-active rdmagate-broker'
check "the journal says why" jhas -u rdmagate-broker 'Watchdog timeout'
check "the workers survived it ($(pids))" test "$(pids)" = "$P1"
elapsed "watchdog"

# ---- systemd-analyze security on the loaded units (figures for the docs)
for u in rdmagate-broker rdmagate-mux rdmagate-trace; do
	timeout 120 systemd-analyze security --no-pager "$u.service" 2>&1 |
		grep -i 'overall exposure' | diag
done

# ---- release, stop: nothing left
for vm in vm-a vm-b; do
	check "hook: $vm release end stops its worker" "$HOOK" "$vm" release end - < "$D/$vm.xml"
done
check "no worker listed" wait_for 30 test -z "$(pids)"
systemctl stop rdmagate-broker.service rdmagate-mux.service rdmagate-trace.service
check "the units are inactive" test "$(systemctl is-active rdmagate-broker rdmagate-mux rdmagate-trace | sort -u)" = inactive
check "no worker process left" test -z "$(pgrep -f rdmagate-worker)"
check "no guest address left on the netdevs" \
	wait_for 10 eval "! ip -o addr | grep -qE '$A|$B'"
check "no worker cgroup left" test -z "$(ls /sys/fs/cgroup/rdmagate 2>/dev/null | grep vm-)"
elapsed "stopped"
tap_end
